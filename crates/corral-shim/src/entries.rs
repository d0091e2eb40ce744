//! The exported pthread entry points (and `sched_yield`): each jumps through its slot, which
//! leads first to its stub (load, then jump on) and, once the full library
//! is loaded, straight to the full library's function (for the mutex's
//! lock, trylock and unlock: its algorithm's code, no dispatch between).
//!
//! Three kinds of caller meet here:
//! - the first: it loads, fills every slot, then wakes the others;
//! - another thread while that runs: it sleeps on [`FILLED`] (futex) until
//!   the slots are filled, then goes where its slot now points;
//! - the loading thread itself, re-entering while `dlopen` runs (a
//!   program's own `malloc` that locks a pthread mutex): it is served by
//!   glibc's function. glibc's and corral's unlocked mutexes look alike
//!   (zero bytes but `__kind` at offset 16, which both read the same), so a
//!   mutex that glibc locks and unlocks inside the load is corral's after
//!   it. Under a parking algorithm (the default) corral's lock word is
//!   glibc's, so even one that glibc locks during the load and corral
//!   unlocks after it is released. Under a spinning one it would not be:
//!   corral would release a lock it never took (and glibc's lock word
//!   stays set). No caller corral knows does that: the load runs only the
//!   full library's own constructor, and an allocator's lock is released
//!   before its `malloc` returns.
//!
//! A child forked while another thread of its parent was loading finds
//! [`LOADER`] holding a loader that is not there: it uses glibc's
//! functions for good.

use core::ffi::CStr;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

use crate::{load, sys};

/// Defines, for each `index name stub`, the exported `name` (one jump
/// through `SLOTS[index]`) and `stub` (saves the six argument registers,
/// asks [`first_call`] where to go, restores them and goes there), and the
/// tables `SLOTS` and `NAMES`.
macro_rules! entries {
    ($($i:literal $name:ident $stub:ident;)*) => {
        $(
            #[doc = concat!("`", stringify!($name), "`: a jump to corral's (or, where it cannot load, glibc's).")]
            ///
            /// # Safety
            /// As the POSIX function of this name; its arguments reach the
            /// function jumped to untouched.
            // Unexported in the test build: it would interpose the test's own calls.
            #[cfg_attr(not(test), no_mangle)]
            #[unsafe(naked)]
            pub unsafe extern "C" fn $name() {
                core::arch::naked_asm!(
                    "jmp qword ptr [rip + {slots} + {off}]",
                    slots = sym SLOTS,
                    off = const $i * 8,
                );
            }

            /// The slot's first target: loads, then continues the call.
            ///
            /// # Safety
            /// Reached only by a jump from the entry point of the same index.
            #[unsafe(naked)]
            unsafe extern "C" fn $stub() {
                // At entry rsp is 8 mod 16; six pushes and 8 bytes more make
                // the call's stack 16-aligned, as the ABI wants.
                core::arch::naked_asm!(
                    "push rdi", "push rsi", "push rdx", "push rcx", "push r8", "push r9",
                    "sub rsp, 8",
                    "mov edi, {i}",
                    "call {first}",
                    "mov r11, rax",
                    "add rsp, 8",
                    "pop r9", "pop r8", "pop rcx", "pop rdx", "pop rsi", "pop rdi",
                    "jmp r11",
                    i = const $i,
                    first = sym first_call,
                );
            }
        )*

        /// Where each entry point jumps: its stub until the load, then the
        /// function it stands for.
        pub(crate) static SLOTS: [AtomicPtr<()>; N] = [$(AtomicPtr::new($stub as *mut ())),*];

        /// Entry point `i`'s stub: what its slot holds until it is set.
        fn stub_of(i: usize) -> *const () {
            match i {
                $($i => $stub as *const (),)*
                _ => sys::abort(),
            }
        }

        /// Each entry point's name, by index.
        pub(crate) static NAMES: [&CStr; N] = [$(
            match CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()) {
                Ok(name) => name,
                Err(_) => panic!("a name without NUL"),
            }
        ),*];
    };
}

