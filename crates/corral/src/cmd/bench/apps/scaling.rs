//! Each column against its own rate at one thread. A lock that collapses
//! loses its single-thread rate as threads are added; where one lock is all
//! the work (`sysbench mutex`), issue 10 asks corral's default to keep at
//! least [`KEEPS_OWN_RATE`] of it at every thread count.

use super::catalog::{App, Column};
use super::report::AppPoint;

/// The share of its own 1-thread rate a lock that does not collapse keeps,
/// where one lock is all the work.
pub(super) const KEEPS_OWN_RATE: f64 = 0.8;

/// Whether one lock is all the program's work, so that its rate at N
/// threads should stay near its rate at one.
fn one_lock_is_the_work(app: App) -> bool {
    app == App::SysbenchMutex
}

/// Fills each point's `ratio_vs_own_one_thread` from the same program and
/// column at one thread, where that was measured.
pub(super) fn attach_own_rate(points: &mut [AppPoint]) {
    let ones: Vec<(App, &'static str, f64)> = points
        .iter()
        .filter(|p| p.threads == 1)
        .filter_map(|p| Some((p.app, p.config, p.throughput?)))
        .collect();
    for p in points.iter_mut() {
        p.ratio_vs_own_one_thread = ones
            .iter()
            .find(|(app, config, _)| *app == p.app && *config == p.config)
            .and_then(|&(_, _, one)| Some(p.throughput? / one.max(1e-12)));
    }
}

/// `default against its own 1-thread rate: 2 0.97x, 4 0.71x, ...`, and for
/// a program whose work is one lock, the points below [`KEEPS_OWN_RATE`].
/// `None` without a 1-thread point of the default.
pub(super) fn line(app: App, points: &[AppPoint]) -> Option<String> {
    let ratios: Vec<(u32, f64)> = points
        .iter()
        .filter(|p| p.app == app && p.config == Column::Default.name() && p.threads > 1)
        .filter_map(|p| Some((p.threads, p.ratio_vs_own_one_thread?)))
        .collect();
    if ratios.is_empty() {
        return None;
    }
    let listed: Vec<String> = ratios.iter().map(|(n, r)| format!("{n} {r:.2}x")).collect();
    let mut text = format!(
        "default against its own 1-thread rate: {}",
        listed.join(", ")
    );
    if one_lock_is_the_work(app) {
        let below: Vec<String> = ratios
            .iter()
            .filter(|(_, r)| *r < KEEPS_OWN_RATE)
            .map(|(n, _)| n.to_string())
            .collect();
        text.push_str(&if below.is_empty() {
            format!(" (keeps >= {KEEPS_OWN_RATE}x everywhere)")
        } else {
            format!(" (BELOW {KEEPS_OWN_RATE}x at {} threads)", below.join(", "))
        });
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::bench::apps::catalog::Done;
    use crate::cmd::bench::apps::report::{point, Sample, Status};

    /// `app`'s point at `threads` in `column`, at `rate` units a second.
    fn at(app: App, threads: u32, column: Column, rate: f64) -> AppPoint {
        let run = Sample {
            status: Status::Ok,
            done: Done {
                units: rate,
                seconds: 1.0,
            },
            wall_s: 1.0,
            cpu_s: 1.0,
            ssc_bound: None,
            detail: None,
        };
        point(app, threads, column, 1, &[run], None)
    }

    #[test]
    fn a_column_is_measured_against_its_own_single_thread() {
        let mut points = vec![
            at(App::SysbenchMutex, 1, Column::Glibc, 120.0),
            at(App::SysbenchMutex, 1, Column::Default, 100.0),
            at(App::SysbenchMutex, 4, Column::Glibc, 30.0),
            at(App::SysbenchMutex, 4, Column::Default, 90.0),
            at(App::SysbenchMutex, 8, Column::Default, 70.0),
            at(App::Pigz, 4, Column::Default, 300.0),
        ];
        attach_own_rate(&mut points);
        let own: Vec<Option<f64>> = points.iter().map(|p| p.ratio_vs_own_one_thread).collect();
        assert_eq!(
            own,
            [Some(1.0), Some(1.0), Some(0.25), Some(0.9), Some(0.7), None]
        );
        assert_eq!(
            line(App::SysbenchMutex, &points).unwrap(),
            "default against its own 1-thread rate: 4 0.90x, 8 0.70x (BELOW 0.8x at 8 threads)"
        );
        // No 1-thread point: nothing to say.
        assert_eq!(line(App::Pigz, &points), None);
    }

    #[test]
    fn programs_with_more_work_than_the_lock_are_not_held_to_it() {
        let mut points = vec![
            at(App::Pigz, 1, Column::Default, 100.0),
            at(App::Pigz, 2, Column::Default, 50.0),
        ];
        attach_own_rate(&mut points);
        assert_eq!(
            line(App::Pigz, &points).unwrap(),
            "default against its own 1-thread rate: 2 0.50x"
        );
    }
}
