//! `pthread_cond_*` that work with corral's mutexes: glibc's own condition
//! variable unlocks and relocks the mutex internally, bypassing the
//! interposed entry points, so every condvar entry point is replaced by a
//! futex sequence counter stored in the caller's `pthread_cond_t`.

use core::ffi::c_int;
use core::sync::atomic::{AtomicU32, Ordering};

use crate::mutex::{relock_after_wait, unlock_for_wait};

/// corral's view of a `pthread_cond_t` (48 bytes; all zero is
/// `PTHREAD_COND_INITIALIZER`: realtime clock, process-private).
#[repr(C)]
struct CondWords {
    /// Bumped by every signal and broadcast; waiters sleep on it.
    seq: AtomicU32,
    /// [`FLAG_MONOTONIC`] | [`FLAG_SHARED`].
    flags: AtomicU32,
}

const FLAG_MONOTONIC: u32 = 1;
const FLAG_SHARED: u32 = 2;

const _: () =
    assert!(core::mem::size_of::<CondWords>() <= core::mem::size_of::<libc::pthread_cond_t>());

/// corral's view of the condition variable at `c`.
///
/// # Safety
/// `c` points to a live `pthread_cond_t` that outlives `'a`.
#[inline]
unsafe fn words<'a>(c: *mut libc::pthread_cond_t) -> &'a CondWords {
    // SAFETY: the function's contract; the fields are atomics.
    unsafe { &*(c as *const CondWords) }
}

fn futex_op(flags: u32, op: c_int) -> c_int {
    if flags & FLAG_SHARED != 0 {
        op
    } else {
        op | libc::FUTEX_PRIVATE_FLAG
    }
}

/// POSIX `pthread_cond_init` on corral's locks.
///
/// # Safety
/// `c` points to writable storage for a condition variable; `attr` is null or valid.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_init(
    c: *mut libc::pthread_cond_t,
    attr: *const libc::pthread_condattr_t,
) -> c_int {
    let mut flags = 0;
    if !attr.is_null() {
        let (mut clock, mut pshared) = (libc::CLOCK_REALTIME, libc::PTHREAD_PROCESS_PRIVATE);
        // SAFETY: `attr` is a valid attribute object (POSIX precondition).
        unsafe {
            libc::pthread_condattr_getclock(attr, &mut clock);
            libc::pthread_condattr_getpshared(attr, &mut pshared);
        }
        if clock == libc::CLOCK_MONOTONIC {
            flags |= FLAG_MONOTONIC;
        }
        if pshared != libc::PTHREAD_PROCESS_PRIVATE {
            flags |= FLAG_SHARED;
        }
    }
    // SAFETY: `c` points to writable storage for a condvar.
    unsafe { core::ptr::write_bytes(c, 0, 1) };
    // SAFETY: `c` now holds an initialised condition variable.
    let w = unsafe { words(c) };
    w.flags.store(flags, Ordering::Relaxed); // Relaxed: init happens before sharing.
    0
}

/// POSIX `pthread_cond_destroy` on corral's locks.
///
/// # Safety
/// `c` points to a live condition variable and `m`, where given, to a mutex the caller holds; a timespec argument is valid.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_destroy(_c: *mut libc::pthread_cond_t) -> c_int {
    0
}

/// POSIX `pthread_cond_signal` on corral's locks.
///
/// # Safety
/// `c` points to a live condition variable and `m`, where given, to a mutex the caller holds; a timespec argument is valid.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut libc::pthread_cond_t) -> c_int {
    // SAFETY: `c` is live (this function's contract).
    unsafe { wake(c, 1) }
}

/// POSIX `pthread_cond_broadcast` on corral's locks.
///
/// # Safety
/// `c` points to a live condition variable and `m`, where given, to a mutex the caller holds; a timespec argument is valid.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut libc::pthread_cond_t) -> c_int {
    // SAFETY: `c` is live (this function's contract).
    unsafe { wake(c, i32::MAX) }
}

/// Wakes up to `n` waiters of `c`.
///
/// # Safety
/// `c` points to a live condition variable.
unsafe fn wake(c: *mut libc::pthread_cond_t, n: i32) -> c_int {
    // SAFETY: the function's contract.
    let w = unsafe { words(c) };
    // Release: a waiter that sees the new value sees what preceded the signal.
    w.seq.fetch_add(1, Ordering::Release);
    let op = futex_op(w.flags.load(Ordering::Relaxed), libc::FUTEX_WAKE);
    // SAFETY: FUTEX_WAKE only uses the address as a key.
    unsafe { libc::syscall(libc::SYS_futex, w.seq.as_ptr(), op, n) };
    0
}

