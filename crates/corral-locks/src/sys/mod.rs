//! The one OS layer every corral crate reads clocks and uses futexes
//! through: the unsafe system calls live here, each behind a safe function.

pub mod clock;
#[cfg(target_os = "linux")]
pub mod futex;
#[cfg(target_os = "linux")]
pub mod membarrier;
