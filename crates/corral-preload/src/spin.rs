//! `pthread_spin_*` on corral's test-and-test-and-set lock: a
//! `pthread_spinlock_t` is one `int`, which TTAS's single byte fits, and
//! zero is unlocked. Confined threads spin briefly, then yield, like the
//! mutexes.

use core::ffi::c_int;

use corral_locks::{RawLock, TtasLock};
use corral_runtime::registry::on_lock_attempt;
use corral_runtime::waiting::lock_contended;

#[inline]
fn lock_of<'a>(s: *mut libc::pthread_spinlock_t) -> &'a TtasLock {
    const {
        assert!(
            core::mem::size_of::<TtasLock>() <= core::mem::size_of::<libc::pthread_spinlock_t>()
        )
    };
    // SAFETY: a live, int-aligned spinlock (POSIX precondition); TTAS's
    // state is one atomic byte whose zero is unlocked.
    unsafe { &*(s as *const TtasLock) }
}

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

#[no_mangle]
pub unsafe extern "C" fn pthread_spin_destroy(_s: *mut libc::pthread_spinlock_t) -> c_int {
    0
}

#[no_mangle]
pub unsafe extern "C" fn pthread_spin_lock(s: *mut libc::pthread_spinlock_t) -> c_int {
    on_lock_attempt();
    let l = lock_of(s);
    if !l.try_lock() {
        lock_contended(l, false);
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn pthread_spin_trylock(s: *mut libc::pthread_spinlock_t) -> c_int {
    on_lock_attempt();
    if lock_of(s).try_lock() {
        0
    } else {
        libc::EBUSY
    }
}

#[no_mangle]
pub unsafe extern "C" fn pthread_spin_unlock(s: *mut libc::pthread_spinlock_t) -> c_int {
    // SAFETY: the caller holds the spin lock (POSIX precondition).
    unsafe { lock_of(s).unlock() };
    0
}
