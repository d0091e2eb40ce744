//! The caller of a contended acquisition: the first return address on the
//! stack outside this library, found with the unwinder already linked in
//! (libgcc's `_Unwind_Backtrace`, which reads `.eh_frame` and needs no
//! frame pointers). It allocates nothing; it costs about a microsecond,
//! so it runs only for sampled acquisitions, before they wait.

use core::cell::Cell;
use core::ffi::{c_int, c_void};
use core::ops::ControlFlow;
use core::sync::atomic::{AtomicUsize, Ordering};

/// Frames looked at before giving up.
const MAX_FRAMES: usize = 24;

#[allow(non_camel_case_types)]
type _Unwind_Trace_Fn = extern "C" fn(ctx: *mut c_void, arg: *mut c_void) -> c_int;

extern "C" {
    fn _Unwind_Backtrace(trace: _Unwind_Trace_Fn, arg: *mut c_void) -> c_int;
    fn _Unwind_GetIP(ctx: *mut c_void) -> usize;
}

/// `_URC_NO_REASON`: go on to the next frame; anything else stops.
const CONTINUE: c_int = 0;
const STOP: c_int = 4;

std::thread_local! {
    /// Set while this thread unwinds: the unwinder may take a lock of its
    /// own (libgcc's object mutex), whose contention must not unwind again.
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// This library's executable range `[lo, hi)`; `hi == 0` until found.
static OWN_LO: AtomicUsize = AtomicUsize::new(0);
static OWN_HI: AtomicUsize = AtomicUsize::new(0);

struct Walk {
    lo: usize,
    hi: usize,
    frames: usize,
    found: usize,
}

extern "C" fn step(ctx: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Walk` that `capture` passed, alive for the call.
    let walk = unsafe { &mut *(arg as *mut Walk) };
    // SAFETY: `ctx` is the unwinder's context for this frame.
    let ip = unsafe { _Unwind_GetIP(ctx) };
    walk.frames += 1;
    if ip != 0 && !(walk.lo..walk.hi).contains(&ip) {
        walk.found = ip;
        return STOP;
    }
    if walk.frames >= MAX_FRAMES {
        STOP
    } else {
        CONTINUE
    }
}

/// The return address into the code that called the interposed lock
/// function; `None` when the stack could not be walked that far.
#[inline(never)]
pub(super) fn capture() -> Option<u64> {
    if BUSY.get() {
        return None;
    }
    let (lo, hi) = own_range()?;
    BUSY.set(true);
    let mut walk = Walk {
        lo,
        hi,
        frames: 0,
        found: 0,
    };
    // SAFETY: `step` matches the callback type and only reads `walk`,
    // which outlives the call.
    unsafe { _Unwind_Backtrace(step, (&mut walk as *mut Walk).cast()) };
    BUSY.set(false);
    (walk.found != 0).then_some(walk.found as u64)
}

/// The executable segment holding this code (the preload library, or the
/// test executable in unit tests), found once with the loader's list
/// ([`corral_locks::sys::objects::walk_load_segments`], which allocates
/// nothing: this runs inside a waiter).
pub(super) fn own_range() -> Option<(usize, usize)> {
    // Relaxed: racing finders store the same values; hi is stored last
    // and read first, and a reader seeing it non-zero needs lo only to
    // filter frames (a stale 0 would only make it stop early).
    let hi = OWN_HI.load(Ordering::Relaxed);
    if hi != 0 {
        return Some((OWN_LO.load(Ordering::Relaxed), hi));
    }
    let probe = capture as *const () as u64;
    let mut range = None;
    corral_locks::sys::objects::walk_load_segments(|s| {
        let end = s.start.wrapping_add(s.size);
        if s.flags & libc::PF_X != 0 && (s.start..end).contains(&probe) {
            range = Some((s.start as usize, end as usize));
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    let (lo, hi) = range?;
    OWN_LO.store(lo, Ordering::Relaxed);
    OWN_HI.store(hi, Ordering::Relaxed);
    Some((lo, hi))
}
