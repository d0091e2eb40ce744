//! Critical-Section-First (paper 5, Sec. 2.4): the quantum bonus and its
//! renewal.

use corral_policy::csf::{CsfParams, QuantumDecision, RenewalState};

#[test]
fn bonus_is_proportional_to_lock_count() {
    let p = CsfParams::default();
    assert_eq!(p.bonus(0), 0);
    for locks in 1..=5 {
        assert_eq!(p.bonus(locks), locks as i32);
    }
    let coarse = CsfParams {
        max_lock_count: 10,
        ..p
    };
    assert_eq!(coarse.bonus(1), 0); // 1 x 5 / 10, integer division
    assert_eq!(coarse.bonus(4), 2);
    assert_eq!(coarse.bonus(10), 5);
}

#[test]
fn bonus_is_clamped_to_plus_minus_five() {
    let p = CsfParams::default();
    assert_eq!(p.bonus(6), 5);
    assert_eq!(p.bonus(u32::MAX), 5);
    let greedy = CsfParams {
        max_bonus: 40,
        max_lock_count: 1,
        ..p
    };
    assert_eq!(greedy.bonus(3), 5);
    let negative = CsfParams {
        max_bonus: -40,
        max_lock_count: 1,
        ..p
    };
    assert_eq!(negative.bonus(3), -5);
    let degenerate = CsfParams {
        max_lock_count: 0,
        ..p
    };
    assert_eq!(degenerate.bonus(0), 0);
    assert_eq!(degenerate.bonus(1), 5);
}

#[test]
fn priority_rises_for_lock_holders() {
    let p = CsfParams::default();
    assert_eq!(p.priority(120, 0), 120);
    assert_eq!(p.priority(120, 2), 118);
    assert_eq!(p.priority(120, 99), 115);
    assert_eq!(p.priority(i32::MIN, 3), i32::MIN);
}

#[test]
fn renewals_are_bounded_by_max_renewal() {
    let p = CsfParams::default();
    let mut r = RenewalState::default();
    for i in 1..=5 {
        assert_eq!(r.on_quantum_expiry(&p, 1), QuantumDecision::Renew);
        assert_eq!(r.consecutive(), i);
    }
    assert_eq!(r.on_quantum_expiry(&p, 3), QuantumDecision::Preempt);
    assert_eq!(r.consecutive(), 0);
    // After being preempted the count starts again.
    assert_eq!(r.on_quantum_expiry(&p, 1), QuantumDecision::Renew);
}

#[test]
fn no_renewal_without_a_lock_and_reset_on_deschedule() {
    let p = CsfParams::default();
    let mut r = RenewalState::default();
    assert_eq!(r.on_quantum_expiry(&p, 0), QuantumDecision::Preempt);
    for _ in 0..3 {
        r.on_quantum_expiry(&p, 2);
    }
    r.on_descheduled();
    for _ in 0..5 {
        assert_eq!(r.on_quantum_expiry(&p, 2), QuantumDecision::Renew);
    }
    assert_eq!(r.on_quantum_expiry(&p, 2), QuantumDecision::Preempt);
    let never = CsfParams {
        max_renewal: 0,
        ..p
    };
    assert_eq!(r.on_quantum_expiry(&never, 2), QuantumDecision::Preempt);
}
