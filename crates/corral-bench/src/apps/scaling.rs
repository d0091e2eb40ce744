//! Each column against its own rate at one thread. A lock that collapses
//! loses its single-thread rate as threads are added; where one lock is all
//! the work (`sysbench mutex`), issue 10 asks corral's default to keep at
//! least [`KEEPS_OWN_RATE`] of it at every thread count ("20M locks in
//! all"): [`same_work`] measures that, every count given the 1-thread
//! run's work, beside the table's points, whose work is sized on glibc.

use corral_launch::CliError;

use super::catalog::{App, Column};
use super::measure::Bench;
use super::report::{point, AppPoint, Sample};

/// The share of its own 1-thread rate a lock that does not collapse keeps,
/// where one lock is all the work.
pub(super) const KEEPS_OWN_RATE: f64 = 0.8;

/// Whether one lock is all the program's work, so that its rate at N
/// threads should stay near its rate at one.
fn one_lock_is_the_work(app: App) -> bool {
    app == App::SysbenchMutex
}

/// Whether [`same_work`] runs for `app`: one lock is its work, the default
/// is a column, and 1 thread and at least one more count are measured.
pub(super) fn wants_same_work(app: App, threads: &[u32], columns: &[Column]) -> bool {
    one_lock_is_the_work(app)
        && columns.contains(&Column::Default)
        && threads.contains(&1)
        && threads.iter().any(|&n| n > 1)
}

