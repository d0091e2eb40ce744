//! The one `#[repr(C)]` definition of what crosses between the preload
//! library (writer), the runtime's monitor, and the CLI (`corral top`,
//! reports): a shared-memory stats region per process.
//!
//! Layout: one [`StatsHeader`] followed by `max_threads` [`ThreadRecord`]s,
//! each on its own cache line so that a thread updating its record never
//! invalidates a neighbour's, then [`LOCK_SLOTS`] [`LockRecord`]s: the
//! per-lock contention profile ([`crate::lockprof`]), then the
//! [`ChannelHeader`] and its areas ([`crate::channel`]): what the library
//! says, the decision log and the memory map, carried to `corral run`
//! without a descriptor or a file of the program's. Readers map the region
//! and take snapshots; every field is an atomic so a torn read of
//! one field is impossible (records as a whole may be mid-update, which a
//! monitoring view tolerates).

use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64};

/// `b"CORRAL\0\x01"` read as a little-endian u64.
pub const STATS_MAGIC: u64 = u64::from_le_bytes(*b"CORRAL\0\x01");
/// Bumped on any layout change; readers refuse other versions.
pub const STATS_VERSION: u32 = 4;
/// Default capacity of the thread table.
pub const DEFAULT_MAX_THREADS: u32 = 1024;

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

/// Process-wide header at offset 0 of the stats region.
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
    /// 1 while the lock table is kept ([`crate::lockprof`] attached), else 0.
    pub lock_profile: AtomicU32,
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
    /// Lock-wait share of the last closed slice, in millionths: over the
    /// time its thread ran or waited for a lock, as qualification measures
    /// it (`corral_policy::detect::active_span`).
    pub last_share_ppm: AtomicU32,
    /// Calls to `sched_yield` and `pthread_yield` the monitor saw, stopping
    /// at `u32::MAX` (what "kept off the SSC: they yield as often as they
    /// lock" is judged on).
    pub yields: AtomicU32,
}

const _: () = assert!(core::mem::size_of::<StatsHeader>() == 64);
const _: () = assert!(core::mem::size_of::<ThreadRecord>() == 64);

/// Slots of the lock table; the last one is [`LOCK_OVERFLOW`]'s.
pub const LOCK_SLOTS: usize = 1024;
/// Callers kept per lock; samples of any other caller count apart.
pub const LOCK_CALLERS: usize = 4;
/// The address of the last slot: every lock that found no slot of its own.
pub const LOCK_OVERFLOW: u64 = u64::MAX;

/// Bits of [`LockRecord::kinds`]: how the lock was taken when it waited.
pub mod lock_kind {
    /// `pthread_mutex_lock` (and a condition variable's re-lock).
    pub const MUTEX: u32 = 1;
    /// `pthread_spin_lock`.
    pub const SPIN: u32 = 2;
    /// `pthread_rwlock_rdlock`.
    pub const RW_READ: u32 = 4;
    /// `pthread_rwlock_wrlock`.
    pub const RW_WRITE: u32 = 8;
}

/// One lock's contention: written by its waiters after they acquire it,
/// read by anyone. A slot is claimed once for an address and kept.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct LockRecord {
    /// The lock's address in the process (the pthread object); 0 = free.
    pub addr: AtomicU64,
    /// [`lock_kind`] bits seen.
    pub kinds: AtomicU32,
    _pad: u32,
    /// Acquisitions whose first attempt failed.
    pub contended: AtomicU64,
    /// Their waiting, in TSC ticks (header's `ns_per_2p32_ticks`).
    pub wait_ticks: AtomicU64,
    /// The longest one, in ticks.
    pub max_wait_ticks: AtomicU64,
    /// Bit `tid % 64` of every thread that waited.
    pub waiters: AtomicU64,
    /// Return addresses of sampled contended acquisitions (0 = unused).
    pub callers: [AtomicU64; LOCK_CALLERS],
    /// Samples of each of `callers`.
    pub caller_samples: [AtomicU32; LOCK_CALLERS],
    /// Samples of callers that found `callers` full.
    pub other_samples: AtomicU32,
    /// How the counted waits of a parking lock went, by [`WaitTally`]'s
    /// slots: spun to the hand-off, spun then parked, parked at once, then
    /// why each park: holder off its CPU, budget spent, crowded, short
    /// cycle.
    pub outcomes: [AtomicU32; WAIT_OUTCOMES],
}

/// Entries of [`LockRecord::outcomes`].
pub const WAIT_OUTCOMES: usize = 7;

/// Where a [`corral_policy::waiting::WaitOutcome`] is counted in
/// [`LockRecord::outcomes`].
#[derive(Debug)]
pub struct WaitTally;

