//! The `lca` policies against paper 1's published weaknesses.

use corral_sim::presets::preset;
use corral_sim::{make_policy, simulate, SimConfig, SimResult};

fn run(workload: &str, policy: &str, cores: u32) -> SimResult {
    let w = preset(workload).unwrap();
    let cfg = SimConfig::new(cores, 0.25, 1);
    let mut p = make_policy(policy, cores).unwrap();
    simulate(&cfg, &w, p.as_mut()).unwrap()
}

/// Paper 1, Sec. 4.6's two weaknesses of the 2013 algorithm, at 32
/// cores: single counter settles on 2 cores (1 is best), parallel
/// find's short-lived tasks keep the SSC at 1. corral cures both.
#[test]
fn improvements_cure_single_counter_and_parallel_find() {
    let counter_peak = run("single-counter", "default", 1).throughput;
    let counter = run("single-counter", "lca", 32);
    assert_eq!(counter.ssc, Some(1));
    assert!(counter.throughput > 0.9 * counter_peak);
    let counter_2013 = run("single-counter", "lca-2013", 32);
    assert_eq!(counter_2013.ssc, Some(2));
    assert!(counter_2013.throughput < 0.85 * counter_peak);

    let find_peak = run("parallel-find", "default", 10).throughput;
    let find = run("parallel-find", "lca", 32);
    assert!(find.throughput > 0.85 * find_peak, "{find:?}");
    let find_2013 = run("parallel-find", "lca-2013", 32);
    assert_eq!(find_2013.ssc, Some(1));
    assert!(find_2013.throughput < 0.7 * find_peak);
}

/// A task the SSC policy moves at its lock attempt pays the move before
/// it tries the lock (the scheduler moves it, then it runs and tries).
/// Charged inside the critical section, every move held the lock for
/// tens of microseconds, and after each change of the SSC's size the
/// lock stalled: lca over qspinlock fell to half of qspinlock on the
/// phase-changing preset at 256 cores.
#[test]
fn moves_at_lock_attempts_are_paid_outside_the_critical_section() {
    let w = preset("phase-change").unwrap();
    let cfg = SimConfig::new(256, 0.2, 1);
    let go = |policy: &str| {
        let mut p = make_policy(policy, 256).unwrap();
        simulate(&cfg, &w, p.as_mut()).unwrap()
    };
    let (base, lca) = (go("qspinlock"), go("lca-qspinlock"));
    assert!(lca.migrations > 0, "{lca:?}");
    let ratio = lca.throughput / base.throughput;
    assert!(ratio > 0.85, "lca-qspinlock / qspinlock = {ratio:.2}");
}

/// Issue 51's shape: threads arriving over the first 15 ms, one lock the
/// parallel part does not need cured at 8 cores. The search's round on
/// every core is taken on the ramp and reads low; without re-measuring
/// it, lca over qspinlock settled on 1-2 of 8 cores at 0.90-0.96x of
/// qspinlock (seeds 2 and 1). The reference rounds find every core better.
#[test]
fn a_baseline_taken_while_threads_arrive_is_measured_again() {
    let w = preset("arrival-ramp").unwrap();
    for seed in [1, 2] {
        let cfg = SimConfig::new(8, 0.2, seed);
        let go = |policy: &str| {
            let mut p = make_policy(policy, 8).unwrap();
            simulate(&cfg, &w, p.as_mut()).unwrap()
        };
        let (base, lca) = (go("qspinlock"), go("lca-qspinlock"));
        assert_eq!(lca.ssc, Some(8), "seed {seed}: {lca:?}");
        let ratio = lca.throughput / base.throughput;
        assert!(
            ratio > 0.97,
            "seed {seed}: lca-qspinlock / qspinlock = {ratio:.2}"
        );
    }
}
