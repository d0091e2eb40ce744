//! corral's view of a `pthread_mutex_t` (its words, type and owner) and the
//! lock and unlock semantics that the mutex entry points and the condition
//! variable share. Process-shared, robust and priority-protocol mutexes are
//! left to glibc, whose layout they keep.

use core::ffi::c_int;
use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

use corral_locks::wait::record_wait;
use corral_locks::RawLock;
use corral_runtime::parking::Parking;
use corral_runtime::registry::{current_tid, on_lock_attempt};
use corral_runtime::waiting::lock_contended;

use crate::deadline::Deadline;
use crate::init::real;
use crate::lockdispatch::{self, with_lock};

/// corral's view of a `pthread_mutex_t` (40 bytes on x86_64 glibc). The
/// type sits where glibc keeps `__kind`, so glibc's static initialisers
/// (`PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP`, ...) mean the same here.
/// Every field but `kind` is corral's own (glibc's initialisers zero them).
#[repr(C)]
struct MutexWords {
    /// Where a waiter of a spinning algorithm sleeps (zero when none).
    parking: Parking,
    /// Recursion depth of a recursive mutex.
    count: AtomicU32,
    /// Owner's tid for recursive and error-checking mutexes.
    owner: AtomicI32,
    /// glibc's `__kind`: type in the low bits, flags above.
    kind: AtomicI32,
    _spins: u32,
    /// The algorithm's lock state (zero = unlocked); atomics, as the lock
    /// types laid over it are.
    state: [AtomicU64; 2],
}

const _: () =
    assert!(core::mem::size_of::<MutexWords>() == core::mem::size_of::<libc::pthread_mutex_t>());
// `kind` stays where glibc's static initialisers put `__kind`.
const _: () = assert!(core::mem::offset_of!(MutexWords, kind) == 16);

const KIND_MASK: i32 = 3;
/// glibc's robust, priority-inheritance, priority-protect and
/// process-shared bits of `__kind`: such mutexes stay glibc's.
const GLIBC_ONLY: i32 = 16 | 32 | 64 | 128;

/// corral's view of the mutex at `m`.
///
/// # Safety
/// `m` points to a live `pthread_mutex_t` that outlives `'a` (POSIX's
/// precondition on every mutex call); the fields touched concurrently are
/// atomics.
#[inline]
unsafe fn words<'a>(m: *mut libc::pthread_mutex_t) -> &'a MutexWords {
    // SAFETY: see the function's contract; MutexWords has the mutex's size.
    unsafe { &*(m as *const MutexWords) }
}

impl MutexWords {
    /// Where the algorithm's lock state begins.
    #[inline]
    fn state(&self) -> *mut u8 {
        self.state.as_ptr() as *mut u8
    }
}

/// The POSIX mutex type; glibc's adaptive type (3) behaves as normal.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Normal,
    Recursive,
    ErrorCheck,
}

impl Kind {
    #[inline]
    fn of(kind: i32) -> Self {
        match kind & KIND_MASK {
            libc::PTHREAD_MUTEX_RECURSIVE => Kind::Recursive,
            libc::PTHREAD_MUTEX_ERRORCHECK => Kind::ErrorCheck,
            _ => Kind::Normal,
        }
    }
}

/// Initialises `m` as corral's unlocked mutex of type `ty`.
///
/// # Safety
/// `m` points to writable storage for a mutex, not shared yet.
pub(crate) unsafe fn init(m: *mut libc::pthread_mutex_t, ty: c_int) {
    // SAFETY: `m` points to writable storage for a mutex (the contract).
    unsafe { core::ptr::write_bytes(m, 0, 1) };
    // SAFETY: `m` now holds an initialised mutex.
    let w = unsafe { words(m) };
    // Relaxed: init happens before sharing.
    w.kind.store(ty & KIND_MASK, Ordering::Relaxed);
}

/// A mutex on corral's locks, with its type read once per call.
pub(crate) struct Mutex<'a> {
    w: &'a MutexWords,
    kind: Kind,
}

/// The mutex at `m` if it runs on corral's locks; `None` if it is glibc's.
/// Every entry point begins here.
///
/// # Safety
/// `m` points to a live `pthread_mutex_t` that outlives `'a`.
#[inline]
pub(crate) unsafe fn corral_mutex<'a>(m: *mut libc::pthread_mutex_t) -> Option<Mutex<'a>> {
    // SAFETY: the function's contract.
    let w = unsafe { words(m) };
    let kind = w.kind.load(Ordering::Relaxed); // Relaxed: fixed since init.
    (kind & GLIBC_ONLY == 0).then(|| Mutex {
        w,
        kind: Kind::of(kind),
    })
}

/// `pthread_mutex_lock`, for the entry point and the condition variable.
///
/// # Safety
/// `m` points to a live mutex.
#[inline]
pub(crate) unsafe fn lock(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: the function's contract.
    match unsafe { corral_mutex(m) } {
        Some(mx) => mx.lock(),
        // SAFETY: forwarding to glibc, which owns this mutex's layout.
        None => unsafe { (real().mutex_lock)(m) },
    }
}

/// `pthread_mutex_unlock`, for the entry point and the condition variable.
///
/// # Safety
/// `m` points to a live mutex.
#[inline]
pub(crate) unsafe fn unlock(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: the function's contract.
    match unsafe { corral_mutex(m) } {
        Some(mx) => mx.unlock(),
        // SAFETY: forwarding to glibc, which owns this mutex's layout.
        None => unsafe { (real().mutex_unlock)(m) },
    }
}

