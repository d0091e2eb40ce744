//! corral's many-core discrete-event simulator.
//!
//! It models a cache-coherent machine (cores grouped into LLC domains and
//! NUMA nodes, per-core run queues with time slices, preemption, wake-up,
//! idle balancing within each task's allowed cores, migration costs by
//! distance from paper 1, Sec. 4.1), the lock algorithms with costs from
//! paper 3's coherence model (Sec. 3), and closed-loop workloads. Scheduling
//! policies see the observations the real runtime produces (slices with their
//! lock wait, lock attempts, run-queue loads) and run `corral-policy`'s code:
//! `lca` is its SSC controller, `faithful` its FF controller, `ca` its
//! clustering, mapping plan and CSF.
//!
//! Fidelity: with exponential times a single ticket lock is exactly paper 3's
//! Markov chain (eq. 1; `tests/markov_validation.rs`). Feeding paper 3's
//! Fig. 3 figures, with critical sections lengthened by data misses (Sec.
//! 5.2), puts the default policy's peaks where the paper measured them; the
//! collapse past the peak is 2-5x shallower than measured, as eq. 1's is
//! (paper 3, Sec. 3.3: "the predicted collapse is slightly more gradual").
//!
//! Entry points: [`simulate`] runs one point, [`run_sweep`] many in parallel.

pub mod ca;
pub mod config;
mod engine;
mod error;
pub mod faithful;
pub mod lca;
pub mod locks;
mod names;
mod plot;
pub mod policy;
pub mod presets;
pub mod reproduce;
pub mod rng;
mod state;
pub mod sweep;
mod timers;
pub mod topology;
pub mod workload;

pub use config::{SchedParams, SimConfig, SimResult, MAX_CORES};
pub use engine::simulate;
pub use error::SimError;
pub use locks::{LockAlgo, LockCosts};
pub use names::{
    make_policy, parse_policy, simulate_named, OVER_LOCKS, POLICIES, POLICY_NAMES, SCHEDULERS,
};
pub use plot::{svg_plot, svg_plot_labelled};
pub use policy::{AllCores, CoreLoads, CoreRange, OverLock, SimPolicy};
pub use sweep::{run_sweep, to_csv, SweepReport, SweepSpec};
pub use topology::Machine;
pub use workload::{LockSpec, Step, TimeDist, Workload};
