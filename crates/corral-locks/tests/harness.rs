//! One generic correctness harness, run for every algorithm both raw and
//! wrapped in `Timed`. Nothing here measures or asserts on time.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use corral_locks::wait::{set_thread_counter, thread_counter, WaitCounter};
use corral_locks::{with_lock_type, Algorithm, RawLock, Timed};

/// Spinning tests saturate both cores; run them one at a time.
static CPU: Mutex<()> = Mutex::new(());

/// A lock guarding a deliberately non-atomic counter.
#[derive(Default)]
struct Guarded<L> {
    lock: L,
    count: UnsafeCell<u64>,
    inside: AtomicBool,
}

// SAFETY: `count` is only accessed while `lock` is held.
unsafe impl<L: RawLock> Sync for Guarded<L> {}

impl<L: RawLock> Guarded<L> {
    /// Increments under the lock with a split read-modify-write, so an
    /// overlap would lose an update or trip the `inside` check.
    fn increment(&self) {
        self.lock.lock();
        assert!(
            !self.inside.swap(true, Ordering::Relaxed),
            "two holders at once"
        );
        // SAFETY: we hold the lock.
        let seen = unsafe { *self.count.get() };
        for _ in 0..8 {
            std::hint::spin_loop();
        }
        // SAFETY: we hold the lock.
        unsafe { *self.count.get() = seen + 1 };
        self.inside.store(false, Ordering::Relaxed);
        // SAFETY: acquired above on this thread.
        unsafe { self.lock.unlock() };
    }

    fn count(&self) -> u64 {
        // SAFETY: all incrementing threads have been joined.
        unsafe { *self.count.get() }
    }
}

/// Ops per thread, scaled down with thread count. All threads start
/// together, so FIFO spin locks on two cores form a convoy in which nearly
/// every hand-off waits for the next waiter to be scheduled.
fn ops_per_thread(threads: usize) -> usize {
    match threads {
        0..=2 => 2_000,
        3..=8 => 16,
        _ => 3,
    }
}

fn mutual_exclusion<L: RawLock>(threads: usize) {
    let guarded = Guarded::<L>::default();
    let start = Barrier::new(threads);
    let ops = ops_per_thread(threads);
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                start.wait();
                (0..ops).for_each(|_| guarded.increment());
            });
        }
    });
    assert_eq!(
        guarded.count(),
        (threads * ops) as u64,
        "{} lost updates",
        L::NAME
    );
    assert!(!guarded.lock.is_locked());
}

fn try_lock_semantics<L: RawLock>() {
    let lock = L::default();
    assert!(!lock.is_locked());
    lock.lock();
    assert!(lock.is_locked());
    thread::scope(|s| {
        s.spawn(|| assert!(!lock.try_lock(), "{}: try_lock took a held lock", L::NAME));
    });
    assert!(lock.is_locked());
    // SAFETY: locked above on this thread.
    unsafe { lock.unlock() };
    assert!(!lock.is_locked());
    thread::scope(|s| {
        s.spawn(|| {
            assert!(
                lock.try_lock(),
                "{}: try_lock failed on a free lock",
                L::NAME
            );
            assert!(lock.is_locked());
            assert!(!lock.try_lock(), "{}: try_lock is not reentrant", L::NAME);
            // SAFETY: acquired by try_lock on this thread.
            unsafe { lock.unlock() };
        });
    });
    assert!(!lock.is_locked());
}

fn acquire_in_order<L: RawLock>(locks: &[L]) {
    locks.iter().for_each(RawLock::lock);
}

fn release_interleaved<L: RawLock>(locks: &[L]) {
    let (even, odd): (Vec<_>, Vec<_>) = locks.iter().enumerate().partition(|(i, _)| i % 2 == 0);
    for (_, lock) in odd.into_iter().chain(even) {
        // SAFETY: the caller acquired every lock on this thread.
        unsafe { lock.unlock() };
    }
}

/// Several locks held at once, acquired in one call and released (not in
/// LIFO order) in another, while a second thread contends for the same set.
fn nested_across_calls<L: RawLock>() {
    let locks: Vec<L> = (0..8).map(|_| L::default()).collect();
    let held = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..200 {
                    acquire_in_order(&locks);
                    assert_eq!(held.fetch_add(1, Ordering::Relaxed), 0, "{}", L::NAME);
                    assert!(locks.iter().all(RawLock::is_locked));
                    held.fetch_sub(1, Ordering::Relaxed);
                    release_interleaved(&locks);
                }
            });
        }
    });
    assert!(locks.iter().all(|lock| !lock.is_locked()));
}

/// Long holds force parking locks' waiters to sleep; a lost wake-up hangs,
/// which the watchdog turns into a failure instead of a stuck run.
fn no_lost_wakeups<L: RawLock>() {
    let (done, watchdog) = mpsc::channel::<()>();
    let name = L::NAME;
    let guard = thread::spawn(move || {
        if watchdog.recv_timeout(Duration::from_secs(300)).is_err() {
            eprintln!("{name}: hand-off did not finish; lost wake-up?");
            std::process::abort();
        }
    });
    let guarded = &Guarded::<L>::default();
    thread::scope(|s| {
        for _ in 0..6 {
            s.spawn(move || {
                for _ in 0..25 {
                    guarded.lock.lock();
                    thread::sleep(Duration::from_micros(200));
                    // SAFETY: we hold the lock.
                    unsafe { *guarded.count.get() += 1 };
                    // SAFETY: acquired above on this thread.
                    unsafe { guarded.lock.unlock() };
                }
            });
        }
    });
    done.send(()).unwrap();
    guard.join().unwrap();
    assert_eq!(guarded.count(), 6 * 25);
}

