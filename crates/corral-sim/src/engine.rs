//! The discrete-event driver: checks the run's inputs, builds the machine's
//! [`State`], fires its timers in time order until the end, and turns the
//! figures into a [`SimResult`]. What each event does lives in `state/`.

use crate::config::{SimConfig, SimResult, MAX_CORES};
use crate::error::SimError;
use crate::policy::SimPolicy;
use crate::state::{Event, Global, State, TaskTimer};
use crate::workload::Workload;

/// Runs `workload` under `policy` on the machine of `cfg` (generic, so that
/// a concrete policy's calls inline; `&mut dyn SimPolicy` works too).
///
/// # Errors
///
/// The workload is invalid, the machine has no or more than [`MAX_CORES`]
/// cores, `cfg.seconds` is not positive, or there are too many tasks.
pub fn simulate<P: SimPolicy + ?Sized>(
    cfg: &SimConfig,
    workload: &Workload,
    policy: &mut P,
) -> Result<SimResult, SimError> {
    workload.validate()?;
    let cores = cfg.machine.cores;
    if cores == 0 || cores > MAX_CORES {
        return Err(SimError::Cores(cores));
    }
    if !(cfg.seconds > 0.0 && cfg.seconds.is_finite()) {
        return Err(SimError::Seconds(cfg.seconds));
    }
    let n_tasks = cores
        .checked_mul(workload.tasks_per_core)
        .filter(|&n| n < 1 << 29)
        .ok_or(SimError::TooManyTasks)?;
    policy.start(&cfg.machine, n_tasks);
    let programs = workload.compile_programs()?;
    let mut sim = State::new(cfg, policy, workload, programs, n_tasks);
    let end = cfg.seconds * 1e9 * cfg.machine.clock_ghz;
    sim.arm_global(Global::Warmup, end * cfg.warmup_fraction.clamp(0.0, 0.99));
    for (i, p) in workload.phases.iter().enumerate() {
        sim.arm_global(Global::Program(i as u32 + 1), end * p.at);
    }
    sim.spawn_all();
    sim.arm_global(Global::Tick, sim.slice_cycles());
    run_until(&mut sim, end);
    Ok(result(&sim, cfg, workload, end))
}

/// Fires every event due by `end`, in time order.
fn run_until<P: SimPolicy + ?Sized>(sim: &mut State<'_, P>, end: f64) {
    while let Some(event) = sim.next_event(end) {
        match event {
            Event::Task(t, TaskTimer::PhaseEnd) => sim.phase_end(t),
            Event::Task(t, TaskTimer::SpinTimeout) => sim.spin_timeout(t),
            Event::Task(t, TaskTimer::Wake) => sim.wake(t),
            Event::SliceEnd(core) => sim.slice_end(core),
            Event::Global(Global::Tick) => sim.tick(),
            Event::Global(Global::Warmup) => sim.reset_figures(),
            Event::Global(Global::Program(p)) => sim.switch_program(p),
        }
    }
    sim.finish(end);
}

/// The figures of a finished run, per measured cycle and second.
fn result<P: SimPolicy + ?Sized>(
    sim: &State<'_, P>,
    cfg: &SimConfig,
    workload: &Workload,
    end: f64,
) -> SimResult {
    let f = sim.figures();
    let cycles = (end - f.measure_start).max(1.0);
    let seconds = cycles * sim.ns_per_cycle() * 1e-9;
    let n = sim.n_cores() as f64;
    let tasks = sim.n_tasks();
    let per_core = |x: f64| x / cycles;
    let idle = per_core(f.time.idle());
    let power = (n - idle) + idle * cfg.sched.idle_power;
    let throughput = f.ops as f64 / seconds;
    SimResult {
        workload: workload.name.clone(),
        policy: String::new(),
        cores: sim.n_cores(),
        tasks,
        seconds,
        ops: f.ops,
        throughput,
        speedup: throughput * workload.single_core_op_cycles(&cfg.costs)
            / (cfg.machine.clock_ghz * 1e9),
        wait_share: f.wait_total / (cycles * tasks as f64),
        ssc: sim.ssc(),
        settle_ms: sim.settle_ns().map(|ns| ns as f64 * 1e-6),
        noncritical_cores: per_core(f.time.work()),
        critical_cores: per_core(f.time.critical()),
        spinning_cores: per_core(f.time.spin()),
        idle_cores: idle,
        power,
        work_per_energy: if power > 0.0 {
            f.ops as f64 / (power * seconds)
        } else {
            0.0
        },
        migrations: f.migrations,
        context_switches: f.context_switches,
        events: sim.events(),
    }
}
