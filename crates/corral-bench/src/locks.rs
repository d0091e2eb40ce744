//! `corral bench locks`: every algorithm's uncontended cost (raw and
//! instrumented), cross-core handoff cost, and throughput versus threads for
//! paper 3's microbenchmark, oversubscribed counts included.

use std::time::Duration;

use corral_launch::CliError;
use corral_locks::{with_lock_type, Algorithm, Timed, UnknownAlgorithm};
use serde::Serialize;

use super::lockbench;
use crate::stats::median;

/// Arguments of `corral bench locks`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
The throughput case is paper 3's microbenchmark (Fig. 10): every thread loops \
acquiring one shared lock, updating 4 shared cache lines, and releasing it. \
Thread counts above the number of CPUs show how each algorithm degrades when \
waiters are preempted: spinning FIFO locks (ticket, MCS, CLH, K42) hand the \
lock to a waiter that may not be running. Ratios are measured side by side in \
one run; compare them, not absolute times across runs.")]
pub struct BenchLocksArgs {
    /// Algorithms to measure (comma-separated), or `all`.
    #[arg(long, value_name = "LIST", default_value = "all", value_parser = parse_algorithms)]
    pub(crate) algs: AlgList,
    /// Thread counts for the throughput case, e.g. `1,2,4,8,16` or `1..4`.
    #[arg(long, value_name = "LIST", default_value = "1,2,4,8,16",
          value_parser = corral_launch::lists::parse_count_list)]
    pub(crate) threads: corral_launch::lists::Counts,
    /// Length of each throughput point.
    #[arg(long, value_name = "MS", default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) duration_ms: u64,
    /// Repetitions of the uncontended and handoff measurements (median taken).
    #[arg(long, value_name = "N", default_value_t = 15, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) reps: u32,
    /// Acquire+release pairs per uncontended repetition.
    #[arg(long, value_name = "N", default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) iters: u64,
    /// Print one JSON document instead of tables.
    #[arg(long)]
    pub(crate) json: bool,
}

/// A parsed `--algs` list, without repeats. A newtype so that clap reads it
/// as one value.
#[derive(Clone, Debug)]
pub(crate) struct AlgList(pub Vec<Algorithm>);

/// Parses `--algs`: comma-separated algorithm names, or `all`.
fn parse_algorithms(s: &str) -> Result<AlgList, UnknownAlgorithm> {
    if s.trim() == "all" {
        return Ok(AlgList(Algorithm::ALL.to_vec()));
    }
    let mut out = Vec::new();
    for item in s.split(',') {
        let alg: Algorithm = item.trim().parse()?;
        if !out.contains(&alg) {
            out.push(alg);
        }
    }
    Ok(AlgList(out))
}

/// Uncontended acquire+release, raw and instrumented (paper 1's Alg. 1).
#[derive(Serialize)]
struct UncontendedRow {
    /// The algorithm.
    alg: String,
    /// Median ns per acquire+release of the bare lock.
    raw_ns: f64,
    /// Median ns with the wait-time instrumentation corral adds.
    instrumented_ns: f64,
    /// Median over repetitions of instrumented/raw, each pair measured
    /// back to back.
    overhead_ratio: f64,
}

/// One lock acquisition whose lock was last released on another CPU.
#[derive(Serialize)]
struct HandoffRow {
    /// The algorithm.
    alg: String,
    /// Median ns per acquire+release.
    ns: f64,
}

/// One point of paper 3's microbenchmark.
#[derive(Serialize)]
struct ThroughputPoint {
    /// The algorithm.
    alg: String,
    /// Threads contending the one lock.
    threads: u32,
    /// Critical sections per second, all threads together.
    ops_per_sec: f64,
    /// Throughput relative to the same algorithm at its smallest thread count.
    vs_first: f64,
    /// More threads than CPUs this process may use.
    oversubscribed: bool,
}

/// `--json`'s document: the settings, then the three measurements.
#[derive(Serialize)]
struct LockBenchReport {
    /// CPUs this process may use.
    cpus: usize,
    /// `--reps`.
    reps: u32,
    /// `--iters`.
    iters: u64,
    /// `--duration-ms`.
    duration_ms: u64,
    /// One row per algorithm.
    uncontended: Vec<UncontendedRow>,
    /// One row per algorithm.
    handoff: Vec<HandoffRow>,
    /// Every algorithm at every thread count.
    throughput: Vec<ThroughputPoint>,
}

