//! What `corral run` and the benchmarks share to start a program under
//! corral's preload library: finding (or building) `libcorral_preload.so`,
//! spawning the program with it and collecting what its runtime published
//! ([`launch`]) and making it die with corral (`watcher`), passing
//! signals and exit status through ([`signals`]),
//! the list flags they parse ([`lists`]), and the one-line error they
//! report ([`CliError`]).

pub mod elf;
mod error;
pub mod holder;
pub mod launch;
pub mod lists;
mod region;
pub mod signals;
mod static_tls;
mod tsc;
mod watcher;

pub use error::CliError;
