//! What `corral bench apps` makes of its runs: each point's medians and
//! ratios to glibc, the verdict on corral's default, and the tables.

use corral_runtime::config::RuntimeConfig;
use serde::Serialize;

use super::catalog::{App, Column, Done};
use super::confirm::describe;
use crate::stats::{self, within_noise, Spread};

/// A point loses when its throughput is below this share of glibc's...
pub(super) const MIN_RATIO: f64 = crate::stats::BAR;
/// ...or when, at a throughput within `EQUAL_BAND` of glibc's, it spends
/// more than this multiple of glibc's CPU time on the same work.
pub(super) const MAX_CPU_RATIO: f64 = 1.2;
/// Throughput ratios in [MIN_RATIO, EQUAL_BAND] count as equal throughput.
pub(super) const EQUAL_BAND: f64 = 1.05;
/// How a point ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    /// The program finished and reported its work.
    Ok,
    /// Killed for running far past --duration-ms (see `TIMEOUT_FACTOR`).
    Timeout,
    /// Exited unsuccessfully, or its report could not be read.
    Failed,
}

/// One measured point: a program at a thread count in one column.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct AppPoint {
    /// The program.
    pub(crate) app: App,
    /// `--threads` value (stress-ng-mutex: processes of two threads).
    pub(crate) threads: u32,
    /// `glibc`, `default` or an algorithm.
    pub(crate) config: &'static str,
    /// corral's lock algorithm; none under glibc.
    pub(crate) lock: Option<&'static str>,
    /// How it ended.
    pub(crate) status: Status,
    /// Work per second (median over the repeats); none unless `ok`.
    pub(crate) throughput: Option<f64>,
    /// The slowest and fastest repeat's work per second.
    pub(crate) throughput_range: Option<(f64, f64)>,
    /// Whether this median lies inside glibc's own range over its repeats
    /// at the same point: a loss there is within glibc's run-to-run noise.
    pub(crate) inside_glibc_range: Option<bool>,
    /// The throughput's unit.
    pub(crate) unit: &'static str,
    /// Wall time of the program's run(s) (median over the repeats).
    pub(crate) wall_s: f64,
    /// The time the throughput is over: the program's own figure where it
    /// prints one (sysbench, stress-ng), else the wall time (median).
    pub(crate) timed_s: Option<f64>,
    /// User+sys CPU time of the program and its children (median).
    pub(crate) cpu_s: f64,
    /// The units of work a run did (median): the work given, except for a
    /// program run for a time (stress-ng), where it is what got done.
    pub(crate) units: Option<f64>,
    /// Throughput over glibc's at the same thread count.
    pub(crate) ratio_vs_glibc: Option<f64>,
    /// The 95% interval of `ratio_vs_glibc` over the repeats (a bootstrap
    /// of the rounds, each run side by side; corral columns, 5 repeats or
    /// more).
    pub(crate) ratio_interval: Option<(f64, f64)>,
    /// glibc-again's throughput over glibc's at this point (corral columns,
    /// with --with-control): the machine's noise the ratio stands in.
    pub(crate) control_ratio: Option<f64>,
    /// CPU time per unit of work over glibc's (for a fixed amount of work,
    /// simply CPU time over glibc's).
    pub(crate) cpu_ratio_vs_glibc: Option<f64>,
    /// Throughput over the same column's at one thread, where one thread
    /// was measured: how much of its single-thread rate it keeps.
    pub(crate) ratio_vs_own_one_thread: Option<f64>,
    /// The work each run was given (locks, events, ops, copies or runs).
    pub(crate) work: u64,
    /// Runs behind the medians.
    pub(crate) repeats: u32,
    /// With --confirm-rounds, on a default point whose first rounds left
    /// its verdict open: what those rounds read, and the rounds added.
    pub(crate) confirmation: Option<super::confirm::Confirmation>,
    /// corral's SSC size at the end of the last run (corral columns).
    pub(crate) ssc_bound: Option<u32>,
    /// Why a point failed.
    pub(crate) detail: Option<String>,
    /// Every run behind the medians, in the order the rounds ran: a point
    /// whose runs fall in two groups (sysbench threads at 64 threads has
    /// runs that take 2-3 times the others, under glibc too) shows it here,
    /// where its median and range cannot.
    pub(crate) runs: Vec<RunFigures>,
}

