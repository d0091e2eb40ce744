//! `pthread_cond_*`. A process whose lock algorithm parks (futex,
//! adaptive: the default) keeps glibc's own condition variables: its
//! mutexes have glibc's layout (`mutex_words`' `Layout::Glibc`), which is
//! all glibc's condition variable needs to unlock and relock them inside
//! its wait. Each entry point then goes straight to glibc's. With corral's
//! own condition variable the default lost to glibc where threads
//! outnumber CPUs, by the scheduling it led to rather than by its own
//! cost: on one CPU, pigz -p 16 took 9% longer and git grep at 4 threads
//! 3%, and a producer-consumer queue made about 2.5 times glibc's context
//! switches for the same work.
//!
//! A spinning algorithm's mutex is not glibc's, and glibc's condition
//! variable would bypass the interposed entry points when it unlocks and
//! relocks it: there every entry point is replaced by a futex sequence
//! counter stored in the caller's `pthread_cond_t`.
//!
//! A signal makes a system call only while some waiter is asleep and not
//! yet woken: the waker takes the threads it woke out of the count itself,
//! at once, rather than waiting for them to run. With the count kept by the
//! woken threads (as before), a producer that signals per item made a
//! futex call for each item until its consumer got the CPU back: 4 of 5
//! signals woke nobody (tests/c/prodcons.c: 55,000 futex calls against
//! glibc's 14,000, twice its CPU time).

use core::ffi::c_int;
use core::sync::atomic::{AtomicU32, Ordering};

use corral_locks::sys::clock::DeadlineClock;
use corral_locks::sys::futex::{self, Sharing, WaitResult};

use crate::deadline::Deadline;
use crate::glibc::real;
use crate::{lockdispatch, mutex_core};

/// corral's view of a `pthread_cond_t` (48 bytes; all zero is
/// `PTHREAD_COND_INITIALIZER`: realtime clock, process-private).
#[repr(C)]
struct CondWords {
    /// Bumped by every signal and broadcast; waiters sleep on it.
    seq: AtomicU32,
    /// [`FLAG_MONOTONIC`] | [`FLAG_SHARED`].
    flags: AtomicU32,
    /// Threads inside a wait and not yet woken by a signal or broadcast: a
    /// signal with none makes no system call. A waiter adds itself; it
    /// takes itself out when it leaves by itself (timeout, changed word,
    /// interruption), and its waker takes it out when woken.
    waiters: AtomicU32,
}

