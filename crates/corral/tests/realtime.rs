//! corral leaves real-time threads where the program put them: the same
//! contended program qualifies its threads as lock intensive in the fair
//! class and not in SCHED_FIFO.

mod common;

use std::path::Path;
use std::process::Command;

/// One thread of a run: whether it was lock intensive, and its contended
/// acquisitions.
type ThreadRow = (bool, u64);

/// Runs the fixture under `corral run` in `mode` and returns the report's
/// per-thread rows; `None` where real-time priority is not permitted.
fn run_threads(exe: &Path, mode: &str, dir: &Path) -> Option<Vec<ThreadRow>> {
    let report = dir.join(format!("report.{mode}.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["run", "--quiet", "--load-after-contended", "0", "--report"])
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
    let doc = common::read_json(&report);
    let threads = doc["threads"].as_array().unwrap();
    Some(
        threads
            .iter()
            .map(|t| {
                (
                    t["lock_intensive"] == true,
                    t["contended"].as_u64().unwrap_or(0),
                )
            })
            .collect(),
    )
}

/// Contended acquisitions below which a run says nothing about
/// classification: its two threads seldom ran at once (a loaded machine).
const CONTENDED_ENOUGH: u64 = 1_000;

fn contended(rows: &[ThreadRow]) -> u64 {
    rows.iter().map(|r| r.1).sum()
}

#[test]
fn real_time_threads_are_never_confined_while_fair_ones_are() {
    let _ = common::preload();
    let dir = std::env::temp_dir().join(format!("corral-realtime-test.{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("rt_lock");
    if !common::build_fixture("rt_lock.c", &exe) {
        eprintln!("skipped: no C compiler");
        return;
    }
    // The control: the same contention does qualify fair-class threads. On a
    // loaded machine the two threads may seldom run at once and contend
    // little: such a run shows nothing, so the control gets three tries and
    // the test skips (with a line) if none of them contended.
    let mut most = 0;
    let mut qualified = false;
    for _ in 0..3 {
        let rows = run_threads(&exe, "fair", &dir).unwrap();
        if rows.iter().any(|r| r.0) {
            qualified = true;
            break;
        }
        most = most.max(contended(&rows));
    }
    if !qualified {
        assert!(
            most < CONTENDED_ENOUGH,
            "fair-class threads contended {most} times and never qualified"
        );
        eprintln!("skipped: the fair control contended only {most} times (a loaded machine)");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    match run_threads(&exe, "rt", &dir) {
        Some(rt) => assert!(rt.iter().all(|r| !r.0), "real-time threads: {rt:?}"),
        None => eprintln!("skipped the real-time half: SCHED_FIFO not permitted"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
