//! One module per subcommand; `lists` parses the list flags they share,
//! `launch` starts a program under the preload library, and `kernel_opts`
//! holds the kernel-lock options `run` and `attach` share.

pub(crate) mod attach;
pub(crate) mod bench;
pub(crate) mod demo;
pub(crate) mod elf;
pub(crate) mod kernel_opts;
pub(crate) mod launch;
pub(crate) mod lists;
pub(crate) mod locks;
pub(crate) mod metrics;
pub(crate) mod model;
pub(crate) mod report;
pub(crate) mod reproduce;
pub(crate) mod run;
pub(crate) mod signals;
pub(crate) mod sim;
pub(crate) mod static_tls;
pub(crate) mod top;
pub(crate) mod tsc;
