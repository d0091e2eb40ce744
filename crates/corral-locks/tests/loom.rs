//! loom model checks of the queue, ticket and futex locks and the
//! reader-writer lock: every interleaving (up to a preemption bound) of 2-4
//! threads accessing a loom `UnsafeCell` under the lock, which loom reports
//! if two accesses are not ordered by the lock. The futex lock's and the
//! reader-writer lock's sleepers block in loom's futex model, so a lost
//! wake-up ends in a reported deadlock.
#![cfg(loom)]

use corral_locks::sys::clock::DeadlineClock;
use corral_locks::sys::futex_model::expire_deadlines;
use corral_locks::{
    ClhLock, ClhNode, FutexLock, K42Lock, McsLock, McsNode, RawLock, RwDeadline, RwError, RwLock,
    RwPreference, TicketLock,
};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// Preemptions loom explores per execution with two threads.
const PREEMPTION_BOUND: usize = 3;
/// With three threads, spin loops multiply the schedules: bound tighter.
/// Ticket and CLH waiters of three threads spin on lines with several
/// stores, each probe a branch over them, so they get a bound of 1.
const PREEMPTION_BOUND_THREE_THREADS: usize = 2;
const PREEMPTION_BOUND_THREE_SHARED_SPINNERS: usize = 1;
/// Spinning waiters branch at every probe; loom's default (1,000) is too
/// few for three threads.
const MAX_BRANCHES: usize = 20_000;

struct Shared<L> {
    lock: L,
    value: UnsafeCell<usize>,
}

// SAFETY: `value` is only accessed while `lock` is held (what loom checks).
unsafe impl<L: Send + Sync> Sync for Shared<L> {}

impl<L> Shared<L> {
    fn new(lock: L) -> Arc<Self> {
        Arc::new(Self {
            lock,
            value: UnsafeCell::new(0),
        })
    }

    /// Called with the lock held.
    fn bump(&self) {
        // SAFETY: the caller holds the lock.
        self.value.with_mut(|value| unsafe { *value += 1 });
    }

    fn value(&self) -> usize {
        // SAFETY: all other threads have been joined.
        self.value.with(|value| unsafe { *value })
    }
}

/// Runs `critical` on `threads` threads (the model's main thread included)
/// and checks that every increment landed.
fn check<L, F>(threads: usize, new_lock: fn() -> L, critical: F)
where
    L: Send + Sync + 'static,
    F: Fn(&Shared<L>) + Send + Sync + Copy + 'static,
{
    let bound = if threads > 2 {
        PREEMPTION_BOUND_THREE_THREADS
    } else {
        PREEMPTION_BOUND
    };
    check_bounded(threads, bound, new_lock, critical);
}

fn check_bounded<L, F>(threads: usize, preemption_bound: usize, new_lock: fn() -> L, critical: F)
where
    L: Send + Sync + 'static,
    F: Fn(&Shared<L>) + Send + Sync + Copy + 'static,
{
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemption_bound);
    builder.max_branches = MAX_BRANCHES;
    builder.check(move || {
        let shared = Shared::new(new_lock());
        let others: Vec<_> = (1..threads)
            .map(|_| {
                let shared = shared.clone();
                thread::spawn(move || critical(&shared))
            })
            .collect();
        critical(&shared);
        others.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(shared.value(), threads);
    });
}

fn raw_critical<L: RawLock>(shared: &Shared<L>) {
    shared.lock.lock();
    shared.bump();
    // SAFETY: locked above on this thread.
    unsafe { shared.lock.unlock() };
}

#[test]
fn ticket_two_threads() {
    check(2, TicketLock::new, raw_critical::<TicketLock>);
}

#[test]
fn ticket_three_threads() {
    check_bounded(
        3,
        PREEMPTION_BOUND_THREE_SHARED_SPINNERS,
        TicketLock::new,
        raw_critical::<TicketLock>,
    );
}

#[test]
fn ticket_try_lock() {
    check(2, TicketLock::new, |shared: &Shared<TicketLock>| {
        while !shared.lock.try_lock() {
            thread::yield_now();
        }
        shared.bump();
        // SAFETY: acquired by try_lock on this thread.
        unsafe { shared.lock.unlock() };
    });
}

fn mcs_with_node(shared: &Shared<McsLock>) {
    let node = McsNode::new();
    // SAFETY: `node` outlives the acquisition and serves only this one.
    unsafe { shared.lock.lock_with(&node) };
    shared.bump();
    // SAFETY: acquired above with `node`.
    unsafe { shared.lock.unlock_with(&node) };
}

