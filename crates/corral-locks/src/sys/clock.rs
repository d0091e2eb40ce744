//! Every clock corral reads. The tick counter behind wait timing is the TSC
//! on x86_64 (paper 1 reads it with `rdtsc` around every lock acquisition,
//! Algorithm 1) and CLOCK_MONOTONIC nanoseconds elsewhere; the kernel's
//! clocks (monotonic time, thread CPU time, the clocks of POSIX deadlines)
//! are read through `clock_gettime`.

use core::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long the one-time tick-to-nanosecond calibration samples both clocks.
/// Each end reads the TSC between two CLOCK_MONOTONIC reads at most
/// 1 us apart, so the error is below 1 us in 250 us
/// (0.4%; typically 50 ns, 0.02%). `corral run` pays it once and hands the
/// result down ([`adopt_calibration`]): every process paying it was about
/// 40% of what a short process (`git grep`) paid for corral.
pub const CALIBRATION_WINDOW: Duration = Duration::from_micros(250);

/// The widest CLOCK_MONOTONIC bracket around a TSC read that calibration
/// accepts (a wider one was interrupted; it is read again).
const CALIBRATION_BRACKET_NS: u64 = 1_000;

/// Nanoseconds per tick as a 32.32 fixed-point number; 0 until calibrated.
static NS_PER_TICK_Q32: AtomicU64 = AtomicU64::new(0);

/// One reading of `clock`, or `None` where the kernel refuses the clock
/// (an unknown id, the CPU clock of a thread that has exited).
#[inline]
pub fn read(clock: libc::clockid_t) -> Option<libc::timespec> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; a bad clock id is an
    // error return, nothing worse.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then_some(ts)
}

