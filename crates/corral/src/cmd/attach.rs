//! `corral attach --pid PID`: the kernel-lock SSC policy applied to a
//! process already running (and the processes it forks from then on), and
//! the tables that print its report.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use corral_launch::signals;
use corral_runtime::kernel::KernelReport;

use super::kernel_opts::{prepare, KernelOptions};
use crate::CliError;

/// Arguments of `corral attach`.
#[derive(clap::Args)]
pub(crate) struct AttachArgs {
    /// The process to measure and place.
    #[arg(long, value_name = "PID", value_parser = clap::value_parser!(i32).range(1..))]
    pub(crate) pid: i32,
    /// Stop after this long even if the process still runs.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) duration_ms: Option<u64>,
    /// Write the full report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) report: Option<PathBuf>,
    /// Print the report as JSON instead of tables.
    #[arg(long)]
    pub(crate) json: bool,
    /// Serve the session's live figures as Prometheus metrics at ADDR
    /// (http://ADDR/metrics), as `corral run --metrics` does: kernel lock
    /// wait per lock and per thread, SSC size, decisions, dropped slices;
    /// port 0 picks one, said on stderr.
    #[arg(long, value_name = "IP:PORT")]
    pub(crate) metrics: Option<std::net::SocketAddr>,
    /// Allow --metrics on an address other than loopback.
    #[arg(long, requires = "metrics")]
    pub(crate) metrics_public: bool,
    /// Largest SSC in cores (0 = every CPU), as `corral run --max-ssc`.
    #[arg(long, value_name = "N")]
    pub(crate) max_ssc: Option<u32>,
    #[command(flatten)]
    pub(crate) options: KernelOptions,
}

/// Live and not a zombie.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// `pid` and its live descendants, from /proc.
fn with_descendants(pid: i32) -> Vec<i32> {
    let parents: Vec<(i32, i32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((p, ppid))
        })
        .collect();
    let mut out = vec![pid];
    let mut at = 0;
    while at < out.len() {
        let parent = out[at];
        out.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        at += 1;
    }
    out
}

/// `PF_KTHREAD` of `/proc/PID/stat`'s flags (include/linux/sched.h).
const PF_KTHREAD: u64 = 0x0020_0000;

/// kthreadd, the parent of every kernel thread.
const KTHREADD: i32 = 2;

/// Why `pid` must not be attached to, from its `/proc/PID/stat` and
/// `/proc/PID/status` texts; `own` is corral's pid. Placing init, a kernel
/// thread or corral itself could stall the machine or corral's own monitor;
/// a thread id would be tracked as a process whose other threads are missed.
fn refusal(pid: i32, own: i32, stat: &str, status: &str) -> Option<String> {
    if pid == 1 {
        return Some(
            "--pid 1: is init (the system's first process); corral attach will not place it".into(),
        );
    }
    if pid == own {
        return Some(format!(
            "--pid {pid}: is this corral attach itself; pass the program's pid"
        ));
    }
    // Fields after the command name: state ppid pgrp session tty tpgid flags.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ppid = fields.get(1).and_then(|f| f.parse::<i32>().ok());
    let flags = fields.get(6).and_then(|f| f.parse::<u64>().ok());
    if pid == KTHREADD || ppid == Some(KTHREADD) || flags.is_some_and(|f| f & PF_KTHREAD != 0) {
        return Some(format!(
            "--pid {pid}: is a kernel thread; corral attach places user processes only"
        ));
    }
    let tgid = status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse::<i32>().ok());
    match tgid {
        Some(tgid) if tgid == own => Some(format!(
            "--pid {pid}: is a thread of this corral attach; pass the program's pid"
        )),
        Some(tgid) if tgid != pid => Some(format!(
            "--pid {pid} is a thread of process {tgid}; pass {tgid}"
        )),
        _ => None,
    }
}

/// [`refusal`] for a live `pid`, reading its /proc entries (a thread's are
/// there too, under its tid, though /proc does not list them).
fn refusal_of(pid: i32) -> Option<String> {
    let read =
        |file: &str| std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap_or_default();
    refusal(
        pid,
        std::process::id() as i32,
        &read("stat"),
        &read("status"),
    )
}