/// How many entry points.
pub(crate) const N: usize = 33;
/// The indexes of `pthread_mutex_lock`, `_trylock` and `_unlock`, which
/// take the full library's per-algorithm functions.
pub(crate) const MUTEX_OPS: [usize; 3] = [0, 1, 2];

/// The index of `pthread_create`.
const PTHREAD_CREATE: usize = 10;

/// The indexes of `sched_yield` and `pthread_yield`.
const SCHED_YIELD: usize = 31;
const PTHREAD_YIELD: usize = 32;

/// [`LOADER`] before anyone loads.
const IDLE: u64 = 0;
/// [`LOADER`] once the slots are filled (no pid is `u32::MAX`).
const READY: u64 = u64::MAX;

/// [`IDLE`], [`READY`], or while a thread loads its pid and tid
/// ([`loader_id`]): one word, so that no thread ever sees a load under way
/// without knowing whose it is (a fork child sees its parent's pid).
static LOADER: AtomicU64 = AtomicU64::new(IDLE);
/// 0 until [`LOADER`] is [`READY`], then 1: the futex word that waiters
/// sleep on.
static FILLED: AtomicU32 = AtomicU32::new(0);

/// The calling thread's pid and tid, as [`LOADER`] holds them.
fn loader_id() -> u64 {
    (u64::from(sys::getpid() as u32) << 32) | u64::from(sys::gettid() as u32)
}

/// glibc's functions, found on first need (re-entrant calls, a failed load).
static NEXT: [AtomicPtr<()>; N] = [const { AtomicPtr::new(core::ptr::null_mut()) }; N];

/// Where the call that reached stub `i` goes on.
pub(crate) extern "C" fn first_call(i: u32) -> *const () {
    let i = i as usize;
    // Checked once, here: the stubs pass 0..N, and a bounds-check panic
    // would link core's formatting into every process.
    if i >= N {
        sys::abort();
    }
    if defers(i) {
        // Acquire: the slot now holds glibc's function, or a racing load's.
        return at(&SLOTS, i).load(Ordering::Acquire);
    }
    if ensure_loaded() {
        // Acquire: pairs with the Release that published the slots.
        at(&SLOTS, i).load(Ordering::Acquire)
    } else {
        next(i)
    }
}

/// Loads the full library unless it is loaded; whether its functions are
/// in the slots now (false: this thread's own load re-entered, or a fork
/// child's view of its parent's load under way: glibc's serve it).
fn ensure_loaded() -> bool {
    let me = loader_id();
    loop {
        // Acquire: pairs with the Release that published the slots.
        match LOADER.load(Ordering::Acquire) {
            READY => return true,
            IDLE => {
                if LOADER
                    .compare_exchange(IDLE, me, Ordering::Acquire, Ordering::Acquire)
                    .is_ok()
                {
                    load();
                    LOADER.store(READY, Ordering::Release); // Release: the slots
                    FILLED.store(1, Ordering::Release); // Release: as above
                    sys::futex_wake_all(&FILLED);
                }
            }
            // Another process's load (a fork child's view of its parent's),
            // or this thread's own, re-entered.
            loading if loading >> 32 != me >> 32 || loading == me => return false,
            _ => sys::futex_wait(&FILLED, 0),
        }
    }
}

/// The contended hand-offs (unlocks that find a waiter asleep) before the
/// full library loads, where `corral run --load-after-contended` set it;
/// 0: it loads at the first interposed call. Set once, by [`on_load`],
/// before the program runs.
static LOAD_AFTER: AtomicU32 = AtomicU32::new(0);
/// Contended hand-offs while deferred (process-wide).
static CONTENDED: AtomicU32 = AtomicU32::new(0);
/// The full library's `corral_preload_late_start`, once it is loaded.
static LATE_START: AtomicPtr<()> = AtomicPtr::new(core::ptr::null_mut());

