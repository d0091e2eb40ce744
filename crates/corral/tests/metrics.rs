//! `corral run --metrics`: the endpoint is scraped while the program holds
//! still with its locks final, parsed by a Prometheus text-format parser
//! (`prometheus-parse`), and its numbers are the JSON report's.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("corral-metrics-{}-{name}", std::process::id()))
}

fn scrape(addr: &str) -> String {
    common::get_metrics(addr).unwrap()
}

/// One `corral run` at a time: a run's start removes the files of
/// processes that are gone, a zombie's included, so a program that has
/// exited but is not reaped yet can lose its stats to another run.
static ONE_RUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_scrape_parses_and_agrees_with_the_report() {
    let _one = ONE_RUN.lock().unwrap_or_else(|p| p.into_inner());
    let exe = scratch("hot_lock");
    if !common::build_hot_lock(&exe) {
        eprintln!("no C compiler: skipped");
        return;
    }
    let lib = common::preload();
    let report = scratch("report.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_corral"))
        .env("CORRAL_PRELOAD", &lib)
        .args([
            "run",
            "--policy",
            "none",
            "--quiet",
            "--load-after-contended",
            "0",
            "--metrics",
            "127.0.0.1:0",
            "--report",
        ])
        .arg(&report)
        .arg("--")
        .arg(&exe)
        .args(["4", "50000", "wait"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = common::metrics_addr(&line).unwrap_or_else(|| panic!("{line}"));
    // The program has joined its threads: its locks are final.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut total = String::new();
    out.read_line(&mut total).unwrap();
    assert_eq!(total.trim(), "40000000");
    let body = scrape(&addr);
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    assert!(child.wait().unwrap().success());
    let _ = std::fs::remove_file(&exe);

    let scrape = prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap();
    let doc = common::read_json(&report);
    std::fs::remove_file(&report).unwrap();
    let top = &doc["locks"][0];
    let lock = top["addr"].as_str().unwrap();
    let sample = |name: &str| {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == name && s.labels.get("lock") == Some(lock))
            .unwrap_or_else(|| panic!("no {name} for {lock} in\n{body}"))
    };
    let value = |s: &prometheus_parse::Sample| match s.value {
        prometheus_parse::Value::Counter(v)
        | prometheus_parse::Value::Gauge(v)
        | prometheus_parse::Value::Untyped(v) => v,
        _ => panic!("unexpected type"),
    };
    let contended = sample("corral_lock_contended_total");
    assert_eq!(value(contended), top["contended"].as_f64().unwrap());
    assert_eq!(contended.labels.get("caller"), Some("take_hot_lock"));
    assert_eq!(contended.labels.get("kind"), Some("mutex"));
    let wait = value(sample("corral_lock_wait_seconds_total"));
    let wait_ns = top["wait_ns"].as_f64().unwrap();
    assert!(
        (wait * 1e9 - wait_ns).abs() <= 1.0 + wait_ns * 1e-9,
        "{wait} s vs {wait_ns} ns"
    );
    assert!(scrape.samples.iter().any(|s| s.metric == "corral_ssc_size"));
}

#[test]
fn a_public_address_is_refused_unless_asked_for() {
    let _one = ONE_RUN.lock().unwrap_or_else(|p| p.into_inner());
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["run", "--metrics", "0.0.0.0:0", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--metrics-public"));
}
