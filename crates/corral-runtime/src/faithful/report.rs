//! What FF reports: per program and period, the profile, the decision,
//! the slice read back and the context switches.

use super::apply::SliceSupport;
use corral_policy::faithful::FfSlice;
use serde::Serialize;

/// Whether the miss-ratio half of eq. 1 is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum MissSource {
    /// Per-thread LLC reference and miss counters.
    Measured,
    /// `perf_event_open` of the LLC counters failed (no PMU: a VM).
    Unavailable {
        /// Its errno.
        errno: i32,
    },
}

impl MissSource {
    /// The one line said when the miss ratio is not measured.
    pub fn line(self) -> Option<String> {
        match self {
            MissSource::Measured => None,
            MissSource::Unavailable { errno } => Some(format!(
                "corral: ff: no LLC miss ratio (perf_event_open cache-references: {}; no PMU \
                 here): the scaling factor is 1 - lock contention alone, and the report's \
                 miss_ratio is null, not 0",
                std::io::Error::from_raw_os_error(errno)
            )),
        }
    }
}

/// One monitoring period of one program: the report's time series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FfPeriod {
    /// End of the period, milliseconds since FF started.
    pub t_ms: f64,
    /// Threads of the program (all its processes) alive when FF looked.
    pub threads: u32,
    /// Share of thread time spent waiting for locks.
    pub lock_contention: f64,
    /// LLC miss ratio; `None` where not measured.
    pub miss_ratio: Option<f64>,
    /// 1 - max(miss ratio, lock contention) this period.
    pub observed_factor: f64,
    /// The factor in force (moves only beyond the hysteresis).
    pub scaling_factor: f64,
    /// Table I's quantum for the factor in force, ms.
    pub quantum_ms: u32,
    /// What was asked of the kernel for it (Table I's short rows keep the
    /// kernel's default slice).
    pub slice: FfSlice,
    /// Whether this period changed the quantum.
    pub changed: bool,
    /// Threads written this period (new, or not holding the quantum).
    pub applied: u32,
    /// The largest slice read back from the threads, ns (EEVDF caps
    /// requests at 100 ms); `None` with no thread readable.
    pub slice_ns: Option<u64>,
    /// Threads whose read-back slice is the one asked (as EEVDF clamps it).
    pub threads_at_slice: u32,
    /// Threads left alone because the program put them in another class
    /// (real-time, idle, or batch where FF keeps wake-up preemption): FF
    /// neither evens their priority nor sets their slice.
    pub threads_not_fair: u32,
    /// Voluntary context switches of the program's threads this period.
    pub voluntary: u64,
    /// Involuntary context switches this period.
    pub involuntary: u64,
}

/// FF's account of one program.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FfProgramReport {
    /// The program's root process.
    pub root: i32,
    /// The nice value every thread was given.
    pub nice: i32,
    /// How the kernel met the slice.
    pub slice: SliceSupport,
    /// Whether the miss ratio was measured.
    pub miss: MissSource,
    /// Every period, in order.
    pub periods: Vec<FfPeriod>,
}

/// FF's part of `corral run`'s report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FfReport {
    /// The monitoring period, ms.
    pub period_ms: u64,
    /// Table I's hysteresis (paper 4: 0.10).
    pub range: f64,
    /// One entry per program.
    pub programs: Vec<FfProgramReport>,
}
