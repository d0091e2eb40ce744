//! Rounds of runs: each round runs every column once at a point, in an
//! order rotated round by round, and `--confirm-rounds` adds rounds where
//! the first ones leave the default's verdict open.

use std::ops::Range;
use std::time::Instant;

use corral_launch::CliError;

use super::catalog::{App, Column};
use super::confirm::{self, Confirmation};
use super::report::{point, ratio_interval, short, Sample, Status, MIN_RATIO};

/// Runs one column once at the point being measured.
pub(super) type Sampler<'a> = dyn FnMut(Column) -> Result<Sample, CliError> + 'a;

/// The runs done and to do, for the progress lines.
pub(super) struct Progress {
    pub(super) done: usize,
    pub(super) total: usize,
    pub(super) started: Instant,
}

impl Progress {
    /// One progress line on stderr: the run just done and the time left.
    pub(super) fn seen(&mut self, app: App, threads: u32, column: &str, s: &Sample) {
        self.done += 1;
        let elapsed = self.started.elapsed().as_secs_f64();
        let left = elapsed / self.done as f64 * self.total.saturating_sub(self.done) as f64;
        let what = match s.status {
            Status::Ok => format!("{} {}", short(s.rate()), app.unit()),
            Status::Timeout => "timeout".into(),
            Status::Failed => format!("failed: {}", s.detail.clone().unwrap_or_default()),
        };
        eprintln!(
            "[{}/{}, ~{left:.0} s left] {} {threads} threads {column}: {what}, cpu {:.3} s",
            self.done,
            self.total,
            app.name(),
            s.cpu_s
        );
    }
}

/// A program at a thread count, with the work its runs are given.
#[derive(Clone, Copy)]
pub(super) struct Point {
    pub(super) app: App,
    pub(super) threads: u32,
    pub(super) work: u64,
}

/// Runs `rounds` of every column at `at`, appending each column's sample
/// to its own list. Rounds go round all columns, so drift hits every
/// column alike.
pub(super) fn run_rounds(
    sample: &mut Sampler,
    at: Point,
    columns: &[Column],
    rounds: Range<u32>,
    samples: &mut [Vec<Sample>],
    progress: &mut Progress,
) -> Result<(), CliError> {
    for r in rounds {
        for i in round_order(r, columns.len()) {
            let c = columns[i];
            let s = sample(c)?;
            progress.seen(at.app, at.threads, c.name(), &s);
            samples[i].push(s);
        }
    }
    Ok(())
}

/// `--confirm-rounds`: while the 95% interval of the default's (column
/// `d`) ratio to glibc (column 0) reaches both sides of the bar, more
/// rounds of every column, `repeat` at a time, up to `budget` added in
/// all. `None` where the first `repeat` rounds already decided.
pub(super) fn confirm_point(
    sample: &mut Sampler,
    at: Point,
    columns: &[Column],
    d: usize,
    (repeat, budget): (u32, u32),
    samples: &mut [Vec<Sample>],
    progress: &mut Progress,
) -> Result<Option<Confirmation>, CliError> {
    let first_interval = ratio_interval(&samples[0], &samples[d]);
    if !confirm::undecided(first_interval, MIN_RATIO) {
        return Ok(None);
    }
    let (app, n, work) = (at.app, at.threads, at.work);
    let glibc = point(app, n, Column::Glibc, work, &samples[0], None);
    let first = point(app, n, Column::Default, work, &samples[d], Some(&glibc));
    let mut c = Confirmation {
        first_rounds: repeat,
        first_ratio: first.ratio_vs_glibc,
        first_interval,
        added_rounds: 0,
    };
    loop {
        let batch = confirm::next_batch(repeat, c.added_rounds, budget);
        if batch == 0 {
            break;
        }
        progress.total += batch as usize * columns.len();
        let from = repeat + c.added_rounds;
        run_rounds(sample, at, columns, from..from + batch, samples, progress)?;
        c.added_rounds += batch;
        if !confirm::undecided(ratio_interval(&samples[0], &samples[d]), MIN_RATIO) {
            break;
        }
    }
    Ok(Some(c))
}

