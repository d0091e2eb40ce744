//! One module per subcommand; `lists` parses the list flags they share.

pub mod attach;
pub mod bench;
pub mod bench_counter;
pub mod bench_kernel;
pub mod bench_locks;
pub mod bench_worker;
pub mod demo;
pub mod launch;
pub mod lists;
pub mod model;
pub mod run;
pub mod run_kernel;
pub mod sim;
