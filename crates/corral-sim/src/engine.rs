//! The discrete-event core: an event heap, cores with run queues and time
//! slices, and tasks stepping through their operation. Lock semantics live in
//! `lockops.rs`, placement and load balancing in `sched.rs`.

use crate::config::{SimConfig, SimResult};
use crate::locks::LockAlgo;
use crate::policy::SimPolicy;
use crate::rng::Rng;
use crate::timers::Timers;
use crate::workload::{CompiledStep, TimeDist, Workload, NO_LOCK};
use std::collections::VecDeque;

pub(crate) const NONE: u32 = u32::MAX;

/// Largest machine simulated (memory grows with cores times tasks).
pub const MAX_CORES: u32 = 1 << 16;

/// What a task's timer means when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskTimer {
    PhaseEnd,
    SpinTimeout,
    Wake,
}

/// Global timer slots (after the task and core slots).
const GLOBAL_TICK: u32 = 0;
const GLOBAL_WARMUP: u32 = 1;
/// Phase `i` of the workload starts at slot `GLOBAL_PROGRAM + i - 1`.
const GLOBAL_PROGRAM: u32 = 2;

/// What a core is doing, for the time and energy accounts.
pub(crate) const ACT_IDLE: usize = 0;
pub(crate) const ACT_WORK: usize = 1;
pub(crate) const ACT_CS: usize = 2;
pub(crate) const ACT_SPIN: usize = 3;

/// Where a task is in its current step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// About to start the current step's non-critical work.
    Start,
    /// Doing non-critical work.
    Work,
    /// About to try the step's lock (after a migration).
    Attempt,
    /// Waiting for the lock, spinning (on a core or preempted).
    Spin,
    /// Waiting for the lock, asleep.
    Parked,
    /// Owns the lock but has not started its critical section yet.
    Granted,
    /// In the critical section (handoff to the next holder included).
    Hold,
}

pub(crate) struct Task {
    pub core: u32,
    pub on_core: bool,
    pub phase: Phase,
    pub program: u32,
    pub step: u32,
    pub reps_left: u32,
    /// Remaining cycles of an interrupted Work or Hold phase.
    pub remaining: f64,
    pub phase_end: f64,
    /// Hold phase bookkeeping for non-scalable locks (see `lockops`).
    pub hold_start: f64,
    pub hold_base: f64,
    /// What its armed timer (if any) means.
    pub timer: TaskTimer,
    /// Cycles (migration, context switch, fork) owed to the next phase.
    pub debt: f64,
    pub wait_since: f64,
    pub spin_since: f64,
    pub slice_start: f64,
    pub slice_wait: f64,
    pub ops_in_life: u64,
}

pub(crate) struct Core {
    pub running: u32,
    pub runq: VecDeque<u32>,
    pub preempt_pending: bool,
    pub act: usize,
    pub since: f64,
}

pub(crate) struct LockState {
    pub algo: LockAlgo,
    pub kernel: bool,
    pub data_miss: [f64; 4],
    pub holder: u32,
    pub waiters: VecDeque<u32>,
    /// Waiters spinning on a core right now (they load the lock's line).
    pub spinners: u32,
    pub last_core: u32,
}

pub(crate) struct Sim<'a> {
    pub cfg: &'a SimConfig,
    pub policy: &'a mut dyn SimPolicy,
    pub rng: Rng,
    pub exponential: bool,
    pub programs: Vec<Vec<CompiledStep>>,
    pub current_program: u32,
    pub ops_per_task: u64,
    pub spawn_cycles: f64,
    pub timers: Timers,
    pub n_tasks: u32,
    pub now: f64,
    pub tasks: Vec<Task>,
    pub cores: Vec<Core>,
    pub locks: Vec<LockState>,
    pub queued: u32,
    pub slice_cycles: f64,
    pub ns_per_cycle: f64,
    // Figures, reset at the end of warm-up.
    pub measure_start: f64,
    pub acct: [f64; 4],
    pub wait_total: f64,
    pub ops: u64,
    pub migrations: u64,
    pub context_switches: u64,
    pub events: u64,
}

