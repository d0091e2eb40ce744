//! What `corral bench ff` reports: each arm's runs at each point, their
//! spread and verdict, the two-program runs and the simulator's rows.

use corral_policy::faithful::{FfParams, FfSlice, WakeupPreemption};
use serde::Serialize;

use super::verdict::Verdict;
use crate::stats::Spread;

/// Who schedules a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Arm {
    /// The kernel alone (EEVDF).
    Default,
    /// `corral run --policy ff` as configured.
    Ff,
    /// FF with every Table I row applied as is.
    FfLiteral,
    /// FF with the kernel's wake-up preemption kept.
    FfPreempt,
    /// The kernel alone again: its ratio to `Default` is the noise.
    DefaultAgain,
}

impl Arm {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Arm::Default => "default",
            Arm::Ff => "ff",
            Arm::FfLiteral => "ff-literal",
            Arm::FfPreempt => "ff-preempt",
            Arm::DefaultAgain => "default-again",
        }
    }

    /// Whether FF runs in this arm.
    pub(super) fn runs_ff(self) -> bool {
        !matches!(self, Arm::Default | Arm::DefaultAgain)
    }

    pub(super) fn params(self, ff: FfParams) -> Option<FfParams> {
        match self {
            Arm::Default | Arm::DefaultAgain => None,
            Arm::Ff => Some(ff),
            Arm::FfLiteral => Some(FfParams {
                keep_default_up_to_ms: 0,
                ..ff
            }),
            Arm::FfPreempt => Some(FfParams {
                wakeup_preemption: WakeupPreemption::On,
                ..ff
            }),
        }
    }
}

/// One program's run.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Run {
    /// Work per second in the program's own unit.
    pub(crate) throughput: f64,
    /// Voluntary context switches of the program and its children.
    pub(crate) voluntary: u64,
    /// Involuntary context switches.
    pub(crate) involuntary: u64,
    /// FF's Table I quantum in force in its last period with threads, ms;
    /// `None` by default.
    pub(crate) quantum_ms: Option<u32>,
    /// What FF asked of the kernel for it.
    pub(crate) slice: Option<FfSlice>,
    /// The largest slice read back from its threads then, ns.
    pub(crate) slice_ns: Option<u64>,
    /// That period's lock contention.
    pub(crate) lock_contention: Option<f64>,
    /// Threads FF left alone then (in a class the program chose).
    pub(crate) threads_not_fair: Option<u32>,
}

/// One arm at one point over the repeats.
#[derive(Debug, Serialize)]
pub(crate) struct ArmRuns {
    pub(crate) arm: Arm,
    pub(crate) throughput: Spread,
    pub(crate) involuntary: Spread,
    pub(crate) voluntary: Spread,
    /// Against the default arm (`None` for the default arm itself).
    pub(crate) verdict: Option<Verdict>,
    /// Every run, in the order it ran.
    pub(crate) runs: Vec<Run>,
}

/// One program at one load, every arm.
#[derive(Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) app: &'static str,
    pub(crate) unit: &'static str,
    pub(crate) load_pct: u32,
    pub(crate) threads: u32,
    /// Work per run, sized for --run-ms under the default scheduler.
    pub(crate) work: u64,
    pub(crate) arms: Vec<ArmRuns>,
}

/// Two programs at once (each at 100%: 200% in all), one arm.
#[derive(Debug, Serialize)]
pub(crate) struct PairArm {
    pub(crate) arm: Arm,
    /// Each program's throughput over the repeats.
    pub(crate) throughput: [Spread; 2],
    /// Involuntary switches of both together.
    pub(crate) involuntary: Spread,
    /// Each program's quantum in its last run.
    pub(crate) quantum_ms: [Option<u32>; 2],
}

