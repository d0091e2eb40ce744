//! Faithful scheduling on Linux (paper 4, FF): every thread of a program
//! at one nice value and one time quantum, the quantum from the program's
//! scaling factor each monitoring period (Table I, Algorithm 1), applied as
//! EEVDF's requested slice (`sched_setattr`'s `sched_runtime`, Linux 6.12+)
//! and read back. The decisions are `corral_policy::faithful`'s; this
//! module observes (/proc, corral's stats regions, PMU counters) and applies.
//!
//! A thread created by a thread holding the quantum inherits it from the
//! kernel at `clone`, so new threads have the quantum at once; each period
//! also sweeps every thread (new processes, threads that changed it).

mod apply;
mod driver;
mod procfs;
mod program;
mod report;

pub use apply::{apply, read_back, Applied, ApplyError, SliceSupport};
pub use driver::FfDriver;
pub use procfs::{tree_tasks, CtxSwitches, Task};
pub use program::FfProgram;
pub use report::{FfPeriod, FfProgramReport, FfReport, MissSource};
