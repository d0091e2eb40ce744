//! The test-and-set spin lock.

use crate::sync::{const_fn_unless_loom, spin_loop, AtomicBool, Ordering};
use crate::RawLock;

/// Test-and-set lock: every attempt is an atomic swap on the one shared
/// line, so waiters keep stealing it from the holder — the degenerate
/// baseline of Anderson 1990 (cited by "Non-scalable locks are dangerous",
/// Boyd-Wickizer et al. 2012, Sec. 6).
#[derive(Debug)]
pub struct TasLock {
    locked: AtomicBool,
}

impl TasLock {
    const_fn_unless_loom! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { locked: AtomicBool::new(false) }
        }
    }

    #[cold]
    fn lock_contended(&self) {
        while !self.try_lock() {
            spin_loop();
        }
    }
}

impl Default for TasLock {
    fn default() -> Self {
        Self::new()
    }
}

impl RawLock for TasLock {
    const NAME: &'static str = "tas";

    #[inline]
    fn lock(&self) {
        if !self.try_lock() {
            self.lock_contended();
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        // Acquire: the previous holder's critical section happens before ours.
        !self.locked.swap(true, Ordering::Acquire)
    }

    #[inline]
    unsafe fn unlock(&self) {
        self.locked.store(false, Ordering::Release);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed) // Relaxed: a snapshot, no data guarded.
    }
}
