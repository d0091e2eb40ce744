//! The simulated machine's state: tasks, cores with their run queues, locks,
//! the timer heap and the figures, with the transitions the engine drives.
//!
//! One type, [`State`], because an event on one topic continues on another
//! (a slice end migrates a task, which then tries its lock, which may park
//! it and switch its core): its methods are split by topic into the files
//! below, which use only this file's types, never each other.
//!
//! - `steps.rs`: a task stepping through its operation, spawn and respawn;
//! - `sched.rs`: run queues, time slices, preemption, migration, balancing;
//! - `lockops.rs`: acquisition, spinning, handoff, release, sleep and wake.

mod lockops;
mod sched;
mod steps;

use crate::config::SimConfig;
use crate::locks::LockAlgo;
use crate::policy::{CoreLoads, SimPolicy};
use crate::rng::Rng;
use crate::timers::Timers;
use crate::topology::Distances;
use crate::workload::{CompiledStep, TimeDist, Workload};
use std::collections::VecDeque;

/// What a task's timer means when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskTimer {
    /// The current Work or Hold phase ends.
    PhaseEnd,
    /// An adaptive lock's spinning budget runs out.
    SpinTimeout,
    /// A parked task granted the lock becomes runnable.
    Wake,
}

/// Machine-wide timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Global {
    /// Once per time slice: the policy's tick and idle balancing.
    Tick,
    /// The warm-up ends: the figures restart.
    Warmup,
    /// Tasks switch to program `n` (`n >= 1`: the workload's phase `n - 1`).
    Program(u32),
}

impl Global {
    /// Slot among the global timers.
    fn slot(self) -> u32 {
        match self {
            Global::Tick => 0,
            Global::Warmup => 1,
            Global::Program(n) => 1 + n,
        }
    }

    fn from_slot(slot: u32) -> Self {
        match slot {
            0 => Global::Tick,
            1 => Global::Warmup,
            s => Global::Program(s - 1),
        }
    }
}

/// A timer that fired, decoded from its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// Task `.0`'s own timer, meaning `.1`.
    Task(u32, TaskTimer),
    /// The time slice on core `.0` ran out.
    SliceEnd(u32),
    /// A machine-wide timer.
    Global(Global),
}

/// What a core is doing, for the time and energy accounts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Activity {
    Idle = 0,
    /// Non-critical work (context switch and migration costs included).
    Work = 1,
    /// Inside a critical section, handoff included.
    Critical = 2,
    Spin = 3,
}

/// Core-cycles spent in each [`Activity`], summed over all cores, indexed
/// by it: the account to add to is chosen without a branch.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CoreTime([f64; 4]);

impl CoreTime {
    #[inline]
    fn add(&mut self, act: Activity, cycles: f64) {
        self.0[act as usize] += cycles;
    }

    pub(crate) fn idle(&self) -> f64 {
        self.0[Activity::Idle as usize]
    }

    /// Non-critical work.
    pub(crate) fn work(&self) -> f64 {
        self.0[Activity::Work as usize]
    }

    pub(crate) fn critical(&self) -> f64 {
        self.0[Activity::Critical as usize]
    }

    pub(crate) fn spin(&self) -> f64 {
        self.0[Activity::Spin as usize]
    }
}

/// The measured figures, restarted at the end of warm-up.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Figures {
    /// When measuring began, in cycles.
    pub(crate) measure_start: f64,
    pub(crate) time: CoreTime,
    /// Cycles tasks waited to acquire locks.
    pub(crate) wait_total: f64,
    pub(crate) ops: u64,
    pub(crate) migrations: u64,
    pub(crate) context_switches: u64,
}

/// Where a task is in its current step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
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

struct Task {
    /// The core it runs or is queued on, or ran on last.
    core: u32,
    on_core: bool,
    phase: Phase,
    program: u32,
    /// Its planted group, `t % groups`, kept: a division on every step
    /// end was the slowest instruction of the hot path.
    group: u32,
    step: u32,
    /// `programs[program][step]`, copied when the step changes: read on
    /// every event.
    cur: CompiledStep,
    reps_left: u32,
    /// Remaining cycles of an interrupted Work or Hold phase.
    remaining: f64,
    phase_end: f64,
    /// Hold phase bookkeeping for non-scalable locks (see `lockops`).
    hold_start: f64,
    hold_base: f64,
    /// The handoff cost in the hold phase's length now: a change of
    /// spinners that leaves it equal moves nothing.
    hold_handoff: f64,
    /// What its armed timer (if any) means.
    timer: TaskTimer,
    /// Cycles (migration, context switch, fork) owed to the next phase.
    debt: f64,
    wait_since: f64,
    spin_since: f64,
    slice_start: f64,
    slice_wait: f64,
    ops_in_life: u64,
}

struct Core {
    running: Option<u32>,
    runq: VecDeque<u32>,
    /// A kernel-lock task's slice ran out while others queue: preempt it as
    /// soon as it leaves the lock.
    preempt_pending: bool,
    act: Activity,
    /// When `act` began.
    since: f64,
}

