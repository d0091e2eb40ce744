//! corral on real Linux. Today: the shared stats ABI and the sysfs topology;
//! the thread registry, slices, affinity and monitor land with the runtime
//! issue.

pub mod abi;
pub mod topology;