/// The columns' order in round `r` of `n` columns: rotated by one each
/// round, so that over `n` rounds each column runs once in each place.
/// A place can favour its column: the first runs right after the sizing
/// probes, the others each after a heavier or lighter column.
pub(super) fn round_order(r: u32, n: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |i| (i + r as usize) % n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet_progress() -> Progress {
        Progress {
            done: 0,
            total: 0,
            started: Instant::now(),
        }
    }

    const AT: Point = Point {
        app: App::Pigz,
        threads: 4,
        work: 1,
    };
    const COLUMNS: [Column; 2] = [Column::Glibc, Column::Default];

    /// Rounds whose default runs follow `default_rates`, round by round,
    /// against glibc at 100; returns the confirmation and the default's runs.
    fn confirm_with(
        default_rates: &[f64],
        repeat: u32,
        budget: u32,
    ) -> (Option<Confirmation>, usize) {
        let mut next = default_rates.iter().copied().cycle();
        let mut sample = |c: Column| {
            Ok(Sample::at_rate(if c == Column::Glibc {
                100.0
            } else {
                next.next().unwrap()
            }))
        };
        let mut samples = vec![Vec::new(), Vec::new()];
        let mut progress = quiet_progress();
        run_rounds(
            &mut sample,
            AT,
            &COLUMNS,
            0..repeat,
            &mut samples,
            &mut progress,
        )
        .unwrap();
        let c = confirm_point(
            &mut sample,
            AT,
            &COLUMNS,
            1,
            (repeat, budget),
            &mut samples,
            &mut progress,
        )
        .unwrap();
        assert_eq!(progress.done, samples[0].len() + samples[1].len());
        (c, samples[1].len())
    }

    #[test]
    fn a_point_clear_of_the_bar_gets_no_more_rounds() {
        // Always 0.90x: a clear loss is not run again.
        let (c, runs) = confirm_with(&[90.0], 5, 20);
        assert_eq!((c, runs), (None, 5));
        // Always 1.00x: nor is a clear pass.
        let (c, runs) = confirm_with(&[100.0], 5, 20);
        assert_eq!((c, runs), (None, 5));
    }

    #[test]
    fn an_open_verdict_gets_rounds_until_it_is_decided() {
        // 0.90x and 1.00x in turn, then only 1.00x: the first 5 rounds reach
        // both sides of 0.95x; the next 5 settle it above.
        let rates = [90.0, 100.0, 90.0, 100.0, 90.0];
        let mut all = rates.to_vec();
        all.extend(std::iter::repeat_n(100.0, 200));
        let (c, runs) = confirm_with(&all, 5, 20);
        let c = c.expect("an open verdict is confirmed");
        assert_eq!(c.first_rounds, 5);
        assert_eq!(c.first_ratio, Some(0.9));
        assert!(confirm::undecided(c.first_interval, MIN_RATIO), "{c:?}");
        assert!(c.added_rounds > 0 && c.added_rounds < 20, "{c:?}");
        assert_eq!(runs as u32, 5 + c.added_rounds);
    }

    #[test]
    fn a_verdict_that_stays_open_stops_at_the_budget() {
        // 0.90x and 1.00x in turn for ever: still open after every batch.
        let (c, runs) = confirm_with(&[90.0, 100.0], 5, 12);
        let c = c.unwrap();
        assert_eq!(
            c.added_rounds, 12,
            "5 + 5 + 2: the last batch is cut to the budget"
        );
        assert_eq!(runs, 17);
    }

    #[test]
    fn over_as_many_rounds_as_columns_each_runs_once_in_each_place() {
        let n = 3;
        let rounds: Vec<Vec<usize>> = (0..3).map(|r| round_order(r, n).collect()).collect();
        assert_eq!(rounds, [[0, 1, 2], [1, 2, 0], [2, 0, 1]]);
        for place in 0..n {
            let mut at_place: Vec<usize> = rounds.iter().map(|round| round[place]).collect();
            at_place.sort_unstable();
            assert_eq!(at_place, [0, 1, 2], "place {place}");
        }
        // A single round keeps the columns' own order.
        assert_eq!(round_order(0, 4).collect::<Vec<_>>(), [0, 1, 2, 3]);
    }
}