struct LockState {
    algo: LockAlgo,
    kernel: bool,
    data_miss: [f64; 4],
    holder: Option<u32>,
    waiters: VecDeque<u32>,
    /// Waiters spinning on a core right now (they load the lock's line).
    spinners: u32,
    /// The core of the last release; none before the first.
    last_core: Option<u32>,
}

/// The per-core loads as policies read them (a copy, built on demand).
struct LoadView<'a>(&'a [u32]);

impl CoreLoads for LoadView<'_> {
    #[inline]
    fn fill(&self, out: &mut Vec<u32>) {
        out.clear();
        out.extend_from_slice(self.0);
    }
}

/// Everything one simulated run changes.
pub(crate) struct State<'a, P: SimPolicy + ?Sized> {
    cfg: &'a SimConfig,
    /// Generic so that its per-event calls inline.
    policy: &'a mut P,
    /// The machine's distances, tabled.
    dist: Distances,
    rng: Rng,
    exponential: bool,
    /// The operation, then one program per workload phase, each once per
    /// planted group (`Workload::groups`).
    programs: Vec<Vec<CompiledStep>>,
    groups: u32,
    /// Program tasks take up at their next operation.
    current_program: u32,
    /// Operations after which a task exits; none for long-lived tasks.
    ops_per_task: Option<u64>,
    spawn_cycles: f64,
    /// `Workload::arrival_ns` in cycles.
    arrival_cycles: f64,
    /// One timer per task: most events, apart from the rest so that their
    /// heap is shallower.
    timers: Timers,
    /// One timer per core (its slice), then the globals: far apart, seldom.
    machine_timers: Timers,
    n_tasks: u32,
    now: f64,
    tasks: Vec<Task>,
    cores: Vec<Core>,
    /// Each core's running and queued tasks, kept as they change: policies
    /// and placement read loads without walking every core's queue.
    loads: Vec<u32>,
    locks: Vec<LockState>,
    /// Tasks in all run queues together.
    queued: u32,
    slice_cycles: f64,
    ns_per_cycle: f64,
    figures: Figures,
    /// Events processed, warm-up included.
    events: u64,
}

impl<'a, P: SimPolicy + ?Sized> State<'a, P> {
    /// A machine of `cfg.machine.cores` idle cores and no tasks yet, running
    /// `programs` (compiled from `workload`) under `policy`, which has been
    /// started.
    pub(crate) fn new(
        cfg: &'a SimConfig,
        policy: &'a mut P,
        workload: &Workload,
        programs: Vec<Vec<CompiledStep>>,
        n_tasks: u32,
    ) -> Self {
        let locks = workload
            .locks
            .iter()
            .map(|l| LockState {
                algo: policy.lock_algo(l.algo, l.kernel),
                kernel: l.kernel,
                data_miss: l.data_miss,
                holder: None,
                waiters: VecDeque::new(),
                spinners: 0,
                last_core: None,
            })
            .collect();
        let cores = cfg.machine.cores;
        let clock = cfg.machine.clock_ghz;
        let globals = Global::Program(workload.phases.len() as u32).slot() + 1;
        State {
            cfg,
            policy,
            dist: Distances::new(&cfg.machine),
            rng: Rng::seeded(cfg.seed),
            exponential: workload.times == TimeDist::Exponential,
            programs,
            groups: workload.groups.max(1),
            current_program: 0,
            ops_per_task: workload.ops_per_task,
            spawn_cycles: workload.spawn_cycles,
            arrival_cycles: workload.arrival_ns * clock,
            timers: Timers::new(n_tasks as usize),
            machine_timers: Timers::new((cores + globals) as usize),
            n_tasks,
            now: 0.0,
            tasks: Vec::with_capacity(n_tasks as usize),
            cores: (0..cores)
                .map(|_| Core {
                    running: None,
                    runq: VecDeque::new(),
                    preempt_pending: false,
                    act: Activity::Idle,
                    since: 0.0,
                })
                .collect(),
            loads: vec![0; cores as usize],
            locks,
            queued: 0,
            slice_cycles: cfg.sched.slice_us * 1000.0 * clock,
            ns_per_cycle: 1.0 / clock,
            figures: Figures::default(),
            events: 0,
        }
    }
}

