//! The on-CPU table (see corral-runtime's `oncpu`): `corral run` passes a
//! read-only descriptor of its BPF map, named in [`ENV_ONCPU_FD`]; the
//! shim maps it at load and closes the descriptor, so the program never
//! sees it. The full library, whenever it loads, asks for the mapping
//! ([`corral_shim_oncpu_table`]).

use core::ffi::CStr;
use core::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

use crate::sys;

/// Must match corral-runtime's `ENV_ONCPU_FD` (a test checks).
pub(crate) const ENV_ONCPU_FD: &CStr = c"CORRAL_ONCPU_FD";

/// Must match corral-runtime's `ONCPU_BYTES` (a test checks).
pub(crate) const ONCPU_BYTES: usize = 65_536 * 8;

/// The mapped table; null where there is none.
static TABLE: AtomicPtr<u64> = AtomicPtr::new(core::ptr::null_mut());

/// Whether [`adopt`] ran: its first caller does the work (a program's own
/// constructors may lock, and so load the full library, before the shim's
/// constructor runs).
static ADOPTED: AtomicU8 = AtomicU8::new(0);

/// What `/proc/self/fd/N` reads for a BPF map's descriptor.
const BPF_MAP_LINK: &[u8] = b"anon_inode:bpf-map";

/// Maps the table from the descriptor in the environment, if this is the
/// process `corral run` started, the descriptor is there and is a BPF map
/// (a program may have closed it and opened something else under its
/// number), then closes the descriptor. Only the first call does anything.
#[inline(never)]
pub(crate) fn adopt() {
    // Relaxed: the CAS elects one caller; a racing caller finds no table
    // yet and its waiters spin on the budget, as without BPF.
    if ADOPTED
        .compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
        || crate::process::started_by().is_none()
    {
        return;
    }
    let Some(fd) = sys::env(ENV_ONCPU_FD).and_then(|v| crate::process::parse_pid(v.to_bytes()))
    else {
        return;
    };
    if !sys::fd_link_is(fd, BPF_MAP_LINK) {
        return;
    }
    let table = sys::map_read_only(fd, ONCPU_BYTES);
    sys::close(fd);
    // Release: a reader that sees the pointer sees the mapping.
    TABLE.store(table.cast_mut(), Ordering::Release);
}

/// The table mapped at load, or null: the full library's way to it.
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn corral_shim_oncpu_table() -> *const u64 {
    adopt();
    TABLE.load(Ordering::Acquire) // Acquire: pairs with adopt's Release.
}
