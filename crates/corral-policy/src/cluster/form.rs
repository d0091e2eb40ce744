//! Globally shared locks, similarity, and the one-pass representative
//! clustering (paper 5, Sec. 2.3.1).

use serde::Serialize;

use super::params::CaParams;
use super::vectors::SeVectors;

/// One cluster of threads likely to contend with each other (paper 5,
/// Sec. 2.3.1, "Form clusters of related threads").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cluster {
    /// Thread indices; the representative comes first.
    pub threads: Vec<u32>,
    /// Contention intensity: mean similarity of the members to the
    /// representative (0 for a singleton, which has nobody to contend with).
    pub intensity: f64,
    /// Intensity above `ci_threshold`: never split across CPUs.
    pub strong: bool,
}

/// The result of one clustering pass (paper 5, Sec. 2.3.1); a reported figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Clustering {
    /// Clusters in the order they were formed.
    pub clusters: Vec<Cluster>,
    /// Cluster index of every thread.
    pub label: Vec<u32>,
    /// conVector slots excluded as globally shared.
    pub globally_shared: u32,
}

/// Paper 5's similarity, a normalised vector product:
/// `(1 / s^2) sum_i a[i] b[i]`. Each vector sums to at most `s`, so the
/// result lies in [0, 1].
#[inline]
pub fn similarity(a: &[u16], b: &[u16], s: u32) -> f64 {
    let dot: u64 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| u64::from(x) * u64::from(y))
        .sum();
    dot as f64 / (f64::from(s) * f64::from(s))
}

/// Slots touched by more than `global_share` of all threads (paper 5,
/// Sec. 2.3.1); clustering ignores them. Most widely shared first, a slot
/// is excluded only if every thread touching it keeps another slot: when
/// the observed threads are unbalanced (a group not yet spawned, or
/// starved of samples), one group's own locks can cross "more than half"
/// at two groups, and excluding all of them would leave its threads with
/// empty vectors, each its own cluster.
pub fn globally_shared_slots(vectors: &SeVectors, params: &CaParams) -> Vec<bool> {
    let size = vectors.size() as usize;
    let mut touched = vec![0u32; size];
    let mut kept = vec![0u32; vectors.threads()];
    for (thread, kept) in kept.iter_mut().enumerate() {
        for (slot, &count) in vectors.con_vector(thread).iter().enumerate() {
            touched[slot] += u32::from(count > 0);
            *kept += u32::from(count > 0);
        }
    }
    let limit = params.global_share * vectors.threads() as f64;
    let mut candidates: Vec<usize> = (0..size)
        .filter(|&k| f64::from(touched[k]) > limit)
        .collect();
    candidates.sort_by_key(|&k| (std::cmp::Reverse(touched[k]), k));
    let mut excluded = vec![false; size];
    for slot in candidates {
        let users = (0..vectors.threads()).filter(|&t| vectors.con_vector(t)[slot] > 0);
        if users.clone().all(|t| kept[t] > 1) {
            excluded[slot] = true;
            users.for_each(|t| kept[t] -= 1);
        }
    }
    excluded
}

/// Non-zero, non-excluded conVector entries of every thread, row by row,
/// and each row's sum.
struct SparseRows {
    start: Vec<usize>,
    entries: Vec<(u32, u32)>,
    weight: Vec<u64>,
}

impl SparseRows {
    fn build(vectors: &SeVectors, excluded: &[bool]) -> Self {
        let mut start = Vec::with_capacity(vectors.threads() + 1);
        let mut entries = Vec::new();
        let mut weight = Vec::with_capacity(vectors.threads());
        for thread in 0..vectors.threads() {
            start.push(entries.len());
            let row = vectors.con_vector(thread).iter().enumerate();
            entries.extend(
                row.filter(|&(slot, &c)| c > 0 && !excluded[slot])
                    .map(|(slot, &c)| (slot as u32, u32::from(c))),
            );
            let sum = entries[start[thread]..].iter().map(|&(_, c)| u64::from(c));
            weight.push(sum.sum());
        }
        start.push(entries.len());
        Self {
            start,
            entries,
            weight,
        }
    }

