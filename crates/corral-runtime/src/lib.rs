//! corral on real Linux: the shared stats ABI, the sysfs topology and thread
//! affinity, the thread registry and lock waiting used by the preload
//! library, the monitor that drives the SSC policy, and the stats region and
//! decision log that `corral run` reads.

pub mod abi;
pub mod affinity;
pub mod ca;
pub mod channel;
pub mod config;
pub mod cpuset;
pub mod csf;
pub mod doorbell;
pub mod events;
pub mod faithful;
pub mod files;
pub mod kernel;
pub mod lockprof;
pub mod monitor;
pub mod monitor_thread;
pub mod oncpu;
pub mod pace;
pub mod parking;
pub mod policies;
pub mod registry;
pub mod stats;
pub mod topology;
pub mod waiting;
