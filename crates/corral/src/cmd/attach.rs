//! `corral attach --pid PID`: filled by the kernel-locks issue.
use crate::CliError;

/// Arguments of `corral attach`.
#[derive(clap::Args)]
pub struct AttachArgs {}

pub fn run(_args: AttachArgs) -> Result<(), CliError> {
    Err(CliError(
        "corral attach: kernel-lock support is not built yet".into(),
    ))
}
