//! `pthread_mutex_*` on corral's locks, keeping POSIX's contracts: static
//! initialisers, recursive and error-checking types, EBUSY / ETIMEDOUT /
//! EDEADLK / EPERM. Each entry point sends glibc's own mutexes back to
//! glibc and the rest to [`crate::mutex_core`].

use core::ffi::c_int;

use crate::glibc::real;
use crate::mutex_core::{self, corral_mutex};

/// POSIX `pthread_mutex_init` on corral's locks.
///
/// # Safety
/// `m` points to writable storage for a mutex; `attr` is null or a valid attribute object.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_init(
    m: *mut libc::pthread_mutex_t,
    attr: *const libc::pthread_mutexattr_t,
) -> c_int {
    let mut ty = 0;
    if !attr.is_null() {
        let (mut pshared, mut robust, mut proto) = (0, 0, 0);
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
    }
    // SAFETY: `m` points to writable storage for a mutex (POSIX precondition).
    unsafe { mutex_core::init(m, ty) };
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
/// `m` points to a live mutex (POSIX's precondition).
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_destroy(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: `m` is a live mutex (this function's contract).
    match unsafe { corral_mutex(m) } {
        Some(mx) if mx.is_locked() => libc::EBUSY,
        Some(_) => 0,
        // SAFETY: forwarding to glibc, which owns this mutex's layout.
        None => unsafe { (real().mutex_destroy)(m) },
    }
}

/// POSIX `pthread_mutex_lock` on corral's locks.
///
/// # Safety
/// `m` points to a live mutex (POSIX's precondition).
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: `m` is a live mutex (this function's contract).
    unsafe { mutex_core::lock(m) }
}

/// POSIX `pthread_mutex_trylock` on corral's locks.
///
/// # Safety
/// `m` points to a live mutex (POSIX's precondition).
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_trylock(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: `m` is a live mutex (this function's contract).
    unsafe { mutex_core::try_lock(m) }
}

/// POSIX `pthread_mutex_unlock` on corral's locks.
///
/// # Safety
/// `m` points to a live mutex (POSIX's precondition).
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: `m` is a live mutex (this function's contract).
    unsafe { mutex_core::unlock(m) }
}

/// POSIX `pthread_mutex_timedlock` on corral's locks.
///
/// # Safety
/// `m` points to a live mutex (POSIX's precondition); `abstime` to a valid
/// timespec.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_timedlock(
    m: *mut libc::pthread_mutex_t,
    abstime: *const libc::timespec,
) -> c_int {
    // SAFETY: `m` is a live mutex (this function's contract).
    match unsafe { corral_mutex(m) } {
        // SAFETY: `abstime` is valid (this function's contract).
        Some(mx) => unsafe { mx.lock_until(libc::CLOCK_REALTIME, abstime) },
        // SAFETY: forwarding to glibc, which owns this mutex's layout.
        None => unsafe { (real().mutex_timedlock)(m, abstime) },
    }
}

/// POSIX `pthread_mutex_clocklock` on corral's locks.
///
/// # Safety
/// `m` points to a live mutex (POSIX's precondition); `abstime` to a valid
/// timespec.
#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_clocklock(
    m: *mut libc::pthread_mutex_t,
    clock: libc::clockid_t,
    abstime: *const libc::timespec,
) -> c_int {
    // SAFETY: `m` is a live mutex (this function's contract).
    match unsafe { corral_mutex(m) } {
        // SAFETY: `abstime` is valid (this function's contract).
        Some(mx) => unsafe { mx.lock_until(clock, abstime) },
        // SAFETY: forwarding to glibc, which owns this mutex's layout.
        None => unsafe { (real().mutex_clocklock)(m, clock, abstime) },
    }
}
