//! What a lock attempt does (Algorithm 2): a quiet attempt changes nothing,
//! a changed placement is applied at the next one, and every attempt is
//! counted (the whole program's progress), while a waiter's re-check is not. Its own process: no monitor of
//! another test places this thread meanwhile.

use std::sync::atomic::Ordering;

use corral_policy::placement::Placement;
use corral_runtime::registry::{
    on_lock_attempt, publish_masks, recheck_placement, reset_after_fork, set_want, slot,
    slots_in_use,
};

mod common;
use common::my_slot;

fn attempts(i: usize) -> u64 {
    slot(i).watch.attempts.load(Ordering::Relaxed)
}

#[test]
fn placement_changes_apply_at_the_next_attempt_and_every_attempt_counts() {
    let applied = |i: usize| slot(i).applied.load(Ordering::Relaxed);
    on_lock_attempt();
    let i = my_slot();
    assert_eq!(applied(i), Placement::Unconfined, "registered, unconfined");
    assert_eq!(attempts(i), 1, "the registering attempt counts");
    on_lock_attempt();
    assert_eq!(attempts(i), 2);

    set_want(i, Placement::Ssc);
    on_lock_attempt();
    assert_eq!(applied(i), Placement::Ssc, "moved at the next attempt");
    on_lock_attempt();
    on_lock_attempt();
    assert_eq!(attempts(i), 5, "every attempt on the SSC counts");

    // New masks with the placement unchanged: applied at the next attempt
    // too, here by a waiter's re-check, which counts nothing.
    let seq = slot(i).watch.placement_seq.load(Ordering::Relaxed);
    publish_masks(&[], &[]);
    assert_ne!(slot(i).watch.placement_seq.load(Ordering::Relaxed), seq);
    set_want(i, Placement::General);
    recheck_placement();
    assert_eq!(applied(i), Placement::General, "a re-check applies it");
    assert_eq!(attempts(i), 5, "a re-check is no attempt");

    set_want(i, Placement::Unconfined);
    on_lock_attempt();
    on_lock_attempt();
    assert_eq!(applied(i), Placement::Unconfined);
    assert_eq!(attempts(i), 7, "off the SSC, attempts count as well");

    // A fork child forgets its slot: its next attempt registers again.
    reset_after_fork();
    assert_eq!(slots_in_use(), 0);
    on_lock_attempt();
    let j = my_slot();
    assert_eq!(slot(j).want.load(Ordering::Relaxed), Placement::Unconfined);
    let before = attempts(j);
    on_lock_attempt();
    assert_eq!(attempts(j), before + 1);
}
