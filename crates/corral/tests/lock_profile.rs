//! The lock profile end to end: a C program with one hot lock taken in one
//! function runs under `corral run`; the report names the lock (its data
//! symbol), the caller (function and file:line from the debug info), and
//! its contended count agrees with the per-thread counters, which the
//! waiting code keeps apart from the profile.

mod common;

use std::path::PathBuf;
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("corral-lockprof-{}-{name}", std::process::id()))
}

/// Builds the fixture as `name` (one per test: they run in parallel);
/// `None` without a C compiler.
fn build_fixture(name: &str) -> Option<PathBuf> {
    let exe = scratch(name);
    common::build_hot_lock(&exe).then_some(exe)
}

/// The line of the fixture marked `HOT_LOCK_LINE`.
fn hot_lock_line() -> usize {
    let src = include_str!("fixtures/hot_lock.c");
    1 + src
        .lines()
        .position(|l| l.contains("HOT_LOCK_LINE"))
        .unwrap()
}

/// One `corral run` at a time: two contended programs on a 2-CPU machine
/// each see less contention than alone.
static ONE_RUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn names_the_hot_lock_and_its_caller_and_counts_as_the_threads_do() {
    let _one = ONE_RUN.lock().unwrap_or_else(|p| p.into_inner());
    let Some(exe) = build_fixture("hot_lock") else {
        eprintln!("no C compiler: skipped");
        return;
    };
    let report = scratch("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .env("CORRAL_PRELOAD", common::preload())
        .args([
            "run",
            "--policy",
            "none",
            "--load-after-contended",
            "0",
            "--per-thread",
            "--report",
        ])
        .arg(&report)
        .arg("--")
        .arg(&exe)
        .args(["4", "50000"])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&exe);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "40000000");
    let doc = common::read_json(&report);
    std::fs::remove_file(&report).unwrap();
    assert_eq!(doc["lock_profile"], true);
    let locks = doc["locks"].as_array().unwrap();
    assert!(!locks.is_empty(), "no contention seen: {stderr}");
    let top = &locks[0];
    assert_eq!(top["symbol"], "hot_lock+0x0", "{top}");
    assert_eq!(top["kind"], "mutex");
    let caller = &top["callers"][0];
    assert_eq!(caller["function"], "take_hot_lock", "{top}");
    let location = caller["location"].as_str().unwrap();
    assert!(
        location.ends_with(&format!("hot_lock.c:{}", hot_lock_line())),
        "{location}"
    );
    // The table on stderr names them too.
    assert!(
        stderr.contains("hot_lock+0x0") && stderr.contains("take_hot_lock"),
        "{stderr}"
    );
    // Every contended acquisition is in the profile once: the threads'
    // own counters (kept by the waiting code) sum to the same.
    let by_locks: u64 = locks.iter().map(|l| l["contended"].as_u64().unwrap()).sum();
    let by_threads: u64 = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["contended"].as_u64().unwrap())
        .sum();
    assert_eq!(by_locks, by_threads);
}

#[test]
fn names_come_from_the_symbol_table_without_debug_info() {
    let _one = ONE_RUN.lock().unwrap_or_else(|p| p.into_inner());
    let exe = scratch("short_names");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/short_names.c");
    cc(&[
        "-O1",
        "-g0",
        "-pthread",
        "-o",
        exe.to_str().unwrap(),
        src.to_str().unwrap(),
    ]);
    let (lock, caller) = top_lock_of(&exe, "short_names");
    let _ = std::fs::remove_file(&exe);
    assert_eq!(lock, "m+0x0");
    assert!(caller.starts_with("w+0x"), "{caller}");
}

