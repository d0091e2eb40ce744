//! corral's many-core discrete-event simulator.
//!
//! It models a cache-coherent machine (cores grouped into LLC domains and
//! NUMA nodes, per-core run queues with time slices, migration costs by
//! distance), the lock algorithms with costs from paper 3's coherence model,
//! and closed-loop workloads; scheduling policies are driven by the same
//! observations the real runtime produces and run `corral-policy`'s code.

pub mod config;
mod engine;
mod lockops;
pub mod locks;
pub mod policy;
pub mod rng;
mod sched;
pub mod topology;
pub mod workload;

pub use config::{SchedParams, SimConfig, SimResult};
pub use engine::simulate;
pub use locks::{LockAlgo, LockCosts};
pub use policy::{AllCores, CoreRange, McsInstead, SimPolicy};
pub use topology::Machine;
pub use workload::{LockSpec, Step, TimeDist, Workload};
