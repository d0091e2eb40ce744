//! One CA-Scheduler round on a live program: which threads take part, the
//! clustering of those, and each one's CPU (paper 5, Sec. 2.3.1). The Linux
//! monitor and tests call this; the simulator's policy plans all its tasks.

use serde::Serialize;

use super::form::{cluster_threads, globally_shared_slots, Clustering};
use super::params::CaParams;
use super::plan::mapping_plan;
use super::vectors::SeVectors;
use crate::csf::CsfParams;
use crate::CoreId;

/// The decisions of one round; a reported figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaRound {
    /// Table rows (threads) that took part: alive and with at least
    /// `min_samples` recorded events.
    pub members: Vec<usize>,
    /// The clustering of `members` (its thread indices index `members`).
    pub clustering: Clustering,
    /// CPU of every member, in `members` order.
    pub cpu: Vec<CoreId>,
    /// CSF's lockCount of every member (see [`csf_lock_count`]).
    pub lock_count: Vec<u32>,
    /// Events (samples) each member recorded this round.
    pub samples: Vec<u32>,
    /// Non-zero conVector slots of each member outside the globally
    /// shared ones (its popcount after the exclusion).
    pub slots: Vec<u32>,
    /// The conVector slots excluded as globally shared.
    pub excluded: Vec<u32>,
}

/// CSF's `lockCount` as a monitor can see it: the distinct locks (slots)
/// outside the globally shared ones that the thread acquired this round,
/// capped at `MAX_lockCount`. Paper 5 counts the locks a thread holds at
/// the scheduling instant; a monitor sampling every millisecond cannot see
/// microsecond critical sections, so it counts the locks the thread keeps
/// taking instead.
pub fn csf_lock_count(con_vector: &[u16], excluded: &[bool], csf: &CsfParams) -> u32 {
    let distinct = con_vector
        .iter()
        .zip(excluded)
        .filter(|&(&c, &ex)| c > 0 && !ex)
        .count() as u32;
    distinct.min(csf.max_lock_count.max(1))
}

