//! The per-process stats file of [`crate::abi`]: created and written by the
//! monitor inside the observed program, mapped read-only by `corral run`
//! (or any other tool) to take snapshots.

use std::fs::OpenOptions;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::Ordering;

use serde::Serialize;

use crate::abi::{
    lock_table_offset, stats_file_len, LockRecord, MigState, StatsHeader, ThreadRecord, LOCK_SLOTS,
    STATS_MAGIC, STATS_VERSION,
};
pub use crate::lockprof::snapshot::{CallerSample, LockSnapshot};

/// A shared mapping of a stats file.
#[derive(Debug)]
pub struct StatsMap {
    base: *mut u8,
    len: usize,
    /// Never unmapped: the lock profile's writers hold `'static` pointers.
    kept: bool,
}

// SAFETY: every field reached through the mapping is an atomic.
unsafe impl Send for StatsMap {}
// SAFETY: as above.
unsafe impl Sync for StatsMap {}

impl StatsMap {
    /// Creates the stats file at `path` (see [`crate::files::create_private`]:
    /// never through a link, never over another's file) with room for
    /// `max_threads` records and publishes its header. The descriptor is
    /// closed on return: only the mapping stays.
    pub fn create(path: &Path, pid: i32, max_threads: u32) -> io::Result<Self> {
        let file = crate::files::create_private(path).map_err(io::Error::other)?;
        let len = stats_file_len(max_threads);
        file.set_len(len as u64)?;
        let map = Self::map(&file, len, libc::PROT_READ | libc::PROT_WRITE)?;
        let h = map.header();
        // Relaxed: the magic, stored last with Release, publishes these.
        h.version.store(STATS_VERSION, Ordering::Relaxed);
        h.max_threads.store(max_threads, Ordering::Relaxed);
        h.pid.store(pid, Ordering::Relaxed);
        h.ns_per_2p32_ticks
            .store(corral_locks::wait::ticks_to_ns(1 << 32), Ordering::Relaxed);
        // Release: readers that see the magic see the fields above.
        h.magic.store(STATS_MAGIC, Ordering::Release);
        Ok(map)
    }

    /// Maps an existing stats file read-only; refuses a foreign or
    /// incompatible one.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().read(true).open(path)?;
        let len = file.metadata()?.len() as usize;
        if len < stats_file_len(0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "stats file too short",
            ));
        }
        let map = Self::map(&file, len, libc::PROT_READ)?;
        let h = map.header();
        // Acquire: pairs with the creator's Release store of the magic.
        if h.magic.load(Ordering::Acquire) != STATS_MAGIC
            || h.version.load(Ordering::Relaxed) != STATS_VERSION
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a corral stats file of this version",
            ));
        }
        if stats_file_len(h.max_threads.load(Ordering::Relaxed)) > len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "stats file shorter than its header says",
            ));
        }
        Ok(map)
    }

    fn map(file: &std::fs::File, len: usize, prot: i32) -> io::Result<Self> {
        // SAFETY: a fresh shared mapping of `len` bytes of an open file; the
        // kernel picks the address.
        let base = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(StatsMap {
            base: base.cast(),
            len,
            kept: false,
        })
    }

    /// The lock table.
    pub fn locks(&self) -> &[LockRecord] {
        let max = self.header().max_threads.load(Ordering::Relaxed); // Relaxed: fixed at creation.
        let offset = lock_table_offset(max);
        // SAFETY: `create` and `open` checked the file holds the whole
        // table after `max` records; 64-byte aligned; fields are atomics.
        unsafe {
            core::slice::from_raw_parts(self.base.add(offset) as *const LockRecord, LOCK_SLOTS)
        }
    }

    /// The lock table for the rest of the process: the mapping is never
    /// unmapped from now on, even when this handle is dropped.
    pub fn keep_locks_mapped(&mut self) -> &'static [LockRecord] {
        self.kept = true;
        let locks = self.locks();
        // SAFETY: the mapping outlives the process now (`kept`).
        unsafe { core::slice::from_raw_parts(locks.as_ptr(), locks.len()) }
    }

    /// The header.
    pub fn header(&self) -> &StatsHeader {
        // SAFETY: the mapping is at least one header long, page-aligned, and
        // every header field is an atomic.
        unsafe { &*(self.base as *const StatsHeader) }
    }

    /// Record `i`, if within the table.
    pub fn record(&self, i: usize) -> Option<&ThreadRecord> {
        let max = self.header().max_threads.load(Ordering::Relaxed) as usize; // Relaxed: fixed at creation.
        if i >= max || stats_file_len(i as u32 + 1) > self.len {
            return None;
        }
        let offset = core::mem::size_of::<StatsHeader>() + i * core::mem::size_of::<ThreadRecord>();
        // SAFETY: in bounds (checked), 64-byte aligned, fields are atomics.
        Some(unsafe { &*(self.base.add(offset) as *const ThreadRecord) })
    }

    /// A snapshot of the header and every used record.
    pub fn snapshot(&self) -> StatsSnapshot {
        let h = self.header();
        // Relaxed throughout: a monitoring view tolerates a mid-update record.
        let n = h.n_threads.load(Ordering::Relaxed) as usize;
        let threads = (0..n)
            .filter_map(|i| self.record(i))
            .filter(|r| r.tid.load(Ordering::Relaxed) != 0)
            .map(|r| {
                let wait_ns = r.wait_ns.load(Ordering::Relaxed);
                let cpu_ns = r.cpu_ns.load(Ordering::Relaxed);
                let state = MigState::from_u32(r.mig_state.load(Ordering::Relaxed))
                    .unwrap_or(MigState::General);
                ThreadSnapshot {
                    tid: r.tid.load(Ordering::Relaxed),
                    wait_ns,
                    cpu_ns,
                    wait_share: if cpu_ns == 0 {
                        0.0
                    } else {
                        (wait_ns as f64 / cpu_ns as f64).min(1.0)
                    },
                    lock_intensive: state != MigState::General,
                    contended: r.contended.load(Ordering::Relaxed),
                    slices: r.slices.load(Ordering::Relaxed),
                    last_share: f64::from(r.last_share_ppm.load(Ordering::Relaxed)) / 1e6,
                    yields: u64::from(r.yields.load(Ordering::Relaxed)),
                }
            })
            .collect();
        let ns_per_2p32 = h.ns_per_2p32_ticks.load(Ordering::Relaxed);
        StatsSnapshot {
            locks: crate::lockprof::snapshot::locks(self.locks(), ns_per_2p32),
            lock_profile: h.lock_profile.load(Ordering::Relaxed) != 0,
            pid: h.pid.load(Ordering::Relaxed),
            ssc_bound: h.ssc_bound.load(Ordering::Relaxed),
            n_lock_intensive: h.n_lock_intensive.load(Ordering::Relaxed),
            generation: h.generation.load(Ordering::Relaxed),
            throughput: h.throughput_ppm.load(Ordering::Relaxed) as f64 / 1e6,
            threads,
        }
    }
}

