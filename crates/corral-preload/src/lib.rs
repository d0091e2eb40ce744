//! `libcorral_preload.so`: LD_PRELOAD interposition of pthread locks.
//! The interposed entry points land with the runtime issue; this crate fixes
//! the library's name and its dependency on the shared ABI now.

pub use corral_runtime::abi;