/// One run's figures (for git-grep, one series of runs).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct RunFigures {
    /// Work per second; none unless the run ended well.
    pub(crate) throughput: Option<f64>,
    /// Wall time, seconds.
    pub(crate) wall_s: f64,
    /// User+sys CPU time of the program and its children, seconds.
    pub(crate) cpu_s: f64,
}

/// A point where corral's default loses to glibc.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Loss {
    /// The program.
    pub(crate) app: App,
    /// The thread count.
    pub(crate) threads: u32,
    /// What lost: `throughput 0.81x`, `cpu 1.34x at throughput 1.00x`,
    /// `timeout` or `failed`.
    pub(crate) why: String,
}

impl Loss {
    /// `app@threads why`, as the overall lines name a point.
    pub(super) fn named(&self) -> String {
        format!("{}@{} {}", self.app.name(), self.threads, self.why)
    }
}

/// One run (or, for git-grep, series of runs) of a point.
#[derive(Clone, Debug)]
pub(super) struct Sample {
    pub(super) status: Status,
    pub(super) done: Done,
    pub(super) wall_s: f64,
    pub(super) cpu_s: f64,
    pub(super) ssc_bound: Option<u32>,
    pub(super) detail: Option<String>,
}

impl Sample {
    /// Work per second over the program's own time for it.
    pub(super) fn rate(&self) -> f64 {
        self.done.units / self.done.seconds.max(1e-9)
    }

    /// For tests: a run that ended well, doing `rate` units in one second
    /// of wall and CPU time.
    #[cfg(test)]
    pub(super) fn at_rate(rate: f64) -> Self {
        Sample {
            status: Status::Ok,
            done: Done {
                units: rate,
                seconds: 1.0,
            },
            wall_s: 1.0,
            cpu_s: 1.0,
            ssc_bound: None,
            detail: None,
        }
    }
}

/// The 95% interval of `column`'s median throughput over `glibc`'s, where
/// `glibc[r]` and `column[r]` ran in round `r` ([`stats::ratio_interval`]
/// over their rates); `None` with fewer than [`stats::MIN_ROUNDS`] rounds
/// or any run that did not end well.
pub(super) fn ratio_interval(glibc: &[Sample], column: &[Sample]) -> Option<(f64, f64)> {
    let rates = |runs: &[Sample]| -> Option<Vec<f64>> {
        runs.iter()
            .map(|s| (s.status == Status::Ok).then(|| s.rate()))
            .collect()
    };
    stats::ratio_interval(&rates(glibc)?, &rates(column)?)
}

/// Folds the repeats of one point into its medians.
pub(super) fn point(
    app: App,
    threads: u32,
    column: Column,
    work: u64,
    samples: &[Sample],
    glibc: Option<&AppPoint>,
) -> AppPoint {
    let ok: Vec<&Sample> = samples.iter().filter(|s| s.status == Status::Ok).collect();
    // A point is only as good as its worst run: one timeout or failure marks it.
    let status = samples
        .iter()
        .map(|s| s.status)
        .find(|&s| s != Status::Ok)
        .unwrap_or(Status::Ok);
    let rates = (status == Status::Ok)
        .then(|| Spread::of(ok.iter().map(|s| s.rate())))
        .flatten();
    let throughput = rates.map(|r| r.median);
    let throughput_range = rates.map(|r| (r.min, r.max));
    let wall_s = stats::median(samples.iter().map(|s| s.wall_s)).unwrap_or(f64::NAN);
    let timed_s = (status == Status::Ok)
        .then(|| stats::median(ok.iter().map(|s| s.done.seconds)))
        .flatten();
    let cpu_s = stats::median(samples.iter().map(|s| s.cpu_s)).unwrap_or(f64::NAN);
    let units = (status == Status::Ok)
        .then(|| stats::median(ok.iter().map(|s| s.done.units)))
        .flatten();
    let base = glibc.filter(|g| g.status == Status::Ok);
    AppPoint {
        app,
        threads,
        config: column.name(),
        lock: column.config().map(|c| c.lock.name()),
        status,
        throughput,
        throughput_range,
        inside_glibc_range: base.and_then(|g| {
            let (lo, hi) = g.throughput_range?;
            let t = throughput?;
            Some((lo..=hi).contains(&t))
        }),
        unit: app.unit(),
        wall_s,
        timed_s,
        cpu_s,
        units,
        ratio_vs_glibc: base
            .and_then(|g| Some(throughput? / g.throughput?.max(1e-12)))
            .or_else(|| (column == Column::Glibc && status == Status::Ok).then_some(1.0)),
        ratio_interval: None,
        control_ratio: None,
        cpu_ratio_vs_glibc: (status == Status::Ok)
            .then(|| base.map(|g| cpu_per_unit(cpu_s, units) / cpu_per_unit(g.cpu_s, g.units)))
            .flatten()
            .or_else(|| (column == Column::Glibc).then_some(1.0)),
        ratio_vs_own_one_thread: None,
        work,
        repeats: samples.len() as u32,
        confirmation: None,
        ssc_bound: samples.last().and_then(|s| s.ssc_bound),
        detail: samples.iter().find_map(|s| s.detail.clone()),
        runs: samples
            .iter()
            .map(|s| RunFigures {
                throughput: (s.status == Status::Ok).then(|| s.rate()),
                wall_s: s.wall_s,
                cpu_s: s.cpu_s,
            })
            .collect(),
    }
}

