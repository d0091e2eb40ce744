//! `corral top` driven in tmux (an 80x24 terminal): it shows a running
//! program's top lock and caller, and `q` quits.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

fn tmux(sock: &str, args: &[&str]) -> std::process::Output {
    Command::new("tmux")
        .arg("-L")
        .arg(sock)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn shows_the_hot_lock_and_its_caller_and_quits_on_q() {
    let have = |cmd: &str| Command::new(cmd).arg("-V").output().is_ok();
    if !have("tmux") {
        eprintln!("no tmux (scripts/ci-deps.sh installs it): skipped");
        return;
    }
    let exe = std::env::temp_dir().join(format!("corral-top-{}", std::process::id()));
    if !common::build_hot_lock(&exe) {
        eprintln!("no C compiler: skipped");
        return;
    }
    let corral = env!("CARGO_BIN_EXE_corral");
    let lib = common::preload();
    let mut prog = Command::new(corral)
        .env("CORRAL_PRELOAD", &lib)
        .args([
            "run",
            "--policy",
            "none",
            "--quiet",
            "--load-after-contended",
            "0",
            "--",
        ])
        .arg(&exe)
        .args(["4", "50000", "wait"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The program has joined its threads and holds still: its locks are final.
    let mut out = BufReader::new(prog.stdout.take().unwrap());
    let (mut total, mut pid) = (String::new(), String::new());
    out.read_line(&mut total).unwrap();
    out.read_line(&mut pid).unwrap();
    let pid = pid.trim().strip_prefix("pid ").unwrap().to_string();

    let sock = format!("corral-top-test-{}", std::process::id());
    let cmd = format!("exec {corral} top --interval-ms 100 --pid {pid}");
    let started = tmux(
        &sock,
        &[
            "new-session",
            "-d",
            "-x",
            "80",
            "-y",
            "24",
            "-s",
            "top",
            &cmd,
        ],
    );
    assert!(started.status.success(), "{started:?}");
    let mut screen = String::new();
    for _ in 0..200 {
        screen = String::from_utf8_lossy(&tmux(&sock, &["capture-pane", "-p", "-t", "top"]).stdout)
            .into_owned();
        if screen.contains("take_hot_lock") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let shown =
        screen.contains(&pid) && screen.contains("take_hot_lock") && screen.contains("mutex");
    assert!(screen.lines().all(|l| l.chars().count() <= 80));
    tmux(&sock, &["send-keys", "-t", "top", "q"]);
    let mut quit = false;
    for _ in 0..200 {
        if !tmux(&sock, &["has-session", "-t", "top"]).status.success() {
            quit = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    tmux(&sock, &["kill-server"]);
    prog.stdin.take().unwrap().write_all(b"go\n").unwrap();
    assert!(prog.wait().unwrap().success());
    let _ = std::fs::remove_file(&exe);
    assert!(shown, "top did not show pid {pid}'s lock:\n{screen}");
    assert!(quit, "q did not quit");
}
