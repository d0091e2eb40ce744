//! Every decision corral makes, pure and deterministic.
//!
//! The simulator (`corral-sim`) and the real runtime (`corral-runtime`) drive
//! the same code: nothing here reads a clock, calls the OS, or allocates per
//! decision. Time is passed in as nanoseconds; observations go in, decisions
//! come out.

pub mod cluster;
pub mod csf;
pub mod detect;
pub mod engage;
pub mod faithful;
pub mod model;
pub mod placement;
pub mod ssc;
pub mod waiting;

/// Nanoseconds, as passed in by the driver (simulated or real clock).
pub type Nanos = u64;
/// A logical CPU id as the OS (or the simulator) numbers it.
pub type CoreId = u32;
