//! The MCS queue lock.

use core::ptr;

use crate::pool::node_free_raw_lock;
use crate::sync::{const_fn_unless_loom, spin_loop, AtomicBool, AtomicPtr, Ordering};

/// One waiter's queue entry: each waiter spins on its own `locked` flag.
/// Aligned to a cache line so waiters never share the line they spin on.
#[repr(align(64))]
#[derive(Debug)]
pub struct McsNode {
    next: AtomicPtr<McsNode>,
    locked: AtomicBool,
}

impl McsNode {
    const_fn_unless_loom! {
        /// A node ready for [`McsLock::lock_with`].
        pub fn new() -> Self {
            Self {
                next: AtomicPtr::new(ptr::null_mut()),
                locked: AtomicBool::new(false),
            }
        }
    }
}

impl Default for McsNode {
    fn default() -> Self {
        Self::new()
    }
}

/// MCS lock: an explicit queue of nodes; a core enqueues itself with one
/// atomic swap on `tail` and spins on its own node, so each hand-off costs a
/// constant number of cache misses (Mellor-Crummey and Scott 1991, as used in
/// "Non-scalable locks are dangerous", Boyd-Wickizer et al. 2012, Sec. 4.1).
///
/// Callers that can keep a node alive across the critical section use
/// [`McsLock::lock_with`]/[`McsLock::unlock_with`]; the node-free
/// [`RawLock`](crate::RawLock) form takes a node from a per-thread pool and
/// records it in the lock, so a thread may release in a different call than
/// it acquired.
#[derive(Debug)]
pub struct McsLock {
    tail: AtomicPtr<McsNode>,
    /// The node the current holder used via the node-free API.
    holder_node: AtomicPtr<McsNode>,
}

impl McsLock {
    const_fn_unless_loom! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self {
                tail: AtomicPtr::new(ptr::null_mut()),
                holder_node: AtomicPtr::new(ptr::null_mut()),
            }
        }
    }

    /// Acquires the lock using `node` as this acquisition's queue entry.
    ///
    /// # Safety
    /// `node` must not be in use by another acquisition, and must stay at its
    /// address and alive until the matching [`McsLock::unlock_with`] returns:
    /// other threads write to it while it is queued.
    #[inline]
    pub unsafe fn lock_with(&self, node: &McsNode) {
        // Relaxed: published by the swap below.
        node.next.store(ptr::null_mut(), Ordering::Relaxed);
        node.locked.store(true, Ordering::Relaxed);
        let me = node as *const McsNode as *mut McsNode;
        // AcqRel: acquire the previous holder's release; release our node's
        // initialisation to the successor that will link behind it.
        let pred = self.tail.swap(me, Ordering::AcqRel);
        if !pred.is_null() {
            // SAFETY: a queued predecessor's node stays valid until it has
            // handed the lock to us, which needs this link.
            unsafe { self.wait_behind(&*pred, node) };
        }
    }

    #[cold]
    fn wait_behind(&self, pred: &McsNode, node: &McsNode) {
        pred.next
            .store(node as *const McsNode as *mut McsNode, Ordering::Release);
        // Acquire: the predecessor's critical section happens before ours.
        while node.locked.load(Ordering::Acquire) {
            spin_loop();
        }
    }

    /// Acquires the lock with `node` if it is free, without queueing.
    ///
    /// # Safety
    /// As for [`McsLock::lock_with`] when it returns `true`.
    #[inline]
    pub unsafe fn try_lock_with(&self, node: &McsNode) -> bool {
        node.next.store(ptr::null_mut(), Ordering::Relaxed); // Relaxed: published by the CAS.
        let me = node as *const McsNode as *mut McsNode;
        // AcqRel: as the swap in `lock_with`.
        self.tail
            .compare_exchange(ptr::null_mut(), me, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Releases the lock acquired with `node`.
    ///
    /// # Safety
    /// The calling thread holds the lock through `node`.
    #[inline]
    pub unsafe fn unlock_with(&self, node: &McsNode) {
        // Acquire: the successor's node initialisation happens before we touch it.
        let mut next = node.next.load(Ordering::Acquire);
        if next.is_null() {
            let me = node as *const McsNode as *mut McsNode;
            // Release: our critical section happens before the next acquirer's swap.
            if self
                .tail
                .compare_exchange(me, ptr::null_mut(), Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
            next = wait_for_successor_link(node);
        }
        // SAFETY: a linked successor spins on its node until this store.
        unsafe { (*next).locked.store(false, Ordering::Release) };
    }
}

/// A successor swapped itself into `tail` but has not linked yet.
#[cold]
fn wait_for_successor_link(node: &McsNode) -> *mut McsNode {
    loop {
        let next = node.next.load(Ordering::Acquire);
        if !next.is_null() {
            return next;
        }
        spin_loop();
    }
}

impl Default for McsLock {
    fn default() -> Self {
        Self::new()
    }
}

// `lock`/`unlock` with a node from this thread's pool, kept in `holder_node`.
node_free_raw_lock!(McsLock, McsNode, "mcs");
