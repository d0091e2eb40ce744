//! `corral bench apps` end to end on a tiny sweep: real sysbench and pigz
//! (scripts/ci-deps.sh installs them) under glibc, corral's default and one
//! `--lock`. Only the document's shape and that every point did work are
//! checked: tests never time things.

use std::process::Command;

/// The preload library beside the test's `corral` (built by the caller).
fn preload_beside_corral() -> std::path::PathBuf {
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_corral"));
    let lib = exe.parent().unwrap().join("libcorral_preload.so");
    assert!(
        lib.is_file(),
        "build the preload library first: cargo build -p corral-preload"
    );
    lib
}

/// `corral bench apps ARGS`, with the preload beside the test's corral.
fn bench_apps(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_corral"))
        .env("CORRAL_PRELOAD", preload_beside_corral())
        .args(["bench", "apps"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_tiny_sweep_reports_every_point_with_work_and_cpu() {
    let out = bench_apps(&[
        "--apps",
        "sysbench-mutex,pigz",
        "--threads",
        "1,2",
        "--locks",
        "default,mcs",
        "--duration-ms",
        "20",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "corral bench apps failed: {stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["threads"], serde_json::json!([1, 2]));
    assert_eq!(
        doc["configs"],
        serde_json::json!(["glibc", "default", "mcs"])
    );
    assert_eq!(doc["apps"].as_array().unwrap().len(), 2);
    assert!(doc["losses"].is_array());
    assert_eq!(doc["confirm_rounds"], 0);
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 2 * 2 * 3, "apps x threads x columns");
    for p in points {
        assert_eq!(p["status"], "ok", "{p}");
        assert!(p["throughput"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["cpu_s"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["wall_s"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["timed_s"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["ratio_vs_glibc"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["cpu_ratio_vs_glibc"].as_f64().unwrap() > 0.0, "{p}");
        assert!(
            p["unit"].is_string() && p["work"].as_u64().unwrap() > 0,
            "{p}"
        );
        assert!(p["confirmation"].is_null(), "no --confirm-rounds: {p}");
        let glibc = p["config"] == "glibc";
        assert_eq!(p["lock"].is_null(), glibc, "{p}");
        if glibc {
            assert_eq!(p["ratio_vs_glibc"], 1.0);
        }
    }
    let pigz = points.iter().find(|p| p["app"] == "pigz").unwrap();
    assert_eq!(pigz["unit"], "MB/s");
    assert!(
        stderr.contains("runs of about 20 ms"),
        "the estimate is said at the start: {stderr}"
    );
}

#[test]
fn unknown_names_are_one_line_naming_the_choices() {
    for (flag, value, allowed) in [
        ("--apps", "memcached", "sysbench-mutex"),
        ("--locks", "bakery", "default"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_corral"))
            .args(["bench", "apps", flag, value])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(
            err.contains(flag) && err.contains(value) && err.contains(allowed),
            "{err}"
        );
    }
}

#[test]
fn confirmation_rounds_without_an_interval_or_the_default_are_refused_before_running() {
    for (args, says) in [
        (&["--repeat", "4"][..], "needs --repeat 5 or more"),
        (&["--repeat", "5", "--locks", "mcs"][..], "no `default`"),
    ] {
        let out = bench_apps(&[&["--confirm-rounds", "4"][..], args].concat());
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--confirm-rounds 4") && err.contains(says),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains("runs of about"),
            "refused before running: {err}"
        );
    }
}

#[test]
fn a_pinned_sweep_says_where_it_ran() {
    let out = bench_apps(&[
        "--apps",
        "sysbench-mutex",
        "--threads",
        "2",
        "--locks",
        "default",
        "--duration-ms",
        "20",
        "--pin-cpus",
        "0",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "corral bench apps failed: {stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["pin_cpus"], serde_json::json!([0]));
    for p in doc["points"].as_array().unwrap() {
        assert_eq!(p["status"], "ok", "{p}");
        // On one CPU a program cannot use more CPU time than wall time;
        // two threads fighting for a mutex on two CPUs use up to twice it.
        let (cpu, wall) = (p["cpu_s"].as_f64().unwrap(), p["wall_s"].as_f64().unwrap());
        assert!(cpu <= wall * 1.05 + 0.005, "ran on more than one CPU: {p}");
    }
    assert!(stderr.contains("every run on CPUs 0"), "{stderr}");
}

#[test]
fn pinning_to_a_cpu_the_process_may_not_use_is_refused_before_running() {
    let out = bench_apps(&["--pin-cpus", "0,8191"]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("--pin-cpus 0,8191") && err.contains("may not run on CPUs 8191"),
        "{err}"
    );
}
