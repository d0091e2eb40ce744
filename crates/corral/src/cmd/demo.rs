//! `corral demo`: the README's main command. Paper 1's single counter as a
//! real program at 1..16 threads, under glibc's own mutex, under corral's
//! ticket lock without a policy (`--policy none`), and with the SSC policy
//! (`--policy lca`), as one table and a one-sentence verdict.

use corral_bench::counter::{measure, print_table, throughput_of, BenchPolicy, CounterPoint};
use corral_locks::Algorithm;
use serde::Serialize;

use crate::CliError;

/// Arguments of `corral demo`.
#[derive(clap::Args)]
pub(crate) struct DemoArgs {
    /// Thread counts; the default goes well past the CPU count on purpose.
    #[arg(long, value_name = "LIST", default_value = "1,2,4,8,16",
          value_parser = corral_launch::lists::parse_count_list)]
    pub(crate) threads: corral_launch::lists::Counts,
    /// Lock algorithm of the corral columns.
    #[arg(long = "lock", value_name = "ALG", default_value = "ticket")]
    pub(crate) lock: Algorithm,
    /// Length of each point.
    #[arg(long, value_name = "MS", default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) duration_ms: u64,
    /// Print one JSON document instead of the table and verdict.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `--json`'s document.
#[derive(Serialize)]
struct DemoReport {
    /// CPUs this process may use.
    cpus: usize,
    /// Every point, by thread count then policy.
    points: Vec<CounterPoint>,
    /// The sentence the table ends with.
    verdict: String,
}

/// The demo's columns: glibc, then corral's `--lock` without and with the
/// policy, then corral's default (lca over futex), what `corral run` does.
const POLICIES: [BenchPolicy; 4] = [
    BenchPolicy::Glibc,
    BenchPolicy::None,
    BenchPolicy::Lca,
    BenchPolicy::Default,
];

/// Measures, then prints the table and the verdict (or the JSON document).
pub(crate) fn run(args: DemoArgs) -> Result<(), CliError> {
    let cpus = corral_runtime::affinity::allowed_cpus().len().max(1);
    if !args.json {
        eprintln!(
            "corral demo: threads increment one mutex-protected counter (paper 1's single counter) in a \
             separate program, {} ms per point on {cpus} CPUs: glibc's mutex, corral's {} lock with \
             --policy none, and with --policy lca, and `corral run`'s default (lca over futex)",
            args.duration_ms, args.lock
        );
    }
    let points = measure(
        "counter",
        &args.threads,
        &POLICIES,
        args.lock,
        args.duration_ms,
        0,
        !args.json,
    )?;
    let verdict = verdict(&points, &args.threads, cpus, args.lock);
    if args.json {
        let doc = DemoReport {
            cpus,
            points,
            verdict,
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    print_table(&points, &args.threads, &POLICIES);
    println!();
    println!("{verdict}");
    Ok(())
}

/// One sentence on the largest thread count: how far `none` fell, what
/// `lca` kept of the single-thread throughput, and how it compares with
/// glibc.
fn verdict(points: &[CounterPoint], threads: &[u32], cpus: usize, lock: Algorithm) -> String {
    let (Some(&first), Some(&last)) = (threads.first(), threads.last()) else {
        return "no points measured".into();
    };
    let get = |n, p| throughput_of(points, n, p).unwrap_or(0.0);
    let (none, lca, glibc, default) = (
        get(last, BenchPolicy::None),
        get(last, BenchPolicy::Lca),
        get(last, BenchPolicy::Glibc),
        get(last, BenchPolicy::Default),
    );
    let single = get(first, BenchPolicy::Lca).max(get(first, BenchPolicy::None));
    let over = if last as usize > cpus {
        "more threads than CPUs"
    } else {
        "no oversubscription"
    };
    format!(
        "At {last} threads on {cpus} CPUs ({over}), corral's {lock} lock without a policy runs at {:.1}% of its \
         {first}-thread throughput, while --policy lca confines the lock-intensive threads and keeps {:.0}% \
         ({:.0}x policy none, {:.2}x glibc's mutex). corral's default (lca over futex) keeps {:.0}% of \
         its own {first}-thread throughput, {:.2}x glibc's mutex.",
        100.0 * none / single.max(1.0),
        100.0 * lca / single.max(1.0),
        lca / none.max(1.0),
        lca / glibc.max(1.0),
        100.0 * default / get(first, BenchPolicy::Default).max(1.0),
        default / glibc.max(1.0),
    )
}
