//! `corral bench ff`: paper 4's setting on real programs. Each program at
//! 100%, 150% and 200% load (threads / cores) under the default scheduler
//! and under FF (`corral run --policy ff`), and two programs at once (paper
//! 4 Fig. 11); throughput, context switches, the quantum FF chose; the
//! simulator's `faithful` policy on the same loads beside it.

mod measure;
mod report;
pub(crate) mod table;
mod verdict;

use std::path::Path;

use corral_launch::launch::{find_preload, resolve_program};
use corral_launch::CliError;
use corral_policy::faithful::FfParams;

use super::apps::catalog::App;
use super::apps::fixture::Fixture;
use crate::stats::Spread;
use measure::{calibrate, run_one, run_pair, simulate};
pub(crate) use report::BenchFfReport;
use report::{summarise, Arm, Pair, PairArm, Row, Run};

/// Arguments of `corral bench ff`.
#[derive(clap::Args, Debug)]
pub struct BenchFfArgs {
    /// Programs, comma-separated (as `bench apps --apps`).
    #[arg(
        long,
        value_name = "LIST",
        default_value = "sysbench-mutex,sysbench-threads,stress-ng-mutex,pigz"
    )]
    pub(crate) apps: String,
    /// Loads in percent of the cores, comma-separated.
    #[arg(long, value_name = "PCT,...", default_value = "100,150,200")]
    pub(crate) loads_pct: String,
    /// Length each default-scheduler run is sized to, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 4000)]
    pub(crate) run_ms: u64,
    /// FF's monitoring period in milliseconds (paper 4: 1,000).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub(crate) ff_period_ms: u64,
    /// Runs of each arm at each point. Every run of every point is done in
    /// one shuffled order (see --seed), and the tables show medians and
    /// ranges: a point is a loss only when FF's median throughput is under
    /// 0.95x default's and the two ranges do not overlap.
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..=50))]
    pub(crate) repeat: u32,
    /// Seed of the run order (default: from the clock; the report says
    /// which, so an order can be run again).
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u64>,
    /// FF keeps the kernel's default slice for Table I quanta up to this
    /// many milliseconds (as `corral run --ff-keep-default-up-to-ms`).
    #[arg(long, value_name = "MS", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(0..=250))]
    pub(crate) ff_keep_default_up_to_ms: u32,
    /// Also run FF with every Table I row applied literally (an arm
    /// `ff-literal`, --ff-keep-default-up-to-ms 0), to see what keeping
    /// the default slice changes.
    #[arg(long)]
    pub(crate) with_literal: bool,
    /// Also run FF with the kernel's wake-up preemption kept (an arm
    /// `ff-preempt`, as `corral run --ff-wakeup-preemption`): what FF's
    /// slice and nice value do without SCHED_BATCH.
    #[arg(long)]
    pub(crate) with_wakeup_preemption: bool,
    /// Also run the default scheduler a second time (an arm
    /// `default-again`, in the same shuffled order): its ratio to
    /// `default` is this machine's noise at that point (on a shared 2-core
    /// VM, +-15% between runs). FF's gain, loss or cut then counts only
    /// when farther from 1x than default-again's.
    #[arg(long)]
    pub(crate) with_control: bool,
    /// Skip the two-programs-at-once runs (paper 4 Fig. 11).
    #[arg(long)]
    pub(crate) no_pairs: bool,
    /// Print the JSON document instead of the tables.
    #[arg(long)]
    pub(crate) json: bool,
    /// Also write the JSON document here (the tables still printed).
    #[arg(long, value_name = "FILE.json")]
    pub(crate) report: Option<std::path::PathBuf>,
}

fn parse_apps(s: &str) -> Result<Vec<App>, CliError> {
    s.split(',')
        .map(|n| {
            App::ALL
                .into_iter()
                .find(|a| a.name() == n.trim())
                .ok_or_else(|| {
                    let all: Vec<&str> = App::ALL.iter().map(|a| a.name()).collect();
                    CliError::bad_value("--apps", n, &format!("expected one of {}", all.join(", ")))
                })
        })
        .collect()
}

fn parse_loads(s: &str) -> Result<Vec<u32>, CliError> {
    s.split(',')
        .map(|n| match n.trim().parse::<u32>() {
            Ok(v) if (1..=1000).contains(&v) => Ok(v),
            _ => Err(CliError::bad_value(
                "--loads-pct",
                n,
                "expected percents in 1..=1000",
            )),
        })
        .collect()
}