/// Entry points whose glibc function serves until the load: the mutex's
/// (its words are glibc's under a parking algorithm, so a mutex glibc
/// locked is one corral can release), the condition variable's (glibc's
/// under a parking algorithm anyway), `pthread_create` and the yields.
/// rwlocks and spin locks are corral's own layout: they load at first use.
const DEFERRABLE: [bool; N] = {
    let mut d = [false; N];
    let mut i = 0;
    while i < N {
        d[i] = i <= LAST_MUTEX_COND_OR_CREATE || i == SCHED_YIELD || i == PTHREAD_YIELD;
        i += 1;
    }
    d
};

/// The entries table lists the mutex's, the condition variable's and
/// `pthread_create` first, up to this index (0-14 in `entries!` below).
const LAST_MUTEX_COND_OR_CREATE: usize = 14;

/// Whether entry `i` stays on glibc for now; if so, points its slot at
/// glibc's function (`pthread_mutex_unlock`'s at [`deferred_unlock`]).
fn defers(i: usize) -> bool {
    // Relaxed: set before the program runs. Acquire: a load that finished
    // fills every slot; none is deferred after it.
    if LOAD_AFTER.load(Ordering::Relaxed) == 0
        || !*at(&DEFERRABLE, i)
        || LOADER.load(Ordering::Acquire) != IDLE
    {
        return false;
    }
    // next() fills NEXT[i], which deferred_unlock jumps through.
    let glibcs = next(i);
    let target = if i == MUTEX_OPS[2] {
        deferred_unlock as *const ()
    } else if i == PTHREAD_CREATE {
        deferred_create as *const ()
    } else {
        glibcs
    };
    // Only over the stub: a load that raced this call keeps its function.
    // AcqRel: publishes the target; sees a racing load's.
    let _ = at(&SLOTS, i).compare_exchange(
        stub_of(i).cast_mut(),
        target.cast_mut(),
        Ordering::AcqRel,
        Ordering::Acquire,
    );
    true
}

/// `pthread_mutex_unlock` until the load: glibc's, counting the unlocks
/// that find a thread asleep on the mutex (glibc's lock word reads 2,
/// "locked, and a waiter may sleep", which only a thread that found it
/// locked sets); the one that reaches [`LOAD_AFTER`] loads the full library
/// after its unlock. A process that never contends that much (a short `git
/// grep`: about 150 contended calls in 15 ms) never pays the load. The
/// check is a compare and a branch before the jump to glibc's function:
/// anything more costs an uncontended lock and unlock pair (about 12 ns)
/// 6-10% (`corral bench worker`, 1 thread: a Rust function around glibc's
/// unlock, or a `trylock` before the lock, read 0.90-0.95x), and
/// `pthread_mutex_lock` stays glibc's own. A PI or robust mutex's word
/// holds its owner's thread id, never 2 (the kernel's kthreadd).
///
/// # Safety
/// As `pthread_mutex_unlock`: `m` (in `rdi`) points to a live mutex; reached
/// only once `NEXT` holds glibc's `pthread_mutex_unlock` (see [`defers`]).
#[unsafe(naked)]
unsafe extern "C" fn deferred_unlock() {
    // The word's load is a plain aligned 32-bit read, atomic on x86_64; a
    // waiter setting 2 just after it is missed, one count less.
    core::arch::naked_asm!(
        "cmp dword ptr [rdi], 2",
        "je {handing_off}",
        "jmp qword ptr [rip + {next} + {off}]",
        handing_off = sym unlock_handing_off,
        next = sym NEXT,
        off = const MUTEX_OPS[2] * 8,
    );
}

/// `pthread_create` calls while the full library is deferred: threads
/// that may end before it loads, which its report counts apart.
static MADE_WHILE_DEFERRED: AtomicU32 = AtomicU32::new(0);

/// `pthread_create` until the load: glibc's, counted.
///
/// # Safety
/// As `pthread_create`; reached only once `NEXT` holds glibc's
/// `pthread_create` (see [`defers`]).
#[unsafe(naked)]
unsafe extern "C" fn deferred_create() {
    // The count touches no argument register.
    core::arch::naked_asm!(
        "lock inc dword ptr [rip + {made}]",
        "jmp qword ptr [rip + {next} + {off}]",
        made = sym MADE_WHILE_DEFERRED,
        next = sym NEXT,
        off = const PTHREAD_CREATE * 8,
    );
}

