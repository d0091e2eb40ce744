//! Faithful scheduling (paper 4, FF: one priority and one quantum for all
//! threads of an application, the quantum from its scaling factor, Table I
//! and Algorithm 1), driven by `corral-policy`'s `FaithfulController`.
//!
//! The simulator has no cache-miss counter, so the miss ratio is 0 and the
//! scaling factor is 1 - lock contention (the share of slice time spent
//! waiting for locks over each monitoring period).

use crate::policy::{CoreLoads, CoreRange, SimPolicy};
use crate::topology::Machine;
use corral_policy::faithful::{FaithfulController, FfParams};

/// FF for the one simulated application: every task gets the quantum the
/// controller picks from the measured lock contention.
#[derive(Debug)]
pub struct Faithful {
    ctrl: FaithfulController,
    cores: u32,
    next_profile_ns: u64,
    run_ns: u64,
    wait_ns: u64,
}

impl Faithful {
    /// The policy with the controller's parameters `params`.
    pub fn new(params: FfParams) -> Self {
        Faithful {
            ctrl: FaithfulController::new(params),
            cores: 0,
            next_profile_ns: 0,
            run_ns: 0,
            wait_ns: 0,
        }
    }
}

impl Default for Faithful {
    fn default() -> Self {
        Self::new(FfParams::default())
    }
}

impl SimPolicy for Faithful {
    fn start(&mut self, machine: &Machine, _tasks: u32) {
        self.cores = machine.cores;
        let p = self.ctrl.params();
        self.next_profile_ns = p.warmup_ns + p.monitoring_period_ns;
    }

    #[inline]
    fn on_slice(&mut self, _now_ns: u64, _task: u32, _core: u32, run_ns: u64, wait_ns: u64) {
        self.run_ns += run_ns;
        self.wait_ns += wait_ns.min(run_ns);
    }

    fn on_tick(&mut self, now_ns: u64, _loads: &dyn CoreLoads) {
        if now_ns < self.next_profile_ns {
            return;
        }
        // Profiling starts after the warm-up: that period's share only.
        let contention = self.wait_ns as f64 / self.run_ns.max(1) as f64;
        self.ctrl.observe(0.0, contention);
        self.run_ns = 0;
        self.wait_ns = 0;
        self.next_profile_ns = now_ns + self.ctrl.params().monitoring_period_ns;
    }

    #[inline]
    fn allowed(&self, _task: u32) -> CoreRange {
        CoreRange {
            lo: 0,
            hi: self.cores,
        }
    }

    #[inline]
    fn slice_ns(&self, _task: u32) -> Option<u64> {
        self.ctrl.quantum_ms().map(|ms| u64::from(ms) * 1_000_000)
    }
}
