//! One program under FF: each period its profile (lock contention from
//! corral's stats regions, the miss ratio from per-thread counters where a
//! PMU exists), the controller's decision, the quantum applied to every
//! thread and read back, and the period's context switches.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use corral_locks::sys::perf::{CacheEvent, Counter};
use corral_locks::sys::sched::{SCHED_BATCH, SCHED_OTHER, SLICE_MAX_NS, SLICE_MIN_NS};
use corral_policy::faithful::{
    self, FaithfulController, FfParams, FfSlice, Profile, WakeupPreemption,
};

use super::apply::{self, Applied, ApplyError, SliceSupport};
use super::procfs::{tree_tasks, CtxSwitches, Task};
use super::report::{FfPeriod, FfProgramReport, MissSource};
use crate::stats::StatsMap;

/// A thread's two cache counters and their last readings.
#[derive(Debug)]
struct CacheCounters {
    refs: Counter,
    misses: Counter,
    last: (u64, u64),
}

/// FF's state for one program (a root process and its descendants).
#[derive(Debug)]
pub struct FfProgram {
    root: i32,
    nice: i32,
    /// The fair class every thread is put in (SCHED_BATCH: no wake-up
    /// preemption).
    policy: u32,
    /// Threads already in SCHED_BATCH at FF's first period: the program's
    /// choice, left alone (`None` before that period).
    own_batch: Option<HashSet<i32>>,
    ctrl: FaithfulController,
    slice: SliceSupport,
    miss: MissSource,
    stats: HashMap<i32, StatsMap>,
    last_wait: HashMap<i32, u64>,
    last_ctx: HashMap<i32, CtxSwitches>,
    counters: HashMap<i32, CacheCounters>,
    periods: Vec<FfPeriod>,
    /// The kernel's default slice, as read back after asking for it.
    default_slice_ns: Option<u64>,
}

/// One period's count over the threads.
#[derive(Debug, Default)]
struct Tally {
    applied: u32,
    at_slice: u32,
    not_fair: u32,
    /// Threads that exited between the listing and FF's look.
    gone: u32,
    slice_ns: Option<u64>,
    ctx: CtxSwitches,
}

impl FfProgram {
    /// FF for the program rooted at `root`; every thread will get `root`'s
    /// nice value as it is now. Probes the PMU once.
    pub fn new(root: i32, params: FfParams) -> Self {
        let nice = corral_locks::sys::sched::nice_of(root).unwrap_or(0);
        let miss = match Counter::open(root, CacheEvent::References) {
            Ok(_) => MissSource::Measured,
            Err(errno) => MissSource::Unavailable { errno },
        };
        let policy = match params.wakeup_preemption {
            WakeupPreemption::Off => SCHED_BATCH,
            WakeupPreemption::On => SCHED_OTHER,
        };
        FfProgram {
            root,
            nice,
            policy,
            own_batch: None,
            ctrl: FaithfulController::new(params),
            slice: SliceSupport::Untried,
            miss,
            stats: HashMap::new(),
            last_wait: HashMap::new(),
            last_ctx: HashMap::new(),
            counters: HashMap::new(),
            periods: Vec::new(),
            default_slice_ns: None,
        }
    }

    /// How the kernel met the slice so far.
    pub fn slice_support(&self) -> SliceSupport {
        self.slice
    }

    /// Whether the miss ratio is measured.
    pub fn miss_source(&self) -> MissSource {
        self.miss
    }

    /// One monitoring period of `period_ns` ending at `t_ms`: measures the
    /// profile, then [`FfProgram::period_with`] it. `None`, with nothing
    /// observed, once the program has no thread left (an exited program
    /// is no evidence of a phase change).
    pub fn period(&mut self, t_ms: f64, period_ns: u64) -> Option<&FfPeriod> {
        let tasks = tree_tasks(self.root);
        if tasks.is_empty() {
            return None;
        }
        let wait = self.lock_wait(&tasks);
        let thread_ns = period_ns.saturating_mul(tasks.len() as u64);
        let profile = Profile {
            miss_ratio: self.miss_ratio(&tasks),
            lock_contention: faithful::lock_contention(wait, thread_ns),
        };
        Some(self.period_with(t_ms, &tasks, profile))
    }

    /// A period with a given profile (measured, or synthetic in tests):
    /// the decision, applied to every thread of `tasks` that does not hold
    /// it yet, read back, and recorded with the period's context switches.
    pub fn period_with(&mut self, t_ms: f64, tasks: &[Task], profile: Profile) -> &FfPeriod {
        let d = self.ctrl.observe_profile(&profile);
        let want_ns = d.slice.runtime_ns();
        // The slice a thread holding the decision reads back: the kernel's
        // default is learnt from the first thread reset to it.
        let expect = match d.slice {
            FfSlice::Default => self.default_slice_ns,
            FfSlice::Ms { .. } => Some(want_ns.clamp(SLICE_MIN_NS, SLICE_MAX_NS)),
        };
        // The first period notes the threads already in SCHED_BATCH as it
        // reads each one (`hold`).
        let first = self.own_batch.is_none();
        if first {
            self.own_batch = Some(HashSet::new());
        }
        let mut tally = Tally::default();
        for &task in tasks {
            let now = self.hold(task.tid, want_ns, expect, first, &mut tally);
            match now {
                Ok(a) => {
                    tally.slice_ns = Some(tally.slice_ns.map_or(a.slice_ns, |s| s.max(a.slice_ns)));
                    let at = match d.slice {
                        FfSlice::Default => self.default_slice_ns == Some(a.slice_ns),
                        FfSlice::Ms { .. } => Some(a.slice_ns) == expect,
                    };
                    tally.at_slice += u32::from(at);
                }
                Err(ApplyError::NotFair { .. }) => tally.not_fair += 1,
                Err(ApplyError::Gone) => tally.gone += 1,
                Err(ApplyError::Refused(_)) => {}
            }
            if let Some(c) = CtxSwitches::of(task) {
                let before = self.last_ctx.insert(task.tid, c).unwrap_or_default();
                tally.ctx = tally.ctx.plus(c.since(before));
            }
        }
        let live: HashSet<i32> = tasks.iter().map(|t| t.tid).collect();
        self.last_ctx.retain(|tid, _| live.contains(tid));
        self.periods.push(FfPeriod {
            t_ms,
            threads: tasks.len() as u32 - tally.gone,
            lock_contention: profile.lock_contention,
            miss_ratio: profile.miss_ratio,
            observed_factor: faithful::scaling_factor(
                profile.miss_ratio.unwrap_or(0.0),
                profile.lock_contention,
            ),
            scaling_factor: d.scaling_factor,
            quantum_ms: d.quantum_ms,
            slice: d.slice,
            changed: d.changed,
            applied: tally.applied,
            slice_ns: tally.slice_ns,
            threads_at_slice: tally.at_slice,
            threads_not_fair: tally.not_fair,
            voluntary: tally.ctx.voluntary,
            involuntary: tally.ctx.involuntary,
        });
        self.periods.last().expect("just pushed")
    }

