//! The CA-Scheduler's Linux driver (paper 5, Sec. 2.3): drains each
//! thread's sampled lock ids into its seVector, and once one is full runs
//! `corral_policy::cluster::ca_round`, pins every member to the CPU its
//! cluster was mapped to (read back with `sched_getaffinity`), gives CSF's
//! nice bonus when asked, and starts the next recording round: usage that
//! changes re-clusters the threads at the next full vector.

use corral_policy::cluster::{ca_round, similarity_matrix, CaParams, SeVectors};
use corral_policy::csf::CsfParams;
use serde::Serialize;

use crate::affinity::{get_thread_affinity, set_thread_affinity};
use crate::csf::apply_nice;
use crate::registry::LockTrail;

/// What the driver knows of one registry slot.
#[derive(Clone, Debug, Default)]
struct Member {
    tid: i32,
    alive: bool,
    /// The trail's head when last drained.
    seen: u32,
    /// The CPU corral pinned it to.
    pinned: Option<u32>,
    /// The program pinned this thread itself: corral leaves it alone.
    own_mask: bool,
    /// Its nice before CSF touched it.
    base_nice: Option<i32>,
}

/// One thread after a round; a reported figure.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct CaThread {
    /// Thread id.
    pub tid: i32,
    /// Its cluster in this round.
    pub cluster: u32,
    /// The CPU the plan gave it.
    pub cpu: u32,
    /// Its affinity read back after the round (empty: gone or unreadable).
    pub read_back: Vec<u32>,
    /// CSF's nice read back (`getpriority`), when CSF runs.
    pub nice: Option<i32>,
    /// Lock ids sampled into its seVector this round.
    #[serde(default)]
    pub samples: u32,
    /// Its conVector's non-zero slots outside the globally shared ones.
    #[serde(default)]
    pub slots: u32,
}

/// One clustering round as applied; a reported figure.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct CaApplied {
    /// Rounds so far, this one included.
    pub round: u32,
    /// Every member.
    pub threads: Vec<CaThread>,
    /// Clusters formed.
    pub clusters: u32,
    /// Strong-contention clusters among them.
    pub strong: u32,
    /// conVector slots excluded as globally shared.
    pub globally_shared: u32,
    /// Threads whose affinity changed this round.
    pub moved: u32,
    /// Which conVector slots were excluded as globally shared.
    #[serde(default)]
    pub excluded: Vec<u32>,
    /// Under `CORRAL_CA_DEBUG`: the members' similarity matrix, in
    /// `threads` order, rounded to 1e-3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity: Option<Vec<Vec<f64>>>,
}

/// The CA-Scheduler beside the monitor: one per process.
#[derive(Debug)]
pub struct CaDriver {
    params: CaParams,
    csf: Option<CsfParams>,
    cpus: Vec<u32>,
    vectors: SeVectors,
    members: Vec<Member>,
    rounds: u32,
    /// Ticks since the first vector of this round filled.
    waited: u32,
    /// Log every round's similarity matrix.
    debug: bool,
}

impl CaDriver {
    /// A driver over the process's `cpus`; `csf` adds the nice bonus.
    pub fn new(params: CaParams, csf: Option<CsfParams>, mut cpus: Vec<u32>) -> Self {
        cpus.sort_unstable();
        CaDriver {
            params,
            csf,
            cpus,
            vectors: SeVectors::new(params.se_vector_size),
            members: Vec::new(),
            rounds: 0,
            waited: 0,
            debug: false,
        }
    }

    /// Whether each round also reports its similarity matrix.
    pub fn set_debug(&mut self, on: bool) {
        self.debug = on;
    }

    /// Rounds applied so far.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// Whether the program has enough live threads to record (paper 5's
    /// `min_threads`); until then there is nothing to cluster.
    pub fn recording(&self) -> bool {
        let live = self.members.iter().filter(|m| m.alive).count();
        self.params.should_record(live)
    }

