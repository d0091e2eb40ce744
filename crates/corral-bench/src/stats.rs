//! The statistics every bench reads its runs with, in one place: the
//! median, the spread (median and range) of repeated runs, the bootstrap
//! interval of a ratio of medians, the verdict on two spreads, and whether
//! a ratio lies within the machine's own noise.
//!
//! Figures that are not finite (NaN, or infinite: a division by a zero
//! time, a run that produced no figure) are not values of the sample: every
//! function here leaves them out, and a sample with no finite value has no
//! median or spread (`None`).

use serde::Serialize;

/// A ratio of medians closer to 1 than this is noise whatever the ranges.
pub(crate) const MARGIN: f64 = 0.05;

/// Rounds below this say too little to resample: the median of 3 rounds'
/// resamples can only be one of their 3 rates, so a 3-round interval is
/// as narrow as those rates are close (3 rounds put git grep at 4 threads
/// at 0.91-0.95x, wholly below the bar; 21 rounds of a full table, at
/// 0.94-0.99x).
pub(crate) const MIN_ROUNDS: usize = 5;

/// The bar a column's ratio to its baseline is held to: a 95% interval
/// wholly below it loses, one wholly above its inverse wins (`bench apps`
/// and `bench space`).
pub(crate) const BAR: f64 = 0.95;

/// Where a ratio's 95% interval lies against [`BAR`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Wholly below [`BAR`].
    Below,
    /// Reaching across [`BAR`] or `1 / BAR`, or between them.
    Straddles,
    /// Wholly above `1 / BAR`.
    Above,
}

/// The verdict on the interval `lo..hi` of a ratio.
pub(crate) fn verdict(lo: f64, hi: f64) -> Verdict {
    if hi < BAR {
        Verdict::Below
    } else if lo > 1.0 / BAR {
        Verdict::Above
    } else {
        Verdict::Straddles
    }
}

/// Resamples drawn by [`ratio_interval`].
const DRAWS: usize = 2000;

/// The median of `xs`: the middle value, or the mean of the two middle
/// values for an even count. Values that are not finite are left out;
/// `None` when no finite value is left (an empty sample).
pub(crate) fn median(xs: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = xs.into_iter().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    middle(&v)
}

