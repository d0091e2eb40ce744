//! corral on real Linux. Today: the shared stats ABI. The thread registry,
//! slices, affinity, topology and monitor land with the runtime issue.

pub mod abi;
