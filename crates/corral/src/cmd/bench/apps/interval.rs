//! How far a point's ratio to glibc could move by chance: a bootstrap over
//! the repeats. Each repeat is a round that ran every column side by side,
//! so rounds are resampled whole (the pair of runs a round made stays a
//! pair), and the interval is the middle 95% of the resampled ratios of
//! medians.

use super::report::{median, Sample, Status};

/// Resamples drawn.
const DRAWS: usize = 2000;
/// Rounds below this say too little to resample: the median of 3 rounds'
/// resamples can only be one of their 3 rates, so a 3-round interval is
/// as narrow as those rates are close (3 rounds put git grep at 4 threads
/// at 0.91-0.95x, wholly below the bar; 21 rounds of a full table, at
/// 0.94-0.99x).
pub(super) const MIN_ROUNDS: usize = 5;

/// The 95% interval of `column`'s median throughput over `glibc`'s, where
/// `glibc[r]` and `column[r]` ran in round `r`; `None` with fewer than
/// [`MIN_ROUNDS`] rounds or any run that did not end well.
pub(super) fn ratio_interval(glibc: &[Sample], column: &[Sample]) -> Option<(f64, f64)> {
    let rates = |runs: &[Sample]| -> Option<Vec<f64>> {
        runs.iter()
            .map(|s| (s.status == Status::Ok).then(|| s.rate()))
            .collect()
    };
    let (g, c) = (rates(glibc)?, rates(column)?);
    let n = g.len().min(c.len());
    if n < MIN_ROUNDS {
        return None;
    }
    // A fixed seed: the same runs give the same interval.
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut ratios = Vec::with_capacity(DRAWS);
    for _ in 0..DRAWS {
        let rounds: Vec<usize> = (0..n).map(|_| rng.below(n)).collect();
        let of = |rates: &[f64]| median(rounds.iter().map(|&r| rates[r]).collect());
        ratios.push(of(&c) / of(&g).max(1e-12));
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

    fn runs(rates: &[f64]) -> Vec<Sample> {
        rates.iter().map(|&r| Sample::at_rate(r)).collect()
    }

    #[test]
    fn steady_runs_give_a_narrow_interval_and_noisy_ones_a_wide_one() {
        let glibc = runs(&[100.0, 101.0, 99.0, 100.0, 100.5, 99.5, 100.0]);
        let steady = runs(&[90.0, 91.0, 89.0, 90.0, 90.5, 89.5, 90.0]);
        let (lo, hi) = ratio_interval(&glibc, &steady).unwrap();
        assert!(lo > 0.88 && hi < 0.92, "{lo}-{hi}");
        let noisy = runs(&[70.0, 110.0, 85.0, 100.0, 95.0, 120.0, 80.0]);
        let (lo, hi) = ratio_interval(&glibc, &noisy).unwrap();
        assert!(lo < 0.85 && hi > 1.05, "{lo}-{hi}");
    }

    #[test]
    fn too_few_rounds_or_a_failed_run_give_none() {
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
