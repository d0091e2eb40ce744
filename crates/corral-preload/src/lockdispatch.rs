//! Which lock algorithm the process uses, and where its state lives for a
//! given mutex address.

use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use corral_locks::{Algorithm, K42Lock};

/// Index into `Algorithm::ALL`; `UNSET` until first read.
static ALG: AtomicU8 = AtomicU8::new(UNSET);
const UNSET: u8 = u8::MAX;

/// The algorithm of this process: `CORRAL_LOCK`, read once without
/// allocating (it may be first needed inside a lock call before `main`).
#[inline]
pub fn current() -> Algorithm {
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

/// Capacity of the K42 side table: K42's lock holds a cache-line node and
/// cannot fit in a `pthread_mutex_t`.
pub const K42_TABLE_SLOTS: usize = 4096;

#[repr(align(64))]
struct K42Entry {
    /// Address of the mutex this entry serves; 0 = free.
    key: AtomicUsize,
    lock: K42Lock,
}

static K42_TABLE: [K42Entry; K42_TABLE_SLOTS] = [const {
    K42Entry {
        key: AtomicUsize::new(0),
        lock: K42Lock::new(),
    }
}; K42_TABLE_SLOTS];

/// The K42 lock serving the mutex at `addr`, claimed on first use. Entries
/// are never released: a destroyed mutex is unlocked, so a new mutex at the
/// same address may reuse its lock.
#[inline]
pub fn k42_for(addr: usize) -> &'static K42Lock {
    let start = (addr >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52;
    for probe in 0..K42_TABLE_SLOTS {
        let e = &K42_TABLE[(start + probe) % K42_TABLE_SLOTS];
        // Acquire: pairs with the claiming CAS.
        let key = e.key.load(Ordering::Acquire);
        if key == addr {
            return &e.lock;
        }
        if key == 0 {
            match e
                .key
                .compare_exchange(0, addr, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return &e.lock,
                Err(other) if other == addr => return &e.lock,
                Err(_) => {}
            }
        }
    }
    k42_table_full()
}

/// Re-initialising a mutex whose K42 lock is held (a fork child resetting a
/// mutex held by a thread that did not survive the fork): the address gets
/// a fresh entry and the old one is retired.
pub fn k42_reinit(addr: usize) {
    let start = (addr >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52;
    for probe in 0..K42_TABLE_SLOTS {
        let e = &K42_TABLE[(start + probe) % K42_TABLE_SLOTS];
        // Acquire: pairs with the claiming CAS.
        match e.key.load(Ordering::Acquire) {
            0 => return,
            key if key == addr => {
                if corral_locks::RawLock::is_locked(&e.lock) {
                    // Release: publishes nothing new; retiring is a plain claim.
                    e.key.store(RETIRED, Ordering::Release);
                }
                return;
            }
            _ => {}
        }
    }
}

/// Key of an entry no mutex may use again.
const RETIRED: usize = usize::MAX;

#[cold]
fn k42_table_full() -> ! {
    let msg = b"corral: more than 4096 K42 mutexes; use another --lock\n";
    // SAFETY: writes a static buffer to stderr, then aborts.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::abort()
    }
}

/// Runs `$body` with `$l` bound to the lock of algorithm [`current`] that
/// serves the mutex whose state begins at `$state` and whose address is
/// `$addr`. Contract: `$state` satisfies [`in_place`]'s safety conditions.
macro_rules! with_lock {
    ($state:expr, $addr:expr, $l:ident => $body:expr) => {{
        use corral_locks::*;
        match $crate::lockdispatch::current() {
            Algorithm::K42 => {
                let $l: &K42Lock = $crate::lockdispatch::k42_for($addr);
                $body
            }
            Algorithm::Tas => {
                // SAFETY: `$state` is a mutex's state words (the macro's contract).
                let $l: &TasLock = unsafe { $crate::lockdispatch::in_place($state) };
                $body
            }
            Algorithm::Ttas => {
                // SAFETY: `$state` is a mutex's state words (the macro's contract).
                let $l: &TtasLock = unsafe { $crate::lockdispatch::in_place($state) };
                $body
            }
            Algorithm::Ticket => {
                // SAFETY: `$state` is a mutex's state words (the macro's contract).
                let $l: &TicketLock = unsafe { $crate::lockdispatch::in_place($state) };
                $body
            }
            Algorithm::TicketBackoff => {
                // SAFETY: `$state` is a mutex's state words (the macro's contract).
                let $l: &TicketBackoffLock = unsafe { $crate::lockdispatch::in_place($state) };
                $body
            }
            Algorithm::Mcs => {
                // SAFETY: `$state` is a mutex's state words (the macro's contract).
                let $l: &McsLock = unsafe { $crate::lockdispatch::in_place($state) };
                $body
            }
            Algorithm::Clh => {
                // SAFETY: `$state` is a mutex's state words (the macro's contract).
                let $l: &ClhLock = unsafe { $crate::lockdispatch::in_place($state) };
                $body
            }
            Algorithm::Futex => {
                // SAFETY: `$state` is a mutex's state words (the macro's contract).
                let $l: &FutexLock = unsafe { $crate::lockdispatch::in_place($state) };
                $body
            }
            Algorithm::Adaptive => {
                // SAFETY: `$state` is a mutex's state words (the macro's contract).
                let $l: &AdaptiveLock = unsafe { $crate::lockdispatch::in_place($state) };
                $body
            }
        }
    }};
}
pub(crate) use with_lock;

/// Bytes of lock state a mutex can hold.
pub const IN_PLACE_BYTES: usize = 16;

/// The lock of type `L` stored at `state`.
///
/// # Safety
/// `state` points to [`IN_PLACE_BYTES`] bytes of atomics inside a live,
/// 8-aligned pthread object that corral owns, which outlives `'a`.
#[inline]
pub unsafe fn in_place<'a, L>(state: *mut u8) -> &'a L {
    const { assert!(core::mem::size_of::<L>() <= IN_PLACE_BYTES && core::mem::align_of::<L>() <= 8) };
    // SAFETY: the caller's contract; every algorithm's all-zero bytes are
    // its unlocked state, and its fields are atomics like the bytes below.
    unsafe { &*(state as *const L) }
}