/// Runs `exe` under corral; the top lock's symbol and its first caller.
fn top_lock_of(exe: &std::path::Path, tag: &str) -> (String, String) {
    let report = scratch(&format!("{tag}.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .env("CORRAL_PRELOAD", common::preload())
        .args(["run", "--policy", "none", "--load-after-contended", "0"])
        .arg("--report")
        .arg(&report)
        .arg("--")
        .arg(exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = common::read_json(&report);
    std::fs::remove_file(&report).unwrap();
    let top = &doc["locks"][0];
    (
        top["symbol"].as_str().unwrap_or_default().to_string(),
        top["callers"][0]["function"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

fn cc(args: &[&str]) {
    let ok = Command::new("cc")
        .args(args)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "cc {args:?}");
}

#[test]
fn names_in_a_shared_library_a_non_pie_program_and_a_stripped_one() {
    let _one = ONE_RUN.lock().unwrap_or_else(|p| p.into_inner());
    let dir = scratch("names");
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/short_names.c");
    let src = src.to_str().unwrap();
    // The lock and its caller in a shared library, no debug info.
    std::fs::write(
        dir.join("lib.c"),
        "#include <pthread.h>\n\
         pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;\n\
         static volatile long n;\n\
         __attribute__((noinline)) void lib_work(void) {\n\
           for (int i = 0; i < 200000; i++) { pthread_mutex_lock(&lib_lock); n++; \
           pthread_mutex_unlock(&lib_lock); }\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("main.c"),
        "#include <pthread.h>\nvoid lib_work(void);\n\
         static void *w(void *a) { lib_work(); return a; }\n\
         int main(void) { pthread_t t[4]; for (int i = 0; i < 4; i++) \
         pthread_create(&t[i], 0, w, 0); for (int i = 0; i < 4; i++) \
         pthread_join(t[i], 0); return 0; }\n",
    )
    .unwrap();
    cc(&[
        "-O1",
        "-g0",
        "-fPIC",
        "-shared",
        "-o",
        &path("libwork.so"),
        &path("lib.c"),
    ]);
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let libdir = format!("-L{}", dir.display());
    cc(&[
        "-O1",
        "-g0",
        "-pthread",
        "-o",
        &path("main"),
        &path("main.c"),
        &libdir,
        "-lwork",
        &rpath,
    ]);
    let (lock, caller) = top_lock_of(&dir.join("main"), "shared");
    assert_eq!(lock, "lib_lock+0x0");
    assert!(caller.starts_with("lib_work+0x"), "{caller}");
    // Not position-independent: addresses are the file's own.
    cc(&[
        "-O1",
        "-g0",
        "-no-pie",
        "-pthread",
        "-o",
        &path("nopie"),
        src,
    ]);
    let (lock, caller) = top_lock_of(&dir.join("nopie"), "nopie");
    assert_eq!(lock, "m+0x0");
    assert!(caller.starts_with("w+0x"), "{caller}");
    // Stripped: no name to give (the table shows the address), and the
    // caller as the file and offset of its return address.
    cc(&["-O1", "-g0", "-s", "-pthread", "-o", &path("stripped"), src]);
    let (lock, caller) = top_lock_of(&dir.join("stripped"), "stripped");
    assert_eq!(lock, "", "no symbol");
    assert!(caller.starts_with("stripped+0x"), "{caller}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn no_lock_profile_keeps_none() {
    let _one = ONE_RUN.lock().unwrap_or_else(|p| p.into_inner());
    let Some(exe) = build_fixture("hot_lock_off") else {
        return;
    };
    let report = scratch("off.json");
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .env("CORRAL_PRELOAD", common::preload())
        .args([
            "run",
            "--policy",
            "none",
            "--load-after-contended",
            "0",
            "--no-lock-profile",
            "--report",
        ])
        .arg(&report)
        .arg("--")
        .arg(&exe)
        .args(["4", "20000"])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&exe);
    assert!(out.status.success());
    let doc = common::read_json(&report);
    std::fs::remove_file(&report).unwrap();
    assert_eq!(doc["lock_profile"], false);
    assert_eq!(doc["locks"].as_array().unwrap().len(), 0);
}
