//! `corral bench ca`: paper 5's setting on a real program. The worker's
//! `groups` workload plants groups of threads, each group sharing its own
//! two locks, plus one lock every thread takes; it runs under glibc, under
//! corral with no policy, lca, ca and ca,csf, in an interleaved order per
//! repeat. Reported: throughput (median), wait share, and the clustering
//! accuracy (paper 5, Sec. 3.2) of the last CA round against the planted
//! groups.

use corral_launch::launch::{find_preload, launch, Output};
use corral_launch::CliError;
use corral_policy::cluster::clustering_accuracy;
use corral_runtime::config::{Policy, RuntimeConfig};
use corral_runtime::events::{read_log, Event};
use serde::Serialize;

use super::worker::WorkerResult;
use crate::stats::median;

/// Arguments of `corral bench ca`.
#[derive(clap::Args, Debug)]
pub struct BenchCaArgs {
    /// Planted group counts, comma-separated (2 to 8).
    #[arg(long, value_name = "LIST", default_value = "2,4", value_parser = corral_launch::lists::parse_count_list)]
    pub(crate) groups: corral_launch::lists::Counts,
    /// Threads per planted group (CA records from 10 threads on).
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u32).range(2..=64))]
    pub(crate) threads_per_group: u32,
    /// Length of each run in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1500, value_parser = clap::value_parser!(u64).range(100..))]
    pub(crate) duration_ms: u64,
    /// Runs per point; the table shows medians.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub(crate) repeats: u32,
    /// Print the JSON document instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The columns, in the order a repeat starts from (rotated each repeat).
const COLUMNS: [&str; 5] = ["glibc", "none", "lca", "ca", "ca,csf"];

/// One column at one group count.
#[derive(Debug, Serialize)]
pub(crate) struct Cell {
    pub(crate) policy: &'static str,
    /// Median operations per second.
    pub(crate) throughput: f64,
    /// Every repeat's operations per second.
    pub(crate) runs: Vec<f64>,
    /// Lock waiting over thread time (sum of waits / (threads x wall)),
    /// median; `None` under glibc (no stats).
    pub(crate) wait_share: Option<f64>,
    /// CA only: clustering accuracy of the last round against the planted
    /// groups, median over repeats.
    pub(crate) accuracy: Option<f64>,
    /// CA only: rounds applied, median.
    pub(crate) rounds: Option<u64>,
    /// CA only: share of the planted threads the last round clustered
    /// (the rest had too few samples to take part), median.
    pub(crate) coverage: Option<f64>,
}

/// One group count.
#[derive(Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) groups: u32,
    pub(crate) threads: u32,
    pub(crate) cells: Vec<Cell>,
    /// The simulator on the same shape (`corral sim --workload
    /// ca-groups-G --policy default,lca,ca --cores 2`).
    pub(crate) sim: Vec<SimCell>,
}

/// One simulator policy at one group count.
#[derive(Debug, Serialize)]
pub(crate) struct SimCell {
    pub(crate) policy: String,
    /// Simulated operations per second.
    pub(crate) throughput: f64,
    /// Lock waiting over task time.
    pub(crate) wait_share: f64,
}

/// Simulated seconds per point of the sim's comparison.
const SIM_SECONDS: f64 = 0.5;

/// The simulator's `default`, `lca` and `ca` on preset `ca-groups-G` at
/// as many cores as this machine lets the program use (at least 2).
fn simulate(groups: u32, cores: u32) -> Result<Vec<SimCell>, CliError> {
    let name = format!("ca-groups-{groups}");
    let workload = corral_sim::presets::preset(&name)
        .ok_or_else(|| CliError(format!("no simulator preset {name}")))?;
    let spec = corral_sim::SweepSpec {
        workloads: vec![workload],
        policies: ["default", "lca", "ca"].map(String::from).to_vec(),
        cores: vec![cores],
        seconds: SIM_SECONDS,
        seed: 1,
        costs: corral_sim::LockCosts::default(),
    };
    let report = corral_sim::run_sweep(&spec, &|_, _| {}).map_err(|e| CliError(e.to_string()))?;
    Ok(report
        .points
        .into_iter()
        .map(|p| SimCell {
            policy: p.policy,
            throughput: p.throughput,
            wait_share: p.wait_share,
        })
        .collect())
}

