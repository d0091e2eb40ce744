//! `corral bench ff`: paper 4's setting on real programs. Each program at
//! 100%, 150% and 200% load (threads / cores) under the default scheduler
//! and under FF (`corral run --policy ff`), and two programs at once (paper
//! 4 Fig. 11); throughput, context switches, the quantum FF chose; the
//! simulator's `faithful` policy on the same loads beside it.

use std::path::Path;

use corral_policy::faithful::{FfParams, FfSlice};
use corral_runtime::config::{Policy, RuntimeConfig};
use corral_runtime::faithful::{FfDriver, FfReport};
use serde::Serialize;

use super::apps::catalog::App;
use super::apps::fixture::Fixture;
use super::ff_stats::{shuffled, Spread, Verdict};
use crate::cmd::launch::{find_preload, launch_observed, resolve_program, Output};
use crate::CliError;

/// Arguments of `corral bench ff`.
#[derive(clap::Args)]
pub(crate) struct BenchFfArgs {
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

/// Who schedules a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Arm {
    /// The kernel alone (EEVDF).
    Default,
    /// `corral run --policy ff` as configured.
    Ff,
    /// FF with every Table I row applied as is.
    FfLiteral,
}

impl Arm {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Arm::Default => "default",
            Arm::Ff => "ff",
            Arm::FfLiteral => "ff-literal",
        }
    }

    fn params(self, ff: FfParams) -> Option<FfParams> {
        match self {
            Arm::Default => None,
            Arm::Ff => Some(ff),
            Arm::FfLiteral => Some(FfParams {
                keep_default_up_to_ms: 0,
                ..ff
            }),
        }
    }
}

/// One program's run.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Run {
    /// Work per second in the program's own unit.
    pub(crate) throughput: f64,
    /// Voluntary context switches of the program and its children.
    pub(crate) voluntary: u64,
    /// Involuntary context switches.
    pub(crate) involuntary: u64,
    /// FF's Table I quantum in force in its last period with threads, ms;
    /// `None` by default.
    pub(crate) quantum_ms: Option<u32>,
    /// What FF asked of the kernel for it.
    pub(crate) slice: Option<FfSlice>,
    /// The largest slice read back from its threads then, ns.
    pub(crate) slice_ns: Option<u64>,
    /// That period's lock contention.
    pub(crate) lock_contention: Option<f64>,
    /// Threads FF left alone then (real-time, batch, idle).
    pub(crate) threads_not_fair: Option<u32>,
}

/// One arm at one point over the repeats.
#[derive(Debug, Serialize)]
pub(crate) struct ArmRuns {
    pub(crate) arm: Arm,
    pub(crate) throughput: Spread,
    pub(crate) involuntary: Spread,
    pub(crate) voluntary: Spread,
    /// Against the default arm (`None` for the default arm itself).
    pub(crate) verdict: Option<Verdict>,
    /// Every run, in the order it ran.
    pub(crate) runs: Vec<Run>,
}

/// One program at one load, every arm.
#[derive(Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) app: &'static str,
    pub(crate) unit: &'static str,
    pub(crate) load_pct: u32,
    pub(crate) threads: u32,
    /// Work per run, sized for --run-ms under the default scheduler.
    pub(crate) work: u64,
    pub(crate) arms: Vec<ArmRuns>,
}

/// Two programs at once (each at 100%: 200% in all), one arm.
#[derive(Debug, Serialize)]
pub(crate) struct PairArm {
    pub(crate) arm: Arm,
    /// Each program's throughput over the repeats.
    pub(crate) throughput: [Spread; 2],
    /// Involuntary switches of both together.
    pub(crate) involuntary: Spread,
    /// Each program's quantum in its last run.
    pub(crate) quantum_ms: [Option<u32>; 2],
}