#[test]
fn mcs_two_threads() {
    check(2, McsLock::new, mcs_with_node);
}

#[test]
fn mcs_three_threads() {
    check(3, McsLock::new, mcs_with_node);
}

#[test]
fn mcs_node_free() {
    check(2, McsLock::new, raw_critical::<McsLock>);
}

fn clh_with_node(shared: &Shared<ClhLock>) {
    let node = ClhNode::new();
    // SAFETY: `node` outlives the acquisition and serves only this one.
    unsafe { shared.lock.lock_with(&node) };
    shared.bump();
    // SAFETY: acquired above with `node`.
    unsafe { shared.lock.unlock_with(&node) };
}

#[test]
fn clh_two_threads() {
    check(2, ClhLock::new, clh_with_node);
}

#[test]
fn clh_three_threads() {
    check_bounded(
        3,
        PREEMPTION_BOUND_THREE_SHARED_SPINNERS,
        ClhLock::new,
        clh_with_node,
    );
}

#[test]
fn clh_node_free() {
    check(2, ClhLock::new, raw_critical::<ClhLock>);
}

#[test]
fn k42_two_threads() {
    check(2, K42Lock::new, raw_critical::<K42Lock>);
}

#[test]
fn k42_three_threads() {
    check(3, K42Lock::new, raw_critical::<K42Lock>);
}

#[test]
fn futex_two_threads() {
    check(2, FutexLock::new, raw_critical::<FutexLock>);
}

#[test]
fn futex_three_threads() {
    check(3, FutexLock::new, raw_critical::<FutexLock>);
}

/// Any deadline: in the futex model it passes at `expire_deadlines`.
const DEADLINE: Option<RwDeadline> = Some((
    DeadlineClock::Monotonic,
    libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    },
));

const PREFERENCES: [RwPreference; 3] = [
    RwPreference::Reader,
    RwPreference::Writer,
    RwPreference::WriterNonrecursive,
];

/// Runs `f` under loom with `preemption_bound`.
fn model(preemption_bound: usize, f: impl Fn() + Send + Sync + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemption_bound);
    builder.max_branches = MAX_BRANCHES;
    builder.check(f);
}

type SharedRw = Arc<Shared<RwLock>>;

/// Thread `me` writes under the write lock, or gives up at the deadline.
fn rw_write(shared: &SharedRw, me: i32, deadline: Option<RwDeadline>) -> usize {
    match shared.lock.write(me, deadline) {
        Ok(()) => {
            shared.bump();
            // SAFETY: locked above on this thread.
            unsafe { shared.lock.write_unlock() };
            1
        }
        Err(e) => {
            assert_eq!((e, deadline.is_some()), (RwError::TimedOut, true));
            0
        }
    }
}

/// Thread `me` reads under a read lock, or gives up at the deadline.
fn rw_read(shared: &SharedRw, me: i32, deadline: Option<RwDeadline>) {
    match shared.lock.read(me, deadline) {
        Ok(()) => {
            // SAFETY: under the read lock; loom reports an unordered write.
            shared.value.with(|value| unsafe { value.read() });
            // SAFETY: locked above on this thread.
            unsafe { shared.lock.read_unlock() };
        }
        Err(e) => assert_eq!((e, deadline.is_some()), (RwError::TimedOut, true)),
    }
}

/// `writers` then `readers` (ids from 1, the first on the model's main
/// thread); `timed` writers after the first have a deadline, which passes
/// once the main thread is done; every completed write must have landed.
fn rw_check(preference: RwPreference, writers: usize, timed: usize, readers: usize, bound: usize) {
    model(bound, move || {
        let shared = Shared::new(RwLock::new(preference));
        let others: Vec<_> = (1..writers + readers)
            .map(|i| {
                let shared = shared.clone();
                let me = i as i32 + 1;
                thread::spawn(move || {
                    if i < writers {
                        rw_write(&shared, me, if i <= timed { DEADLINE } else { None })
                    } else {
                        rw_read(&shared, me, None);
                        0
                    }
                })
            })
            .collect();
        let mut landed = if writers > 0 {
            rw_write(&shared, 1, None)
        } else {
            rw_read(&shared, 1, None);
            0
        };
        if timed > 0 {
            expire_deadlines();
        }
        landed += others.into_iter().map(|t| t.join().unwrap()).sum::<usize>();
        assert_eq!(shared.value(), landed);
        quiet(&shared.lock);
    });
}

