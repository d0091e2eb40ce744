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
//! A process-shared condition variable is glibc's under every algorithm:
//! another process may use it without corral, or under another algorithm,
//! and glibc's words are the only ones every process reads alike. It is
//! told by glibc's own flag (see [`glibc_shared`]), which glibc's init set
//! in whichever process made it. Its mutex, process-shared too, is glibc's
//! as well (`mutex_core`); a private mutex of corral's is stood in for
//! during the wait ([`wait_with_stand_in`]).
//!
//! A signal makes a system call only while some waiter is asleep and not
//! yet woken: the waker takes the threads it woke out of the count itself,
//! at once, rather than waiting for them to run. With the count kept by the
//! woken threads (as before), a producer that signals per item made a
//! futex call for each item until its consumer got the CPU back: 4 of 5
//! signals woke nobody (tests/c/prodcons.c: 55,000 futex calls against
//! glibc's 14,000, twice its CPU time).

use core::cell::UnsafeCell;
use core::ffi::c_int;
use core::sync::atomic::{AtomicU32, Ordering};

use corral_locks::sys::clock::DeadlineClock;
use corral_locks::sys::futex::{self, Sharing, WaitResult};

use crate::deadline::Deadline;
use crate::glibc::real;
use crate::{lockdispatch, mutex_core};

/// corral's view of a process-private `pthread_cond_t` (48 bytes; all
/// zero is `PTHREAD_COND_INITIALIZER`: realtime clock, process-private).
/// Its words end before glibc's `__wrefs`, which stays zero: corral's
/// condition variables never read as glibc's process-shared ones.
#[repr(C)]
struct CondWords {
    /// Bumped by every signal and broadcast; waiters sleep on it.
    seq: AtomicU32,
    /// [`FLAG_MONOTONIC`] or 0.
    flags: AtomicU32,
    /// Threads inside a wait and not yet woken by a signal or broadcast: a
    /// signal with none makes no system call. A waiter adds itself; it
    /// takes itself out when it leaves by itself (timeout, changed word,
    /// interruption), and its waker takes it out when woken.
    waiters: AtomicU32,
}

/// Whether all of this process's condition variables are glibc's: its
/// algorithm parks, so its mutexes have glibc's layout.
#[inline]
fn glibcs() -> bool {
    lockdispatch::current().is_parking()
}

const FLAG_MONOTONIC: u32 = 1;

/// Where glibc (2.25 and later) keeps `__wrefs` in a `pthread_cond_t`:
/// waiter references above bit 2, the clock and the sharing below.
const GLIBC_WREFS: usize = 36;
/// glibc's `__PTHREAD_COND_SHARED_MASK`: bit 0 of `__wrefs`, set by its
/// init of a process-shared condition variable and fixed from then on.
const GLIBC_SHARED_MASK: u32 = 1;
/// glibc's `__PTHREAD_COND_CLOCK_MONOTONIC_MASK`, in `__wrefs` too.
const GLIBC_MONOTONIC_MASK: u32 = 2;

const _: () =
    assert!(core::mem::size_of::<CondWords>() <= core::mem::size_of::<libc::pthread_cond_t>());
const _: () = assert!(core::mem::size_of::<CondWords>() <= GLIBC_WREFS);
const _: () = assert!(GLIBC_WREFS + 4 <= core::mem::size_of::<libc::pthread_cond_t>());

/// glibc's `__wrefs` word of the condition variable at `c`.
///
/// # Safety
/// `c` points to a live `pthread_cond_t` that outlives `'a`.
#[inline]
unsafe fn glibc_wrefs<'a>(c: *mut libc::pthread_cond_t) -> &'a AtomicU32 {
    // SAFETY: the function's contract; the word is 4-aligned and inside the
    // object (asserted above), and glibc changes it atomically.
    unsafe { &*((c as *const u8).add(GLIBC_WREFS) as *const AtomicU32) }
}

/// Whether the condition variable at `c` is process-shared and glibc's:
/// glibc's init set its flag, in this process or another. corral's own
/// condition variables leave that word zero.
///
/// # Safety
/// `c` points to a live `pthread_cond_t`.
#[inline]
unsafe fn glibc_shared(c: *mut libc::pthread_cond_t) -> bool {
    // SAFETY: the function's contract.
    let wrefs = unsafe { glibc_wrefs(c) };
    // Relaxed: the bit is fixed since init, which happened before sharing.
    wrefs.load(Ordering::Relaxed) & GLIBC_SHARED_MASK != 0
}

