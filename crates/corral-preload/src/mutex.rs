//! `pthread_mutex_*` on corral's locks, keeping POSIX's contracts: static
//! initialisers, recursive and error-checking types, EBUSY / ETIMEDOUT /
//! EDEADLK / EPERM. Process-shared, robust and priority-protocol mutexes
//! are left to glibc, whose layout they keep.

use core::ffi::c_int;
use core::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use corral_locks::wait::{now_ticks, thread_counter};
use corral_runtime::registry::{current_tid, on_lock_attempt};
use corral_runtime::waiting::lock_contended;

use crate::init::real;
use crate::lockdispatch::with_lock;

/// corral's view of a `pthread_mutex_t` (40 bytes on x86_64 glibc). The
/// type sits where glibc keeps `__kind`, so glibc's static initialisers
/// (`PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP`, ...) mean the same here.
#[repr(C)]
pub struct MutexWords {
    _glibc_lock: u32,
    /// Recursion depth of a recursive mutex.
    count: AtomicU32,
    /// Owner's tid for recursive and error-checking mutexes.
    owner: AtomicI32,
    _nusers: u32,
    /// glibc's `__kind`: type in the low bits, flags above.
    kind: AtomicI32,
    _spins: u32,
    /// The algorithm's lock state (zero = unlocked); atomics, as the lock
    /// types laid over it are.
    state: [core::sync::atomic::AtomicU64; 2],
}

const _: () =
    assert!(core::mem::size_of::<MutexWords>() == core::mem::size_of::<libc::pthread_mutex_t>());

const KIND_MASK: i32 = 3;
const RECURSIVE: i32 = libc::PTHREAD_MUTEX_RECURSIVE;
const ERRORCHECK: i32 = libc::PTHREAD_MUTEX_ERRORCHECK;
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

/// Acquires corral's lock of the mutex, waiting as the policy says.
#[inline]
fn acquire(w: &MutexWords) {
    on_lock_attempt();
    let state = w.state();
    with_lock!(state, l => {
        if !l.try_lock() {
            lock_contended(l, crate::lockdispatch::current().is_parking());
        }
    })
}

#[inline]
fn try_acquire(w: &MutexWords) -> bool {
    on_lock_attempt();
    let state = w.state();
    with_lock!(state, l => l.try_lock())
}

#[inline]
fn is_locked(w: &MutexWords) -> bool {
    let state = w.state();
    with_lock!(state, l => l.is_locked())
}

/// Releases corral's lock of the mutex.
///
/// # Safety
/// The calling thread holds it.
#[inline]
unsafe fn release(w: &MutexWords) {
    let state = w.state();
    // SAFETY: the caller holds the lock.
    with_lock!(state, l => unsafe { l.unlock() })
}

/// What to do before acquiring a checking mutex: `Some(result)` returns at
/// once (a recursive re-lock, or EDEADLK).
#[inline]
fn relock_by_owner(w: &MutexWords, kind: i32) -> Option<c_int> {
    // Relaxed: only this thread ever stores its own tid here.
    if w.owner.load(Ordering::Relaxed) != current_tid() {
        return None;
    }
    if kind == RECURSIVE {
        let c = w.count.load(Ordering::Relaxed); // Relaxed: owner-only field.
        if c == u32::MAX {
            return Some(libc::EAGAIN);
        }
        w.count.store(c + 1, Ordering::Relaxed);
        return Some(0);
    }
    Some(libc::EDEADLK)
}

#[inline]
fn took(w: &MutexWords, kind: i32) {
    if kind != 0 {
        // Relaxed: owner-only fields, published to other threads by the lock.
        w.owner.store(current_tid(), Ordering::Relaxed);
        w.count.store(1, Ordering::Relaxed);
    }
}

