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
    /// Table rows (threads) that took part: alive and with recorded events.
    pub members: Vec<usize>,
    /// The clustering of `members` (its thread indices index `members`).
    pub clustering: Clustering,
    /// CPU of every member, in `members` order.
    pub cpu: Vec<CoreId>,
    /// CSF's lockCount of every member (see [`csf_lock_count`]).
    pub lock_count: Vec<u32>,
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
/// at least one event, and maps them onto `cpus`. `None` when fewer than
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
        .filter(|&t| alive.get(t).copied().unwrap_or(false) && vectors.events(t) > 0)
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
    Some(CaRound {
        members,
        clustering,
        cpu: plan.cpu_of_thread,
        lock_count,
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
