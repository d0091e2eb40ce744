//! Faithful scheduling (FF): one priority and one time quantum for every
//! thread of an application, the quantum chosen from the application's
//! scaling factor (paper 4, Sec. III, eq. 1, Table I, Algorithm 1).

use serde::Serialize;

use crate::Nanos;

/// Absorbs rounding so that a move of exactly `range` (0.50 -> 0.60) is not a
/// change, as with the paper's two-decimal factors.
const RANGE_SLACK: f64 = 1e-9;

/// One row of the scaling-factor table: factors up to `max_factor`
/// (inclusive, at the table's 0.01 resolution) get `quantum_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TableRow {
    /// Upper end of the row's scaling-factor range.
    pub max_factor: f64,
    /// Time quantum for the row, in milliseconds.
    pub quantum_ms: u32,
}

/// Paper 4, Table I: (0.01-0.10) -> 250 ms ... (0.91-1.00) -> 10 ms, ranges
/// 0.10 wide. A factor of 0.00 (the paper's table starts at 0.01) takes the
/// first row.
pub const TABLE_I: [TableRow; 10] = [
    TableRow {
        max_factor: 0.10,
        quantum_ms: 250,
    },
    TableRow {
        max_factor: 0.20,
        quantum_ms: 200,
    },
    TableRow {
        max_factor: 0.30,
        quantum_ms: 150,
    },
    TableRow {
        max_factor: 0.40,
        quantum_ms: 120,
    },
    TableRow {
        max_factor: 0.50,
        quantum_ms: 100,
    },
    TableRow {
        max_factor: 0.60,
        quantum_ms: 80,
    },
    TableRow {
        max_factor: 0.70,
        quantum_ms: 50,
    },
    TableRow {
        max_factor: 0.80,
        quantum_ms: 30,
    },
    TableRow {
        max_factor: 0.90,
        quantum_ms: 20,
    },
    TableRow {
        max_factor: 1.00,
        quantum_ms: 10,
    },
];

/// FF parameters; defaults are paper 4's values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FfParams {
    /// Scaling-factor table (paper 4, Table I), rows in increasing order.
    pub table: [TableRow; 10],
    /// Hysteresis: the quantum changes only when the new factor is more than
    /// this far from the factor in force (paper 4, Alg. 1, `range = 0.10`).
    pub range: f64,
    /// How often the driver profiles the app and calls
    /// [`FaithfulController::observe`] (paper 4, Sec. III-D: one second).
    pub monitoring_period_ns: Nanos,
    /// Delay after the worker threads exist before the first profile
    /// (paper 4, Alg. 1: "wait for one more second").
    pub warmup_ns: Nanos,
    /// Table I quanta at or below this many ms leave the kernel's default
    /// slice ([`FfSlice::Default`]). Table I was measured against
    /// OpenSolaris TS, whose shortest quantum is 20 ms: its rows up to 20 ms
    /// give a thread no more than TS did, while EEVDF's default is ~1-3 ms,
    /// so applying them literally would lengthen the slices of exactly the
    /// programs the paper means to leave short. 0 applies every row as is.
    pub keep_default_up_to_ms: u32,
    /// Whether a waking thread of the program may preempt a running one.
    pub wakeup_preemption: WakeupPreemption,
}

/// Whether FF's threads may preempt one another when they wake.
///
/// Paper 4's FF moves a program out of OpenSolaris TS, where a thread that
/// slept comes back at a raised priority and preempts a thread of its own
/// program (often the lock holder: "backstabbing"), into a fixed-priority
/// class where none preempts another before its quantum ends. EEVDF keeps
/// no priorities, but a waking thread with lag to spare preempts the
/// running one all the same; the fair class without wake-up preemption
/// (Linux's SCHED_BATCH) is the fixed class's counterpart. On 16 cores at
/// 200% load, sysbench mutex's involuntary switches fell from 48,561 to
/// 116 a run and pigz's from 5,812 to 157, both at no loss of throughput
/// (1.04x, 1.09x); with wake-up preemption kept, FF's slice alone moved
/// them by +84% and -35%. Programs FF leaves at the default slice gain
/// too: on 2 cores, interleaved against a second plain arm, pigz -p 2 ran
/// at 1.04x (1.06x) with 1% of its involuntary switches and git grep
/// --threads=2 at 1.18x (1.07x) with 2%.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WakeupPreemption {
    /// No thread preempts another on waking (the paper's fixed class);
    /// each runs to its slice's end, a block or a yield.
    Off,
    /// The kernel's fair class as is: FF sets the nice value and the slice
    /// only.
    On,
}

/// The slice FF asks of the kernel for the quantum in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FfSlice {
    /// The kernel's own default slice (`sched_runtime` 0).
    Default,
    /// This many milliseconds.
    Ms {
        /// The quantum, ms.
        ms: u32,
    },
}

impl FfSlice {
    /// The `sched_runtime` to ask for: 0 for the kernel's default.
    #[inline]
    pub fn runtime_ns(self) -> Nanos {
        match self {
            FfSlice::Default => 0,
            FfSlice::Ms { ms } => Nanos::from(ms) * 1_000_000,
        }
    }
}