/// Two programs at once (paper 4 Fig. 11).
#[derive(Debug, Serialize)]
pub(crate) struct Pair {
    pub(crate) apps: [&'static str; 2],
    pub(crate) arms: Vec<PairArm>,
}

/// The simulator's `faithful` against `default` at one shape.
#[derive(Debug, Serialize)]
pub(crate) struct SimRow {
    pub(crate) workload: &'static str,
    pub(crate) cores: u32,
    pub(crate) load_pct: u32,
    pub(crate) default_throughput: f64,
    pub(crate) ff_throughput: f64,
    pub(crate) default_switches: u64,
    pub(crate) ff_switches: u64,
}

/// The JSON document.
#[derive(Debug, Serialize)]
pub(crate) struct BenchFfReport {
    pub(crate) cores: u32,
    pub(crate) period_ms: u64,
    pub(crate) repeat: u32,
    pub(crate) seed: u64,
    pub(crate) keep_default_up_to_ms: u32,
    pub(crate) notes: Vec<String>,
    pub(crate) rows: Vec<Row>,
    pub(crate) pairs: Vec<Pair>,
    pub(crate) sim: Vec<SimRow>,
}

/// (voluntary, involuntary) switches of this process's reaped children.
fn children_switches() -> (u64, u64) {
    // SAFETY: a zeroed rusage is valid, and getrusage only writes into it.
    let ru = unsafe {
        let mut ru: libc::rusage = core::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru
    };
    (ru.ru_nvcsw as u64, ru.ru_nivcsw as u64)
}

/// The thread (or stress-ng instance) count for `threads` threads.
fn count_arg(app: App, threads: u32) -> u32 {
    match app {
        App::StressNgMutex => (threads / 2).max(1),
        _ => threads,
    }
}

/// The command line for one run: a program that takes work in runs
/// (`git grep`) runs them all under one shell, so that FF, which follows
/// children, profiles them as one program.
fn ff_argv(fx: &Fixture, app: App, threads: u32, work: u64) -> Vec<std::ffi::OsString> {
    let (runs, per_run) = app.runs(work);
    let one = app.argv(fx, count_arg(app, threads), per_run);
    if runs == 1 {
        return one;
    }
    let lp = r#"n=$1; shift; i=0; while [ "$i" -lt "$n" ]; do "$@" || exit; i=$((i+1)); done"#;
    let mut v: Vec<std::ffi::OsString> =
        ["sh", "-c", lp, "sh"].into_iter().map(Into::into).collect();
    v.push(runs.to_string().into());
    v.extend(one);
    v
}

/// Runs `app` once under corral's library (policy none), with FF on it
/// when `ff`. Its switches are the reaped children's: alone, its own.
fn run_one(
    fx: &Fixture,
    lib: &Path,
    app: App,
    threads: u32,
    work: u64,
    ff: Option<FfParams>,
) -> Result<(Run, Option<FfReport>), CliError> {
    if app == App::StressNgMutex {
        let _ = std::fs::remove_file(fx.stress_yaml());
    }
    let cfg = RuntimeConfig {
        policy: Policy::None,
        ..RuntimeConfig::default()
    };
    let argv = ff_argv(fx, app, threads, work);
    let out = if app.reads_stdout() {
        Output::Capture
    } else {
        Output::Null
    };
    let driver = std::cell::RefCell::new(None);
    let before = children_switches();
    let (outcome, stdout) = launch_observed(&cfg, Some(lib), &argv, None, out, &|pid| {
        if let Some(p) = ff {
            *driver.borrow_mut() = FfDriver::start(p, vec![pid], |_| {}).ok();
        }
    })?;
    let after = children_switches();
    let report = driver.into_inner().map(FfDriver::finish);
    let done = app
        .done(
            fx,
            outcome.status,
            &stdout,
            count_arg(app, threads),
            work,
            outcome.wall.as_secs_f64(),
        )
        .map_err(|e| CliError(format!("{} at {threads} threads: {e}", app.name())))?;
    // The last period while the program had threads: one that caught it
    // exiting holds only its main thread.
    let last = report
        .as_ref()
        .and_then(|r| r.programs.first())
        .and_then(|p| {
            p.periods
                .iter()
                .rev()
                .find(|x| x.threads > 1)
                .or(p.periods.last())
        });
    Ok((
        Run {
            throughput: done.units / done.seconds.max(1e-9),
            voluntary: after.0.saturating_sub(before.0),
            involuntary: after.1.saturating_sub(before.1),
            quantum_ms: last.map(|l| l.quantum_ms),
            slice: last.map(|l| l.slice),
            slice_ns: last.and_then(|l| l.slice_ns),
            lock_contention: last.map(|l| l.lock_contention),
            threads_not_fair: last.map(|l| l.threads_not_fair),
        },
        report,
    ))
}

/// Work sized so that the default run takes about `run_ms`.
fn calibrate(
    fx: &Fixture,
    lib: &Path,
    app: App,
    threads: u32,
    run_ms: u64,
) -> Result<u64, CliError> {
    let mut work = app.first_work(count_arg(app, threads));
    for _ in 0..6 {
        let t0 = std::time::Instant::now();
        run_one(fx, lib, app, threads, work, None)?;
        let scale = run_ms as f64 / 1e3 / t0.elapsed().as_secs_f64().max(1e-3);
        if scale <= 4.0 {
            return Ok(((work as f64 * scale).round() as u64).max(1));
        }
        work = (work as f64 * (scale / 2.0).min(64.0)).ceil() as u64;
    }
    Ok(work)
}

/// Two programs at once, each with its own FF when `ff`; their runs and
/// the involuntary switches of both.
fn run_pair(
    fx: &Fixture,
    lib: &Path,
    apps: [(App, u64); 2],
    threads: u32,
    ff: Option<FfParams>,
) -> Result<([Run; 2], u64), CliError> {
    let before = children_switches();
    let (a, b) = std::thread::scope(|s| {
        let other = s.spawn(|| run_one(fx, lib, apps[1].0, threads, apps[1].1, ff));
        let first = run_one(fx, lib, apps[0].0, threads, apps[0].1, ff);
        (
            first,
            other
                .join()
                .unwrap_or_else(|_| Err(CliError("pair run panicked".into()))),
        )
    });
    let after = children_switches();
    Ok(([a?.0, b?.0], after.1.saturating_sub(before.1)))
}

/// The simulator on the same loads (whole tasks per core: 100% and 200%).
fn simulate(workload: &'static str, cores: u32, load_pct: u32) -> Result<SimRow, CliError> {
    let mut w = corral_sim::presets::preset(workload)
        .ok_or_else(|| CliError(format!("no simulator preset {workload}")))?;
    w.tasks_per_core = load_pct / 100;
    // FF profiles first after its 1 s warm-up and 1 s period: 6 s leaves four.
    let cfg = corral_sim::SimConfig::new(cores, 6.0, 1);
    let go = |name: &str| -> Result<corral_sim::SimResult, CliError> {
        let mut p = corral_sim::make_policy(name, cores).map_err(|e| CliError(e.to_string()))?;
        corral_sim::simulate(&cfg, &w, p.as_mut()).map_err(|e| CliError(e.to_string()))
    };
    let (d, f) = (go("default")?, go("faithful")?);
    Ok(SimRow {
        workload,
        cores,
        load_pct,
        default_throughput: d.throughput,
        ff_throughput: f.throughput,
        default_switches: d.context_switches,
        ff_switches: f.context_switches,
    })
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

/// Median/range of `f` over `runs`.
fn spread(runs: &[Run], f: impl Fn(&Run) -> f64) -> Spread {
    let xs: Vec<f64> = runs.iter().map(f).collect();
    Spread::of(&xs).unwrap_or(Spread {
        median: f64::NAN,
        min: f64::NAN,
        max: f64::NAN,
    })
}

/// Each arm's runs summarised, with its verdict against the first arm
/// (default).
fn summarise(arms: &[Arm], runs: Vec<Vec<Run>>) -> Vec<ArmRuns> {
    let mut out: Vec<ArmRuns> = Vec::new();
    for (&arm, runs) in arms.iter().zip(runs) {
        let throughput = spread(&runs, |r| r.throughput);
        let involuntary = spread(&runs, |r| r.involuntary as f64);
        let verdict = out
            .first()
            .map(|d| Verdict::of((&d.throughput, &d.involuntary), (&throughput, &involuntary)));
        out.push(ArmRuns {
            arm,
            throughput,
            involuntary,
            voluntary: spread(&runs, |r| r.voluntary as f64),
            verdict,
            runs,
        });
    }
    out
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
                let v: Vec<Run> = runs.iter().map(|r| r.0[i].clone()).collect();
                spread(&v, |r| r.throughput)
            };
            let icx: Vec<f64> = runs.iter().map(|r| r.1 as f64).collect();
            let last = runs.last();
            PairArm {
                arm,
                throughput: [side(0), side(1)],
                involuntary: Spread::of(&icx).unwrap_or(side(0)),
                quantum_ms: [0, 1].map(|i| last.and_then(|r| r.0[i].quantum_ms)),
            }
        })
        .collect();
    Ok(Pair {
        apps: [apps[0].name(), apps[1].name()],
        arms,
    })
}
