//! The per-lock contention profile: for each lock (by address) the
//! acquisitions that had to wait, their total and longest wait, the
//! threads that waited, and sampled callers. It lives in the stats region's
//! lock table ([`crate::abi::LockRecord`]), a fixed open-addressed hash
//! table: nothing allocates, and only contended acquisitions touch it. An
//! uncontended acquisition never reaches this module.
//!
//! A contended acquisition calls [`begin`] before it waits (the slot
//! look-up, and a caller sample while the thread would wait anyway) and
//! [`Pending::end`] once it holds the lock: all counter updates land on
//! the record's two cache lines at once.

use core::cell::Cell;
use core::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

use crate::abi::{lock_kind, LockRecord, LOCK_CALLERS, LOCK_OVERFLOW, LOCK_SLOTS};

mod caller;
pub mod snapshot;

/// Set to `0` to keep no lock profile (the cost comparison's "off").
pub const ENV_LOCK_PROFILE: &str = "CORRAL_LOCK_PROFILE";

/// Slots probed for a lock's address before it goes to the overflow slot.
const MAX_PROBES: usize = 32;

/// A thread samples the caller of one in this many of its contended
/// acquisitions (and always while a lock has no caller yet): unwinding
/// costs about a microsecond.
pub const SAMPLE_EVERY: u32 = 16;

/// A sampled caller the unwinder could not find (no unwind tables).
pub const UNKNOWN_CALLER: u64 = 1;

/// The table's first slot; null while no profile is kept.
static TABLE: AtomicPtr<LockRecord> = AtomicPtr::new(core::ptr::null_mut());

/// The process that attached the table: only it saves its maps at exit. A
/// child made by a raw clone runs no atfork handler, so it still sees the
/// table, and its exit must not allocate (another thread of the parent
/// may have held malloc's lock at the clone: the child would hang).
static OWNER: AtomicI32 = AtomicI32::new(0);

std::thread_local! {
    /// Contended acquisitions left before this thread's next caller sample.
    /// Const-initialised, no destructor: first use allocates nothing.
    static COUNTDOWN: Cell<u32> = const { Cell::new(0) };
}

/// Keeps the profile in `map`'s lock table (a map fresh from
/// [`crate::stats::StatsMap::publish`]: every slot free) from now on, unless
/// [`ENV_LOCK_PROFILE`] is `0`. The mapping is then never unmapped.
pub fn attach(map: &mut crate::stats::StatsMap) {
    if std::env::var_os(ENV_LOCK_PROFILE).is_some_and(|v| v == "0") {
        return;
    }
    let table = map.keep_locks_mapped();
    // The region is new (`StatsMap::publish`), so every slot is already free:
    // storing zeros would only fault in its 32 pages, at every exec.
    // Relaxed: the Release below publishes.
    table[LOCK_SLOTS - 1]
        .addr
        .store(LOCK_OVERFLOW, Ordering::Relaxed);
    // Relaxed: a monitoring flag for readers.
    map.header().lock_profile.store(1, Ordering::Relaxed);
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    // Relaxed: read by this process alone, at its exit.
    OWNER.store(pid, Ordering::Relaxed);
    // Release: a waiter that sees the table sees its initialised slots.
    TABLE.store(table.as_ptr() as *mut LockRecord, Ordering::Release);
}

/// Stops profiling in this process (a forked child: the table is its
/// parent's).
pub fn detach() {
    TABLE.store(core::ptr::null_mut(), Ordering::Relaxed); // Relaxed: single-threaded child.
}

/// Whether contended acquisitions are profiled.
pub fn is_on() -> bool {
    !TABLE.load(Ordering::Relaxed).is_null() // Relaxed: a hint, see `begin`.
}

/// A contended acquisition under way: its lock's record, how it was
/// taken, and its caller where sampled.
#[derive(Debug)]
#[must_use = "call `end` once the lock is held"]
pub struct Pending {
    rec: &'static LockRecord,
    kind: u32,
    caller: u64,
}

/// Starts profiling a contended acquisition of the lock at `addr`, taken
/// as `kind` (an [`crate::abi::lock_kind`] bit); `None` if no profile is
/// kept. Called before waiting.
#[inline]
pub fn begin(addr: usize, kind: u32) -> Option<Pending> {
    // Acquire: pairs with `attach`'s Release (the slots' initial state).
    let base = TABLE.load(Ordering::Acquire);
    if base.is_null() {
        return None;
    }
    // SAFETY: `attach` stored the start of a `'static` table of LOCK_SLOTS.
    let table = unsafe { core::slice::from_raw_parts(base as *const LockRecord, LOCK_SLOTS) };
    let rec = slot_of(table, addr as u64);
    let sample = COUNTDOWN.get() == 0 || rec.callers[0].load(Ordering::Relaxed) == 0; // Relaxed: a hint.
    let caller = if sample {
        COUNTDOWN.set(SAMPLE_EVERY - 1);
        caller::capture().unwrap_or(UNKNOWN_CALLER)
    } else {
        COUNTDOWN.set(COUNTDOWN.get() - 1);
        0
    };
    Some(Pending { rec, kind, caller })
}

