//! `pthread_rwlock_*` on corral's reader-writer lock ([`RwLock`]), keeping
//! glibc's contracts: its three kinds (the default prefers readers, so
//! recursive read locks never deadlock), EBUSY / EDEADLK / ETIMEDOUT /
//! EINVAL / EAGAIN, the static initialisers. A contended acquisition, read
//! or write, is a lock wait of the thread, counted as a mutex's is.
//! `CORRAL_LOCK` does not apply: its algorithms are mutexes, and a rwlock's
//! waiters always sleep on futexes. Process-shared rwlocks are left to
//! glibc, as process-shared mutexes are.

use core::ffi::c_int;
use core::sync::atomic::{AtomicI32, Ordering};

use corral_locks::wait::record_wait;
use corral_locks::{RwDeadline, RwError, RwLock, RwPreference};
use corral_runtime::abi::lock_kind;
use corral_runtime::registry::{current_tid, on_lock_attempt};

use crate::deadline::Deadline;
use crate::glibc::real;

/// corral's view of a `pthread_rwlock_t` (56 bytes; glibc's
/// `__pthread_rwlock_arch_t` on x86-64 and aarch64). The two glibc fields
/// corral reads keep their places: `__shared`, which glibc's init sets in
/// a process-shared rwlock only, and `__flags`, the kind, which is the
/// lock's preference word. Static initialisers zero the rest.
#[repr(C)]
struct RwLockWords {
    /// glibc's `__readers` .. `__cur_writer`: zero in corral's rwlocks.
    _head: [u32; 7],
    /// glibc's `__shared`: non-zero marks a rwlock glibc owns.
    shared: AtomicI32,
    /// glibc's `__rwelision` and padding.
    _elision: u32,
    /// corral's lock; its last word is glibc's `__flags`.
    lock: RwLock,
    _tail: u32,
}

const _: () =
    assert!(core::mem::size_of::<RwLockWords>() == core::mem::size_of::<libc::pthread_rwlock_t>());
const _: () = assert!(core::mem::offset_of!(RwLockWords, shared) == 28);
const _: () = assert!(core::mem::offset_of!(RwLockWords, lock) + RwLock::KIND_OFFSET == 48);

/// The rwlock at `rw` if it runs on corral's lock; `None` if it is
/// glibc's. Every entry point but init begins here.
///
/// # Safety
/// `rw` points to a live `pthread_rwlock_t` that outlives `'a` (POSIX's
/// precondition on every rwlock call).
#[inline]
unsafe fn corral_rwlock<'a>(rw: *mut libc::pthread_rwlock_t) -> Option<&'a RwLock> {
    // SAFETY: the function's contract; RwLockWords has the rwlock's size,
    // and the fields touched concurrently are atomics.
    let w = unsafe { &*(rw as *const RwLockWords) };
    // Relaxed: fixed since init.
    (w.shared.load(Ordering::Relaxed) == 0).then_some(&w.lock)
}

/// POSIX `pthread_rwlock_init` on corral's lock.
///
/// # Safety
/// `rw` points to writable storage for a rwlock; `attr` is null or a valid
/// attribute object.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_init(
    rw: *mut libc::pthread_rwlock_t,
    attr: *const libc::pthread_rwlockattr_t,
) -> c_int {
    let mut kind = 0;
    if !attr.is_null() {
        let mut pshared = libc::PTHREAD_PROCESS_PRIVATE;
        // SAFETY: `attr` is a valid attribute object (POSIX precondition).
        unsafe {
            libc::pthread_rwlockattr_getpshared(attr, &mut pshared);
            libc::pthread_rwlockattr_getkind_np(attr, &mut kind);
        }
        if pshared != libc::PTHREAD_PROCESS_PRIVATE {
            // SAFETY: forwarding the caller's valid arguments to glibc.
            return unsafe { (real().rwlock_init)(rw, attr) };
        }
    }
    let w = rw.cast::<RwLockWords>();
    // SAFETY: `rw` points to writable storage for a rwlock, not shared yet.
    unsafe {
        core::ptr::write_bytes(rw, 0, 1);
        core::ptr::addr_of_mut!((*w).lock).write(RwLock::new(RwPreference::from_kind(kind as u32)));
    }
    0
}

/// POSIX `pthread_rwlock_destroy` on corral's lock (nothing to do, and no
/// check, as in glibc).
///
/// # Safety
/// `rw` points to a live rwlock (POSIX's precondition).
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_destroy(rw: *mut libc::pthread_rwlock_t) -> c_int {
    // SAFETY: `rw` is a live rwlock (this function's contract).
    match unsafe { corral_rwlock(rw) } {
        Some(_) => 0,
        // SAFETY: forwarding to glibc, which owns this rwlock's layout.
        None => unsafe { (real().rwlock_destroy)(rw) },
    }
}

