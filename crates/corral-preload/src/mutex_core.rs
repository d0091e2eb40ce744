//! corral's mutex: its type and owner (its words are in
//! [`crate::mutex_words`]) and the lock and unlock semantics that the mutex
//! entry points and the condition variable share. Process-shared, robust
//! and priority-protocol mutexes are left to glibc, whose layout they keep.

use core::ffi::c_int;
use core::sync::atomic::{AtomicPtr, Ordering};

use corral_locks::wait::record_wait;
use corral_locks::{Algorithm, RawLock};
use corral_runtime::abi::lock_kind;
use corral_runtime::registry::{
    current_tid, lock_attempt_noisy, lock_attempt_quiet, on_lock_attempt_at,
};
use corral_runtime::waiting::{let_spinner_in, HolderWords, HANDOFF_WANTED};

use crate::deadline::Deadline;
use crate::glibc::real;
use crate::lockdispatch::{self, in_place, with_lock};
use crate::mutex_words::{words, Layout, MutexWords};

const KIND_MASK: i32 = 3;
/// glibc's `PTHREAD_MUTEX_ADAPTIVE_NP`: a normal mutex here.
const ADAPTIVE: i32 = 3;
/// glibc's robust, priority-inheritance, priority-protect and
/// process-shared bits of `__kind`: such mutexes stay glibc's.
const GLIBC_ONLY: i32 = 16 | 32 | 64 | 128;

/// The POSIX mutex type; glibc's adaptive type (3) behaves as normal.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Normal,
    Recursive,
    ErrorCheck,
}

impl Kind {
    #[inline]
    fn of(kind: i32) -> Self {
        match kind & KIND_MASK {
            libc::PTHREAD_MUTEX_RECURSIVE => Kind::Recursive,
            libc::PTHREAD_MUTEX_ERRORCHECK => Kind::ErrorCheck,
            _ => Kind::Normal,
        }
    }
}

/// Initialises `m` as corral's unlocked mutex of type `ty`.
///
/// # Safety
/// `m` points to writable storage for a mutex, not shared yet.
pub(crate) unsafe fn init(m: *mut libc::pthread_mutex_t, ty: c_int) {
    // SAFETY: `m` points to writable storage for a mutex (the contract).
    unsafe { core::ptr::write_bytes(m, 0, 1) };
    // SAFETY: `m` now holds an initialised mutex.
    let w = unsafe { words(m) };
    w.set_kind(ty & KIND_MASK);
}

/// A mutex on corral's locks, with its type read once per call.
pub(crate) struct Mutex<'a> {
    w: &'a MutexWords,
    kind: Kind,
    layout: Layout,
}

/// The mutex at `m` if it runs on corral's locks; `None` if it is glibc's.
/// Every entry point but the plain mutex's fast paths begins here.
///
/// # Safety
/// `m` points to a live `pthread_mutex_t` that outlives `'a`.
#[inline]
pub(crate) unsafe fn corral_mutex<'a>(m: *mut libc::pthread_mutex_t) -> Option<Mutex<'a>> {
    // SAFETY: the function's contract.
    let w = unsafe { words(m) };
    let kind = w.kind();
    (kind & GLIBC_ONLY == 0).then(|| Mutex {
        w,
        kind: Kind::of(kind),
        layout: Layout::current(),
    })
}

/// Whether `kind` is a mutex with no owner bookkeeping that corral locks:
/// the fast paths take only these.
#[inline]
fn is_plain(kind: i32) -> bool {
    let k = kind & (GLIBC_ONLY | KIND_MASK);
    k == libc::PTHREAD_MUTEX_NORMAL || k == ADAPTIVE
}

/// The hot entry points, specialised for one algorithm: the process's
/// algorithm costs one load and an indirect jump, not a `match` per call.
/// C layout: `lock`, `try_lock`, `unlock` (see [`corral_preload_mutex_ops`]).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct MutexOps {
    lock: MutexEntry,
    try_lock: MutexEntry,
    unlock: MutexEntry,
}

/// One of [`MutexOps`]' entries: C's ABI, so that `libcorral_shim.so`
/// jumps to it straight from `pthread_mutex_lock` and its kin.
type MutexEntry = unsafe extern "C" fn(*mut libc::pthread_mutex_t) -> c_int;

/// `algorithm`'s ops. A parking algorithm's waiters sleep by themselves,
/// never on the parking words, so its unlocks skip them.
const fn ops_of(algorithm: Algorithm) -> MutexOps {
    corral_locks::with_lock_type!(algorithm, L => {
        if algorithm.is_parking() {
            MutexOps {
                lock: lock_as::<L, true>,
                try_lock: try_lock_as::<L, true>,
                unlock: unlock_as::<L, true>,
            }
        } else {
            MutexOps {
                lock: lock_as::<L, false>,
                try_lock: try_lock_as::<L, false>,
                unlock: unlock_as::<L, false>,
            }
        }
    })
}

