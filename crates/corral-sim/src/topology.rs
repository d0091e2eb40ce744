//! The simulated machine: cores numbered in topology order (cores of one LLC
//! domain are consecutive, LLC domains of one NUMA node are consecutive), so
//! "the first `n` cores" is always the packing order the SSC uses.

use serde::Serialize;

/// Cores per last-level cache on the AMD 48-core machine of paper 3
/// (eight six-core Opteron 8431 dies, one die per NUMA node).
pub const PAPER3_CORES_PER_LLC: u32 = 6;
/// Clock of paper 3's machine (2.4 GHz), used to turn cycles into seconds.
pub const PAPER3_CLOCK_GHZ: f64 = 2.4;
/// Task migration latency by distance, microseconds: same chip, one, two and
/// three HyperTransport hops (paper 1, Sec. 4.1).
pub const PAPER1_MIGRATION_US: [f64; 4] = [9.3, 9.7, 10.2, 11.6];

/// A cache-coherent many-core machine.
///
/// Distance classes follow paper 1, Sec. 4.1: 0 = same chip (LLC), 1..=3 =
/// hops between NUMA nodes. Nodes are joined like a hypercube (hops = the
/// number of differing bits of the node ids, at most 3), which reproduces the
/// 1/2/3-hop mix of an eight-socket Opteron.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// Cores simulated (all of them are used by the default policy).
    pub cores: u32,
    /// Cores that share one last-level cache.
    pub cores_per_llc: u32,
    /// LLC domains per NUMA node.
    pub llcs_per_node: u32,
    /// Cycles per nanosecond.
    pub clock_ghz: f64,
    /// Task migration cost by distance class, in microseconds.
    pub migration_us: [f64; 4],
}

impl Machine {
    /// A machine of `cores` cores laid out like paper 3's AMD 48-core box,
    /// repeated as far as needed.
    pub fn paper3_like(cores: u32) -> Self {
        Machine {
            cores,
            cores_per_llc: PAPER3_CORES_PER_LLC,
            llcs_per_node: 1,
            clock_ghz: PAPER3_CLOCK_GHZ,
            migration_us: PAPER1_MIGRATION_US,
        }
    }

    /// The LLC domain `core` belongs to.
    #[inline]
    pub fn llc_of(&self, core: u32) -> u32 {
        core / self.cores_per_llc.max(1)
    }

    /// The NUMA node `core` belongs to.
    #[inline]
    pub fn node_of(&self, core: u32) -> u32 {
        self.llc_of(core) / self.llcs_per_node.max(1)
    }

    /// Distance class between two cores: 0 = same LLC, 1..=3 = node hops
    /// (two LLCs of one node count as one hop).
    #[inline]
    pub fn distance(&self, a: u32, b: u32) -> usize {
        if self.llc_of(a) == self.llc_of(b) {
            return 0;
        }
        let diff = self.node_of(a) ^ self.node_of(b);
        (diff.count_ones() as usize).clamp(1, 3)
    }

    /// Migration cost between two cores, in cycles (0 when they are equal).
    #[inline]
    pub fn migration_cycles(&self, from: u32, to: u32) -> f64 {
        if from == to {
            return 0.0;
        }
        self.migration_us[self.distance(from, to)] * 1000.0 * self.clock_ghz
    }
}

/// [`Machine::distance`] and [`Machine::migration_cycles`] from tables built
/// once: the engine asks at every lock handoff and migration, and the
/// divisions of `llc_of`/`node_of` were a tenth of a handoff's time.
#[derive(Clone, Debug)]
pub(crate) struct Distances {
    /// (LLC, node) of each core.
    place: Vec<(u32, u32)>,
    /// Migration cost by distance class, in cycles.
    migration: [f64; 4],
    /// Distance class of two cores on different LLCs by the XOR of their
    /// nodes: a table, since baseline x86-64 has no popcount instruction
    /// and this runs at every contended acquisition.
    hops: Vec<u8>,
}

impl Distances {
    pub(crate) fn new(m: &Machine) -> Self {
        Distances {
            place: (0..m.cores).map(|c| (m.llc_of(c), m.node_of(c))).collect(),
            migration: m.migration_us.map(|us| us * 1000.0 * m.clock_ghz),
            hops: (0..(m.node_of(m.cores.max(1) - 1) + 1).next_power_of_two())
                .map(|x: u32| x.count_ones().clamp(1, 3) as u8)
                .collect(),
        }
    }

    /// As [`Machine::distance`].
    #[inline]
    pub(crate) fn distance(&self, a: u32, b: u32) -> usize {
        let (la, na) = self.place[a as usize];
        let (lb, nb) = self.place[b as usize];
        if la == lb {
            return 0;
        }
        self.hops[(na ^ nb) as usize] as usize
    }

    /// As [`Machine::migration_cycles`].
    #[inline]
    pub(crate) fn migration_cycles(&self, from: u32, to: u32) -> f64 {
        if from == to {
            return 0.0;
        }
        self.migration[self.distance(from, to)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_grow_with_topology() {
        let m = Machine::paper3_like(48);
        assert_eq!(m.distance(0, 5), 0);
        assert_eq!(m.distance(0, 6), 1); // node 0 -> node 1
        assert_eq!(m.distance(0, 18), 2); // node 0 -> node 3
        assert_eq!(m.distance(0, 42), 3); // node 0 -> node 7
        assert_eq!(m.migration_cycles(3, 3), 0.0);
        assert!(m.migration_cycles(0, 42) > m.migration_cycles(0, 1));
    }

    #[test]
    fn tables_answer_as_the_machine() {
        for m in [Machine::paper3_like(48), Machine::paper3_like(1024)] {
            let d = Distances::new(&m);
            for a in (0..m.cores).step_by(7) {
                for b in (0..m.cores).step_by(5) {
                    assert_eq!(d.distance(a, b), m.distance(a, b));
                    assert_eq!(d.migration_cycles(a, b), m.migration_cycles(a, b));
                }
            }
        }
    }
}
