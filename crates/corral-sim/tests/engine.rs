//! Behaviour of the simulated machine, locks and policies.

use corral_sim::presets::preset;
use corral_sim::{
    make_policy, run_sweep, simulate, to_csv, LockAlgo, LockCosts, SimConfig, SimError, SimResult,
    SweepSpec, TimeDist, Workload,
};

fn run(workload: &Workload, policy: &str, cores: u32, seconds: f64, seed: u64) -> SimResult {
    let cfg = SimConfig::new(cores, seconds, seed);
    let mut p = make_policy(policy, cores).unwrap();
    simulate(&cfg, workload, p.as_mut()).unwrap()
}

fn one_lock(algo: LockAlgo, kernel: bool, work: f64, cs: f64) -> Workload {
    let text = format!(
        r#"{{"name":"t","locks":[{{"name":"l","algo":"{}","kernel":{kernel}}}],
            "operation":[{{"work":{work},"lock":"l","cs":{cs}}}]}}"#,
        algo.name()
    );
    Workload::from_json(&text).unwrap()
}

#[test]
fn a_seed_fixes_the_run() {
    let w = preset("mempop").unwrap();
    let (a, b, c) = (
        run(&w, "default", 8, 0.01, 1),
        run(&w, "default", 8, 0.01, 1),
        run(&w, "default", 8, 0.01, 2),
    );
    assert_eq!((a.ops, a.events), (b.ops, b.events));
    assert_ne!(a.ops, c.ops);
}

#[test]
fn one_core_fixed_times_take_work_plus_cs_plus_local_handoff() {
    let mut w = one_lock(LockAlgo::Ticket, true, 1000.0, 200.0);
    w.times = TimeDist::Fixed;
    let r = run(&w, "default", 1, 0.01, 1);
    let per_op = 1000.0 + 200.0 + LockCosts::default().local_reacquire;
    let want = 2.4e9 / per_op;
    assert!(
        (r.throughput / want - 1.0).abs() < 0.01,
        "{} vs {want}",
        r.throughput
    );
    assert!(r.wait_share < 1e-9);
}

#[test]
fn core_time_adds_up_to_the_machine() {
    let r = run(&preset("pfind").unwrap(), "default", 12, 0.01, 3);
    let total = r.noncritical_cores + r.critical_cores + r.spinning_cores + r.idle_cores;
    assert!((total - 12.0).abs() < 1e-6, "{total}");
    assert!(r.power <= 12.0 && r.work_per_energy > 0.0);
}

#[test]
fn ticket_collapses_where_mcs_does_not() {
    let w = preset("mempop").unwrap();
    let ticket = run(&w, "default", 32, 0.02, 1);
    let mcs = run(&w, "mcs", 32, 0.02, 1);
    let ticket_peak = run(&w, "default", 8, 0.02, 1);
    assert!(ticket.throughput < 0.5 * ticket_peak.throughput);
    assert!(mcs.throughput > 2.0 * ticket.throughput);
}

#[test]
fn a_saturated_qspinlock_hands_off_at_its_queued_cost_at_any_size() {
    // Fixed times, the lock always busy: one operation per cs + handoff,
    // the handoff being the queued cost whatever the number of waiters.
    let mut w = one_lock(LockAlgo::Ticket, true, 500.0, 1000.0);
    w.times = TimeDist::Fixed;
    let costs = LockCosts::default();
    let want = 2.4e9 / (1000.0 + costs.handoff(LockAlgo::Qspinlock, 3));
    for cores in [4, 64] {
        let r = run(&w, "qspinlock", cores, 0.01, 1);
        let ratio = r.throughput / want;
        assert!((ratio - 1.0).abs() < 0.02, "{cores} cores: {ratio}");
    }
    // Same workload as declared (ticket): the O(n) handoff at 64 cores.
    let ticket = run(&w, "ticket", 64, 0.01, 1);
    assert!(ticket.throughput < 0.5 * want, "{}", ticket.throughput);
}

#[test]
fn qspinlock_is_the_ticket_lock_on_one_core() {
    let w = preset("mempop").unwrap();
    let (t, q) = (
        run(&w, "ticket", 1, 0.01, 1),
        run(&w, "qspinlock", 1, 0.01, 1),
    );
    assert_eq!((t.ops, t.events), (q.ops, q.events));
}

#[test]
fn preempting_user_space_spinners_hurts_and_kernel_ones_are_never_preempted() {
    // Two tasks per core: a user-space ticket lock hands the lock to
    // preempted waiters; a kernel one never lets a spinner be preempted.
    let mut user = one_lock(LockAlgo::Ticket, false, 2000.0, 200.0);
    user.tasks_per_core = 2;
    let mut kernel = user.clone();
    kernel.locks[0].kernel = true;
    let u = run(&user, "default", 4, 0.05, 1);
    let k = run(&kernel, "default", 4, 0.05, 1);
    assert!(
        u.throughput < 0.5 * k.throughput,
        "user {} kernel {}",
        u.throughput,
        k.throughput
    );
}

#[test]
fn mutex_waiters_sleep_instead_of_spinning() {
    let w = one_lock(LockAlgo::Mutex, false, 1000.0, 400.0);
    let r = run(&w, "default", 8, 0.02, 1);
    assert_eq!(r.spinning_cores, 0.0);
    assert!(r.idle_cores > 1.0 && r.wait_share > 0.2);
    let a = run(
        &one_lock(LockAlgo::Adaptive, false, 1000.0, 400.0),
        "default",
        8,
        0.02,
        1,
    );
    assert!(a.spinning_cores > 0.0 && a.spinning_cores < 8.0);
}

