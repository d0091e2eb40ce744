//! The heavy half of an asymmetric fence: `membarrier(2)` makes every CPU
//! running a thread of this process execute a full barrier, so that a hot
//! path paired with it needs only a compiler fence. Used by the parking of
//! waiters: the rare waiter pays a system call, every unlock pays nothing.

use core::sync::atomic::{AtomicU8, Ordering};

/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED` (Linux 4.14).
const PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
/// `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`.
const REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

const UNKNOWN: u8 = 0;
const REGISTERED: u8 = 1;
const UNAVAILABLE: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Whether [`heavy`] is a membarrier: the light side may then be a
/// compiler fence. False until the first [`heavy`] registered the process,
/// and where the kernel lacks the command.
#[inline]
pub fn available() -> bool {
    // Relaxed: a light side that reads a stale `false` uses a full fence,
    // which is always correct.
    STATE.load(Ordering::Relaxed) == REGISTERED
}

/// Registers the process for [`heavy`]'s command, so that [`light`] is a
/// compiler fence from the start (before, it is a full fence). Call at
/// load, and again in a forked child (a new address space): single-threaded
/// there, so no light side runs with a stale state.
pub fn register() {
    // SAFETY: membarrier takes a command and flags; no memory.
    let rc = unsafe { libc::syscall(libc::SYS_membarrier, REGISTER_PRIVATE_EXPEDITED, 0) };
    // Release: publishes the registration before a light side relies on it.
    STATE.store(
        if rc == 0 { REGISTERED } else { UNAVAILABLE },
        Ordering::Release,
    );
}

/// Forgets the registration in a forked child (a new address space, one
/// thread): [`light`] is a full fence again until the next [`register`] or
/// [`heavy`]. Cheaper than registering there, which a child that only execs
/// would pay for nothing.
pub fn forget() {
    // Relaxed: single-threaded (a fork child), nothing to publish.
    STATE.store(UNKNOWN, Ordering::Relaxed);
}

/// A full barrier on every CPU running this process's threads (or, where
/// membarrier is unavailable, a full fence on this one, which the light
/// side then matches with its own, as [`available`] says).
#[cold]
pub fn heavy() {
    // Acquire (both loads): pairs with `register`'s Release.
    if STATE.load(Ordering::Acquire) == UNKNOWN {
        register();
    }
    core::sync::atomic::fence(Ordering::SeqCst);
    if STATE.load(Ordering::Acquire) == REGISTERED {
        // SAFETY: as in `register`; the process is registered for this command.
        let rc = unsafe { libc::syscall(libc::SYS_membarrier, PRIVATE_EXPEDITED, 0) };
        debug_assert_eq!(rc, 0, "membarrier after registration");
    }
}

/// The light half: a compiler fence where [`heavy`] is a membarrier, a
/// full fence otherwise.
#[inline]
pub fn light() {
    if available() {
        core::sync::atomic::compiler_fence(Ordering::SeqCst);
    } else {
        core::sync::atomic::fence(Ordering::SeqCst);
    }
}
