//! Kernel-lock options of `corral run` (`--kernel-locks`): filled by the
//! kernel-locks issue.

/// Flags shared by `corral run --kernel-locks` and `corral attach`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct KernelArgs {}
