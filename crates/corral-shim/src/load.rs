//! Loading the full library: where the first interposed call (see
//! `entries`) finds each function.

use core::ffi::CStr;

use crate::sys;

/// Names the full library (`corral_runtime::config::ENV_SHIM_TARGET`).
pub(crate) const ENV_TARGET: &CStr = c"CORRAL_SHIM_TARGET";
/// `corral_runtime::config::ENV_LOAD_AFTER_CONTENDED`: where set (by
/// `corral run --load-after-contended N`, for a parking algorithm only), the
/// full library loads at the N-th contended hand-off (an unlock that finds
/// a thread asleep on the mutex), not at the first interposed call (see
/// `entries::deferred_unlock`).
pub(crate) const ENV_LOAD_AFTER: &CStr = c"CORRAL_LOAD_AFTER_CONTENDED";
/// `corral_runtime::config::ENV_START_FD_C`: the start pipe's descriptor.
pub(crate) const ENV_START_FD: &CStr = c"CORRAL_START_FD";
/// `corral_runtime::config::ENV_START_LINK_C`: its `/proc/self/fd` link.
pub(crate) const ENV_START_LINK: &CStr = c"CORRAL_START_LINK";

/// Fills `targets` from the full library (null where it has no such
/// name); `mutex_ops` are the indexes of `pthread_mutex_lock`, `_trylock`
/// and `_unlock`, which get its algorithm's functions. Does nothing (after
/// one line on stderr) where it cannot be loaded or is not corral's full
/// library: another library's (or this one's own) functions of these names
/// could lead straight back here. Returns the full library's
/// `corral_preload_late_start` (null where it has none or did not load).
pub(crate) fn load_into<const N: usize>(
    targets: &mut [*const (); N],
    names: &[&CStr; N],
    mutex_ops: [usize; 3],
) -> *const () {
    let Some(path) = sys::env(ENV_TARGET) else {
        return core::ptr::null();
    };
    let handle = sys::open_local(path);
    if handle.is_null() {
        crate::region::say(&[
            b"corral: cannot load ",
            path.to_bytes(),
            b" (no file, or no room in glibc's static TLS: corral run reserves it in \
              GLIBC_TUNABLES); the program runs on glibc's locks\n",
        ]);
        return core::ptr::null();
    }
    // SAFETY: a handle from open_local.
    let ops = unsafe { sys::symbol(handle, c"corral_preload_mutex_ops") };
    if ops.is_null() {
        crate::region::say(&[
            b"corral: ",
            path.to_bytes(),
            b" is not corral's full library (no corral_preload_mutex_ops); \
              the program runs on glibc's locks\n",
        ]);
        return core::ptr::null();
    }
    for (t, name) in targets.iter_mut().zip(names.iter()) {
        // SAFETY: a handle from open_local.
        *t = unsafe { sys::symbol(handle, name) };
    }
    let mut table = [core::ptr::null::<()>(); 3];
    // SAFETY: the full library's function of this type, writing three
    // function pointers (its `MutexOps`, C layout).
    unsafe {
        let f = core::mem::transmute::<*const (), extern "C" fn(*mut [*const (); 3])>(ops);
        f(&mut table);
    }
    for (&slot, op) in mutex_ops.iter().zip(table) {
        if let Some(t) = targets.get_mut(slot) {
            *t = op;
        }
    }
    // SAFETY: a handle from open_local.
    unsafe { sys::symbol(handle, c"corral_preload_late_start") }
}

/// In the process `corral run` spawned without a step between fork and
/// exec: waits until corral's watcher holds it (and will kill it if corral
/// dies), which the watcher says with a byte on the start pipe named in
/// the environment. A pipe closed without it means corral died before it
/// could hand this process over: it exits as if killed with corral. The
/// byte is looked at, not read, so that every process that finds the pipe
/// finds it; the descriptor is then closed, and a later exec (or the full
/// library, which does the same) finds none. The full library's
/// `init::wait_for_watcher` is its twin.
pub(crate) fn wait_for_watcher() {
    let (Some(fd), Some(link)) = (
        sys::env(ENV_START_FD).and_then(|v| crate::process::parse_pid(v.to_bytes())),
        sys::env(ENV_START_LINK),
    ) else {
        return;
    };
    if !sys::fd_link_is(fd, link.to_bytes()) {
        return;
    }
    let go = sys::wait_readable(fd);
    sys::close(fd);
    if !go {
        sys::exit_as_killed();
    }
}

/// The contended hand-offs to wait for before loading
/// ([`ENV_LOAD_AFTER`]); 0 (load at the first call) where unset or not a
/// number. Read as a pid is: at most 10 decimal digits.
pub(crate) fn load_after() -> u32 {
    sys::env(ENV_LOAD_AFTER)
        .and_then(|v| crate::process::parse_pid(v.to_bytes()))
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0)
}

/// Whether there is a full library to load.
pub(crate) fn has_target() -> bool {
    sys::env(ENV_TARGET).is_some()
}
