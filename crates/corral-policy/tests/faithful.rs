//! Faithful Scheduling (paper 4): the scaling factor, Table I and the
//! quantum it gives.

use corral_policy::faithful::{quantum_for, scaling_factor, FaithfulController, FfParams, TABLE_I};

#[test]
fn scaling_factor_is_one_minus_the_worse_of_the_two() {
    assert!((scaling_factor(0.2, 0.84) - 0.16).abs() < 1e-12);
    assert!((scaling_factor(0.7, 0.1) - 0.3).abs() < 1e-12);
    assert_eq!(scaling_factor(0.0, 0.0), 1.0);
    assert_eq!(scaling_factor(1.5, -3.0), 0.0);
    assert_eq!(scaling_factor(f64::NAN, 0.25), 0.75);
}

#[test]
fn table_i_edges() {
    let t = &TABLE_I;
    let cases = [
        (0.00, 250),
        (0.01, 250),
        (0.10, 250),
        (0.11, 200),
        (0.20, 200),
        (0.21, 150),
        (0.30, 150),
        (0.31, 120),
        (0.40, 120),
        (0.41, 100),
        (0.50, 100),
        (0.51, 80),
        (0.60, 80),
        (0.61, 50),
        (0.70, 50),
        (0.71, 30),
        (0.80, 30),
        (0.81, 20),
        (0.90, 20),
        (0.91, 10),
        (1.00, 10),
    ];
    for (factor, quantum) in cases {
        assert_eq!(quantum_for(t, factor), quantum, "factor {factor}");
    }
    // Factors computed as 1 - x land in the row of their two-decimal value.
    assert_eq!(quantum_for(t, 1.0 - 0.7), 150);
    assert_eq!(quantum_for(t, 1.0 - 0.9), 250);
    // The paper's ammp phases: 0.16 -> 200 ms, 0.88 -> 20 ms.
    assert_eq!(quantum_for(t, scaling_factor(0.3, 0.84)), 200);
    assert_eq!(quantum_for(t, scaling_factor(0.05, 0.12)), 20);
}

#[test]
fn first_observation_sets_the_quantum() {
    let mut ff = FaithfulController::default();
    assert_eq!(ff.quantum_ms(), None);
    let d = ff.observe(0.1, 0.84);
    assert!(d.changed);
    assert_eq!(d.quantum_ms, 200);
    assert!((d.scaling_factor - 0.16).abs() < 1e-12);
    assert_eq!(ff.quantum_ms(), Some(200));
}

#[test]
fn changes_only_beyond_the_range_of_the_factor_in_force() {
    let mut ff = FaithfulController::new(FfParams::default());
    assert_eq!(ff.observe(0.0, 0.5).quantum_ms, 100); // factor 0.50
                                                      // Within +-0.10 (inclusive): no change, even across a table row edge.
    for contention in [0.45, 0.40, 0.55, 0.60, 0.41] {
        let d = ff.observe(0.0, contention);
        assert!(!d.changed, "contention {contention}");
        assert_eq!(d.quantum_ms, 100);
        assert!((d.scaling_factor - 0.5).abs() < 1e-12);
    }
    // Beyond +0.10 of the factor in force.
    let d = ff.observe(0.0, 0.38); // factor 0.62
    assert!(d.changed);
    assert_eq!(d.quantum_ms, 50);
    // Small steps relative to the new factor in force do not accumulate.
    for contention in [0.30, 0.45, 0.30, 0.45] {
        assert!(!ff.observe(0.0, contention).changed);
    }
    let d = ff.observe(0.6, 0.1); // factor 0.40, 0.22 below 0.62
    assert!(d.changed);
    assert_eq!(d.quantum_ms, 120);
}

#[test]
fn range_is_a_parameter() {
    let mut ff = FaithfulController::new(FfParams {
        range: 0.0,
        ..FfParams::default()
    });
    ff.observe(0.0, 0.5);
    assert!(ff.observe(0.0, 0.49).changed);
    assert!(!ff.observe(0.0, 0.49).changed);
    assert_eq!(FfParams::default().monitoring_period_ns, 1_000_000_000);
}

#[test]
fn contention_and_miss_ratio_are_shares_or_nothing() {
    use corral_policy::faithful::{lock_contention, miss_ratio, Profile};
    assert_eq!(lock_contention(0, 0), 0.0);
    assert_eq!(lock_contention(840, 1000), 0.84);
    // Parked waiters of several threads: never above the whole.
    assert_eq!(lock_contention(5000, 1000), 1.0);
    assert_eq!(miss_ratio(5, 0), None);
    assert_eq!(miss_ratio(30, 100), Some(0.3));
    // No PMU: the factor is lock contention's alone.
    let mut ff = FaithfulController::default();
    let d = ff.observe_profile(&Profile {
        miss_ratio: None,
        lock_contention: 0.84,
    });
    assert_eq!(d.quantum_ms, 200);
    let mut ff = FaithfulController::default();
    let d = ff.observe_profile(&Profile {
        miss_ratio: Some(0.95),
        lock_contention: 0.1,
    });
    assert_eq!(d.quantum_ms, 250);
}

#[test]
fn rows_no_longer_than_ts_keep_the_kernel_default_slice() {
    use corral_policy::faithful::FfSlice;
    let mut ff = FaithfulController::default();
    // Factor 0.95 (Table I: 10 ms) then 0.88 (20 ms, within the range): no longer than TS's
    // shortest quantum, so the kernel's default slice stays.
    let d = ff.observe(0.0, 0.05);
    assert_eq!(
        (d.quantum_ms, d.slice, d.slice.runtime_ns()),
        (10, FfSlice::Default, 0)
    );
    let d = ff.observe(0.0, 0.12);
    assert_eq!(
        (d.quantum_ms, d.slice),
        (10, FfSlice::Default),
        "within the range"
    );
    let d = ff.observe(0.0, 0.31);
    assert_eq!((d.quantum_ms, d.slice), (50, FfSlice::Ms { ms: 50 }));
    assert_eq!(d.slice.runtime_ns(), 50_000_000);
    // Applying every row literally is one parameter away.
    let mut lit = FaithfulController::new(FfParams {
        keep_default_up_to_ms: 0,
        ..FfParams::default()
    });
    assert_eq!(lit.observe(0.0, 0.05).slice, FfSlice::Ms { ms: 10 });
}
