//! Which lock algorithm the process uses, and where its state lives for a
//! given mutex address.

use core::sync::atomic::{AtomicU8, Ordering};

use corral_locks::Algorithm;

/// Index into `Algorithm::ALL`; `UNSET` until first read.
static ALG: AtomicU8 = AtomicU8::new(UNSET);
const UNSET: u8 = u8::MAX;

/// The algorithm of this process: `CORRAL_LOCK`, read once without
/// allocating (it may be first needed inside a lock call before `main`).
#[inline]
pub(crate) fn current() -> Algorithm {
    let i = ALG.load(Ordering::Relaxed); // Relaxed: every racing reader computes the same value.
    match Algorithm::ALL.get(i as usize) {
        Some(&alg) => alg,
        None => init_from_env(),
    }
}

#[cold]
fn init_from_env() -> Algorithm {
    let default = corral_runtime::config::RuntimeConfig::default().lock;
    // SAFETY: the name is a NUL-terminated C string; getenv allocates nothing.
    let raw = unsafe { libc::getenv(c"CORRAL_LOCK".as_ptr()) };
    let alg = if raw.is_null() {
        default
    } else {
        // SAFETY: getenv returned a NUL-terminated string that lives as long
        // as the environment is not modified.
        let bytes = unsafe { core::ffi::CStr::from_ptr(raw) }.to_bytes();
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name().as_bytes() == bytes)
            .unwrap_or(default)
    };
    let index = Algorithm::ALL.iter().position(|&a| a == alg).unwrap_or(0);
    ALG.store(index as u8, Ordering::Relaxed); // Relaxed: see `current`.
    alg
}

/// Runs `$body` with `$l` bound to the lock of algorithm [`current`] that
/// serves the mutex whose state begins at `$state`: corral-locks'
/// `with_lock_type!` picks the type, [`in_place`] lays it over the state.
/// Every algorithm's lock fits in [`IN_PLACE_BYTES`] and is unlocked when
/// zeroed, so it lives inside the caller's pthread object. Contract:
/// `$state` satisfies [`in_place`]'s safety conditions.
macro_rules! with_lock {
    ($state:expr, $l:ident => $body:expr) => {
        corral_locks::with_lock_type!($crate::lockdispatch::current(), Lock => {
            // SAFETY: `$state` is a mutex's state words (the macro's contract).
            let $l: &Lock = unsafe { $crate::lockdispatch::in_place::<Lock>($state) };
            $body
        })
    };
}
pub(crate) use with_lock;

/// Bytes of lock state a mutex can hold.
pub(crate) const IN_PLACE_BYTES: usize = 16;

/// The lock of type `L` stored at `state`.
///
/// # Safety
/// `state` points to [`IN_PLACE_BYTES`] bytes of atomics inside a live,
/// 8-aligned pthread object that corral owns, which outlives `'a`.
#[inline]
pub(crate) unsafe fn in_place<'a, L>(state: *mut u8) -> &'a L {
    const { assert!(core::mem::size_of::<L>() <= IN_PLACE_BYTES && core::mem::align_of::<L>() <= 8) };
    // SAFETY: the caller's contract; every algorithm's all-zero bytes are
    // its unlocked state, and its fields are atomics like the bytes below.
    unsafe { &*(state as *const L) }
}
