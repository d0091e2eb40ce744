//! `corral bench kernel`: filled by the kernel-locks issue.
use crate::CliError;

/// Arguments of `corral bench kernel`.
#[derive(clap::Args)]
pub struct BenchKernelArgs {}

pub fn run(_args: BenchKernelArgs) -> Result<(), CliError> {
    Err(CliError("corral bench kernel: not built yet".into()))
}