impl Mutex<'_> {
    /// Acquires the lock, waiting as the policy says.
    #[inline]
    pub(crate) fn lock(&self) -> c_int {
        if let Some(rc) = self.relock_by_owner(true) {
            return rc;
        }
        self.acquire();
        self.took();
        0
    }

    /// Acquires the lock if it is free; `EBUSY` if not.
    #[inline]
    pub(crate) fn try_lock(&self) -> c_int {
        if let Some(rc) = self.relock_by_owner(false) {
            return rc;
        }
        if !self.try_acquire() {
            return libc::EBUSY;
        }
        self.took();
        0
    }

    /// Releases the lock: `EPERM` where a checking mutex is not the
    /// caller's; a recursive one only counts down until the last unlock.
    #[inline]
    pub(crate) fn unlock(&self) -> c_int {
        let w = self.w;
        if self.kind != Kind::Normal {
            // Relaxed: owner-only fields.
            if w.owner.load(Ordering::Relaxed) != current_tid() {
                return libc::EPERM;
            }
            let c = w.count.load(Ordering::Relaxed);
            if self.kind == Kind::Recursive && c > 1 {
                w.count.store(c - 1, Ordering::Relaxed);
                return 0;
            }
            w.owner.store(0, Ordering::Relaxed);
            w.count.store(0, Ordering::Relaxed);
        }
        let state = w.state();
        // Looked at under the lock: after the release the mutex may be
        // destroyed and freed (parking algorithms never park here).
        let wake = w.parking.before_release();
        // SAFETY: the owner check above, or POSIX's precondition for a
        // normal mutex: the caller holds the lock.
        with_lock!(state, l => unsafe { l.unlock() });
        if let Some(wake) = wake {
            wake.wake();
        }
        0
    }

    /// Whether some thread holds the lock: a snapshot.
    #[inline]
    pub(crate) fn is_locked(&self) -> bool {
        let state = self.w.state();
        with_lock!(state, l => l.is_locked())
    }

    /// Acquires the lock before `abstime` on `clock`, or `ETIMEDOUT`. It
    /// polls: a queue lock cannot leave its queue, so a bounded wait never
    /// joins one. The deadline is read only when the lock is busy.
    ///
    /// # Safety
    /// `abstime` points to a valid timespec where the lock is busy.
    pub(crate) unsafe fn lock_until(
        &self,
        clock: libc::clockid_t,
        abstime: *const libc::timespec,
    ) -> c_int {
        if let Some(rc) = self.relock_by_owner(true) {
            return rc;
        }
        if !self.try_acquire() {
            // SAFETY: the function's contract; the lock is busy.
            let deadline = match unsafe { Deadline::read(clock, abstime) } {
                Ok(d) => d,
                Err(rc) => return rc,
            };
            let rc = self.poll_until(&deadline);
            if rc != 0 {
                return rc;
            }
        }
        self.took();
        0
    }

    #[cold]
    fn poll_until(&self, deadline: &Deadline) -> c_int {
        record_wait(|| loop {
            if self.try_acquire() {
                break 0;
            }
            if deadline.passed() {
                break libc::ETIMEDOUT;
            }
            pause_briefly();
        })
        .0
    }

    /// The owner check before acquiring: `Some(result)` returns at once (a
    /// recursive re-lock, EAGAIN at the depth limit, or EDEADLK). `blocking`:
    /// false for trylock, where an error-checking mutex just reports busy.
    #[inline]
    fn relock_by_owner(&self, blocking: bool) -> Option<c_int> {
        match self.kind {
            Kind::Normal => return None,
            Kind::ErrorCheck if !blocking => return None,
            _ => {}
        }
        let w = self.w;
        // Relaxed: only this thread ever stores its own tid here.
        if w.owner.load(Ordering::Relaxed) != current_tid() {
            return None;
        }
        if self.kind == Kind::ErrorCheck {
            return Some(libc::EDEADLK);
        }
        let c = w.count.load(Ordering::Relaxed); // Relaxed: owner-only field.
        if c == u32::MAX {
            return Some(libc::EAGAIN);
        }
        w.count.store(c + 1, Ordering::Relaxed);
        Some(0)
    }

    /// Records the caller as owner of a checking mutex it just acquired.
    #[inline]
    fn took(&self) {
        if self.kind != Kind::Normal {
            // Relaxed: owner-only fields, published to other threads by the lock.
            self.w.owner.store(current_tid(), Ordering::Relaxed);
            self.w.count.store(1, Ordering::Relaxed);
        }
    }

    #[inline]
    fn acquire(&self) {
        on_lock_attempt();
        let state = self.w.state();
        with_lock!(state, l => {
            if !l.try_lock() {
                let parks = lockdispatch::current().is_parking();
                lock_contended(l, parks, Some(&self.w.parking));
            }
        })
    }

    #[inline]
    fn try_acquire(&self) -> bool {
        on_lock_attempt();
        let state = self.w.state();
        with_lock!(state, l => l.try_lock())
    }
}

/// Between polls of a bounded wait: a short sleep keeps the poller off a
/// core the holder may need.
#[cold]
fn pause_briefly() {
    corral_locks::sys::clock::sleep_ns(20_000);
}