/// The threads the process made while the full library was deferred: the
/// full library's way to the count, at its load.
#[cfg_attr(not(test), no_mangle)]
pub extern "C" fn corral_shim_threads_made() -> u32 {
    MADE_WHILE_DEFERRED.load(Ordering::Relaxed) // Relaxed: a count
}

/// [`deferred_unlock`] where a waiter may sleep: glibc's unlock, then the
/// count.
///
/// # Safety
/// As `pthread_mutex_unlock`: `m` points to a live mutex.
unsafe extern "C" fn unlock_handing_off(m: *mut core::ffi::c_void) -> i32 {
    type Unlock = unsafe extern "C" fn(*mut core::ffi::c_void) -> i32;
    // SAFETY: glibc's pthread_mutex_unlock, of this type; the caller's mutex.
    let rc = unsafe { core::mem::transmute::<*const (), Unlock>(next(MUTEX_OPS[2]))(m) };
    handed_off();
    rc
}

/// One more contended hand-off while deferred; at [`LOAD_AFTER`] of them,
/// the load.
#[cold]
fn handed_off() {
    // Relaxed: a count, and LOAD_AFTER is set before the program runs;
    // the load's own protocol orders what follows.
    let n = CONTENDED.fetch_add(1, Ordering::Relaxed).saturating_add(1);
    if n >= LOAD_AFTER.load(Ordering::Relaxed) && ensure_loaded() {
        late_start();
    }
}

/// A deferred load happens with the program's threads running: the full
/// library's monitor, which starts at the process's first `pthread_create`
/// (glibc's then), is started now.
fn late_start() {
    let f = LATE_START.load(Ordering::Acquire); // Acquire: see `load`
    if !f.is_null() {
        // SAFETY: the full library's function of this type.
        unsafe { core::mem::transmute::<*mut (), extern "C" fn()>(f)() };
    }
}

/// Whether `p`, a function's address, is one of this library's entry
/// points: a slot that led to one would jump to itself for ever. Told by
/// its code (`jmp qword ptr [rip + disp32]` into [`SLOTS`]), not by
/// comparing addresses: taking an exported function's address costs a
/// symbol relocation at every exec, 33 here.
fn is_entry(p: *const ()) -> bool {
    /// The instruction's length: `ff 25` and a 32-bit displacement.
    const JUMP_LEN: usize = 6;
    let code = p.cast::<u8>();
    // Six bytes that cross into the next page are read only where that page
    // is mapped: a short function at the end of a mapping is not an entry
    // (an entry's six bytes are all its own), and reading on would fault.
    // Entries are not aligned: one may cross a page.
    let crosses = (code as usize) % sys::PAGE > sys::PAGE - JUMP_LEN;
    if crosses && !sys::page_is_mapped(code as usize + JUMP_LEN - 1) {
        return false;
    }
    // SAFETY: `p` is a function's entry (from dlsym), so its page is mapped
    // code, and the six bytes lie in it or in the next page, found mapped.
    let (opcode, disp) = unsafe {
        (
            core::ptr::read_unaligned(code.cast::<[u8; 2]>()),
            core::ptr::read_unaligned(code.add(2).cast::<i32>()),
        )
    };
    let operand = (code as usize)
        .wrapping_add(JUMP_LEN)
        .wrapping_add(disp as isize as usize);
    let slots = SLOTS.as_ptr() as usize;
    opcode == [0xff, 0x25] && (slots..slots + core::mem::size_of_val(&SLOTS)).contains(&operand)
}

