//! One module per subcommand; `lists` parses the list flags they share,
//! `launch` starts a program under the preload library, and `kernel_opts`
//! holds the kernel-lock options `run` and `attach` share.

pub mod attach;
pub mod bench;
pub mod demo;
pub mod kernel_opts;
pub mod launch;
pub mod lists;
pub mod model;
pub mod run;
pub mod sim;
