//! What a scheduling policy sees and decides in the simulator. Policies get
//! the same observations the real runtime produces (slices with their lock
//! wait, lock attempts, task births) and answer with each task's allowed core
//! range, cores being numbered in topology order.

use crate::locks::LockAlgo;

/// A half-open range of cores `[lo, hi)` a task may run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreRange {
    pub lo: u32,
    pub hi: u32,
}

impl CoreRange {
    #[inline]
    pub fn contains(self, core: u32) -> bool {
        core >= self.lo && core < self.hi
    }
}

/// A scheduling policy driven by simulated events. Times are nanoseconds.
pub trait SimPolicy: Send {
    /// Called once before the run.
    fn start(&mut self, cores: u32, tasks: u32);
    /// The lock algorithm actually used for a lock declared as `algo`.
    fn lock_algo(&self, algo: LockAlgo, _kernel: bool) -> LockAlgo {
        algo
    }
    /// A slice of `task` ended after `run_ns` on a core, `wait_ns` of which
    /// went to waiting for locks.
    fn on_slice(&mut self, _now_ns: u64, _task: u32, _run_ns: u64, _wait_ns: u64) {}
    /// `task` is about to acquire a lock (Algorithm 2 migrates here).
    fn on_lock_attempt(&mut self, _now_ns: u64, _task: u32) {}
    /// Called once per time slice (timers such as the re-search timeout).
    fn on_tick(&mut self, _now_ns: u64) {}
    /// A short-lived task exited and `task` is its freshly forked successor.
    fn on_spawn(&mut self, _now_ns: u64, _task: u32) {}
    /// Cores `task` may run on now.
    fn allowed(&self, task: u32) -> CoreRange;
    /// Current SSC size, for policies that have one.
    fn ssc(&self) -> Option<u32> {
        None
    }
}

/// Linux's default: every task may run on every core.
#[derive(Debug, Default)]
pub struct AllCores {
    cores: u32,
}

impl SimPolicy for AllCores {
    fn start(&mut self, cores: u32, _tasks: u32) {
        self.cores = cores;
    }
    #[inline]
    fn allowed(&self, _task: u32) -> CoreRange {
        CoreRange {
            lo: 0,
            hi: self.cores,
        }
    }
}

/// The default scheduler with every ticket (and test-and-set) lock replaced by
/// MCS, paper 3's cure (Sec. 5).
#[derive(Debug, Default)]
pub struct McsInstead {
    inner: AllCores,
}

impl SimPolicy for McsInstead {
    fn start(&mut self, cores: u32, tasks: u32) {
        self.inner.start(cores, tasks);
    }
    fn lock_algo(&self, algo: LockAlgo, _kernel: bool) -> LockAlgo {
        if algo.is_non_scalable() {
            LockAlgo::Mcs
        } else {
            algo
        }
    }
    #[inline]
    fn allowed(&self, task: u32) -> CoreRange {
        self.inner.allowed(task)
    }
}
