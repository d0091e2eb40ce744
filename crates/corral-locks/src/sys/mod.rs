//! The one OS layer every corral crate reads clocks and uses futexes
//! through: the unsafe system calls live here, each behind a safe function.

pub mod clock;
#[cfg(target_os = "linux")]
pub mod fdtable;
#[cfg(target_os = "linux")]
pub mod futex;
#[cfg(all(loom, target_os = "linux"))]
pub mod futex_model;
#[cfg(target_os = "linux")]
pub mod objects;
#[cfg(target_os = "linux")]
pub mod perf;
#[cfg(target_os = "linux")]
pub mod sched;