/// Measures and places `--pid` until it exits, `--duration-ms` passes or a
/// SIGTERM, SIGINT or SIGHUP arrives, then gives every thread it placed its
/// affinity back and prints the report; a signal then ends corral too.
pub(crate) fn run(args: AttachArgs) -> Result<(), CliError> {
    if !alive(args.pid) {
        return Err(CliError(format!("--pid: no running process {}", args.pid)));
    }
    if let Some(why) = refusal_of(args.pid) {
        return Err(CliError(why));
    }
    // Caught from before the first thread can be placed: dying of the
    // signal outright would leave the target pinned where corral put it.
    if let Some(addr) = args.metrics {
        super::metrics::check(addr, args.metrics_public)?;
    }
    signals::catch_stop_signals();
    let session = prepare(&args.options, args.max_ssc)?;
    if let Some(addr) = args.metrics {
        let watched = super::metrics::Watched::Kernel(session.live());
        let bound = super::metrics::serve(addr, args.metrics_public, watched)?;
        eprintln!("corral: metrics at http://{bound}/metrics");
    }
    session
        .track(args.pid)
        .map_err(|e| CliError(format!("--pid {}: cannot track it: {e}", args.pid)))?;
    for pid in with_descendants(args.pid).into_iter().skip(1) {
        // A descendant that exited meanwhile is no error.
        let _ = session.track(pid);
    }
    let deadline = args
        .duration_ms
        .map(|ms| Instant::now() + Duration::from_millis(ms));
    while signals::stop_requested().is_none()
        && alive(args.pid)
        && deadline.is_none_or(|d| Instant::now() < d)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Restores every thread's original affinity before returning.
    let report = session.finish();
    let shown = show(&args, &report);
    if let Some(sig) = signals::stop_requested() {
        if let Err(e) = shown {
            eprintln!("error: {e}");
        }
        signals::die_of(sig);
    }
    shown
}

/// Writes `--report` and prints the report as asked.
fn show(args: &AttachArgs, report: &KernelReport) -> Result<(), CliError> {
    if let Some(path) = &args.report {
        let json = serde_json::to_string_pretty(report)?;
        std::fs::write(path, json)
            .map_err(|e| CliError(format!("--report {}: {e}", path.display())))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print_report(report);
    }
    Ok(())
}

/// The `q` quantile of per-slice shares (0 when there are none).
fn quantile(shares: &[f32], q: f64) -> f64 {
    let mut sorted = shares.to_vec();
    sorted.sort_by(f32::total_cmp);
    let at = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(at).map_or(0.0, |&s| f64::from(s))
}