/// CPU seconds per unit of work (per run where no work was counted).
fn cpu_per_unit(cpu_s: f64, units: Option<f64>) -> f64 {
    cpu_s.max(1e-9) / units.filter(|&u| u > 0.0).unwrap_or(1.0)
}

/// Why a default point loses, if it does.
pub(super) fn loss_of(p: &AppPoint) -> Option<String> {
    match p.status {
        Status::Timeout => return Some("timeout".into()),
        Status::Failed => return Some("failed".into()),
        Status::Ok => {}
    }
    let r = p.ratio_vs_glibc?;
    let c = p.cpu_ratio_vs_glibc.unwrap_or(1.0);
    if r < MIN_RATIO {
        let mut noise = Vec::new();
        if p.inside_glibc_range == Some(true) {
            noise.push("inside glibc's own range over the repeats".to_string());
        }
        if let Some(c) = p.control_ratio.filter(|&c| within_noise(r, c)) {
            noise.push(format!("within the machine's noise: glibc-again {c:.2}x"));
        }
        if let Some(c) = &p.confirmation {
            noise.push(format!(
                "over {} rounds, {} added to settle it",
                p.repeats, c.added_rounds
            ));
        }
        if let Some((lo, hi)) = p.ratio_interval {
            noise.push(if hi < MIN_RATIO {
                format!("95% interval {lo:.2}-{hi:.2}x, {WHOLLY_BELOW}")
            } else {
                format!("95% interval {lo:.2}-{hi:.2}x")
            });
        }
        let noise = if noise.is_empty() {
            String::new()
        } else {
            format!(" ({})", noise.join("; "))
        };
        Some(format!("throughput {r:.2}x{noise}"))
    } else if r <= EQUAL_BAND && c > MAX_CPU_RATIO {
        Some(format!("cpu {c:.2}x at throughput {r:.2}x"))
    } else {
        None
    }
}

/// The glibc-again points whose throughput reads under [`MIN_RATIO`]x
/// glibc's: glibc against itself, judged by the default's bar. How often
/// the machine's noise alone fails the bar, beside the default's losses.
pub(super) fn control_below_bar(points: &[AppPoint]) -> Vec<Loss> {
    points
        .iter()
        .filter(|p| p.config == Column::GlibcAgain.name() && p.status == Status::Ok)
        .filter_map(|p| {
            let r = p.ratio_vs_glibc.filter(|&r| r < MIN_RATIO)?;
            Some(Loss {
                app: p.app,
                threads: p.threads,
                why: format!("glibc-again {r:.2}x"),
            })
        })
        .collect()
}

/// The line under the overall verdict for [`control_below_bar`]'s `below`
/// out of `measured` glibc-again points.
pub(super) fn control_line(below: &[Loss], measured: usize) -> String {
    let named: Vec<String> = below.iter().map(Loss::named).collect();
    let list = if named.is_empty() {
        String::new()
    } else {
        format!(": {}", named.join("; "))
    };
    format!(
        "the machine's noise: glibc against itself (glibc-again) reads under {MIN_RATIO}x at {} of {measured} points{list}",
        below.len()
    )
}