/// The default at every count of `threads`, each run given `work_one`, the
/// 1-thread point's work, `repeat` times round the counts (rotated as the
/// columns are). The table's points give each count the work glibc does in
/// --duration-ms: at 64 threads glibc's hand-offs make that a fifth of the
/// 1-thread work, and corral's run lasts 60-75 ms, of which the search's
/// first 15 ms run on every core at glibc's rate. Compared at the same
/// work, the rates say what a rate should: how much of one thread's speed N
/// threads keep. `sample` runs one; `seen` hears of each run.
pub(super) fn same_work(
    bench: &Bench,
    app: App,
    threads: &[u32],
    work_one: u64,
    repeat: u32,
    mut seen: impl FnMut(u32, &Sample),
) -> Result<Vec<AppPoint>, CliError> {
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); threads.len()];
    for r in 0..repeat {
        for i in super::rounds::round_order(r, threads.len()) {
            let s = bench.sample(app, Column::Default, threads[i], work_one)?;
            seen(threads[i], &s);
            samples[i].push(s);
        }
    }
    let mut points: Vec<AppPoint> = threads
        .iter()
        .zip(&samples)
        .map(|(&n, runs)| point(app, n, Column::Default, work_one, runs, None))
        .collect();
    attach_own_rate(&mut points);
    Ok(points)
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
/// a program whose work is one lock, the points below [`KEEPS_OWN_RATE`]:
/// first at the same work as the 1-thread run where [`same_work`] measured
/// it (`same`), then at each point's own work. `None` without a 1-thread
/// point of the default.
pub(super) fn line(app: App, points: &[AppPoint], same: &[AppPoint]) -> Option<String> {
    let own = |ps: &[AppPoint]| -> Vec<(u32, f64)> {
        ps.iter()
            .filter(|p| p.app == app && p.config == Column::Default.name() && p.threads > 1)
            .filter_map(|p| Some((p.threads, p.ratio_vs_own_one_thread?)))
            .collect()
    };
    let per_point = own(points);
    if per_point.is_empty() {
        return None;
    }
    let same_ratios = own(same);
    let mut text = String::new();
    if !same_ratios.is_empty() {
        let work = same.iter().find(|p| p.app == app).map_or(0, |p| p.work);
        text.push_str(&format!(
            "default against its own 1-thread rate, every count given the 1-thread run's work ({} {}, side by side): {}\n",
            super::report::short(work as f64),
            app.unit().split('/').next().unwrap_or(""),
            listed(app, &same_ratios)
        ));
        let shortest = points
            .iter()
            .filter(|p| p.app == app && p.config == Column::Default.name() && p.threads > 1)
            .filter_map(|p| Some((p.timed_s?, p.threads)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        text.push_str("  and at each point's work above");
        if let Some((secs, n)) = shortest {
            text.push_str(&format!(
                " (sized on glibc: the default's shortest run, {n} threads, lasted {:.0} ms, the search's settling in it)",
                secs * 1e3
            ));
        }
        text.push_str(": ");
    } else {
        text.push_str("default against its own 1-thread rate: ");
    }
    text.push_str(&listed(app, &per_point));
    Some(text)
}

/// `2 0.97x, 4 0.71x`, and where one lock is the work, the counts below
/// [`KEEPS_OWN_RATE`].
fn listed(app: App, ratios: &[(u32, f64)]) -> String {
    let listed: Vec<String> = ratios.iter().map(|(n, r)| format!("{n} {r:.2}x")).collect();
    let mut text = listed.join(", ");
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
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::report::{point, Sample};

    /// `app`'s point at `threads` in `column`, at `rate` units a second.
    fn at(app: App, threads: u32, column: Column, rate: f64) -> AppPoint {
        point(app, threads, column, 1, &[Sample::at_rate(rate)], None)
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
            line(App::SysbenchMutex, &points, &[]).unwrap(),
            "default against its own 1-thread rate: 4 0.90x, 8 0.70x (BELOW 0.8x at 8 threads)"
        );
        // No 1-thread point: nothing to say.
        assert_eq!(line(App::Pigz, &points, &[]), None);
    }

    #[test]
    fn the_same_work_series_comes_first_and_the_table_s_short_runs_stay_beside_it() {
        let mut points = vec![
            at(App::SysbenchMutex, 1, Column::Default, 100.0),
            at(App::SysbenchMutex, 64, Column::Default, 70.0),
        ];
        points[1].timed_s = Some(0.073);
        attach_own_rate(&mut points);
        let mut same = vec![
            at(App::SysbenchMutex, 1, Column::Default, 100.0),
            at(App::SysbenchMutex, 64, Column::Default, 95.0),
        ];
        for p in &mut same {
            p.work = 24_000_000;
        }
        attach_own_rate(&mut same);
        assert_eq!(
            line(App::SysbenchMutex, &points, &same).unwrap(),
            "default against its own 1-thread rate, every count given the 1-thread run's work (24.0M locks, side by side): 64 0.95x (keeps >= 0.8x everywhere)\n  and at each point's work above (sized on glibc: the default's shortest run, 64 threads, lasted 73 ms, the search's settling in it): 64 0.70x (BELOW 0.8x at 64 threads)"
        );
    }

    #[test]
    fn the_same_work_series_runs_only_where_one_lock_is_the_work_and_one_thread_is_measured() {
        let cols = [Column::Glibc, Column::Default];
        assert!(wants_same_work(App::SysbenchMutex, &[1, 64], &cols));
        assert!(!wants_same_work(App::Pigz, &[1, 64], &cols));
        assert!(!wants_same_work(App::SysbenchMutex, &[2, 64], &cols));
        assert!(!wants_same_work(App::SysbenchMutex, &[1], &cols));
        assert!(!wants_same_work(
            App::SysbenchMutex,
            &[1, 64],
            &[Column::Glibc]
        ));
    }

    #[test]
    fn programs_with_more_work_than_the_lock_are_not_held_to_it() {
        let mut points = vec![
            at(App::Pigz, 1, Column::Default, 100.0),
            at(App::Pigz, 2, Column::Default, 50.0),
        ];
        attach_own_rate(&mut points);
        assert_eq!(
            line(App::Pigz, &points, &[]).unwrap(),
            "default against its own 1-thread rate: 2 0.50x"
        );
    }
}
