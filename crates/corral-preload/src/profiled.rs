//! The contended path of every interposed lock, with the per-lock profile
//! around it ([`corral_runtime::lockprof`]): reached only after a first
//! attempt failed, so the uncontended path stays as it was. After each
//! wait a dozing monitor may be rung ([`monitor_thread::after_wait`]).

use corral_locks::wait::now_ticks;
use corral_locks::RawLock;
use corral_runtime::parking::Parking;
use corral_runtime::waiting::{lock_contended, HolderWords};
use corral_runtime::{lockprof, monitor_thread};

/// [`lock_contended`] on the lock whose pthread object is at `addr`, taken
/// as `kind` (a [`corral_runtime::abi::lock_kind`] bit), profiled.
#[cold]
#[inline(never)]
pub(crate) fn wait_for<L: RawLock>(
    lock: &L,
    parks: bool,
    parking: Option<&Parking>,
    holder: Option<HolderWords<'_>>,
    addr: usize,
    kind: u32,
) {
    match lockprof::begin(addr, kind) {
        None => {
            lock_contended(lock, parks, parking, holder);
        }
        Some(pending) => {
            let start = now_ticks();
            let outcome = lock_contended(lock, parks, parking, holder);
            pending.end_with(now_ticks().wrapping_sub(start).max(1), outcome);
        }
    }
    monitor_thread::after_wait();
}

/// Runs `wait`, a contended acquisition of the lock at `addr` taken as
/// `kind` that times itself (returning the ticks), profiled.
#[inline]
pub(crate) fn timed<T>(addr: usize, kind: u32, wait: impl FnOnce() -> (T, u64)) -> T {
    let pending = lockprof::begin(addr, kind);
    let (out, ticks) = wait();
    if let Some(p) = pending {
        p.end(ticks);
    }
    monitor_thread::after_wait();
    out
}