impl WaitTally {
    /// The slot of `outcome`'s kind, and of its park's reason if it parked.
    #[inline]
    pub fn slots(outcome: corral_policy::waiting::WaitOutcome) -> (usize, Option<usize>) {
        use corral_policy::waiting::{ParkReason, WaitOutcome};
        let reason = |r: ParkReason| {
            Some(match r {
                ParkReason::HolderOffCpu => 3,
                ParkReason::BudgetSpent => 4,
                ParkReason::Crowded => 5,
                ParkReason::ShortCycle => 6,
            })
        };
        match outcome {
            WaitOutcome::SpunToHandoff => (0, None),
            WaitOutcome::SpunThenParked(r) => (1, reason(r)),
            WaitOutcome::ParkedAtOnce(r) => (2, reason(r)),
        }
    }
}

impl LockRecord {
    /// A free slot.
    pub const fn new() -> Self {
        LockRecord {
            addr: AtomicU64::new(0),
            kinds: AtomicU32::new(0),
            _pad: 0,
            contended: AtomicU64::new(0),
            wait_ticks: AtomicU64::new(0),
            max_wait_ticks: AtomicU64::new(0),
            waiters: AtomicU64::new(0),
            callers: [const { AtomicU64::new(0) }; LOCK_CALLERS],
            caller_samples: [const { AtomicU32::new(0) }; LOCK_CALLERS],
            other_samples: AtomicU32::new(0),
            outcomes: [const { AtomicU32::new(0) }; WAIT_OUTCOMES],
        }
    }
}

impl Default for LockRecord {
    fn default() -> Self {
        Self::new()
    }
}

const _: () = assert!(core::mem::size_of::<LockRecord>() == 128);

/// Offset of the lock table in a file with room for `max_threads` records.
pub const fn lock_table_offset(max_threads: u32) -> usize {
    core::mem::size_of::<StatsHeader>()
        + max_threads as usize * core::mem::size_of::<ThreadRecord>()
}

/// Offset of the [`ChannelHeader`] in a region with room for `max_threads`
/// records.
pub const fn channel_offset(max_threads: u32) -> usize {
    lock_table_offset(max_threads) + LOCK_SLOTS * core::mem::size_of::<LockRecord>()
}

/// Where the channel begins in a region of `len` bytes: after as many
/// thread records as fit, [`DEFAULT_MAX_THREADS`] at most.
pub const fn channel_offset_for_len(len: usize) -> usize {
    let per = core::mem::size_of::<ThreadRecord>();
    let fixed = stats_file_len(0);
    let threads = if len > fixed { (len - fixed) / per } else { 0 };
    let threads = if threads > DEFAULT_MAX_THREADS as usize {
        DEFAULT_MAX_THREADS
    } else {
        threads as u32
    };
    channel_offset(threads)
}

/// Bytes of the message area: what the library says, one line each.
pub const MESSAGE_BYTES: usize = 16 << 10;
/// Bytes of the decision log's ring, drained by `corral run` as it fills.
pub const EVENT_BYTES: usize = 1 << 20;
/// Bytes of the memory map copied at exit (the lock profile's names).
pub const MAPS_BYTES: usize = 256 << 10;

/// Bytes needed for a stats region with room for `max_threads` records.
pub const fn stats_file_len(max_threads: u32) -> usize {
    channel_offset(max_threads)
        + core::mem::size_of::<ChannelHeader>()
        + MESSAGE_BYTES
        + EVENT_BYTES
        + MAPS_BYTES
}

/// The cursors of the areas after the lock table (see [`crate::channel`]).
#[derive(Debug)]
#[repr(C, align(64))]
pub struct ChannelHeader {
    /// Bytes of the message area reserved by writers (past
    /// [`MESSAGE_BYTES`]: full).
    pub message_reserved: AtomicU32,
    /// Messages dropped because the area was full.
    pub messages_dropped: AtomicU32,
    /// Bytes of memory map written at exit (0: none yet).
    pub maps_len: AtomicU32,
    /// 1 where the map was longer than [`MAPS_BYTES`] and cut.
    pub maps_cut: AtomicU32,
    /// Bytes of decision log ever written into the ring.
    pub events_written: AtomicU64,
    /// Bytes of it `corral run` has taken out.
    pub events_read: AtomicU64,
    /// Log lines dropped because `corral run` had not drained the ring.
    pub events_dropped: AtomicU64,
    /// `pthread_create` calls the process made before corral's library
    /// loaded in it (a load deferred to a contended hand-off), counted by
    /// `libcorral_shim.so`; written once, at the load.
    pub threads_made_before_load: AtomicU32,
    /// `pthread_create` calls since the load.
    pub threads_made_after_load: AtomicU32,
    _reserved: AtomicU64,
}

const _: () = assert!(core::mem::size_of::<ChannelHeader>() == 64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_cache_line_sized_and_stable() {
        assert_eq!(core::mem::align_of::<ThreadRecord>(), 64);
        assert_eq!(channel_offset(2), 64 * 3 + 128 * LOCK_SLOTS);
        assert_eq!(
            stats_file_len(2),
            channel_offset(2) + 64 + MESSAGE_BYTES + EVENT_BYTES + MAPS_BYTES
        );
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
