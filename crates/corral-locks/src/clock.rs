//! The cheap clock behind wait timing: the TSC on x86_64 (paper 1 reads it
//! with `rdtsc` around every lock acquisition, Algorithm 1), CLOCK_MONOTONIC
//! nanoseconds elsewhere.

use core::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long the one-time tick-to-nanosecond calibration samples both clocks.
pub const CALIBRATION_WINDOW: Duration = Duration::from_millis(5);

/// Nanoseconds per tick as a 32.32 fixed-point number; 0 until calibrated.
static NS_PER_TICK_Q32: AtomicU64 = AtomicU64::new(0);

/// The current tick count: TSC cycles on x86_64, monotonic ns elsewhere.
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn now_ticks() -> u64 {
    // SAFETY: `rdtsc` is available on every x86_64 CPU and has no side effects.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
}

/// The current tick count: TSC cycles on x86_64, monotonic ns elsewhere.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
pub fn now_ticks() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// Converts ticks to nanoseconds. The first call on x86_64 calibrates the
/// TSC against CLOCK_MONOTONIC for [`CALIBRATION_WINDOW`] (thread-safe, no
/// allocation; racing first callers each calibrate and store a valid value).
#[inline]
pub fn ticks_to_ns(ticks: u64) -> u64 {
    ((u128::from(ticks) * u128::from(ns_per_tick_q32())) >> 32) as u64
}

/// Converts nanoseconds to ticks (the inverse of [`ticks_to_ns`]).
#[inline]
pub fn ns_to_ticks(ns: u64) -> u64 {
    ((u128::from(ns) << 32) / u128::from(ns_per_tick_q32().max(1))) as u64
}

#[inline]
fn ns_per_tick_q32() -> u64 {
    if cfg!(not(target_arch = "x86_64")) {
        return 1 << 32;
    }
    match NS_PER_TICK_Q32.load(Ordering::Relaxed) {
        0 => calibrate(),
        scale => scale,
    }
}

#[cold]
#[inline(never)]
fn calibrate() -> u64 {
    let start = Instant::now();
    let start_ticks = now_ticks();
    let mut elapsed = start.elapsed();
    while elapsed < CALIBRATION_WINDOW {
        core::hint::spin_loop();
        elapsed = start.elapsed();
    }
    let ticks = now_ticks().wrapping_sub(start_ticks).max(1);
    let scale =
        ((elapsed.as_nanos() << 32) / u128::from(ticks)).clamp(1, u128::from(u64::MAX)) as u64;
    // Relaxed: a plain value; every racing calibration stores a valid one.
    NS_PER_TICK_Q32.store(scale, Ordering::Relaxed);
    scale
}
