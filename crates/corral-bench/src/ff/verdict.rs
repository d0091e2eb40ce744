//! `corral bench ff`'s verdict on each point: FF's throughput and
//! involuntary switches against the default scheduler's, each a
//! [`Change`] over the repeats' spreads, which a noisy machine cannot talk
//! into a gain or a loss unless the ranges part.

use serde::Serialize;

use crate::stats::{within_noise, Change, Spread};

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
            if within_noise(ratio, noise) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn s(xs: &[f64]) -> Spread {
        Spread::of(xs.iter().copied()).unwrap()
    }

    #[test]
    fn verdicts_of_both_figures() {
        let base = s(&[100.0, 98.0, 102.0]);
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
}
