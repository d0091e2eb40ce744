//! `corral bench ff`'s figures over repeated runs: medians and ranges, and
//! the verdict on each point, which a noisy machine cannot talk into a gain
//! or a loss unless the ranges part.

use serde::Serialize;

/// A ratio of medians closer to 1 than this is noise whatever the ranges.
const MARGIN: f64 = 0.05;

/// Median and range of one figure over the repeats.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Spread {
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

impl Spread {
    /// Of a sample; `None` when empty.
    pub(crate) fn of(xs: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
        })
    }

    /// Whether the two ranges share any value.
    fn overlaps(&self, other: &Spread) -> bool {
        self.min <= other.max && other.min <= self.max
    }
}

/// How a figure under FF compares with the default scheduler's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Change {
    /// Higher by more than 5% of the median, ranges apart.
    Higher,
    /// Lower by more than 5% of the median, ranges apart.
    Lower,
    /// Within 5%, or the ranges overlap: not told apart from noise.
    Same,
}

impl Change {
    /// `b` against `a` (FF against default).
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

/// One arm's verdict against the default scheduler at one point.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Verdict {
    /// Median throughput, this arm over default.
    pub(crate) throughput_ratio: f64,
    /// `Lower` is a loss.
    pub(crate) throughput: Change,
    /// Median involuntary switches, this arm over default.
    pub(crate) involuntary_ratio: f64,
    /// `Lower` is a cut.
    pub(crate) involuntary: Change,
    /// `default-again`'s throughput ratio at this point (--with-control):
    /// the machine's noise this verdict was read against.
    pub(crate) control_throughput_ratio: Option<f64>,
}

impl Verdict {
    /// The verdict from both arms' (throughput, involuntary) spreads.
    pub(crate) fn of(def: (&Spread, &Spread), arm: (&Spread, &Spread)) -> Verdict {
        let ratio = |a: &Spread, b: &Spread| {
            if a.median > 0.0 {
                b.median / a.median
            } else {
                f64::NAN
            }
        };
        Verdict {
            throughput_ratio: ratio(def.0, arm.0),
            throughput: Change::judge(def.0, arm.0),
            involuntary_ratio: ratio(def.1, arm.1),
            involuntary: Change::judge(def.1, arm.1),
            control_throughput_ratio: None,
        }
    }

    /// Read against `control`, the default scheduler's second arm at the
    /// same point: a change no farther from 1x than the control's own
    /// ratio is this machine's noise, not FF's doing.
    pub(crate) fn against(self, control: &Verdict) -> Verdict {
        let beyond = |change: Change, ratio: f64, noise: f64| {
            if crate::cmd::bench::within_noise(ratio, noise) {
                Change::Same
            } else {
                change
            }
        };
        Verdict {
            throughput: beyond(
                self.throughput,
                self.throughput_ratio,
                control.throughput_ratio,
            ),
            involuntary: beyond(
                self.involuntary,
                self.involuntary_ratio,
                control.involuntary_ratio,
            ),
            control_throughput_ratio: Some(control.throughput_ratio),
            ..self
        }
    }

    /// A word for the table.
    pub(crate) fn word(&self) -> &'static str {
        match (self.throughput, self.involuntary) {
            (Change::Lower, _) => "LOSS",
            (Change::Higher, Change::Lower) => "gain, icx cut",
            (Change::Higher, _) => "gain",
            (Change::Same, Change::Lower) => "same, icx cut",
            (Change::Same, Change::Higher) => "same, icx up",
            (Change::Same, Change::Same) => "same",
        }
    }
}

/// `items` in an order drawn from `seed` (Fisher-Yates): the arms of every
/// point interleaved, so that the machine's drift falls on all alike.
pub(crate) fn shuffled<T>(mut items: Vec<T>, seed: u64) -> Vec<T> {
    let mut rng = corral_sim::rng::Rng::seeded(seed);
    for i in (1..items.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(xs: &[f64]) -> Spread {
        Spread::of(xs).unwrap()
    }

    #[test]
    fn medians_ranges_and_verdicts() {
        assert_eq!(Spread::of(&[]), None);
        let a = s(&[3.0, 1.0, 2.0]);
        assert_eq!((a.median, a.min, a.max), (2.0, 1.0, 3.0));
        assert_eq!(s(&[1.0, 4.0]).median, 2.5);
        let base = s(&[100.0, 98.0, 102.0]);
        // A 10% drop whose range overlaps the default's is noise.
        assert_eq!(Change::judge(&base, &s(&[90.0, 85.0, 99.0])), Change::Same);
        // Apart and 10% down: a loss; apart but 3% up: still the same.
        assert_eq!(Change::judge(&base, &s(&[90.0, 89.0, 91.0])), Change::Lower);
        assert_eq!(
            Change::judge(&base, &s(&[105.0, 104.0, 105.5])),
            Change::Same
        );
        let icx = (s(&[1000.0, 900.0, 1100.0]), s(&[100.0, 90.0, 120.0]));
        let v = Verdict::of((&base, &icx.0), (&s(&[200.0, 190.0, 210.0]), &icx.1));
        assert_eq!(
            (v.throughput, v.involuntary),
            (Change::Higher, Change::Lower)
        );
        assert_eq!(v.word(), "gain, icx cut");
        assert!((v.throughput_ratio - 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_change_within_the_controls_own_distance_is_noise() {
        let base = s(&[100.0, 98.0, 102.0]);
        let icx = s(&[1000.0, 990.0, 1010.0]);
        // 15% down with ranges apart: a loss on its own.
        let ff = Verdict::of((&base, &icx), (&s(&[85.0, 84.0, 86.0]), &icx));
        assert_eq!(ff.throughput, Change::Lower);
        // The default again read 0.84x: the machine moved as far.
        let noisy = Verdict::of((&base, &icx), (&s(&[84.0, 83.0, 85.0]), &icx));
        let read = ff.against(&noisy);
        assert_eq!(read.throughput, Change::Same);
        assert_eq!(read.control_throughput_ratio, Some(0.84));
        assert_eq!(read.word(), "same");
        // The default again read 0.97x: FF's 0.85x stays a loss.
        let quiet = Verdict::of((&base, &icx), (&s(&[97.0, 96.0, 98.0]), &icx));
        assert_eq!(ff.against(&quiet).throughput, Change::Lower);
        assert_eq!(ff.against(&quiet).word(), "LOSS");
    }

    #[test]
    fn shuffles_reproducibly_and_keeps_every_item() {
        let v: Vec<u32> = (0..20).collect();
        let a = shuffled(v.clone(), 7);
        assert_eq!(a, shuffled(v.clone(), 7));
        assert_ne!(a, v);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, v);
    }
}
