//! `sched_yield` and glibc's `pthread_yield`, counted: a thread that yields about as often as it locks
//! gives its core away inside or beside its critical sections, and the
//! policy keeps it off the SSC (`corral_policy::detect::gives_core_away`).
//! The yield itself is the kernel's, unchanged.

use core::ffi::c_int;

/// POSIX `sched_yield`: counts the call for the monitor, then yields.
#[no_mangle]
pub extern "C" fn sched_yield() -> c_int {
    corral_runtime::registry::on_yield();
    corral_locks::sys::sched::yield_cpu()
}

/// glibc's `pthread_yield` (sysbench's): glibc forwards it to its own
/// `sched_yield` internally, past any interposition, so it is caught here.
#[no_mangle]
pub extern "C" fn pthread_yield() -> c_int {
    sched_yield()
}
