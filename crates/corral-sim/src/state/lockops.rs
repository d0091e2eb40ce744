//! Lock acquisition, handoff and release under paper 3's cost model
//! (Sec. 3.2, eq. 1).
//!
//! A non-scalable lock's service time with `k` cores holding or spinning is
//! `s + k c`. With exponential times the hold phase is one exponential with
//! that mean, redrawn whenever `k` changes: by memorylessness this is exactly
//! eq. 1's Markov chain, so the simulation and the model must agree within
//! sampling error. With fixed times the phase lasts `s + k c` for the `k` at
//! release. Queue locks hand off in constant time; qspinlock is charged like
//! the non-scalable locks, its cost capped from the third contender on.

use super::{Activity, LoadView, Phase, State, TaskTimer};
use crate::locks::LockAlgo;
use crate::policy::SimPolicy;

impl<P: SimPolicy + ?Sized> State<'_, P> {
    /// Running task `t` tries the lock of its current step.
    pub(super) fn attempt(&mut self, t: u32) {
        let now_ns = self.ns(self.now);
        let core = self.tasks[t as usize].core;
        let view = LoadView(&self.loads);
        let mut target = self.policy.on_lock_attempt(now_ns, t, core, &view);
        if target.is_none() {
            let range = self.policy.allowed(t);
            if !range.contains(core) {
                target = Some(self.least_loaded(range, t));
            }
        }
        if let Some(target) = target.filter(|&c| c != core && (c as usize) < self.cores.len()) {
            // Algorithm 2: migrate at the lock attempt, then try there.
            self.tasks[t as usize].phase = Phase::Attempt;
            self.migrate(t, target);
            return;
        }
        if self.tasks[t as usize].debt > 0.0 {
            self.pay_debt(t);
            return;
        }
        let l = self.lock_of(t);
        self.tasks[t as usize].wait_since = self.now;
        if self.locks[l].holder.is_none() {
            self.locks[l].holder = Some(t);
            self.start_hold(t);
            return;
        }
        self.locks[l].waiters.push_back(t);
        if self.locks[l].algo == LockAlgo::Mutex {
            self.park(t);
            return;
        }
        self.begin_spin(t, l);
        if self.locks[l].algo == LockAlgo::Adaptive {
            let at = self.now + self.cfg.costs.adaptive_spin;
            self.arm_task(t, at, TaskTimer::SpinTimeout);
        }
    }

    /// A move or context switch since `t`'s last timed phase is paid before
    /// it tries the lock, as non-critical time whose end retries: the
    /// scheduler moves a task, then it runs and tries. Charged inside the
    /// critical section instead, each move at a lock attempt (Algorithm 2)
    /// held the lock for tens of microseconds.
    #[cold]
    fn pay_debt(&mut self, t: u32) {
        let task = &mut self.tasks[t as usize];
        let len = std::mem::take(&mut task.debt);
        task.phase = Phase::Work;
        task.phase_end = self.now + len;
        let core = task.core;
        self.set_act(core, Activity::Work);
        self.arm_task(t, self.now + len, TaskTimer::PhaseEnd);
    }

    /// `t` (on a core, in the lock's waiter list) starts or resumes spinning.
    #[inline]
    fn begin_spin(&mut self, t: u32, l: usize) {
        let task = &mut self.tasks[t as usize];
        task.phase = Phase::Spin;
        task.spin_since = self.now;
        let core = task.core;
        self.set_act(core, Activity::Spin);
        self.locks[l].spinners += 1;
        self.contenders_changed(l);
    }

    /// `t` stops spinning on a core (granted, preempted, parked, moved).
    #[inline]
    pub(super) fn end_spin(&mut self, t: u32, l: usize) {
        let task = &mut self.tasks[t as usize];
        task.slice_wait += self.now - task.spin_since;
        self.locks[l].spinners -= 1;
        self.contenders_changed(l);
    }

    /// Running task `t` owns its step's lock: run the critical section.
    pub(super) fn start_hold(&mut self, t: u32) {
        let step = self.step_of(t);
        let l = self.lock_of(t);
        let core = self.tasks[t as usize].core;
        self.policy.on_lock_acquired(t, l as u32);
        let wait_from = self.tasks[t as usize]
            .wait_since
            .max(self.figures.measure_start);
        self.figures.wait_total += (self.now - wait_from).max(0.0);
        let lock = &mut self.locks[l];
        // The protected data follows the lock from the core of its last
        // release.
        let (moved, data) = match lock.last_core {
            Some(last) if last != core => (true, lock.data_miss[self.dist.distance(last, core)]),
            _ => (false, 0.0),
        };
        let algo = lock.algo;
        let k = 1 + lock.spinners;
        let fresh = lock.last_core.is_none();
        let debt = std::mem::take(&mut self.tasks[t as usize].debt);
        let len = if algo.handoff_varies() {
            let base = step.cs + data + debt;
            let handoff = if k == 1 && !moved && !fresh {
                self.cfg.costs.local_reacquire
            } else {
                self.cfg.costs.handoff(algo, k)
            };
            let len = if self.exponential {
                self.rng.exp(base + handoff)
            } else {
                base + handoff
            };
            let task = &mut self.tasks[t as usize];
            task.hold_start = self.now;
            task.hold_base = base;
            task.hold_handoff = handoff;
            len
        } else {
            self.draw(step.cs) + data + debt + self.cfg.costs.handoff(algo, k)
        };
        let task = &mut self.tasks[t as usize];
        task.phase = Phase::Hold;
        task.phase_end = self.now + len;
        self.set_act(core, Activity::Critical);
        self.arm_task(t, self.now + len, TaskTimer::PhaseEnd);
    }

    /// The number of spinners of lock `l` changed: a running holder of a lock
    /// whose handoff depends on them gets a new release time.
    #[inline]
    fn contenders_changed(&mut self, l: usize) {
        let lock = &self.locks[l];
        if !lock.algo.handoff_varies() {
            return;
        }
        let Some(h) = lock.holder else {
            return;
        };
        let task = &self.tasks[h as usize];
        if !task.on_core || task.phase != Phase::Hold {
            return;
        }
        let handoff = self.cfg.costs.handoff(lock.algo, 1 + lock.spinners);
        // An equal handoff leaves the release where it is: at the same time
        // with fixed times, and with exponential ones a redraw at the same
        // mean is the same distribution (memoryless), so none is made
        // (qspinlock's cost is flat from its second contender on).
        if handoff == task.hold_handoff {
            return;
        }
        let end = if self.exponential {
            self.now + self.rng.exp(task.hold_base + handoff)
        } else {
            (task.hold_start + task.hold_base + handoff).max(self.now)
        };
        let task = &mut self.tasks[h as usize];
        task.phase_end = end;
        task.hold_handoff = handoff;
        self.arm_task(h, end, TaskTimer::PhaseEnd);
    }

    /// Running task `t` leaves its critical section: hand the lock on.
    pub(super) fn release(&mut self, t: u32) {
        let l = self.lock_of(t);
        let core = self.tasks[t as usize].core;
        let lock = &mut self.locks[l];
        lock.last_core = Some(core);
        lock.holder = None;
        let next = match lock.algo {
            LockAlgo::Tas => {
                // Any spinning waiter may win; preempted ones are not trying.
                let spinning: Vec<usize> = (0..lock.waiters.len())
                    .filter(|&i| {
                        let w = &self.tasks[lock.waiters[i] as usize];
                        w.on_core && w.phase == Phase::Spin
                    })
                    .collect();
                if spinning.is_empty() {
                    None
                } else {
                    let pick = spinning[self.rng.below(spinning.len() as u32) as usize];
                    lock.waiters.remove(pick)
                }
            }
            _ => lock.waiters.pop_front(),
        };
        if let Some(w) = next {
            self.grant(w, l);
        }
    }

    /// Lock `l` passes to waiter `w`.
    fn grant(&mut self, w: u32, l: usize) {
        self.locks[l].holder = Some(w);
        let task = &self.tasks[w as usize];
        match (task.phase, task.on_core) {
            (Phase::Spin, true) => {
                self.end_spin(w, l);
                self.start_hold(w);
            }
            (Phase::Parked, _) => {
                // Wake-up latency with the lock already assigned: the convoy.
                self.tasks[w as usize].phase = Phase::Granted;
                let at = self.now + self.cfg.costs.wakeup;
                self.arm_task(w, at, TaskTimer::Wake);
            }
            _ => {
                // A preempted spinner: the lock waits until it runs again.
                self.tasks[w as usize].phase = Phase::Granted;
            }
        }
    }

    /// A preempted spinner runs again.
    pub(super) fn resume_spin(&mut self, t: u32) {
        let l = self.lock_of(t);
        if self.locks[l].algo == LockAlgo::Tas && self.locks[l].holder.is_none() {
            let lock = &mut self.locks[l];
            if let Some(i) = lock.waiters.iter().position(|&w| w == t) {
                lock.waiters.remove(i);
            }
            lock.holder = Some(t);
            self.start_hold(t);
        } else {
            self.begin_spin(t, l);
        }
    }

    /// Running task `t` goes to sleep on its lock.
    fn park(&mut self, t: u32) {
        self.tasks[t as usize].phase = Phase::Parked;
        let core = self.tasks[t as usize].core;
        self.leave_core(t);
        self.switch_next(core);
    }

    /// The adaptive lock's spinning budget ran out: sleep.
    pub(crate) fn spin_timeout(&mut self, t: u32) {
        let task = &self.tasks[t as usize];
        if task.phase != Phase::Spin || !task.on_core {
            return;
        }
        let l = self.lock_of(t);
        self.end_spin(t, l);
        self.park(t);
    }

    /// A woken task (already granted the lock) becomes runnable.
    pub(crate) fn wake(&mut self, t: u32) {
        let range = self.policy.allowed(t);
        let last = self.tasks[t as usize].core;
        let core = if range.contains(last) && self.cores[last as usize].running.is_none() {
            last
        } else {
            self.least_loaded(range, t)
        };
        if core != last {
            self.tasks[t as usize].debt += self.dist.migration_cycles(last, core);
            self.figures.migrations += 1;
        }
        self.enqueue(t, core);
    }
}
