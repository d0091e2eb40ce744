//! Sweeps: every (workload, policy, cores) point, in parallel on all host
//! cores, each point single-threaded and deterministic.

use crate::config::{SimConfig, SimResult};
use crate::error::SimError;
use crate::locks::LockCosts;
use crate::names::{make_policy, simulate_named};
use crate::workload::Workload;
use rayon::prelude::*;
use serde::Serialize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// What every point of a sweep shares.
#[derive(Clone, Debug)]
pub struct SweepSpec {
    /// Workloads to run.
    pub workloads: Vec<Workload>,
    /// Policy names, as [`make_policy`] takes them.
    pub policies: Vec<String>,
    /// Machine sizes, in cores.
    pub cores: Vec<u32>,
    /// Simulated seconds per point, warm-up included.
    pub seconds: f64,
    /// Seed of every point's random stream.
    pub seed: u64,
    /// Lock costs every point uses.
    pub costs: LockCosts,
}

/// All points and the simulator's speed.
#[derive(Clone, Debug, Serialize)]
pub struct SweepReport {
    /// One result per (workload, policy, cores), in that nesting order.
    pub points: Vec<SimResult>,
    /// Events per second of one host core: total events over the total CPU
    /// time of the threads that ran the points (so that other load on the
    /// host does not count against the simulator).
    pub events_per_second: f64,
    /// Wall-clock seconds of the whole sweep.
    pub wall_seconds: f64,
}

/// Runs the sweep; `progress(done, total)` is called after each point.
///
/// # Errors
///
/// A core count of 0 or an unknown policy, before anything runs; otherwise
/// the first point's error in sweep order (see [`crate::simulate`]).
pub fn run_sweep(
    spec: &SweepSpec,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<SweepReport, SimError> {
    if spec.cores.contains(&0) {
        return Err(SimError::Cores(0));
    }
    for p in &spec.policies {
        make_policy(p, 1)?;
    }
    let mut jobs = Vec::new();
    for (w, _) in spec.workloads.iter().enumerate() {
        for (p, _) in spec.policies.iter().enumerate() {
            for &n in &spec.cores {
                jobs.push((w, p, n));
            }
        }
    }
    // Biggest machines first, so the slowest points do not start last.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(jobs[i].2));
    let done = AtomicUsize::new(0);
    let start = Instant::now();
    // (job index, the point and the CPU seconds it took)
    type Outcome = (usize, Result<(SimResult, f64), SimError>);
    let mut results: Vec<Outcome> = order
        .par_iter()
        .map(|&i| {
            let (w, p, n) = jobs[i];
            let t0 = thread_cpu_seconds();
            let mut cfg = SimConfig::new(n, spec.seconds, spec.seed);
            cfg.costs = spec.costs.clone();
            let out = simulate_named(&spec.policies[p], &cfg, &spec.workloads[w]).map(|mut r| {
                r.policy = spec.policies[p].clone();
                (r, thread_cpu_seconds() - t0)
            });
            // Relaxed: a progress count, nothing is published through it.
            let d = done.fetch_add(1, Ordering::Relaxed) + 1;
            progress(d, jobs.len());
            (i, out)
        })
        .collect();
    results.sort_by_key(|r| r.0);
    let mut points = Vec::with_capacity(results.len());
    let (mut events, mut busy) = (0u64, 0f64);
    for (_, r) in results {
        let (point, secs) = r?;
        events += point.events;
        busy += secs;
        points.push(point);
    }
    Ok(SweepReport {
        points,
        events_per_second: events as f64 / busy.max(1e-9),
        wall_seconds: start.elapsed().as_secs_f64(),
    })
}

/// The calling thread's CPU time in seconds (0 if the clock cannot be read).
fn thread_cpu_seconds() -> f64 {
    corral_locks::sys::clock::thread_cpu_ns() as f64 * 1e-9
}

/// The report as CSV, one line per point.
pub fn to_csv(report: &SweepReport) -> String {
    let mut out = String::from(
        "workload,policy,cores,throughput,speedup,wait_share,ssc,settle_ms,noncritical_cores,\
         spinning_cores,idle_cores,power,work_per_energy,migrations,events\n",
    );
    for p in &report.points {
        out.push_str(&format!(
            "{},{},{},{:.3},{:.4},{:.4},{},{},{:.3},{:.3},{:.3},{:.3},{:.3},{},{}\n",
            p.workload,
            p.policy,
            p.cores,
            p.throughput,
            p.speedup,
            p.wait_share,
            p.ssc.map(|s| s.to_string()).unwrap_or_default(),
            p.settle_ms.map(|s| format!("{s:.3}")).unwrap_or_default(),
            p.noncritical_cores,
            p.spinning_cores,
            p.idle_cores,
            p.power,
            p.work_per_energy,
            p.migrations,
            p.events
        ));
    }
    out
}
