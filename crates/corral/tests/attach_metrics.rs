//! `corral attach --metrics`: the kernel-lock session's endpoint is scraped
//! while it runs, parsed by a Prometheus text-format parser
//! (`prometheus-parse`), and every count it gave is at most the final JSON
//! report's (counters only grow) for the same lock and thread. Root only;
//! a kernel that refuses BPF skips with one line.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

fn corral() -> Command {
    Command::new(env!("CARGO_BIN_EXE_corral"))
}

/// The exposition at `addr`, parsed; `None` once nothing listens there.
fn scrape(addr: &str) -> Option<prometheus_parse::Scrape> {
    let body = common::get_metrics(addr)?;
    Some(prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap())
}

fn value(s: &prometheus_parse::Sample) -> f64 {
    match s.value {
        prometheus_parse::Value::Counter(v)
        | prometheus_parse::Value::Gauge(v)
        | prometheus_parse::Value::Untyped(v) => v,
        _ => panic!("unexpected type"),
    }
}

#[test]
fn attach_metrics_parse_and_stay_within_the_final_report() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("not root: skipped (kernel.rs covers the refusal)");
        return;
    }
    // mempop's threads fault pages into one mm: its mmap_lock is waited
    // on in every run here. Killed at the end; its data in a scratch dir.
    let dir = std::env::temp_dir().join(format!("corral-attach-metrics-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut bench = corral()
        .args(["bench", "kernel", "mempop", "--threads", "3"])
        .args(["--duration-ms", "60000", "--dir"])
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut attach = corral()
        .args(["attach", "--pid", &bench.id().to_string()])
        .args(["--duration-ms", "3000", "--kernel-lock-kinds", "all"])
        .args(["--metrics", "127.0.0.1:0", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(attach.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let Some(addr) = common::metrics_addr(&line) else {
        let _ = bench.kill();
        let _ = bench.wait();
        let _ = attach.wait();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(line.contains("kernel locks unavailable"), "{line}");
        eprintln!("skipped: {}", line.trim());
        return;
    };
    // Scrape until a lock has been waited on (the session ends by itself,
    // so this loop does too: its endpoint then stops answering).
    let mut scraped = None;
    while scraped.is_none() && attach.try_wait().unwrap().is_none() {
        let Some(s) = scrape(&addr) else { break };
        if s.samples
            .iter()
            .any(|x| x.metric == "corral_lock_contended_total")
        {
            scraped = Some(s);
        } else {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    let mut out = String::new();
    attach
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(attach.wait().unwrap().success());
    let _ = bench.kill();
    let _ = bench.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let scrape = scraped.expect("a waited-on lock while attached");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();

    let names = |m: &'static str| scrape.samples.iter().filter(move |s| s.metric == m);
    let locks = report["hot_locks"].as_array().unwrap();
    for s in names("corral_lock_contended_total") {
        assert_eq!(s.labels.get("space"), Some("kernel"));
        let addr = s.labels.get("lock").unwrap();
        let lock = locks
            .iter()
            .find(|l| l["addr"] == addr)
            .unwrap_or_else(|| panic!("{addr} scraped but not in the report"));
        // A kind only grows (rwsem:W, then rwsem:RW once read too).
        let (was, now) = (
            s.labels.get("kind").unwrap(),
            lock["kind"].as_str().unwrap(),
        );
        let (was_type, was_modes) = was.split_once(':').unwrap_or((was, ""));
        let (now_type, now_modes) = now.split_once(':').unwrap_or((now, ""));
        assert_eq!(was_type, now_type, "{addr}");
        assert!(
            was_modes.chars().all(|m| now_modes.contains(m)),
            "{was} {now}"
        );
        assert!(value(s) <= lock["count"].as_f64().unwrap(), "{addr}");
    }
    for s in names("corral_lock_wait_seconds_total") {
        let addr = s.labels.get("lock").unwrap();
        let lock = locks.iter().find(|l| l["addr"] == addr).unwrap();
        assert!(value(s) * 1e9 <= lock["wait_ns"].as_f64().unwrap() + 1.0);
    }
    let threads = report["threads"].as_array().unwrap();
    for s in names("corral_thread_lock_wait_seconds_total") {
        let tid: u64 = s.labels.get("tid").unwrap().parse().unwrap();
        let t = threads.iter().find(|t| t["tid"] == tid).unwrap();
        assert!(value(s) * 1e9 <= t["wait_ns"].as_f64().unwrap() + 1.0);
    }
    for scalar in ["corral_ssc_size", "corral_dropped_slices_total"] {
        assert_eq!(names(scalar).count(), 1, "{scalar}");
    }
}

#[test]
fn attach_refuses_a_public_metrics_address_unless_asked() {
    let out = corral()
        .args(["attach", "--pid", &std::process::id().to_string()])
        .args(["--duration-ms", "1", "--metrics", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    // Before the session starts: the same line with or without root.
    assert!(err.contains("--metrics-public"), "{err}");
    assert_eq!(out.status.code(), Some(2), "{err}");
}
