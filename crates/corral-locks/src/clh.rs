//! The CLH queue lock.

use core::ptr;

use crate::pool::node_free_raw_lock;
use crate::sync::{const_fn_unless_loom, spin_loop, AtomicPtr, AtomicU32, Ordering};

/// The node is not referenced by any queue: its owner may reuse it.
const FREE: u32 = 0;
/// The owner holds the lock or waits for it.
const HELD: u32 = 1;
/// The owner released the lock; the successor has not yet acknowledged.
const RELEASED: u32 = 2;

/// One acquisition's queue entry. Its successor spins on it (not on its own
/// node, unlike MCS). Aligned to a cache line so spinners share nothing else.
#[repr(align(64))]
#[derive(Debug)]
pub struct ClhNode {
    state: AtomicU32,
}

impl ClhNode {
    const_fn_unless_loom! {
        /// A node ready for [`ClhLock::lock_with`].
        pub fn new() -> Self {
            Self { state: AtomicU32::new(FREE) }
        }
    }
}

impl Default for ClhNode {
    fn default() -> Self {
        Self::new()
    }
}

/// CLH lock: the queue is implicit; each waiter swaps its node into `tail`
/// and spins on its predecessor's node (Craig 1993, as evaluated in
/// "Non-scalable locks are dangerous", Boyd-Wickizer et al. 2012, Sec. 4.1).
///
/// Node recycling: the classic algorithm hands each released node to the
/// successor, so nodes migrate between threads and must outlive them, which
/// needs an allocator. Here nodes stay with their owner instead: the
/// successor acknowledges the release (`RELEASED` -> `FREE`) and the releaser
/// waits for that acknowledgement before its node can be reused. This costs
/// the releaser one cache-line round trip when there is a waiter (the paper's
/// Fig. 11 likewise charges CLH for its recycling scheme) but never allocates.
/// An idle lock points at no node (`tail` is null), so it may be moved.
#[derive(Debug)]
pub struct ClhLock {
    tail: AtomicPtr<ClhNode>,
    /// The node the current holder used via the node-free API.
    holder_node: AtomicPtr<ClhNode>,
}

impl ClhLock {
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
    /// address and alive until the matching [`ClhLock::unlock_with`] returns:
    /// the successor reads it until then.
    #[inline]
    pub unsafe fn lock_with(&self, node: &ClhNode) {
        node.state.store(HELD, Ordering::Relaxed); // Relaxed: published by the swap/CAS below.
        let me = node as *const ClhNode as *mut ClhNode;
        // AcqRel: acquire the previous idle-release; release `HELD` to our successor.
        let pred = self.tail.swap(me, Ordering::AcqRel);
        if !pred.is_null() {
            // SAFETY: the predecessor's owner keeps its node alive until we
            // acknowledge below.
            unsafe { wait_for_release(&*pred) };
        }
    }

    /// Acquires the lock with `node` if it is free, without queueing.
    ///
    /// # Safety
    /// As for [`ClhLock::lock_with`] when it returns `true`.
    #[inline]
    pub unsafe fn try_lock_with(&self, node: &ClhNode) -> bool {
        node.state.store(HELD, Ordering::Relaxed); // Relaxed: published by the swap/CAS below.
        let me = node as *const ClhNode as *mut ClhNode;
        // AcqRel: as the swap in `lock_with`.
        self.tail
            .compare_exchange(ptr::null_mut(), me, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Releases the lock acquired with `node`; returns once no other thread
    /// references `node`.
    ///
    /// # Safety
    /// The calling thread holds the lock through `node`.
    #[inline]
    pub unsafe fn unlock_with(&self, node: &ClhNode) {
        let me = node as *const ClhNode as *mut ClhNode;
        // Release: our critical section happens before the next acquirer's swap.
        if self
            .tail
            .compare_exchange(me, ptr::null_mut(), Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            hand_over(node);
        }
    }
}

/// Spins on the predecessor's node, then acknowledges so it can be reused.
#[cold]
fn wait_for_release(pred: &ClhNode) {
    // Acquire: the predecessor's critical section happens before ours.
    while pred.state.load(Ordering::Acquire) != RELEASED {
        spin_loop();
    }
    // Release: our last read of `pred` happens before its owner reuses it.
    pred.state.store(FREE, Ordering::Release);
}

/// A successor is queued behind `node`: release to it and await its ack.
#[cold]
fn hand_over(node: &ClhNode) {
    node.state.store(RELEASED, Ordering::Release);
    while node.state.load(Ordering::Acquire) != FREE {
        spin_loop();
    }
}

impl Default for ClhLock {
    fn default() -> Self {
        Self::new()
    }
}

// `lock`/`unlock` with a node from this thread's pool, kept in `holder_node`.
node_free_raw_lock!(ClhLock, ClhNode, "clh");
