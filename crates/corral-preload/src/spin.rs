//! `pthread_spin_*` on corral's test-and-test-and-set lock: a
//! `pthread_spinlock_t` is one `int`, which TTAS's single byte fits, and
//! zero is unlocked. Waiters spin briefly, then sleep in backed-off steps
//! (the lock has no room for parking words).

use core::ffi::c_int;

use corral_locks::{RawLock, TtasLock};
use corral_runtime::abi::lock_kind;
use corral_runtime::registry::on_lock_attempt;

/// The TTAS lock laid over the spin lock at `s`.
///
/// # Safety
/// `s` points to a live `pthread_spinlock_t` that outlives `'a`.
#[inline]
unsafe fn lock_of<'a>(s: *mut libc::pthread_spinlock_t) -> &'a TtasLock {
    const {
        assert!(
            core::mem::size_of::<TtasLock>() <= core::mem::size_of::<libc::pthread_spinlock_t>()
        )
    };
    // SAFETY: the function's contract; TTAS's state is one atomic byte
    // whose zero is unlocked, inside the int-aligned spin lock.
    unsafe { &*(s as *const TtasLock) }
}

/// POSIX `pthread_spin_init` on corral's locks.
///
/// # Safety
/// `s` points to writable storage for a spin lock.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_init(
    s: *mut libc::pthread_spinlock_t,
    _pshared: c_int,
) -> c_int {
    // SAFETY: `s` points to writable storage for a spinlock; one atomic
    // byte works across processes too.
    unsafe { s.write(0) };
    0
}

/// POSIX `pthread_spin_destroy` on corral's locks.
///
/// # Safety
/// `s` points to a live spin lock; unlock only by its holder.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_destroy(_s: *mut libc::pthread_spinlock_t) -> c_int {
    0
}

/// POSIX `pthread_spin_lock` on corral's locks.
///
/// # Safety
/// `s` points to a live spin lock; unlock only by its holder.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_lock(s: *mut libc::pthread_spinlock_t) -> c_int {
    on_lock_attempt();
    // SAFETY: `s` is live (this function's contract).
    let l = unsafe { lock_of(s) };
    if !l.try_lock() {
        crate::profiled::wait_for(l, false, None, None, s as usize, lock_kind::SPIN);
    }
    0
}

/// POSIX `pthread_spin_trylock` on corral's locks.
///
/// # Safety
/// `s` points to a live spin lock; unlock only by its holder.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_trylock(s: *mut libc::pthread_spinlock_t) -> c_int {
    on_lock_attempt();
    // SAFETY: `s` is live (this function's contract).
    if unsafe { lock_of(s) }.try_lock() {
        0
    } else {
        libc::EBUSY
    }
}

/// POSIX `pthread_spin_unlock` on corral's locks.
///
/// # Safety
/// `s` points to a live spin lock; unlock only by its holder.
#[no_mangle]
pub unsafe extern "C" fn pthread_spin_unlock(s: *mut libc::pthread_spinlock_t) -> c_int {
    // SAFETY: the caller holds the spin lock (POSIX precondition).
    unsafe { lock_of(s).unlock() };
    0
}