/// How [`loss_of`] marks a loss whose 95% interval lies wholly below
/// [`MIN_RATIO`]: one the repeats' spread cannot explain.
const WHOLLY_BELOW: &str = "wholly below the bar";

/// Fills each corral point's `control_ratio` from the glibc-again point of
/// its program and thread count, where one was measured.
pub(super) fn attach_control(points: &mut [AppPoint]) {
    let controls: Vec<(App, u32, f64)> = points
        .iter()
        .filter(|p| p.config == Column::GlibcAgain.name())
        .filter_map(|p| Some((p.app, p.threads, p.ratio_vs_glibc?)))
        .collect();
    for p in points.iter_mut().filter(|p| p.lock.is_some()) {
        p.control_ratio = controls
            .iter()
            .find(|(app, n, _)| *app == p.app && *n == p.threads)
            .map(|c| c.2);
    }
}

/// `12.3M`, `456k`, `7.89`: three significant digits.
pub(super) fn short(x: f64) -> String {
    let (v, suffix) = if x >= 1e9 {
        (x / 1e9, "G")
    } else if x >= 1e6 {
        (x / 1e6, "M")
    } else if x >= 1e3 {
        (x / 1e3, "k")
    } else {
        (x, "")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$}{suffix}")
}

/// A cell: `VALUE RATIOx`, or the status where there is no value.
fn cell(
    p: Option<&AppPoint>,
    value: impl Fn(&AppPoint) -> Option<f64>,
    ratio: impl Fn(&AppPoint) -> Option<f64>,
    glibc: bool,
) -> String {
    let Some(p) = p else {
        return "-".into();
    };
    match (p.status, value(p)) {
        (Status::Ok, Some(v)) if glibc => short(v),
        (Status::Ok, Some(v)) => match ratio(p) {
            Some(r) => format!("{} {r:.2}x", short(v)),
            None => short(v),
        },
        (Status::Timeout, _) => "timeout".into(),
        _ => "failed".into(),
    }
}

/// Width of a table column.
const CELL: usize = 13;

/// Prints one program's two tables and its verdict line.
pub(super) fn print_app(app: App, points: &[AppPoint], threads: &[u32], columns: &[Column]) {
    println!();
    println!("== {}: {}", app.name(), app.template());
    let find = |n: u32, c: Column| {
        points
            .iter()
            .find(|p| p.app == app && p.threads == n && p.config == c.name())
    };
    let header = || {
        let mut h = format!("{:>7}", "threads");
        for c in columns {
            h.push_str(&format!(" {:>CELL$}", c.name()));
        }
        println!("{h}");
    };
    println!("throughput, {} (ratio to glibc)", app.unit());
    header();
    for &n in threads {
        let mut row = format!("{n:>7}");
        for &c in columns {
            let s = cell(
                find(n, c),
                |p| p.throughput,
                |p| p.ratio_vs_glibc,
                c == Column::Glibc,
            );
            row.push_str(&format!(" {s:>CELL$}"));
        }
        println!("{row}");
    }
    if app.seconds_of_work(1.0).is_some() {
        println!("CPU seconds, user+sys, in runs of the same length (ratio to glibc per unit of work done)");
    } else {
        println!("CPU seconds, user+sys, same work in every column (ratio to glibc)");
    }
    header();
    for &n in threads {
        let mut row = format!("{n:>7}");
        for &c in columns {
            let s = match find(n, c) {
                Some(p) if p.status == Status::Ok && c == Column::Glibc => {
                    format!("{:.3}", p.cpu_s)
                }
                Some(p) if p.status == Status::Ok => match p.cpu_ratio_vs_glibc {
                    Some(r) => format!("{:.3} {r:.2}x", p.cpu_s),
                    None => format!("{:.3}", p.cpu_s),
                },
                Some(p) => cell(Some(p), |_| None, |_| None, false),
                None => "-".into(),
            };
            row.push_str(&format!(" {s:>CELL$}"));
        }
        println!("{row}");
    }
    let losses: Vec<String> = points
        .iter()
        .filter(|p| p.app == app && p.config == Column::Default.name())
        .filter_map(|p| loss_of(p).map(|why| format!("{} threads {why}", p.threads)))
        .collect();
    let measured = points
        .iter()
        .filter(|p| p.app == app && p.config == Column::Default.name())
        .count();
    let confirmed: Vec<String> = points
        .iter()
        .filter(|p| p.app == app && p.config == Column::Default.name())
        .filter_map(|p| {
            let c = p.confirmation.as_ref()?;
            Some(describe(p.threads, c, p.ratio_vs_glibc, p.ratio_interval))
        })
        .collect();
    if !confirmed.is_empty() {
        println!(
            "more rounds where the first left the default's verdict open (--confirm-rounds): {}",
            confirmed.join("; ")
        );
    }
    println!("{}", verdict(&losses, measured));
    if let Some(line) = noise(app, points) {
        println!("{line}");
    }
}

