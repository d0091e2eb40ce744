//! corral leaves real-time threads where the program put them: the same
//! contended program qualifies its threads as lock intensive in the fair
//! class and not in SCHED_FIFO.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs the fixture under `corral run` in `mode` and returns the report's
/// per-thread `lock_intensive` flags; `None` where real-time priority is
/// not permitted (or no C compiler).
fn lock_intensive_flags(exe: &Path, mode: &str, dir: &Path) -> Option<Vec<bool>> {
    let report = dir.join(format!("report.{mode}.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["run", "--quiet", "--report"])
        .arg(&report)
        .arg("--")
        .arg(exe)
        .arg(mode)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{mode}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if stdout.contains("skipped") {
        return None;
    }
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let threads = doc["threads"].as_array().unwrap();
    Some(
        threads
            .iter()
            .map(|t| t["lock_intensive"] == true)
            .collect(),
    )
}

#[test]
fn real_time_threads_are_never_confined_while_fair_ones_are() {
    let _ = common::preload();
    let dir = std::env::temp_dir().join(format!("corral-realtime-test.{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("rt_lock");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rt_lock.c");
    let built = Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        eprintln!("skipped: no C compiler");
        return;
    }
    // The control: the same contention does qualify fair-class threads. On a
    // loaded machine the two threads may seldom run at once and contend
    // little, so the control gets three tries.
    let qualified = (0..3).any(|_| {
        lock_intensive_flags(&exe, "fair", &dir)
            .unwrap()
            .iter()
            .any(|&f| f)
    });
    assert!(qualified, "fair-class threads qualified in none of 3 runs");
    match lock_intensive_flags(&exe, "rt", &dir) {
        Some(rt) => assert!(rt.iter().all(|&f| !f), "real-time threads: {rt:?}"),
        None => eprintln!("skipped the real-time half: SCHED_FIFO not permitted"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