fn correctness<L: RawLock>(parking: bool) {
    try_lock_semantics::<L>();
    nested_across_calls::<L>();
    for threads in [2, 8, 32] {
        mutual_exclusion::<L>(threads);
    }
    if parking {
        no_lost_wakeups::<L>();
    }
}

/// Counts failed `try_lock`s so a test can tell that a waiter is past its
/// first attempt without timing anything.
#[derive(Default)]
struct Probe<L> {
    inner: L,
    failed_tries: AtomicUsize,
}

impl<L: RawLock> RawLock for Probe<L> {
    const NAME: &'static str = L::NAME;
    fn lock(&self) {
        self.inner.lock();
    }
    fn try_lock(&self) -> bool {
        let acquired = self.inner.try_lock();
        if !acquired {
            self.failed_tries.fetch_add(1, Ordering::SeqCst);
        }
        acquired
    }
    unsafe fn unlock(&self) {
        // SAFETY: forwarded from our caller.
        unsafe { self.inner.unlock() }
    }
    fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }
}

fn fresh_counter() -> &'static WaitCounter {
    Box::leak(Box::new(WaitCounter::new()))
}

fn timed_records_only_waits<L: RawLock>() {
    let lock = Timed::<Probe<L>>::default();
    let mine = fresh_counter();
    set_thread_counter(mine);
    assert!(std::ptr::eq(thread_counter(), mine));
    for _ in 0..100 {
        assert_eq!(lock.lock_timed(), 0);
        // SAFETY: locked above on this thread.
        unsafe { lock.unlock() };
        lock.lock();
        // SAFETY: locked above on this thread.
        unsafe { lock.unlock() };
    }
    assert_eq!(
        mine.snapshot(),
        (0, 0),
        "{}: uncontended acquisitions recorded",
        L::NAME
    );

    // Forced contention: we hold the lock until the waiter's first try failed.
    lock.lock();
    let waiter = thread::scope(|s| {
        let waiter = s.spawn(|| {
            let theirs = fresh_counter();
            set_thread_counter(theirs);
            let waited = lock.lock_timed();
            // SAFETY: locked above on this thread.
            unsafe { lock.unlock() };
            (waited, theirs.take(), theirs.snapshot())
        });
        while lock.inner().failed_tries.load(Ordering::SeqCst) == 0 {
            thread::yield_now();
        }
        // SAFETY: locked above on this thread.
        unsafe { lock.unlock() };
        waiter.join().unwrap()
    });
    let (waited, (wait_ticks, waits), after_take) = waiter;
    assert!(waited > 0, "{}: a wait returned 0 ticks", L::NAME);
    assert_eq!((wait_ticks, waits), (waited, 1), "{}", L::NAME);
    assert_eq!(after_take, (0, 0), "take did not reset");
    assert_eq!(
        mine.snapshot(),
        (0, 0),
        "{}: the holder recorded a wait",
        L::NAME
    );
}

fn check_algorithm(alg: Algorithm) {
    let _cpu = CPU.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    with_lock_type!(alg, L => {
        assert_eq!(L::NAME, alg.name());
        assert_eq!(<Timed<L> as RawLock>::NAME, alg.name());
        correctness::<L>(alg.is_parking());
        correctness::<Timed<L>>(alg.is_parking());
        timed_records_only_waits::<L>();
    });
}

macro_rules! per_algorithm {
    ($($test:ident => $alg:ident),* $(,)?) => {
        $(#[test] fn $test() { check_algorithm(Algorithm::$alg) })*
    };
}

per_algorithm! {
    tas => Tas,
    ttas => Ttas,
    ticket => Ticket,
    ticket_backoff => TicketBackoff,
    mcs => Mcs,
    clh => Clh,
    k42 => K42,
    futex => Futex,
    adaptive => Adaptive,
}

/// The reader-writer lock's write side is a parking mutex (its reader
/// contracts: tests/rwlock.rs).
#[test]
fn rwlock_write_side() {
    let _cpu = CPU.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    correctness::<corral_locks::RwLock>(true);
    correctness::<Timed<corral_locks::RwLock>>(true);
    timed_records_only_waits::<corral_locks::RwLock>();
}

#[test]
fn algorithm_names_round_trip() {
    assert_eq!(Algorithm::ALL.len(), 9);
    for alg in Algorithm::ALL {
        assert_eq!(alg.name().parse::<Algorithm>(), Ok(alg));
        assert_eq!(alg.to_string(), alg.name());
        assert_eq!(
            alg.is_parking(),
            matches!(alg, Algorithm::Futex | Algorithm::Adaptive)
        );
        assert_eq!(with_lock_type!(alg, L => L::NAME), alg.name());
    }
    let err = "spin".parse::<Algorithm>().unwrap_err().to_string();
    assert_eq!(
        err,
        "unknown lock algorithm 'spin'; allowed: tas, ttas, ticket, ticket-backoff, mcs, clh, k42, futex, adaptive"
    );
}

#[test]
fn queue_locks_nest_to_the_pool_depth() {
    fn nest<L: RawLock>() {
        let locks: Vec<L> = (0..corral_locks::MAX_NESTED_QUEUE_LOCKS)
            .map(|_| L::default())
            .collect();
        acquire_in_order(&locks);
        release_interleaved(&locks);
        acquire_in_order(&locks);
        release_interleaved(&locks);
        assert!(locks.iter().all(|lock| !lock.is_locked()));
    }
    nest::<corral_locks::McsLock>();
    nest::<corral_locks::ClhLock>();
}

#[test]
fn every_lock_fits_two_words() {
    for alg in Algorithm::ALL {
        let (size, align) =
            with_lock_type!(alg, L => (std::mem::size_of::<L>(), std::mem::align_of::<L>()));
        assert!(
            size <= 16 && align <= 8,
            "{alg}: {size} bytes, align {align}"
        );
    }
}
