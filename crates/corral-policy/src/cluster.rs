//! The CA-Scheduler's lock-usage clustering and CPU mapping plan (paper 5,
//! Xian, Srisa-an and Jiang, "Contention-Aware Scheduler: Unlocking Execution
//! Parallelism in Multithreaded Java Programs", Sec. 2.3.1 and 3.2).
//!
//! Threads record lock acquisitions into per-thread seVectors
//! ([`SeVectors::record`], the only hot path: no allocation). When one vector
//! is full, the driver runs [`cluster_threads`] and then [`mapping_plan`] once;
//! these allocate, as they run once per monitoring period, not per decision.

mod accuracy;
mod form;
mod params;
mod plan;
mod round;
mod vectors;

pub use accuracy::clustering_accuracy;
pub use form::{
    cluster_threads, globally_shared_slots, similarity, similarity_matrix, Cluster, Clustering,
};
pub use params::{CaParams, ROUND_WAIT_TICKS};
pub use plan::{mapping_plan, MappingPlan};
pub use round::{ca_round, csf_lock_count, CaRound};
pub use vectors::SeVectors;