impl<P: SimPolicy + ?Sized> State<'_, P> {
    /// The kernel's time slice, in cycles.
    pub(crate) fn slice_cycles(&self) -> f64 {
        self.slice_cycles
    }

    /// Nanoseconds per simulated cycle.
    pub(crate) fn ns_per_cycle(&self) -> f64 {
        self.ns_per_cycle
    }

    /// The figures measured since the warm-up ended.
    pub(crate) fn figures(&self) -> &Figures {
        &self.figures
    }

    /// Events processed, warm-up included.
    pub(crate) fn events(&self) -> u64 {
        self.events
    }

    pub(crate) fn n_cores(&self) -> u32 {
        self.cores.len() as u32
    }

    pub(crate) fn n_tasks(&self) -> u32 {
        self.tasks.len() as u32
    }

    /// The policy's final SSC size, if it has one.
    pub(crate) fn ssc(&self) -> Option<u32> {
        self.policy.ssc()
    }

    /// The policy's SSC time-to-settle, if it has an SSC.
    pub(crate) fn settle_ns(&self) -> Option<u64> {
        self.policy.settle_ns()
    }

    /// Arms task `t`'s timer (replacing any armed one).
    #[inline]
    fn arm_task(&mut self, t: u32, at: f64, what: TaskTimer) {
        self.tasks[t as usize].timer = what;
        self.timers.set(t, at);
    }

    #[inline]
    fn disarm_task(&mut self, t: u32) {
        self.timers.cancel(t);
    }

    /// Arms the end of the current slice on `core`.
    #[inline]
    fn arm_slice(&mut self, core: u32, at: f64) {
        self.machine_timers.set(core, at);
    }

    #[inline]
    fn disarm_slice(&mut self, core: u32) {
        self.machine_timers.cancel(core);
    }

    /// Arms machine-wide timer `what` for time `at`.
    pub(crate) fn arm_global(&mut self, what: Global, at: f64) {
        let id = self.cores.len() as u32 + what.slot();
        self.machine_timers.set(id, at);
    }

    /// The next event due by `end`, with the clock moved to it; none once
    /// the next is later (the clock then stays where it was).
    #[inline]
    pub(crate) fn next_event(&mut self, end: f64) -> Option<Event> {
        let task = self.timers.peek();
        let machine = self.machine_timers.peek();
        // A task's timer goes first on a tie, as when both shared one heap
        // with tasks numbered first.
        let task_first = match (task, machine) {
            (Some((at, _)), Some((m_at, _))) => at <= m_at,
            (t, _) => t.is_some(),
        };
        let (at, event) = match (task, machine) {
            (Some((at, t)), _) if task_first => {
                self.timers.fire_top();
                (at, Event::Task(t, self.tasks[t as usize].timer))
            }
            (_, Some((at, id))) => {
                self.machine_timers.fire_top();
                let n_cores = self.cores.len() as u32;
                let event = if id < n_cores {
                    Event::SliceEnd(id)
                } else {
                    Event::Global(Global::from_slot(id - n_cores))
                };
                (at, event)
            }
            _ => return None,
        };
        if at > end {
            return None;
        }
        self.now = at;
        self.events += 1;
        Some(event)
    }

    /// Ends the run at `end`: every core's current activity is accounted up
    /// to then.
    pub(crate) fn finish(&mut self, end: f64) {
        self.debug_check_loads();
        self.now = end;
        self.settle_accounts();
    }

    /// The warm-up is over: measure from now on.
    pub(crate) fn reset_figures(&mut self) {
        self.settle_accounts();
        self.figures = Figures {
            measure_start: self.now,
            ..Figures::default()
        };
    }

    /// Tasks take up program `program` at their next operation.
    pub(crate) fn switch_program(&mut self, program: u32) {
        self.current_program = program;
    }

    #[inline]
    fn ns(&self, cycles: f64) -> u64 {
        // Through i64: x86-64 converts to signed in one instruction, to u64
        // in six; simulated times stay far below 2^63 ns, so the same value.
        (cycles * self.ns_per_cycle).max(0.0) as i64 as u64
    }

    /// A duration around `mean`, drawn by the workload's distribution.
    #[inline]
    fn draw(&mut self, mean: f64) -> f64 {
        if self.exponential && mean > 0.0 {
            self.rng.exp(mean)
        } else {
            mean
        }
    }

    #[inline]
    fn step_of(&self, t: u32) -> CompiledStep {
        self.tasks[t as usize].cur
    }

    /// Index in `programs` of `t`'s current program, for its group.
    #[inline]
    fn program_of(&self, t: u32) -> usize {
        let task = &self.tasks[t as usize];
        (task.program * self.groups + task.group) as usize
    }

    /// The lock of `t`'s current step, for a task trying, waiting for or
    /// holding it (only lock steps get there).
    #[inline]
    fn lock_of(&self, t: u32) -> usize {
        let lock = self.step_of(t).lock;
        lock.expect("a task at a lock is on a step with one") as usize
    }

    /// Switches the activity account of `core` at the current time.
    #[inline]
    fn set_act(&mut self, core: u32, act: Activity) {
        let c = &mut self.cores[core as usize];
        self.figures.time.add(c.act, self.now - c.since);
        c.since = self.now;
        c.act = act;
    }

    /// Records `core`'s load after its run queue or running task changed.
    #[inline]
    fn sync_load(&mut self, core: u32) {
        let c = &self.cores[core as usize];
        self.loads[core as usize] = c.runq.len() as u32 + u32::from(c.running.is_some());
    }

    /// Checks the kept loads against the run queues (debug builds).
    fn debug_check_loads(&self) {
        debug_assert!(self
            .cores
            .iter()
            .zip(&self.loads)
            .all(|(c, &l)| l == c.runq.len() as u32 + u32::from(c.running.is_some())));
    }

    /// Accounts every core's current activity up to now.
    fn settle_accounts(&mut self) {
        for c in 0..self.cores.len() as u32 {
            let act = self.cores[c as usize].act;
            self.set_act(c, act);
        }
    }
}
