//! The one `#[repr(C)]` definition of what crosses between the preload
//! library (writer), the runtime's monitor, and the CLI (`corral top`,
//! reports): a small shared-memory stats file per process.
//!
//! Layout: one [`StatsHeader`] followed by `max_threads` [`ThreadRecord`]s,
//! each on its own cache line so that a thread updating its record never
//! invalidates a neighbour's. Readers in other processes map the file
//! read-only and take snapshots; every field is an atomic so a torn read of
//! one field is impossible (records as a whole may be mid-update, which a
//! monitoring view tolerates).

use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64};

/// `b"CORRAL\0\x01"` read as a little-endian u64.
pub const STATS_MAGIC: u64 = u64::from_le_bytes(*b"CORRAL\0\x01");
/// Bumped on any layout change; readers refuse other versions.
pub const STATS_VERSION: u32 = 1;
/// Default capacity of the thread table.
pub const DEFAULT_MAX_THREADS: u32 = 1024;

/// Where the stats file of process `pid` lives (see [`crate::files`]).
pub fn stats_path(pid: i32) -> std::path::PathBuf {
    crate::files::stats_path(pid)
}

/// The migration state of a thread, paper 1's `is_mig` (Alg. 2 and 3),
/// plus the migrate-back state of paper 2.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigState {
    /// Not (yet) lock-intensive: runs on the complement set.
    General = 0,
    /// Qualified at a slice end; moves at its next lock attempt.
    QualifyToMigrate = 1,
    /// Runs on the SSC.
    HaveMigrated = 2,
}

impl MigState {
    /// Decodes the value stored in [`ThreadRecord::mig_state`].
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::General),
            1 => Some(Self::QualifyToMigrate),
            2 => Some(Self::HaveMigrated),
            _ => None,
        }
    }
}

impl From<corral_policy::ssc::MigState> for MigState {
    fn from(s: corral_policy::ssc::MigState) -> Self {
        use corral_policy::ssc::MigState as Policy;
        match s {
            Policy::General => Self::General,
            Policy::QualifyToMigrate => Self::QualifyToMigrate,
            Policy::HaveMigrated => Self::HaveMigrated,
        }
    }
}

/// Process-wide header at offset 0 of the stats file.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct StatsHeader {
    /// [`STATS_MAGIC`]; written last by the creator so readers never see a
    /// half-initialised header as valid.
    pub magic: AtomicU64,
    /// [`STATS_VERSION`].
    pub version: AtomicU32,
    /// Capacity of the record table that follows.
    pub max_threads: AtomicU32,
    /// The observed process.
    pub pid: AtomicI32,
    /// Records in use (a prefix of the table).
    pub n_threads: AtomicU32,
    /// Current SSC size (`special_core_bound`); 0 = no SSC in force.
    pub ssc_bound: AtomicU32,
    /// Threads currently classified lock-intensive.
    pub n_lock_intensive: AtomicU32,
    /// Bumped by the monitor after every decision round.
    pub generation: AtomicU64,
    /// Last normalised throughput T(n), in millionths.
    pub throughput_ppm: AtomicU64,
    /// Nanoseconds per 2^32 TSC ticks, for readers converting raw counts.
    pub ns_per_2p32_ticks: AtomicU64,
}

/// One thread's live counters. Written by the thread itself (wait times)
/// and by the monitor (classification); read by anyone.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct ThreadRecord {
    /// Kernel thread id (gettid); 0 = free slot.
    pub tid: AtomicI32,
    /// [`MigState`] as u32.
    pub mig_state: AtomicU32,
    /// CPU the thread last ran on, or -1.
    pub last_cpu: AtomicI32,
    /// The SSC bound the thread was last placed under (Alg. 2's
    /// `curr->special_core_bound`).
    pub placed_bound: AtomicU32,
    /// Total nanoseconds spent waiting for locks.
    pub wait_ns: AtomicU64,
    /// Total thread CPU nanoseconds seen by the monitor.
    pub cpu_ns: AtomicU64,
    /// Acquisitions that had to wait.
    pub contended: AtomicU64,
    /// Slices (accounting windows) closed for this thread.
    pub slices: AtomicU64,
    /// Lock-wait share of the last closed slice, in millionths.
    pub last_share_ppm: AtomicU32,
    _pad: u32,
}

const _: () = assert!(core::mem::size_of::<StatsHeader>() == 64);
const _: () = assert!(core::mem::size_of::<ThreadRecord>() == 64);

/// Bytes needed for a stats file with room for `max_threads` records.
pub const fn stats_file_len(max_threads: u32) -> usize {
    core::mem::size_of::<StatsHeader>()
        + max_threads as usize * core::mem::size_of::<ThreadRecord>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_cache_line_sized_and_stable() {
        assert_eq!(core::mem::align_of::<ThreadRecord>(), 64);
        assert_eq!(stats_file_len(2), 64 * 3);
        assert_eq!(core::mem::offset_of!(ThreadRecord, wait_ns), 16);
        assert_eq!(core::mem::offset_of!(StatsHeader, generation), 32);
    }

    #[test]
    fn mig_state_round_trips() {
        for s in [
            MigState::General,
            MigState::QualifyToMigrate,
            MigState::HaveMigrated,
        ] {
            assert_eq!(MigState::from_u32(s as u32), Some(s));
        }
        assert_eq!(MigState::from_u32(7), None);
    }
}