/// The median of `v`, sorted and finite; `None` when empty.
fn middle(v: &[f64]) -> Option<f64> {
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Median and range of one figure over the repeats.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Spread {
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

impl Spread {
    /// The spread of no value: NaN throughout (a figure no run produced).
    pub(crate) const NAN: Spread = Spread {
        median: f64::NAN,
        min: f64::NAN,
        max: f64::NAN,
    };

    /// Of a sample, leaving out values that are not finite; `None` when no
    /// finite value is left.
    pub(crate) fn of(xs: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = xs.into_iter().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        Some(Spread {
            median: middle(&v)?,
            min: v[0],
            max: v[v.len() - 1],
        })
    }

    /// Whether the two ranges share any value.
    pub(crate) fn overlaps(&self, other: &Spread) -> bool {
        self.min <= other.max && other.min <= self.max
    }
}

/// The verdict on a figure measured two ways: how the second compares with
/// the first (FF with the default scheduler, a column with its baseline).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Change {
    /// Higher by more than [`MARGIN`] of the median, ranges apart.
    Higher,
    /// Lower by more than [`MARGIN`] of the median, ranges apart.
    Lower,
    /// Within [`MARGIN`], or the ranges overlap: not told apart from noise.
    Same,
}

impl Change {
    /// `b` against `a`: a change only when the ranges part and the ratio
    /// of medians is more than [`MARGIN`] from 1; `Same` when `a`'s median
    /// is not positive.
    pub(crate) fn judge(a: &Spread, b: &Spread) -> Change {
        if a.median <= 0.0 {
            return Change::Same;
        }
        let r = b.median / a.median;
        if a.overlaps(b) {
            Change::Same
        } else if r > 1.0 + MARGIN {
            Change::Higher
        } else if r < 1.0 - MARGIN {
            Change::Lower
        } else {
            Change::Same
        }
    }
}

/// The median of `other` over the median of `base`; `None` where either
/// has no median or `base`'s is not positive.
pub(crate) fn ratio_of_medians(base: &[f64], other: &[f64]) -> Option<f64> {
    let b = median(base.iter().copied()).filter(|b| *b > 0.0)?;
    Some(median(other.iter().copied())? / b)
}

/// Whether a ratio `r` to a baseline is no farther from 1x than `control`,
/// the baseline measured against itself at the same point: the machine's
/// own noise there (bench apps' glibc-again, bench ff's default-again).
pub(crate) fn within_noise(r: f64, control: f64) -> bool {
    (r - 1.0).abs() <= (control - 1.0).abs()
}

/// How far the ratio of `other`'s median to `base`'s could move by chance:
/// the middle 95% of the ratios of medians over bootstrap resamples of the
/// rounds. `base[r]` and `other[r]` ran in round `r`, side by side, so
/// rounds are resampled whole (the pair of runs a round made stays a
/// pair). The draws come from a fixed seed: the same rates give the same
/// interval. `None` with fewer than [`MIN_ROUNDS`] rounds (pairs).
pub(crate) fn ratio_interval(base: &[f64], other: &[f64]) -> Option<(f64, f64)> {
    let n = base.len().min(other.len());
    if n < MIN_ROUNDS {
        return None;
    }
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut ratios = Vec::with_capacity(DRAWS);
    for _ in 0..DRAWS {
        let rounds: Vec<usize> = (0..n).map(|_| rng.below(n)).collect();
        let of = |rates: &[f64]| median(rounds.iter().map(|&r| rates[r])).unwrap_or(f64::NAN);
        ratios.push(of(other) / of(base).max(1e-12));
    }
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((DRAWS - 1) as f64 * q).round() as usize];
    Some((at(0.025), at(0.975)))
}

