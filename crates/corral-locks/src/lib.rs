//! Lock algorithms for corral, shared by the real-machine runtime, the
//! LD_PRELOAD interposer and the simulator's cost model: the non-scalable
//! spin locks whose collapse "Non-scalable locks are dangerous"
//! (Boyd-Wickizer et al. 2012) explains (TAS, TTAS, ticket, proportional
//! ticket), the scalable queue locks it recommends (MCS, CLH, K42), and
//! parking locks that survive oversubscription (futex, adaptive), and a
//! futex reader-writer lock with glibc's preferences ([`RwLock`]).
//!
//! Every lock implements [`RawLock`]; [`wait::Timed`] adds per-thread
//! lock-wait accounting (paper 1, Algorithm 1). [`sys`] is the OS layer
//! (clocks, futexes) the other corral crates use too. No lock or unlock path
//! allocates, so the locks can run inside an interposed `pthread_mutex_lock`.

mod adaptive;
mod algorithm;
mod clh;
mod futex;
mod k42;
mod mcs;
mod pool;
#[cfg(target_os = "linux")]
mod rwlock;
mod sync;
pub mod sys;
mod tas;
mod ticket;
mod ticket_backoff;
mod ttas;
pub mod wait;
#[cfg(not(loom))]
pub mod wake_cost;

pub use adaptive::{AdaptiveLock, ADAPTIVE_SPIN_LIMIT};
pub use algorithm::{Algorithm, UnknownAlgorithm};
pub use clh::{ClhLock, ClhNode};
pub use futex::FutexLock;
pub use k42::K42Lock;
pub use mcs::{McsLock, McsNode};
pub use pool::MAX_NESTED_QUEUE_LOCKS;
#[cfg(target_os = "linux")]
pub use rwlock::{RwDeadline, RwError, RwLock, RwPreference};
pub use tas::TasLock;
pub use ticket::TicketLock;
pub use ticket_backoff::{TicketBackoffLock, PROPORTIONAL_BACKOFF_SPINS_PER_WAITER};
pub use ttas::{TtasLock, TTAS_MAX_BACKOFF_SPINS, TTAS_MIN_BACKOFF_SPINS};
pub use wait::{record_wait, Timed, WaitCounter};

/// A mutual-exclusion lock with a pthread-style interface: `lock` and
/// `unlock` may happen in different calls of the same thread, and a thread
/// may hold several locks at once.
///
/// Every lock in this crate is at most two words, 8-aligned, made of
/// atomics, and all-zero bytes are its unlocked state, so it can live inside
/// a `pthread_mutex_t`. A thread must not exit while holding a queue lock
/// (MCS, CLH) taken through this node-free form: its node dies with it.
pub trait RawLock: Send + Sync + Default {
    /// Short CLI name, e.g. "ticket".
    const NAME: &'static str;

    /// Acquires the lock, waiting as the algorithm does.
    fn lock(&self);

    /// Acquires the lock if that needs no waiting; `true` on success.
    fn try_lock(&self) -> bool;

    /// Releases the lock.
    ///
    /// # Safety
    /// The calling thread holds the lock (acquired by `lock`/`try_lock` on
    /// this thread).
    unsafe fn unlock(&self);

    /// Whether some thread holds (or is queued for) the lock: a snapshot.
    fn is_locked(&self) -> bool;
}
