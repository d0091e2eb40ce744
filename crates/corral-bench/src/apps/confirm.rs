//! `--confirm-rounds`: more rounds for the points whose verdict the first
//! rounds leave open. On a small shared machine glibc against itself reads
//! 0.88-1.12x at some point of most tables, so a table of 35 points shows
//! a few ratios under the bar by chance alone. A point whose 95% interval
//! reaches both sides of the bar gets more rounds, every column side by
//! side as before, until its interval lies on one side or the rounds are
//! spent; points already clear of the bar, above or below, are left as
//! they are. Which side the ratio first fell on plays no part, so a
//! chance loss is not re-drawn any more than a chance pass.

use serde::Serialize;

/// What the point read before its confirmation rounds, kept beside the
/// medians over every round.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Confirmation {
    /// Rounds before confirmation (--repeat).
    pub(crate) first_rounds: u32,
    /// The default's ratio to glibc over those rounds.
    pub(crate) first_ratio: Option<f64>,
    /// Its 95% interval over those rounds.
    pub(crate) first_interval: Option<(f64, f64)>,
    /// Rounds added.
    pub(crate) added_rounds: u32,
}

/// Whether `interval` (the 95% interval of the default's ratio to glibc)
/// reaches both sides of `bar`: the rounds so far cannot tell a loss from
/// a pass.
pub(super) fn undecided(interval: Option<(f64, f64)>, bar: f64) -> bool {
    matches!(interval, Some((lo, hi)) if lo < bar && hi >= bar)
}

/// Rounds in the next batch: `repeat` at a time (each batch runs every
/// column in every place once more when `repeat` is a multiple of the
/// columns), never past `budget` rounds added in all.
pub(super) fn next_batch(repeat: u32, added: u32, budget: u32) -> u32 {
    repeat.min(budget.saturating_sub(added))
}

/// One line for a confirmed point: its ratio before and after.
pub(super) fn describe(
    threads: u32,
    c: &Confirmation,
    ratio: Option<f64>,
    interval: Option<(f64, f64)>,
) -> String {
    let read = |r: Option<f64>, iv: Option<(f64, f64)>, rounds: u32| {
        let r = r.map_or("?".into(), |r| format!("{r:.2}x"));
        let iv = iv.map_or(String::new(), |(lo, hi)| {
            format!(" (95% interval {lo:.2}-{hi:.2}x)")
        });
        format!("{r}{iv} over {rounds} rounds")
    };
    format!(
        "{threads} threads {} -> {}",
        read(c.first_ratio, c.first_interval, c.first_rounds),
        read(ratio, interval, c.first_rounds + c.added_rounds)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_interval_reaching_both_sides_of_the_bar_is_undecided() {
        assert!(undecided(Some((0.90, 1.02)), 0.95));
        assert!(undecided(Some((0.94, 0.95)), 0.95));
        // Clear of the bar either way: no more rounds, whatever the median.
        assert!(!undecided(Some((0.95, 1.10)), 0.95));
        assert!(!undecided(Some((0.80, 0.94)), 0.95));
        // Too few rounds for an interval, or a failed run: nothing to decide on.
        assert!(!undecided(None, 0.95));
    }

    #[test]
    fn batches_are_repeat_rounds_and_stop_at_the_budget() {
        assert_eq!(next_batch(7, 0, 14), 7);
        assert_eq!(next_batch(7, 7, 14), 7);
        assert_eq!(next_batch(7, 14, 14), 0);
        assert_eq!(next_batch(7, 7, 10), 3);
        assert_eq!(next_batch(5, 0, 0), 0);
    }

    #[test]
    fn the_line_gives_the_ratio_before_and_after() {
        let c = Confirmation {
            first_rounds: 7,
            first_ratio: Some(0.93),
            first_interval: Some((0.88, 0.97)),
            added_rounds: 14,
        };
        assert_eq!(
            describe(4, &c, Some(0.97), Some((0.95, 0.99))),
            "4 threads 0.93x (95% interval 0.88-0.97x) over 7 rounds -> 0.97x (95% interval 0.95-0.99x) over 21 rounds"
        );
    }
}
