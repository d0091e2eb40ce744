//! One policy, three drivers: the user-space monitor, the kernel-lock
//! monitor and the simulator's `lca` policy, fed the same observation trace,
//! place every thread the same way under the same SSC bound. This is what
//! makes the simulator's figures speak for the runtime.

use corral_locks::wait::ns_to_ticks;
use corral_policy::placement::Placement;
use corral_policy::ssc::SscParams;
use corral_runtime::config::{Policy, RuntimeConfig};
use corral_runtime::kernel::{KernelMonitor, MonitorConfig, SliceRecord};
use corral_runtime::monitor::{Monitor, Observed, ThreadSample};
use corral_sim::lca::Lca;
use corral_sim::{CoreLoads, Machine, SimPolicy};

const CORES: u32 = 4;
const THREADS: usize = 5;
const SLICE_NS: u64 = 2_000_000;
/// The kernel monitor's clock starts here (it reads CLOCK_MONOTONIC).
const BASE_NS: u64 = 1_000_000_000;

/// Wait share of each thread in slice `step`: two threads contend all
/// along, one joins late, one cools down, one never waits.
fn share(thread: usize, step: u64) -> f64 {
    match thread {
        0 => 0.6,
        1 if step < 120 => 0.6,
        1 => 0.0,
        2 => 0.0,
        3 if step < 40 => 0.04,
        3 => 0.5,
        _ => 0.3,
    }
}

/// Idle run queues: placement here depends on classification alone.
struct NoLoad;

impl CoreLoads for NoLoad {
    fn fill(&self, out: &mut Vec<u32>) {
        out.clear();
        out.resize(CORES as usize, 0);
    }
}

/// The core a thread runs on: the SSC's first core when placed there, the
/// last general core otherwise (never an SSC core).
fn core_of(p: Placement) -> u32 {
    match p {
        Placement::Ssc => 0,
        Placement::General | Placement::Unconfined => CORES - 1,
    }
}

