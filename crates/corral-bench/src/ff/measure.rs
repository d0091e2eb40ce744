//! One run of `corral bench ff`: a program under corral's library (FF on it
//! or not), its throughput and context switches; work calibration; two
//! programs at once; the simulator on the same shapes.

use std::path::Path;

use corral_launch::launch::{launch_observed, Output, UNIFORM};
use corral_launch::CliError;
use corral_policy::faithful::FfParams;
use corral_runtime::config::{Policy, RuntimeConfig};
use corral_runtime::faithful::{FfDriver, FfReport};

use super::report::{Run, SimRow};
use crate::apps::catalog::App;
use crate::apps::fixture::Fixture;

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
pub(super) fn run_one(
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
        // Faithful Scheduling sets each thread's quantum from its start.
        load_after_contended: 0,
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
    let (outcome, stdout) = launch_observed(&cfg, Some(lib), &argv, None, out, UNIFORM, &|pid| {
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
pub(super) fn calibrate(
    fx: &Fixture,
    lib: &Path,
    app: App,
    threads: u32,
    run_ms: u64,
) -> Result<u64, CliError> {
    if let Some(seconds) = app.seconds_of_work(run_ms as f64 / 1e3) {
        return Ok(seconds);
    }
    let mut work = app.first_work();
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
pub(super) fn run_pair(
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
pub(super) fn simulate(
    workload: &'static str,
    cores: u32,
    load_pct: u32,
) -> Result<SimRow, CliError> {
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
