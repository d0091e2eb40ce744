//! One module per subcommand; `kernel_opts` holds the kernel-lock options
//! `run` and `attach` share. Starting a program under the preload library
//! and the list flags are the `corral-launch` crate's; the benchmarks are
//! the `corral-bench` crate's.

pub(crate) mod attach;
pub(crate) mod demo;
pub(crate) mod doctor;
pub(crate) mod kernel_opts;
pub(crate) mod locks;
pub(crate) mod manuals;
pub(crate) mod metrics;
pub(crate) mod model;
pub(crate) mod report;
pub(crate) mod reproduce;
pub(crate) mod run;
pub(crate) mod sim;
pub(crate) mod top;
