//! `corral bench ...`: benchmarks that measure; each compares ratios taken
//! side by side in one run.

use crate::CliError;

#[derive(clap::Subcommand)]
pub enum BenchCommand {
    /// The lock algorithms: uncontended cost, cross-core handoff, throughput
    /// versus threads (paper 3's microbenchmark), instrumentation overhead.
    Locks(super::bench_locks::BenchLocksArgs),
    /// Real kernel-lock-intensive programs (paper 1 and paper 3).
    Kernel(super::bench_kernel::BenchKernelArgs),
}

pub fn run(cmd: BenchCommand) -> Result<(), CliError> {
    match cmd {
        BenchCommand::Locks(args) => super::bench_locks::run(args),
        BenchCommand::Kernel(args) => super::bench_kernel::run(args),
    }
}