/// Whether this process's condition variables are glibc's: its algorithm
/// parks, so its mutexes have glibc's layout.
#[inline]
fn glibcs() -> bool {
    lockdispatch::current().is_parking()
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

impl CondWords {
    /// Who sleeps on `seq`: set once by init.
    #[inline]
    fn sharing(&self) -> Sharing {
        if self.flags.load(Ordering::Relaxed) & FLAG_SHARED != 0 {
            Sharing::Shared
        } else {
            Sharing::Private
        }
    }

    /// The clock of `pthread_cond_timedwait`'s deadline.
    #[inline]
    fn clock(&self) -> DeadlineClock {
        if self.flags.load(Ordering::Relaxed) & FLAG_MONOTONIC != 0 {
            DeadlineClock::Monotonic
        } else {
            DeadlineClock::Realtime
        }
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
    if glibcs() {
        // SAFETY: forwarding this function's contract to glibc's.
        return unsafe { (real().cond_init)(c, attr) };
    }
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
pub unsafe extern "C" fn pthread_cond_destroy(c: *mut libc::pthread_cond_t) -> c_int {
    if glibcs() {
        // SAFETY: forwarding this function's contract to glibc's.
        return unsafe { (real().cond_destroy)(c) };
    }
    // POSIX lets a program destroy (and free) a condition variable right
    // after a broadcast, while the woken waiters are still on their way
    // out. They touch the variable until they uncount themselves: wait for
    // that (microseconds), as glibc's destroy does, or their last write
    // lands in freed memory (pigz under --lock futex corrupted its heap).
    // SAFETY: the function's contract.
    let w = unsafe { words(c) };
    let mut sleep_ns = 1_000;
    let mut slept_ns = 0;
    // Acquire: pairs with the waiters' Release on the way out. Bounded: a
    // stray FUTEX_WAKE on this address (a freed lock's late wake, when the
    // memory was a lock before) wakes a waiter that no signal took out of
    // the count, which then stays one too high.
    while w.waiters.load(Ordering::Acquire) != 0 && slept_ns < DESTROY_WAIT_MAX_NS {
        corral_locks::sys::clock::sleep_ns(sleep_ns);
        slept_ns += sleep_ns;
        sleep_ns = (sleep_ns * 2).min(1_000_000);
    }
    0
}

/// The longest `pthread_cond_destroy` waits for waiters on their way out:
/// each is a few instructions from leaving, so only a count left high by a
/// stray wake-up lasts this long.
const DESTROY_WAIT_MAX_NS: u64 = 1_000_000_000;

/// POSIX `pthread_cond_signal` on corral's locks.
///
/// # Safety
/// `c` points to a live condition variable and `m`, where given, to a mutex the caller holds; a timespec argument is valid.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut libc::pthread_cond_t) -> c_int {
    if glibcs() {
        // SAFETY: forwarding this function's contract to glibc's.
        return unsafe { (real().cond_signal)(c) };
    }
    // SAFETY: `c` is live (this function's contract).
    unsafe { wake(c, 1) }
}

/// POSIX `pthread_cond_broadcast` on corral's locks.
///
/// # Safety
/// `c` points to a live condition variable and `m`, where given, to a mutex the caller holds; a timespec argument is valid.
#[no_mangle]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut libc::pthread_cond_t) -> c_int {
    if glibcs() {
        // SAFETY: forwarding this function's contract to glibc's.
        return unsafe { (real().cond_broadcast)(c) };
    }
    // SAFETY: `c` is live (this function's contract).
    unsafe { wake(c, futex::WAKE_ALL) }
}

/// Wakes up to `n` waiters of `c`.
///
/// # Safety
/// `c` points to a live condition variable.
unsafe fn wake(c: *mut libc::pthread_cond_t, n: u32) -> c_int {
    // SAFETY: the function's contract.
    let w = unsafe { words(c) };
    // SeqCst: a waiter that sees the new value sees what preceded the
    // signal, and against `waiters` (Dekker with `wait`): either this load
    // sees the waiter, or the waiter's read of `seq` sees this bump and it
    // does not sleep.
    w.seq.fetch_add(1, Ordering::SeqCst);
    if w.waiters.load(Ordering::SeqCst) != 0 {
        let woke = futex::wake(&w.seq, n, w.sharing());
        if woke > 0 {
            // Taken out of the count here: a woken waiter does not touch
            // `c` again (a destroy may follow this call). Relaxed: a count;
            // destroy's Acquire needs no data from a woken waiter.
            w.waiters.fetch_sub(woke, Ordering::Relaxed);
        }
    }
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
    if glibcs() {
        // SAFETY: forwarding this function's contract to glibc's; `m` has
        // glibc's layout.
        return unsafe { (real().cond_wait)(c, m) };
    }
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
    if glibcs() {
        // SAFETY: as in `pthread_cond_wait`.
        return unsafe { (real().cond_timedwait)(c, m, abstime) };
    }
    // SAFETY: `c` is live (this function's contract).
    let clock = unsafe { words(c) }.clock();
    // SAFETY: forwarding this function's contract (a valid timespec).
    match unsafe { Deadline::read(clock.id(), abstime) } {
        // SAFETY: forwarding this function's contract.
        Ok(d) => unsafe { wait(c, m, Some(d)) },
        Err(rc) => rc,
    }
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
    if glibcs() {
        // SAFETY: as in `pthread_cond_wait`.
        return unsafe { (real().cond_clockwait)(c, m, clock, abstime) };
    }
    // SAFETY: forwarding this function's contract (a valid timespec).
    match unsafe { Deadline::read(clock, abstime) } {
        // SAFETY: forwarding this function's contract.
        Ok(d) => unsafe { wait(c, m, Some(d)) },
        Err(rc) => rc,
    }
}

/// How long a condition wait sleeps before it looks for a cancellation
/// request: the longest a `pthread_cancel` of a waiter can take.
const CANCEL_POLL_NS: u64 = 100_000_000;

extern "C" {
    /// glibc's deferred-cancellation check; not bound by the libc crate.
    fn pthread_testcancel();
}

/// Atomically (with respect to signallers, who bump `seq` after changing
/// the predicate under the mutex) releases `m`, sleeps until a signal or
/// the deadline, and re-acquires `m`. Spurious wake-ups are allowed. A cancellation point.
///
/// # Safety
/// `c` points to a live condition variable and `m` to a mutex the caller
/// holds.
unsafe fn wait(
    c: *mut libc::pthread_cond_t,
    m: *mut libc::pthread_mutex_t,
    deadline: Option<Deadline>,
) -> c_int {
    // A cancellation point (POSIX): a request pending at entry acts here,
    // with the mutex held as the cleanup handlers expect.
    // SAFETY: no precondition; it unwinds only through frames without
    // destructors (this crate aborts on panic and holds nothing here).
    unsafe { pthread_testcancel() };
    // SAFETY: the function's contract.
    let w = unsafe { words(c) };
    // Counted before `seq` is read (SeqCst: the waiter's half of the
    // pattern in `wake`); read before the unlock, so the mutex orders it
    // after the caller's predicate check.
    w.waiters.fetch_add(1, Ordering::SeqCst);
    let seq = w.seq.load(Ordering::SeqCst);
    // SAFETY: `m` is a mutex the caller holds.
    let rc = unsafe { mutex_core::unlock(m) };
    if rc != 0 {
        w.waiters.fetch_sub(1, Ordering::Relaxed); // Relaxed: a count.
        return rc;
    }
    let sharing = w.sharing();
    // The futex sleep is not a cancellation point and restarts after the
    // cancel signal: it sleeps in slices, and between two it takes the
    // mutex back and offers the cancellation (acted on with the mutex held,
    // as POSIX asks of a cancelled condition wait).
    let (timed_out, woken_by_waker) = loop {
        let slice = match deadline {
            Some(d) => Deadline {
                at: d.within(CANCEL_POLL_NS),
                ..d
            },
            None => Deadline::in_ns(DeadlineClock::Monotonic, CANCEL_POLL_NS),
        };
        let r = futex::wait_until(&w.seq, seq, slice.clock, &slice.at, sharing);
        if r == WaitResult::Woken {
            // A signal or broadcast woke it and took it out of the count:
            // `c` may be destroyed from here on; a wake-up is not a timeout.
            break (false, true);
        }
        let woken = w.seq.load(Ordering::Relaxed) != seq; // Relaxed: the futex word itself.
        if r != WaitResult::TimedOut || woken {
            // A wait that ended early (a changed word, an interruption) but
            // past the deadline, with no wake since, timed out too.
            break (deadline.is_some_and(|d| d.passed()) && !woken, false);
        }
        if deadline.is_some_and(|d| d.passed()) {
            break (true, false);
        }
        // Not counted while it may be cancelled: a cancelled waiter would
        // leave the count high (harmless, but every signal would wake).
        w.waiters.fetch_sub(1, Ordering::Release); // Release: as on the way out.
                                                   // SAFETY: `m` is the live mutex released above; re-released below.
        unsafe { mutex_core::lock(m) };
        // SAFETY: as at entry.
        unsafe { pthread_testcancel() };
        w.waiters.fetch_add(1, Ordering::SeqCst); // SeqCst: as before the first sleep.
                                                  // SAFETY: this thread took `m` just above.
        unsafe { mutex_core::unlock(m) };
    };
    if !woken_by_waker {
        // Release: the last touch of `c`; a destroy that sees the count
        // drop may free it.
        w.waiters.fetch_sub(1, Ordering::Release);
    }
    // SAFETY: `m` is the live mutex released above.
    unsafe { mutex_core::lock(m) };
    // The wait's end is a cancellation point too.
    // SAFETY: as at entry.
    unsafe { pthread_testcancel() };
    if timed_out {
        libc::ETIMEDOUT
    } else {
        0
    }
}
