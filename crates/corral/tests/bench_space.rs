//! `corral bench space` end to end on tiny sweeps: the C program it builds
//! (with the system's `cc`) run under glibc, corral's default and a `--peer`.
//! Only the document's shape, that every run did work, that a seed draws
//! the same points and that printed points replay are checked: tests never
//! time things or compare rates.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A small point every column runs quickly.
const SMALL: &str =
    "threads=2,locks=1,skew=0.00,cs-ns=100,out-ns=100,inside=none,kind=mutex,read-share=0.00";

/// `corral bench space ARGS` as a command, with the preload beside the
/// test's corral.
fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_corral"));
    cmd.env("CORRAL_PRELOAD", common::preload())
        .args(["bench", "space"])
        .args(args);
    cmd
}

/// `corral bench space ARGS`.
fn bench_space(args: &[&str]) -> Output {
    command(args).output().unwrap()
}

/// `corral bench space ARGS --json`, which must succeed: its document.
fn bench_space_json(args: &[&str]) -> Value {
    let out = bench_space(&[args, &["--json"]].concat());
    assert!(
        out.status.success(),
        "corral bench space {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A fresh scratch directory of this test process.
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "corral-test-bench-space-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The points' printed forms, in order.
fn printed(doc: &Value) -> Vec<String> {
    doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["printed"].as_str().unwrap().to_owned())
        .collect()
}

/// The column `name` of point `p`.
fn arm<'a>(p: &'a Value, name: &str) -> &'a Value {
    p["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == name)
        .unwrap_or_else(|| panic!("no column {name}: {p}"))
}

/// Every run of column `a` did work and took CPU time of its own.
fn assert_runs_did_work(a: &Value, rounds: usize) {
    let runs = a["runs"].as_array().unwrap();
    assert_eq!(runs.len(), rounds, "one run a round: {a}");
    for r in runs {
        assert!(r.get("failed").is_none(), "{a}");
        assert!(r["rate"].as_f64().unwrap() > 0.0, "{a}");
        assert!(r["ops"].as_u64().unwrap() > 0, "{a}");
        assert!(r["cpu_s"].as_f64().unwrap() >= 0.0, "{a}");
    }
    assert!(a["rate"].as_f64().unwrap() > 0.0, "{a}");
    assert!(a["ratio"].as_f64().unwrap() > 0.0, "{a}");
}

#[test]
fn a_tiny_sweep_reports_every_column_and_its_points_replay() {
    let child = command(&[
        "--points",
        "3",
        "--seed",
        "11",
        "--rounds",
        "1",
        "--duration-ms",
        "20",
        "--json",
    ])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "corral bench space failed: {stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["seed"], 11);
    assert_eq!(doc["rounds"], 1);
    assert_eq!(doc["duration_ms"], 20);
    assert_eq!(doc["arms"], serde_json::json!(["glibc", "default"]));
    assert_eq!(doc["skipped"], 0);
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    for (i, p) in points.iter().enumerate() {
        assert_eq!(p["index"], i, "{p}");
        let names: Vec<&str> = p["arms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["arm"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["glibc", "default"], "{p}");
        for a in p["arms"].as_array().unwrap() {
            assert_runs_did_work(a, 1);
            assert_eq!(a["verdict"], "unsure", "one round has no interval: {a}");
        }
        assert_eq!(arm(p, "glibc")["ratio"], 1.0);
    }
    assert!(stderr.contains("verdicts are 'unsure'"), "{stderr}");
    // The program was built in a scratch directory of corral's own, which
    // goes with it.
    let built = std::env::temp_dir().join(format!("corral-bench-space.{pid}"));
    assert!(!built.exists(), "{} left behind", built.display());

    // Every printed point replays as itself: the same parameters, printed
    // the same.
    for p in points {
        let printed = p["printed"].as_str().unwrap();
        let replay =
            bench_space_json(&["--point", printed, "--rounds", "1", "--duration-ms", "20"]);
        assert!(replay["seed"].is_null(), "a replay has no seed: {replay}");
        let again = replay["points"].as_array().unwrap();
        assert_eq!(again.len(), 1, "{replay}");
        assert_eq!(again[0]["printed"], printed);
        assert_eq!(again[0]["point"], p["point"]);
        for a in again[0]["arms"].as_array().unwrap() {
            assert_runs_did_work(a, 1);
        }
    }
}

#[test]
fn a_seed_draws_the_same_points_and_another_seed_others() {
    let draw = |seed: &str| {
        printed(&bench_space_json(&[
            "--points",
            "4",
            "--seed",
            seed,
            "--rounds",
            "1",
            "--duration-ms",
            "10",
        ]))
    };
    let first = draw("5");
    assert_eq!(first.len(), 4);
    assert_eq!(first, draw("5"), "the same seed, the same points");
    let other = draw("6");
    assert_eq!(other.len(), 4);
    assert_ne!(first, other, "another seed, other points");
}

/// A peer library that does nothing to locks: its constructor appends a
/// line to `$CORRAL_TEST_PEER_MARK`, so each process it is loaded into
/// leaves a mark.
fn nop_peer(dir: &Path) -> PathBuf {
    let src = dir.join("nop.c");
    std::fs::write(
        &src,
        r#"#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void corral_test_nop_loaded(void) {
    const char *mark = getenv("CORRAL_TEST_PEER_MARK");
    if (!mark)
        return;
    int fd = open(mark, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
        (void)!write(fd, "loaded\n", 7);
        close(fd);
    }
}
int corral_test_nop_unused(void) { return 0; }
"#,
    )
    .unwrap();
    let lib = dir.join("libnop.so");
    let out = Command::new(std::env::var_os("CC").unwrap_or_else(|| "cc".into()))
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    lib
}