/// POSIX `pthread_rwlock_rdlock` on corral's lock.
///
/// # Safety
/// `rw` points to a live rwlock (POSIX's precondition).
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_rdlock(rw: *mut libc::pthread_rwlock_t) -> c_int {
    // SAFETY: `rw` is a live rwlock (this function's contract).
    match unsafe { corral_rwlock(rw) } {
        Some(l) => rdlock(l, None),
        // SAFETY: forwarding to glibc, which owns this rwlock's layout.
        None => unsafe { (real().rwlock_rdlock)(rw) },
    }
}

/// POSIX `pthread_rwlock_tryrdlock` on corral's lock.
///
/// # Safety
/// `rw` points to a live rwlock (POSIX's precondition).
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_tryrdlock(rw: *mut libc::pthread_rwlock_t) -> c_int {
    // SAFETY: `rw` is a live rwlock (this function's contract).
    match unsafe { corral_rwlock(rw) } {
        Some(l) => {
            on_lock_attempt();
            code(l.try_read())
        }
        // SAFETY: forwarding to glibc, which owns this rwlock's layout.
        None => unsafe { (real().rwlock_tryrdlock)(rw) },
    }
}

/// POSIX `pthread_rwlock_timedrdlock` on corral's lock.
///
/// # Safety
/// `rw` points to a live rwlock (POSIX's precondition); `abstime` to a
/// valid timespec.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_timedrdlock(
    rw: *mut libc::pthread_rwlock_t,
    abstime: *const libc::timespec,
) -> c_int {
    // SAFETY: `rw` is a live rwlock (this function's contract).
    match unsafe { corral_rwlock(rw) } {
        // SAFETY: `abstime` is valid (this function's contract).
        Some(l) => match unsafe { deadline(libc::CLOCK_REALTIME, abstime) } {
            Ok(d) => rdlock(l, Some(d)),
            Err(rc) => rc,
        },
        // SAFETY: forwarding to glibc, which owns this rwlock's layout.
        None => unsafe { (real().rwlock_timedrdlock)(rw, abstime) },
    }
}

/// POSIX `pthread_rwlock_clockrdlock` on corral's lock.
///
/// # Safety
/// `rw` points to a live rwlock (POSIX's precondition); `abstime` to a
/// valid timespec.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_clockrdlock(
    rw: *mut libc::pthread_rwlock_t,
    clock: libc::clockid_t,
    abstime: *const libc::timespec,
) -> c_int {
    // SAFETY: `rw` is a live rwlock (this function's contract).
    match unsafe { corral_rwlock(rw) } {
        // SAFETY: `abstime` is valid (this function's contract).
        Some(l) => match unsafe { deadline(clock, abstime) } {
            Ok(d) => rdlock(l, Some(d)),
            Err(rc) => rc,
        },
        // SAFETY: forwarding to glibc, which owns this rwlock's layout.
        None => unsafe { (real().rwlock_clockrdlock)(rw, clock, abstime) },
    }
}

/// POSIX `pthread_rwlock_wrlock` on corral's lock.
///
/// # Safety
/// `rw` points to a live rwlock (POSIX's precondition).
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_wrlock(rw: *mut libc::pthread_rwlock_t) -> c_int {
    // SAFETY: `rw` is a live rwlock (this function's contract).
    match unsafe { corral_rwlock(rw) } {
        Some(l) => wrlock(l, None),
        // SAFETY: forwarding to glibc, which owns this rwlock's layout.
        None => unsafe { (real().rwlock_wrlock)(rw) },
    }
}

/// POSIX `pthread_rwlock_trywrlock` on corral's lock.
///
/// # Safety
/// `rw` points to a live rwlock (POSIX's precondition).
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_trywrlock(rw: *mut libc::pthread_rwlock_t) -> c_int {
    // SAFETY: `rw` is a live rwlock (this function's contract).
    match unsafe { corral_rwlock(rw) } {
        Some(l) => {
            on_lock_attempt();
            if l.try_write(current_tid()) {
                0
            } else {
                libc::EBUSY
            }
        }
        // SAFETY: forwarding to glibc, which owns this rwlock's layout.
        None => unsafe { (real().rwlock_trywrlock)(rw) },
    }
}

