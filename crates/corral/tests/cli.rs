//! The command line as a user meets it: bad input gets one line and a
//! non-zero exit; good input gets the documented JSON.

use std::process::{Command, Output};

fn corral(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(args)
        .output()
        .expect("run corral")
}

/// Asserts a failure with exactly one line on stderr that names `flag`,
/// `value`, and contains `allowed`.
fn assert_one_line_error(args: &[&str], flag: &str, value: &str, allowed: &str) {
    let out = corral(args);
    assert!(!out.status.success(), "{args:?} succeeded");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{args:?}: expected one line, got {err:?}");
    for needle in [flag, value, allowed] {
        assert!(
            lines[0].contains(needle),
            "{args:?}: {:?} lacks {needle:?}",
            lines[0]
        );
    }
}

#[test]
fn unknown_algorithm_is_one_line() {
    assert_one_line_error(
        &["bench", "locks", "--algs", "ticket,bogus"],
        "--algs",
        "bogus",
        "allowed: tas",
    );
}

#[test]
fn zero_threads_is_one_line() {
    assert_one_line_error(
        &["bench", "locks", "--threads", "1,0"],
        "--threads",
        "1,0",
        "positive",
    );
}

#[test]
fn malformed_list_is_one_line() {
    assert_one_line_error(
        &["bench", "locks", "--threads", "1,,2"],
        "--threads",
        "1,,2",
        "expected",
    );
    assert_one_line_error(
        &[
            "model", "--a", "1", "--s", "1", "--c", "1", "--cores", "9..2",
        ],
        "--cores",
        "9..2",
        "backwards",
    );
}

#[test]
fn model_rejects_non_positive_cycles() {
    assert_one_line_error(
        &["model", "--a", "-5", "--s", "400", "--c", "100"],
        "--a",
        "-5",
        "positive",
    );
}

#[test]
fn model_json_has_points_and_peak() {
    let out = corral(&[
        "model", "--a", "12500", "--s", "400", "--c", "100", "--cores", "1..48", "--json",
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let points = v["points"].as_array().expect("points");
    assert_eq!(points.len(), 48);
    assert_eq!(points[0]["cores"], 1);
    let peak = &v["peak"];
    let peak_speedup = peak["speedup"].as_f64().unwrap();
    let at_48 = points[47]["speedup"].as_f64().unwrap();
    // Paper 3, Fig. 8: a 400-cycle serial section collapses well before 48.
    assert!(peak["cores"].as_u64().unwrap() < 48);
    assert!(
        at_48 < 0.8 * peak_speedup,
        "no collapse: {at_48} vs peak {peak_speedup}"
    );
}

#[test]
fn bench_locks_json_lists_every_algorithm() {
    let out = corral(&[
        "bench",
        "locks",
        "--json",
        "--threads",
        "1,3",
        "--duration-ms",
        "5",
        "--reps",
        "1",
        "--iters",
        "200",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let names: Vec<&str> = v["uncontended"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["alg"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "tas",
            "ttas",
            "ticket",
            "ticket-backoff",
            "mcs",
            "clh",
            "k42",
            "futex",
            "adaptive"
        ]
    );
    assert_eq!(v["throughput"].as_array().unwrap().len(), 9 * 2);
    for row in v["uncontended"].as_array().unwrap() {
        assert!(row["overhead_ratio"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn sim_runs_the_planted_groups_of_bench_ca() {
    let out = corral(&[
        "sim",
        "--workload",
        "ca-groups-2,ca-groups-4",
        "--policy",
        "ca",
        "--cores",
        "2",
        "--seconds",
        "0.02",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tasks: Vec<u64> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["tasks"].as_u64().unwrap())
        .collect();
    // 6 tasks per group on 2 cores, as `corral bench ca` runs them.
    assert_eq!(tasks, vec![12, 24]);
    let bad = corral(&["sim", "--workload", "ca-groups-9", "--cores", "2"]);
    assert!(!bad.status.success());
}

#[test]
fn doctor_says_what_the_machine_allows_and_fails_only_without_the_library() {
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_corral"));
    let lib = exe.parent().unwrap().join("libcorral_preload.so");
    let doctor = |preload: &std::path::Path| {
        Command::new(&exe)
            .env("CORRAL_PRELOAD", preload)
            .args(["doctor", "--json"])
            .output()
            .unwrap()
    };
    let here = doctor(&lib);
    assert!(
        here.status.success(),
        "{}",
        String::from_utf8_lossy(&here.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&here.stdout).unwrap();
    assert_eq!(doc["runnable"], true, "{doc}");
    let checks = doc["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 10, "{doc}");
    for c in checks {
        let verdict = c["verdict"].as_str().unwrap();
        assert!(["ok", "limited"].contains(&verdict), "{c}");
        assert!(!c["found"].as_str().unwrap().is_empty(), "{c}");
    }
    let missing = doctor(std::path::Path::new("/nonexistent/libcorral_preload.so"));
    assert_eq!(missing.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&missing.stdout).unwrap();
    assert_eq!(doc["runnable"], false);
    assert_eq!(doc["checks"][0]["verdict"], "fatal", "{doc}");
}

#[test]
fn completions_and_manual_pages_come_from_the_same_definitions() {
    for (shell, mark) in [
        ("bash", "_corral()"),
        ("zsh", "#compdef corral"),
        ("fish", "complete -c corral"),
    ] {
        let out = corral(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(mark),
            "{shell}: {}",
            &text[..200.min(text.len())]
        );
        assert!(text.contains("doctor"), "{shell} completes the subcommands");
    }
    let dir = std::env::temp_dir().join(format!("corral-man-test.{}", std::process::id()));
    let out = corral(&["man", "--out-dir", dir.to_str().unwrap()]);
    assert!(out.status.success());
    for page in [
        "corral.1",
        "corral-run.1",
        "corral-doctor.1",
        "corral-bench.1",
    ] {
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{page}");
    }
    let run = std::fs::read_to_string(dir.join("corral-run.1")).unwrap();
    assert!(run.contains("holder\\-state"), "flags are in the page");
    std::fs::remove_dir_all(&dir).unwrap();
}
