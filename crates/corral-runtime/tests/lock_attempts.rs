//! What a lock attempt does (Algorithm 2): a quiet attempt changes nothing,
//! a changed placement is applied at the next one, and each attempt made
//! while confined to the SSC is counted. Its own process: no monitor of
//! another test places this thread meanwhile.

use std::sync::atomic::Ordering;

use corral_policy::placement::Placement;
use corral_runtime::registry::{
    current_tid, on_lock_attempt, publish_masks, reset_after_fork, set_want, slot, slots_in_use,
};

/// The slot of the calling thread.
fn my_slot() -> usize {
    let tid = current_tid();
    (0..slots_in_use())
        .find(|&i| slot(i).tid.load(Ordering::Acquire) == tid)
        .expect("registered")
}

fn attempts(i: usize) -> u64 {
    slot(i).ssc_attempts.load(Ordering::Relaxed)
}

#[test]
fn placement_changes_apply_at_the_next_attempt_and_confined_attempts_count() {
    assert!(
        !on_lock_attempt(),
        "the first attempt registers, unconfined"
    );
    let i = my_slot();
    assert!(!on_lock_attempt());
    assert_eq!(attempts(i), 0);

    set_want(i, Placement::Ssc);
    assert!(on_lock_attempt(), "moved at the next attempt");
    assert_eq!(slot(i).applied.load(Ordering::Relaxed), Placement::Ssc);
    assert!(on_lock_attempt());
    assert!(on_lock_attempt());
    assert_eq!(attempts(i), 3, "every attempt on the SSC counts");

    // New masks with the placement unchanged: applied at the next attempt too.
    let seq = slot(i).placement_seq.load(Ordering::Relaxed);
    publish_masks(&[], &[]);
    assert_ne!(slot(i).placement_seq.load(Ordering::Relaxed), seq);
    assert!(on_lock_attempt());
    assert_eq!(attempts(i), 4);

    set_want(i, Placement::General);
    assert!(!on_lock_attempt());
    assert_eq!(slot(i).applied.load(Ordering::Relaxed), Placement::General);
    set_want(i, Placement::Unconfined);
    assert!(!on_lock_attempt());
    assert!(!on_lock_attempt());
    assert_eq!(
        slot(i).applied.load(Ordering::Relaxed),
        Placement::Unconfined
    );
    assert_eq!(attempts(i), 4, "off the SSC, attempts are not counted");

    // A fork child forgets its slot: its next attempt registers again.
    reset_after_fork();
    assert_eq!(slots_in_use(), 0);
    assert!(!on_lock_attempt());
    let j = my_slot();
    assert_eq!(slot(j).want.load(Ordering::Relaxed), Placement::Unconfined);
    let before = attempts(j);
    assert!(!on_lock_attempt());
    assert_eq!(attempts(j), before);
}