/// POSIX `pthread_rwlock_timedwrlock` on corral's lock.
///
/// # Safety
/// `rw` points to a live rwlock (POSIX's precondition); `abstime` to a
/// valid timespec.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_timedwrlock(
    rw: *mut libc::pthread_rwlock_t,
    abstime: *const libc::timespec,
) -> c_int {
    // SAFETY: `rw` is a live rwlock (this function's contract).
    match unsafe { corral_rwlock(rw) } {
        // SAFETY: `abstime` is valid (this function's contract).
        Some(l) => match unsafe { deadline(libc::CLOCK_REALTIME, abstime) } {
            Ok(d) => wrlock(l, Some(d)),
            Err(rc) => rc,
        },
        // SAFETY: forwarding to glibc, which owns this rwlock's layout.
        None => unsafe { (real().rwlock_timedwrlock)(rw, abstime) },
    }
}

/// POSIX `pthread_rwlock_clockwrlock` on corral's lock.
///
/// # Safety
/// `rw` points to a live rwlock (POSIX's precondition); `abstime` to a
/// valid timespec.
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_clockwrlock(
    rw: *mut libc::pthread_rwlock_t,
    clock: libc::clockid_t,
    abstime: *const libc::timespec,
) -> c_int {
    // SAFETY: `rw` is a live rwlock (this function's contract).
    match unsafe { corral_rwlock(rw) } {
        // SAFETY: `abstime` is valid (this function's contract).
        Some(l) => match unsafe { deadline(clock, abstime) } {
            Ok(d) => wrlock(l, Some(d)),
            Err(rc) => rc,
        },
        // SAFETY: forwarding to glibc, which owns this rwlock's layout.
        None => unsafe { (real().rwlock_clockwrlock)(rw, clock, abstime) },
    }
}

/// POSIX `pthread_rwlock_unlock` on corral's lock: the write lock if the
/// caller holds it, else one of its read locks (glibc's rule).
///
/// # Safety
/// `rw` points to a live rwlock the caller holds (POSIX's precondition).
#[no_mangle]
pub unsafe extern "C" fn pthread_rwlock_unlock(rw: *mut libc::pthread_rwlock_t) -> c_int {
    // SAFETY: `rw` is a live rwlock (this function's contract).
    match unsafe { corral_rwlock(rw) } {
        // SAFETY: the caller holds the lock (this function's contract).
        Some(l) => code(unsafe { l.release(current_tid) }),
        // SAFETY: forwarding to glibc, which owns this rwlock's layout.
        None => unsafe { (real().rwlock_unlock)(rw) },
    }
}

/// The deadline of a timed lock, checked before anything else (EINVAL for
/// another clock or a bad nanosecond field), as glibc does.
///
/// # Safety
/// `abstime` points to a valid timespec where `clock` is valid.
#[inline]
unsafe fn deadline(
    clock: libc::clockid_t,
    abstime: *const libc::timespec,
) -> Result<RwDeadline, c_int> {
    // SAFETY: the function's contract.
    unsafe { Deadline::read(clock, abstime) }.map(|d| (d.clock, d.at))
}

/// A read lock: a try, then EDEADLK for the write holder, as glibc's (it
/// always finds the lock busy, so a free lock costs no thread-id read),
/// then a counted wait.
#[inline]
fn rdlock(l: &RwLock, deadline: Option<RwDeadline>) -> c_int {
    on_lock_attempt();
    match l.try_read() {
        Err(RwError::Busy) => read_waiting(l, deadline),
        done => code(done),
    }
}

#[cold]
fn read_waiting(l: &RwLock, deadline: Option<RwDeadline>) -> c_int {
    if l.is_writer(current_tid()) {
        return libc::EDEADLK;
    }
    code(crate::profiled::timed(
        rw_addr(l),
        lock_kind::RW_READ,
        || record_wait(|| l.read_contended(deadline)),
    ))
}

/// The write lock: a try, then EDEADLK for its holder, as glibc's, then
/// a counted wait.
#[inline]
fn wrlock(l: &RwLock, deadline: Option<RwDeadline>) -> c_int {
    on_lock_attempt();
    let me = current_tid();
    if l.try_write(me) {
        return 0;
    }
    write_waiting(l, me, deadline)
}

#[cold]
fn write_waiting(l: &RwLock, me: i32, deadline: Option<RwDeadline>) -> c_int {
    if l.is_writer(me) {
        return libc::EDEADLK;
    }
    code(crate::profiled::timed(
        rw_addr(l),
        lock_kind::RW_WRITE,
        || record_wait(|| l.write_contended(me, deadline)),
    ))
}

/// The address of the `pthread_rwlock_t` whose lock is `l`.
fn rw_addr(l: &RwLock) -> usize {
    l as *const RwLock as usize - core::mem::offset_of!(RwLockWords, lock)
}

