//! The two thread-local words every lock attempt reads. On x86_64 Linux a
//! lock attempt finds them in two instructions, `%fs:0` plus an offset
//! kept in [`TPOFF`], as the initial-exec TLS model would, where a
//! `thread_local!` in a shared object calls `__tls_get_addr` on every lock.
//! The words themselves are static TLS of a library loaded at start-up:
//! `libcorral_shim.so`'s when the shim is there (it loads this library
//! late, with `dlopen`, which may not use static TLS), else this library's
//! own [`OWN`], which is static TLS when the library itself was preloaded.
//! Until [`place`] runs (a lock call made before the library's
//! constructor) the attempt reaches [`OWN`] through `__tls_get_addr`.

use core::cell::Cell;

use super::Watch;

/// What a lock attempt compares; all-zero bytes are the initial state.
#[repr(C)]
pub(super) struct Hot {
    /// The words to watch and count in; null until the thread is registered.
    pub(super) watch: Cell<*const Watch>,
    /// The value of `watch.placement_seq` at which an attempt has nothing
    /// more to do.
    pub(super) quiet: Cell<u64>,
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod imp {
    use super::Hot;
    use core::cell::Cell;
    use core::sync::atomic::{AtomicIsize, Ordering};

    const _: () = assert!(core::mem::size_of::<Hot>() == 16 && core::mem::align_of::<Hot>() <= 8);

    /// The words' offset from the thread pointer, the same for every
    /// thread (static TLS); 0 until [`place`].
    static TPOFF: AtomicIsize = AtomicIsize::new(0);

    std::thread_local! {
        // Const-initialised, no destructor: first use allocates nothing
        // where the block is static.
        static OWN: Hot = const {
            Hot { watch: Cell::new(core::ptr::null()), quiet: Cell::new(0) }
        };
    }

    /// The thread pointer (`%fs:0` holds its own address, x86_64 TLS ABI).
    #[inline(always)]
    fn thread_pointer() -> isize {
        let tp: isize;
        // SAFETY: reads the TCB's self-pointer; fixed for the thread.
        unsafe {
            core::arch::asm!(
                "mov {tp}, qword ptr fs:[0]",
                tp = out(reg) tp,
                options(pure, readonly, nostack, preserves_flags),
            );
        }
        tp
    }

    /// Runs `f` on the calling thread's [`Hot`].
    #[inline(always)]
    pub(in crate::registry) fn with<R>(f: impl FnOnce(&Hot) -> R) -> R {
        let off: isize;
        // SAFETY: a plain 8-byte load of TPOFF (as a Relaxed atomic load:
        // set once before any other thread runs this library's code, and
        // readers before it take the cold path to the same bytes), named
        // directly: a Rust access of a static of another crate of this
        // library goes through the GOT, one load more on every lock.
        unsafe {
            core::arch::asm!(
                "mov {off}, qword ptr [rip + {tpoff}]",
                off = out(reg) off,
                tpoff = sym TPOFF,
                options(readonly, nostack, preserves_flags),
            );
        }
        let p = if off != 0 {
            (thread_pointer() + off) as *const Hot
        } else {
            own()
        };
        // SAFETY: `p` is this thread's 16 bytes, 8-aligned, which live as
        // long as the thread and which only this thread touches; all-zero
        // bytes are a valid `Hot` (null pointer, zero).
        f(unsafe { &*p })
    }

    #[cold]
    #[inline(never)]
    fn own() -> *const Hot {
        OWN.with(|h| h as *const Hot)
    }

    /// Where the words live from now on: at `shim_tpoff` from the thread
    /// pointer (the shim's static TLS), or with `None` this library's own,
    /// which must then be static TLS (the library was loaded at start-up,
    /// as `LD_PRELOAD` does: the only other way corral loads it is the
    /// shim's `dlopen`).
    pub(in crate::registry) fn place(shim_tpoff: Option<isize>) {
        let off = shim_tpoff.unwrap_or_else(|| own() as isize - thread_pointer());
        // Relaxed: see `with`.
        TPOFF.store(off, Ordering::Relaxed);
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod imp {
    use super::Hot;
    use core::cell::Cell;

    std::thread_local! {
        // Const-initialised, no destructor: first use allocates nothing.
        static HOT: Hot = const {
            Hot { watch: Cell::new(core::ptr::null()), quiet: Cell::new(0) }
        };
    }

    /// Runs `f` on the calling thread's [`Hot`].
    #[inline(always)]
    pub(in crate::registry) fn with<R>(f: impl FnOnce(&Hot) -> R) -> R {
        HOT.with(f)
    }

    /// Nothing to place: every thread reaches its own `thread_local!`.
    pub(in crate::registry) fn place(_shim_tpoff: Option<isize>) {}
}

pub(super) use imp::{place, with};