/// POSIX `pthread_mutex_init` on corral's locks.
///
/// # Safety
/// `m` points to writable storage for a mutex; `attr` is null or a valid attribute object.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_init(
    m: *mut libc::pthread_mutex_t,
    attr: *const libc::pthread_mutexattr_t,
) -> c_int {
    let mut kind = 0;
    if !attr.is_null() {
        let (mut ty, mut pshared, mut robust, mut proto) = (0, 0, 0, 0);
        // SAFETY: `attr` is a valid attribute object (POSIX precondition).
        unsafe {
            pthread_mutexattr_gettype(attr, &mut ty);
            libc::pthread_mutexattr_getpshared(attr, &mut pshared);
            pthread_mutexattr_getrobust(attr, &mut robust);
            pthread_mutexattr_getprotocol(attr, &mut proto);
        }
        if pshared != libc::PTHREAD_PROCESS_PRIVATE || robust != 0 || proto != 0 {
            // SAFETY: forwarding the caller's valid arguments to glibc.
            return unsafe { (real().mutex_init)(m, attr) };
        }
        kind = ty & KIND_MASK;
    }
    // SAFETY: `m` points to writable storage for a mutex (POSIX precondition).
    unsafe { core::ptr::write_bytes(m, 0, 1) };
    // SAFETY: `m` now holds an initialised mutex.
    let w = unsafe { words(m) };
    w.kind.store(kind, Ordering::Relaxed); // Relaxed: init happens before sharing.
    0
}

extern "C" {
    fn pthread_mutexattr_gettype(attr: *const libc::pthread_mutexattr_t, ty: *mut c_int) -> c_int;
    fn pthread_mutexattr_getrobust(
        attr: *const libc::pthread_mutexattr_t,
        robust: *mut c_int,
    ) -> c_int;
    fn pthread_mutexattr_getprotocol(
        attr: *const libc::pthread_mutexattr_t,
        proto: *mut c_int,
    ) -> c_int;
}

/// POSIX `pthread_mutex_destroy` on corral's locks.
///
/// # Safety
/// `m` points to a live mutex (POSIX's precondition); a timespec argument is valid.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_destroy(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: `m` is a live mutex (this function's contract).
    let w = unsafe { words(m) };
    if w.kind.load(Ordering::Relaxed) & GLIBC_ONLY != 0 {
        // SAFETY: forwarding to glibc, which owns this mutex's layout.
        return unsafe { (real().mutex_destroy)(m) };
    }
    if is_locked(w) {
        return libc::EBUSY;
    }
    0
}

/// POSIX `pthread_mutex_lock` on corral's locks.
///
/// # Safety
/// `m` points to a live mutex (POSIX's precondition); a timespec argument is valid.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: `m` is a live mutex (this function's contract).
    let w = unsafe { words(m) };
    let kind = w.kind.load(Ordering::Relaxed); // Relaxed: fixed since init.
    if kind & GLIBC_ONLY != 0 {
        // SAFETY: forwarding to glibc, which owns this mutex's layout.
        return unsafe { (real().mutex_lock)(m) };
    }
    let kind = kind & KIND_MASK;
    if kind == RECURSIVE || kind == ERRORCHECK {
        if let Some(rc) = relock_by_owner(w, kind) {
            return rc;
        }
    }
    acquire(w);
    took(w, kind & (RECURSIVE | ERRORCHECK));
    0
}

/// POSIX `pthread_mutex_trylock` on corral's locks.
///
/// # Safety
/// `m` points to a live mutex (POSIX's precondition); a timespec argument is valid.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_trylock(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: `m` is a live mutex (this function's contract).
    let w = unsafe { words(m) };
    let kind = w.kind.load(Ordering::Relaxed); // Relaxed: fixed since init.
    if kind & GLIBC_ONLY != 0 {
        // SAFETY: forwarding to glibc, which owns this mutex's layout.
        return unsafe { (real().mutex_trylock)(m) };
    }
    let kind = kind & KIND_MASK;
    if kind == RECURSIVE {
        if let Some(rc) = relock_by_owner(w, kind) {
            return rc;
        }
    }
    if !try_acquire(w) {
        return libc::EBUSY;
    }
    took(w, kind & (RECURSIVE | ERRORCHECK));
    0
}

/// POSIX `pthread_mutex_unlock` on corral's locks.
///
/// # Safety
/// `m` points to a live mutex (POSIX's precondition); a timespec argument is valid.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: `m` is a live mutex (this function's contract).
    let w = unsafe { words(m) };
    let kind = w.kind.load(Ordering::Relaxed); // Relaxed: fixed since init.
    if kind & GLIBC_ONLY != 0 {
        // SAFETY: forwarding to glibc, which owns this mutex's layout.
        return unsafe { (real().mutex_unlock)(m) };
    }
    let kind = kind & KIND_MASK;
    if kind == RECURSIVE || kind == ERRORCHECK {
        // Relaxed: owner-only fields.
        if w.owner.load(Ordering::Relaxed) != current_tid() {
            return libc::EPERM;
        }
        let c = w.count.load(Ordering::Relaxed);
        if kind == RECURSIVE && c > 1 {
            w.count.store(c - 1, Ordering::Relaxed);
            return 0;
        }
        w.owner.store(0, Ordering::Relaxed);
        w.count.store(0, Ordering::Relaxed);
    }
    // SAFETY: the owner check above, or POSIX's precondition for a normal mutex.
    unsafe { release(w) };
    0
}