    /// Makes thread `tid` hold the program's class, nice value and a slice
    /// of `want_ns` (0: the kernel's default), written only where it does
    /// not hold them (`expect`: the slice it should read back, if known).
    /// In FF's `first` period a thread found in SCHED_BATCH is the
    /// program's own.
    fn hold(
        &mut self,
        tid: i32,
        want_ns: u64,
        expect: Option<u64>,
        first: bool,
        tally: &mut Tally,
    ) -> Result<Applied, ApplyError> {
        let held = apply::read_back(tid).ok_or(ApplyError::Gone)?;
        if first && held.policy == SCHED_BATCH {
            if let Some(own) = self.own_batch.as_mut() {
                own.insert(tid);
            }
        }
        let batch_is_ffs = self.policy == SCHED_BATCH
            && !self
                .own_batch
                .as_ref()
                .is_some_and(|own| own.contains(&tid));
        if !apply::is_ffs(held.policy, batch_is_ffs) {
            // Real-time, idle, or batch of the program's own: its choice;
            // left alone.
            return Err(ApplyError::NotFair {
                policy: held.policy,
            });
        }
        // Where sched_setattr does not take, the nice value still does.
        let slices_work = matches!(self.slice, SliceSupport::Untried | SliceSupport::Applied);
        let holds = held.nice == self.nice
            && (!slices_work || (held.policy == self.policy && Some(held.slice_ns) == expect));
        if holds {
            return Ok(held);
        }
        tally.applied += 1;
        if !slices_work {
            let _ = corral_locks::sys::sched::set_nice(tid, self.nice);
            return apply::read_back(tid).ok_or(ApplyError::Gone);
        }
        let r = apply::apply(tid, &held, self.policy, self.nice, want_ns);
        if self.slice == SliceSupport::Untried {
            self.slice = SliceSupport::judge(want_ns, r);
        }
        if let (0, Ok(a)) = (want_ns, r) {
            self.default_slice_ns.get_or_insert(a.slice_ns);
        }
        r
    }

    /// Lock waiting since the last period, summed over the threads of
    /// every process of the program that publishes corral's stats.
    fn lock_wait(&mut self, tasks: &[Task]) -> u64 {
        let pids: HashSet<i32> = tasks.iter().map(|t| t.pid).collect();
        self.stats.retain(|pid, _| pids.contains(pid));
        let mut wait = 0;
        let mut seen = HashSet::new();
        for &pid in &pids {
            let map = match self.stats.entry(pid) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(v) => match StatsMap::open_local(pid) {
                    Some(m) => v.insert(m),
                    None => continue, // not (yet) under corral's library
                },
            };
            for t in map.snapshot().threads {
                let before = self.last_wait.insert(t.tid, t.wait_ns).unwrap_or(0);
                wait += t.wait_ns.saturating_sub(before);
                seen.insert(t.tid);
            }
        }
        self.last_wait.retain(|tid, _| seen.contains(tid));
        wait
    }

    /// LLC misses over references since the last period, where a PMU
    /// counts; counters open on each thread's first sight.
    fn miss_ratio(&mut self, tasks: &[Task]) -> Option<f64> {
        if self.miss != MissSource::Measured {
            return None;
        }
        let (mut refs, mut misses) = (0, 0);
        for t in tasks {
            if let Entry::Vacant(v) = self.counters.entry(t.tid) {
                let opened = Counter::open(t.tid, CacheEvent::References)
                    .and_then(|r| Ok((r, Counter::open(t.tid, CacheEvent::Misses)?)));
                if let Ok((refs, misses)) = opened {
                    v.insert(CacheCounters {
                        refs,
                        misses,
                        last: (0, 0),
                    });
                }
            }
            if let Some(c) = self.counters.get_mut(&t.tid) {
                let now = (c.refs.read().unwrap_or(0), c.misses.read().unwrap_or(0));
                refs += now.0.saturating_sub(c.last.0);
                misses += now.1.saturating_sub(c.last.1);
                c.last = now;
            }
        }
        let live: HashSet<i32> = tasks.iter().map(|t| t.tid).collect();
        self.counters.retain(|tid, _| live.contains(tid));
        faithful::miss_ratio(misses, refs)
    }

    /// The program's report so far.
    pub fn report(&self) -> FfProgramReport {
        FfProgramReport {
            root: self.root,
            nice: self.nice,
            slice: self.slice,
            miss: self.miss,
            periods: self.periods.clone(),
        }
    }
}
