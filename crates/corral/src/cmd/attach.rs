//! `corral attach --pid PID`: the kernel-lock SSC policy applied to a
//! process already running (and the processes it forks from then on), and
//! the tables that print its report.

use std::path::PathBuf;
use std::time::{Duration, Instant};

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

/// Measures and places `--pid` until it exits or `--duration-ms` passes,
/// then prints the report.
pub(crate) fn run(args: AttachArgs) -> Result<(), CliError> {
    if !alive(args.pid) {
        return Err(CliError(format!("--pid: no running process {}", args.pid)));
    }
    let session = prepare(&args.options)?;
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
    while alive(args.pid) && deadline.is_none_or(|d| Instant::now() < d) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let report = session.finish();
    if let Some(path) = &args.report {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, json)
            .map_err(|e| CliError(format!("--report {}: {e}", path.display())))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
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
