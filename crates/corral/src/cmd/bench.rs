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
    /// Paper 1's single counter (and paper 4's list and counters) as a real
    /// program under `corral run`: glibc vs policy none vs lca.
    Counter(super::bench_counter::BenchCounterArgs),
    /// The program `bench counter` runs (internal).
    #[command(hide = true)]
    Worker(super::bench_worker::WorkerArgs),
}

pub fn run(cmd: BenchCommand) -> Result<(), CliError> {
    match cmd {
        BenchCommand::Locks(args) => super::bench_locks::run(args),
        BenchCommand::Kernel(args) => super::bench_kernel::run(args),
        BenchCommand::Counter(args) => super::bench_counter::run(args),
        BenchCommand::Worker(args) => super::bench_worker::run(args),
    }
}