/// Every algorithm's ops, in `Algorithm::ALL`'s order.
static OPS_OF: [MutexOps; Algorithm::ALL.len()] = {
    let mut ops = [ops_of(Algorithm::ALL[0]); Algorithm::ALL.len()];
    let mut i = 0;
    while i < ops.len() {
        ops[i] = ops_of(Algorithm::ALL[i]);
        i += 1;
    }
    ops
};

/// The process's ops: [`RESOLVING`] until the first call, then an entry of
/// [`OPS_OF`].
static OPS: AtomicPtr<MutexOps> = AtomicPtr::new(&RESOLVING as *const MutexOps as *mut MutexOps);

/// Ops that pick the process's algorithm on first use, then forward.
static RESOLVING: MutexOps = MutexOps {
    lock: resolve_lock,
    try_lock: resolve_try_lock,
    unlock: resolve_unlock,
};

#[inline]
fn ops() -> &'static MutexOps {
    // Relaxed: the pointee is a static, nothing to publish.
    let p = OPS.load(Ordering::Relaxed);
    // SAFETY: OPS only ever holds the address of RESOLVING or of an OPS_OF entry.
    unsafe { &*p }
}

/// The process's `pthread_mutex_lock`, `_trylock` and `_unlock`, resolved
/// for its algorithm: `libcorral_shim.so` points its entries at them, one
/// indirect jump from the program's call to the algorithm's code.
///
/// # Safety
/// `out` points to writable storage for a [`MutexOps`].
#[no_mangle]
pub unsafe extern "C" fn corral_preload_mutex_ops(out: *mut MutexOps) {
    // SAFETY: the function's contract.
    unsafe { out.write(*resolved()) };
}

/// The ops of [`lockdispatch::current`], stored for later calls.
#[cold]
fn resolved() -> &'static MutexOps {
    let algorithm = lockdispatch::current();
    let i = Algorithm::ALL.iter().position(|&a| a == algorithm);
    let ops = &OPS_OF[i.unwrap_or(0)];
    // Relaxed: see `ops`; racing first calls store the same pointer.
    OPS.store(ops as *const MutexOps as *mut MutexOps, Ordering::Relaxed);
    ops
}

/// [`lock`] before the algorithm is known.
///
/// # Safety
/// `m` points to a live mutex.
#[cold]
unsafe extern "C" fn resolve_lock(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: the function's contract.
    unsafe { (resolved().lock)(m) }
}

/// [`try_lock`] before the algorithm is known.
///
/// # Safety
/// `m` points to a live mutex.
#[cold]
unsafe extern "C" fn resolve_try_lock(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: the function's contract.
    unsafe { (resolved().try_lock)(m) }
}

/// [`unlock`] before the algorithm is known.
///
/// # Safety
/// `m` points to a live mutex.
#[cold]
unsafe extern "C" fn resolve_unlock(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: the function's contract.
    unsafe { (resolved().unlock)(m) }
}

/// `pthread_mutex_lock`, for the entry point and the condition variable.
///
/// # Safety
/// `m` points to a live mutex.
#[inline]
pub(crate) unsafe fn lock(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: the function's contract.
    unsafe { (ops().lock)(m) }
}

/// `pthread_mutex_trylock`.
///
/// # Safety
/// `m` points to a live mutex.
#[inline]
pub(crate) unsafe fn try_lock(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: the function's contract.
    unsafe { (ops().try_lock)(m) }
}

/// `pthread_mutex_unlock`, for the entry point and the condition variable.
///
/// # Safety
/// `m` points to a live mutex.
#[inline]
pub(crate) unsafe fn unlock(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: the function's contract.
    unsafe { (ops().unlock)(m) }
}

/// [`lock`] on algorithm `L`: a plain mutex here, the rest on the general
/// path. Where the lock is free and the attempt quiet it saves no register
/// and calls nothing: the rest is in cold functions.
///
/// # Safety
/// `m` points to a live mutex.
unsafe extern "C" fn lock_as<L: RawLock, const PARKS: bool>(
    m: *mut libc::pthread_mutex_t,
) -> c_int {
    // SAFETY: the function's contract.
    let w = unsafe { words(m) };
    if !is_plain(w.kind()) {
        // SAFETY: the function's contract.
        return unsafe { lock_general(m) };
    }
    if !lock_attempt_quiet() {
        return lock_noisy::<L>(w, PARKS);
    }
    if try_take::<L>(w, Layout::of(PARKS)) {
        return 0;
    }
    wait_as::<L>(w, PARKS);
    0
}

