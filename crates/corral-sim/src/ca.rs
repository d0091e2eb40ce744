//! The contention-aware scheduler (paper 5, Xian, Srisa-an and Jiang,
//! "Contention-Aware Scheduler", Sec. 2.3): threads are clustered by the
//! locks they use (seVectors), each cluster mapped to CPUs by the mapping
//! plan, and Critical-Section-First renews the quantum of a lock holder.
//! Clustering, plan and renewal are `corral-policy`'s `cluster` and `csf`.

use crate::policy::{CoreRange, SimPolicy};
use crate::topology::Machine;
use corral_policy::cluster::{cluster_threads, mapping_plan, CaParams, SeVectors};
use corral_policy::csf::{CsfParams, QuantumDecision, RenewalState};

/// The CA scheduler with CSF: every task may run anywhere until the first
/// seVector fills, then each is pinned to the CPU its cluster was mapped to.
#[derive(Debug)]
pub struct ContentionAware {
    ca: CaParams,
    csf: CsfParams,
    cores: u32,
    recording: bool,
    vectors: SeVectors,
    /// CPU of each thread once the plan exists.
    cpu_of_thread: Option<Vec<u32>>,
    renewals: Vec<RenewalState>,
}

impl Default for ContentionAware {
    fn default() -> Self {
        Self::new(CaParams::default(), CsfParams::default())
    }
}

impl ContentionAware {
    /// The scheduler with clustering parameters `ca` and renewal rules `csf`.
    pub fn new(ca: CaParams, csf: CsfParams) -> Self {
        ContentionAware {
            ca,
            csf,
            cores: 0,
            recording: false,
            vectors: SeVectors::new(ca.se_vector_size),
            cpu_of_thread: None,
            renewals: Vec::new(),
        }
    }

    /// The CPU plan, once a seVector has filled.
    pub fn plan(&self) -> Option<&[u32]> {
        self.cpu_of_thread.as_deref()
    }

    #[cold]
    fn make_plan(&mut self) {
        self.recording = false;
        let clustering = cluster_threads(&self.vectors, &self.ca);
        let cpus: Vec<u32> = (0..self.cores).collect();
        self.cpu_of_thread = mapping_plan(&clustering.clusters, &cpus).map(|p| p.cpu_of_thread);
    }
}

impl SimPolicy for ContentionAware {
    fn start(&mut self, machine: &Machine, tasks: u32) {
        self.cores = machine.cores;
        self.recording = self.ca.should_record(tasks as usize);
        self.vectors = SeVectors::with_threads(self.ca.se_vector_size, tasks as usize);
        self.renewals = vec![RenewalState::default(); tasks as usize];
    }

    #[inline]
    fn on_lock_acquired(&mut self, task: u32, lock: u32) {
        if self.recording && self.vectors.record(task as usize, u64::from(lock)) {
            self.make_plan();
        }
    }

    #[inline]
    fn renew_quantum(&mut self, task: u32, locks_held: u32) -> bool {
        let decision = self.renewals[task as usize].on_quantum_expiry(&self.csf, locks_held);
        decision == QuantumDecision::Renew
    }

    #[inline]
    fn on_descheduled(&mut self, task: u32) {
        self.renewals[task as usize].on_descheduled();
    }

    #[inline]
    fn allowed(&self, task: u32) -> CoreRange {
        match &self.cpu_of_thread {
            Some(plan) => {
                let cpu = plan[task as usize].min(self.cores.saturating_sub(1));
                CoreRange {
                    lo: cpu,
                    hi: cpu + 1,
                }
            }
            None => CoreRange {
                lo: 0,
                hi: self.cores,
            },
        }
    }
}
