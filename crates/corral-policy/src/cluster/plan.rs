//! The thread-to-CPU mapping plan (paper 5, Sec. 2.3.1, "Generate CPU
//! mapping plan").

use serde::Serialize;

use super::form::Cluster;
use crate::CoreId;

/// Where every thread goes (paper 5, Sec. 2.3.1, "Generate CPU mapping
/// plan"); a reported figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MappingPlan {
    /// CPU of every thread, indexed by thread.
    pub cpu_of_thread: Vec<CoreId>,
    /// Threads per CPU, in the order of the `cpus` argument.
    pub load: Vec<u32>,
    /// Ideal load `T_avg = N_t / N_p`.
    pub t_avg: f64,
    /// Ideal load of the underutilised CPUs once weak clusters are added,
    /// `T_avg2 = (sum TU_i + sum TWC_j) / n`.
    pub t_avg2: f64,
    /// The underutilised list U after the strong clusters were placed,
    /// lightest first.
    pub underutilised: Vec<CoreId>,
    /// Weak clusters that were split over more than one CPU.
    pub split_clusters: u32,
}

fn by_size_desc(clusters: &[Cluster], strong: bool) -> Vec<&Cluster> {
    let mut picked: Vec<&Cluster> = clusters.iter().filter(|c| c.strong == strong).collect();
    // Stable: equal sizes keep their formation order.
    picked.sort_by_key(|c| std::cmp::Reverse(c.threads.len()));
    picked
}

/// Water-filling targets for the underutilised CPUs (`u`, lightest first):
/// raise the lightest ones to a common level, differing by at most one,
/// using exactly `weak` more threads. CPUs above the level keep their load.
fn weak_targets(load: &[u64], u: &[usize], weak: u64) -> Vec<u64> {
    let mut raised = u.len();
    let mut prefix: u64 = u.iter().map(|&i| load[i]).sum::<u64>() + weak;
    // Drop the heaviest CPUs while the level would sit below their load.
    while raised > 1 && prefix / (raised as u64) < load[u[raised - 1]] {
        raised -= 1;
        prefix -= load[u[raised]];
    }
    let base = prefix / raised as u64;
    let extra = (prefix % raised as u64) as usize;
    u.iter()
        .enumerate()
        .map(|(rank, &i)| match rank {
            r if r < extra => base + 1,
            r if r < raised => base,
            _ => load[i],
        })
        .collect()
}

/// Builds the plan in the paper's three steps: (1) strong/weak groups by
/// `Cluster::strong`; (2) strong clusters, largest first, each whole onto
/// the lightest CPU of the underutilised list U (load < `T_avg`), dropping
/// CPUs from U once they reach `T_avg`; (3) weak clusters, largest first,
/// merged or split over the CPUs left in U so that their loads level out at
/// `T_avg2` (within one thread, and never lowering a CPU already above it).
///
/// Returns `None` when `cpus` is empty. Allocates; run once per period.
///
/// # Panics
/// If the clusters' threads are not exactly the indices `0..N_t`, each once.
#[cold]
pub fn mapping_plan(clusters: &[Cluster], cpus: &[CoreId]) -> Option<MappingPlan> {
    if cpus.is_empty() {
        return None;
    }
    let n_threads: usize = clusters.iter().map(|c| c.threads.len()).sum();
    let t_avg = n_threads as f64 / cpus.len() as f64;
    let mut load = vec![0u64; cpus.len()];
    let mut cpu_of_thread = vec![CoreId::MAX; n_threads];
    let mut place = |thread: u32, cpu: usize| {
        let slot = cpu_of_thread.get_mut(thread as usize);
        let slot = slot.filter(|s| **s == CoreId::MAX);
        *slot.expect("clusters must partition the threads 0..N_t") = cpus[cpu];
    };
    let mut full = vec![false; cpus.len()];

    for cluster in by_size_desc(clusters, true) {
        let lightest = |only_u: bool| {
            (0..cpus.len())
                .filter(|&i| !only_u || !full[i])
                .min_by_key(|&i| (load[i], i))
        };
        // U can only empty once every thread is placed; fall back anyway.
        let Some(cpu) = lightest(true).or_else(|| lightest(false)) else {
            break;
        };
        for &t in &cluster.threads {
            place(t, cpu);
        }
        load[cpu] += cluster.threads.len() as u64;
        full[cpu] = load[cpu] as f64 >= t_avg;
    }

    let mut u: Vec<usize> = (0..cpus.len()).filter(|&i| !full[i]).collect();
    if u.is_empty() {
        u = (0..cpus.len()).collect();
    }
    u.sort_by_key(|&i| (load[i], i));
    let weak = by_size_desc(clusters, false);
    let weak_threads: u64 = weak.iter().map(|c| c.threads.len() as u64).sum();
    let t_avg2 = (u.iter().map(|&i| load[i]).sum::<u64>() + weak_threads) as f64 / u.len() as f64;
    let targets = weak_targets(&load, &u, weak_threads);
    let mut room: Vec<u64> = u.iter().zip(&targets).map(|(&i, &t)| t - load[i]).collect();

    let mut split_clusters = 0;
    for cluster in weak {
        let mut pending = cluster.threads.as_slice();
        let mut pieces = 0;
        while !pending.is_empty() {
            // Most room first, so a cluster stays whole whenever it can.
            let Some(k) = (0..u.len())
                .filter(|&k| room[k] > 0)
                .max_by_key(|&k| (room[k], usize::MAX - k))
            else {
                break;
            };
            let take = pending.len().min(room[k] as usize);
            for &t in &pending[..take] {
                place(t, u[k]);
            }
            room[k] -= take as u64;
            load[u[k]] += take as u64;
            pending = &pending[take..];
            pieces += 1;
        }
        split_clusters += u32::from(pieces > 1);
    }

    Some(MappingPlan {
        cpu_of_thread,
        load: load.iter().map(|&l| l as u32).collect(),
        t_avg,
        t_avg2,
        underutilised: u.iter().map(|&i| cpus[i]).collect(),
        split_clusters,
    })
}
