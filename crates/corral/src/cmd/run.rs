//! `corral run -- PROG ARGS`: filled by the runtime issue.
use crate::CliError;

/// Arguments of `corral run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// Kernel-lock options (`--kernel-locks`, ...).
    #[command(flatten)]
    pub kernel: super::run_kernel::KernelArgs,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROG")]
    pub prog: Vec<String>,
}

pub fn run(_args: RunArgs) -> Result<(), CliError> {
    Err(CliError("corral run: the runtime is not built yet".into()))
}
