//! The `corral` command line: run, model, simulate and benchmark
//! lock-contention-aware scheduling.

mod cmd;

use clap::{CommandFactory, Parser, Subcommand};

use corral_launch::CliError;

/// corral keeps multithreaded programs from collapsing under lock contention.
///
/// It measures how much of each thread's time goes to waiting for locks,
/// confines lock-intensive threads to a Special Set of Cores (SSC) whose size
/// it searches online, and keeps every other thread on the remaining cores.
#[derive(Parser)]
#[command(name = "corral", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Every subcommand takes negative numbers as values, so that a bad one is
// refused by its flag's own check (`--threshold -0.5: ...`), not reported
// as an unknown flag `-0`.
#[derive(Subcommand)]
enum Command {
    /// The built-in demonstration: lock collapse under oversubscription.
    #[command(allow_negative_numbers = true)]
    Demo(cmd::demo::DemoArgs),
    /// Run PROG with corral's locks and the SSC policy: `corral run -- PROG ARGS`.
    #[command(allow_negative_numbers = true)]
    Run(cmd::run::RunArgs),
    /// Apply the kernel-lock SSC policy to a running process.
    #[command(allow_negative_numbers = true)]
    Attach(cmd::attach::AttachArgs),
    /// Plot a `corral run --report` document: `corral report FILE.json --svg OUT.svg`.
    Report(cmd::report::ReportArgs),
    /// A live view of every program running under corral; `q` quits.
    Top(cmd::top::TopArgs),
    /// What this machine lets corral do (root, BPF, tracepoints, slices,
    /// PMU, CPUs, the stats region), and how to enable what is missing;
    /// exits 1 only where `corral run` cannot work at all.
    Doctor(cmd::doctor::DoctorArgs),
    /// Print the completion script for a shell: `corral completions bash`.
    Completions(cmd::manuals::CompletionsArgs),
    /// Write the manual pages (`corral.1`, one per subcommand) into a
    /// directory: `corral man --out-dir DIR`.
    Man(cmd::manuals::ManArgs),
    /// Benchmarks (`corral bench locks`, ...).
    #[command(subcommand)]
    Bench(corral_bench::BenchCommand),
    /// Paper 3's Markov model of ticket-lock collapse (eq. 1).
    #[command(allow_negative_numbers = true)]
    Model(cmd::model::ModelArgs),
    /// The many-core discrete-event simulator.
    #[command(allow_negative_numbers = true)]
    Sim(cmd::sim::SimArgs),
    /// Redo the seed papers' figures: `corral reproduce p3-fig2`, `corral reproduce all --out-dir DIR`.
    #[command(allow_negative_numbers = true)]
    Reproduce(cmd::reproduce::ReproduceArgs),
}

fn main() {
    // Rust ignores SIGPIPE, so `corral model | head -1` would panic on the
    // closed pipe: die of it quietly instead, as every Unix tool does.
    // SAFETY: restores a signal's default disposition before any thread.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => exit_with_clap_error(e),
    };
    let result = match cli.command {
        Command::Demo(args) => cmd::demo::run(args),
        Command::Run(args) => cmd::run::run(args),
        Command::Report(args) => cmd::report::report(args),
        Command::Top(args) => cmd::top::top(args),
        Command::Doctor(args) => cmd::doctor::run(args),
        Command::Completions(args) => cmd::manuals::completions(args, Cli::command()),
        Command::Man(args) => cmd::manuals::man(args, Cli::command()),
        Command::Attach(args) => cmd::attach::run(args),
        Command::Bench(b) => corral_bench::run(b),
        Command::Model(args) => cmd::model::run(args),
        Command::Sim(args) => cmd::sim::run(args),
        Command::Reproduce(args) => cmd::reproduce::run(args),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

/// Prints clap's help/version as usual; any parse error as its first line
/// only (clap's line already names the flag, the value and the reason), then
/// exits 2.
fn exit_with_clap_error(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        _ => {
            let text = e.render().to_string();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("error");
            eprintln!("{first}");
            std::process::exit(2);
        }
    }
}
