//! The shared trace harness: a round-robin driver of one SSC controller.
#![allow(dead_code)]

use corral_policy::placement::Topology;
use corral_policy::ssc::{
    Decision, MigState, Phase, SliceObs, SscController, SscParams, ThreadPolicyState,
};
use corral_policy::{CoreId, Nanos};

pub(crate) const SLICE: Nanos = 10_000_000;
/// Simulated time between two slice ends (many cores run in parallel).
pub(crate) const STEP: Nanos = 10_000;
pub(crate) const PROGRAM: u64 = 0xC0FFEE;
/// Contended acquisitions per slice: pure hand-offs (one a microsecond),
/// far above any preset's hand-off test.
pub(crate) const HANDOFFS: u64 = SLICE / 1_000;

/// An on-CPU slice of [`SLICE`] on `core` that waited `lock_wait` over
/// `waits` contended acquisitions: no yields, not real-time (the fields a
/// test varies are set with struct-update syntax).
pub(crate) fn cpu_slice(core: CoreId, lock_wait: Nanos, waits: u64) -> SliceObs {
    SliceObs {
        core,
        slice_len: SLICE,
        lock_wait,
        waits,
        attempts: 0,
        yields: 0,
        wall_len: 0,
        realtime: false,
    }
}

/// A round-robin driver: threads take turns running one slice each.
pub(crate) struct Driver {
    pub ctl: SscController,
    pub threads: Vec<ThreadPolicyState>,
    pub core_of: Vec<CoreId>,
    pub loads: Vec<u32>,
    pub now: Nanos,
    pub next: usize,
    pub log: Vec<Decision>,
    /// When a thread last moved.
    pub last_move: Nanos,
}

impl Driver {
    /// `n_threads` threads of one program on `n_cores` cores, all already
    /// lock intensive (one fully contended slice each).
    pub(crate) fn new(params: SscParams, n_cores: u32, n_threads: usize) -> Self {
        let mut driver = Self::unsettled(params, n_cores, n_threads);
        // Everyone moves into the SSC before the first vote, so the search
        // starts from a clean state (the early-vote skew is tested apart).
        for i in 0..n_threads {
            let thread = &mut driver.threads[i];
            if let Some(target) =
                driver
                    .ctl
                    .on_lock_attempt(thread, driver.core_of[i], &driver.loads, 0)
            {
                driver.loads[driver.core_of[i] as usize] -= 1;
                driver.loads[target as usize] += 1;
                driver.core_of[i] = target;
            }
        }
        driver
    }

    /// Like [`Self::new`], but the threads are still on the general cores:
    /// each moves at its first lock attempt, while others already vote.
    pub(crate) fn unsettled(params: SscParams, n_cores: u32, n_threads: usize) -> Self {
        let topo = Topology::uniform(n_cores, 8, 4);
        let ctl = SscController::new(params, topo.ssc_order(), 0);
        let mut driver = Driver {
            threads: Vec::new(),
            core_of: Vec::new(),
            loads: vec![0; n_cores as usize],
            ctl,
            now: 0,
            next: 0,
            log: Vec::new(),
            last_move: 0,
        };
        for i in 0..n_threads {
            let mut thread = driver.ctl.register_thread(PROGRAM, 0);
            let core = (n_cores - 1 - (i as u32 % n_cores)) as CoreId;
            driver.ctl.begin_slice(&mut thread, 0);
            let out = driver
                .ctl
                .on_slice_end(&mut thread, cpu_slice(core, SLICE, HANDOFFS), 0);
            assert_ne!(thread.is_mig, MigState::General, "{out:?}");
            driver.loads[core as usize] += 1;
            driver.core_of.push(core);
            driver.threads.push(thread);
        }
        driver
    }

    /// One slice of the next thread: lock attempt (Alg. 2), then a slice
    /// whose lock-wait share is `share(bound at slice start)`.
    pub(crate) fn slice(&mut self, share: &dyn Fn(u32) -> f64) -> Option<Decision> {
        let i = self.next;
        self.next = (self.next + 1) % self.threads.len();
        self.slice_of(i, &|b| (share(b) * SLICE as f64).round() as Nanos)
    }

    pub(crate) fn slice_of(&mut self, i: usize, wait: &dyn Fn(u32) -> Nanos) -> Option<Decision> {
        let thread = &mut self.threads[i];
        if let Some(target) =
            self.ctl
                .on_lock_attempt(thread, self.core_of[i], &self.loads, self.now)
        {
            self.loads[self.core_of[i] as usize] -= 1;
            self.loads[target as usize] += 1;
            self.core_of[i] = target;
            self.last_move = self.now;
        }
        self.ctl.begin_slice(thread, self.now);
        self.now += STEP;
        let obs = cpu_slice(self.core_of[i], wait(thread.record_bound), HANDOFFS);
        let out = self.ctl.on_slice_end(thread, obs, self.now);
        if let Some(decision) = out.decision {
            self.log.push(decision);
        }
        out.decision
    }

    /// Slices until the next determination; returns it.
    pub(crate) fn round(&mut self, share: &dyn Fn(u32) -> f64) -> Decision {
        for _ in 0..1_000_000 {
            if let Some(decision) = self.slice(share) {
                return decision;
            }
        }
        panic!("no determination");
    }

    /// Rounds until the search settles (or, capped as the paper leaves it,
    /// keeps re-confirming one bound for 20 rounds); returns the bound.
    pub(crate) fn settle(&mut self, share: &dyn Fn(u32) -> f64) -> u32 {
        let mut unchanged = 0;
        for _ in 0..2_000 {
            let decision = self.round(share);
            unchanged = if decision.bound_before == decision.bound_after {
                unchanged + 1
            } else {
                0
            };
            if matches!(self.ctl.search_state().unwrap().phase, Phase::Settled) || unchanged >= 20 {
                return self.ctl.bound();
            }
        }
        panic!("search did not settle: {:?}", self.log.last());
    }
}

/// p(n) = n / (2 n*): T(n) = n (1 - p(n)) is a parabola peaking at n*.
pub(crate) fn unimodal(optimum: u32) -> impl Fn(u32) -> f64 {
    move |n| (f64::from(n) / (2.0 * f64::from(optimum))).min(1.0)
}

pub(crate) fn throughput(optimum: u32, n: u32) -> f64 {
    f64::from(n) * (1.0 - unimodal(optimum)(n))
}

/// Small warm-up so the sweep stays fast; the mechanism is tested apart.
pub(crate) fn improved() -> SscParams {
    SscParams {
        vote_warmup: 100_000,
        ..SscParams::default()
    }
}
