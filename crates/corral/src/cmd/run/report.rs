//! `corral run`'s report: each thread's lock wait share, the SSC size over
//! time and every decision, as `--report`'s JSON and as the summary line.

use corral_locks::Algorithm;
use corral_runtime::config::{Policy, RuntimeConfig};
use corral_runtime::events::Event;
use corral_runtime::kernel::KernelReport;
use corral_runtime::stats::StatsSnapshot;
use serde::Serialize;

/// One thread in the report.
#[derive(Serialize)]
pub(crate) struct ThreadReport {
    /// Thread id.
    pub(crate) tid: i32,
    /// Lock waiting over the thread's CPU time, 0 to 1.
    pub(crate) wait_share: f64,
    /// Classified lock intensive at the end, or at any time by the log.
    pub(crate) lock_intensive: bool,
    /// Lock waiting over the thread's life, ns.
    pub(crate) wait_ns: u64,
    /// Thread CPU time the monitor saw, ns.
    pub(crate) cpu_ns: u64,
    /// Acquisitions that had to wait.
    pub(crate) contended: u64,
    /// Accounting windows closed.
    pub(crate) slices: u64,
}

/// The SSC size from a point in time on.
#[derive(Serialize)]
pub(crate) struct SscPoint {
    /// Milliseconds since the monitor started.
    pub(crate) t_ms: f64,
    /// SSC size in cores from then on.
    pub(crate) bound: u32,
}

/// `--report`'s document.
#[derive(Serialize)]
pub(crate) struct RunReport {
    /// The policy the run used.
    pub(crate) policy: Policy,
    /// The lock algorithm that replaced pthread mutexes.
    pub(crate) lock: Algorithm,
    /// PROG's exit code as a shell reports it.
    pub(crate) exit_code: i32,
    /// Every thread that took a lock, from the final stats.
    pub(crate) threads: Vec<ThreadReport>,
    /// The SSC size over time: the start, then every change.
    pub(crate) ssc: Vec<SscPoint>,
    /// The decision log, less its start record.
    pub(crate) decisions: Vec<Event>,
    /// With `--kernel-locks`: kernel lock waiting per thread and slice, the
    /// SSC decisions and the affinity applied (read back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) kernel: Option<KernelReport>,
}

/// The report from the final stats and the decision log.
pub(crate) fn build_report(
    cfg: &RuntimeConfig,
    exit_code: i32,
    stats: Option<&StatsSnapshot>,
    events: Vec<Event>,
) -> RunReport {
    let qualified: Vec<i32> = events
        .iter()
        .filter_map(|e| {
            if let Event::Qualified { tid, .. } = e {
                Some(*tid)
            } else {
                None
            }
        })
        .collect();
    let threads = stats
        .map(|s| {
            s.threads
                .iter()
                .map(|t| ThreadReport {
                    tid: t.tid,
                    wait_share: t.wait_share,
                    lock_intensive: t.lock_intensive || qualified.contains(&t.tid),
                    wait_ns: t.wait_ns,
                    cpu_ns: t.cpu_ns,
                    contended: t.contended,
                    slices: t.slices,
                })
                .collect()
        })
        .unwrap_or_default();
    let mut ssc = Vec::new();
    for e in &events {
        match e {
            Event::Start { t_ms, bound, .. } => ssc.push(SscPoint {
                t_ms: *t_ms,
                bound: *bound,
            }),
            Event::Decision {
                t_ms,
                bound_before,
                bound_after,
                ..
            } if bound_before != bound_after => ssc.push(SscPoint {
                t_ms: *t_ms,
                bound: *bound_after,
            }),
            _ => {}
        }
    }
    let decisions = events
        .into_iter()
        .filter(|e| !matches!(e, Event::Start { .. }))
        .collect();
    RunReport {
        policy: cfg.policy,
        lock: cfg.lock,
        exit_code,
        threads,
        ssc,
        decisions,
        kernel: None,
    }
}

/// The human summary printed at exit.
pub(crate) fn summary(r: &RunReport, stats: Option<&StatsSnapshot>) -> String {
    let Some(stats) = stats else {
        return format!(
            "corral: policy {}, lock {}: exit {}; no stats (the runtime did not start)",
            r.policy.name(),
            r.lock,
            r.exit_code
        );
    };
    let intensive = r.threads.iter().filter(|t| t.lock_intensive).count();
    let mut top: Vec<&ThreadReport> = r.threads.iter().collect();
    top.sort_by(|a, b| b.wait_share.total_cmp(&a.wait_share));
    let shares: Vec<String> = top
        .iter()
        .take(4)
        .map(|t| format!("{}:{:.1}%", t.tid, 100.0 * t.wait_share))
        .collect();
    let bound = stats.ssc_bound.to_string();
    format!(
        "corral: policy {}, lock {}: {} threads locked, {} lock-intensive; SSC size {}; {} decisions; \
         highest wait shares {}",
        r.policy.name(),
        r.lock,
        r.threads.len(),
        intensive,
        if r.policy == Policy::None { "none".to_string() } else { bound },
        r.decisions.len(),
        if shares.is_empty() { "-".to_string() } else { shares.join(" ") }
    )
}
