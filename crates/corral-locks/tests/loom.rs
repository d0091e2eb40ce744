//! loom model checks of the queue and ticket locks: every interleaving (up to
//! a preemption bound) of 2-3 threads incrementing a loom `UnsafeCell` under
//! the lock, which loom reports if two accesses are not ordered by the lock.
#![cfg(loom)]

use corral_locks::{ClhLock, ClhNode, K42Lock, McsLock, McsNode, RawLock, TicketLock};
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