/// Runs the bench; the caller prints the report (`args.json`: as JSON).
pub(crate) fn run(args: &BenchFfArgs) -> Result<BenchFfReport, CliError> {
    let apps = parse_apps(&args.apps)?;
    let loads = parse_loads(&args.loads_pct)?;
    for app in &apps {
        if resolve_program(app.program().as_ref()).is_none() {
            return Err(CliError(format!(
                "--apps {}: '{}' is not installed (scripts/ci-deps.sh installs it)",
                app.name(),
                app.program()
            )));
        }
    }
    let lib = find_preload()?;
    let cores = corral_runtime::affinity::allowed_cpus().len().max(1) as u32;
    let fx = Fixture::create(
        &std::env::temp_dir(),
        apps.contains(&App::Pigz),
        apps.contains(&App::GitGrep),
    )?;
    let params = FfParams {
        monitoring_period_ns: args.ff_period_ms.max(1) * 1_000_000,
        keep_default_up_to_ms: args.ff_keep_default_up_to_ms,
        ..FfParams::default()
    };
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let mut arms = vec![Arm::Default, Arm::Ff];
    if args.with_literal {
        arms.push(Arm::FfLiteral);
    }
    if args.with_wakeup_preemption {
        arms.push(Arm::FfPreempt);
    }
    if args.with_control {
        arms.push(Arm::DefaultAgain);
    }
    // Every point sized first, then every run of every point in one
    // shuffled order.
    let mut points = Vec::new();
    for &app in &apps {
        for &load in &loads {
            let threads = (cores * load).div_ceil(100).max(1);
            let work = calibrate(&fx, &lib, app, threads, args.run_ms)?;
            points.push((app, load, threads, work));
        }
    }
    let order: Vec<(usize, usize)> = (0..points.len())
        .flat_map(|p| (0..arms.len()).map(move |a| (p, a)))
        .flat_map(|pa| std::iter::repeat_n(pa, args.repeat as usize))
        .collect();
    let order = shuffled(order, seed);
    let mut runs: Vec<Vec<Vec<Run>>> = vec![vec![Vec::new(); arms.len()]; points.len()];
    let mut notes = Vec::new();
    for (i, &(p, a)) in order.iter().enumerate() {
        let (app, load, threads, work) = points[p];
        let (run, report) = run_one(&fx, &lib, app, threads, work, arms[a].params(params))?;
        for p in report.iter().flat_map(|r| &r.programs) {
            notes.extend(p.miss.line());
            notes.extend(p.slice.line());
        }
        eprintln!(
            "corral: bench ff: [{}/{}] {} at {load}% {}: {:.1} {}",
            i + 1,
            order.len(),
            app.name(),
            arms[a].name(),
            run.throughput,
            app.unit()
        );
        runs[p][a].push(run);
    }
    let rows = points
        .iter()
        .zip(runs)
        .map(|(&(app, load, threads, work), runs)| Row {
            app: app.name(),
            unit: app.unit(),
            load_pct: load,
            threads,
            work,
            arms: summarise(&arms, runs),
        })
        .collect();
    let mut pairs = Vec::new();
    if !args.no_pairs {
        for w in apps.windows(2) {
            pairs.push(pair(
                &fx,
                &lib,
                [w[0], w[1]],
                cores,
                args,
                &arms,
                params,
                seed,
            )?);
        }
    }
    let mut sim = Vec::new();
    for workload in ["markov", "phase-change"] {
        for c in [cores, 24] {
            for load in [100, 200] {
                sim.push(simulate(workload, c, load)?);
            }
        }
    }
    notes.sort();
    notes.dedup();
    Ok(BenchFfReport {
        cores,
        period_ms: args.ff_period_ms,
        repeat: args.repeat,
        seed,
        keep_default_up_to_ms: args.ff_keep_default_up_to_ms,
        notes,
        rows,
        pairs,
        sim,
    })
}

/// Two programs at once, every arm `args.repeat` times in a shuffled order.
#[allow(clippy::too_many_arguments)]
fn pair(
    fx: &Fixture,
    lib: &Path,
    apps: [App; 2],
    cores: u32,
    args: &BenchFfArgs,
    arms: &[Arm],
    params: FfParams,
    seed: u64,
) -> Result<Pair, CliError> {
    let works = [
        (apps[0], calibrate(fx, lib, apps[0], cores, args.run_ms)?),
        (apps[1], calibrate(fx, lib, apps[1], cores, args.run_ms)?),
    ];
    let order: Vec<usize> = (0..arms.len())
        .flat_map(|a| std::iter::repeat_n(a, args.repeat as usize))
        .collect();
    let mut got: Vec<Vec<([Run; 2], u64)>> = vec![Vec::new(); arms.len()];
    for a in shuffled(order, seed ^ 0x9e37_79b9) {
        got[a].push(run_pair(fx, lib, works, cores, arms[a].params(params))?);
    }
    let arms = arms
        .iter()
        .zip(got)
        .map(|(&arm, runs)| {
            let side = |i: usize| {
                Spread::of(runs.iter().map(|r| r.0[i].throughput)).unwrap_or(Spread::NAN)
            };
            let icx = runs.iter().map(|r| r.1 as f64);
            let last = runs.last();
            PairArm {
                arm,
                throughput: [side(0), side(1)],
                involuntary: Spread::of(icx).unwrap_or(side(0)),
                quantum_ms: [0, 1].map(|i| last.and_then(|r| r.0[i].quantum_ms)),
            }
        })
        .collect();
    Ok(Pair {
        apps: [apps[0].name(), apps[1].name()],
        arms,
    })
}

/// `items` in an order drawn from `seed` (Fisher-Yates): the arms of every
/// point interleaved, so that the machine's drift falls on all alike.
pub(crate) fn shuffled<T>(mut items: Vec<T>, seed: u64) -> Vec<T> {
    let mut rng = corral_sim::rng::Rng::seeded(seed);
    for i in (1..items.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffles_reproducibly_and_keeps_every_item() {
        let v: Vec<u32> = (0..20).collect();
        let a = shuffled(v.clone(), 7);
        assert_eq!(a, shuffled(v.clone(), 7));
        assert_ne!(a, v);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, v);
    }
}
