//! `corral run` from the outside: bad input is one line and exit 2 before
//! the program starts; a run passes the program's exit code through and
//! writes the report.

mod common;

use std::process::Command;

fn corral() -> Command {
    Command::new(env!("CARGO_BIN_EXE_corral"))
}

fn one_line_error(args: &[&str]) -> String {
    let out = corral().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    assert!(out.stdout.is_empty(), "nothing may run: {args:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line for {args:?}: {err}"
    );
    err
}

#[test]
fn bad_input_is_one_line_before_the_program_starts() {
    // `echo` would print if it ran.
    assert!(
        one_line_error(&["run", "--policy", "fast", "--", "echo", "ran"]).contains("none, lca")
    );
    assert!(one_line_error(&["run", "--lock", "bakery", "--", "echo", "ran"]).contains("ticket"));
    assert!(
        one_line_error(&["run", "--threshold", "1.5", "--", "echo", "ran"]).contains("--threshold")
    );
    assert!(
        one_line_error(&["run", "--confirmations", "0", "--", "echo", "ran"])
            .contains("--confirmations")
    );
    assert!(one_line_error(&["run", "--", "no-such-program-corral"]).contains("not found"));
    // Kernel-lock flags without --kernel-locks did nothing, silently.
    for flag in ["--observe-only", "--paper-2013", "--no-follow-forks"] {
        let err = one_line_error(&["run", flag, "--", "echo", "ran"]);
        assert!(
            err.contains(flag) && err.contains("--kernel-locks"),
            "{err}"
        );
    }
    let err = one_line_error(&["run", "--kernel-lock-kinds", "all", "--", "echo", "ran"]);
    assert!(err.contains("--kernel-lock-kinds"), "{err}");
}

#[test]
fn bench_counter_rejects_an_unknown_policy() {
    assert!(one_line_error(&["bench", "counter", "--policy", "glibc,fast"]).contains("fast"));
}

/// The preload library beside the test's `corral`, built by the caller
/// (`cargo build -p corral-preload`); `None` if it is not there.
fn preload_beside_corral() -> Option<std::path::PathBuf> {
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_corral"));
    let lib = exe.parent()?.join("libcorral_preload.so");
    lib.is_file().then_some(lib)
}