/// Clusters the rows of `vectors` for which `alive` holds and that recorded
/// at least `params.min_samples` events (all their events when the vector
/// is smaller), and maps them onto `cpus`. `None` when fewer than
/// two threads take part or `cpus` is empty: nothing to decide.
#[cold]
pub fn ca_round(
    vectors: &SeVectors,
    alive: &[bool],
    params: &CaParams,
    csf: &CsfParams,
    cpus: &[CoreId],
) -> Option<CaRound> {
    let members: Vec<usize> = (0..vectors.threads())
        .filter(|&t| alive.get(t).copied().unwrap_or(false))
        .filter(|&t| vectors.events(t) >= params.min_samples.clamp(1, vectors.size()))
        .collect();
    if members.len() < 2 {
        return None;
    }
    let live = vectors.compact(&members);
    let clustering = cluster_threads(&live, params);
    let plan = mapping_plan(&clustering.clusters, cpus)?;
    let excluded = globally_shared_slots(&live, params);
    let lock_count = (0..live.threads())
        .map(|t| csf_lock_count(live.con_vector(t), &excluded, csf))
        .collect();
    let slots = (0..live.threads())
        .map(|t| {
            let row = live.con_vector(t).iter().zip(&excluded);
            row.filter(|&(&c, &ex)| c > 0 && !ex).count() as u32
        })
        .collect();
    Some(CaRound {
        samples: members.iter().map(|&t| vectors.events(t)).collect(),
        members,
        clustering,
        cpu: plan.cpu_of_thread,
        lock_count,
        slots,
        excluded: (0..excluded.len() as u32)
            .filter(|&k| excluded[k as usize])
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows 0..6: two planted groups of three (locks 100+g, 200+g) plus a
    /// lock everyone takes; row 6 is dead, row 7 never took a lock.
    fn planted() -> (SeVectors, Vec<bool>) {
        let mut v = SeVectors::with_threads(64, 8);
        for t in 0..6 {
            let g = (t / 3) as u64;
            for k in 0..64 {
                let lock = match k % 4 {
                    0 => 7,
                    1 | 2 => 100 + g,
                    _ => 200 + g,
                };
                v.record(t, lock);
            }
        }
        v.record(6, 100);
        let mut alive = vec![true; 8];
        alive[6] = false;
        (v, alive)
    }

    #[test]
    fn planted_groups_go_whole_to_one_cpu_each() {
        let (v, alive) = planted();
        let r = ca_round(
            &v,
            &alive,
            &CaParams::default(),
            &CsfParams::default(),
            &[0, 1],
        )
        .expect("six threads take part");
        assert_eq!(r.members, vec![0, 1, 2, 3, 4, 5]);
        let planted = [0, 0, 0, 1, 1, 1];
        let acc = crate::cluster::clustering_accuracy(&planted, &r.clustering.label);
        assert_eq!(acc, 1.0);
        assert_eq!(r.clustering.globally_shared, 1);
        assert!(r.cpu[..3].iter().all(|&c| c == r.cpu[0]));
        assert!(r.cpu[3..].iter().all(|&c| c == r.cpu[3]));
        assert_ne!(r.cpu[0], r.cpu[3]);
        // Two group locks each, the shared one not counted.
        assert_eq!(r.lock_count, vec![2; 6]);
    }

    /// The `groups` worker as the Linux monitor sampled it (`corral run
    /// --policy ca`, CORRAL_CA_DEBUG): thread t of `planted[t]`'s group
    /// holds `samples[t]` events, 1 in 33 on the lock every thread takes,
    /// the rest alternating over its group's two locks.
    fn sampled(planted: &[u32], samples: &[u32]) -> SeVectors {
        let mut v = SeVectors::with_threads(2048, planted.len());
        for (t, (&g, &n)) in planted.iter().zip(samples).enumerate() {
            for k in 0..n {
                let g = u64::from(g);
                let lock = match (k % 33, k % 2) {
                    (0, _) => 0x1000,
                    (_, 0) => 0x2000 + 0x100 * g,
                    _ => 0x8000 + 0x100 * g,
                };
                v.record(t, lock);
            }
        }
        v
    }

    fn accuracy_of(planted: &[u32], samples: &[u32]) -> (f64, CaRound) {
        let v = sampled(planted, samples);
        let alive = vec![true; planted.len()];
        let p = CaParams::default();
        let r = ca_round(&v, &alive, &p, &CsfParams::default(), &[0, 1]).expect("a round");
        let truth: Vec<u32> = r.members.iter().map(|&t| planted[t]).collect();
        let acc = crate::cluster::clustering_accuracy(&truth, &r.clustering.label);
        (acc, r)
    }

    #[test]
    fn part_full_vectors_still_cluster() {
        // A real round at 2 groups: one vector full, the rest 54-81% full.
        // Normalised by s^2 the pairs scored 0.14-0.29, under simThreshold,
        // and 8 clusters formed (accuracy 0.64).
        let planted = [0, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1];
        let samples = [
            1557, 2048, 1238, 1326, 2048, 1248, 1103, 2048, 1443, 1669, 1157, 2048,
        ];
        let (acc, r) = accuracy_of(&planted, &samples);
        assert_eq!(acc, 1.0, "{:?}", r.clustering);
        assert_eq!(r.clustering.clusters.len(), 2);
        assert_eq!(r.samples, samples.to_vec());
    }

    #[test]
    fn an_unbalanced_first_round_keeps_each_groups_locks() {
        // A real first round at 2 groups: two threads of group 0 not yet
        // spawned, so group 1's locks were touched by 6 of 10 threads,
        // "more than half": both were excluded, group 1's vectors emptied
        // and each of its threads formed its own cluster (accuracy 0.53).
        // Thread 5 had one sample: too few to take part.
        let planted = [0, 1, 1, 0, 1, 1, 0, 1, 0, 1];
        let samples = [246, 128, 157, 2048, 128, 1, 64, 1554, 192, 64];
        let (acc, r) = accuracy_of(&planted, &samples);
        assert!(!r.members.contains(&5), "{:?}", r.members);
        assert_eq!(acc, 1.0, "{:?}", r.clustering);
        // One of group 1's locks is excluded, never both.
        assert!(r.slots.iter().all(|&k| k >= 1), "{:?}", r.slots);
    }

    #[test]
    fn too_few_threads_or_cpus_decide_nothing() {
        let (v, _) = planted();
        let one = [true, false, false, false, false, false, false, false];
        let p = CaParams::default();
        let c = CsfParams::default();
        assert!(ca_round(&v, &one, &p, &c, &[0, 1]).is_none());
        assert!(ca_round(&v, &[true; 8], &p, &c, &[]).is_none());
    }
}
