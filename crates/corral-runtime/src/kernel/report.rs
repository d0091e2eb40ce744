//! What a kernel-lock session reports: per thread, its slices' lock-wait
//! shares and classification; the SSC decisions; every affinity change with
//! the mask read back from the kernel; the hottest locks.

use corral_policy::ssc::{Decision, MigState};
use serde::Serialize;

/// One thread of a tracked process.
#[derive(Clone, Debug, Serialize)]
pub struct ThreadReport {
    /// Thread id.
    pub tid: u32,
    /// Its process id.
    pub tgid: u32,
    /// `/proc/<tid>/comm` when first seen.
    pub comm: String,
    /// Kernel slices observed.
    pub slices: u64,
    /// Slices as classified: short ones merged up to
    /// `MonitorConfig::min_slice_ns`. The fields below count these.
    pub windows: u64,
    /// Summed slice length, ns.
    pub slice_ns: u64,
    /// Summed kernel lock waiting, ns.
    pub wait_ns: u64,
    /// Lock waits that ended in its slices.
    pub waits: u64,
    /// `wait_ns / slice_ns`.
    pub wait_share: f64,
    /// Largest share of any one window.
    pub max_slice_share: f64,
    /// Windows whose share exceeded the threshold T.
    pub intensive_slices: u64,
    /// Ever classified lock intensive.
    pub lock_intensive: bool,
    /// Classification at the end.
    pub class: MigState,
    /// The first windows' shares, in order (capped; see `MonitorConfig`).
    pub slice_shares: Vec<f32>,
    /// The thread's affinity at the end, read back with sched_getaffinity
    /// (`None` once it has exited).
    pub affinity_at_end: Option<Vec<u32>>,
}

/// One affinity change the monitor made.
#[derive(Clone, Debug, Serialize)]
pub struct AffinityAction {
    /// Since the session began, ns.
    pub at_ns: u64,
    /// The thread moved.
    pub tid: u32,
    /// Where it went (`ssc`, `general`, or `unconfined`: every CPU).
    pub to: corral_policy::placement::Placement,
    /// The SSC bound it was placed under.
    pub bound: u32,
    /// The CPUs asked for.
    pub requested: Vec<u32>,
    /// sched_getaffinity right after (empty if the thread had exited).
    pub read_back: Vec<u32>,
}

/// A hot kernel lock (paper 2's hotness), waits by tracked tasks. The BPF
/// keeps no longest wait, waiter set nor caller per lock.
#[derive(Clone, Debug, Serialize)]
pub struct HotLock {
    /// Kernel address, hex.
    pub addr: String,
    /// `symbol+0xOFF` of the kernel data object it lies in, when it is a
    /// static lock named in `/proc/kallsyms` (see [`super::KernelSymbols`]).
    pub symbol: Option<String>,
    /// spinlock, rwlock:R, mutex, rwsem:W, ... (from the tracepoint's flags;
    /// see [`super::LockStat::kind`]).
    pub kind: &'static str,
    /// Summed waiting, sleeping included (unlike the slice shares).
    pub wait_ns: u64,
    /// Waits counted.
    pub count: u64,
}

/// The kernel-lock part of a `corral run` / `corral attach` report.
#[derive(Clone, Debug, Serialize)]
pub struct KernelReport {
    /// Lock kinds counted.
    pub kinds: Vec<&'static str>,
    /// Whether children were tracked too.
    pub follow_forks: bool,
    /// Threshold T of the lock-intensive classification.
    pub threshold: f64,
    /// The SSC order (cores in the order they join).
    pub order: Vec<u32>,
    /// Whether affinity was applied or only observed.
    pub applied: bool,
    /// Session length, ns.
    pub duration_ns: u64,
    /// Processes tracked at the end (children included).
    pub processes: Vec<u32>,
    /// Kernel slices received.
    pub slices: u64,
    /// Slices lost to a full ring.
    pub dropped_slices: u64,
    /// All threads' waiting over all their slice time.
    pub wait_share: f64,
    /// SSC bound at the end.
    pub final_bound: u32,
    /// SSC cores at the end.
    pub final_ssc: Vec<u32>,
    /// Every thread seen.
    pub threads: Vec<ThreadReport>,
    /// Every SSC decision but the holds.
    pub decisions: Vec<Decision>,
    /// Determinations that moved nothing (`DecisionKind::Hold`).
    pub holds: u64,
    /// Every affinity change made.
    pub affinity: Vec<AffinityAction>,
    /// Every lock tracked tasks waited on (at most the BPF map's 4,096),
    /// hottest first.
    pub hot_locks: Vec<HotLock>,
}