/// [`lock_as`] where the attempt has more to do than count.
#[cold]
#[inline(never)]
fn lock_noisy<L: RawLock>(w: &MutexWords, parks: bool) -> c_int {
    lock_attempt_noisy(w as *const MutexWords as usize);
    if !try_take::<L>(w, Layout::of(parks)) {
        wait_as::<L>(w, parks);
    }
    0
}

/// [`try_lock`] on algorithm `L`.
///
/// # Safety
/// `m` points to a live mutex.
unsafe extern "C" fn try_lock_as<L: RawLock, const PARKS: bool>(
    m: *mut libc::pthread_mutex_t,
) -> c_int {
    // SAFETY: the function's contract.
    let w = unsafe { words(m) };
    if !is_plain(w.kind()) {
        // SAFETY: the function's contract.
        return unsafe { try_lock_general(m) };
    }
    if !lock_attempt_quiet() {
        return try_lock_noisy::<L>(w, Layout::of(PARKS));
    }
    if try_take::<L>(w, Layout::of(PARKS)) {
        0
    } else {
        libc::EBUSY
    }
}

/// [`try_lock_as`] where the attempt has more to do than count.
#[cold]
#[inline(never)]
fn try_lock_noisy<L: RawLock>(w: &MutexWords, layout: Layout) -> c_int {
    lock_attempt_noisy(w as *const MutexWords as usize);
    if try_take::<L>(w, layout) {
        0
    } else {
        libc::EBUSY
    }
}

/// [`unlock`] on algorithm `L`.
///
/// # Safety
/// `m` points to a live mutex.
unsafe extern "C" fn unlock_as<L: RawLock, const PARKS: bool>(
    m: *mut libc::pthread_mutex_t,
) -> c_int {
    // SAFETY: the function's contract.
    let w = unsafe { words(m) };
    if !is_plain(w.kind()) {
        // SAFETY: the function's contract.
        return unsafe { unlock_general(m) };
    }
    // SAFETY: POSIX's precondition for a normal mutex: the caller holds it.
    unsafe { release_as::<L>(w, PARKS) };
    0
}

/// [`lock`] of a checking mutex or of glibc's.
///
/// # Safety
/// `m` points to a live mutex.
#[cold]
#[inline(never)]
unsafe fn lock_general(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: the function's contract.
    match unsafe { corral_mutex(m) } {
        Some(mx) => mx.lock(),
        // SAFETY: forwarding to glibc, which owns this mutex's layout.
        None => unsafe { (real().mutex_lock)(m) },
    }
}

/// [`try_lock`] of a checking mutex or of glibc's.
///
/// # Safety
/// `m` points to a live mutex.
#[cold]
#[inline(never)]
unsafe fn try_lock_general(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: the function's contract.
    match unsafe { corral_mutex(m) } {
        Some(mx) => mx.try_lock(),
        // SAFETY: forwarding to glibc, which owns this mutex's layout.
        None => unsafe { (real().mutex_trylock)(m) },
    }
}

/// [`unlock`] of a checking mutex or of glibc's.
///
/// # Safety
/// `m` points to a live mutex.
#[cold]
#[inline(never)]
unsafe fn unlock_general(m: *mut libc::pthread_mutex_t) -> c_int {
    // SAFETY: the function's contract.
    match unsafe { corral_mutex(m) } {
        Some(mx) => mx.unlock(),
        // SAFETY: forwarding to glibc, which owns this mutex's layout.
        None => unsafe { (real().mutex_unlock)(m) },
    }
}

/// Acquires `w`'s lock of algorithm `L`, waiting as the policy says.
/// `parks`: the algorithm's waiters sleep by themselves (and its mutexes
/// have [`Layout::Glibc`]).
#[inline(always)]
fn acquire_as<L: RawLock>(w: &MutexWords, parks: bool) {
    on_lock_attempt_at(w as *const MutexWords as usize);
    if !try_take::<L>(w, Layout::of(parks)) {
        wait_as::<L>(w, parks);
    }
}

