//! What the profile tests share: the hot-lock fixture and the preload.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds `tests/fixtures/hot_lock.c` with debug info at `exe`; false
/// without a C compiler.
pub(crate) fn build_hot_lock(exe: &Path) -> bool {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hot_lock.c");
    Command::new("cc")
        .args(["-g", "-O1", "-pthread", "-o"])
        .arg(exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success())
}

/// The preload library beside the `corral` binary under test.
pub(crate) fn preload() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_corral"));
    let lib = exe.parent().unwrap().join("libcorral_preload.so");
    assert!(
        lib.is_file(),
        "build the preload library first: cargo build -p corral-preload"
    );
    lib
}
