//! `corral sim`: filled by the simulator issue.
use crate::CliError;

/// Arguments of `corral sim`.
#[derive(clap::Args)]
pub struct SimArgs {}

pub fn run(_args: SimArgs) -> Result<(), CliError> {
    Err(CliError(
        "corral sim: the simulator is not built yet".into(),
    ))
}
