//! What the profile tests share: the hot-lock fixture and the preload.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds `tests/fixtures/hot_lock.c` with debug info at `exe`; false
/// without a C compiler.
pub(crate) fn build_hot_lock(exe: &Path) -> bool {
    build_fixture("hot_lock.c", exe)
}

/// Builds `tests/fixtures/<source>` with debug info at `exe`; false
/// without a C compiler.
pub(crate) fn build_fixture(source: &str, exe: &Path) -> bool {
    build_fixture_with(source, exe, &[])
}

/// [`build_fixture`] with `extra` compiler flags (`-static`).
pub(crate) fn build_fixture_with(source: &str, exe: &Path, extra: &[&str]) -> bool {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(source);
    Command::new("cc")
        .args(extra)
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

/// The address in corral's `corral: metrics at http://ADDR/metrics` line.
pub(crate) fn metrics_addr(line: &str) -> Option<String> {
    line.trim()
        .strip_prefix("corral: metrics at http://")
        .and_then(|a| a.strip_suffix("/metrics"))
        .map(str::to_string)
}

/// The body of `GET /metrics` at `addr` (asserting a 200), or `None` when
/// nothing listens there any more.
pub(crate) fn get_metrics(addr: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(addr).ok()?;
    conn.write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n")
        .unwrap();
    let mut resp = String::new();
    conn.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    Some(body.to_string())
}

/// The JSON document at `path` (a `--report`), which must exist and parse.
pub(crate) fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}
