//! `libcorral_preload.so`: replaces an unmodified program's pthread mutexes,
//! spin locks and condition variables with corral's instrumented locks
//! (LD_PRELOAD), and starts the runtime's monitor that applies the SSC
//! policy (paper 1, Sec. 3) to the program's threads.
//!
//! Rules every interposed entry point keeps: no allocation (corral's lock
//! state lives inside the caller's `pthread_mutex_t`, or for K42 in a fixed
//! side table), lazy registration of a thread on its first lock, zero bytes
//! (the static initialisers) are a valid unlocked lock, and a failure of
//! corral's monitor leaves the program running on corral's plain locks.

mod cond;
mod init;
mod lockdispatch;
mod mutex;
mod spin;

pub use corral_runtime::abi;