/// The uncontended costs of `L`, whose algorithm is `alg`.
fn uncontended_row<L: corral_locks::RawLock>(
    alg: Algorithm,
    reps: u32,
    iters: u64,
) -> UncontendedRow {
    // Warm both paths (and the TSC calibration) before measuring.
    lockbench::uncontended_ns::<L>(iters / 10 + 1);
    lockbench::uncontended_ns::<Timed<L>>(iters / 10 + 1);
    let (mut raw, mut inst, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        // Alternate the order so drift (frequency, a neighbour's load) hits
        // both sides alike.
        let (r, i) = if rep % 2 == 0 {
            let r = lockbench::uncontended_ns::<L>(iters);
            (r, lockbench::uncontended_ns::<Timed<L>>(iters))
        } else {
            let i = lockbench::uncontended_ns::<Timed<L>>(iters);
            (lockbench::uncontended_ns::<L>(iters), i)
        };
        raw.push(r);
        inst.push(i);
        ratio.push(i / r);
    }
    UncontendedRow {
        alg: alg.name().to_string(),
        raw_ns: median(raw).unwrap_or(f64::NAN),
        instrumented_ns: median(inst).unwrap_or(f64::NAN),
        overhead_ratio: median(ratio).unwrap_or(f64::NAN),
    }
}

/// Every measurement the flags ask for, with progress on stderr if asked.
fn measure(args: &BenchLocksArgs, progress: bool) -> LockBenchReport {
    let cpus = corral_runtime::affinity::allowed_cpus().len();
    let algs = &args.algs.0;
    let mut report = LockBenchReport {
        cpus,
        reps: args.reps,
        iters: args.iters,
        duration_ms: args.duration_ms,
        uncontended: Vec::new(),
        handoff: Vec::new(),
        throughput: Vec::new(),
    };
    let note = |msg: String| {
        if progress {
            eprintln!("{msg}");
        }
    };
    for &alg in algs {
        note(format!("[bench locks] uncontended + handoff: {alg}"));
        let row = with_lock_type!(alg, L => uncontended_row::<L>(alg, args.reps, args.iters));
        report.uncontended.push(row);
        let rounds = (args.iters / 4).max(1);
        let samples: Vec<f64> = (0..args.reps.min(5))
            .map(|_| with_lock_type!(alg, L => lockbench::handoff_ns::<L>(rounds)))
            .collect();
        report.handoff.push(HandoffRow {
            alg: alg.name().into(),
            ns: median(samples).unwrap_or(f64::NAN),
        });
    }
    report.throughput = throughput_points(
        algs,
        &args.threads,
        Duration::from_millis(args.duration_ms),
        cpus,
        progress,
    );
    report
}

/// Paper 3's microbenchmark for every algorithm at every thread count.
fn throughput_points(
    algs: &[Algorithm],
    threads: &[u32],
    duration: Duration,
    cpus: usize,
    progress: bool,
) -> Vec<ThroughputPoint> {
    let mut points = Vec::new();
    for &alg in algs {
        if progress {
            eprintln!("[bench locks] throughput {alg} at threads {threads:?}");
        }
        let mut first = None;
        for &n in threads {
            let ops = with_lock_type!(alg, L => lockbench::throughput::<L>(n, duration));
            let base = *first.get_or_insert(ops);
            points.push(ThroughputPoint {
                alg: alg.name().into(),
                threads: n,
                ops_per_sec: ops,
                vs_first: if base > 0.0 { ops / base } else { 0.0 },
                oversubscribed: n as usize > cpus,
            });
        }
    }
    points
}

/// Measures and prints the tables (or the JSON document).
pub(crate) fn run(args: BenchLocksArgs) -> Result<(), CliError> {
    let report = measure(&args, !args.json);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    print_tables(&report);
    Ok(())
}

/// The costs table, then the throughput table.
fn print_tables(r: &LockBenchReport) {
    println!(
        "corral bench locks: {} CPUs, median of {} repetitions",
        r.cpus, r.reps
    );
    println!();
    println!(
        "{:<15} {:>10} {:>14} {:>9} {:>12}",
        "algorithm", "raw ns", "instrumented", "ratio", "handoff ns"
    );
    for (u, h) in r.uncontended.iter().zip(&r.handoff) {
        println!(
            "{:<15} {:>10.2} {:>14.2} {:>8.3}x {:>12.1}",
            u.alg, u.raw_ns, u.instrumented_ns, u.overhead_ratio, h.ns
        );
    }
    println!();
    print_throughput(&r.throughput, r.cpus);
}

/// Mops/s per algorithm (rows) and thread count (columns).
fn print_throughput(points: &[ThroughputPoint], cpus: usize) {
    let threads: Vec<u32> = {
        let mut t: Vec<u32> = points.iter().map(|p| p.threads).collect();
        t.sort_unstable();
        t.dedup();
        t
    };
    print!("{:<15}", "Mops/s");
    for t in &threads {
        let mark = if *t as usize > cpus { "*" } else { "" };
        print!(" {:>9}", format!("{t}{mark}"));
    }
    println!();
    let mut algs: Vec<&str> = points.iter().map(|p| p.alg.as_str()).collect();
    algs.dedup();
    for alg in algs {
        print!("{alg:<15}");
        for t in &threads {
            match points.iter().find(|p| p.alg == alg && p.threads == *t) {
                Some(p) => print!(" {:>9.3}", p.ops_per_sec / 1e6),
                None => print!(" {:>9}", "-"),
            }
        }
        println!();
    }
    println!("(* = more threads than CPUs: waiters can be preempted)");
}
