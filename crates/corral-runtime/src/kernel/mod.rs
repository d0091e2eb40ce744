//! Kernel locks seen through BPF: paper 1's measurements (Algorithm 1's
//! per-task lock-waiting time, Algorithm 3's slice length) taken in the
//! kernel from the `lock:contention_begin`/`contention_end` and
//! `sched_switch` tracepoints, for unmodified programs on an unmodified
//! kernel, and the monitor that drives the SSC controller from them by CPU
//! affinity.
//!
//! - [`KernelLockSource`] loads the committed BPF object, tracks processes
//!   (and their children) and yields one [`SliceRecord`] per time slice plus
//!   per-lock hotness ([`LockStat`]), named by [`KernelSymbols`].
//! - [`preflight`] and [`Refusal`]: not root, no BTF, tracepoints missing or
//!   BPF refused, each as one line saying what still works.
//! - [`KernelMonitor`] turns slices into SSC decisions and affinity, read
//!   back with `sched_getaffinity`; [`KernelSession`] runs it on a thread.

mod kallsyms;
mod kinds;
mod monitor;
mod oncpu;
mod record;
mod refusal;
mod report;
mod session;
mod source;

pub use kallsyms::KernelSymbols;
pub use kinds::{LockKinds, UnknownLockKind};
pub use monitor::{KernelMonitor, MonitorConfig, ReportInputs};
pub use oncpu::{map_read_only, OnCpuRefusal, OnCpuTable, ONCPU_OBJECT, ONCPU_SOURCE_SHA256};
pub use record::{LockStat, SliceRecord, SLICE_RECORD_BYTES};
pub use refusal::{
    effective_caps, has_bpf_capabilities, preflight, ProbeEnv, Refusal, REQUIRED_TRACEPOINTS,
};
pub use report::{AffinityAction, HotLock, KernelReport, ThreadReport};
pub use session::{KernelLive, KernelSession};
pub use source::{KernelLockSource, SourceConfig, BPF_OBJECT, BPF_SOURCE_SHA256};

/// CLOCK_MONOTONIC nanoseconds: the clock `bpf_ktime_get_ns` reads, so
/// user-space times compare with the slice records'.
pub use corral_locks::sys::clock::monotonic_ns;

#[cfg(test)]
mod live_tests;
