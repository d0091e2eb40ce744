//! The test-and-test-and-set spin lock with exponential backoff.

use crate::sync::{const_fn_unless_loom, spin_loop, AtomicBool, Ordering};
use crate::RawLock;

/// Spin-loop iterations of the first backoff after a lost race.
pub const TTAS_MIN_BACKOFF_SPINS: u32 = 4;
/// Cap of the exponential backoff, in spin-loop iterations.
pub const TTAS_MAX_BACKOFF_SPINS: u32 = 1024;

/// Test-and-test-and-set lock with exponential backoff: waiters spin on a
/// shared read of the flag, try the swap only when it looks free, and back
/// off exponentially after losing a race (Anderson 1990, cited by
/// "Non-scalable locks are dangerous", Boyd-Wickizer et al. 2012, Sec. 6).
/// The paper gives no constants; the defaults above are conventional.
#[derive(Debug)]
pub struct TtasLock {
    locked: AtomicBool,
}

impl TtasLock {
    const_fn_unless_loom! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { locked: AtomicBool::new(false) }
        }
    }

    #[cold]
    fn lock_contended(&self) {
        let mut backoff = TTAS_MIN_BACKOFF_SPINS;
        loop {
            // Relaxed: a read-only probe; the swap below acquires.
            while self.locked.load(Ordering::Relaxed) {
                spin_loop();
            }
            if self.try_lock() {
                return;
            }
            for _ in 0..backoff {
                spin_loop();
            }
            backoff = (backoff * 2).min(TTAS_MAX_BACKOFF_SPINS);
        }
    }
}

impl Default for TtasLock {
    fn default() -> Self {
        Self::new()
    }
}

impl RawLock for TtasLock {
    const NAME: &'static str = "ttas";

    #[inline]
    fn lock(&self) {
        if !self.try_lock() {
            self.lock_contended();
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        // Test first so a held lock's line is not written; Relaxed: the swap acquires.
        !self.locked.load(Ordering::Relaxed) && !self.locked.swap(true, Ordering::Acquire)
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
