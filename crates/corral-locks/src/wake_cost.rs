//! What a futex lock's sleep costs a waiter: the time from a release's
//! `FUTEX_WAKE` to the woken waiter running again, smoothed over the
//! process's wake-ups. A waiter that spins no longer than this never loses
//! more than it could save (corral-policy's `waiting`).

use core::sync::atomic::{AtomicU64, Ordering};

use crate::sys::clock::{now_ticks, ns_to_ticks};

/// Tick of the latest `FUTEX_WAKE` by a futex lock's release.
static LAST_WAKE: AtomicU64 = AtomicU64::new(0);
/// The smoothed wake-up latency, in ticks; 0 before the first sample.
static WAKE_TICKS: AtomicU64 = AtomicU64::new(0);

/// The cost assumed before the process has measured one: a context switch
/// and a futex round trip on common hardware, about 5 us.
const ASSUMED_NS: u64 = 5_000;

/// The most a park is taken to cost, whatever was measured (an overloaded
/// machine wakes threads tens of milliseconds late): the bound on any
/// spin of a waiter whose holder runs.
const MAX_NS: u64 = 1_000_000;

/// Records that a release is about to wake a sleeper.
#[inline]
pub fn note_wake() {
    // Relaxed: a statistic; a stale or torn-in-time stamp costs one sample.
    LAST_WAKE.store(now_ticks(), Ordering::Relaxed);
}

/// Records a sleep from `slept_at` that just ended: where a release woke it
/// (the latest wake-up fell inside the sleep), its latency is a sample.
#[inline]
pub fn note_woken(slept_at: u64) {
    let now = now_ticks();
    let wake = LAST_WAKE.load(Ordering::Relaxed); // Relaxed: as in note_wake.
    if wake <= slept_at || wake > now {
        return;
    }
    let sample = now - wake;
    let mean = WAKE_TICKS.load(Ordering::Relaxed); // Relaxed: a statistic.
                                                   // Weight 1/8 per sample, as glibc's adaptive mutex smooths its spins.
    let next = if mean == 0 {
        sample
    } else {
        mean - mean / 8 + sample / 8
    };
    WAKE_TICKS.store(next, Ordering::Relaxed);
}

/// The smoothed wake-up latency in ticks (an assumed 5 us before the
/// first measurement, at most 1 ms), never zero.
#[inline]
pub fn wake_ticks() -> u64 {
    match WAKE_TICKS.load(Ordering::Relaxed) {
        0 => ns_to_ticks(ASSUMED_NS).max(1),
        t => t.min(ns_to_ticks(MAX_NS)).max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_wake_inside_the_sleep_is_a_sample() {
        let before = wake_ticks();
        let slept = now_ticks();
        // No wake since: nothing learned.
        note_woken(slept);
        assert_eq!(wake_ticks(), before);
        note_wake();
        note_woken(slept);
        assert!(WAKE_TICKS.load(Ordering::Relaxed) > 0);
    }
}