/// Prints a session's report for a person: per thread its kernel lock-wait
/// share, the SSC decisions and the affinity applied (read back).
fn print_report(r: &KernelReport) {
    println!(
        "kernel locks ({}): {} slices over {:.2} s, overall wait share {:.1}%, {} dropped; SSC order {:?}",
        r.kinds.join(","),
        r.slices,
        r.duration_ns as f64 / 1e9,
        r.wait_share * 100.0,
        r.dropped_slices,
        r.order
    );
    println!(
        "{:>8} {:<16} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:<15} affinity (read back)",
        "tid", "comm", "slices", "windows", "share%", "p50%", "p90%", "max%", ">T", "class"
    );
    for t in &r.threads {
        let mark = if t.lock_intensive { "*" } else { " " };
        let affinity = t
            .affinity_at_end
            .as_ref()
            .map_or("(exited)".to_string(), |a| format!("{a:?}"));
        println!(
            "{:>8} {:<16} {:>7} {:>7} {:>7.2} {:>7.2} {:>7.2} {:>7.1} {:>6} {:<15} {affinity}",
            t.tid,
            t.comm,
            t.slices,
            t.windows,
            t.wait_share * 100.0,
            quantile(&t.slice_shares, 0.5) * 100.0,
            quantile(&t.slice_shares, 0.9) * 100.0,
            t.max_slice_share * 100.0,
            t.intensive_slices,
            format!("{:?}{mark}", t.class),
        );
    }
    println!(
        "(share%: waiting / slice time; p50/p90/max over windows, slices merged to >= 1 ms; \
         * = classified lock intensive: a window over T = {:.0}%)",
        r.threshold * 100.0
    );
    println!(
        "SSC decisions: {} and {} holds (final bound {}, SSC {:?})",
        r.decisions.len(),
        r.holds,
        r.final_bound,
        r.final_ssc
    );
    for d in r.decisions.iter().take(20) {
        println!(
            "  {:?}: bound {} -> {} (T = {:.3}, p = {:.3})",
            d.kind, d.bound_before, d.bound_after, d.throughput, d.p
        );
    }
    println!("affinity changes: {}", r.affinity.len());
    for a in r.affinity.iter().take(20) {
        println!(
            "  +{:.3} s tid {} -> {} {:?}, read back {:?}",
            a.at_ns as f64 / 1e9,
            a.tid,
            a.to,
            a.requested,
            a.read_back
        );
    }
    if !r.hot_locks.is_empty() {
        println!("hottest kernel locks (waiting by tracked tasks, sleeping included):");
        for l in r.hot_locks.iter().take(5) {
            println!(
                "  {} {:<12} {:<32} {:>10.3} ms {:>8} waits",
                l.addr,
                l.kind,
                l.symbol.as_deref().unwrap_or("-"),
                l.wait_ns as f64 / 1e6,
                l.count
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pid: i32, file: &str) -> String {
        std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap_or_default()
    }

    /// [`refusal`] of `pid` as corral with pid `own` would see it.
    fn refusal_as(pid: i32, own: i32) -> Option<String> {
        refusal(pid, own, &read(pid, "stat"), &read(pid, "status"))
    }

    fn gettid() -> i32 {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() }
    }

    #[test]
    fn init_is_refused() {
        let why = refusal_as(1, 12345).unwrap();
        assert!(why.starts_with("--pid 1: is init"), "{why}");
    }

    #[test]
    fn kernel_threads_are_refused() {
        // kthreadd is pid 2 outside a pid namespace; inside one, pid 2 is
        // a user process and only the synthetic lines below apply.
        if read(2, "comm").trim() == "kthreadd" {
            let why = refusal_as(2, 12345).unwrap();
            assert!(why.contains("kernel thread"), "{why}");
        }
        // A kworker: flags with PF_KTHREAD, parent kthreadd.
        let stat = "57 (kworker/0:1-events) I 2 0 0 0 -1 69238880 0 0 0 0 0 0";
        let why = refusal(57, 12345, stat, "Tgid:\t57\n").unwrap();
        assert_eq!(
            why,
            "--pid 57: is a kernel thread; corral attach places user processes only"
        );
        // PF_KTHREAD alone (a parent other than kthreadd) is enough too.
        let stat = "58 (odd) S 9 0 0 0 -1 2097152 0";
        assert!(refusal(58, 12345, stat, "Tgid:\t58\n").is_some());
        // A user process whose name has spaces and parentheses: no flag.
        let stat = "59 (a (b) c) S 1 0 0 0 -1 4194560 0";
        assert_eq!(refusal(59, 12345, stat, "Tgid:\t59\n"), None);
    }

    #[test]
    fn a_thread_id_names_its_process() {
        let own = std::process::id() as i32;
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            tx.send(gettid()).unwrap();
            let _ = done_rx.recv();
        });
        let tid = rx.recv().unwrap();
        // Seen from another corral: a thread of a process, not a process.
        assert_eq!(
            refusal_as(tid, 1_000_000).unwrap(),
            format!("--pid {tid} is a thread of process {own}; pass {own}")
        );
        // Seen from this one: its own thread.
        assert!(refusal_as(tid, own)
            .unwrap()
            .contains("thread of this corral attach"));
        done_tx.send(()).unwrap();
        worker.join().unwrap();
    }

    #[test]
    fn corral_itself_is_refused_and_a_process_is_not() {
        let own = std::process::id() as i32;
        let why = refusal_as(own, own).unwrap();
        assert!(why.contains("this corral attach itself"), "{why}");
        // The same process seen from another corral is a plain process.
        assert_eq!(refusal_as(own, own + 1), None);
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert_eq!(refusal_as(child.id() as i32, own), None);
        let _ = child.kill();
        let _ = child.wait();
    }
}
