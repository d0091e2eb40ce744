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
