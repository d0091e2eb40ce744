//! Per-core run queues, time slices, preemption, migration and load
//! balancing within each task's allowed cores.

use super::{Activity, Global, LoadView, Phase, State, TaskTimer};
use crate::locks::LockAlgo;
use crate::policy::CoreRange;
use crate::policy::SimPolicy;

impl<P: SimPolicy + ?Sized> State<'_, P> {
    #[inline]
    fn load(&self, core: u32) -> u32 {
        self.loads[core as usize]
    }

    /// The least-loaded core of `range`, ties broken by a per-task offset so
    /// that tasks spread out.
    pub(super) fn least_loaded(&self, range: CoreRange, t: u32) -> u32 {
        let len = range.hi.saturating_sub(range.lo).max(1);
        let mut best = range.lo;
        let mut best_load = u32::MAX;
        for i in 0..len {
            let core = range.lo + (t + i) % len;
            let load = self.load(core);
            if load < best_load {
                best = core;
                best_load = load;
                if load == 0 {
                    break;
                }
            }
        }
        best
    }

    /// Makes `t` runnable on `core`: runs it at once if the core is idle.
    pub(super) fn enqueue(&mut self, t: u32, core: u32) {
        self.tasks[t as usize].core = core;
        if self.cores[core as usize].running.is_none() {
            self.run_on(core, t);
        } else {
            self.cores[core as usize].runq.push_back(t);
            self.sync_load(core);
            self.queued += 1;
        }
    }

    /// Moves `t` (running or not) to `target`, paying the migration cost.
    pub(super) fn migrate(&mut self, t: u32, target: u32) {
        let from = self.tasks[t as usize].core;
        if self.tasks[t as usize].on_core {
            self.leave_core(t);
            self.switch_next(from);
        }
        if from != target {
            self.tasks[t as usize].debt += self.dist.migration_cycles(from, target);
            self.figures.migrations += 1;
        }
        self.enqueue(t, target);
    }

    /// Takes running task `t` off its core, saving its progress and closing
    /// its slice.
    pub(super) fn leave_core(&mut self, t: u32) {
        let now = self.now;
        let core = self.tasks[t as usize].core;
        let phase = self.tasks[t as usize].phase;
        match phase {
            Phase::Work | Phase::Hold => {
                let task = &mut self.tasks[t as usize];
                task.remaining = (task.phase_end - now).max(0.0);
            }
            Phase::Spin => {
                let l = self.lock_of(t);
                self.end_spin(t, l);
            }
            _ => {}
        }
        self.report_slice(t);
        self.policy.on_descheduled(t);
        self.disarm_task(t);
        let task = &mut self.tasks[t as usize];
        task.on_core = false;
        let c = &mut self.cores[core as usize];
        c.running = None;
        c.preempt_pending = false;
        self.sync_load(core);
    }

    /// Hands the slice that just ended for `t` to the policy.
    fn report_slice(&mut self, t: u32) {
        let now = self.now;
        let task = &mut self.tasks[t as usize];
        let mut wait = task.slice_wait;
        if task.phase == Phase::Spin && task.on_core {
            wait += now - task.spin_since;
            task.spin_since = now;
        }
        let run = now - task.slice_start;
        task.slice_start = now;
        task.slice_wait = 0.0;
        let core = task.core;
        let (now_ns, run_ns, wait_ns) = (self.ns(now), self.ns(run), self.ns(wait));
        self.policy.on_slice(now_ns, t, core, run_ns, wait_ns);
        self.policy.on_slice_begin(now_ns, t);
    }

    /// `core` lost its task: run the next queued one, pull one, or go idle.
    pub(super) fn switch_next(&mut self, core: u32) {
        if let Some(next) = self.cores[core as usize].runq.pop_front() {
            self.queued -= 1;
            self.run_on(core, next);
        } else if !self.pull(core) {
            self.disarm_slice(core);
            self.set_act(core, Activity::Idle);
        }
    }

    /// Idle balancing: `core` steals a queued task allowed to run on it from
    /// the busiest run queue.
    fn pull(&mut self, core: u32) -> bool {
        if self.queued == 0 {
            return false;
        }
        let mut best: Option<(usize, u32, usize)> = None;
        for (src, c) in self.cores.iter().enumerate() {
            if c.runq.is_empty() || best.is_some_and(|b| b.0 >= c.runq.len()) {
                continue;
            }
            if let Some(i) = c
                .runq
                .iter()
                .rposition(|&q| self.policy.allowed(q).contains(core))
            {
                best = Some((c.runq.len(), src as u32, i));
            }
        }
        let Some((_, src, i)) = best else {
            return false;
        };
        let t = self.cores[src as usize]
            .runq
            .remove(i)
            .expect("index from rposition");
        self.sync_load(src);
        self.queued -= 1;
        self.tasks[t as usize].debt += self.dist.migration_cycles(src, core);
        self.figures.migrations += 1;
        self.tasks[t as usize].core = core;
        self.run_on(core, t);
        true
    }

    /// The periodic tick: the policy's timers, then idle balancing, then the
    /// next tick one kernel slice later.
    #[cold]
    pub(crate) fn tick(&mut self) {
        let now_ns = self.ns(self.now);
        self.debug_check_loads();
        let view = LoadView(&self.loads);
        self.policy.on_tick(now_ns, &view);
        self.balance_idle();
        self.arm_global(Global::Tick, self.now + self.slice_cycles);
    }

    /// Periodic balancing: idle cores look for queued work.
    ///
    /// A pull succeeds exactly when some queued task is allowed on the idle
    /// core, so the allowed ranges of the queued tasks, gathered once,
    /// answer for every idle core until a pull moves a task (and runs
    /// policy code): at 1,024 cores with a small SSC, a thousand idle cores
    /// each scanning a thousand queued tasks was a third of the run.
    fn balance_idle(&mut self) {
        if self.queued == 0 {
            return;
        }
        let mut reach: Vec<CoreRange> = Vec::new();
        let mut fresh = false;
        for core in 0..self.cores.len() as u32 {
            if self.cores[core as usize].running.is_some() {
                continue;
            }
            if !fresh {
                self.queued_ranges(&mut reach);
                fresh = true;
            }
            if !reach.iter().any(|r| r.contains(core)) {
                continue;
            }
            if self.pull(core) {
                fresh = false;
            }
            if self.queued == 0 {
                break;
            }
        }
    }

    /// The distinct allowed ranges of all queued tasks, into `out`.
    fn queued_ranges(&self, out: &mut Vec<CoreRange>) {
        out.clear();
        for c in &self.cores {
            for &q in &c.runq {
                let r = self.policy.allowed(q);
                if !out.contains(&r) {
                    out.push(r);
                }
            }
        }
    }

    /// The time slice of `t`, in cycles: the policy's, or the kernel's.
    #[inline]
    fn slice_of(&self, t: u32) -> f64 {
        match self.policy.slice_ns(t) {
            Some(ns) => ns as f64 / self.ns_per_cycle,
            None => self.slice_cycles,
        }
    }

    /// `t` starts running on idle `core` and resumes where it stopped.
    fn run_on(&mut self, core: u32, t: u32) {
        self.figures.context_switches += 1;
        let now = self.now;
        let c = &mut self.cores[core as usize];
        c.running = Some(t);
        c.preempt_pending = false;
        // Also covers the queue it may have just been taken from.
        self.sync_load(core);
        let slice = self.slice_of(t);
        self.arm_slice(core, now + slice);
        let ctx = self.cfg.sched.context_switch_cycles;
        let task = &mut self.tasks[t as usize];
        task.on_core = true;
        task.core = core;
        task.slice_start = now;
        task.slice_wait = 0.0;
        task.debt += ctx;
        let now_ns = self.ns(now);
        self.policy.on_slice_begin(now_ns, t);
        let task = &self.tasks[t as usize];
        match task.phase {
            Phase::Start => self.begin_step(t),
            Phase::Attempt => self.attempt(t),
            Phase::Work | Phase::Hold => self.resume_phase(core, t),
            Phase::Spin => {
                self.resume_spin(t);
                let task = &self.tasks[t as usize];
                let l = self.lock_of(t);
                if task.phase == Phase::Spin && self.locks[l].algo == LockAlgo::Adaptive {
                    let at = now + self.cfg.costs.adaptive_spin;
                    self.arm_task(t, at, TaskTimer::SpinTimeout);
                }
            }
            Phase::Granted => self.start_hold(t),
            Phase::Parked => unreachable!("a parked task is never queued"),
        }
    }

    /// `t`, just back on `core`, finishes its interrupted Work or Hold
    /// phase.
    fn resume_phase(&mut self, core: u32, t: u32) {
        let now = self.now;
        let hold = self.tasks[t as usize].phase == Phase::Hold;
        // Only a Hold phase has a lock; look it up before borrowing the task.
        let lock = hold.then(|| self.lock_of(t));
        let task = &mut self.tasks[t as usize];
        let len = task.remaining + std::mem::take(&mut task.debt);
        task.phase_end = now + len;
        let act = match lock {
            Some(l) => {
                // Its non-scalable handoff is now measured from here.
                let l = &self.locks[l];
                let handoff = self.cfg.costs.handoff(l.algo, 1 + l.spinners);
                task.hold_start = now;
                task.hold_base = (len - handoff).max(0.0);
                task.hold_handoff = handoff;
                Activity::Critical
            }
            None => Activity::Work,
        };
        self.set_act(core, act);
        self.arm_task(t, now + len, TaskTimer::PhaseEnd);
    }

    /// Whether `t` may be taken off its core now. Kernel spin locks disable
    /// preemption while spinning and while held; user-space locks do not.
    #[inline]
    fn preemptible(&self, t: u32) -> bool {
        match self.tasks[t as usize].phase {
            Phase::Start | Phase::Work | Phase::Attempt => true,
            Phase::Spin | Phase::Hold | Phase::Granted => !self.locks[self.lock_of(t)].kernel,
            Phase::Parked => false,
        }
    }

    /// The time slice on `core` ran out.
    pub(crate) fn slice_end(&mut self, core: u32) {
        let Some(t) = self.cores[core as usize].running else {
            return;
        };
        self.report_slice(t);
        let range = self.policy.allowed(t);
        let preemptible = self.preemptible(t);
        if preemptible && !range.contains(core) {
            let target = self.least_loaded(range, t);
            self.migrate(t, target);
            return;
        }
        let holding = matches!(self.tasks[t as usize].phase, Phase::Hold | Phase::Granted);
        let renewed = holding && self.policy.renew_quantum(t, 1);
        if !renewed && !self.cores[core as usize].runq.is_empty() {
            if preemptible {
                self.preempt_running(core);
                return;
            }
            self.cores[core as usize].preempt_pending = true;
        }
        let slice = self.slice_of(t);
        self.arm_slice(core, self.now + slice);
    }

    /// Round robin: the running task goes to the back of its run queue.
    pub(super) fn preempt_running(&mut self, core: u32) {
        let t = self.cores[core as usize]
            .running
            .expect("only a busy core is preempted");
        debug_assert!(!self.cores[core as usize].runq.is_empty());
        self.leave_core(t);
        self.cores[core as usize].runq.push_back(t);
        self.sync_load(core);
        self.queued += 1;
        self.switch_next(core);
    }
}