/// The default lock's column runs the default's very configuration: how far the
/// two part is the run-to-run noise the other ratios stand in.
fn noise(app: App, points: &[AppPoint]) -> Option<String> {
    let of = |n: u32, config: &str| {
        points
            .iter()
            .find(|p| p.app == app && p.threads == n && p.config == config)
            .and_then(|p| p.throughput)
    };
    let twin = Column::Lock(RuntimeConfig::default().lock).name();
    let (threads, spread) = points
        .iter()
        .filter(|p| p.app == app && p.config == Column::Default.name())
        .filter_map(|p| {
            let (a, b) = (of(p.threads, "default")?, of(p.threads, twin)?);
            Some((p.threads, a.max(b) / a.min(b).max(1e-12)))
        })
        .max_by(|x, y| x.1.total_cmp(&y.1))?;
    Some(format!(
        "noise: `{twin}` is the default's own configuration measured again; the two differ by up to {spread:.2}x (at {threads} threads)"
    ))
}

/// `verdict: ...` for `losses` out of `measured` default points.
pub(super) fn verdict(losses: &[String], measured: usize) -> String {
    if measured == 0 {
        "verdict: corral's default was not measured (--locks has no `default`)".into()
    } else if losses.is_empty() {
        format!(
            "verdict: corral's default loses at none of {measured} points (throughput >= {MIN_RATIO}x glibc; CPU <= {MAX_CPU_RATIO}x where throughput is within {MIN_RATIO}-{EQUAL_BAND}x)"
        )
    } else {
        let noisy = losses
            .iter()
            .filter(|l| l.contains("within the machine's noise"))
            .count();
        let clear = losses.iter().filter(|l| l.contains(WHOLLY_BELOW)).count();
        let with_interval = losses.iter().filter(|l| l.contains("95% interval")).count();
        let mut notes = Vec::new();
        if noisy > 0 {
            notes.push(format!("{noisy} of them within the machine's noise"));
        }
        if with_interval > 0 {
            notes.push(format!(
                "{clear} of them with a 95% interval wholly below {MIN_RATIO}x"
            ));
        }
        let of_them = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join("; "))
        };
        format!(
            "verdict: corral's default LOSES at {} of {measured} points{of_them}: {}",
            losses.len(),
            losses.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point that did glibc's 100 units at `thr` units a second.
    fn p(config: Column, status: Status, thr: f64, cpu: f64) -> AppPoint {
        let s = Sample {
            status,
            done: Done {
                units: 100.0,
                seconds: 100.0 / thr.max(1e-9),
            },
            wall_s: 1.0,
            cpu_s: cpu,
            ssc_bound: None,
            detail: None,
        };
        let glibc = point(
            App::Pigz,
            4,
            Column::Glibc,
            1,
            std::slice::from_ref(&Sample {
                status: Status::Ok,
                done: Done {
                    units: 100.0,
                    seconds: 1.0,
                },
                ..s.clone()
            }),
            None,
        );
        let glibc = AppPoint {
            cpu_s: 1.0,
            ..glibc
        };
        point(App::Pigz, 4, config, 1, &[s], Some(&glibc))
    }

    #[test]
    fn glibc_against_itself_is_judged_by_the_same_bar() {
        let points = [
            p(Column::GlibcAgain, Status::Ok, 93.0, 1.0),
            p(Column::GlibcAgain, Status::Ok, 95.0, 1.0),
            p(Column::GlibcAgain, Status::Timeout, 0.0, 1.0),
            // The default's loss is the verdict's, not the noise line's.
            p(Column::Default, Status::Ok, 90.0, 1.0),
        ];
        let below = control_below_bar(&points);
        assert_eq!(below.len(), 1);
        assert_eq!(below[0].why, "glibc-again 0.93x");
        assert_eq!(
            control_line(&below, 3),
            "the machine's noise: glibc against itself (glibc-again) reads under 0.95x at 1 of 3 points: pigz@4 glibc-again 0.93x"
        );
        assert!(control_line(&[], 3).ends_with("at 0 of 3 points"));
    }

    #[test]
    fn the_verdict_counts_slow_points_and_costly_equal_ones() {
        assert_eq!(
            loss_of(&p(Column::Default, Status::Ok, 94.0, 1.0)).unwrap(),
            "throughput 0.94x"
        );
        assert!(loss_of(&p(Column::Default, Status::Ok, 95.0, 1.2)).is_none());
        assert_eq!(
            loss_of(&p(Column::Default, Status::Ok, 100.0, 1.3)).unwrap(),
            "cpu 1.30x at throughput 1.00x"
        );
        // Faster at a higher CPU cost is a trade, not a loss.
        assert!(loss_of(&p(Column::Default, Status::Ok, 300.0, 2.0)).is_none());
        assert_eq!(
            loss_of(&p(Column::Default, Status::Timeout, 0.0, 9.0)).unwrap(),
            "timeout"
        );
        // glibc's repeats at 80 and 100: a median of 90 is a loss inside
        // glibc's own noise, and the verdict says so.
        let run = Sample::at_rate;
        let glibc = point(
            App::Pigz,
            4,
            Column::Glibc,
            1,
            &[run(80.0), run(100.0)],
            None,
        );
        assert_eq!(glibc.throughput_range, Some((80.0, 100.0)));
        let noisy = point(App::Pigz, 4, Column::Default, 1, &[run(85.0)], Some(&glibc));
        assert_eq!(
            loss_of(&noisy).unwrap(),
            "throughput 0.94x (inside glibc's own range over the repeats)"
        );
        let slow = point(App::Pigz, 4, Column::Default, 1, &[run(70.0)], Some(&glibc));
        assert_eq!(loss_of(&slow).unwrap(), "throughput 0.78x");
        let failed = p(Column::Default, Status::Failed, 0.0, 1.0);
        assert_eq!(failed.throughput, None);
        assert_eq!(failed.ratio_vs_glibc, None);
    }

    #[test]
    fn a_loss_no_larger_than_glibc_against_itself_is_marked_noise() {
        let mut points = vec![
            p(Column::GlibcAgain, Status::Ok, 88.0, 1.0),
            p(Column::Default, Status::Ok, 90.0, 1.0),
        ];
        // A corral column at another thread count gets no control.
        let mut other = p(Column::Default, Status::Ok, 90.0, 1.0);
        other.threads = 8;
        points.push(other);
        attach_control(&mut points);
        assert_eq!(points[0].control_ratio, None);
        assert!((points[1].control_ratio.unwrap() - 0.88).abs() < 1e-9);
        assert_eq!(points[2].control_ratio, None);
        assert_eq!(
            loss_of(&points[1]).unwrap(),
            "throughput 0.90x (within the machine's noise: glibc-again 0.88x)"
        );
        assert_eq!(loss_of(&points[2]).unwrap(), "throughput 0.90x");
        // glibc read itself at 0.97x: a 0.90x default is a loss beyond it.
        let mut quiet = p(Column::Default, Status::Ok, 90.0, 1.0);
        quiet.control_ratio = Some(0.97);
        assert_eq!(loss_of(&quiet).unwrap(), "throughput 0.90x");
        // Noise read the other way (glibc-again faster) counts the same.
        assert!(within_noise(0.90, 1.12) && !within_noise(0.90, 1.05));
        let v = verdict(
            &[loss_of(&points[1]).unwrap(), loss_of(&points[2]).unwrap()],
            3,
        );
        assert!(
            v.starts_with("verdict: corral's default LOSES at 2 of 3 points (1 of them within the machine's noise): "),
            "{v}"
        );
    }

    #[test]
    fn a_loss_shows_its_interval_and_the_verdict_counts_those_wholly_below() {
        let mut noisy = p(Column::Default, Status::Ok, 93.0, 1.0);
        noisy.ratio_interval = Some((0.85, 1.02));
        let mut clear = p(Column::Default, Status::Ok, 88.0, 1.0);
        clear.ratio_interval = Some((0.86, 0.90));
        let losses = [loss_of(&noisy).unwrap(), loss_of(&clear).unwrap()];
        assert_eq!(losses[0], "throughput 0.93x (95% interval 0.85-1.02x)");
        assert_eq!(
            losses[1],
            "throughput 0.88x (95% interval 0.86-0.90x, wholly below the bar)"
        );
        let v = verdict(&losses, 7);
        assert!(
            v.starts_with("verdict: corral's default LOSES at 2 of 7 points (1 of them with a 95% interval wholly below 0.95x): "),
            "{v}"
        );
    }

    #[test]
    fn cpu_is_compared_per_unit_of_work_done() {
        let run = |units: f64, cpu_s: f64| Sample {
            cpu_s,
            ..Sample::at_rate(units)
        };
        let glibc = point(
            App::StressNgMutex,
            4,
            Column::Glibc,
            1,
            &[run(100.0, 1.0)],
            None,
        );
        let default = |s: Sample| {
            point(
                App::StressNgMutex,
                4,
                Column::Default,
                1,
                &[s],
                Some(&glibc),
            )
        };
        // Twice the operations in the same second at twice the CPU: the
        // same cost per operation, and twice the throughput.
        let faster = default(run(200.0, 2.0));
        assert_eq!(faster.ratio_vs_glibc, Some(2.0));
        assert_eq!(faster.cpu_ratio_vs_glibc, Some(1.0));
        let costly = default(run(100.0, 1.5));
        assert_eq!(costly.cpu_ratio_vs_glibc, Some(1.5));
        assert_eq!(loss_of(&costly).unwrap(), "cpu 1.50x at throughput 1.00x");
    }

    #[test]
    fn a_point_keeps_every_run_in_round_order_with_none_for_a_failed_one() {
        let runs = [
            Sample::at_rate(100.0),
            Sample {
                status: Status::Failed,
                cpu_s: 0.5,
                ..Sample::at_rate(80.0)
            },
            Sample {
                wall_s: 2.5,
                ..Sample::at_rate(40.0)
            },
        ];
        let pt = point(App::Pigz, 4, Column::Glibc, 1, &runs, None);
        let figures = |throughput, wall_s, cpu_s| RunFigures {
            throughput,
            wall_s,
            cpu_s,
        };
        assert_eq!(
            pt.runs,
            [
                figures(Some(100.0), 1.0, 1.0),
                figures(None, 1.0, 0.5),
                figures(Some(40.0), 2.5, 1.0),
            ]
        );
        // In the JSON document, a failed run's throughput is null.
        let json = serde_json::to_value(&pt).unwrap();
        assert!(json["runs"][1]["throughput"].is_null());
        assert_eq!(json["runs"][2]["wall_s"], 2.5);
    }

    #[test]
    fn short_numbers() {
        assert_eq!(short(25_123_456.0), "25.1M");
        assert_eq!(short(456_789.0), "457k");
        assert_eq!(short(7.891), "7.89");
    }

    #[test]
    fn an_interval_needs_enough_rounds_that_all_ended_well() {
        let runs =
            |rates: &[f64]| -> Vec<Sample> { rates.iter().map(|&r| Sample::at_rate(r)).collect() };
        let glibc = runs(&[100.0, 101.0, 99.0, 100.0]);
        assert_eq!(
            ratio_interval(&glibc, &runs(&[90.0, 91.0, 89.0, 90.0])),
            None
        );
        let glibc = runs(&[100.0; 5]);
        let mut col = runs(&[90.0; 5]);
        assert!(ratio_interval(&glibc, &col).is_some());
        col[1].status = Status::Timeout;
        assert_eq!(ratio_interval(&glibc, &col), None);
    }
}