impl Default for FfParams {
    fn default() -> Self {
        Self {
            table: TABLE_I,
            range: 0.10,
            monitoring_period_ns: 1_000_000_000,
            warmup_ns: 1_000_000_000,
            keep_default_up_to_ms: 20,
            wakeup_preemption: WakeupPreemption::Off,
        }
    }
}

/// What FF applies to every thread of the application; a reported figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FfDecision {
    /// Quantum in force for all of the app's threads.
    pub quantum_ms: u32,
    /// Factor in force (the last one that caused a change), not necessarily
    /// the one just observed.
    pub scaling_factor: f64,
    /// Whether this observation changed the quantum in force (always true
    /// for the first observation).
    pub changed: bool,
    /// What is asked of the kernel for `quantum_ms`.
    pub slice: FfSlice,
}

/// Scaling factor = 1 - max(miss ratio, lock contention) (paper 4, eq. 1).
/// Inputs are fractions; they are clamped to [0, 1] and NaN counts as 0.
#[inline]
pub fn scaling_factor(miss_ratio: f64, lock_contention: f64) -> f64 {
    let unit = |x: f64| if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
    1.0 - unit(miss_ratio).max(unit(lock_contention))
}

/// An application's lock contention over one monitoring period: the share
/// of its threads' time spent waiting for user locks (paper 4, Sec. III-A;
/// prstat's LCK averaged over the threads), `wait_ns` summed over the
/// threads against `thread_ns`, the time those threads were alive in the
/// period. Clamped to [0, 1]; 0 with no thread time.
#[inline]
pub fn lock_contention(wait_ns: Nanos, thread_ns: Nanos) -> f64 {
    // The same share as paper 1's per-slice wait share, over a period.
    crate::detect::wait_share(wait_ns, thread_ns)
}

/// Last-level cache miss ratio, misses over references; `None` when
/// nothing was referenced (no ratio, which is not a ratio of 0).
#[inline]
pub fn miss_ratio(misses: u64, references: u64) -> Option<f64> {
    (references > 0).then(|| (misses as f64 / references as f64).min(1.0))
}

/// One monitoring period's profile of a whole application (paper 4,
/// Alg. 1's `Profile`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Profile {
    /// LLC miss ratio; `None` where it cannot be measured (no PMU): the
    /// factor is then 1 - lock contention, and the driver says so.
    pub miss_ratio: Option<f64>,
    /// Share of thread time spent waiting for locks ([`lock_contention`]).
    pub lock_contention: f64,
}

/// Table lookup at the table's 0.01 resolution, so that 0.10 and 0.11 land
/// in different rows exactly as printed.
#[inline]
pub fn quantum_for(table: &[TableRow; 10], factor: f64) -> u32 {
    let hundredths = (factor.clamp(0.0, 1.0) * 100.0).round();
    table
        .iter()
        .find(|row| hundredths <= (row.max_factor * 100.0).round())
        .unwrap_or(&table[table.len() - 1])
        .quantum_ms
}

/// Per-application FF state: the factor and quantum in force (paper 4,
/// Algorithm 1). Same priority for all threads is the driver's job; this
/// decides the one quantum they all share.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaithfulController {
    params: FfParams,
    in_force: Option<(f64, u32)>,
}

impl FaithfulController {
    /// A controller that has not observed anything yet.
    pub fn new(params: FfParams) -> Self {
        Self {
            params,
            in_force: None,
        }
    }

    /// The parameters in use.
    pub fn params(&self) -> &FfParams {
        &self.params
    }

    /// Quantum in force, if any observation has been made.
    pub fn quantum_ms(&self) -> Option<u32> {
        self.in_force.map(|(_, q)| q)
    }

    /// The slice asked of the kernel for Table I's `quantum_ms`.
    #[inline]
    pub fn slice_for(&self, quantum_ms: u32) -> FfSlice {
        if quantum_ms <= self.params.keep_default_up_to_ms {
            FfSlice::Default
        } else {
            FfSlice::Ms { ms: quantum_ms }
        }
    }

    /// [`FaithfulController::observe`] for a [`Profile`]: an unmeasured
    /// miss ratio leaves lock contention alone in eq. 1.
    #[inline]
    pub fn observe_profile(&mut self, p: &Profile) -> FfDecision {
        self.observe(p.miss_ratio.unwrap_or(0.0), p.lock_contention)
    }

    /// One monitoring period's profile of the whole application. The quantum
    /// changes only when the new factor leaves (factor in force +- range).
    #[inline]
    pub fn observe(&mut self, miss_ratio: f64, lock_contention: f64) -> FfDecision {
        let factor = scaling_factor(miss_ratio, lock_contention);
        let range = self.params.range + RANGE_SLACK;
        let kept = self
            .in_force
            .filter(|&(old, _)| (factor - old).abs() <= range);
        let changed = kept.is_none();
        let (scaling_factor, quantum_ms) =
            kept.unwrap_or_else(|| (factor, quantum_for(&self.params.table, factor)));
        self.in_force = Some((scaling_factor, quantum_ms));
        FfDecision {
            quantum_ms,
            scaling_factor,
            changed,
            slice: self.slice_for(quantum_ms),
        }
    }
}

impl Default for FaithfulController {
    fn default() -> Self {
        Self::new(FfParams::default())
    }
}
