//! The simulator against paper 3's Markov model (eq. 1): single ticket lock,
//! exponential times, one task per core, no preemption. The chain is exact
//! for exponential times, so the two must agree within sampling error.

use corral_policy::model::TicketModel;
use corral_sim::{AllCores, LockAlgo, LockSpec, SimConfig, Step, TimeDist, Workload};

/// `c`, the handoff cost per contender; Fig. 8 does not publish it.
const C: f64 = 100.0;

fn single_lock(a: f64, s: f64) -> Workload {
    Workload {
        name: "markov".into(),
        description: String::new(),
        tasks_per_core: 1,
        times: TimeDist::Exponential,
        locks: vec![LockSpec {
            name: "l".into(),
            algo: LockAlgo::Ticket,
            kernel: true,
            data_miss: [0.0; 4],
        }],
        operation: vec![Step {
            work: a,
            lock: Some("l".into()),
            cs: s,
            repeat: 1,
        }],
        ops_per_task: None,
        spawn_cycles: 0.0,
        arrival_ns: 0.0,
        phases: vec![],
        groups: 1,
    }
}

/// Simulated `n - w`: the time-average number of cores outside the lock.
fn simulated_speedup(a: f64, s: f64, n: u32, acquisitions_per_core: f64, seed: u64) -> f64 {
    let mut cfg = SimConfig::new(n, 1.0, seed);
    // Eq. 1's convention: every handoff costs `c k`, even to oneself.
    cfg.costs.per_contender = C;
    cfg.costs.local_reacquire = C;
    let cycles = acquisitions_per_core * (a + s + cfg.costs.per_contender * n as f64);
    cfg.seconds = cycles / (cfg.machine.clock_ghz * 1e9);
    cfg.warmup_fraction = 0.05;
    // One task per core and a slice longer than the run: no preemption.
    cfg.sched.slice_us = cfg.seconds * 2e6;
    let r = corral_sim::simulate(&cfg, &single_lock(a, s), &mut AllCores::default()).unwrap();
    r.noncritical_cores
}

#[test]
fn ticket_lock_matches_eq1_within_3_percent_for_fig8() {
    let (s, c) = (400.0, C);
    for a in [12_500.0, 200_000.0] {
        for n in 1..=48 {
            let model = TicketModel { a, s, c }.speedup(n);
            let sim = simulated_speedup(a, s, n, 4_000.0, n as u64);
            let err = (sim - model).abs() / model;
            assert!(
                err < 0.03,
                "a={a} n={n}: simulated {sim:.3} vs eq.1 {model:.3} ({:.1}%)",
                err * 100.0
            );
        }
    }
}
