//! `--policy lca,ff` end to end (issue 11, item 4): one run of a real
//! contended program both confines its lock-intensive threads (the SSC
//! search) and gives every thread FF's quantum, each on its own knob.

mod common;

use std::process::Command;

#[test]
fn lca_and_ff_act_together_on_one_real_program() {
    let dir = std::env::temp_dir().join(format!("corral-lca-ff.{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("hot_lock");
    if !common::build_hot_lock(&exe) {
        panic!("no C compiler: scripts/ci-deps.sh installs gcc");
    }
    let report = dir.join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .env("CORRAL_PRELOAD", common::preload())
        .args([
            "run",
            "--load-after-contended",
            "0",
            "--policy",
            "lca,ff",
            "--ff-period-ms",
            "100",
            "--report",
        ])
        .arg(&report)
        .arg("--")
        .arg(&exe)
        // Six threads on one hot lock, several FF periods long.
        .args(["6", "600000"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "720000000");
    let doc = common::read_json(&report);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(doc["policies"], "lca,ff", "{err}");

    // lca: workers qualified as lock intensive and the search decided.
    let events = doc["decisions"].as_array().unwrap();
    let count = |kind: &str| events.iter().filter(|e| e["event"] == kind).count();
    assert!(count("qualified") >= 2, "{err}");
    assert!(count("decision") >= 1, "{err}");
    let intensive = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["lock_intensive"] == true)
        .count();
    assert!(intensive >= 2, "{err}");

    // ff: periods measured from the same locks, the factor from them.
    let program = &doc["ff"]["programs"][0];
    let periods = program["periods"].as_array().unwrap();
    assert!(!periods.is_empty(), "{err}");
    assert!(
        periods
            .iter()
            .any(|p| p["lock_contention"].as_f64().unwrap() > 0.1),
        "FF must see the contention lca acts on: {err}"
    );
    if program["slice"]["state"] == "applied" {
        // Where the kernel takes slices, a quantum FF applies (rather than
        // keeping the kernel's default) reaches every thread alive then
        // (workers exit near the end), read back.
        let applied: Vec<_> = periods
            .iter()
            .filter(|p| p["slice"]["kind"] == "ms")
            .collect();
        for p in &applied {
            assert_eq!(p["threads_at_slice"], p["threads"], "{p}");
        }
        // A new quantum is written to every thread, unless the kernel's
        // clamp makes it the slice they hold (120 ms after 100 ms: both
        // read back as 100 ms).
        for w in periods.windows(2) {
            let (before, p) = (&w[0], &w[1]);
            if p["changed"] == true
                && p["slice"]["kind"] == "ms"
                && before["slice_ns"] != p["slice_ns"]
            {
                assert_eq!(p["applied"], p["threads"], "{p}");
            }
        }
        // The first quantum applied reached the six workers.
        if let Some(first) = applied.iter().find(|p| p["changed"] == true) {
            assert!(first["applied"].as_u64().unwrap() >= 6, "{first}");
        }
    }
}