/// Two programs at once (paper 4 Fig. 11).
#[derive(Debug, Serialize)]
pub(crate) struct Pair {
    pub(crate) apps: [&'static str; 2],
    pub(crate) arms: Vec<PairArm>,
}

/// The simulator's `faithful` against `default` at one shape.
#[derive(Debug, Serialize)]
pub(crate) struct SimRow {
    pub(crate) workload: &'static str,
    pub(crate) cores: u32,
    pub(crate) load_pct: u32,
    pub(crate) default_throughput: f64,
    pub(crate) ff_throughput: f64,
    pub(crate) default_switches: u64,
    pub(crate) ff_switches: u64,
}

/// The JSON document.
#[derive(Debug, Serialize)]
pub(crate) struct BenchFfReport {
    pub(crate) cores: u32,
    pub(crate) period_ms: u64,
    pub(crate) repeat: u32,
    pub(crate) seed: u64,
    pub(crate) keep_default_up_to_ms: u32,
    pub(crate) notes: Vec<String>,
    pub(crate) rows: Vec<Row>,
    pub(crate) pairs: Vec<Pair>,
    pub(crate) sim: Vec<SimRow>,
}

/// Each arm's runs summarised, with its verdict against the first arm
/// (default).
pub(super) fn summarise(arms: &[Arm], runs: Vec<Vec<Run>>) -> Vec<ArmRuns> {
    let mut out: Vec<ArmRuns> = Vec::new();
    for (&arm, runs) in arms.iter().zip(runs) {
        let throughput = Spread::of(runs.iter().map(|r| r.throughput)).unwrap_or(Spread::NAN);
        let involuntary =
            Spread::of(runs.iter().map(|r| r.involuntary as f64)).unwrap_or(Spread::NAN);
        let verdict = out
            .first()
            .map(|d| Verdict::of((&d.throughput, &d.involuntary), (&throughput, &involuntary)));
        out.push(ArmRuns {
            arm,
            throughput,
            involuntary,
            voluntary: Spread::of(runs.iter().map(|r| r.voluntary as f64)).unwrap_or(Spread::NAN),
            verdict,
            runs,
        });
    }
    // With a control, FF's verdicts are read against the machine's noise.
    let control = out
        .iter()
        .find(|a| a.arm == Arm::DefaultAgain)
        .and_then(|a| a.verdict);
    if let Some(control) = control {
        for a in out.iter_mut().filter(|a| a.arm.runs_ff()) {
            a.verdict = a.verdict.map(|v| v.against(&control));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(throughputs: &[f64]) -> Vec<Run> {
        throughputs
            .iter()
            .map(|&throughput| Run {
                throughput,
                voluntary: 0,
                involuntary: 1000,
                quantum_ms: None,
                slice: None,
                slice_ns: None,
                lock_contention: None,
                threads_not_fair: None,
            })
            .collect()
    }

    #[test]
    fn with_a_control_ffs_verdicts_are_read_against_it() {
        let arms = [Arm::Default, Arm::Ff, Arm::DefaultAgain];
        let out = summarise(
            &arms,
            vec![
                runs(&[100.0, 98.0, 102.0]),
                runs(&[85.0, 84.0, 86.0]),
                runs(&[84.0, 83.0, 85.0]),
            ],
        );
        let ff = out[1].verdict.unwrap();
        assert_eq!(ff.throughput, crate::stats::Change::Same);
        assert_eq!(ff.control_throughput_ratio, Some(0.84));
        // The control itself keeps its plain verdict.
        let again = out[2].verdict.unwrap();
        assert_eq!(again.throughput, crate::stats::Change::Lower);
        assert_eq!(again.control_throughput_ratio, None);
        // Without the control the same FF runs are a loss.
        let alone = summarise(
            &arms[..2],
            vec![runs(&[100.0, 98.0, 102.0]), runs(&[85.0, 84.0, 86.0])],
        );
        assert_eq!(alone[1].verdict.unwrap().word(), "LOSS");
    }

    #[test]
    fn each_arm_runs_what_its_name_says() {
        use corral_policy::faithful::WakeupPreemption;
        let ff = FfParams::default();
        assert_eq!(ff.wakeup_preemption, WakeupPreemption::Off);
        assert_eq!(Arm::Default.params(ff), None);
        assert_eq!(Arm::DefaultAgain.params(ff), None);
        assert!(!Arm::DefaultAgain.runs_ff() && Arm::FfPreempt.runs_ff());
        assert_eq!(Arm::Ff.params(ff), Some(ff));
        let literal = Arm::FfLiteral.params(ff).unwrap();
        assert_eq!(literal.keep_default_up_to_ms, 0);
        let preempt = Arm::FfPreempt.params(ff).unwrap();
        assert_eq!(preempt.wakeup_preemption, WakeupPreemption::On);
        let names = [
            Arm::Default,
            Arm::Ff,
            Arm::FfLiteral,
            Arm::FfPreempt,
            Arm::DefaultAgain,
        ]
        .map(Arm::name);
        assert_eq!(
            names,
            ["default", "ff", "ff-literal", "ff-preempt", "default-again"]
        );
    }
}
