//! Tasks stepping through their operation: work, then the step's lock; the
//! operation's end, and short-lived tasks exiting and being forked anew.

use super::{Activity, Phase, State, Task, TaskTimer};
use crate::policy::SimPolicy;

impl<P: SimPolicy + ?Sized> State<'_, P> {
    /// Creates the tasks and places them round-robin (fork balancing),
    /// restricted to what the policy allows from the outset.
    pub(crate) fn spawn_all(&mut self) {
        let cores = self.cores.len() as u32;
        for t in 0..self.n_tasks {
            self.tasks.push(Task {
                core: t % cores,
                on_core: false,
                phase: Phase::Start,
                program: 0,
                group: t % self.groups,
                step: 0,
                // Program 0 of the task's planted group (see `program_of`).
                cur: self.programs[(t % self.groups) as usize][0],
                reps_left: self.programs[0][0].repeat,
                remaining: 0.0,
                phase_end: 0.0,
                hold_start: 0.0,
                hold_base: 0.0,
                hold_handoff: 0.0,
                timer: TaskTimer::PhaseEnd,
                // Staggered arrival: start-up work before the first lock.
                debt: self.arrival_cycles * f64::from(t) / f64::from(self.n_tasks),
                wait_since: 0.0,
                spin_since: 0.0,
                slice_start: 0.0,
                slice_wait: 0.0,
                ops_in_life: 0,
            });
        }
        for t in 0..self.n_tasks {
            let range = self.policy.allowed(t);
            let core = if range.contains(t % cores) {
                t % cores
            } else {
                self.least_loaded(range, t)
            };
            self.enqueue(t, core);
        }
    }

    /// The current Work or Hold phase of `t` has run out.
    pub(crate) fn phase_end(&mut self, t: u32) {
        match self.tasks[t as usize].phase {
            Phase::Work => {
                if self.step_of(t).lock.is_none() {
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
    pub(super) fn begin_step(&mut self, t: u32) {
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
        self.set_act(core, Activity::Work);
        self.arm_task(t, self.now + len, TaskTimer::PhaseEnd);
    }

    /// One repetition of the current step is done: move on.
    fn finish_step(&mut self, t: u32) {
        let n_steps = self.programs[self.program_of(t)].len() as u32;
        let task = &mut self.tasks[t as usize];
        task.reps_left -= 1;
        if task.reps_left == 0 {
            task.step += 1;
            if task.step == n_steps {
                task.step = 0;
                task.program = self.current_program;
                task.ops_in_life += 1;
                self.figures.ops += 1;
            }
            let cur = self.programs[self.program_of(t)][self.tasks[t as usize].step as usize];
            let task = &mut self.tasks[t as usize];
            task.cur = cur;
            task.reps_left = cur.repeat;
        }
        self.tasks[t as usize].phase = Phase::Start;
        let ops_in_life = self.tasks[t as usize].ops_in_life;
        if self.ops_per_task.is_some_and(|limit| ops_in_life >= limit) {
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
}