/// glibc's function `i` (the next object's), aborting if there is none.
fn next(i: usize) -> *const () {
    // Relaxed: racing finders store the same pointer.
    let p = at(&NEXT, i).load(Ordering::Relaxed);
    if !p.is_null() {
        return p;
    }
    let name = *at(&NAMES, i);
    let p = sys::next_symbol(name);
    if p.is_null() && i == PTHREAD_YIELD {
        // glibc 2.34+ keeps pthread_yield only as a compat symbol, which
        // dlsym does not find; it was always sched_yield.
        return next(SCHED_YIELD);
    }
    if p.is_null() {
        crate::region::say(&[b"corral: no ", name.to_bytes(), b" past corral's shim\n"]);
        sys::abort();
    }
    at(&NEXT, i).store(p.cast_mut(), Ordering::Relaxed); // Relaxed: see above
    p
}

/// Loads the full library and fills every slot from it; from glibc where
/// it has no such function or cannot be loaded.
fn load() {
    let mut targets = [core::ptr::null::<()>(); N];
    let late_start = load::load_into(&mut targets, &NAMES, MUTEX_OPS);
    LATE_START.store(late_start.cast_mut(), Ordering::Release); // Release: read after the load
    for ((i, &t), slot) in targets.iter().enumerate().zip(SLOTS.iter()) {
        let t = if t.is_null() || is_entry(t) {
            next(i)
        } else {
            t
        };
        slot.store(t.cast_mut(), Ordering::Release); // Release: callers jump to it
    }
}

/// At load, in the process `corral run` started: it waits until corral's
/// watcher holds it (corral spawns it without a step between fork and
/// exec, to start it sooner), and it loads the full library now.
pub(crate) extern "C" fn on_load() {
    load::wait_for_watcher();
    // Relaxed: the process has one thread yet.
    LOAD_AFTER.store(load::load_after(), Ordering::Relaxed);
    if crate::process::started_by().is_some() {
        crate::oncpu::adopt();
        // A deferred load waits for contention, here too.
        if load::has_target() && LOAD_AFTER.load(Ordering::Relaxed) == 0 {
            // The process has one thread: nothing races this call.
            let _ = first_call(0);
        }
    }
}

/// `table[i]`, with no panic path (abort instead).
#[inline]
fn at<T>(table: &[T; N], i: usize) -> &T {
    match table.get(i) {
        Some(t) => t,
        None => sys::abort(),
    }
}