/// Once every thread is done, no waiting bit is left to hold anyone back.
fn quiet(lock: &RwLock) {
    assert_eq!(lock.try_read(), Ok(()), "{:?}", lock.preference());
    // SAFETY: read-locked just above on this thread.
    unsafe { lock.read_unlock() };
    assert!(lock.try_write(1));
    // SAFETY: write-locked just above on this thread.
    unsafe { lock.write_unlock() };
}

#[test]
fn rwlock_writers_exclude_each_other() {
    for p in PREFERENCES {
        rw_check(p, 2, 0, 0, PREEMPTION_BOUND);
    }
}

#[test]
fn rwlock_writer_and_readers() {
    for p in PREFERENCES {
        rw_check(p, 1, 0, 2, PREEMPTION_BOUND_THREE_THREADS);
    }
}

#[test]
fn rwlock_two_writers_and_a_reader() {
    for p in PREFERENCES {
        rw_check(p, 2, 0, 1, PREEMPTION_BOUND_THREE_THREADS);
    }
}

#[test]
fn rwlock_a_timed_writer_gives_up_without_stranding_others() {
    for p in PREFERENCES {
        rw_check(p, 2, 1, 1, PREEMPTION_BOUND_THREE_THREADS);
    }
}

#[test]
fn rwlock_raw_write_side() {
    check(2, RwLock::default, raw_critical::<RwLock>);
}

/// A writer-nonrecursive lock: while a read lock is held, a writer that
/// timed out must not keep a later reader out (glibc's does not).
#[test]
fn rwlock_a_timed_out_writer_lets_readers_in() {
    model(PREEMPTION_BOUND_THREE_THREADS, || {
        let shared = Shared::new(RwLock::new(RwPreference::WriterNonrecursive));
        shared.lock.read(1, None).unwrap();
        let writer = {
            let shared = shared.clone();
            thread::spawn(move || rw_write(&shared, 2, DEADLINE))
        };
        let reader = {
            let shared = shared.clone();
            thread::spawn(move || rw_read(&shared, 3, None))
        };
        expire_deadlines();
        reader.join().unwrap();
        // SAFETY: read-locked above on this thread.
        unsafe { shared.lock.read_unlock() };
        let landed = writer.join().unwrap();
        assert_eq!(shared.value(), landed);
        quiet(&shared.lock);
    });
}

/// Writers first, no recursion: a reader that times out behind a waiting
/// writer must leave neither the writer nor later readers stuck.
#[test]
fn rwlock_a_timed_out_reader_behind_a_writer() {
    model(PREEMPTION_BOUND_THREE_THREADS, || {
        let shared = Shared::new(RwLock::new(RwPreference::WriterNonrecursive));
        shared.lock.read(1, None).unwrap();
        let writer = {
            let shared = shared.clone();
            thread::spawn(move || rw_write(&shared, 2, None))
        };
        let reader = {
            let shared = shared.clone();
            thread::spawn(move || rw_read(&shared, 3, DEADLINE))
        };
        expire_deadlines();
        // SAFETY: read-locked above on this thread.
        unsafe { shared.lock.read_unlock() };
        reader.join().unwrap();
        assert_eq!(writer.join().unwrap(), 1);
        quiet(&shared.lock);
    });
}

/// Readers first: a released write lock wakes the readers and leaves the
/// writer to the last of them; a reader that times out must not strand it.
#[test]
fn rwlock_a_timed_out_reader_does_not_strand_a_writer() {
    model(PREEMPTION_BOUND_THREE_THREADS, || {
        let shared = Shared::new(RwLock::new(RwPreference::Reader));
        shared.lock.write(1, None).unwrap();
        let reader = {
            let shared = shared.clone();
            thread::spawn(move || rw_read(&shared, 2, DEADLINE))
        };
        let writer = {
            let shared = shared.clone();
            thread::spawn(move || rw_write(&shared, 3, None))
        };
        expire_deadlines();
        // SAFETY: write-locked above on this thread.
        unsafe { shared.lock.write_unlock() };
        reader.join().unwrap();
        assert_eq!(writer.join().unwrap(), 1);
        assert_eq!(shared.value(), 1);
        quiet(&shared.lock);
    });
}