#[test]
fn a_run_passes_the_exit_code_through_and_writes_the_report() {
    let Some(lib) = preload_beside_corral() else {
        panic!("build the preload library first: cargo build -p corral-preload");
    };
    let report = std::env::temp_dir().join(format!("corral-run-test.{}.json", std::process::id()));
    let out = corral()
        .env("CORRAL_PRELOAD", &lib)
        .args([
            "run",
            "--policy",
            "none",
            "--load-after-contended",
            "0",
            "--report",
        ])
        .arg(&report)
        .args(["--", "sh", "-c", "echo hello; exit 7"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("corral: policy none"));
    let doc = common::read_json(&report);
    std::fs::remove_file(&report).unwrap();
    assert_eq!(doc["exit_code"], 7);
    assert_eq!(doc["policy"], "none");
    assert!(doc["threads"].is_array() && doc["ssc"].is_array() && doc["decisions"].is_array());
}

#[test]
fn by_default_a_program_that_never_contends_runs_on_glibcs_locks_and_is_told_so() {
    let Some(lib) = preload_beside_corral() else {
        panic!("build the preload library first: cargo build -p corral-preload");
    };
    let report =
        std::env::temp_dir().join(format!("corral-run-deferred.{}.json", std::process::id()));
    for (lock, expected) in [(None, 1000), (Some("ticket"), 0)] {
        let mut cmd = corral();
        cmd.env("CORRAL_PRELOAD", &lib).arg("run");
        if let Some(lock) = lock {
            cmd.args(["--lock", lock]);
        }
        let out = cmd
            .arg("--report")
            .arg(&report)
            .args(["--", "sh", "-c", "echo hello; exit 7"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(7));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n");
        let err = String::from_utf8_lossy(&out.stderr);
        let doc = common::read_json(&report);
        std::fs::remove_file(&report).unwrap();
        assert_eq!(doc["load_after_contended"], expected, "{lock:?}");
        if expected > 0 {
            // The shell handed no mutex to a waiter: corral never loaded.
            assert_eq!(doc["runtime"], "no-stats");
            assert!(
                err.contains("a waiting thread 1000 times (--load-after-contended"),
                "{err}"
            );
        } else {
            // A spinning lock loads at the first call.
            assert_ne!(doc["runtime"], "no-stats", "{err}");
        }
    }
}

#[test]
fn the_programs_processes_inherit_one_tsc_calibration() {
    // Each process used to spin 250 us calibrating its own; they now take
    // corral run's, handed down in the environment (and sane).
    let Some(lib) = preload_beside_corral() else {
        panic!("build the preload library first: cargo build -p corral-preload");
    };
    let out = corral()
        .env("CORRAL_PRELOAD", &lib)
        .args(["run", "--quiet", "--", "sh", "-c", "echo $CORRAL_TSC_Q32"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let q32: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    // 0.05 to 10 ns per tick: what the preload accepts.
    assert!(((1u64 << 32) / 20..=10 << 32).contains(&q32), "{q32}");
}

/// The children of process `pid` (its main thread's).
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Whether `pid` has ended (gone, or a zombie nobody reaped yet).
fn has_ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

/// Polls `cond` every 10 ms for up to 20 s (an event awaited, not a timing).
fn eventually(cond: impl Fn() -> bool) -> bool {
    (0..2000).any(|_| {
        let ok = cond();
        if !ok {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        ok
    })
}

#[test]
fn the_program_dies_with_corral_when_corral_is_killed_outright() {
    // corral's watcher kills the program. A dynamically linked program is
    // started without a step between fork and exec, and the preloaded
    // library waits at load until the watcher holds it; a static one loads
    // no library and waits between fork and exec.
    let lib = common::preload();
    let dir = std::env::temp_dir().join(format!("corral-orphan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dynamic = dir.join("sleeper");
    let fixed = dir.join("sleeper-static");
    assert!(
        common::build_fixture("sleeper.c", &dynamic),
        "needs a C compiler (cc)"
    );
    assert!(
        common::build_fixture_with("sleeper.c", &fixed, &["-static"]),
        "needs a C compiler with a static libc (libc6-dev)"
    );
    for program in [&dynamic, &fixed] {
        let mut run = corral()
            .env("CORRAL_PRELOAD", &lib)
            .args(["run", "--quiet", "--"])
            .arg(program)
            .spawn()
            .unwrap();
        // Its exec done: the child runs the program, not a copy of corral.
        let runs_program = |k: &u32| {
            std::fs::read_link(format!("/proc/{k}/exe")).is_ok_and(|exe| exe == **program)
        };
        // (corral's other child is its watcher.)
        assert!(eventually(|| children_of(run.id())
            .iter()
            .any(runs_program)));
        let kid = *children_of(run.id())
            .iter()
            .find(|k| runs_program(k))
            .expect("corral's child");
        run.kill().unwrap(); // SIGKILL: corral cannot pass anything on
        run.wait().unwrap();
        assert!(
            eventually(|| has_ended(kid)),
            "{} (pid {kid}) outlived corral",
            program.display()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Whether this machine counts LLC references (a PMU; a VM usually has none).
fn has_pmu() -> bool {
    use corral_locks::sys::perf::{CacheEvent, Counter};
    Counter::open(0, CacheEvent::References).is_ok()
}

#[test]
fn ff_without_a_pmu_says_so_in_one_line_and_reports_null_not_zero() {
    let Some(lib) = preload_beside_corral() else {
        panic!("build the preload library first: cargo build -p corral-preload");
    };
    let report = std::env::temp_dir().join(format!("corral-ff-pmu.{}.json", std::process::id()));
    let out = corral()
        .env("CORRAL_PRELOAD", &lib)
        .args(["run", "--policy", "ff", "--ff-period-ms", "100", "--report"])
        .arg(&report)
        .args(["--", "sleep", "0.6"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let said = err
        .lines()
        .filter(|l| l.contains("no LLC miss ratio"))
        .count();
    let doc = common::read_json(&report);
    std::fs::remove_file(&report).unwrap();
    let program = &doc["ff"]["programs"][0];
    let periods = program["periods"].as_array().unwrap();
    assert!(!periods.is_empty(), "{err}");
    if has_pmu() {
        assert_eq!(said, 0, "{err}");
        assert_eq!(program["miss"]["state"], "measured");
    } else {
        // Said once, while the program runs, with what still works.
        assert_eq!(said, 1, "{err}");
        assert!(err.contains("1 - lock contention alone"), "{err}");
        assert_eq!(program["miss"]["state"], "unavailable");
        for p in periods {
            assert!(p["miss_ratio"].is_null(), "a silent zero: {p}");
        }
    }
}

#[test]
fn threads_that_yield_inside_their_critical_sections_are_not_confined() {
    // Confined, each yield inside the lock hands the SSC core to a waiter
    // that finds the lock taken (sysbench threads lost 5-25% so).
    let Some(lib) = preload_beside_corral() else {
        panic!("build the preload library first: cargo build -p corral-preload");
    };
    let dir = std::env::temp_dir().join(format!("corral-yield-test.{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("yield_lock");
    assert!(
        common::build_fixture("yield_lock.c", &exe),
        "cc failed on yield_lock.c"
    );
    let report = dir.join("report.json");
    // Loaded at the first call: with the default deferred load, threads
    // that finished before it were not in the report (issue 46, row 7).
    let out = corral()
        .env("CORRAL_PRELOAD", &lib)
        .args(["run", "--load-after-contended", "0", "--report"])
        .arg(&report)
        .arg("--")
        .arg(&exe)
        .args(["8", "20000"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "160000\n");
    let doc = common::read_json(&report);
    std::fs::remove_dir_all(&dir).unwrap();
    let threads = doc["threads"].as_array().unwrap();
    let intensive: Vec<_> = threads
        .iter()
        .filter(|t| t["lock_intensive"] == true)
        .collect();
    assert!(intensive.is_empty(), "confined: {intensive:?}");
    // Every yield counted, through sched_yield (even threads) and glibc's
    // pthread_yield (odd ones). Whether a thread's windows would qualify
    // it without its yields varies from run to run (few, long waits: the
    // hand-off test is near its line), so which threads were kept is not
    // asserted; that nothing was confined is.
    // The monitor reads the counts each round: a thread's yields after its
    // last round before it exits are not seen, so "most" is asserted (an
    // uncounted path would show none).
    assert_eq!(threads.len(), 8, "report: {}", doc["threads"]);
    assert_eq!(doc["thread_count"]["made"], 9, "{}", doc["thread_count"]);
    for t in threads {
        let yields = t["yields"].as_u64().unwrap_or(0);
        assert!(
            (10_000..=20_000).contains(&yields),
            "a thread's yields: {t}"
        );
    }
    // Nothing qualified, so nothing searched.
    assert!(
        doc["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["event"] != "decision"),
        "no search ran"
    );
}

#[test]
fn threads_that_ended_before_a_deferred_load_are_counted_apart() {
    let Some(lib) = preload_beside_corral() else {
        panic!("build the preload library first: cargo build -p corral-preload");
    };
    let dir = std::env::temp_dir().join(format!("corral-early-test.{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("early_threads");
    assert!(
        common::build_fixture("early_threads.c", &exe),
        "cc failed on early_threads.c"
    );
    let report = dir.join("report.json");
    let out = corral()
        .env("CORRAL_PRELOAD", &lib)
        .args(["run", "--load-after-contended", "1", "--report"])
        .arg(&report)
        .arg("--")
        .arg(&exe)
        .arg("6")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "600006\n");
    let doc = common::read_json(&report);
    std::fs::remove_dir_all(&dir).unwrap();
    let count = &doc["thread_count"];
    let listed = doc["threads"].as_array().unwrap().len() as u64;
    // The main thread, 6 brief threads, 2 contending ones.
    assert_eq!(count["made"], 9, "{count}");
    // The brief ones were made (and ended) before the load: whether the
    // contenders were too depends on when the first hand-off came.
    let before = count["made_before_load"].as_u64().unwrap();
    assert!((6..=8).contains(&before), "{count}");
    assert_eq!(count["in_report"], listed, "{count}");
    assert!(
        listed <= 3,
        "a brief thread in the report: {}",
        doc["threads"]
    );
    assert_eq!(count["not_in_report"], 9 - listed, "{count}");
    assert!(count["cpu_ms_not_in_report"].as_f64().unwrap() >= 0.0);
    assert!(
        stderr.contains(&format!("not in the report: {}", 9 - listed)),
        "the summary says it: {stderr}"
    );
}