#[test]
fn lca_keeps_mempop_near_its_peak_at_48_cores() {
    let w = preset("mempop").unwrap();
    let default = run(&w, "default", 48, 0.3, 1);
    let lca = run(&w, "lca", 48, 0.3, 1);
    assert!(lca.throughput > 3.0 * default.throughput);
    let ssc = lca.ssc.unwrap();
    assert!((4..=16).contains(&ssc), "ssc {ssc}");
}

#[test]
fn short_lived_tasks_are_respawned() {
    let mut w = one_lock(LockAlgo::Ticket, true, 5000.0, 100.0);
    w.ops_per_task = Some(3);
    w.spawn_cycles = 10_000.0;
    let r = run(&w, "default", 4, 0.01, 1);
    let steady = run(
        &one_lock(LockAlgo::Ticket, true, 5000.0, 100.0),
        "default",
        4,
        0.01,
        1,
    );
    assert!(r.ops > 0 && r.throughput < steady.throughput);
}

#[test]
fn a_phase_change_switches_the_operation() {
    let w = preset("phase-change").unwrap();
    let mut first = w.clone();
    first.phases.clear();
    let both = run(&w, "default", 4, 0.02, 1);
    let only_first = run(&first, "default", 4, 0.02, 1);
    // The second phase's operations are 50x longer.
    assert!(both.throughput < 0.8 * only_first.throughput);
}

#[test]
fn sweeps_reject_bad_input_and_write_csv() {
    let spec = |policies: &[&str], cores: Vec<u32>| SweepSpec {
        workloads: vec![preset("fops").unwrap()],
        policies: policies.iter().map(|s| s.to_string()).collect(),
        cores,
        seconds: 0.001,
        seed: 1,
        costs: LockCosts::default(),
    };
    let none = |_: usize, _: usize| {};
    let e = run_sweep(&spec(&["nope"], vec![2]), &none).unwrap_err();
    assert!(matches!(&e, SimError::UnknownPolicy { name, .. } if name == "nope"));
    assert!(e.to_string().contains("unknown policy 'nope'"), "{e}");
    let e = run_sweep(&spec(&["default"], vec![0]), &none).unwrap_err();
    assert!(matches!(e, SimError::Cores(0)), "{e}");
    let report = run_sweep(&spec(&["default", "mcs"], vec![1, 2]), &none).unwrap();
    assert_eq!(report.points.len(), 4);
    let csv = to_csv(&report);
    assert_eq!(csv.lines().count(), 5);
    assert!(csv.lines().nth(1).unwrap().starts_with("fops,default,1,"));
}

#[test]
fn faithful_gives_a_contended_app_the_long_quantum_of_table_i() {
    use corral_sim::faithful::Faithful;
    use corral_sim::SimPolicy;
    // 90% of each operation serial on 16 cores: ~94% of slice time waits.
    let w = one_lock(LockAlgo::Ticket, true, 10_000.0, 100_000.0);
    let mut ff = Faithful::default();
    assert_eq!(ff.slice_ns(0), None);
    let cfg = SimConfig::new(16, 2.1, 1);
    simulate(&cfg, &w, &mut ff).unwrap();
    // Scaling factor 1 - contention is at most 0.10: Table I's 250 ms row.
    assert_eq!(ff.slice_ns(0), Some(250_000_000));
}

#[test]
fn csf_renewal_spares_preempted_user_space_lock_holders() {
    // Three tasks per core on a user-space test-and-set lock: without CSF a
    // holder is often preempted and everyone spins behind it.
    let mut w = one_lock(LockAlgo::Tas, false, 3000.0, 1500.0);
    w.tasks_per_core = 3;
    let default = run(&w, "default", 4, 0.1, 1);
    let ca = run(&w, "ca", 4, 0.1, 1);
    assert!(
        ca.throughput > 1.5 * default.throughput,
        "ca {} default {}",
        ca.throughput,
        default.throughput
    );
}

#[test]
fn planted_groups_take_their_own_locks_and_ca_maps_each_group_to_one_core() {
    let w = preset("ca-groups-2").unwrap();
    assert_eq!(w.groups, 2);
    let cfg = SimConfig::new(2, 0.05, 1);
    let mut ca = corral_sim::ca::ContentionAware::default();
    let r = simulate(&cfg, &w, &mut ca).unwrap();
    assert_eq!(r.tasks, 12);
    // Task t is in group t % 2: the plan must keep each group whole on one
    // core and the two groups apart.
    let plan = ca.plan().expect("a seVector filled in 50 ms");
    assert!(plan.iter().step_by(2).all(|&c| c == plan[0]), "{plan:?}");
    assert!(
        plan.iter().skip(1).step_by(2).all(|&c| c == plan[1]),
        "{plan:?}"
    );
    assert_ne!(plan[0], plan[1]);
    assert!(preset("ca-groups-9").is_none() && preset("ca-groups-1").is_none());
}

#[test]
fn a_group_lock_name_must_resolve_for_every_group() {
    let text = r#"{"name":"t","groups":2,"locks":[{"name":"l0","algo":"ticket"}],
        "operation":[{"work":10,"lock":"l{group}","cs":5}]}"#;
    let e = Workload::from_json(text).unwrap_err().to_string();
    assert!(e.contains("unknown lock 'l1'"), "{e}");
}
