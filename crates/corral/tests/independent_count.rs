//! The lock profile's contended count against an independent one: perf
//! counts, with a uprobe the kernel fires, every entry into the preload's
//! contended path (`profiled::wait_for`, one per contended acquisition)
//! in the same `sysbench mutex` run whose profile counts them in-process
//! (plain stores by the lock's holder, not atomic adds: a lost update
//! would show here). They must agree within 10%. Skipped, with one line,
//! without root, perf, sysbench, or where the kernel refuses uprobes.

mod common;

use std::path::Path;
use std::process::Command;

/// The uprobe group and event perf makes for a probe named `name` on `lib`.
fn add_probe(lib: &Path, name: &str) -> Result<String, String> {
    let spec = format!("{name}=_ZN14corral_preload8profiled8wait_for*");
    let out = Command::new("perf")
        .args(["probe", "-q", "-x"])
        .arg(lib)
        .args(["-a", &spec])
        .output()
        .map_err(|e| format!("perf: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr)
            .trim()
            .replace('\n', "; "));
    }
    Ok(format!("probe_libcorral_preload:{name}"))
}

fn del_probe(event: &str) {
    let _ = Command::new("perf")
        .args(["probe", "-q", "-d", event])
        .output();
}

#[test]
fn contended_count_agrees_with_a_perf_uprobe_on_sysbench_mutex() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root (uprobes need it): skipped");
        return;
    }
    for tool in ["perf", "sysbench"] {
        let found = Command::new(tool).arg("--version").output();
        if !found.is_ok_and(|o| o.status.success()) {
            eprintln!("no {tool} (scripts/ci-deps.sh installs it): skipped");
            return;
        }
    }
    let lib = common::preload();
    let name = format!("corral_wait_{}", std::process::id());
    let event = match add_probe(&lib, &name) {
        Ok(e) => e,
        Err(why) => {
            eprintln!("uprobe refused ({why}): skipped");
            return;
        }
    };
    // One mutex, no work outside it. On a loaded machine four threads can
    // still run one after another and never wait: such a run compares
    // nothing, so it is tried again, up to three runs.
    let (profiled, probed) = (0..3)
        .map(|_| count_both(&lib, &event))
        .find(|&(_, probed)| probed > 0)
        .unwrap_or((0, 0));
    del_probe(&event);
    eprintln!("contended: profile {profiled}, perf uprobe {probed}");
    assert!(
        probed > 0,
        "sysbench mutex never waited in 3 runs: nothing compared"
    );
    let gap = profiled.abs_diff(probed) as f64 / probed as f64;
    assert!(gap <= 0.10, "profile {profiled} vs uprobe {probed}");
}

/// One `sysbench mutex` run under `corral run` and `perf stat` on `event`:
/// the profile's contended acquisitions and the uprobe's count.
fn count_both(lib: &Path, event: &str) -> (u64, u64) {
    let report = std::env::temp_dir().join(format!("corral-count-{}.json", std::process::id()));
    let out = Command::new("perf")
        .args(["stat", "-x", ",", "-e", event, "--"])
        .arg(env!("CARGO_BIN_EXE_corral"))
        .env("CORRAL_PRELOAD", lib)
        .args([
            "run",
            "--quiet",
            "--policy",
            "none",
            "--load-after-contended",
            "0",
            "--report",
        ])
        .arg(&report)
        .args(["--", "sysbench", "mutex", "--threads=4", "--mutex-num=1"])
        .args(["--mutex-loops=0", "--mutex-locks=100000", "run"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let probed: u64 = stderr
        .lines()
        .find(|l| l.contains(event))
        .and_then(|l| l.split(',').next()?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count for {event} in {stderr}"));
    let doc = common::read_json(&report);
    std::fs::remove_file(&report).unwrap();
    let profiled = doc["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["contended"].as_u64().unwrap())
        .sum();
    (profiled, probed)
}
