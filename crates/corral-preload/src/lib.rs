//! `libcorral_preload.so`: replaces an unmodified program's pthread mutexes,
//! reader-writer locks, spin locks and condition variables with corral's
//! instrumented locks (LD_PRELOAD), counts `sched_yield` and `pthread_yield` calls for the
//! policy, and starts the runtime's monitor that
//! applies the SSC policy (paper 1, Sec. 3) to the program's threads when
//! the process makes its second thread (`pthread_create` is interposed for
//! that alone).
//!
//! Rules every interposed entry point keeps: no allocation (corral's lock
//! state lives inside the caller's pthread object, or for K42 in a fixed
//! side table), lazy registration of a thread on its first lock, zero bytes
//! (the static initialisers) are a valid unlocked lock, and a failure of
//! corral's monitor leaves the program running on corral's plain locks.

mod cond;
mod deadline;
mod glibc;
mod init;
mod lockdispatch;
mod mutex;
mod mutex_core;
mod mutex_words;
mod profiled;
mod rwlock;
mod spin;
mod yield_;

pub use corral_runtime::abi;

// The interposed C entry points: exported by name from the cdylib, and
// callable from Rust through the rlib.
pub use cond::{
    pthread_cond_broadcast, pthread_cond_clockwait, pthread_cond_destroy, pthread_cond_init,
    pthread_cond_signal, pthread_cond_timedwait, pthread_cond_wait,
};
pub use init::{corral_preload_late_start, pthread_create};
pub use mutex::{
    pthread_mutex_clocklock, pthread_mutex_destroy, pthread_mutex_init, pthread_mutex_lock,
    pthread_mutex_timedlock, pthread_mutex_trylock, pthread_mutex_unlock,
};
pub use mutex_core::{corral_preload_mutex_ops, MutexOps};
pub use rwlock::{
    pthread_rwlock_clockrdlock, pthread_rwlock_clockwrlock, pthread_rwlock_destroy,
    pthread_rwlock_init, pthread_rwlock_rdlock, pthread_rwlock_timedrdlock,
    pthread_rwlock_timedwrlock, pthread_rwlock_tryrdlock, pthread_rwlock_trywrlock,
    pthread_rwlock_unlock, pthread_rwlock_wrlock,
};
pub use spin::{
    pthread_spin_destroy, pthread_spin_init, pthread_spin_lock, pthread_spin_trylock,
    pthread_spin_unlock,
};
pub use yield_::{pthread_yield, sched_yield};
