//! `corral bench ...`: benchmarks that measure; each compares ratios taken
//! side by side in one run. The `corral` command line parses
//! [`BenchCommand`] and hands it to [`run`]; `corral demo` measures with
//! [`counter`]. Every bench reads its repeated runs with one statistics
//! module (median, spread, bootstrap interval, verdict).

mod apps;
mod ca;
pub mod counter;
mod ff;
mod kernel;
mod limited;
mod lockbench;
mod locks;
pub mod peer;
mod space;
mod stats;
mod worker;

use corral_launch::CliError;

pub use apps::BenchAppsArgs;
pub use ca::BenchCaArgs;
pub use counter::BenchCounterArgs;
pub use ff::BenchFfArgs;
pub use kernel::BenchKernelArgs;
pub use locks::BenchLocksArgs;
pub use space::BenchSpaceArgs;
pub use worker::WorkerArgs;

/// The `corral bench` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// The lock algorithms: uncontended cost, cross-core handoff, throughput
    /// versus threads (paper 3's microbenchmark), instrumentation overhead.
    #[command(allow_negative_numbers = true)]
    Locks(locks::BenchLocksArgs),
    /// Real kernel-lock-intensive programs (paper 1 and paper 3).
    #[command(allow_negative_numbers = true)]
    Kernel(kernel::BenchKernelArgs),
    /// Paper 1's single counter (and paper 4's list and counters) as a real
    /// program under `corral run`: glibc vs policy none vs lca.
    #[command(allow_negative_numbers = true)]
    Counter(counter::BenchCounterArgs),
    /// Real programs from Debian (sysbench, stress-ng, pigz, git grep) under
    /// glibc, corral's default and every --lock, per thread count: the table
    /// corral is judged by.
    #[command(allow_negative_numbers = true)]
    Apps(apps::BenchAppsArgs),
    /// Paper 4's faithful scheduling on real programs at 100/150/200% load:
    /// FF against the default scheduler, also two programs at once;
    /// throughput, context switches, the quantum chosen; the simulator's
    /// `faithful` on the same loads.
    #[command(allow_negative_numbers = true)]
    Ff(ff::BenchFfArgs),
    /// Paper 5's CA-Scheduler on a real program with planted groups of
    /// threads (each group its own locks, plus one lock all share): glibc,
    /// policy none, lca, ca and ca,csf; throughput, wait share and the
    /// clustering accuracy against the planted groups.
    ///
    /// `coverage` is the share of the planted threads the last round
    /// clustered: a thread takes part once 64 of its lock ids were sampled
    /// (1 acquisition in 16). Below the table, the simulator's default, lca
    /// and ca on the same shapes (presets `ca-groups-G`). To see what a
    /// round saw, `CORRAL_CA_DEBUG=1 corral run --policy ca --events
    /// F.jsonl -- PROG` logs every round's per-thread samples, non-zero
    /// slots, excluded slots and similarity matrix.
    #[command(allow_negative_numbers = true)]
    Ca(ca::BenchCaArgs),
    /// The judge: N points drawn from a seed over a space of lock workloads
    /// (threads 1-64, locks 1-64 and their skew, critical sections of 10 ns
    /// to 100 us, work outside of 0 to 100 us, a holder that yields, sleeps,
    /// makes a system call or allocates; mutex, rwlock or condition-variable
    /// hand-off), each run by one C program under glibc, corral's default
    /// and every --peer in the same rounds. Prints the distribution of
    /// ratios to glibc (throughput and CPU per critical section) and the
    /// worst points, each with the command that replays it alone.
    #[command(allow_negative_numbers = true)]
    Space(space::BenchSpaceArgs),
    /// The program `bench counter` runs (internal).
    #[command(hide = true)]
    #[command(allow_negative_numbers = true)]
    Worker(worker::WorkerArgs),
}

/// Runs one benchmark subcommand.
pub fn run(cmd: BenchCommand) -> Result<(), CliError> {
    match cmd {
        BenchCommand::Locks(args) => locks::run(args),
        BenchCommand::Kernel(args) => kernel::run(args),
        BenchCommand::Counter(args) => counter::run(args),
        BenchCommand::Apps(args) => apps::run(args),
        BenchCommand::Ff(args) => {
            let report = ff::run(&args)?;
            if let Some(path) = &args.report {
                std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")
                    .map_err(|e| CliError(format!("--report {}: {e}", path.display())))?;
            }
            if args.json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", ff::table::render(&report));
            }
            Ok(())
        }
        BenchCommand::Ca(args) => ca::run(args),
        BenchCommand::Space(args) => space::run(args),
        BenchCommand::Worker(args) => worker::run(args),
    }
}