#[test]
fn user_space_kernel_and_simulator_drivers_place_threads_alike() {
    let order: Vec<u32> = (0..CORES).collect();

    // The kernel preset with rounds closed by votes alone: the kernel-lock
    // monitor counts no progress, so it never closes a round by time; the
    // simulator does (it counts every acquisition), and so would diverge
    // here. The user-space preset adds "no confinement" as a candidate,
    // judged by the whole program's lock attempts, which the kernel monitor
    // does not count either (its own tests: corral-policy's
    // ssc_unconfined.rs).
    let params = SscParams {
        progress_round: 0,
        progress_round_min: 0,
        ..SscParams::kernel()
    };
    let mut sim = Lca::with_params(params);
    sim.start(&Machine::paper3_like(CORES), THREADS as u32);

    let cfg = RuntimeConfig {
        policy: Policy::Lca,
        slice_ns: SLICE_NS,
        ssc: params,
        ..RuntimeConfig::default()
    };
    let mut user = Monitor::new(cfg, order.clone(), None, None);

    let mut kcfg = MonitorConfig::new(order.clone());
    kcfg.ssc = params;
    kcfg.apply = false;
    let mut kernel = KernelMonitor::new(kcfg, BASE_NS);

    let tid = |t: usize| 1_000_000 + t as i32;
    // Every driver starts every thread unconfined, on a general core.
    let mut placed = [Placement::Unconfined; THREADS];
    let mut cpu = [0u64; THREADS];
    for (t, &p) in placed.iter().enumerate() {
        let first = ThreadSample {
            tid: tid(t),
            cpu_ns: Some(0),
            wait_ticks: 0,
            waits: 0,
            attempts: 0,
            yields: 0,
            applied: p,
            in_wait: false,
            registered: None,
        };
        user.observe(t, first, 0, 0.0);
        // The kernel monitor meets a thread at its first slice: an empty
        // one, merged into the next, registers it as early as the others.
        kernel.on_slice(&SliceRecord {
            tid: tid(t) as u32,
            tgid: 1,
            cpu: core_of(p),
            nr_waits: 0,
            begin_ns: BASE_NS,
            len_ns: 0,
            wait_ns: 0,
            last: false,
        });
    }

    let mut moves = 0;
    let mut confined_steps = 0;
    let mut bounds = std::collections::BTreeSet::new();
    for step in 0..200u64 {
        let begin = step * SLICE_NS;
        let end = begin + SLICE_NS;
        for t in 0..THREADS {
            let wait = (share(t, step) * SLICE_NS as f64) as u64;
            let core = core_of(placed[t]);

            sim.on_slice_begin(begin, t as u32);
            sim.on_slice(end, t as u32, core, SLICE_NS, wait);

            cpu[t] += SLICE_NS;
            let sample = ThreadSample {
                tid: tid(t),
                cpu_ns: Some(cpu[t]),
                wait_ticks: ns_to_ticks(wait),
                waits: u64::from(wait > 0),
                attempts: 0,
                yields: 0,
                applied: placed[t],
                in_wait: false,
                registered: None,
            };
            // Placed after the window closes; compared after the tick below.
            assert!(matches!(
                user.observe(t, sample, end, end as f64 / 1e6),
                Observed::Placed(_)
            ));

            kernel.on_slice(&SliceRecord {
                tid: tid(t) as u32,
                tgid: 1,
                cpu: core,
                nr_waits: u32::from(wait > 0),
                begin_ns: BASE_NS + begin,
                len_ns: SLICE_NS,
                wait_ns: wait,
                last: false,
            });
        }
        // The monitors' timer and placement round; the simulated threads'
        // next lock attempts (Algorithm 2).
        sim.on_tick(end, &NoLoad);
        let user_ctrl = user.controller().expect("policy lca");
        let _ = user_ctrl.tick(end);
        kernel.apply(BASE_NS + end);
        for (t, &at) in placed.iter().enumerate() {
            let _ = sim.on_lock_attempt(end, t as u32, core_of(at), &NoLoad);
        }

        let bound = sim.ssc().expect("started");
        bounds.insert(bound);
        let user_bound = user.controller().expect("policy lca").bound();
        assert_eq!(user_bound, bound, "user-space bound, step {step}");
        assert_eq!(
            kernel.controller().bound(),
            bound,
            "kernel bound, step {step}"
        );
        for t in 0..THREADS {
            let p = sim.placement(t as u32);
            let sample = ThreadSample {
                tid: tid(t),
                cpu_ns: Some(cpu[t]),
                wait_ticks: 0,
                waits: 0,
                attempts: 0,
                yields: 0,
                applied: placed[t],
                in_wait: false,
                registered: None,
            };
            // A sample with no new CPU time closes no window: it only places.
            let Observed::Placed(u) = user.observe(t, sample, end, end as f64 / 1e6) else {
                panic!("user-space monitor lost thread {t}");
            };
            let k = kernel.placement_of(tid(t) as u32).expect("live thread");
            assert_eq!((u, k), (p, p), "thread {t}, step {step}");
            assert_eq!(
                user.controller().expect("policy lca").cores_of(u),
                kernel.controller().cores_of(k),
                "cores of thread {t}, step {step}"
            );
            moves += usize::from(placed[t] != p);
            confined_steps += usize::from(p == Placement::Ssc);
            placed[t] = p;
        }
    }
    // The trace exercised the rule: threads qualified, moved and came back.
    assert!(moves >= 5, "{moves} moves");
    assert!(
        bounds.len() >= 2,
        "the SSC search moved the bound: {bounds:?}"
    );
    assert!(
        confined_steps > 100,
        "{confined_steps} confined thread-steps"
    );
    assert_eq!(
        placed[1],
        Placement::General,
        "thread 1 cooled and went back"
    );
    assert_eq!(placed[2], Placement::General);
    assert_eq!(placed[3], Placement::Ssc, "thread 3 qualified late");
}