/// Waits for `w`'s lock of algorithm `L`, busy at the attempt just made.
#[cold]
#[inline(never)]
fn wait_as<L: RawLock>(w: &MutexWords, parks: bool) {
    // SAFETY: `w.state(..)` is a live mutex's state words for its layout.
    let l = unsafe { in_place::<L>(w.state(Layout::of(parks))) };
    let addr = w as *const MutexWords as usize;
    // A parking algorithm's waiters sleep on its own word; under its
    // layout the parking words hold the lock word and the count, and the
    // owner word names the holder, whose run state its waiters follow.
    let parking = (!parks).then(|| w.parking());
    let holder = parks.then(|| HolderWords {
        word: w.lock_word(),
        owner: w.owner(Layout::Glibc),
        memory: w.spin_memory(),
        releases: w.releases(),
    });
    crate::profiled::wait_for(l, parks, parking, holder, addr, lock_kind::MUTEX);
    if parks {
        name_owner(w);
    }
}

/// Records the calling thread as holder of `w`'s parking lock, as glibc
/// does for every mutex: waiters read it to follow the holder's run state.
#[inline(always)]
fn name_owner(w: &MutexWords) {
    // Relaxed: a hint for waiters; cleared before the release.
    w.owner(Layout::Glibc)
        .store(current_tid() as u32, Ordering::Relaxed);
}

/// Takes `w`'s lock of algorithm `L`, kept as `layout` says, if it is free.
#[inline(always)]
fn try_acquire_as<L: RawLock>(w: &MutexWords, layout: Layout) -> bool {
    on_lock_attempt_at(w as *const MutexWords as usize);
    try_take::<L>(w, layout)
}

/// Takes `w`'s lock of algorithm `L`, kept as `layout` says, if it is free,
/// counting no attempt: the caller has.
#[inline(always)]
fn try_take<L: RawLock>(w: &MutexWords, layout: Layout) -> bool {
    // SAFETY: `w.state(layout)` is a live mutex's state words.
    let taken = unsafe { in_place::<L>(w.state(layout)) }.try_lock();
    if taken && layout == Layout::Glibc {
        name_owner(w);
    }
    taken
}

/// Releases `w`'s lock of algorithm `L`; `parks` as in [`acquire_as`]:
/// such waiters never sleep on the parking words.
///
/// # Safety
/// The calling thread holds the lock.
#[inline(always)]
unsafe fn release_as<L: RawLock>(w: &MutexWords, parks: bool) {
    if parks {
        // glibc's condition variable records an owner when it relocks a
        // mutex, even a normal one, and asserts that a lock word it takes
        // has none: a release leaves none, as glibc's does. Relaxed: the
        // release below publishes it.
        w.owner(Layout::Glibc).store(0, Ordering::Relaxed);
        // Looked at and counted under the lock, as the parking words below.
        // Relaxed: hints for spinners; only holders write the count.
        let polite = w.spin_memory().load(Ordering::Relaxed) & HANDOFF_WANTED != 0;
        let n = w.releases().load(Ordering::Relaxed);
        w.releases().store(n.wrapping_add(1), Ordering::Relaxed);
        // SAFETY: `w.state(..)` is a live mutex's state words; the caller holds it.
        unsafe { in_place::<L>(w.state(Layout::Glibc)).unlock() };
        if polite {
            let_spinner_in();
        }
        return;
    }
    // Looked at under the lock: after the release the mutex may be
    // destroyed and freed by the thread that takes it next.
    let wake = w.parking().before_release();
    // SAFETY: as above.
    unsafe { in_place::<L>(w.state(Layout::Spinning)).unlock() };
    if let Some(wake) = wake {
        wake.wake();
    }
}

