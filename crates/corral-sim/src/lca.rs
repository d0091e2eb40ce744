//! The lock-contention-aware policy: `corral-policy`'s SSC controller (paper
//! 1, Cui et al. TACO 2013, Algorithms 2-4 and Sec. 3.4-3.5) driven by the
//! simulator's slices, lock attempts and run-queue loads, exactly as the real
//! runtime drives it.

use crate::policy::{CoreLoads, CoreRange, SimPolicy};
use crate::topology::Machine;
use corral_policy::placement::{Placement, Topology};
use corral_policy::ssc::{
    program_key, Decision, DecisionKind, SliceObs, SscController, SscParams, ThreadPolicyState,
};

/// Every simulated task runs the same program: one classification key.
fn sim_program_key() -> u64 {
    program_key(b"corral-sim", b"task")
}

/// The `lca` family of simulator policies: one [`SscController`] whose
/// decisions confine SSC threads to the first `bound` cores of the topology
/// order and all others to the rest (separate balancing, paper 1 Sec. 3.4).
#[derive(Debug)]
pub struct Lca {
    params: SscParams,
    ctrl: Option<SscController>,
    threads: Vec<ThreadPolicyState>,
    cores: u32,
    loads: Vec<u32>,
    /// Last core each task ran on (placing a freshly forked task).
    core_of: Vec<u32>,
    /// Acquisitions since the last lock attempt: the engine's acquisition
    /// hook carries no time, so they are reported at the next attempt (as
    /// `window` allows), slice, tick or spawn.
    pending_progress: u64,
    /// Acquisitions reported at lock attempts inside the window but before
    /// its first close, not yet passed on, and the last such attempt's time.
    batched: (u64, u64),
    /// The controller's progress window as last read
    /// (`SscController::progress_window`): an attempt before its start drops
    /// the count (the controller would), one before its first close adds it
    /// to `batched` (no round can close then), one after reports. The
    /// same counts and round checks, so the same decisions, as reporting
    /// at every attempt, without the controller's atomic add and round
    /// check each time (5-6% of an lca point's run, profiled).
    window: (u64, u64),
    /// Whether progress has been reported yet (the controller's switch to
    /// measured progress); until then the window stays closed at 0.
    reported: bool,
    /// Keeps the window closed: every attempt with new acquisitions
    /// reports (the reference the batching is tested against).
    report_each_attempt: bool,
    /// Decisions that moved the bound or restarted the search, in order.
    pub decisions: Vec<Decision>,
    /// The bound the controller started with.
    initial_bound: u32,
}

/// Whether SSC size `bound` is within one doubling step of `target`:
/// `target / 2 <= bound <= 2 x target` (the search moves by doublings, so
/// a bound one step away is one move from `target`).
#[inline]
pub fn within_one_step(bound: u32, target: u32) -> bool {
    u64::from(bound) * 2 >= u64::from(target) && u64::from(bound) <= u64::from(target) * 2
}

/// Time-to-settle of an SSC search: the first time `t` (ns from the start
/// of the run) such that the SSC size at every time from `t` on is within
/// one doubling step of `last`, its size at the end of the run (see
/// [`within_one_step`]). The size is `initial` until the first of `moves`
/// (the decisions that moved the bound, in time order, as the controller
/// logged them) and each move's `bound_after` from its time on. So it is
/// the time of the last move that left a size outside that band, or 0 when
/// the size never was outside it. A search still moving at the end of the
/// run is measured against where it stands then: read it over a run long
/// enough to have settled.
///
/// A stay on every core that the search left again for the bound it came
/// from (a `Reference` or `DropConfined` move followed by `KeepConfined`
/// back) is a measurement, not a move: it is left out, and so is a
/// reference round the run ended in.
pub fn settle_time(initial: u32, moves: &[Decision], last: u32) -> u64 {
    // A run that ends during a reference round ends mid-measurement: the
    // search's answer is the bound the round left.
    let (moves, last) = match moves.split_last() {
        Some((end, rest)) if end.kind == DecisionKind::Reference => (rest, end.bound_before),
        _ => (moves, last),
    };
    let mut settle = 0;
    let mut bound = initial;
    let mut i = 0;
    while i < moves.len() {
        let d = &moves[i];
        if let Some(back) = excursion_end(moves, i) {
            i = back + 1;
            continue;
        }
        if !within_one_step(bound, last) {
            settle = d.at;
        }
        bound = d.bound_after;
        i += 1;
    }
    settle
}