/// One reading of `clock` in nanoseconds; `None` as for [`read`].
#[inline]
pub fn read_ns(clock: libc::clockid_t) -> Option<u64> {
    read(clock).map(|ts| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// CLOCK_MONOTONIC nanoseconds (the clock `bpf_ktime_get_ns` reads).
#[inline]
pub fn monotonic_ns() -> u64 {
    // Linux always has CLOCK_MONOTONIC; 0 only keeps this total.
    read_ns(libc::CLOCK_MONOTONIC).unwrap_or(0)
}

/// `ns` nanoseconds as a timespec (a duration).
#[inline]
pub fn timespec_of_ns(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// Sleeps about `ns` nanoseconds (`nanosleep`; a signal may end it early).
pub fn sleep_ns(ns: u64) {
    let ts = timespec_of_ns(ns);
    // SAFETY: `ts` is a valid timespec; a null remainder is allowed.
    unsafe { libc::nanosleep(&ts, core::ptr::null_mut()) };
}

/// The calling thread's CPU time in nanoseconds.
#[inline]
pub fn thread_cpu_ns() -> u64 {
    read_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

/// CPU time of thread `tid` of this process in nanoseconds, or `None` once
/// it has exited.
pub fn thread_cpu_ns_of(tid: i32) -> Option<u64> {
    // The kernel's MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED).
    read_ns(((!tid) << 3) | 6)
}

/// The clocks an absolute deadline of a POSIX timed wait may be on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeadlineClock {
    /// CLOCK_REALTIME: wall-clock time, which may jump.
    Realtime,
    /// CLOCK_MONOTONIC.
    Monotonic,
}

impl DeadlineClock {
    /// The deadline clock with id `id`; `None` for any other clock.
    #[inline]
    pub fn from_id(id: libc::clockid_t) -> Option<Self> {
        match id {
            libc::CLOCK_REALTIME => Some(Self::Realtime),
            libc::CLOCK_MONOTONIC => Some(Self::Monotonic),
            _ => None,
        }
    }

    /// The clock's id.
    #[inline]
    pub const fn id(self) -> libc::clockid_t {
        match self {
            Self::Realtime => libc::CLOCK_REALTIME,
            Self::Monotonic => libc::CLOCK_MONOTONIC,
        }
    }

    /// Now on this clock (both always exist; zero only keeps this total).
    #[inline]
    pub fn now(self) -> libc::timespec {
        read(self.id()).unwrap_or(libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        })
    }
}

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
    monotonic_ns()
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

/// The calibration in force (32.32 nanoseconds per tick), calibrating
/// first if none is: what a parent hands its children (see
/// [`adopt_calibration`]).
pub fn calibration_q32() -> u64 {
    ns_per_tick_q32()
}

/// The fewest and most nanoseconds per tick (32.32) a calibration handed
/// down may claim: TSCs from 20 GHz to 100 MHz. Anything else is refused.
const ADOPTABLE_Q32: core::ops::RangeInclusive<u64> = (1 << 32) / 20..=10 << 32;

/// Takes `q32` (from [`calibration_q32`] in the process that launched this
/// one, on the same machine: the TSC is invariant across its CPUs) instead
/// of spinning [`CALIBRATION_WINDOW`] at the first conversion, which every
/// short process under corral paid. Returns whether it was taken: a value
/// out of 0.05-10 ns per tick (TSCs from 100 MHz to 20 GHz) is refused, and
/// the process calibrates itself.
pub fn adopt_calibration(q32: u64) -> bool {
    if cfg!(not(target_arch = "x86_64")) || !ADOPTABLE_Q32.contains(&q32) {
        return false;
    }
    // Relaxed: a plain value, as in `calibrate`.
    NS_PER_TICK_Q32.store(q32, Ordering::Relaxed);
    true
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

/// Calibrates once: of racing first conversions, the first to finish sets
/// the scale and the others take it, so a value once read never changes
/// (except by [`adopt_calibration`]).
#[cold]
#[inline(never)]
fn calibrate() -> u64 {
    let scale = measure_scale();
    // Relaxed: a plain value; whichever store won is a valid one.
    match NS_PER_TICK_Q32.compare_exchange(0, scale, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => scale,
        Err(set) => set,
    }
}

/// Nanoseconds per tick (32.32) over [`CALIBRATION_WINDOW`] of both clocks.
fn measure_scale() -> u64 {
    let window = CALIBRATION_WINDOW.as_nanos() as u64;
    let (start, start_ticks) = bracketed_tick();
    while monotonic_ns().saturating_sub(start) < window {
        core::hint::spin_loop();
    }
    let (end, end_ticks) = bracketed_tick();
    let elapsed = end.saturating_sub(start).max(1);
    let ticks = end_ticks.wrapping_sub(start_ticks).max(1);
    ((u128::from(elapsed) << 32) / u128::from(ticks)).clamp(1, u128::from(u64::MAX)) as u64
}

/// A TSC read and the CLOCK_MONOTONIC time at that instant (the middle of
/// two reads around it, retried while they are far apart: an interrupt).
fn bracketed_tick() -> (u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..16 {
        let before = monotonic_ns();
        let ticks = now_ticks();
        let after = monotonic_ns();
        let width = after.saturating_sub(before);
        if width < best.2 {
            best = (before + width / 2, ticks, width);
        }
        if width <= CALIBRATION_BRACKET_NS {
            break;
        }
    }
    (best.0, best.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_adopted_calibration_is_used_and_a_wild_one_refused() {
        let own = calibration_q32();
        assert!(!adopt_calibration(0));
        assert!(!adopt_calibration(u64::MAX));
        assert_eq!(calibration_q32(), own);
        if cfg!(target_arch = "x86_64") {
            // One part in 2^32 off: taken, and harmless to tests beside.
            assert!(adopt_calibration(own ^ 1));
            assert_eq!(calibration_q32(), own ^ 1);
            // A late calibration (a racing first conversion) keeps what is
            // set: it overwrote it, and this test failed beside the next.
            assert_eq!(calibrate(), own ^ 1);
            assert_eq!(calibration_q32(), own ^ 1);
            assert!(adopt_calibration(own));
        }
    }

    #[test]
    fn monotonic_and_cpu_clocks_advance() {
        let (t0, c0) = (monotonic_ns(), thread_cpu_ns());
        let mut x = 0u64;
        while thread_cpu_ns() < c0 + 1_000_000 {
            x = core::hint::black_box(x.wrapping_add(1));
        }
        assert!(monotonic_ns() > t0);
        // SAFETY: gettid has no preconditions.
        let me = unsafe { libc::gettid() };
        assert!(thread_cpu_ns_of(me).unwrap_or(0) >= 1_000_000);
    }

    #[test]
    fn a_short_calibration_measures_ticks_as_a_long_window_does() {
        let short = measure_scale();
        // The long way: 20 ms of both clocks.
        let (t0, k0) = bracketed_tick();
        while monotonic_ns() - t0 < 20_000_000 {
            core::hint::spin_loop();
        }
        let (t1, k1) = bracketed_tick();
        let long = ((u128::from(t1 - t0) << 32) / u128::from(k1.wrapping_sub(k0))) as f64;
        let error = (short as f64 - long).abs() / long;
        assert!(error < 0.01, "short {short} long {long} error {error}");
    }

    #[test]
    fn deadline_clocks_are_the_two_posix_ones() {
        for c in [DeadlineClock::Realtime, DeadlineClock::Monotonic] {
            assert_eq!(DeadlineClock::from_id(c.id()), Some(c));
            assert!(c.now().tv_sec > 0);
        }
        assert_eq!(DeadlineClock::from_id(libc::CLOCK_THREAD_CPUTIME_ID), None);
        assert!(read(999).is_none());
    }
}