/// Marsaglia's xorshift64: enough to pick rounds.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_is_judged_against_the_bar_and_its_inverse() {
        assert_eq!(verdict(0.80, 0.94), Verdict::Below);
        assert_eq!(verdict(0.90, 1.00), Verdict::Straddles);
        assert_eq!(verdict(0.96, 1.05), Verdict::Straddles);
        assert_eq!(verdict(1.06, 1.30), Verdict::Above);
        // Made-up rates: a column steadily 20% slower than glibc loses,
        // one 20% faster wins.
        let glibc = [100.0, 102.0, 98.0, 101.0, 99.0, 100.0, 100.5];
        let slow: Vec<f64> = glibc.iter().map(|r| r * 0.8).collect();
        let fast: Vec<f64> = glibc.iter().rev().map(|r| r * 1.2).collect();
        let judge = |c: &[f64]| {
            let (lo, hi) = ratio_interval(&glibc, c).unwrap();
            verdict(lo, hi)
        };
        assert_eq!(judge(&slow), Verdict::Below);
        assert_eq!(judge(&fast), Verdict::Above);
        assert_eq!(judge(&glibc), Verdict::Straddles);
    }

    fn s(xs: &[f64]) -> Spread {
        Spread::of(xs.iter().copied()).unwrap()
    }

    #[test]
    fn median_of_odd_even_and_empty_samples() {
        assert_eq!(median([3.0, 1.0, 2.0]), Some(2.0));
        // Even: the mean of the two middle values, not either one.
        assert_eq!(median([4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median([1.0, 4.0]), Some(2.5));
        assert_eq!(median([7.0]), Some(7.0));
        assert_eq!(median([]), None);
        // Values that are not finite are left out.
        assert_eq!(median([f64::NAN, 3.0, 1.0, f64::INFINITY, 2.0]), Some(2.0));
        assert_eq!(median([f64::NAN]), None);
    }

    #[test]
    fn spreads_hold_the_median_and_range() {
        assert_eq!(Spread::of([]), None);
        assert_eq!(Spread::of([f64::NAN, f64::INFINITY]), None);
        let a = s(&[3.0, 1.0, 2.0]);
        assert_eq!((a.median, a.min, a.max), (2.0, 1.0, 3.0));
        assert_eq!(s(&[1.0, 4.0]).median, 2.5);
        assert_eq!(s(&[2.0, f64::NAN, 1.0]), s(&[1.0, 2.0]));
        assert!(s(&[1.0, 2.0]).overlaps(&s(&[2.0, 3.0])));
        assert!(!s(&[1.0, 2.0]).overlaps(&s(&[2.5, 3.0])));
    }

    #[test]
    fn verdicts_on_made_up_rates() {
        let base = s(&[100.0, 98.0, 102.0]);
        // A 10% drop whose range overlaps the base's is noise.
        assert_eq!(Change::judge(&base, &s(&[90.0, 85.0, 99.0])), Change::Same);
        // Apart and 10% down: lower; apart and 2x up: higher.
        assert_eq!(Change::judge(&base, &s(&[90.0, 89.0, 91.0])), Change::Lower);
        assert_eq!(
            Change::judge(&base, &s(&[200.0, 190.0, 210.0])),
            Change::Higher
        );
        // Apart but only 3% up: within the margin.
        assert_eq!(
            Change::judge(&base, &s(&[105.0, 104.0, 105.5])),
            Change::Same
        );
        // No positive base median: nothing to judge against.
        assert_eq!(Change::judge(&s(&[0.0]), &s(&[5.0])), Change::Same);
    }

    #[test]
    fn a_ratio_no_farther_from_one_than_the_control_is_noise() {
        assert!(within_noise(0.90, 1.12) && !within_noise(0.90, 1.05));
        assert!(within_noise(1.04, 0.95) && !within_noise(1.06, 0.95));
    }

    #[test]
    fn identical_ratios_give_a_point_interval() {
        let base = [100.0; 7];
        let other = [150.0; 7];
        assert_eq!(ratio_interval(&base, &other), Some((1.5, 1.5)));
        // Every round at the same ratio, at different rates: still a point.
        let base = [100.0, 200.0, 50.0, 80.0, 120.0];
        let other = base.map(|r| r * 0.9);
        let (lo, hi) = ratio_interval(&base, &other).unwrap();
        assert!(
            (lo - 0.9).abs() < 1e-9 && (hi - 0.9).abs() < 1e-9,
            "{lo}-{hi}"
        );
    }

    #[test]
    fn a_clearly_higher_set_lies_above_one() {
        let base = [100.0, 103.0, 97.0, 101.0, 99.0, 102.0, 98.0];
        let other = [130.0, 128.0, 135.0, 126.0, 132.0, 129.0, 131.0];
        let (lo, hi) = ratio_interval(&base, &other).unwrap();
        assert!(lo > 1.0 && lo <= hi, "{lo}-{hi}");
        // The seeded draws: the same rates give the same interval.
        assert_eq!(ratio_interval(&base, &other), Some((lo, hi)));
    }

    #[test]
    fn steady_runs_give_a_narrow_interval_and_noisy_ones_a_wide_one() {
        let base = [100.0, 101.0, 99.0, 100.0, 100.5, 99.5, 100.0];
        let steady = [90.0, 91.0, 89.0, 90.0, 90.5, 89.5, 90.0];
        let (lo, hi) = ratio_interval(&base, &steady).unwrap();
        assert!(lo > 0.88 && hi < 0.92, "{lo}-{hi}");
        let noisy = [70.0, 110.0, 85.0, 100.0, 95.0, 120.0, 80.0];
        let (lo, hi) = ratio_interval(&base, &noisy).unwrap();
        assert!(lo < 0.85 && hi > 1.05, "{lo}-{hi}");
    }

    #[test]
    fn too_few_rounds_give_no_interval() {
        assert_eq!(ratio_interval(&[100.0; 4], &[90.0; 4]), None);
        assert_eq!(ratio_interval(&[100.0; 5], &[90.0; 4]), None);
        assert!(ratio_interval(&[100.0; 5], &[90.0; 5]).is_some());
    }
}