/// Where a stay on every core that begins at `moves[i]` (a reference
/// round, or a drop, then drops that leave the bound) ends with the
/// search back on the bound it left; `None` if it does not.
fn excursion_end(moves: &[Decision], i: usize) -> Option<usize> {
    let from = moves[i].bound_before;
    if !matches!(
        moves[i].kind,
        DecisionKind::Reference | DecisionKind::DropConfined
    ) {
        return None;
    }
    let mut j = i + 1;
    while moves.get(j)?.kind == DecisionKind::DropConfined {
        j += 1;
    }
    let back = moves.get(j)?;
    (back.kind == DecisionKind::KeepConfined && back.bound_after == from).then_some(j)
}

impl Lca {
    /// corral's controller for kernel locks ([`SscParams::kernel`]), as the
    /// kernel-lock monitor runs it.
    pub fn improved(_cores: u32) -> Self {
        Self::with_params(SscParams::kernel())
    }

    /// The 2013 algorithm exactly, to show what the improvements buy.
    pub fn paper_2013(_cores: u32) -> Self {
        Self::with_params(SscParams::paper_2013())
    }

    /// The controller with `params`, for presets the named constructors do
    /// not cover (the sweep's `lca-grow` and `lca-nowarm` diagnostics).
    pub fn with_params(params: SscParams) -> Self {
        Lca {
            params,
            ctrl: None,
            threads: Vec::new(),
            cores: 0,
            loads: Vec::new(),
            core_of: Vec::new(),
            pending_progress: 0,
            batched: (0, 0),
            window: (0, 0),
            reported: false,
            report_each_attempt: false,
            decisions: Vec::new(),
            initial_bound: 1,
        }
    }

    /// The same policy reporting progress at every lock attempt that has
    /// new acquisitions, as the controller's own driver contract reads.
    #[cfg(test)]
    fn reporting_each_attempt(mut self) -> Self {
        self.report_each_attempt = true;
        self
    }

    /// Keeps decisions that moved the bound or restarted the search (a log
    /// for reports).
    fn record(&mut self, d: Option<Decision>) {
        let restart = |k: DecisionKind| {
            matches!(
                k,
                DecisionKind::RestartTimer
                    | DecisionKind::RestartThroughputJump
                    | DecisionKind::RestartWorkCores
                    // The end of a reference round that stays on every
                    // core: without it the round would read as unfinished.
                    | DecisionKind::DropConfined
            )
        };
        if let Some(d) = d.filter(|d| d.bound_before != d.bound_after || restart(d.kind)) {
            self.decisions.push(d);
        }
    }

    /// `kind:before->after@ms` for each bound move.
    pub fn log_summary(&self) -> Vec<String> {
        self.decisions
            .iter()
            .map(|d| {
                format!(
                    "{:?}:{}->{}@{}",
                    d.kind,
                    d.bound_before,
                    d.bound_after,
                    d.at / 1_000_000
                )
            })
            .collect()
    }

    /// Where task `task` belongs now (the policy's rule; see `allowed`).
    pub fn placement(&self, task: u32) -> Placement {
        self.ctrl().placement(&self.threads[task as usize])
    }

    /// The SSC controller (after `start`).
    pub fn controller(&self) -> Option<&SscController> {
        self.ctrl.as_ref()
    }

    #[inline]
    fn ctrl(&self) -> &SscController {
        self.ctrl.as_ref().expect("start() runs before any event")
    }