/// The JSON document.
#[derive(Debug, Serialize)]
pub(crate) struct BenchCaReport {
    pub(crate) duration_ms: u64,
    pub(crate) repeats: u32,
    pub(crate) rows: Vec<Row>,
}

/// One run's figures.
struct RunOut {
    throughput: f64,
    wait_share: Option<f64>,
    accuracy: Option<f64>,
    rounds: Option<u64>,
    coverage: Option<f64>,
}

fn run_once(
    column: &str,
    groups: u32,
    threads: u32,
    args: &BenchCaArgs,
) -> Result<RunOut, CliError> {
    let preload = find_preload()?;
    let exe = std::env::current_exe()?.to_string_lossy().into_owned();
    let prog: Vec<std::ffi::OsString> = [
        exe.as_str(),
        "bench",
        "worker",
        "--workload",
        "groups",
        "--groups",
        &groups.to_string(),
        "--threads",
        &threads.to_string(),
        "--duration-ms",
        &args.duration_ms.to_string(),
    ]
    .iter()
    .map(|s| s.into())
    .collect();
    let policy = match column {
        "glibc" | "none" => Policy::None,
        "lca" => Policy::Lca,
        "ca" => Policy::Ca,
        _ => Policy::CaCsf,
    };
    let cfg = RuntimeConfig {
        policy,
        // The clustering sees every lock from the program's first call.
        load_after_contended: 0,
        ..RuntimeConfig::default()
    };
    let lib = (column != "glibc").then_some(preload.as_path());
    let events = std::env::temp_dir().join(format!("corral-bench-ca-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&events);
    let log = policy.is_ca().then_some(events.as_path());
    let (outcome, stdout) = launch(&cfg, lib, &prog, log, Output::Capture)?;
    if !outcome.status.success() {
        return Err(CliError(format!(
            "the groups worker failed ({}) at {groups} groups, {column}",
            outcome.status
        )));
    }
    let line = String::from_utf8_lossy(&stdout);
    let result: WorkerResult = serde_json::from_str(line.trim())
        .map_err(|e| CliError(format!("unreadable worker output '{}': {e}", line.trim())))?;
    let wall_ns = result.seconds * 1e9 * f64::from(threads);
    let wait_share = outcome
        .stats
        .as_ref()
        .map(|s| s.threads.iter().map(|t| t.wait_ns as f64).sum::<f64>() / wall_ns.max(1.0));
    let (mut accuracy, mut rounds, mut coverage) = (None, None, None);
    if log.is_some() {
        let evs = read_log(&events).unwrap_or_default();
        let _ = std::fs::remove_file(&events);
        let clustered: Vec<_> = evs
            .into_iter()
            .filter_map(|e| match e {
                Event::Clustered { applied, .. } => Some(applied),
                _ => None,
            })
            .collect();
        rounds = Some(clustered.len() as u64);
        accuracy = clustered.last().map(|last| {
            let (mut planted, mut found) = (Vec::new(), Vec::new());
            for t in &last.threads {
                if let Some(&(_, g)) = result.planted.iter().find(|(tid, _)| *tid == t.tid) {
                    planted.push(g);
                    found.push(t.cluster);
                }
            }
            coverage = Some(planted.len() as f64 / result.planted.len().max(1) as f64);
            clustering_accuracy(&planted, &found)
        });
    }
    Ok(RunOut {
        throughput: result.ops as f64 / result.seconds.max(1e-9),
        wait_share,
        accuracy,
        rounds,
        coverage,
    })
}

/// Measures every group count and column.
pub(crate) fn measure(args: &BenchCaArgs) -> Result<BenchCaReport, CliError> {
    let mut rows = Vec::new();
    for &groups in args.groups.iter() {
        if !(2..=8).contains(&groups) {
            return Err(CliError::bad_value(
                "--groups",
                &groups.to_string(),
                "each group count must be 2 to 8",
            ));
        }
        let threads = groups * args.threads_per_group;
        let mut outs: Vec<Vec<RunOut>> = COLUMNS.iter().map(|_| Vec::new()).collect();
        for r in 0..args.repeats as usize {
            for k in 0..COLUMNS.len() {
                let c = (k + r) % COLUMNS.len();
                let out = run_once(COLUMNS[c], groups, threads, args)?;
                if !args.json {
                    eprintln!(
                        "  {groups} groups  {:<7} {:>12.0} ops/s{}",
                        COLUMNS[c],
                        out.throughput,
                        out.accuracy
                            .map_or(String::new(), |a| format!("  accuracy {a:.3}"))
                    );
                }
                outs[c].push(out);
            }
        }
        let cells = COLUMNS
            .iter()
            .zip(outs)
            .map(|(&policy, o)| Cell {
                policy,
                throughput: median(o.iter().map(|x| x.throughput)).unwrap_or(0.0),
                runs: o.iter().map(|x| x.throughput).collect(),
                wait_share: median(o.iter().filter_map(|x| x.wait_share)),
                accuracy: median(o.iter().filter_map(|x| x.accuracy)),
                // A whole count: between two middle counts, the upper one.
                rounds: median(o.iter().filter_map(|x| x.rounds.map(|r| r as f64)))
                    .map(|r| r.round() as u64),
                coverage: median(o.iter().filter_map(|x| x.coverage)),
            })
            .collect();
        let cores = (corral_runtime::affinity::allowed_cpus().len() as u32).max(2);
        rows.push(Row {
            groups,
            threads,
            cells,
            sim: simulate(groups, cores)?,
        });
    }
    Ok(BenchCaReport {
        duration_ms: args.duration_ms,
        repeats: args.repeats,
        rows,
    })
}

/// The table: one line per group count and column, throughput relative to
/// the `none` column (corral's locks under the default scheduler).
pub(crate) fn render(r: &BenchCaReport) -> String {
    let mut s = format!(
        "{:>6} {:>7} {:<7} {:>12} {:>8} {:>10} {:>8} {:>8} {:>6}\n",
        "groups", "threads", "policy", "ops/s", "x none", "wait", "accuracy", "coverage", "rounds"
    );
    for row in &r.rows {
        let base = row
            .cells
            .iter()
            .find(|c| c.policy == "none")
            .map_or(1.0, |c| c.throughput);
        for c in &row.cells {
            s.push_str(&format!(
                "{:>6} {:>7} {:<7} {:>12.0} {:>8.3} {:>10} {:>8} {:>8} {:>6}\n",
                row.groups,
                row.threads,
                c.policy,
                c.throughput,
                c.throughput / base.max(1e-9),
                c.wait_share
                    .map_or("-".into(), |w| format!("{:.1}%", 100.0 * w)),
                c.accuracy.map_or("-".into(), |a| format!("{a:.3}")),
                c.coverage.map_or("-".into(), |a| format!("{a:.2}")),
                c.rounds.map_or("-".into(), |n| n.to_string()),
            ));
        }
    }
    s.push_str(&format!(
        "simulator, same shapes ({SIM_SECONDS} s simulated per point; `corral sim --workload ca-groups-G --policy default,lca,ca --cores 2`):\n"
    ));
    for row in &r.rows {
        let base = row.sim.iter().find(|c| c.policy == "default");
        let base = base.map_or(1.0, |c| c.throughput);
        for c in &row.sim {
            s.push_str(&format!(
                "{:>6} {:>7} {:<7} {:>12.0} {:>8} {:>9.1}%   (x default {:.2})\n",
                row.groups,
                row.threads,
                c.policy,
                c.throughput,
                "",
                100.0 * c.wait_share,
                c.throughput / base.max(1e-9),
            ));
        }
    }
    s
}

/// `corral bench ca`.
pub(crate) fn run(args: BenchCaArgs) -> Result<(), CliError> {
    if !args.json {
        eprintln!(
            "corral bench ca: {} threads per group, {} ms per run, {} repeats, columns {}",
            args.threads_per_group,
            args.duration_ms,
            args.repeats,
            COLUMNS.join(" ")
        );
    }
    let report = measure(&args)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(())
}