impl Pending {
    /// [`Pending::end`], counting what the wait did where it is known.
    #[inline]
    pub fn end_with(self, ticks: u64, outcome: Option<corral_policy::waiting::WaitOutcome>) {
        if let Some(o) = outcome {
            let (kind, reason) = crate::abi::WaitTally::slots(o);
            for i in core::iter::once(kind).chain(reason) {
                // Relaxed: a statistic; written by the lock's holder.
                let c = &self.rec.outcomes[i];
                c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
            }
        }
        self.end(ticks);
    }

    /// Counts the acquisition, now held, which waited `ticks`.
    ///
    /// A mutex's, spin lock's or write lock's record is written only by
    /// holders of that lock: the counters are then read and stored, not
    /// read-modify-written with a locked instruction, which would lengthen
    /// the critical section. Readers of a rwlock hold it together, and the
    /// overflow slot is shared by many locks: those add atomically.
    #[inline]
    pub fn end(self, ticks: u64) {
        let r = self.rec;
        // Relaxed throughout: statistics; readers tolerate a record
        // mid-update (and a claimed address never changes).
        let shared =
            self.kind == lock_kind::RW_READ || r.addr.load(Ordering::Relaxed) == LOCK_OVERFLOW;
        if shared {
            r.contended.fetch_add(1, Ordering::Relaxed);
            r.wait_ticks.fetch_add(ticks, Ordering::Relaxed);
            r.max_wait_ticks.fetch_max(ticks, Ordering::Relaxed);
        } else {
            let add = |c: &core::sync::atomic::AtomicU64, v: u64| {
                c.store(c.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed)
            };
            add(&r.contended, 1);
            add(&r.wait_ticks, ticks);
            if r.max_wait_ticks.load(Ordering::Relaxed) < ticks {
                r.max_wait_ticks.store(ticks, Ordering::Relaxed);
            }
        }
        let bit = 1u64 << (crate::registry::current_tid() as u32 % 64);
        if r.waiters.load(Ordering::Relaxed) & bit == 0 {
            r.waiters.fetch_or(bit, Ordering::Relaxed);
        }
        if r.kinds.load(Ordering::Relaxed) & self.kind == 0 {
            r.kinds.fetch_or(self.kind, Ordering::Relaxed);
        }
        if self.caller != 0 {
            count_caller(r, self.caller);
        }
    }
}

/// The slot of `addr`: found, claimed, or the overflow slot.
fn slot_of(table: &'static [LockRecord], addr: u64) -> &'static LockRecord {
    let usable = LOCK_SLOTS - 1;
    // Fibonacci hashing of the address less its alignment bits.
    let mut i = ((addr >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54) as usize % usable;
    for _ in 0..MAX_PROBES {
        let r = &table[i];
        // Relaxed: the address is the whole of what a claim publishes.
        match r.addr.load(Ordering::Relaxed) {
            a if a == addr => return r,
            0 => match r
                .addr
                .compare_exchange(0, addr, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return r,
                Err(a) if a == addr => return r,
                Err(_) => {}
            },
            _ => {}
        }
        i = (i + 1) % usable;
    }
    &table[usable]
}

/// Adds one sample of `caller` to `r`.
fn count_caller(r: &LockRecord, caller: u64) {
    for i in 0..LOCK_CALLERS {
        // Relaxed: each slot is claimed once; the counts are statistics.
        let seen = r.callers[i].load(Ordering::Relaxed);
        let mine = seen == caller
            || (seen == 0
                && match r.callers[i].compare_exchange(
                    0,
                    caller,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => true,
                    Err(now) => now == caller,
                });
        if mine {
            r.caller_samples[i].fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
    r.other_samples.fetch_add(1, Ordering::Relaxed);
}

/// Whether this process saves its maps at exit: it keeps the profile and
/// attached it itself. Allocates nothing, so a raw-cloned child may ask
/// before it builds the path.
pub fn saves_maps() -> bool {
    // SAFETY: getpid has no preconditions (not cached: right after a raw
    // clone too).
    let pid = unsafe { libc::getpid() };
    // Relaxed: written once by this process's load, before any exit.
    is_on() && OWNER.load(Ordering::Relaxed) == pid
}

/// Writes the loaded objects' file mappings into the stats region's
/// channel at exit, as `/proc/PID/maps` lines, so that the CLI can map
/// callers' and locks' addresses to files after the process is gone. Only
/// where the profile is kept, and only by the process that attached it.
/// From the loader's records ([`maps_text`]), not `/proc/self/maps`: the
/// exit waits on this.
pub fn save_maps() {
    if !saves_maps() {
        return;
    }
    if let Some(channel) = crate::channel::current() {
        channel.write_maps(maps_text().as_bytes());
    }
}

/// The loaded objects' file mappings as `/proc/PID/maps` text (see
/// [`corral_locks::sys::objects::loaded_segments`]).
pub fn maps_text() -> String {
    corral_locks::sys::objects::loaded_segments()
        .iter()
        .map(corral_locks::sys::objects::Segment::maps_line)
        .collect()
}

#[cfg(test)]
#[path = "lockprof/tests.rs"]
mod tests;