    /// Algorithm 2 for a task that has somewhere to go: the SSC's loads,
    /// then the controller's choice (apart from the per-attempt check, so
    /// that check inlines into the engine).
    #[cold]
    fn place_at_attempt(
        &mut self,
        now_ns: u64,
        task: u32,
        core: u32,
        loads: &dyn CoreLoads,
    ) -> Option<u32> {
        loads.fill(&mut self.loads);
        let ctrl = self.ctrl.as_ref().expect("started");
        ctrl.on_lock_attempt(&mut self.threads[task as usize], core, &self.loads, now_ns)
    }

    /// Reports what was batched (at its own time) and what came since the
    /// last attempt (now, where a round may close).
    #[inline(never)]
    fn flush_progress(&mut self, now_ns: u64) {
        let (count, at) = std::mem::take(&mut self.batched);
        if count > 0 {
            // Counted as at the attempt that batched it last, before the
            // window's first close: nothing to decide.
            let d = self.ctrl().observe_progress(count, at);
            self.record(d);
        }
        if self.pending_progress > 0 {
            // A round closed by time (`SscParams::progress_round`) is
            // decided here: log it like the others.
            let d = self.ctrl().observe_progress(self.pending_progress, now_ns);
            self.pending_progress = 0;
            self.record(d);
            self.reported = true;
            self.read_window();
        }
    }

    /// Re-reads the progress window after a call that may have decided.
    /// Until the first report the window stays closed at 0, so the first
    /// acquisitions are reported at once (the first report switches the
    /// search to measured progress).
    #[inline]
    fn read_window(&mut self) {
        if self.reported && self.params.use_progress && !self.report_each_attempt {
            self.window = self.ctrl().progress_window();
        }
    }

    /// A lock attempt's share of reporting (see `window`).
    #[inline]
    fn progress_at_attempt(&mut self, now_ns: u64) {
        let (start, close) = self.window;
        if now_ns < start {
            // The controller would not count them.
            self.pending_progress = 0;
        } else if now_ns < close {
            let count = std::mem::take(&mut self.pending_progress);
            self.batched = (self.batched.0 + count, now_ns);
        } else if self.pending_progress > 0 {
            // As reporting at every attempt: a round is checked only where
            // there is something new to report.
            self.flush_progress(now_ns);
        }
    }
}

impl SimPolicy for Lca {
    fn start(&mut self, machine: &Machine, tasks: u32) {
        let topology =
            Topology::uniform(machine.cores, machine.cores_per_llc, machine.llcs_per_node);
        let order = topology.ssc_order();
        // The engine numbers cores in topology order, so the SSC is always
        // the prefix `0..bound` (see `allowed`).
        debug_assert!(order.iter().enumerate().all(|(i, &c)| c == i as u32));
        let ctrl = SscController::new(self.params, order, 0);
        self.initial_bound = ctrl.bound();
        self.decisions.clear();
        self.threads = (0..tasks)
            .map(|_| ctrl.register_thread(sim_program_key(), 0))
            .collect();
        self.ctrl = Some(ctrl);
        self.cores = machine.cores;
        self.core_of = vec![0; tasks as usize];
        self.pending_progress = 0;
        self.batched = (0, 0);
        self.reported = false;
        // Without measured progress nothing is decided by a report: sum
        // until the next slice, tick or spawn.
        self.window = if self.params.use_progress {
            (0, 0)
        } else {
            (0, u64::MAX)
        };
    }

    fn on_slice(&mut self, now_ns: u64, task: u32, core: u32, run_ns: u64, wait_ns: u64) {
        self.flush_progress(now_ns);
        self.core_of[task as usize] = core;
        let ctrl = self.ctrl.as_ref().expect("started");
        let obs = SliceObs {
            core,
            slice_len: run_ns,
            lock_wait: wait_ns,
            waits: 0,
            attempts: 0,
            yields: 0,
            wall_len: 0,
            realtime: false,
        };
        // The action is read back through `allowed` (migrate-back) and
        // `on_lock_attempt` (qualified threads move there).
        let d = ctrl.on_slice_end(&mut self.threads[task as usize], obs, now_ns);
        self.record(d.decision);
        self.read_window();
    }