/// Runs `workload` under `policy` on the machine of `cfg`.
pub fn simulate(
    cfg: &SimConfig,
    workload: &Workload,
    policy: &mut dyn SimPolicy,
) -> Result<SimResult, String> {
    workload.validate()?;
    let cores = cfg.machine.cores;
    if cores == 0 || cores > MAX_CORES {
        return Err(format!("cores: must be in 1..={MAX_CORES}, not {cores}"));
    }
    if !(cfg.seconds > 0.0 && cfg.seconds.is_finite()) {
        return Err("seconds: must be > 0".into());
    }
    let n_tasks = cores
        .checked_mul(workload.tasks_per_core)
        .filter(|&n| n < 1 << 29)
        .ok_or("tasks: too many tasks to simulate")?;
    policy.start(&cfg.machine, n_tasks);
    let mut programs = vec![workload.compile_steps("operation", &workload.operation)?];
    for (i, p) in workload.phases.iter().enumerate() {
        programs.push(workload.compile_steps(&format!("phases[{i}].operation"), &p.operation)?);
    }
    let locks = workload
        .locks
        .iter()
        .map(|l| LockState {
            algo: policy.lock_algo(l.algo, l.kernel),
            kernel: l.kernel,
            data_miss: l.data_miss,
            holder: NONE,
            waiters: VecDeque::new(),
            spinners: 0,
            last_core: NONE,
        })
        .collect();
    let clock = cfg.machine.clock_ghz;
    let mut sim = Sim {
        cfg,
        policy,
        rng: Rng::seeded(cfg.seed),
        exponential: workload.times == TimeDist::Exponential,
        programs,
        current_program: 0,
        ops_per_task: workload.ops_per_task.unwrap_or(u64::MAX),
        spawn_cycles: workload.spawn_cycles,
        timers: Timers::new((n_tasks + cores + GLOBAL_PROGRAM) as usize + workload.phases.len()),
        n_tasks,
        now: 0.0,
        tasks: Vec::with_capacity(n_tasks as usize),
        cores: (0..cores)
            .map(|_| Core {
                running: NONE,
                runq: VecDeque::new(),
                preempt_pending: false,
                act: ACT_IDLE,
                since: 0.0,
            })
            .collect(),
        locks,
        queued: 0,
        slice_cycles: cfg.sched.slice_us * 1000.0 * clock,
        ns_per_cycle: 1.0 / clock,
        measure_start: 0.0,
        acct: [0.0; 4],
        wait_total: 0.0,
        ops: 0,
        migrations: 0,
        context_switches: 0,
        events: 0,
    };
    let end = cfg.seconds * 1e9 * clock;
    sim.arm_global(GLOBAL_WARMUP, end * cfg.warmup_fraction.clamp(0.0, 0.99));
    for (i, p) in workload.phases.iter().enumerate() {
        sim.arm_global(GLOBAL_PROGRAM + i as u32, end * p.at);
    }
    sim.spawn_all(n_tasks);
    sim.arm_global(GLOBAL_TICK, sim.slice_cycles);
    sim.run_until(end);
    Ok(sim.result(workload, end))
}

