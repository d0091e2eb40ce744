//! How fast the program's progress settled once contention began, read
//! from the monitor's progress series (one point per ~10 ms window).

use serde::Serialize;

/// One window of the progress series.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct ProgressPoint {
    /// Milliseconds since the monitor started, at the window's end.
    pub(crate) t_ms: f64,
    /// Lock attempts per millisecond, whole program.
    pub(crate) attempts_per_ms: f64,
    /// Contended acquisitions per millisecond.
    pub(crate) waits_per_ms: f64,
}

/// The settling figure: when contention began, the settled progress, and
/// how long after the start progress first reached 0.9x of it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Settle {
    /// End of the last window without contended acquisitions (ms).
    pub(crate) contention_ms: f64,
    /// Median progress over the second half of the contended run.
    pub(crate) settled_attempts_per_ms: f64,
    /// End of the first window at or above 0.9x that (ms).
    pub(crate) reached_ms: f64,
    /// `reached_ms - contention_ms`: at most one window late.
    pub(crate) settle_ms: f64,
}

/// The fewest contended windows a figure rests on.
const MIN_WINDOWS: usize = 4;

impl Settle {
    /// From `series` (in time order); `None` without contention or with
    /// fewer than [`MIN_WINDOWS`] windows of it. The last window is left
    /// out: the program's exit cuts it short.
    pub(crate) fn of(series: &[ProgressPoint]) -> Option<Settle> {
        let series = series.split_last().map_or(series, |(_, rest)| rest);
        let first = series.iter().position(|p| p.waits_per_ms > 0.0)?;
        let contention_ms = first.checked_sub(1).map_or(0.0, |i| series[i].t_ms);
        let contended = &series[first..];
        if contended.len() < MIN_WINDOWS {
            return None;
        }
        let mut tail: Vec<f64> = contended[contended.len() / 2..]
            .iter()
            .map(|p| p.attempts_per_ms)
            .collect();
        tail.sort_by(f64::total_cmp);
        let settled = tail[tail.len() / 2];
        let reached = contended
            .iter()
            .find(|p| p.attempts_per_ms >= 0.9 * settled)?;
        Some(Settle {
            contention_ms,
            settled_attempts_per_ms: settled,
            reached_ms: reached.t_ms,
            settle_ms: reached.t_ms - contention_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(rates: &[(f64, f64)]) -> Vec<ProgressPoint> {
        rates
            .iter()
            .enumerate()
            .map(|(i, &(attempts_per_ms, waits_per_ms))| ProgressPoint {
                t_ms: 10.0 * (i + 1) as f64,
                attempts_per_ms,
                waits_per_ms,
            })
            .collect()
    }

    #[test]
    fn settling_is_timed_from_the_first_contended_window() {
        // Uncontended until 20 ms; collapsed for 30 ms; then settled at
        // 1000/ms (the last, cut-short window is ignored).
        let s = series(&[
            (5000.0, 0.0),
            (5000.0, 0.0),
            (200.0, 50.0),
            (300.0, 50.0),
            (850.0, 10.0),
            (950.0, 5.0),
            (1000.0, 5.0),
            (1000.0, 5.0),
            (1000.0, 5.0),
            (10.0, 5.0),
        ]);
        let settle = Settle::of(&s).unwrap();
        assert_eq!(settle.contention_ms, 20.0);
        assert_eq!(settle.settled_attempts_per_ms, 1000.0);
        assert_eq!(settle.reached_ms, 60.0);
        assert_eq!(settle.settle_ms, 40.0);
    }

    #[test]
    fn no_contention_or_too_little_of_it_gives_no_figure() {
        assert_eq!(Settle::of(&series(&[(5.0, 0.0); 8])), None);
        assert_eq!(
            Settle::of(&series(&[(5.0, 0.0), (5.0, 1.0), (5.0, 1.0), (5.0, 1.0)])),
            None
        );
        assert_eq!(Settle::of(&[]), None);
    }
}