    #[inline]
    fn on_slice_begin(&mut self, now_ns: u64, task: u32) {
        let ctrl = self.ctrl.as_ref().expect("started");
        ctrl.begin_slice(&mut self.threads[task as usize], now_ns);
    }

    #[inline]
    fn on_lock_attempt(
        &mut self,
        now_ns: u64,
        task: u32,
        core: u32,
        loads: &dyn CoreLoads,
    ) -> Option<u32> {
        self.progress_at_attempt(now_ns);
        self.core_of[task as usize] = core;
        // The controller's own fast path, checked before building the loads.
        if !self.ctrl().will_place(&self.threads[task as usize]) {
            return None;
        }
        self.place_at_attempt(now_ns, task, core, loads)
    }

    /// Useful work for the search (paper 1, footnote 1: K(n)/K(1)): every
    /// simulated task runs the same operation, so acquisitions are
    /// proportional to useful work. Every task's count, as the runtime
    /// counts every thread's attempts: counting only SSC tasks, a round
    /// while threads were still qualifying (the baseline on every core, at
    /// the start or after a restart) saw part of the program, read low,
    /// and sent the search to a confined bound below every core.
    #[inline]
    fn on_lock_acquired(&mut self, _task: u32, _lock: u32) {
        self.pending_progress += 1;
    }

    /// A forked task of a program remembered as lock intensive starts on the
    /// SSC (fork places it on the least-loaded allowed core), so it neither
    /// detours through the general cores nor dips the lock-intensive count.
    /// Its slot's slice goes on: the slice began under the predecessor,
    /// on the same core, in the same program.
    fn on_spawn(&mut self, now_ns: u64, task: u32) {
        self.flush_progress(now_ns);
        let ctrl = self.ctrl.as_ref().expect("started");
        let old = self.threads[task as usize];
        ctrl.unregister_thread(&old);
        let mut new = ctrl.register_thread(sim_program_key(), now_ns);
        new.slice_begin = old.slice_begin;
        new.record_bound = old.record_bound;
        // A remembered program's task is admitted at once. No loads: the
        // engine's fork picks the least-loaded SSC core through `allowed`;
        // this only counts and marks the task.
        let _ = ctrl.on_lock_attempt(&mut new, self.core_of[task as usize], &[], now_ns);
        self.threads[task as usize] = new;
    }

    fn on_tick(&mut self, now_ns: u64, loads: &dyn CoreLoads) {
        self.flush_progress(now_ns);
        let ctrl = self.ctrl.as_ref().expect("started");
        let mut d = ctrl.tick(now_ns);
        if self.params.grow_runnable_per_core > 0.0 {
            loads.fill(&mut self.loads);
            d = d.or(ctrl.on_ssc_load(&self.loads, now_ns));
        }
        self.record(d);
        self.read_window();
    }

    /// The policy's placement rule over the engine's cores, which are
    /// numbered in topology order (positions are core ids).
    #[inline]
    fn allowed(&self, task: u32) -> CoreRange {
        let ctrl = self.ctrl();
        let span = ctrl
            .placement(&self.threads[task as usize])
            .span(ctrl.bound(), self.cores as usize);
        CoreRange {
            lo: span.start as u32,
            hi: span.end as u32,
        }
    }

    fn ssc(&self) -> Option<u32> {
        self.ctrl.as_ref().map(|c| c.bound())
    }

