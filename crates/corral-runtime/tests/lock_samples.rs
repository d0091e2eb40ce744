//! The lock ids a thread's attempts leave in its trail (paper 5's
//! seVector): one attempt in `SAMPLE_EVERY` while sampling is on, none
//! while it is off, and never from an attempt that names no lock. Its own
//! process: sampling is one flag for the whole process.

use std::sync::atomic::Ordering;

use corral_runtime::registry::{
    on_lock_attempt, on_lock_attempt_at, set_sampling, slot, SAMPLE_EVERY,
};

mod common;
use common::my_slot;

/// Samples written to the trail of slot `i` so far.
fn samples(i: usize) -> u32 {
    slot(i).trail.head.load(Ordering::Acquire) // Acquire: pairs with `push`'s Release.
}

#[test]
fn sampling_records_one_attempt_in_sample_every_and_only_while_on() {
    const ATTEMPTS: u64 = 16_000;
    const LOCK: usize = 0x1000;
    on_lock_attempt_at(LOCK);
    let i = my_slot();

    for _ in 0..ATTEMPTS {
        on_lock_attempt_at(LOCK);
    }
    assert_eq!(samples(i), 0, "sampling off: no samples");

    set_sampling(true);
    for _ in 0..ATTEMPTS {
        on_lock_attempt();
    }
    assert_eq!(samples(i), 0, "an attempt that names no lock leaves none");

    for _ in 0..ATTEMPTS {
        on_lock_attempt_at(LOCK);
    }
    let n = u64::from(samples(i));
    let expected = ATTEMPTS / SAMPLE_EVERY;
    assert!(
        n > expected / 2 && n < expected * 2,
        "{n} samples of {ATTEMPTS} attempts, about {expected} expected"
    );
    let mut ids = Vec::new();
    slot(i).trail.drain(0, |id| ids.push(id));
    assert!(ids.iter().all(|&id| id == LOCK as u64), "{ids:?}");

    set_sampling(false);
    let before = samples(i);
    for _ in 0..ATTEMPTS {
        on_lock_attempt_at(LOCK);
    }
    assert_eq!(samples(i), before, "sampling off again: no more samples");
    assert_eq!(
        slot(i).watch.attempts.load(Ordering::Relaxed), // Relaxed: this thread's own count.
        1 + 4 * ATTEMPTS,
        "every attempt counts, sampled or not"
    );
}
