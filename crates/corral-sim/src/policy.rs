//! What a scheduling policy sees and decides in the simulator. Policies get
//! the same observations the real runtime produces (slices with their lock
//! wait, lock attempts, task births) and answer with each task's allowed core
//! range, cores being numbered in topology order.

use crate::locks::LockAlgo;
use crate::topology::Machine;

/// A half-open range of cores `[lo, hi)` a task may run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreRange {
    /// First core of the range.
    pub lo: u32,
    /// One past the last core.
    pub hi: u32,
}

impl CoreRange {
    /// Whether `core` is in the range.
    #[inline]
    pub fn contains(self, core: u32) -> bool {
        core >= self.lo && core < self.hi
    }
}

/// Runnable tasks per core (running one included), filled on demand: the
/// engine builds it only when a policy actually needs it.
pub trait CoreLoads {
    /// Replaces `out`'s contents with one load per core, in core order.
    fn fill(&self, out: &mut Vec<u32>);
}

/// A scheduling policy driven by simulated events. Times are nanoseconds.
pub trait SimPolicy: Send {
    /// Called once before the run.
    fn start(&mut self, machine: &Machine, tasks: u32);
    /// The lock algorithm actually used for a lock declared as `algo`.
    fn lock_algo(&self, algo: LockAlgo, _kernel: bool) -> LockAlgo {
        algo
    }
    /// A slice of `task` ended after `run_ns` on `core`, `wait_ns` of which
    /// went to waiting for locks.
    fn on_slice(&mut self, _now_ns: u64, _task: u32, _core: u32, _run_ns: u64, _wait_ns: u64) {}
    /// A slice of `task` begins.
    fn on_slice_begin(&mut self, _now_ns: u64, _task: u32) {}
    /// `task`, running on `core`, is about to acquire a lock; a returned core
    /// is where it must move first (Algorithm 2 of paper 1).
    fn on_lock_attempt(
        &mut self,
        _now_ns: u64,
        _task: u32,
        _core: u32,
        _loads: &dyn CoreLoads,
    ) -> Option<u32> {
        None
    }
    /// `task` just acquired lock `lock` (an index into the workload's locks).
    fn on_lock_acquired(&mut self, _task: u32, _lock: u32) {}
    /// The quantum of `task` expired while it holds `locks_held` locks:
    /// true renews it instead of preempting (paper 5's CSF).
    fn renew_quantum(&mut self, _task: u32, _locks_held: u32) -> bool {
        false
    }
    /// `task` left its core (preempted, asleep or migrated).
    fn on_descheduled(&mut self, _task: u32) {}
    /// Called once per time slice (timers, growth on load).
    fn on_tick(&mut self, _now_ns: u64, _loads: &dyn CoreLoads) {}
    /// A short-lived task exited and `task` is its freshly forked successor.
    fn on_spawn(&mut self, _now_ns: u64, _task: u32) {}
    /// Cores `task` may run on now.
    fn allowed(&self, task: u32) -> CoreRange;
    /// The time slice `task` gets, if the policy sets one.
    fn slice_ns(&self, _task: u32) -> Option<u64> {
        None
    }
    /// Current SSC size, for policies that have one.
    fn ssc(&self) -> Option<u32> {
        None
    }
    /// Time-to-settle of the SSC search so far, in simulated nanoseconds,
    /// for policies that have an SSC (see `crate::lca::settle_time`).
    fn settle_ns(&self) -> Option<u64> {
        None
    }
}

/// Linux's default: every task may run on every core.
#[derive(Debug, Default)]
pub struct AllCores {
    cores: u32,
}

impl SimPolicy for AllCores {
    fn start(&mut self, machine: &Machine, _tasks: u32) {
        self.cores = machine.cores;
    }
    #[inline]
    fn allowed(&self, _task: u32) -> CoreRange {
        CoreRange {
            lo: 0,
            hi: self.cores,
        }
    }
}

/// `inner` with every spin lock (ticket or test-and-set, as the workload
/// declares them) replaced by `lock`: the machine's lock under a policy.
/// Over MCS it is paper 3's cure (Sec. 5); over qspinlock, today's kernels.
/// Generic rather than boxed so the per-event calls stay direct.
#[derive(Debug)]
pub struct OverLock<P> {
    inner: P,
    lock: LockAlgo,
}

impl<P: SimPolicy> OverLock<P> {
    /// `inner` run over `lock`.
    pub fn new(inner: P, lock: LockAlgo) -> Self {
        OverLock { inner, lock }
    }

    /// The policy underneath.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The policy underneath, taken out (to read its logs after a run).
    pub fn into_inner(self) -> P {
        self.inner
    }
}

impl<P: SimPolicy> SimPolicy for OverLock<P> {
    fn start(&mut self, machine: &Machine, tasks: u32) {
        self.inner.start(machine, tasks);
    }
    fn lock_algo(&self, algo: LockAlgo, kernel: bool) -> LockAlgo {
        match self.inner.lock_algo(algo, kernel) {
            a if a.is_non_scalable() => self.lock,
            a => a,
        }
    }
    #[inline]
    fn on_slice(&mut self, now_ns: u64, task: u32, core: u32, run_ns: u64, wait_ns: u64) {
        self.inner.on_slice(now_ns, task, core, run_ns, wait_ns);
    }
    #[inline]
    fn on_slice_begin(&mut self, now_ns: u64, task: u32) {
        self.inner.on_slice_begin(now_ns, task);
    }
    #[inline]
    fn on_lock_attempt(
        &mut self,
        now_ns: u64,
        task: u32,
        core: u32,
        loads: &dyn CoreLoads,
    ) -> Option<u32> {
        self.inner.on_lock_attempt(now_ns, task, core, loads)
    }
    #[inline]
    fn on_lock_acquired(&mut self, task: u32, lock: u32) {
        self.inner.on_lock_acquired(task, lock);
    }
    #[inline]
    fn renew_quantum(&mut self, task: u32, locks_held: u32) -> bool {
        self.inner.renew_quantum(task, locks_held)
    }
    #[inline]
    fn on_descheduled(&mut self, task: u32) {
        self.inner.on_descheduled(task);
    }
    #[inline]
    fn on_tick(&mut self, now_ns: u64, loads: &dyn CoreLoads) {
        self.inner.on_tick(now_ns, loads);
    }
    #[inline]
    fn on_spawn(&mut self, now_ns: u64, task: u32) {
        self.inner.on_spawn(now_ns, task);
    }
    #[inline]
    fn allowed(&self, task: u32) -> CoreRange {
        self.inner.allowed(task)
    }
    #[inline]
    fn slice_ns(&self, task: u32) -> Option<u64> {
        self.inner.slice_ns(task)
    }
    fn ssc(&self) -> Option<u32> {
        self.inner.ssc()
    }
    fn settle_ns(&self) -> Option<u64> {
        self.inner.settle_ns()
    }
}