    fn settle_ns(&self) -> Option<u64> {
        let last = self.ctrl.as_ref()?.bound();
        Some(settle_time(self.initial_bound, &self.decisions, last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_policy::ssc::DecisionKind;

    fn mv(at: u64, before: u32, after: u32) -> Decision {
        Decision {
            at,
            kind: DecisionKind::Double,
            bound_before: before,
            bound_after: after,
            throughput: 0.0,
            p: 0.0,
            lock_intensive: 64,
            climbing: 1,
        }
    }

    /// Progress summed inside the window and reported once makes the same
    /// decisions, at the same times, as a report at every attempt: the
    /// whole run (operations, events, the decision log) is identical.
    #[test]
    fn batched_progress_decides_as_reporting_each_attempt() {
        use crate::presets::preset;
        use crate::{simulate, SimConfig};
        for (workload, cores) in [("mempop", 48), ("pfind", 24), ("single-counter", 16)] {
            let w = preset(workload).unwrap();
            let cfg = SimConfig::new(cores, 0.06, 1);
            let mut batched = Lca::improved(cores);
            let mut each = Lca::improved(cores).reporting_each_attempt();
            let a = simulate(&cfg, &w, &mut batched).unwrap();
            let b = simulate(&cfg, &w, &mut each).unwrap();
            assert!(batched.decisions.len() > 2, "{workload}: the search moved");
            assert_eq!(batched.decisions, each.decisions, "{workload}");
            assert_eq!((a.ops, a.events), (b.ops, b.events), "{workload}");
        }
    }

    #[test]
    fn one_step_is_a_factor_of_two_either_way() {
        assert!(within_one_step(8, 16) && within_one_step(32, 16));
        assert!(within_one_step(16, 16) && within_one_step(5, 10));
        assert!(!within_one_step(7, 16) && !within_one_step(33, 16));
        assert!(within_one_step(1, 1) && within_one_step(2, 1) && !within_one_step(3, 1));
    }

    #[test]
    fn settle_is_the_last_move_from_outside_the_band() {
        // 1 -> 2 -> 4 -> 8 -> 16 -> back to 8: final 8, band [4, 16]; the
        // size was last outside it (2) until the move to 4 at 20.
        let moves = [
            mv(10, 1, 2),
            mv(20, 2, 4),
            mv(30, 4, 8),
            mv(40, 8, 16),
            mv(50, 16, 8),
        ];
        assert_eq!(settle_time(1, &moves, 8), 20);
        // A restart to 1 and a climb back: outside until the move to 4.
        let mut again = moves.to_vec();
        again.extend([mv(60, 8, 1), mv(70, 1, 2), mv(80, 2, 4), mv(90, 4, 8)]);
        assert_eq!(settle_time(1, &again, 8), 80);
        // Never outside: settled from the start.
        assert_eq!(settle_time(1, &[mv(5, 1, 2)], 2), 0);
        assert_eq!(settle_time(1, &[], 1), 0);
    }

    #[test]
    fn a_reference_round_and_its_return_are_no_move() {
        let of = |kind, at, before, after| Decision {
            kind,
            ..mv(at, before, after)
        };
        // Settled on 4 of 64 at 20; references at 60 and 120 go back to 4.
        let moves = [
            mv(10, 64, 1),
            mv(20, 1, 4),
            of(DecisionKind::Reference, 60, 4, 64),
            of(DecisionKind::KeepConfined, 62, 64, 4),
            of(DecisionKind::Reference, 80, 4, 64),
            of(DecisionKind::DropConfined, 82, 64, 64),
            of(DecisionKind::KeepConfined, 95, 64, 4),
            of(DecisionKind::Reference, 120, 4, 64),
        ];
        // The run ended in the last reference round: its answer is 4.
        assert_eq!(settle_time(64, &moves, 64), 20);
        assert_eq!(settle_time(64, &moves[..7], 4), 20);
        // A reference that left for every core for good is a move.
        let dropped = [moves[0], moves[1], moves[2]];
        assert_eq!(settle_time(64, &dropped, 64), 20);
        let kept_away = [
            moves[0],
            moves[1],
            of(DecisionKind::DropConfined, 90, 4, 64),
        ];
        assert_eq!(settle_time(64, &kept_away, 64), 90);
    }
}