impl Drop for StatsMap {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        // SAFETY: unmaps exactly the mapping made in `map`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// One thread in a snapshot.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadSnapshot {
    /// Thread id.
    pub tid: i32,
    /// Lock waiting over the thread's life, ns.
    pub wait_ns: u64,
    /// Thread CPU time seen by the monitor, ns.
    pub cpu_ns: u64,
    /// `wait_ns / cpu_ns`, clamped to 1.
    pub wait_share: f64,
    /// Classified lock intensive at the snapshot.
    pub lock_intensive: bool,
    /// Acquisitions that had to wait.
    pub contended: u64,
    /// Accounting windows closed.
    pub slices: u64,
    /// Share of the last closed window (over the time its thread ran or
    /// waited for a lock, as qualification measures it).
    pub last_share: f64,
    /// Calls to `sched_yield` and `pthread_yield` (stopping at `u32::MAX`).
    pub yields: u64,
}

/// A snapshot of one process's stats file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StatsSnapshot {
    /// The process.
    pub pid: i32,
    /// Current SSC bound.
    pub ssc_bound: u32,
    /// Threads classified lock intensive.
    pub n_lock_intensive: u32,
    /// Publication counter, bumped at every publish.
    pub generation: u64,
    /// Last normalised throughput T(n).
    pub throughput: f64,
    /// Every thread slot in use.
    pub threads: Vec<ThreadSnapshot>,
    /// Whether the lock profile was kept (off: `CORRAL_LOCK_PROFILE=0`).
    pub lock_profile: bool,
    /// Every lock that waited, most total wait first.
    pub locks: Vec<LockSnapshot>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_sees_what_the_writer_published() {
        let path = std::env::temp_dir().join(format!("corral-stats-test.{}", std::process::id()));
        let writer = StatsMap::create(&path, 42, 4).unwrap();
        let rec = writer.record(1).unwrap();
        rec.tid.store(7, Ordering::Relaxed);
        rec.wait_ns.store(250, Ordering::Relaxed);
        rec.cpu_ns.store(1_000, Ordering::Relaxed);
        rec.mig_state
            .store(MigState::HaveMigrated as u32, Ordering::Relaxed);
        writer.header().n_threads.store(2, Ordering::Relaxed);
        writer.header().ssc_bound.store(1, Ordering::Relaxed);
        assert!(writer.record(4).is_none());
        let snap = StatsMap::open(&path).unwrap().snapshot();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(snap.pid, 42);
        assert_eq!(snap.ssc_bound, 1);
        assert_eq!(snap.threads.len(), 1, "record 0 is unused and skipped");
        assert_eq!(snap.threads[0].tid, 7);
        assert_eq!(snap.threads[0].wait_share, 0.25);
        assert!(snap.threads[0].lock_intensive);
    }

    #[test]
    fn refuses_a_file_that_is_not_a_stats_file() {
        let path = std::env::temp_dir().join(format!("corral-stats-bad.{}", std::process::id()));
        std::fs::write(&path, vec![0u8; 4096]).unwrap();
        let err = StatsMap::open(&path).err().unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
