//! `corral demo`: the built-in default job. For now it runs the lock
//! benchmark's contended case on this machine and explains what it shows;
//! once the runtime lands it becomes the single counter under `corral run`.

use std::time::Duration;

use corral_locks::Algorithm;
use serde::Serialize;

use super::bench_locks::{print_throughput, throughput_points, ThroughputPoint};
use crate::CliError;

/// Arguments of `corral demo`.
#[derive(clap::Args)]
pub struct DemoArgs {
    /// Thread counts; the default goes well past the CPU count on purpose.
    #[arg(long, value_name = "LIST", default_value = "1,2,4,8,16",
          value_parser = super::lists::parse_count_list)]
    pub threads: super::lists::Counts,
    /// Length of each point.
    #[arg(long, value_name = "MS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub duration_ms: u64,
    /// Print one JSON document instead of the table and verdict.
    #[arg(long)]
    pub json: bool,
}

/// How far each algorithm falls from its best point to its last one.
#[derive(Serialize)]
pub struct Collapse {
    pub alg: String,
    pub best_threads: u32,
    pub best_ops_per_sec: f64,
    pub last_threads: u32,
    /// Throughput at the last thread count over the best throughput.
    pub retained: f64,
}

#[derive(Serialize)]
struct DemoReport {
    cpus: usize,
    points: Vec<ThroughputPoint>,
    collapse: Vec<Collapse>,
    verdict: String,
}

const DEMO_ALGS: [Algorithm; 5] = [
    Algorithm::Ticket,
    Algorithm::Mcs,
    Algorithm::Tas,
    Algorithm::Futex,
    Algorithm::Adaptive,
];

pub fn run(args: DemoArgs) -> Result<(), CliError> {
    let cpus = corral_runtime::affinity::allowed_cpus().len().max(1);
    if !args.json {
        eprintln!(
            "corral demo: one shared lock, every thread updates 4 shared cache lines under it \
             (paper 3's microbenchmark), {} ms per point on {cpus} CPUs",
            args.duration_ms
        );
    }
    let points = throughput_points(
        &DEMO_ALGS,
        &args.threads,
        Duration::from_millis(args.duration_ms),
        cpus,
        !args.json,
    );
    let collapse = collapse_of(&points);
    let verdict = verdict(&collapse, cpus);
    if args.json {
        let report = DemoReport {
            cpus,
            points,
            collapse,
            verdict,
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| CliError(e.to_string()))?
        );
        return Ok(());
    }
    print_throughput(&points, cpus);
    println!();
    for c in &collapse {
        println!(
            "{:<10} keeps {:>6.1}% of its best ({} threads) at {} threads",
            c.alg,
            100.0 * c.retained,
            c.best_threads,
            c.last_threads
        );
    }
    println!();
    println!("{verdict}");
    Ok(())
}

fn collapse_of(points: &[ThroughputPoint]) -> Vec<Collapse> {
    let mut out: Vec<Collapse> = Vec::new();
    for alg in DEMO_ALGS.iter().map(|a| a.name()) {
        let mine: Vec<&ThroughputPoint> = points.iter().filter(|p| p.alg == alg).collect();
        let (Some(best), Some(last)) = (
            mine.iter()
                .max_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec)),
            mine.last(),
        ) else {
            continue;
        };
        out.push(Collapse {
            alg: alg.to_string(),
            best_threads: best.threads,
            best_ops_per_sec: best.ops_per_sec,
            last_threads: last.threads,
            retained: if best.ops_per_sec > 0.0 {
                last.ops_per_sec / best.ops_per_sec
            } else {
                0.0
            },
        });
    }
    out
}

fn verdict(collapse: &[Collapse], cpus: usize) -> String {
    let worst = collapse
        .iter()
        .min_by(|a, b| a.retained.total_cmp(&b.retained));
    let best = collapse
        .iter()
        .max_by(|a, b| a.retained.total_cmp(&b.retained));
    match (worst, best) {
        (Some(w), Some(b)) if w.last_threads as usize > cpus => format!(
            "With more threads than the {cpus} CPUs, the spinning FIFO lock '{}' keeps only {:.1}% of its \
             best throughput because the lock is handed to waiters that are not running, while '{}' keeps \
             {:.1}% by parking: this collapse is what corral's confinement and spin-then-park waiting must \
             prevent.",
            w.alg,
            100.0 * w.retained,
            b.alg,
            100.0 * b.retained
        ),
        (Some(w), Some(_)) => format!(
            "No point exceeded the {cpus} CPUs, so waiters were never preempted; the worst algorithm, '{}', \
             keeps {:.1}% of its best. Add a thread count above {cpus} to see collapse.",
            w.alg,
            100.0 * w.retained
        ),
        _ => "no points measured".to_string(),
    }
}
