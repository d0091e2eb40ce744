//! Maps atomics, spin hints, threads and futexes to `loom` under
//! `cfg(loom)` and to core/std and the kernel otherwise, so the same lock
//! code is model-checked and shipped.

#[cfg(loom)]
pub(crate) use loom::hint::spin_loop;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, Ordering};
#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::thread;

#[cfg(not(loom))]
pub(crate) use core::hint::spin_loop;
#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, Ordering};
#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::thread;

// The futex calls of `FutexLock` and `RwLock`: the kernel's, or under loom
// a model in which a sleeper blocks until woken, so a lost wake-up is a
// deadlock.
#[cfg(all(not(loom), target_os = "linux"))]
pub(crate) use crate::sys::futex;
#[cfg(all(loom, target_os = "linux"))]
pub(crate) use crate::sys::futex_model as futex;

/// Declares `fn $name() -> $ret` as `const fn` outside loom (loom's atomics
/// cannot be built in const context) and as a plain `fn` under loom.
macro_rules! const_fn_unless_loom {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty $body:block) => {
        #[cfg(not(loom))]
        $(#[$meta])*
        $vis const fn $name($($arg: $ty),*) -> $ret $body
        #[cfg(loom)]
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) -> $ret $body
    };
}

/// A thread-local that is const-initialised and has no destructor outside
/// loom (no allocation, no registration at first use: safe inside an
/// interposed `pthread_mutex_lock`), and a per-model-thread local under loom.
macro_rules! const_thread_local {
    ($(#[$meta:meta])* static $name:ident: $ty:ty = $init:expr;) => {
        #[cfg(not(loom))]
        std::thread_local! { $(#[$meta])* static $name: $ty = const { $init }; }
        #[cfg(loom)]
        loom::thread_local! { $(#[$meta])* static $name: $ty = $init; }
    };
}

pub(crate) use {const_fn_unless_loom, const_thread_local};
