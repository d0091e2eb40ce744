//! Run configuration and the reported figures of one simulated point.

use crate::locks::LockCosts;
use crate::topology::Machine;
use serde::Serialize;

/// Largest machine simulated (memory grows with cores times tasks).
pub const MAX_CORES: u32 = 1 << 16;

/// Scheduler constants of the simulated kernel.
#[derive(Clone, Debug, Serialize)]
pub struct SchedParams {
    /// Time slice, microseconds (CFS's 4 ms minimum granularity times the
    /// 1 + log2(ncpus) scaling is longer; 4 ms keeps accounting windows short).
    pub slice_us: f64,
    /// Cycles a context switch costs the task switched in (~1.5 us).
    pub context_switch_cycles: f64,
    /// Power of an idle core relative to a busy one. Busy-spinning and
    /// busy-useful cores both draw full power (paper 1, Sec. 4.9.3: spinning
    /// burns energy without doing work).
    pub idle_power: f64,
}

impl Default for SchedParams {
    fn default() -> Self {
        SchedParams {
            slice_us: 4000.0,
            context_switch_cycles: 3600.0,
            idle_power: 0.3,
        }
    }
}

/// Everything but the workload and the policy.
#[derive(Clone, Debug, Serialize)]
pub struct SimConfig {
    /// The simulated machine.
    pub machine: Machine,
    /// Cycle costs of the lock algorithms.
    pub costs: LockCosts,
    /// Scheduler constants.
    pub sched: SchedParams,
    /// Simulated seconds, warm-up included.
    pub seconds: f64,
    /// Leading fraction of `seconds` excluded from the figures.
    pub warmup_fraction: f64,
    /// Seed of the run's random stream: equal seeds give equal runs.
    pub seed: u64,
}

impl SimConfig {
    /// `cores` cores laid out like paper 3's machine, default costs and
    /// scheduler, `seconds` simulated (20% of it warm-up).
    pub fn new(cores: u32, seconds: f64, seed: u64) -> Self {
        SimConfig {
            machine: Machine::paper3_like(cores),
            costs: LockCosts::default(),
            sched: SchedParams::default(),
            seconds,
            warmup_fraction: 0.2,
            seed,
        }
    }
}

/// The figures of one simulated point.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SimResult {
    /// The workload's name.
    pub workload: String,
    /// The policy's name (set by the sweep; empty from [`crate::simulate`]).
    pub policy: String,
    /// Cores simulated.
    pub cores: u32,
    /// Tasks simulated.
    pub tasks: u32,
    /// Simulated seconds measured (after warm-up).
    pub seconds: f64,
    /// Operations completed after warm-up.
    pub ops: u64,
    /// Operations per simulated second.
    pub throughput: f64,
    /// Throughput over that of one task alone on one core.
    pub speedup: f64,
    /// Share of task time spent waiting to acquire locks.
    pub wait_share: f64,
    /// Final SSC size, for policies with one.
    pub ssc: Option<u32>,
    /// Simulated milliseconds, from the start of the run (warm-up
    /// included), until the SSC size stays within one doubling step of
    /// `ssc` (see `crate::lca::settle_time`); `None` (null) for policies
    /// without an SSC.
    pub settle_ms: Option<f64>,
    /// Average cores doing non-critical work (eq. 1's `n - w`).
    pub noncritical_cores: f64,
    /// Average cores inside critical sections (handoffs included).
    pub critical_cores: f64,
    /// Average cores busy-spinning.
    pub spinning_cores: f64,
    /// Average idle cores.
    pub idle_cores: f64,
    /// Average power in busy-core units (idle cores weighted by `idle_power`).
    pub power: f64,
    /// Operations per unit of energy (busy-core-seconds).
    pub work_per_energy: f64,
    /// Task migrations after warm-up (moves, pulls, wake-ups elsewhere).
    pub migrations: u64,
    /// Tasks switched onto a core after warm-up.
    pub context_switches: u64,
    /// Events processed, warm-up included.
    pub events: u64,
}