#[inline]
fn code(result: Result<(), RwError>) -> c_int {
    match result {
        Ok(()) => 0,
        Err(e) => e.errno(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_locks::wait::{set_thread_counter, thread_counter, WaitCounter};

    fn zeroed() -> libc::pthread_rwlock_t {
        // SAFETY: all-zero bytes are PTHREAD_RWLOCK_INITIALIZER.
        unsafe { core::mem::zeroed() }
    }

    #[test]
    fn glibc_initialisers_and_attributes_pick_the_owner_and_kind() {
        let mut rw = zeroed();
        // SAFETY: a live rwlock on this stack.
        let l = unsafe { corral_rwlock(&mut rw) }.unwrap();
        assert_eq!(l.preference(), RwPreference::Reader);
        // PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP: the kind at `__flags`.
        let mut rw = zeroed();
        // SAFETY: offset 48 lies inside the 56-byte rwlock.
        unsafe {
            (&mut rw as *mut _ as *mut u8)
                .add(48)
                .cast::<u32>()
                .write(2)
        };
        // SAFETY: a live rwlock on this stack.
        let l = unsafe { corral_rwlock(&mut rw) }.unwrap();
        assert_eq!(l.preference(), RwPreference::WriterNonrecursive);

        // SAFETY: plain attribute calls on a live attribute object.
        unsafe {
            let mut attr: libc::pthread_rwlockattr_t = core::mem::zeroed();
            libc::pthread_rwlockattr_init(&mut attr);
            libc::pthread_rwlockattr_setkind_np(&mut attr, 1);
            assert_eq!(pthread_rwlock_init(&mut rw, &attr), 0);
            assert_eq!(
                corral_rwlock(&mut rw).unwrap().preference(),
                RwPreference::Writer
            );
            libc::pthread_rwlockattr_setpshared(&mut attr, libc::PTHREAD_PROCESS_SHARED);
            assert_eq!(pthread_rwlock_init(&mut rw, &attr), 0);
            assert!(
                corral_rwlock(&mut rw).is_none(),
                "process-shared stays glibc's"
            );
            assert_eq!(pthread_rwlock_wrlock(&mut rw), 0);
            assert_eq!(pthread_rwlock_trywrlock(&mut rw), libc::EBUSY);
            assert_eq!(pthread_rwlock_unlock(&mut rw), 0);
            assert_eq!(pthread_rwlock_destroy(&mut rw), 0);
            libc::pthread_rwlockattr_destroy(&mut attr);
        }
    }

    type RwFn = unsafe extern "C" fn(*mut libc::pthread_rwlock_t) -> c_int;

    /// Holds `first` on this thread while another thread blocks in `then`;
    /// returns the waits each recorded.
    fn blocked(first: RwFn, then: RwFn) -> (u64, u64) {
        // Leaked: the rwlock outlives both threads.
        let rw = Box::into_raw(Box::new(zeroed())) as usize;
        let lock = move || rw as *mut libc::pthread_rwlock_t;
        // SAFETY: `lock()` is a live rwlock; every unlock follows a lock
        // of the same thread.
        unsafe {
            assert_eq!(first(lock()), 0);
            thread_counter().take();
            let other = std::thread::scope(|s| {
                let t = s.spawn(|| {
                    assert_eq!(pthread_rwlock_trywrlock(lock()), libc::EBUSY);
                    // A counter of its own, past the registry's: a monitor
                    // running in this test process would claim the wait
                    // from its slot's counter while it lasts.
                    let theirs: &'static WaitCounter = Box::leak(Box::new(WaitCounter::new()));
                    set_thread_counter(theirs);
                    assert_eq!(then(lock()), 0);
                    let (_, waits) = theirs.take();
                    assert_eq!(pthread_rwlock_unlock(lock()), 0);
                    waits
                });
                std::thread::sleep(std::time::Duration::from_millis(30));
                assert_eq!(pthread_rwlock_unlock(lock()), 0);
                t.join().unwrap()
            });
            (thread_counter().take().1, other)
        }
    }

    /// A blocked reader and a blocked writer each record one wait, as a
    /// blocked mutex locker does; the uncontended holder records none.
    #[test]
    fn contended_reads_and_writes_are_counted_as_waits() {
        assert_eq!(
            blocked(pthread_rwlock_wrlock, pthread_rwlock_rdlock),
            (0, 1)
        );
        assert_eq!(
            blocked(pthread_rwlock_rdlock, pthread_rwlock_wrlock),
            (0, 1)
        );
        assert_eq!(
            blocked(pthread_rwlock_wrlock, pthread_rwlock_wrlock),
            (0, 1)
        );
    }
}
