//! Under a parking algorithm (futex, adaptive: the default) corral's
//! mutexes keep glibc's layout, and its condition variables are glibc's
//! own: the fixture's printed facts about both read the same as without
//! corral. glibc's condition variable relocks the mutex inside its wait
//! and asserts that nobody owns a lock word it takes; corral's unlock must
//! leave none (without that, the fixture aborts in glibc's assertion).

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `exe` with the preload library in `LD_PRELOAD` and `CORRAL_LOCK`
/// set to `lock` (left unset for `None`: the default).
fn under_preload(exe: &Path, lock: Option<&str>) -> Output {
    let mut cmd = Command::new(exe);
    cmd.env("LD_PRELOAD", common::preload())
        .env_remove("CORRAL_LOCK");
    if let Some(lock) = lock {
        cmd.env("CORRAL_LOCK", lock);
    }
    cmd.output().unwrap()
}

#[test]
fn a_parking_algorithms_mutexes_and_condition_variables_look_as_glibcs() {
    let dir = std::env::temp_dir().join(format!("corral-glibc-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("glibc_layout");
    if !common::build_fixture("glibc_layout.c", &exe) {
        eprintln!("skipped: no C compiler");
        return;
    }
    let glibc = Command::new(&exe).output().unwrap();
    assert!(glibc.status.success());
    let expected = stdout(&glibc);
    assert!(expected.contains("broadcast: 3 of 3 woke"), "{expected}");

    for lock in [None, Some("futex"), Some("adaptive")] {
        let out = under_preload(&exe, lock);
        assert!(
            out.status.success(),
            "{lock:?}: {}{}",
            stdout(&out),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(stdout(&out), expected, "{lock:?}");
    }

    // Through `corral run` and its shim, as a user starts it: corral's
    // locks from the first call, by default from the 1000th contended
    // hand-off, and from the first one (switching mid-run).
    for load_after in [None, Some("0"), Some("1")] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_corral"));
        cmd.args(["run", "--quiet"]);
        if let Some(n) = load_after {
            cmd.args(["--load-after-contended", n]);
        }
        let out = cmd
            .arg("--")
            .arg(&exe)
            .env_remove("CORRAL_LOCK")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{load_after:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            stdout(&out),
            expected,
            "corral run, load after {load_after:?}"
        );
    }

    // A spinning algorithm keeps its own layout and condition variable:
    // the facts differ, the program still works.
    let out = under_preload(&exe, Some("ticket"));
    assert!(out.status.success());
    let spinning = stdout(&out);
    assert_ne!(spinning, expected);
    assert!(spinning.contains("broadcast: 3 of 3 woke"), "{spinning}");
    let _ = std::fs::remove_dir_all(&dir);
}
