//! The two thread-local words every lock attempt reads. On x86_64 Linux
//! they live in the initial-exec TLS model: two instructions to find them,
//! where a `thread_local!` in the preload library (a shared object, so the
//! general-dynamic model) calls `__tls_get_addr` on every lock. That model
//! needs the library loaded at start-up (`LD_PRELOAD`, as `corral run`
//! does) or room in glibc's static TLS surplus for a later `dlopen`.

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

impl Hot {
    /// The calling thread's [`Watch`]; `None` until it is registered.
    #[inline(always)]
    pub(super) fn watch(&self) -> Option<&Watch> {
        let watch = self.watch.get();
        // SAFETY: a non-null `watch` points to a static slot's `Watch` or to
        // this thread's own `Local::unmanaged`, both live while it runs (and
        // `Hot` is the running thread's own).
        (!watch.is_null()).then(|| unsafe { &*watch })
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod imp {
    use super::Hot;

    // 16 zeroed bytes of each thread's TLS block (.tbss is zero-filled for
    // every thread, as `Hot`'s initial state wants). Global but hidden: code
    // inlined into other crates of the same library names it, nothing outside.
    core::arch::global_asm!(
        ".pushsection .tbss.corral_runtime_attempt_hot,\"awT\",@nobits",
        ".globl corral_runtime_attempt_hot",
        ".hidden corral_runtime_attempt_hot",
        ".type corral_runtime_attempt_hot, @tls_object",
        ".size corral_runtime_attempt_hot, 16",
        ".p2align 3",
        "corral_runtime_attempt_hot:",
        ".zero 16",
        ".popsection",
    );

    const _: () = assert!(core::mem::size_of::<Hot>() == 16 && core::mem::align_of::<Hot>() <= 8);

    /// Runs `f` on the calling thread's [`Hot`].
    #[inline(always)]
    pub(in crate::registry) fn with<R>(f: impl FnOnce(&Hot) -> R) -> R {
        let p: *const Hot;
        // SAFETY: the initial-exec sequence of the x86_64 TLS ABI: %fs:0 is
        // the thread pointer, the GOT slot holds the symbol's offset from it.
        // Both words are fixed for the thread, hence `pure`.
        unsafe {
            core::arch::asm!(
                "mov {p}, qword ptr fs:[0]",
                "add {p}, qword ptr [rip + corral_runtime_attempt_hot@GOTTPOFF]",
                p = out(reg) p,
                options(pure, readonly, nostack),
            );
        }
        // SAFETY: `p` is this thread's 16 bytes, 8-aligned, which live as
        // long as the thread and which only this thread touches; all-zero
        // bytes are a valid `Hot` (null pointer, zero).
        f(unsafe { &*p })
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
}

pub(super) use imp::with;