#[test]
fn a_peer_is_a_column_preloaded_into_its_own_runs() {
    let dir = scratch("peer");
    let lib = nop_peer(&dir);
    let mark = dir.join("mark");
    let peer = format!("nop={}", lib.display());
    let out = command(&[
        "--point",
        SMALL,
        "--peer",
        &peer,
        "--rounds",
        "2",
        "--duration-ms",
        "10",
        "--json",
    ])
    .env("CORRAL_TEST_PEER_MARK", &mark)
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "corral bench space failed: {stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["arms"], serde_json::json!(["glibc", "default", "nop"]));
    let p = &doc["points"][0];
    assert_eq!(p["printed"], SMALL);
    for name in ["glibc", "default", "nop"] {
        assert_runs_did_work(arm(p, name), 2);
    }
    let d = doc["distribution"].as_array().unwrap();
    assert!(d.iter().any(|d| d["arm"] == "nop"), "{doc}");
    // Loaded once into each of the peer's runs and into no other column's.
    let marks = std::fs::read_to_string(&mark).unwrap_or_default();
    assert_eq!(marks.lines().count(), 2, "{marks:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn five_rounds_give_every_column_an_interval() {
    let doc = bench_space_json(&["--point", SMALL, "--rounds", "5", "--duration-ms", "10"]);
    let p = &doc["points"][0];
    let default = arm(p, "default");
    assert_runs_did_work(default, 5);
    let interval = default["interval"].as_array().unwrap();
    assert_eq!(interval.len(), 2, "{default}");
    let (lo, hi) = (interval[0].as_f64().unwrap(), interval[1].as_f64().unwrap());
    assert!(0.0 < lo && lo <= hi, "{default}");
    assert_ne!(default["verdict"], "unsure", "{default}");
    assert_ne!(default["verdict"], "failed", "{default}");
}

#[test]
fn bad_input_is_refused_in_one_line_naming_the_part() {
    let too_many = SMALL.replace("threads=2", "threads=65");
    for (args, says) in [
        (vec!["--point", too_many.as_str()], "threads=65"),
        (vec!["--point", "threads=2,locks=1"], "skew is missing"),
        (vec!["--peer", "glibc=/bin/sh"], "built-in"),
        (vec!["--peer", "x=/no/such.so"], "no such library"),
        (vec!["--points", "0"], "--points"),
        (vec!["--rounds", "0"], "--rounds"),
    ] {
        let out = bench_space(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: a usage error");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            !err.contains("bench space:"),
            "refused before running: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn the_report_file_is_the_document_json_prints() {
    let dir = scratch("report");
    let file = dir.join("space.json");
    let file_arg = file.to_str().unwrap();
    let args = [
        "--points",
        "2",
        "--seed",
        "3",
        "--rounds",
        "1",
        "--duration-ms",
        "10",
        "--report",
        file_arg,
    ];
    let printed_doc = bench_space_json(&args);
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(printed(&written).len(), 2);
    assert_eq!(printed(&written), printed(&printed_doc));
    assert_eq!(written, printed_doc, "the very same document");

    // Without --json the table is printed, and the file is still written.
    std::fs::remove_file(&file).unwrap();
    let out = bench_space(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("the default's worst points"), "{table}");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(printed(&written), printed(&printed_doc), "the same seed");
    let _ = std::fs::remove_dir_all(&dir);
}
