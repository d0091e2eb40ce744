//! glibc's own lock functions, for what corral leaves to glibc: mutexes
//! and rwlocks that are process-shared, robust or priority-protocol, and
//! the condition variables that are process-shared or in a process whose
//! mutexes keep glibc's layout ([`crate::cond`]).

use core::ffi::c_int;
use std::sync::OnceLock;

type MutexFn = unsafe extern "C" fn(*mut libc::pthread_mutex_t) -> c_int;
type InitFn =
    unsafe extern "C" fn(*mut libc::pthread_mutex_t, *const libc::pthread_mutexattr_t) -> c_int;
type TimedFn = unsafe extern "C" fn(*mut libc::pthread_mutex_t, *const libc::timespec) -> c_int;
type ClockFn = unsafe extern "C" fn(
    *mut libc::pthread_mutex_t,
    libc::clockid_t,
    *const libc::timespec,
) -> c_int;

type CondFn = unsafe extern "C" fn(*mut libc::pthread_cond_t) -> c_int;
type CondInitFn =
    unsafe extern "C" fn(*mut libc::pthread_cond_t, *const libc::pthread_condattr_t) -> c_int;
type CondWaitFn =
    unsafe extern "C" fn(*mut libc::pthread_cond_t, *mut libc::pthread_mutex_t) -> c_int;
type CondTimedFn = unsafe extern "C" fn(
    *mut libc::pthread_cond_t,
    *mut libc::pthread_mutex_t,
    *const libc::timespec,
) -> c_int;
type CondClockFn = unsafe extern "C" fn(
    *mut libc::pthread_cond_t,
    *mut libc::pthread_mutex_t,
    libc::clockid_t,
    *const libc::timespec,
) -> c_int;

type RwFn = unsafe extern "C" fn(*mut libc::pthread_rwlock_t) -> c_int;
type RwInitFn =
    unsafe extern "C" fn(*mut libc::pthread_rwlock_t, *const libc::pthread_rwlockattr_t) -> c_int;
type RwTimedFn = unsafe extern "C" fn(*mut libc::pthread_rwlock_t, *const libc::timespec) -> c_int;
type RwClockFn = unsafe extern "C" fn(
    *mut libc::pthread_rwlock_t,
    libc::clockid_t,
    *const libc::timespec,
) -> c_int;

/// glibc's mutex, condition variable and rwlock entry points, found past
/// this library with `RTLD_NEXT` (each name's default version: the
/// condition variable of glibc 2.3.2 and later).
pub(crate) struct Real {
    pub(crate) mutex_init: InitFn,
    pub(crate) mutex_destroy: MutexFn,
    pub(crate) mutex_lock: MutexFn,
    pub(crate) mutex_trylock: MutexFn,
    pub(crate) mutex_unlock: MutexFn,
    pub(crate) mutex_timedlock: TimedFn,
    pub(crate) mutex_clocklock: ClockFn,
    pub(crate) cond_init: CondInitFn,
    pub(crate) cond_destroy: CondFn,
    pub(crate) cond_signal: CondFn,
    pub(crate) cond_broadcast: CondFn,
    pub(crate) cond_wait: CondWaitFn,
    pub(crate) cond_timedwait: CondTimedFn,
    pub(crate) cond_clockwait: CondClockFn,
    pub(crate) rwlock_init: RwInitFn,
    pub(crate) rwlock_destroy: RwFn,
    pub(crate) rwlock_rdlock: RwFn,
    pub(crate) rwlock_tryrdlock: RwFn,
    pub(crate) rwlock_timedrdlock: RwTimedFn,
    pub(crate) rwlock_clockrdlock: RwClockFn,
    pub(crate) rwlock_wrlock: RwFn,
    pub(crate) rwlock_trywrlock: RwFn,
    pub(crate) rwlock_timedwrlock: RwTimedFn,
    pub(crate) rwlock_clockwrlock: RwClockFn,
    pub(crate) rwlock_unlock: RwFn,
}

static REAL: OnceLock<Real> = OnceLock::new();

/// glibc's functions; resolved when the process makes its second thread
/// (or at a single-threaded process's first lock glibc keeps), so that a
/// threaded process's lock calls never enter the dynamic linker (which may
/// allocate).
pub(crate) fn real() -> &'static Real {
    REAL.get_or_init(resolve)
}

fn resolve() -> Real {
    /// glibc's function `name`, as `F`.
    ///
    /// # Safety
    /// `F` is a function-pointer type of exactly `name`'s signature.
    unsafe fn sym<F: Copy>(name: &core::ffi::CStr) -> F {
        const { assert!(core::mem::size_of::<F>() == core::mem::size_of::<*mut libc::c_void>()) };
        // SAFETY: a NUL-terminated name; RTLD_NEXT searches past this library.
        let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
        if p.is_null() {
            corral_runtime::channel::say("corral: cannot find glibc's pthread lock functions");
            // SAFETY: abort has no preconditions and does not return.
            unsafe { libc::abort() }
        }
        // SAFETY: the caller's contract; `F` is pointer-sized (checked above).
        unsafe { core::mem::transmute_copy::<*mut libc::c_void, F>(&p) }
    }
    // SAFETY: each symbol is glibc's function of exactly the signature of
    // the field it fills (`sym`'s `F`, inferred from the field).
    unsafe {
        Real {
            mutex_init: sym(c"pthread_mutex_init"),
            mutex_destroy: sym(c"pthread_mutex_destroy"),
            mutex_lock: sym(c"pthread_mutex_lock"),
            mutex_trylock: sym(c"pthread_mutex_trylock"),
            mutex_unlock: sym(c"pthread_mutex_unlock"),
            mutex_timedlock: sym(c"pthread_mutex_timedlock"),
            mutex_clocklock: sym(c"pthread_mutex_clocklock"),
            cond_init: sym(c"pthread_cond_init"),
            cond_destroy: sym(c"pthread_cond_destroy"),
            cond_signal: sym(c"pthread_cond_signal"),
            cond_broadcast: sym(c"pthread_cond_broadcast"),
            cond_wait: sym(c"pthread_cond_wait"),
            cond_timedwait: sym(c"pthread_cond_timedwait"),
            cond_clockwait: sym(c"pthread_cond_clockwait"),
            rwlock_init: sym(c"pthread_rwlock_init"),
            rwlock_destroy: sym(c"pthread_rwlock_destroy"),
            rwlock_rdlock: sym(c"pthread_rwlock_rdlock"),
            rwlock_tryrdlock: sym(c"pthread_rwlock_tryrdlock"),
            rwlock_timedrdlock: sym(c"pthread_rwlock_timedrdlock"),
            rwlock_clockrdlock: sym(c"pthread_rwlock_clockrdlock"),
            rwlock_wrlock: sym(c"pthread_rwlock_wrlock"),
            rwlock_trywrlock: sym(c"pthread_rwlock_trywrlock"),
            rwlock_timedwrlock: sym(c"pthread_rwlock_timedwrlock"),
            rwlock_clockwrlock: sym(c"pthread_rwlock_clockwrlock"),
            rwlock_unlock: sym(c"pthread_rwlock_unlock"),
        }
    }
}
