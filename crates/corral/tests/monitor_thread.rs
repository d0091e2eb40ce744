//! corral's own monitor thread: started at the program's first waits that
//! call for a look (after its first thread), and run off the SSC while the
//! program's threads are confined, so that its ticks never preempt the lock
//! holder every confined waiter is queued behind.

mod common;

use std::collections::BTreeSet;
use std::process::{Command, Stdio};

/// `corral run --quiet` on the library under test.
fn corral_run() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_corral"));
    cmd.env("CORRAL_PRELOAD", common::preload()).args([
        "run",
        "--quiet",
        "--load-after-contended",
        "0",
    ]);
    cmd
}

/// A `Cpus_allowed_list` value ("0-1,4") as a set.
fn cpu_list(s: &str) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap()),
            None => {
                out.insert(part.parse::<u32>().unwrap());
            }
        }
    }
    out
}

/// Each task of process `pid` as (comm, allowed CPUs); tasks that end while
/// being read are left out.
fn tasks(pid: u32) -> Vec<(String, BTreeSet<u32>)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|t| {
            let status = std::fs::read_to_string(t.path().join("status")).ok()?;
            let field = |name: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .map(str::trim)
                    .map(str::to_string)
            };
            Some((field("Name:")?, cpu_list(&field("Cpus_allowed_list:")?)))
        })
        .collect()
}

/// The pid of a child of `parent` named `comm`, if one runs.
fn child_named(parent: u32, comm: &str) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // "pid (comm) state ppid ...": comm may hold spaces, so split after ')'.
        let (head, tail) = stat.rsplit_once(')')?;
        let name = head.split_once('(')?.1;
        let ppid: u32 = tail.split_whitespace().nth(1)?.parse().ok()?;
        (ppid == parent && name == comm).then_some(pid)
    })
}

#[test]
fn the_monitor_runs_off_the_cores_of_confined_threads() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        eprintln!("skipped: one CPU, so no core is left off the SSC");
        return;
    }
    let dir = std::env::temp_dir().join(format!("corral-monitor-place.{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("hot_lock");
    assert!(common::build_hot_lock(&exe), "cc failed on hot_lock.c");
    // --max-ssc 1: the search never takes every core, so the program's 8
    // hot threads are confined to one CPU once they qualify.
    let mut child = corral_run()
        .args(["--max-ssc", "1", "--"])
        .arg(&exe)
        .args(["8", "4000000"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let (mut confined_samples, mut apart) = (0u32, 0u32);
    let mut program = None;
    while child.try_wait().unwrap().is_none() {
        program = program.or_else(|| child_named(child.id(), "hot_lock"));
        if let Some(pid) = program {
            let seen = tasks(pid);
            let monitor = seen.iter().find(|(name, _)| name == "corral-monitor");
            // The SSC: the one-CPU set most of the program's threads are
            // confined to (on 2 CPUs the general set is one CPU too).
            let mut counts = std::collections::BTreeMap::<u32, u32>::new();
            for (_, set) in seen.iter().filter(|(name, _)| name != "corral-monitor") {
                if let [cpu] = set.iter().copied().collect::<Vec<_>>()[..] {
                    *counts.entry(cpu).or_default() += 1;
                }
            }
            let ssc = counts.iter().max_by_key(|(_, n)| **n).map(|(cpu, _)| *cpu);
            if let (Some((_, mon)), Some(ssc)) = (monitor, ssc) {
                confined_samples += 1;
                if !mon.contains(&ssc) {
                    apart += 1;
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(3));
    }
    assert!(child.wait().unwrap().success());
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        confined_samples > 0,
        "no thread was seen confined (program seen: {program:?})"
    );
    // The monitor moves itself in the round that confines; a sample read
    // between a thread's move and its own may see them together, so most,
    // not all, samples are asserted (before the fix: none).
    assert!(
        apart * 2 > confined_samples,
        "the monitor shared the SSC in {} of {confined_samples} samples",
        confined_samples - apart
    );
}

#[test]
fn the_monitor_thread_starts_at_the_first_waits_after_the_programs_first_thread() {
    // Made at the program's second thread, in its burst of creates, the
    // monitor's thread delayed the burst's last creates (git grep
    // --threads=4: 0.93x of its speed without corral; started at the
    // first ring instead, 0.97x, as with no monitor at all). Made before
    // the program's first thread, it left the program's threads worse
    // placed still.
    let dir = std::env::temp_dir().join(format!("corral-first-thread.{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("first_thread");
    assert!(
        common::build_fixture("first_thread.c", &exe),
        "cc failed on first_thread.c"
    );
    let out = corral_run().arg("--").arg(&exe).output().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).unwrap();
    let tids: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [worker, before, monitor] = tids[..] else {
        panic!("unexpected output: {line}")
    };
    assert_eq!(
        before, 0,
        "a monitor thread ran while no thread had waited: {line}"
    );
    assert!(monitor > 0, "no monitor thread once threads waited: {line}");
    // Thread ids are handed out in increasing order; a wrap of pid_max
    // between two creates (a gap of more than half of it) says nothing.
    if monitor.abs_diff(worker) > 1 << 21 {
        eprintln!("skipped: thread ids wrapped ({line})");
        return;
    }
    assert!(monitor > worker, "the monitor was made first: {line}");
}

#[test]
fn a_program_that_never_called_for_the_monitor_leaves_an_empty_decision_log() {
    // Its monitor thread, which writes the log, never ran: `--events` still
    // names a file afterwards (before: none, and scripts reading it failed).
    let dir = std::env::temp_dir().join(format!("corral-empty-log.{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("events.jsonl");
    let out = corral_run()
        .arg("--events")
        .arg(&log)
        .args(["--", "true"])
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&log);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.expect("no decision log").len(), 0);
}

#[test]
fn the_monitor_sees_the_cpus_of_the_thread_that_armed_it_not_its_pinned_ringer() {
    // Started by the first thread whose waits call for it, the monitor's
    // thread inherits that thread's CPUs; one the program pinned to one CPU
    // made the monitor see a 1-CPU process, with nothing to confine.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(cpu_list)
        .unwrap();
    let cpus = allowed.len();
    if cpus < 2 {
        eprintln!("skipped: one CPU");
        return;
    }
    let dir = std::env::temp_dir().join(format!("corral-pinned-ringer.{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("pinned_ringer");
    assert!(
        common::build_fixture("pinned_ringer.c", &exe),
        "cc failed on pinned_ringer.c"
    );
    let log = dir.join("events.jsonl");
    let out = corral_run()
        .arg("--events")
        .arg(&log)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let start = text
        .lines()
        .find(|l| l.contains("\"event\":\"start\""))
        .unwrap_or_else(|| panic!("no start event in the log: {text:?}"));
    let doc: serde_json::Value = serde_json::from_str(start).unwrap();
    let seen = doc["cpus"].as_array().map_or(0, Vec::len);
    assert_eq!(seen, cpus, "the monitor saw {seen} of {cpus} CPUs: {start}");
}