    fn row(&self, thread: u32) -> &[(u32, u32)] {
        &self.entries[self.start[thread as usize]..self.start[thread as usize + 1]]
    }
}

/// Every pair's similarity as [`cluster_threads`] sees it (globally shared
/// slots excluded), row by row: a diagnostic. Allocates `threads^2`.
#[cold]
pub fn similarity_matrix(vectors: &SeVectors, params: &CaParams) -> Vec<Vec<f64>> {
    let excluded = globally_shared_slots(vectors, params);
    let rows = SparseRows::build(vectors, &excluded);
    let mut dense = vec![0u32; vectors.size() as usize];
    (0..vectors.threads() as u32)
        .map(|a| {
            for &(slot, c) in rows.row(a) {
                dense[slot as usize] = c;
            }
            let row = (0..vectors.threads() as u32)
                .map(|b| pair_similarity(&rows, &dense, a, b))
                .collect();
            for &(slot, _) in rows.row(a) {
                dense[slot as usize] = 0;
            }
            row
        })
        .collect()
}

/// Similarity of thread `b` to thread `a`, whose conVector is spread in
/// `dense`: [`similarity`] with each vector normalised by its own sum over
/// the slots kept, `(1 / (n_a n_b)) sum_i a[i] b[i]`. Full vectors with
/// nothing excluded give the paper's `1 / s^2`; unlike it, the result does
/// not shrink with how full a vector is (a sampled thread that ran a
/// quarter as long would score a quarter) or with the share of its
/// events that went to globally shared locks.
#[inline]
fn pair_similarity(rows: &SparseRows, dense: &[u32], a: u32, b: u32) -> f64 {
    let dot: u64 = rows
        .row(b)
        .iter()
        .map(|&(slot, c)| u64::from(dense[slot as usize]) * u64::from(c))
        .sum();
    let norm = rows.weight[a as usize] * rows.weight[b as usize];
    if norm == 0 {
        return 0.0;
    }
    dot as f64 / norm as f64
}

/// Paper 5's on-line heuristic: take the first unclustered thread as the
/// representative (the paper picks one at random; the first keeps runs
/// reproducible), add every unclustered thread whose similarity to it is
/// greater than `sim_threshold`, repeat until every thread is in a cluster.
/// Globally shared slots are zeroed first; similarity is normalised per
/// vector (see `pair_similarity`). O(threads x clusters x non-zeros);
/// allocates, once per monitoring period.
#[cold]
pub fn cluster_threads(vectors: &SeVectors, params: &CaParams) -> Clustering {
    let excluded = globally_shared_slots(vectors, params);
    let rows = SparseRows::build(vectors, &excluded);
    let mut dense = vec![0u32; vectors.size() as usize];
    let mut label = vec![0u32; vectors.threads()];
    let mut clusters = Vec::new();
    let mut remaining: Vec<u32> = (0..vectors.threads() as u32).collect();
    let mut rest = Vec::with_capacity(remaining.len());

    while let Some((&rep, others)) = remaining.split_first() {
        for &(slot, c) in rows.row(rep) {
            dense[slot as usize] = c;
        }
        let mut threads = vec![rep];
        let mut total = 0.0;
        rest.clear();
        for &t in others {
            let sim = pair_similarity(&rows, &dense, rep, t);
            if sim > params.sim_threshold {
                threads.push(t);
                total += sim;
            } else {
                rest.push(t);
            }
        }
        for &(slot, _) in rows.row(rep) {
            dense[slot as usize] = 0;
        }
        let intensity = if threads.len() > 1 {
            total / (threads.len() - 1) as f64
        } else {
            0.0
        };
        for &t in &threads {
            label[t as usize] = clusters.len() as u32;
        }
        clusters.push(Cluster {
            threads,
            intensity,
            strong: intensity > params.ci_threshold,
        });
        std::mem::swap(&mut remaining, &mut rest);
    }

    Clustering {
        clusters,
        label,
        globally_shared: excluded.iter().filter(|&&e| e).count() as u32,
    }
}
