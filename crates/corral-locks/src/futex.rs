//! The parking mutex on Linux futexes.

#[cfg(target_os = "linux")]
use crate::sync::futex::{wait, wake, Sharing};
use crate::sync::{const_fn_unless_loom, AtomicU32, Ordering};
use crate::RawLock;

/// Nobody holds the lock.
pub(crate) const UNLOCKED: u32 = 0;
/// Held, and no thread sleeps on it.
pub(crate) const LOCKED: u32 = 1;
/// Held, and threads may sleep on it: release must wake one.
pub(crate) const CONTENDED: u32 = 2;

/// Drepper's three-state futex mutex ("Futexes Are Tricky", 2011, mutex 3):
/// the word is 0 (free), 1 (held) or 2 (held, maybe sleepers). Waiters mark
/// the word 2 and sleep in `FUTEX_WAIT`; a release that finds 2 wakes one
/// sleeper. The parking baseline that does not collapse when threads
/// outnumber cores (design guide, "User space is not the kernel").
#[derive(Debug)]
pub struct FutexLock {
    state: AtomicU32,
}

impl FutexLock {
    const_fn_unless_loom! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { state: AtomicU32::new(UNLOCKED) }
        }
    }

    /// Sleeps until the lock is taken by this thread, marking it contended.
    #[cold]
    pub(crate) fn lock_parked(state: &AtomicU32) {
        // Acquire: the previous holder's critical section happens before ours.
        while state.swap(CONTENDED, Ordering::Acquire) != UNLOCKED {
            #[cfg(not(loom))]
            let slept_at = crate::sys::clock::now_ticks();
            let slept = futex_wait(state, CONTENDED);
            #[cfg(not(loom))]
            if slept {
                crate::wake_cost::note_woken(slept_at);
            }
            #[cfg(loom)]
            let _ = slept;
        }
    }

    #[inline]
    pub(crate) fn try_lock_word(state: &AtomicU32) -> bool {
        // Acquire: the previous holder's critical section happens before ours.
        state
            .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    #[inline]
    pub(crate) fn unlock_word(state: &AtomicU32) {
        // Release: our critical section happens before the next holder's.
        if state.swap(UNLOCKED, Ordering::Release) == CONTENDED {
            futex_wake_one(state);
        }
    }
}

impl Default for FutexLock {
    fn default() -> Self {
        Self::new()
    }
}

impl RawLock for FutexLock {
    const NAME: &'static str = "futex";

    #[inline]
    fn lock(&self) {
        if !Self::try_lock_word(&self.state) {
            Self::lock_parked(&self.state);
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        Self::try_lock_word(&self.state)
    }

    #[inline]
    unsafe fn unlock(&self) {
        Self::unlock_word(&self.state);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.state.load(Ordering::Relaxed) != UNLOCKED // Relaxed: a snapshot, no data guarded.
    }
}

/// Sleeps while `*word == expected` (spurious wake-ups are fine: callers
/// loop); true if it slept and was woken (not a changed word or a signal).
#[cfg(target_os = "linux")]
#[cold]
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32) -> bool {
    matches!(
        wait(word, expected, Sharing::Private),
        crate::sync::futex::WaitResult::Woken
    )
}

/// Wakes at most one thread sleeping on `word`.
#[cfg(target_os = "linux")]
#[cold]
pub(crate) fn futex_wake_one(word: &AtomicU32) {
    #[cfg(not(loom))]
    crate::wake_cost::note_wake();
    wake(word, 1, Sharing::Private);
}

/// Stand-in off Linux: "sleeping" is yielding and re-checking, which
/// keeps the state machine's logic intact.
#[cfg(not(target_os = "linux"))]
#[cold]
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32) -> bool {
    if word.load(Ordering::Relaxed) == expected {
        crate::sync::thread::yield_now();
    }
    false
}

/// Stand-in off Linux: waiters re-check on their own.
#[cfg(not(target_os = "linux"))]
#[cold]
pub(crate) fn futex_wake_one(_word: &AtomicU32) {}
