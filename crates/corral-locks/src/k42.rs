//! The K42 variant of the MCS lock.

use core::ptr;

use crate::sync::{const_fn_unless_loom, spin_loop, AtomicPtr, Ordering};
use crate::RawLock;

/// A waiter's queue entry, on its stack only while it waits. `waiting` is
/// non-null while its owner must keep waiting. The holder needs no entry:
/// the lock itself stands for it.
struct K42Node {
    next: AtomicPtr<K42Node>,
    waiting: AtomicPtr<K42Node>,
}

impl K42Node {
    fn new() -> Self {
        Self {
            next: AtomicPtr::new(ptr::null_mut()),
            waiting: AtomicPtr::new(ptr::null_mut()),
        }
    }
}

/// K42 lock: an MCS variant whose callers pass no queue node; the lock
/// itself stands for the holder in the queue, and a waiter moves its
/// successor into the lock before returning, so its stack node is dead once
/// it holds the lock (Auslander et al., U.S. patent application 10/128,745;
/// "Non-scalable locks are dangerous", Boyd-Wickizer et al. 2012, Sec. 4.1).
/// It pays one more cache miss per acquire than MCS (paper, Fig. 11).
///
/// Two words, all-zero when unlocked; the lock's own address, never
/// dereferenced as a node, marks "held, no waiter" in `tail`.
#[derive(Debug)]
pub struct K42Lock {
    /// The first waiter, or null.
    first_waiter: AtomicPtr<K42Node>,
    /// Null when free, [`K42Lock::holder_mark`] when held with no waiter,
    /// else the last waiter's node.
    tail: AtomicPtr<K42Node>,
}

impl K42Lock {
    const_fn_unless_loom! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self {
                first_waiter: AtomicPtr::new(ptr::null_mut()),
                tail: AtomicPtr::new(ptr::null_mut()),
            }
        }
    }

    /// Stands for the holder in `tail`; only compared, never dereferenced.
    #[inline]
    fn holder_mark(&self) -> *mut K42Node {
        self as *const K42Lock as *mut K42Node
    }

    /// The `next` link of `pred`, which is the holder mark or a waiter's node.
    ///
    /// # Safety
    /// A waiter `pred` must still be alive: it is while `tail` pointed at it
    /// when we swapped in behind it, until we have linked.
    #[inline]
    unsafe fn next_of(&self, pred: *mut K42Node) -> &AtomicPtr<K42Node> {
        if pred == self.holder_mark() {
            &self.first_waiter
        } else {
            // SAFETY: per this function's contract.
            unsafe { &(*pred).next }
        }
    }

    /// Enqueues behind `pred` with a stack node, waits, then hands our
    /// successor link to the lock. Returns false if `tail` moved first.
    #[cold]
    fn lock_queued(&self, pred: *mut K42Node) -> bool {
        let node = K42Node::new();
        let me = &node as *const K42Node as *mut K42Node;
        node.waiting.store(me, Ordering::Relaxed); // Relaxed: published by the CAS below.
                                                   // AcqRel: release our node's initialisation to whoever links behind it.
        if self
            .tail
            .compare_exchange(pred, me, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        // SAFETY: a waiter keeps its node alive until its successor has
        // linked (see below), and we swapped in right behind `pred`.
        unsafe { self.next_of(pred) }.store(me, Ordering::Release);
        // Acquire: the previous holder's critical section happens before ours.
        while !node.waiting.load(Ordering::Acquire).is_null() {
            spin_loop();
        }
        // We hold the lock; move our successor (if any) into the lock.
        let mut succ = node.next.load(Ordering::Acquire);
        if succ.is_null() {
            self.first_waiter.store(ptr::null_mut(), Ordering::Relaxed);
            // Release: clearing `first_waiter` happens before a newcomer links there.
            if self
                .tail
                .compare_exchange(me, self.holder_mark(), Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return true;
            }
            // A newcomer swapped in behind our node: wait for its link.
            loop {
                succ = node.next.load(Ordering::Acquire);
                if !succ.is_null() {
                    break;
                }
                spin_loop();
            }
        }
        self.first_waiter.store(succ, Ordering::Relaxed); // Relaxed: read by the holder (us) only.
        true
    }
}

impl Default for K42Lock {
    fn default() -> Self {
        Self::new()
    }
}

impl RawLock for K42Lock {
    const NAME: &'static str = "k42";

    #[inline]
    fn lock(&self) {
        loop {
            let pred = self.tail.load(Ordering::Relaxed); // Relaxed: only a hint for the CAS below.
            if pred.is_null() {
                if self.try_lock() {
                    return;
                }
            } else if self.lock_queued(pred) {
                return;
            }
            spin_loop();
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        // Acquire: the last holder's critical section happens before ours.
        self.tail
            .compare_exchange(
                ptr::null_mut(),
                self.holder_mark(),
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    #[inline]
    unsafe fn unlock(&self) {
        // Acquire: the waiter's node initialisation happens before we touch it.
        let mut succ = self.first_waiter.load(Ordering::Acquire);
        if succ.is_null() {
            // Release: our critical section happens before the next acquirer.
            if self
                .tail
                .compare_exchange(
                    self.holder_mark(),
                    ptr::null_mut(),
                    Ordering::Release,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                return;
            }
            succ = self.wait_for_first_waiter();
        }
        // SAFETY: the first waiter spins on its stack node until this store.
        unsafe { (*succ).waiting.store(ptr::null_mut(), Ordering::Release) };
    }

    #[inline]
    fn is_locked(&self) -> bool {
        !self.tail.load(Ordering::Relaxed).is_null() // Relaxed: a snapshot, no data guarded.
    }
}

impl K42Lock {
    /// A waiter swapped itself in behind the holder but has not linked yet.
    #[cold]
    fn wait_for_first_waiter(&self) -> *mut K42Node {
        loop {
            let succ = self.first_waiter.load(Ordering::Acquire);
            if !succ.is_null() {
                return succ;
            }
            spin_loop();
        }
    }
}