/// POSIX `pthread_cond_wait` on corral's locks.
///
/// # Safety
/// `c` points to a live condition variable and `m`, where given, to a mutex the caller holds; a timespec argument is valid.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_wait(
    c: *mut libc::pthread_cond_t,
    m: *mut libc::pthread_mutex_t,
) -> c_int {
    // SAFETY: forwarding this function's contract.
    unsafe { wait(c, m, None) }
}

/// POSIX `pthread_cond_timedwait` on corral's locks.
///
/// # Safety
/// `c` points to a live condition variable and `m`, where given, to a mutex the caller holds; a timespec argument is valid.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_timedwait(
    c: *mut libc::pthread_cond_t,
    m: *mut libc::pthread_mutex_t,
    abstime: *const libc::timespec,
) -> c_int {
    // SAFETY: `c` is live (this function's contract).
    let clock = if unsafe { words(c) }.flags.load(Ordering::Relaxed) & FLAG_MONOTONIC != 0 {
        libc::CLOCK_MONOTONIC
    } else {
        libc::CLOCK_REALTIME
    };
    // SAFETY: forwarding this function's contract (a valid timespec).
    unsafe { wait(c, m, Some((clock, *abstime))) }
}

/// POSIX `pthread_cond_clockwait` on corral's locks.
///
/// # Safety
/// `c` points to a live condition variable and `m`, where given, to a mutex the caller holds; a timespec argument is valid.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_clockwait(
    c: *mut libc::pthread_cond_t,
    m: *mut libc::pthread_mutex_t,
    clock: libc::clockid_t,
    abstime: *const libc::timespec,
) -> c_int {
    if clock != libc::CLOCK_REALTIME && clock != libc::CLOCK_MONOTONIC {
        return libc::EINVAL;
    }
    // SAFETY: forwarding this function's contract (a valid timespec).
    unsafe { wait(c, m, Some((clock, *abstime))) }
}

/// Atomically (with respect to signallers, who bump `seq` after changing
/// the predicate under the mutex) releases `m`, sleeps until a signal or
/// the deadline, and re-acquires `m`. Spurious wake-ups are allowed.
///
/// # Safety
/// `c` points to a live condition variable and `m` to a mutex the caller
/// holds.
unsafe fn wait(
    c: *mut libc::pthread_cond_t,
    m: *mut libc::pthread_mutex_t,
    deadline: Option<(libc::clockid_t, libc::timespec)>,
) -> c_int {
    if let Some((_, ts)) = deadline {
        if !(0..1_000_000_000).contains(&ts.tv_nsec) {
            return libc::EINVAL;
        }
    }
    // SAFETY: the function's contract.
    let w = unsafe { words(c) };
    // Relaxed: read before the unlock; the mutex orders it after the
    // caller's predicate check.
    let seq = w.seq.load(Ordering::Relaxed);
    // SAFETY: `m` is a mutex the caller holds.
    let rc = unsafe { unlock_for_wait(m) };
    if rc != 0 {
        return rc;
    }
    let flags = w.flags.load(Ordering::Relaxed);
    let mut timed_out = false;
    match deadline {
        None => {
            let op = futex_op(flags, libc::FUTEX_WAIT);
            // SAFETY: FUTEX_WAIT reads the aligned u32 `seq`, live for the
            // call; no timeout.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    w.seq.as_ptr(),
                    op,
                    seq,
                    core::ptr::null::<libc::timespec>(),
                )
            };
        }
        Some((clock, ts)) => {
            let mut op = futex_op(flags, libc::FUTEX_WAIT_BITSET);
            if clock == libc::CLOCK_REALTIME {
                op |= libc::FUTEX_CLOCK_REALTIME;
            }
            let ts = if ts.tv_sec < 0 {
                libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                }
            } else {
                ts
            };
            // SAFETY: as above, with an absolute timeout on `clock`.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    w.seq.as_ptr(),
                    op,
                    seq,
                    &ts as *const libc::timespec,
                    0usize,
                    u32::MAX,
                )
            };
            // SAFETY: reading errno right after the call.
            timed_out = r != 0 && unsafe { *libc::__errno_location() } == libc::ETIMEDOUT;
            if !timed_out && passed(clock, &ts) && w.seq.load(Ordering::Relaxed) == seq {
                timed_out = true;
            }
        }
    }
    // SAFETY: `m` is the live mutex released above.
    unsafe { relock_after_wait(m) };
    if timed_out {
        libc::ETIMEDOUT
    } else {
        0
    }
}

/// Whether `deadline` on `clock` has passed.
pub(crate) fn passed(clock: libc::clockid_t, deadline: &libc::timespec) -> bool {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec.
    unsafe { libc::clock_gettime(clock, &mut now) };
    (now.tv_sec, now.tv_nsec) >= (deadline.tv_sec, deadline.tv_nsec)
}