entries! {
    0 pthread_mutex_lock stub_0;
    1 pthread_mutex_trylock stub_1;
    2 pthread_mutex_unlock stub_2;
    3 pthread_cond_broadcast stub_3;
    4 pthread_cond_clockwait stub_4;
    5 pthread_cond_destroy stub_5;
    6 pthread_cond_init stub_6;
    7 pthread_cond_signal stub_7;
    8 pthread_cond_timedwait stub_8;
    9 pthread_cond_wait stub_9;
    10 pthread_create stub_10;
    11 pthread_mutex_clocklock stub_11;
    12 pthread_mutex_destroy stub_12;
    13 pthread_mutex_init stub_13;
    14 pthread_mutex_timedlock stub_14;
    15 pthread_rwlock_clockrdlock stub_15;
    16 pthread_rwlock_clockwrlock stub_16;
    17 pthread_rwlock_destroy stub_17;
    18 pthread_rwlock_init stub_18;
    19 pthread_rwlock_rdlock stub_19;
    20 pthread_rwlock_timedrdlock stub_20;
    21 pthread_rwlock_timedwrlock stub_21;
    22 pthread_rwlock_tryrdlock stub_22;
    23 pthread_rwlock_trywrlock stub_23;
    24 pthread_rwlock_unlock stub_24;
    25 pthread_rwlock_wrlock stub_25;
    26 pthread_spin_destroy stub_26;
    27 pthread_spin_init stub_27;
    28 pthread_spin_lock stub_28;
    29 pthread_spin_trylock stub_29;
    30 pthread_spin_unlock stub_30;
    31 sched_yield stub_31;
    32 pthread_yield stub_32;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_points_and_nothing_else_count_as_entries() {
        assert!(is_entry(pthread_mutex_lock as *const ()));
        assert!(is_entry(pthread_yield as *const ()));
        assert!(!is_entry(first_call as *const ()));
        assert!(!is_entry(stub_0 as *const ()));
        let glibcs = sys::next_symbol(c"pthread_mutex_lock");
        assert!(!glibcs.is_null() && !is_entry(glibcs));
    }

    /// Two pages within a 32-bit displacement of [`SLOTS`]; `jmp qword ptr
    /// [rip + disp]` into slot 0 written 3 bytes before the second, so
    /// that its six bytes cross into it.
    fn jump_across_a_page() -> (*mut u8, *const ()) {
        let near = SLOTS.as_ptr() as usize & !(sys::PAGE - 1);
        let base = [1usize << 28, 1 << 29, 1 << 30]
            .into_iter()
            .flat_map(|d| [near + d, near - d])
            .find_map(|hint| {
                // SAFETY: a fresh private anonymous mapping of two pages, at
                // `hint` only where nothing is mapped there.
                let p = unsafe {
                    libc::mmap(
                        hint as *mut libc::c_void,
                        2 * sys::PAGE,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                        -1,
                        0,
                    )
                };
                (p != libc::MAP_FAILED).then_some(p)
            })
            .expect("two free pages within 1 GiB of the shim's slots");
        let base = base.cast::<u8>();
        // SAFETY: inside the mapping.
        let at = unsafe { base.add(sys::PAGE - 3) };
        let disp = (SLOTS.as_ptr() as isize - (at as isize + 6)) as i32;
        let mut code = [0xff, 0x25, 0, 0, 0, 0];
        code[2..].copy_from_slice(&disp.to_le_bytes());
        // SAFETY: six bytes inside the mapping.
        unsafe { core::ptr::copy_nonoverlapping(code.as_ptr(), at, 6) };
        (base, at.cast_const().cast())
    }

    #[test]
    fn a_deferred_unlock_counts_the_hand_offs_to_a_sleeper_and_unlocks_every_time() {
        // Far from any load: this test counts, it does not load. Relaxed
        // throughout: one thread reads what it wrote (no other test touches
        // these counters or this mutex).
        LOAD_AFTER.store(u32::MAX, Ordering::Relaxed);
        // What defers() does before pointing the unlock's slot here.
        let _ = next(MUTEX_OPS[2]);
        // SAFETY: deferred_unlock has pthread_mutex_unlock's type.
        let unlock = unsafe {
            core::mem::transmute::<*const (), unsafe extern "C" fn(*mut libc::pthread_mutex_t) -> i32>(
                deferred_unlock as *const (),
            )
        };
        let mut m = libc::PTHREAD_MUTEX_INITIALIZER;
        let word = core::ptr::from_mut(&mut m).cast::<AtomicU32>();
        for sleeper in [false, true, false] {
            let before = CONTENDED.load(Ordering::Relaxed);
            // SAFETY: a live mutex, locked by this thread, then unlocked
            // through the deferred entry; its word set to 2 stands for a
            // waiter asleep on it (glibc's unlock then wakes no one).
            unsafe {
                assert_eq!(libc::pthread_mutex_lock(&mut m), 0);
                if sleeper {
                    (*word).store(2, Ordering::Relaxed);
                }
                assert_eq!(unlock(&mut m), 0);
                assert_eq!((*word).load(Ordering::Relaxed), 0, "unlocked");
            }
            let counted = CONTENDED.load(Ordering::Relaxed) - before;
            assert_eq!(counted, u32::from(sleeper), "sleeper: {sleeper}");
        }
    }

    #[test]
    fn an_entry_that_crosses_a_page_is_one_and_an_unmapped_page_is_not_read() {
        let (base, jump) = jump_across_a_page();
        assert!(is_entry(jump), "an entry whose jump crosses a page");
        // The mapping's second page, unmapped: is_entry must not read it (a
        // read would be SIGSEGV).
        // SAFETY: a page of the mapping made above, which nothing refers to.
        let unmapped = unsafe { libc::munmap(base.add(sys::PAGE).cast(), sys::PAGE) };
        assert_eq!(unmapped, 0);
        assert!(!is_entry(jump));
        // SAFETY: the first page, still mapped.
        unsafe { libc::munmap(base.cast(), sys::PAGE) };
    }
}