impl Sim<'_> {
    /// Arms task `t`'s timer (replacing any armed one).
    #[inline]
    pub(crate) fn arm_task(&mut self, t: u32, at: f64, what: TaskTimer) {
        self.tasks[t as usize].timer = what;
        self.timers.set(t, at);
    }

    #[inline]
    pub(crate) fn disarm_task(&mut self, t: u32) {
        self.timers.cancel(t);
    }

    /// Arms the end of the current slice on `core`.
    #[inline]
    pub(crate) fn arm_slice(&mut self, core: u32, at: f64) {
        self.timers.set(self.n_tasks + core, at);
    }

    #[inline]
    pub(crate) fn disarm_slice(&mut self, core: u32) {
        self.timers.cancel(self.n_tasks + core);
    }

    fn arm_global(&mut self, slot: u32, at: f64) {
        let id = self.n_tasks + self.cores.len() as u32 + slot;
        self.timers.set(id, at);
    }

    #[inline]
    pub(crate) fn ns(&self, cycles: f64) -> u64 {
        (cycles * self.ns_per_cycle) as u64
    }

    /// A duration around `mean`, drawn by the workload's distribution.
    #[inline]
    pub(crate) fn draw(&mut self, mean: f64) -> f64 {
        if self.exponential && mean > 0.0 {
            self.rng.exp(mean)
        } else {
            mean
        }
    }

    #[inline]
    pub(crate) fn step_of(&self, t: u32) -> CompiledStep {
        let task = &self.tasks[t as usize];
        self.programs[task.program as usize][task.step as usize]
    }

    /// Switches the activity account of `core` at the current time.
    #[inline]
    pub(crate) fn set_act(&mut self, core: u32, act: usize) {
        let c = &mut self.cores[core as usize];
        self.acct[c.act] += self.now - c.since;
        c.since = self.now;
        c.act = act;
    }

    fn spawn_all(&mut self, n_tasks: u32) {
        let cores = self.cores.len() as u32;
        for t in 0..n_tasks {
            self.tasks.push(Task {
                core: t % cores,
                on_core: false,
                phase: Phase::Start,
                program: 0,
                step: 0,
                reps_left: self.programs[0][0].repeat,
                remaining: 0.0,
                phase_end: 0.0,
                hold_start: 0.0,
                hold_base: 0.0,
                timer: TaskTimer::PhaseEnd,
                debt: 0.0,
                wait_since: 0.0,
                spin_since: 0.0,
                slice_start: 0.0,
                slice_wait: 0.0,
                ops_in_life: 0,
            });
        }
        // Round-robin start (fork balancing), restricted to what the policy
        // allows from the outset.
        for t in 0..n_tasks {
            let range = self.policy.allowed(t);
            let core = if range.contains(t % cores) {
                t % cores
            } else {
                self.least_loaded(range, t)
            };
            self.enqueue(t, core);
        }
    }

    fn run_until(&mut self, end: f64) {
        let n_cores = self.cores.len() as u32;
        while let Some((at, id)) = self.timers.pop() {
            if at > end {
                break;
            }
            self.now = at;
            self.events += 1;
            if id < self.n_tasks {
                match self.tasks[id as usize].timer {
                    TaskTimer::PhaseEnd => self.phase_end(id),
                    TaskTimer::SpinTimeout => self.spin_timeout(id),
                    TaskTimer::Wake => self.wake(id),
                }
            } else if id < self.n_tasks + n_cores {
                self.slice_end(id - self.n_tasks);
            } else {
                self.global(id - self.n_tasks - n_cores);
            }
        }
        self.now = end;
        for c in 0..self.cores.len() as u32 {
            let act = self.cores[c as usize].act;
            self.set_act(c, act);
        }
    }

    #[cold]
    fn global(&mut self, slot: u32) {
        match slot {
            GLOBAL_TICK => {
                let now_ns = self.ns(self.now);
                let view = crate::sched::LoadView(&self.cores);
                self.policy.on_tick(now_ns, &view);
                self.balance_idle();
                self.arm_global(GLOBAL_TICK, self.now + self.slice_cycles);
            }
            GLOBAL_WARMUP => self.reset_figures(),
            program => self.current_program = program - GLOBAL_PROGRAM + 1,
        }
    }

    fn reset_figures(&mut self) {
        for c in 0..self.cores.len() as u32 {
            let act = self.cores[c as usize].act;
            self.set_act(c, act);
        }
        self.acct = [0.0; 4];
        self.measure_start = self.now;
        self.wait_total = 0.0;
        self.ops = 0;
        self.migrations = 0;
        self.context_switches = 0;
    }

    /// The current Work or Hold phase of `t` has run out.
    fn phase_end(&mut self, t: u32) {
        match self.tasks[t as usize].phase {
            Phase::Work => {
                if self.step_of(t).lock == NO_LOCK {
                    self.finish_step(t);
                } else {
                    self.attempt(t);
                }
            }
            Phase::Hold => {
                self.release(t);
                self.finish_step(t);
            }
            _ => {}
        }
    }

    /// Starts the current step of running task `t`.
    #[inline]
    pub(crate) fn begin_step(&mut self, t: u32) {
        let step = self.step_of(t);
        let task = &mut self.tasks[t as usize];
        if step.work <= 0.0 && task.debt <= 0.0 {
            self.attempt(t);
            return;
        }
        let d = self.draw(step.work);
        let task = &mut self.tasks[t as usize];
        let len = d + std::mem::take(&mut task.debt);
        task.phase = Phase::Work;
        task.phase_end = self.now + len;
        let core = task.core;
        self.set_act(core, ACT_WORK);
        self.arm_task(t, self.now + len, TaskTimer::PhaseEnd);
    }

    /// One repetition of the current step is done: move on.
    fn finish_step(&mut self, t: u32) {
        let n_steps = self.programs[self.tasks[t as usize].program as usize].len() as u32;
        let task = &mut self.tasks[t as usize];
        task.reps_left -= 1;
        if task.reps_left == 0 {
            task.step += 1;
            if task.step == n_steps {
                task.step = 0;
                task.program = self.current_program;
                task.ops_in_life += 1;
                self.ops += 1;
            }
            let task = &mut self.tasks[t as usize];
            task.reps_left = self.programs[task.program as usize][task.step as usize].repeat;
        }
        self.tasks[t as usize].phase = Phase::Start;
        if self.tasks[t as usize].ops_in_life >= self.ops_per_task {
            self.respawn(t);
            return;
        }
        let core = self.tasks[t as usize].core as usize;
        if self.cores[core].preempt_pending && !self.cores[core].runq.is_empty() {
            self.preempt_running(core as u32);
            return;
        }
        self.begin_step(t);
    }

    /// A short-lived task exits; its successor is forked in its place.
    #[cold]
    fn respawn(&mut self, t: u32) {
        let now_ns = self.ns(self.now);
        self.policy.on_spawn(now_ns, t);
        let task = &mut self.tasks[t as usize];
        task.ops_in_life = 0;
        task.debt += self.spawn_cycles;
        let core = task.core;
        let range = self.policy.allowed(t);
        if range.contains(core) && !self.cores[core as usize].preempt_pending {
            self.begin_step(t);
        } else {
            // Fork places the child on the least-loaded allowed core.
            let target = self.least_loaded(range, t);
            self.migrate(t, target);
        }
    }

    fn result(&self, workload: &Workload, end: f64) -> SimResult {
        let cycles = (end - self.measure_start).max(1.0);
        let seconds = cycles * self.ns_per_cycle * 1e-9;
        let n = self.cores.len() as f64;
        let per_core = |x: f64| x / cycles;
        let idle = per_core(self.acct[ACT_IDLE]);
        let power = (n - idle) + idle * self.cfg.sched.idle_power;
        let throughput = self.ops as f64 / seconds;
        SimResult {
            workload: workload.name.clone(),
            policy: String::new(),
            cores: self.cores.len() as u32,
            tasks: self.tasks.len() as u32,
            seconds,
            ops: self.ops,
            throughput,
            speedup: throughput * workload.single_core_op_cycles(&self.cfg.costs)
                / (self.cfg.machine.clock_ghz * 1e9),
            wait_share: self.wait_total / (cycles * self.tasks.len() as f64),
            ssc: self.policy.ssc(),
            noncritical_cores: per_core(self.acct[ACT_WORK]),
            critical_cores: per_core(self.acct[ACT_CS]),
            spinning_cores: per_core(self.acct[ACT_SPIN]),
            idle_cores: idle,
            power,
            work_per_energy: if power > 0.0 {
                self.ops as f64 / (power * seconds)
            } else {
                0.0
            },
            migrations: self.migrations,
            context_switches: self.context_switches,
            events: self.events,
        }
    }
}
