//! Per-thread pools of queue nodes, so the queue locks (MCS, CLH) offer a
//! node-free `lock`/`unlock` pair to pthread-style callers that acquire in
//! one call and release in another.
//!
//! A pool lives in a const-initialised, destructor-free thread-local: taking
//! a node never allocates and never registers anything, which keeps the locks
//! usable inside an interposed `pthread_mutex_lock`. [`node_free_raw_lock!`]
//! builds that node-free form once for every queue lock.

use core::cell::Cell;

/// How many queue locks of one algorithm a thread may hold (or wait for) at
/// once through the node-free API. Each slot costs one cache line per thread.
pub const MAX_NESTED_QUEUE_LOCKS: usize = 32;

/// A fixed set of nodes and a bitmap of the ones in use by this thread.
pub(crate) struct NodePool<N> {
    nodes: [N; MAX_NESTED_QUEUE_LOCKS],
    in_use: Cell<u32>,
}

impl<N> NodePool<N> {
    pub(crate) const fn new(nodes: [N; MAX_NESTED_QUEUE_LOCKS]) -> Self {
        Self {
            nodes,
            in_use: Cell::new(0),
        }
    }

    /// Takes a free node; it stays reserved until [`NodePool::give_back`].
    #[inline]
    pub(crate) fn take(&self) -> *const N {
        let used = self.in_use.get();
        let slot = (!used).trailing_zeros() as usize;
        if slot >= MAX_NESTED_QUEUE_LOCKS {
            pool_exhausted();
        }
        self.in_use.set(used | (1 << slot));
        &self.nodes[slot]
    }

    /// Returns a node obtained from [`NodePool::take`] on this pool.
    #[inline]
    pub(crate) fn give_back(&self, node: *const N) {
        let offset = node as usize - self.nodes.as_ptr() as usize;
        let slot = offset / core::mem::size_of::<N>();
        debug_assert!(slot < MAX_NESTED_QUEUE_LOCKS, "node from another pool");
        self.in_use.set(self.in_use.get() & !(1 << slot));
    }
}

#[cold]
#[inline(never)]
fn pool_exhausted() -> ! {
    panic!("a thread holds more than {MAX_NESTED_QUEUE_LOCKS} queue locks of one algorithm at once")
}

/// Builds the node array of a pool: `[const { .. }; N]` outside loom, where
/// the node constructor is `const`, and element by element under loom.
macro_rules! pool_nodes {
    ($new_node:expr) => {{
        #[cfg(not(loom))]
        let nodes = [const { $new_node }; $crate::pool::MAX_NESTED_QUEUE_LOCKS];
        #[cfg(loom)]
        let nodes = core::array::from_fn(|_| $new_node);
        nodes
    }};
}

/// Implements [`RawLock`](crate::RawLock) for the queue lock `$lock` on top
/// of its `lock_with`/`try_lock_with`/`unlock_with`, with a per-thread pool of
/// `$node`s. Each acquisition takes a node from the pool and records it in the
/// lock's `holder_node`, so `unlock` (a later call on the same thread) finds
/// it, releases with it and gives it back. `$lock` needs the fields
/// `tail: AtomicPtr<$node>` (null exactly when the lock is idle) and
/// `holder_node: AtomicPtr<$node>`; `$node` needs a `new()` constructor.
macro_rules! node_free_raw_lock {
    ($lock:ty, $node:ty, $name:literal) => {
        const _: () = {
            use $crate::pool::NodePool;
            use $crate::sync::Ordering;

            $crate::sync::const_thread_local! {
                static NODES: NodePool<$node> =
                    NodePool::new($crate::pool::pool_nodes!(<$node>::new()));
            }

            impl $crate::RawLock for $lock {
                const NAME: &'static str = $name;

                #[inline]
                fn lock(&self) {
                    let node = NODES.with(NodePool::take);
                    // SAFETY: the pool reserves the node for this acquisition
                    // until unlock.
                    unsafe { self.lock_with(&*node) };
                    // Relaxed: only the holder reads it.
                    self.holder_node.store(node.cast_mut(), Ordering::Relaxed);
                }

                #[inline]
                fn try_lock(&self) -> bool {
                    let node = NODES.with(NodePool::take);
                    // SAFETY: as in `lock`; on failure the node was never
                    // published.
                    if unsafe { self.try_lock_with(&*node) } {
                        // Relaxed: only the holder reads it.
                        self.holder_node.store(node.cast_mut(), Ordering::Relaxed);
                        true
                    } else {
                        NODES.with(|pool| pool.give_back(node));
                        false
                    }
                }

                #[inline]
                unsafe fn unlock(&self) {
                    // Relaxed: written by this thread in `lock`/`try_lock`.
                    let node = self.holder_node.load(Ordering::Relaxed);
                    // SAFETY: the caller holds the lock, acquired on this
                    // thread with `node`.
                    unsafe { self.unlock_with(&*node) };
                    NODES.with(|pool| pool.give_back(node));
                }

                #[inline]
                fn is_locked(&self) -> bool {
                    // Relaxed: a snapshot, no data guarded.
                    !self.tail.load(Ordering::Relaxed).is_null()
                }
            }
        };
    };
}

pub(crate) use {node_free_raw_lock, pool_nodes};
