//! The words of a `pthread_mutex_t` as corral uses them: where the lock
//! state, the recursion count, the owner and the parking words live, by
//! the family of the process's algorithm ([`Layout`]).

use core::sync::atomic::{AtomicI32, AtomicU16, AtomicU32, AtomicU64, Ordering};

use corral_runtime::parking::Parking;

use crate::lockdispatch;

/// corral's view of a `pthread_mutex_t` (40 bytes on x86_64 glibc). The
/// type sits where glibc keeps `__kind`, so glibc's static initialisers
/// (`PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP`, ...) mean the same here.
///
/// The first four words follow the algorithm's family ([`Layout`]). A
/// parking algorithm (futex, adaptive: the default) keeps glibc's own
/// layout there: its lock word is glibc's `__lock`, with glibc's 0/1/2
/// protocol, and the recursion count and owner are glibc's `__count` and
/// `__owner`. glibc's condition variable, which unlocks and relocks the
/// mutex inside its wait through glibc's internal functions, then works on
/// corral's mutex unchanged, so such a process keeps glibc's condition
/// variables (see [`crate::cond`]). A spinning algorithm keeps its parking
/// words there and its lock state in `state`.
#[repr(C)]
pub(crate) struct MutexWords {
    /// glibc's `__lock`, `__count`, `__owner`, `__nusers`; see [`Layout`].
    head: [AtomicU32; 4],
    /// glibc's `__kind`: type in the low bits, flags above.
    kind: AtomicI32,
    /// glibc's `__spins`: what the lock's waits taught its spinners
    /// (`corral_policy::waiting::LockMemory`, small counts, as glibc's
    /// adaptive mutex keeps a count there) and a spinner's hand-off request.
    spins: AtomicU16,
    /// glibc's `__elision` (read by glibc only for mutexes it elides,
    /// which it never locks here): the count of releases, which spinners
    /// read to tell the lock's cycle.
    releases: AtomicU16,
    /// A spinning algorithm's lock state (zero = unlocked); atomics, as
    /// the lock types laid over it are.
    state: [AtomicU64; 2],
}

const _: () =
    assert!(core::mem::size_of::<MutexWords>() == core::mem::size_of::<libc::pthread_mutex_t>());
// `kind` stays where glibc's static initialisers put `__kind`.
const _: () = assert!(core::mem::offset_of!(MutexWords, kind) == 16);
// The parking words fit in `head[0..2]`.
const _: () =
    assert!(core::mem::size_of::<Parking>() == 8 && core::mem::align_of::<Parking>() <= 4);

/// Where a mutex keeps what, by the family of the process's algorithm.
///
/// | word | `Glibc` (parking algorithms) | `Spinning` |
/// |---|---|---|
/// | `head[0]` | lock word (glibc's `__lock`) | parking words |
/// | `head[1]` | recursion count (`__count`) | parking words |
/// | `head[2]` | owner tid (`__owner`) | recursion count |
/// | `head[3]` | untouched (`__nusers`) | owner tid |
/// | `state` | unused | lock state |
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Layout {
    /// glibc's own: futex and adaptive, whose waiters sleep on the lock word.
    Glibc,
    /// corral's: the spinning algorithms, whose waiters sleep on the
    /// parking words.
    Spinning,
}

impl Layout {
    /// The layout of algorithms that park (`parks`) or spin.
    #[inline(always)]
    pub(crate) const fn of(parks: bool) -> Self {
        if parks {
            Layout::Glibc
        } else {
            Layout::Spinning
        }
    }

    /// The process's layout.
    #[inline]
    pub(crate) fn current() -> Self {
        Self::of(lockdispatch::current().is_parking())
    }
}

/// corral's view of the mutex at `m`.
///
/// # Safety
/// `m` points to a live `pthread_mutex_t` that outlives `'a` (POSIX's
/// precondition on every mutex call); the fields touched concurrently are
/// atomics.
#[inline]
pub(crate) unsafe fn words<'a>(m: *mut libc::pthread_mutex_t) -> &'a MutexWords {
    // SAFETY: see the function's contract; MutexWords has the mutex's size.
    unsafe { &*(m as *const MutexWords) }
}

impl MutexWords {
    /// The `__kind` word.
    #[inline]
    pub(crate) fn kind(&self) -> i32 {
        self.kind.load(Ordering::Relaxed) // Relaxed: fixed since init.
    }

    /// Sets the `__kind` word of a mutex not shared yet.
    pub(crate) fn set_kind(&self, kind: i32) {
        self.kind.store(kind, Ordering::Relaxed); // Relaxed: init happens before sharing.
    }

    /// Where the algorithm's lock state begins.
    #[inline(always)]
    pub(crate) fn state(&self, layout: Layout) -> *mut u8 {
        match layout {
            // 16 bytes before `kind`; a parking lock is one word.
            Layout::Glibc => self.head.as_ptr() as *mut u8,
            Layout::Spinning => self.state.as_ptr() as *mut u8,
        }
    }

    /// A recursive mutex's depth.
    #[inline]
    pub(crate) fn count(&self, layout: Layout) -> &AtomicU32 {
        match layout {
            Layout::Glibc => &self.head[1],
            Layout::Spinning => &self.head[2],
        }
    }

    /// A checking mutex's owner (tid; 0 for none). glibc's condition
    /// variable stores it for every type, and checks that it is 0 whenever
    /// it takes the lock word: under [`Layout::Glibc`] every release
    /// clears it.
    #[inline]
    pub(crate) fn owner(&self, layout: Layout) -> &AtomicU32 {
        match layout {
            Layout::Glibc => &self.head[2],
            Layout::Spinning => &self.head[3],
        }
    }

    /// The count of the lock's releases (parking algorithms).
    #[inline]
    pub(crate) fn releases(&self) -> &AtomicU16 {
        &self.releases
    }

    /// A parking algorithm's lock word (glibc's `__lock`).
    #[inline]
    pub(crate) fn lock_word(&self) -> &AtomicU32 {
        &self.head[0]
    }

    /// The lock's spin memory word (see `corral_runtime::waiting`).
    #[inline]
    pub(crate) fn spin_memory(&self) -> &AtomicU16 {
        &self.spins
    }

    /// Where a waiter of a spinning algorithm sleeps (zero when none).
    #[inline]
    pub(crate) fn parking(&self) -> &Parking {
        // SAFETY: `head[0..2]` are two 4-aligned atomic words, which is
        // what `Parking` (repr(C), two AtomicU32) is; under the spinning
        // layout nothing else uses them.
        unsafe { &*(self.head.as_ptr() as *const Parking) }
    }
}