/// POSIX `pthread_mutex_timedlock` on corral's locks.
///
/// # Safety
/// `m` points to a live mutex (POSIX's precondition); a timespec argument is valid.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_timedlock(
    m: *mut libc::pthread_mutex_t,
    abstime: *const libc::timespec,
) -> c_int {
    // SAFETY: forwarding the caller's arguments.
    unsafe { clocklock(m, libc::CLOCK_REALTIME, abstime, true) }
}

/// POSIX `pthread_mutex_clocklock` on corral's locks.
///
/// # Safety
/// `m` points to a live mutex (POSIX's precondition); a timespec argument is valid.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_clocklock(
    m: *mut libc::pthread_mutex_t,
    clock: libc::clockid_t,
    abstime: *const libc::timespec,
) -> c_int {
    // SAFETY: forwarding the caller's arguments.
    unsafe { clocklock(m, clock, abstime, false) }
}

/// Polls for the lock until `abstime` on `clock`: a queue lock cannot leave
/// its queue, so a bounded wait never joins one.
///
/// # Safety
/// `m` points to a live mutex; `abstime` to a valid timespec.
unsafe fn clocklock(
    m: *mut libc::pthread_mutex_t,
    clock: libc::clockid_t,
    abstime: *const libc::timespec,
    timed: bool,
) -> c_int {
    // SAFETY: `m` is a live mutex (this function's contract).
    let w = unsafe { words(m) };
    let raw_kind = w.kind.load(Ordering::Relaxed); // Relaxed: fixed since init.
    if raw_kind & GLIBC_ONLY != 0 {
        // SAFETY: forwarding to glibc, which owns this mutex's layout.
        return unsafe {
            if timed {
                (real().mutex_timedlock)(m, abstime)
            } else {
                (real().mutex_clocklock)(m, clock, abstime)
            }
        };
    }
    let kind = raw_kind & KIND_MASK;
    if kind == RECURSIVE || kind == ERRORCHECK {
        if let Some(rc) = relock_by_owner(w, kind) {
            return rc;
        }
    }
    if try_acquire(w) {
        took(w, kind & (RECURSIVE | ERRORCHECK));
        return 0;
    }
    if clock != libc::CLOCK_REALTIME && clock != libc::CLOCK_MONOTONIC {
        return libc::EINVAL;
    }
    // SAFETY: POSIX requires a valid timespec when the lock is busy.
    let deadline = unsafe { *abstime };
    if !(0..1_000_000_000).contains(&deadline.tv_nsec) {
        return libc::EINVAL;
    }
    let start = now_ticks();
    let rc = loop {
        if try_acquire(w) {
            break 0;
        }
        if crate::cond::passed(clock, &deadline) {
            break libc::ETIMEDOUT;
        }
        pause_briefly();
    };
    thread_counter().record(now_ticks().wrapping_sub(start).max(1));
    if rc == 0 {
        took(w, kind & (RECURSIVE | ERRORCHECK));
    }
    rc
}

/// Between polls of a bounded wait: a short sleep keeps the poller off a
/// core the holder may need.
fn pause_briefly() {
    let ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 20_000,
    };
    // SAFETY: `ts` is a valid timespec; a null remainder is allowed.
    unsafe { libc::nanosleep(&ts, core::ptr::null_mut()) };
}

/// Unlocks `m` for a condition wait; the error a plain unlock would give.
///
/// # Safety
/// `m` points to a live mutex.
pub(crate) unsafe fn unlock_for_wait(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: forwarding the caller's mutex.
    unsafe { pthread_mutex_unlock(m) }
}

/// Re-locks `m` after a condition wait.
///
/// # Safety
/// `m` points to a live mutex.
pub(crate) unsafe fn relock_after_wait(m: *mut libc::pthread_mutex_t) {
    // SAFETY: forwarding the caller's mutex.
    unsafe { pthread_mutex_lock(m) };
}
