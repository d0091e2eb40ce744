//! Where threads run: the Special Set of Cores (SSC) as a prefix of a
//! topology order ([`Topology::ssc_order`]), and the one rule every driver
//! (the user-space monitor, the kernel-lock monitor, the simulator) uses to
//! place a thread on the SSC, on the general cores, or nowhere in particular
//! ([`Placement`]).

mod rule;
mod topology;

pub use rule::{general_cores, Placement};
pub use topology::{CoreInfo, Topology, TopologyError};