    /// Drains slot `slot`'s `trail` (thread `tid`, `alive` unless it has
    /// exited) into its seVector; nothing is recorded while the program has
    /// fewer than `min_threads` live threads (paper 5, Sec. 2.3.1).
    pub fn observe(&mut self, slot: usize, tid: i32, alive: bool, trail: &LockTrail) {
        while self.members.len() <= slot {
            self.members.push(Member::default());
            self.vectors.add_thread();
        }
        let m = &mut self.members[slot];
        if m.tid != tid {
            // A new thread (or a reused slot): its history starts now.
            *m = Member {
                tid,
                alive,
                seen: trail.drain(0, |_| {}),
                ..Member::default()
            };
            return;
        }
        m.alive = alive;
        let live = self.members.iter().filter(|m| m.alive).count();
        let record = alive && self.params.should_record(live);
        let vectors = &mut self.vectors;
        let m = &mut self.members[slot];
        m.seen = trail.drain(m.seen, |id| {
            if record {
                vectors.record(slot, id);
            }
        });
    }

    /// Runs a round once some vector is full: clusters, maps, applies and
    /// reads back, then empties the vectors for the next round.
    #[cold]
    pub fn round(&mut self) -> Option<CaApplied> {
        if !self.vectors.any_full() {
            return None;
        }
        let events = |t: usize| self.members[t].alive.then(|| self.vectors.events(t));
        let counts = (0..self.members.len()).filter_map(events);
        let enough = self.params.min_samples.clamp(1, self.vectors.size());
        // Every live thread counts, sampled yet or not: a round with the
        // first few to run would plan without the rest.
        let (recording, ready) =
            counts.fold((0, 0), |(r, k), e| (r + 1, k + usize::from(e >= enough)));
        let full = self.vectors.full_count();
        if !self.params.round_due(full, ready, recording, self.waited) {
            self.waited += 1;
            return None;
        }
        self.waited = 0;
        let alive: Vec<bool> = self.members.iter().map(|m| m.alive).collect();
        let csf = self.csf.unwrap_or_default();
        let decided = ca_round(&self.vectors, &alive, &self.params, &csf, &self.cpus);
        let similarity = decided.as_ref().filter(|_| self.debug).map(|d| {
            let live = self.vectors.compact(&d.members);
            let round = |x: f64| (x * 1e3).round() / 1e3;
            let m = similarity_matrix(&live, &self.params);
            m.into_iter()
                .map(|row| row.into_iter().map(round).collect())
                .collect()
        });
        self.vectors.reset();
        let decided = decided?;
        self.rounds += 1;
        let mut threads = Vec::with_capacity(decided.members.len());
        let mut moved = 0;
        for (k, &slot) in decided.members.iter().enumerate() {
            let cpu = decided.cpu[k];
            let m = &mut self.members[slot];
            if m.pinned.is_none() && !m.own_mask {
                // A mask narrower than the process's is the program's own.
                m.own_mask = get_thread_affinity(m.tid).is_ok_and(|now| now != self.cpus);
            }
            if !m.own_mask && m.pinned != Some(cpu) && set_thread_affinity(m.tid, &[cpu]).is_ok() {
                m.pinned = Some(cpu);
                moved += 1;
            }
            let nice = self.csf.map(|csf| {
                let base = *m
                    .base_nice
                    .get_or_insert_with(|| corral_locks::sys::sched::nice_of(m.tid).unwrap_or(0));
                let asked = base - csf.bonus(decided.lock_count[k]);
                apply_nice(m.tid, asked.clamp(-20, 19)).read_back
            });
            threads.push(CaThread {
                tid: m.tid,
                cluster: decided.clustering.label[k],
                cpu,
                read_back: get_thread_affinity(m.tid).unwrap_or_default(),
                nice: nice.flatten(),
                samples: decided.samples[k],
                slots: decided.slots[k],
            });
        }
        let clusters = &decided.clustering.clusters;
        Some(CaApplied {
            round: self.rounds,
            threads,
            clusters: clusters.len() as u32,
            strong: clusters.iter().filter(|c| c.strong).count() as u32,
            globally_shared: decided.clustering.globally_shared,
            moved,
            excluded: decided.excluded,
            similarity,
        })
    }
}

#[cfg(test)]
#[path = "ca_tests.rs"]
mod tests;
