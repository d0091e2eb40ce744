//! `corral attach --pid PID`: the kernel-lock SSC policy applied to a
//! process already running (and the processes it forks from then on).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::run_kernel::{prepare, print_report, KernelOptions};
use crate::CliError;

/// Arguments of `corral attach`.
#[derive(clap::Args)]
pub struct AttachArgs {
    /// The process to measure and place.
    #[arg(long, value_name = "PID", value_parser = clap::value_parser!(i32).range(1..))]
    pub pid: i32,
    /// Stop after this long even if the process still runs.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub duration_ms: Option<u64>,
    /// Write the full report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Print the report as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub options: KernelOptions,
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

pub fn run(args: AttachArgs) -> Result<(), CliError> {
    if !alive(args.pid) {
        return Err(CliError(format!("--pid: no running process {}", args.pid)));
    }
    let session = prepare(&args.options)?.expect("prepare always starts a session");
    for pid in with_descendants(args.pid) {
        session.track(pid);
    }
    let deadline = args
        .duration_ms
        .map(|ms| Instant::now() + Duration::from_millis(ms));
    while alive(args.pid) && deadline.is_none_or(|d| Instant::now() < d) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let report = session.finish();
    if let Some(path) = &args.report {
        let json = serde_json::to_string_pretty(&report).map_err(|e| CliError(e.to_string()))?;
        std::fs::write(path, json)
            .map_err(|e| CliError(format!("--report {}: {e}", path.display())))?;
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| CliError(e.to_string()))?
        );
    } else {
        print_report(&report);
    }
    Ok(())
}