/// Whether the condition variable at `c` is glibc's: every one in a
/// process whose algorithm parks, a process-shared one everywhere.
///
/// # Safety
/// `c` points to a live `pthread_cond_t`.
#[inline]
unsafe fn is_glibcs(c: *mut libc::pthread_cond_t) -> bool {
    // SAFETY: the function's contract.
    glibcs() || unsafe { glibc_shared(c) }
}

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
    let (mut clock, mut pshared) = (libc::CLOCK_REALTIME, libc::PTHREAD_PROCESS_PRIVATE);
    if !attr.is_null() {
        // SAFETY: `attr` is a valid attribute object (POSIX precondition).
        unsafe {
            libc::pthread_condattr_getclock(attr, &mut clock);
            libc::pthread_condattr_getpshared(attr, &mut pshared);
        }
    }
    if glibcs() || pshared != libc::PTHREAD_PROCESS_PRIVATE {
        // SAFETY: forwarding this function's contract to glibc's.
        return unsafe { (real().cond_init)(c, attr) };
    }
    let mut flags = 0;
    if clock == libc::CLOCK_MONOTONIC {
        flags |= FLAG_MONOTONIC;
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
    // SAFETY: `c` is live (this function's contract).
    if unsafe { is_glibcs(c) } {
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
    if unsafe { glibc_shared(c) } {
        // SAFETY: as above.
        return unsafe { wake_glibcs(c, real().cond_signal) };
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
    if unsafe { glibc_shared(c) } {
        // SAFETY: as above.
        return unsafe { wake_glibcs(c, real().cond_broadcast) };
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
        let woke = futex::wake(&w.seq, n, Sharing::Private);
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
    // SAFETY: `c` and `m` are live (this function's contract).
    if unsafe { glibc_waits(c, m) } {
        // SAFETY: forwarding this function's contract to glibc's; `m` has
        // glibc's layout.
        return unsafe { (real().cond_wait)(c, m) };
    }
    // SAFETY: forwarding this function's contract.
    unsafe { wait_spinning(c, m, None) }
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
    // SAFETY: `c` and `m` are live (this function's contract).
    if unsafe { glibc_waits(c, m) } {
        // SAFETY: as in `pthread_cond_wait`.
        return unsafe { (real().cond_timedwait)(c, m, abstime) };
    }
    // SAFETY: `c` is live (this function's contract).
    let clock = unsafe { clock_of(c) };
    // SAFETY: forwarding this function's contract (a valid timespec).
    match unsafe { Deadline::read(clock.id(), abstime) } {
        // SAFETY: forwarding this function's contract.
        Ok(d) => unsafe { wait_spinning(c, m, Some(d)) },
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
    // SAFETY: `c` and `m` are live (this function's contract).
    if unsafe { glibc_waits(c, m) } {
        // SAFETY: as in `pthread_cond_wait`.
        return unsafe { (real().cond_clockwait)(c, m, clock, abstime) };
    }
    // SAFETY: forwarding this function's contract (a valid timespec).
    match unsafe { Deadline::read(clock, abstime) } {
        // SAFETY: forwarding this function's contract.
        Ok(d) => unsafe { wait_spinning(c, m, Some(d)) },
        Err(rc) => rc,
    }
}

/// Whether a wait on `c` with `m` is glibc's own: every wait in a process
/// whose algorithm parks, and one on glibc's condition variable with a
/// mutex of glibc's layout (process-shared, robust or priority-protocol).
///
/// # Safety
/// `c` and `m` point to a live condition variable and mutex.
#[inline]
unsafe fn glibc_waits(c: *mut libc::pthread_cond_t, m: *mut libc::pthread_mutex_t) -> bool {
    // SAFETY: the function's contract.
    glibcs() || unsafe { glibc_shared(c) && mutex_core::corral_mutex(m).is_none() }
}

/// The clock of `pthread_cond_timedwait`'s deadline on `c`, glibc's or
/// corral's condition variable.
///
/// # Safety
/// `c` points to a live condition variable.
unsafe fn clock_of(c: *mut libc::pthread_cond_t) -> DeadlineClock {
    // SAFETY: the function's contract.
    if !unsafe { glibc_shared(c) } {
        // SAFETY: as above.
        return unsafe { words(c) }.clock();
    }
    // SAFETY: as above.
    let wrefs = unsafe { glibc_wrefs(c) };
    // Relaxed: the clock bit is fixed since init, as the sharing bit is.
    if wrefs.load(Ordering::Relaxed) & GLIBC_MONOTONIC_MASK != 0 {
        DeadlineClock::Monotonic
    } else {
        DeadlineClock::Realtime
    }
}

/// A wait of a process whose algorithm spins, `m` being corral's mutex:
/// on glibc's condition variable with a stand-in, else on corral's.
///
/// # Safety
/// `c` points to a live condition variable and `m` to a mutex the caller
/// holds.
unsafe fn wait_spinning(
    c: *mut libc::pthread_cond_t,
    m: *mut libc::pthread_mutex_t,
    deadline: Option<Deadline>,
) -> c_int {
    // SAFETY: the function's contract.
    if unsafe { glibc_shared(c) } {
        // SAFETY: as above.
        unsafe { wait_with_stand_in(c, m, deadline) }
    } else {
        // SAFETY: as above.
        unsafe { wait(c, m, deadline) }
    }
}

/// A mutex of glibc's layout that stands in for corral's mutex in a wait
/// on glibc's condition variable, which unlocks and relocks the mutex it
/// is given with glibc's internal functions. One serves every condition
/// variable whose address picks it ([`stand_in`]).
#[repr(align(64))] // one cache line each: taken by unrelated threads
struct StandIn {
    /// glibc's private normal mutex: only glibc's functions touch it.
    mutex: UnsafeCell<libc::pthread_mutex_t>,
    /// This process's threads inside a wait with this stand-in.
    waiters: AtomicU32,
}

// SAFETY: `mutex` is only reached through glibc's mutex and condition
// variable functions, which synchronise it; `waiters` is atomic.
unsafe impl Sync for StandIn {}

const STAND_INS: usize = 16;

static STAND_IN: [StandIn; STAND_INS] = [const {
    StandIn {
        mutex: UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER),
        waiters: AtomicU32::new(0),
    }
}; STAND_INS];

/// The stand-in of the condition variable at `c`.
#[inline]
fn stand_in(c: *mut libc::pthread_cond_t) -> &'static StandIn {
    // 16-byte granules: neighbouring 48-byte condition variables differ.
    &STAND_IN[(c as usize >> 4) % STAND_INS]
}

/// Frees the stand-ins in a fork child: a thread that held one at the fork
/// does not exist there.
pub(crate) fn after_fork_in_child() {
    for s in &STAND_IN {
        // SAFETY: the child is single-threaded here, so nothing else
        // touches the mutex; this rewrites it as freshly initialised.
        unsafe { s.mutex.get().write(libc::PTHREAD_MUTEX_INITIALIZER) };
        s.waiters.store(0, Ordering::Relaxed); // Relaxed: single-threaded here.
    }
}

/// A signal or broadcast (`f`, glibc's) on glibc's condition variable `c`
/// in a process whose algorithm spins: under `c`'s stand-in while some
/// thread of this process waits with it, so that a waiter that released
/// its mutex before this caller took it is already queued (see
/// [`wait_with_stand_in`]).
///
/// # Safety
/// `c` points to a live condition variable of glibc's; `f` is glibc's
/// signal or broadcast.
unsafe fn wake_glibcs(
    c: *mut libc::pthread_cond_t,
    f: unsafe extern "C" fn(*mut libc::pthread_cond_t) -> c_int,
) -> c_int {
    let s = stand_in(c);
    // Relaxed: a waiter counts itself before it releases its mutex, and a
    // caller that took that mutex since sees the count by the mutex's order.
    if s.waiters.load(Ordering::Relaxed) == 0 {
        // SAFETY: the function's contract.
        return unsafe { f(c) };
    }
    let real = real();
    // SAFETY: the stand-in is glibc's initialised mutex.
    unsafe { (real.mutex_lock)(s.mutex.get()) };
    // SAFETY: the function's contract.
    let rc = unsafe { f(c) };
    // SAFETY: this thread took the stand-in just above.
    unsafe { (real.mutex_unlock)(s.mutex.get()) };
    rc
}

/// A wait on glibc's condition variable `c` with corral's mutex `m`, which
/// glibc's wait cannot release or take: glibc's wait runs with `c`'s
/// stand-in, taken before `m` is released and released by glibc once this
/// thread is queued. A signaller of this process that takes `m` after the
/// release takes the stand-in too ([`wake_glibcs`]), so it signals only
/// once this thread is queued: the atomic release POSIX asks for. Another
/// process cannot take `m`, a private mutex, so nothing is owed to it.
///
/// It sleeps for at most [`CANCEL_POLL_NS`] and then returns as a spurious
/// wake-up (a timed-out slice may have taken a signal it cannot pass on),
/// offering the cancellation with `m` held. glibc's own cancellation stays
/// off while it sleeps: it would unwind holding the stand-in, not `m`.
///
/// # Safety
/// `c` points to a live condition variable of glibc's and `m` to corral's
/// mutex, which the caller holds.
unsafe fn wait_with_stand_in(
    c: *mut libc::pthread_cond_t,
    m: *mut libc::pthread_mutex_t,
    deadline: Option<Deadline>,
) -> c_int {
    // SAFETY: as in `wait`.
    unsafe { pthread_testcancel() };
    let (s, real) = (stand_in(c), real());
    // Relaxed: `m`'s release below publishes it (see `wake_glibcs`).
    s.waiters.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the stand-in is glibc's initialised mutex; this thread holds
    // no stand-in, and a holder waits for nothing this thread holds.
    unsafe { (real.mutex_lock)(s.mutex.get()) };
    // SAFETY: `m` is a mutex the caller holds.
    let rc = unsafe { mutex_core::unlock(m) };
    if rc != 0 {
        // SAFETY: taken just above.
        unsafe { (real.mutex_unlock)(s.mutex.get()) };
        s.waiters.fetch_sub(1, Ordering::Relaxed); // Relaxed: a count.
        return rc;
    }
    let mut cancel_state = 0;
    // SAFETY: a valid out-pointer.
    unsafe { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut cancel_state) };
    let slice = match deadline {
        Some(d) => Deadline {
            at: d.within(CANCEL_POLL_NS),
            ..d
        },
        None => Deadline::in_ns(DeadlineClock::Monotonic, CANCEL_POLL_NS),
    };
    // SAFETY: `c` is glibc's, the stand-in is held by this thread, and the
    // deadline is a valid timespec on a valid clock.
    let rc = unsafe { (real.cond_clockwait)(c, s.mutex.get(), slice.clock.id(), &slice.at) };
    // SAFETY: glibc's wait returns with the stand-in taken again.
    unsafe { (real.mutex_unlock)(s.mutex.get()) };
    s.waiters.fetch_sub(1, Ordering::Relaxed); // Relaxed: a count.
                                               // SAFETY: `m` is the live mutex released above.
    unsafe { mutex_core::lock(m) };
    // SAFETY: restores the state read above; a null out-pointer is allowed.
    unsafe { pthread_setcancelstate(cancel_state, core::ptr::null_mut()) };
    // SAFETY: as at entry.
    unsafe { pthread_testcancel() };
    match rc {
        libc::ETIMEDOUT if deadline.is_some_and(|d| d.passed()) => libc::ETIMEDOUT,
        // The slice ended: the caller looks at its predicate again.
        libc::ETIMEDOUT => 0,
        rc => rc,
    }
}

/// How long a condition wait sleeps before it looks for a cancellation
/// request: the longest a `pthread_cancel` of a waiter can take.
const CANCEL_POLL_NS: u64 = 100_000_000;

/// glibc's `PTHREAD_CANCEL_DISABLE`; not bound by the libc crate.
const PTHREAD_CANCEL_DISABLE: c_int = 1;

extern "C" {
    /// glibc's deferred-cancellation check; not bound by the libc crate.
    fn pthread_testcancel();
    /// glibc's; not bound by the libc crate.
    fn pthread_setcancelstate(state: c_int, old: *mut c_int) -> c_int;
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
        let r = futex::wait_until(&w.seq, seq, slice.clock, &slice.at, Sharing::Private);
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
