//! corral on real Linux: the shared stats ABI, the sysfs topology and thread
//! affinity; the thread registry, slices and monitor land with the runtime
//! issue.

pub mod abi;
pub mod affinity;
pub mod topology;
