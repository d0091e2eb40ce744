//! How `corral bench apps` runs a program: one sample (the program's runs
//! under a column, killed past a time limit), and the work sized on glibc.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::time::Duration;

use corral_launch::launch::Output;
use corral_launch::CliError;
use corral_runtime::config::RuntimeConfig;

use super::catalog::{App, Column, Done};
use super::fixture::Fixture;
use super::report::{Sample, Status};
use crate::limited::launch_limited;

/// What every run needs.
pub(super) struct Bench<'a> {
    pub(super) fx: &'a Fixture,
    pub(super) preload: Option<PathBuf>,
    pub(super) limit: Duration,
    /// `--pin-cpus`: every run confined to these CPUs.
    pub(super) pin: Option<super::pin::PinCpus>,
    /// `--load-after-contended`, for the corral columns whose lock parks.
    pub(super) load_after_contended: u32,
}

/// `column`'s configuration (none under glibc), with
/// `--load-after-contended`; it applies where the column's lock parks (see
/// `RuntimeConfig::load_after`): a spinning lock's mutexes are not
/// glibc's, so its processes load corral at once.
fn run_config(column: Column, load_after_contended: u32) -> Option<RuntimeConfig> {
    column.config().map(|c| RuntimeConfig {
        load_after_contended,
        ..c
    })
}

impl Bench<'_> {
    /// Runs `app` with `threads` threads and `work` units in `column`.
    pub(super) fn sample(
        &self,
        app: App,
        column: Column,
        threads: u32,
        work: u64,
    ) -> Result<Sample, CliError> {
        let (runs, per_run) = app.runs(work);
        let mut s = Sample {
            status: Status::Ok,
            done: Done::default(),
            wall_s: 0.0,
            cpu_s: 0.0,
            ssc_bound: None,
            detail: None,
        };
        let cfg = run_config(column, self.load_after_contended);
        let lib = cfg.and(self.preload.as_deref());
        for _ in 0..runs {
            if app == App::StressNgMutex {
                // Never read a previous run's report.
                let _ = std::fs::remove_file(self.fx.stress_yaml());
            }
            let mut argv = app.argv(self.fx, threads, per_run);
            if let Column::Peer(peer) = column {
                argv = peer.wrap(argv);
            }
            if let Some(pin) = &self.pin {
                argv = pin.wrap(argv);
            }
            let output = if app.reads_stdout() {
                Output::Capture
            } else {
                Output::Null
            };
            let (outcome, stdout, killed) =
                launch_limited(&cfg.unwrap_or_default(), lib, &argv, output, self.limit)?;
            s.wall_s += outcome.wall.as_secs_f64();
            s.cpu_s += outcome.cpu.as_secs_f64();
            s.ssc_bound = outcome.stats.map(|st| st.ssc_bound);
            if killed {
                s.status = Status::Timeout;
                return Ok(s);
            }
            if let Some(sig) = outcome.status.signal() {
                if [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT].contains(&sig) {
                    return Err(CliError("interrupted".into()));
                }
            }
            let done = app.done(
                self.fx,
                outcome.status,
                &stdout,
                threads,
                per_run,
                outcome.wall.as_secs_f64(),
            );
            match done {
                Ok(d) => {
                    s.done.units += d.units;
                    s.done.seconds += d.seconds;
                }
                Err(e) => {
                    s.status = Status::Failed;
                    s.detail = Some(e);
                    return Ok(s);
                }
            }
        }
        Ok(s)
    }

    /// Sizes the work so that glibc's run takes about `target`: small runs
    /// first, growing until one is long enough to scale from, then one more
    /// run at the chosen size, re-sized (at the fastest rate seen) while it
    /// lands outside a third to three times the target (a slow outlier among
    /// the probes, as
    /// `sysbench threads` has at 2 threads, would otherwise leave every
    /// column a run of a few milliseconds, all start-up).
    pub(super) fn calibrate(&self, app: App, threads: u32, target: f64) -> Result<u64, CliError> {
        if let Some(seconds) = app.seconds_of_work(target) {
            return Ok(seconds);
        }
        size_work(app.first_work(), target, |work| {
            let s = self.sample(app, Column::Glibc, threads, work)?;
            if s.status != Status::Ok {
                return Err(CliError(format!(
                    "{} at {threads} threads fails without corral ({}): {}",
                    app.name(),
                    serde_json::to_string(&s.status)?.trim_matches('"'),
                    s.detail.unwrap_or_default()
                )));
            }
            Ok(s.wall_s)
        })
    }
}

/// [`Bench::calibrate`]'s search: the work to run, from `first`, given
/// the wall seconds `wall_of(work)` a probe of that work took.
fn size_work(
    first: u64,
    target: f64,
    mut wall_of: impl FnMut(u64) -> Result<f64, CliError>,
) -> Result<u64, CliError> {
    let mut work = first;
    // Whether `work` was scaled from a long enough run (then one run
    // within range accepts it).
    let mut checked = false;
    // The fastest rate any probe showed (units of work per second): a
    // program that sometimes stalls for a fixed time (stress-ng's mutex
    // stressor, up to 1 s now and then, under glibc too) is sized on its
    // work, not on the stall.
    let mut best_rate = 0f64;
    for _ in 0..10 {
        let t = wall_of(work)?.max(1e-4);
        let scale = target / t;
        let rate = work as f64 / t;
        best_rate = best_rate.max(rate);
        // A run in range but at under half the fastest rate stalled: the
        // size it confirms is the stall's.
        if (1.0 / 3.0..=3.0).contains(&scale) && checked && rate * 2.0 >= best_rate {
            return Ok(work);
        }
        work = if scale <= 3.0 {
            checked = true;
            ((target * best_rate).round() as u64).max(1)
        } else {
            // Aim the next probe at half the target: no probe overshoots far.
            ((work as f64 * (scale / 2.0).min(64.0)).ceil() as u64).max(work + 1)
        };
    }
    Ok(work)
}

/// The 1-minute load average, if /proc tells it.
pub(super) fn loadavg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program doing 400k units a second that stalls 1 s on the probes
    /// listed (by their order).
    fn stalling(stalls: &'static [usize]) -> impl FnMut(u64) -> Result<f64, CliError> {
        let mut probe = 0;
        move |work| {
            probe += 1;
            let stall = if stalls.contains(&probe) { 1.0 } else { 0.0 };
            Ok(work as f64 / 400_000.0 + stall)
        }
    }

    #[test]
    fn only_parking_columns_defer_the_load() {
        use corral_locks::Algorithm;
        let of = |column| run_config(column, 1000).map(|c| c.load_after());
        assert_eq!(of(Column::Default), Some(1000));
        assert_eq!(of(Column::Lock(Algorithm::Adaptive)), Some(1000));
        assert_eq!(of(Column::Lock(Algorithm::Ticket)), Some(0));
        assert_eq!(of(Column::Glibc), None);
        assert_eq!(run_config(Column::Default, 0).unwrap().load_after(), 0);
    }

    #[test]
    fn a_steady_program_is_sized_to_the_target() {
        let work = size_work(5000, 1.0, stalling(&[])).unwrap();
        assert!((200_000..=800_000).contains(&work), "{work}");
    }

    #[test]
    fn a_probe_that_stalled_into_range_does_not_confirm_its_size() {
        // The first probe stalls into range; the sizes scaled from it run in
        // 10 ms, and the one confirming them stalls again.
        let work = size_work(5000, 1.0, stalling(&[1, 3])).unwrap();
        assert!(
            work >= 300_000,
            "sized on the stall: {work} units (~12 ms of work)"
        );
    }
}
