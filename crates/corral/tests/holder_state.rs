//! Waiting that knows whether the holder runs (issue 50): behind a holder
//! asleep inside its critical section, waiters sleep at once where the
//! on-CPU table is loaded; where BPF is refused, the run says so and its
//! waiters spin on the learned budget, with the program's output intact.

mod common;

use std::path::PathBuf;
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("corral-holder-{}-{name}", std::process::id()))
}

/// One `corral run` at a time (see lock_profile.rs).
static ONE_RUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs the sleepy-holder fixture (4 threads, 60 rounds, 200 us asleep
/// holding the lock) under `corral run` with `flags` and `env`; returns
/// the report, or `None` without a C compiler.
fn run_sleepy(tag: &str, flags: &[&str], env: &[(&str, &str)]) -> Option<serde_json::Value> {
    let _one = ONE_RUN.lock().unwrap_or_else(|p| p.into_inner());
    let exe = scratch(tag);
    if !common::build_fixture("sleepy_holder.c", &exe) {
        eprintln!("no C compiler: skipped");
        return None;
    }
    let report = scratch(&format!("{tag}.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .env("CORRAL_PRELOAD", common::preload())
        .envs(env.iter().copied())
        .args(["run", "--load-after-contended", "0", "--report"])
        .arg(&report)
        .args(flags)
        .arg("--")
        .arg(&exe)
        .args(["4", "60", "200"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "240",
        "{stderr}"
    );
    let text = std::fs::read_to_string(&report).unwrap();
    let _ = std::fs::remove_file(&report);
    let _ = std::fs::remove_file(&exe);
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let waiting = json["waiting"]
        .as_str()
        .expect("the report says how waiters wait");
    assert!(
        stderr.contains(&format!("corral: {waiting}")),
        "the summary says it too: {stderr}"
    );
    Some(json)
}

/// The hot lock's wait outcomes: (spun to the hand-off, slept because the
/// holder was off its CPU, every counted wait).
fn outcomes(report: &serde_json::Value) -> (u64, u64, u64) {
    let waits = &report["locks"][0]["waits"];
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let spun = n(&waits["spun_to_handoff"]);
    let all = spun + n(&waits["spun_then_parked"]) + n(&waits["parked_at_once"]);
    (spun, n(&waits["parked_because"]["holder_off_cpu"]), all)
}

#[test]
fn waiters_behind_a_sleeping_holder_sleep_at_once() {
    let Some(report) = run_sleepy("bpf", &[], &[]) else {
        return;
    };
    let waiting = report["waiting"].as_str().unwrap();
    if !waiting.contains("BPF on sched_switch") {
        eprintln!("no on-CPU table here ({waiting}): skipped");
        return;
    }
    let (_, off, all) = outcomes(&report);
    assert!(all > 0, "no wait counted: {report}");
    // The holder sleeps 200 us of every critical section: nearly every
    // waiter finds it off its CPU.
    assert!(
        off * 10 >= all * 9,
        "{off} of {all} waits saw the holder off CPU"
    );
}

#[test]
fn without_bpf_the_run_says_so_and_waits_on_the_budget() {
    // BPF refused (no kernel BTF where it is looked for).
    let Some(report) = run_sleepy("nobtf", &[], &[("CORRAL_BTF_PATH", "/nonexistent/btf")]) else {
        return;
    };
    let waiting = report["waiting"].as_str().unwrap();
    assert!(waiting.contains("learned budget"), "{waiting}");
    assert!(
        waiting.contains("not root") || waiting.contains("BPF refused"),
        "{waiting}"
    );
    let (_, off, all) = outcomes(&report);
    assert!(all > 0);
    assert_eq!(off, 0, "no holder state without the table");

    let Some(report) = run_sleepy("off", &["--holder-state", "budget"], &[]) else {
        return;
    };
    let waiting = report["waiting"].as_str().unwrap();
    assert!(waiting.contains("turned off"), "{waiting}");
}