impl Mutex<'_> {
    /// Acquires the lock, waiting as the policy says.
    #[inline]
    pub(crate) fn lock(&self) -> c_int {
        let tid = self.owner_tid();
        if let Some(rc) = self.relock_by_owner(tid, true) {
            return rc;
        }
        self.acquire();
        self.took(tid);
        0
    }

    /// Acquires the lock if it is free; `EBUSY` if not.
    #[inline]
    pub(crate) fn try_lock(&self) -> c_int {
        let tid = self.owner_tid();
        if let Some(rc) = self.relock_by_owner(tid, false) {
            return rc;
        }
        if !self.try_acquire() {
            return libc::EBUSY;
        }
        self.took(tid);
        0
    }

    /// Releases the lock: `EPERM` where a checking mutex is not the
    /// caller's; a recursive one only counts down until the last unlock.
    #[inline]
    pub(crate) fn unlock(&self) -> c_int {
        let (w, layout) = (self.w, self.layout);
        if self.kind != Kind::Normal {
            // Relaxed: owner-only fields.
            if w.owner(layout).load(Ordering::Relaxed) != current_tid() as u32 {
                return libc::EPERM;
            }
            let c = w.count(layout).load(Ordering::Relaxed);
            if self.kind == Kind::Recursive && c > 1 {
                w.count(layout).store(c - 1, Ordering::Relaxed);
                return 0;
            }
            w.owner(layout).store(0, Ordering::Relaxed);
            w.count(layout).store(0, Ordering::Relaxed);
        }
        let algorithm = lockdispatch::current();
        corral_locks::with_lock_type!(algorithm, L => {
            // SAFETY: the owner check above, or POSIX's precondition for a
            // normal mutex: the caller holds the lock.
            unsafe { release_as::<L>(w, algorithm.is_parking()) }
        });
        0
    }

    /// Whether some thread holds the lock: a snapshot.
    #[inline]
    pub(crate) fn is_locked(&self) -> bool {
        let state = self.w.state(self.layout);
        with_lock!(state, l => l.is_locked())
    }

    /// Acquires the lock before `abstime` on `clock`, or `ETIMEDOUT`. It
    /// polls: a queue lock cannot leave its queue, so a bounded wait never
    /// joins one. The deadline is read only when the lock is busy.
    ///
    /// # Safety
    /// `abstime` points to a valid timespec where the lock is busy.
    pub(crate) unsafe fn lock_until(
        &self,
        clock: libc::clockid_t,
        abstime: *const libc::timespec,
    ) -> c_int {
        let tid = self.owner_tid();
        if let Some(rc) = self.relock_by_owner(tid, true) {
            return rc;
        }
        if !self.try_acquire() {
            // SAFETY: the function's contract; the lock is busy.
            let deadline = match unsafe { Deadline::read(clock, abstime) } {
                Ok(d) => d,
                Err(rc) => return rc,
            };
            let rc = self.poll_until(&deadline);
            if rc != 0 {
                return rc;
            }
        }
        self.took(tid);
        0
    }

    #[cold]
    fn poll_until(&self, deadline: &Deadline) -> c_int {
        let addr = self.w as *const MutexWords as usize;
        crate::profiled::timed(addr, lock_kind::MUTEX, || {
            record_wait(|| loop {
                if self.try_acquire() {
                    break 0;
                }
                if deadline.passed() {
                    break libc::ETIMEDOUT;
                }
                pause_briefly();
            })
        })
    }

    /// The caller's tid where the type tracks its owner; 0 (no thread's)
    /// for a normal mutex, which never looks it up.
    #[inline]
    fn owner_tid(&self) -> i32 {
        if self.kind == Kind::Normal {
            0
        } else {
            current_tid()
        }
    }

    /// The owner check before acquiring, `tid` being [`Self::owner_tid`]:
    /// `Some(result)` returns at once (a recursive re-lock, EAGAIN at the
    /// depth limit, or EDEADLK). `blocking`: false for trylock, where an
    /// error-checking mutex just reports busy.
    #[inline]
    fn relock_by_owner(&self, tid: i32, blocking: bool) -> Option<c_int> {
        match self.kind {
            Kind::Normal => return None,
            Kind::ErrorCheck if !blocking => return None,
            _ => {}
        }
        let (w, layout) = (self.w, self.layout);
        // Relaxed: only this thread ever stores its own tid here.
        if w.owner(layout).load(Ordering::Relaxed) != tid as u32 {
            return None;
        }
        if self.kind == Kind::ErrorCheck {
            return Some(libc::EDEADLK);
        }
        let c = w.count(layout).load(Ordering::Relaxed); // Relaxed: owner-only field.
        if c == u32::MAX {
            return Some(libc::EAGAIN);
        }
        w.count(layout).store(c + 1, Ordering::Relaxed);
        Some(0)
    }

    /// Records the caller (`tid`, its [`Self::owner_tid`]) as owner of a
    /// checking mutex it just acquired.
    #[inline]
    fn took(&self, tid: i32) {
        if self.kind != Kind::Normal {
            // Relaxed: owner-only fields, published to other threads by the lock.
            self.w
                .owner(self.layout)
                .store(tid as u32, Ordering::Relaxed);
            self.w.count(self.layout).store(1, Ordering::Relaxed);
        }
    }

    #[inline]
    fn acquire(&self) {
        let algorithm = lockdispatch::current();
        corral_locks::with_lock_type!(algorithm, L => {
            acquire_as::<L>(self.w, algorithm.is_parking())
        })
    }

    #[inline]
    fn try_acquire(&self) -> bool {
        let layout = self.layout;
        corral_locks::with_lock_type!(lockdispatch::current(), L => try_acquire_as::<L>(self.w, layout))
    }
}

/// Between polls of a bounded wait: a short sleep keeps the poller off a
/// core the holder may need.
#[cold]
fn pause_briefly() {
    corral_locks::sys::clock::sleep_ns(20_000);
}
