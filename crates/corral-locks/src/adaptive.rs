//! The spin-then-park mutex.

use crate::futex::{FutexLock, UNLOCKED};
use crate::sync::{const_fn_unless_loom, spin_loop, AtomicU32, Ordering};
use crate::RawLock;

/// Bounded spin before parking, in read probes of the lock word; glibc's
/// `PTHREAD_MUTEX_ADAPTIVE_NP` default (`DEFAULT_ADAPTIVE_COUNT`).
pub const ADAPTIVE_SPIN_LIMIT: u32 = 100;

/// Adaptive mutex: spin briefly in the hope the holder is running and about
/// to release, then park on the futex like [`FutexLock`] (Karlin et al.,
/// "Empirical studies of competitive spinning for a shared-memory
/// multiprocessor", SOSP 1991; the design guide's "spin briefly, then park").
/// Bounded spinning keeps a preempted holder from burning waiters' slices.
#[derive(Debug)]
pub struct AdaptiveLock {
    state: AtomicU32,
}

impl AdaptiveLock {
    const_fn_unless_loom! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { state: AtomicU32::new(UNLOCKED) }
        }
    }

    #[cold]
    fn lock_contended(&self) {
        for _ in 0..ADAPTIVE_SPIN_LIMIT {
            // Relaxed: a read-only probe; the CAS acquires.
            if self.state.load(Ordering::Relaxed) == UNLOCKED
                && FutexLock::try_lock_word(&self.state)
            {
                return;
            }
            spin_loop();
        }
        FutexLock::lock_parked(&self.state);
    }
}

impl Default for AdaptiveLock {
    fn default() -> Self {
        Self::new()
    }
}

impl RawLock for AdaptiveLock {
    const NAME: &'static str = "adaptive";

    #[inline]
    fn lock(&self) {
        if !FutexLock::try_lock_word(&self.state) {
            self.lock_contended();
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        FutexLock::try_lock_word(&self.state)
    }

    #[inline]
    unsafe fn unlock(&self) {
        FutexLock::unlock_word(&self.state);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.state.load(Ordering::Relaxed) != UNLOCKED // Relaxed: a snapshot, no data guarded.
    }
}
