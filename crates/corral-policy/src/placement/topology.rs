//! The topology order whose prefixes pack the fewest NUMA nodes and
//! last-level-cache (LLC) domains.
//!
//! Paper 1 (Cui et al., TACO 2013), Sec. 3.3, allocates SSC cores by
//! consecutive id because on its machines consecutive ids share a chip, and
//! notes that other machines need "an extra core id mapping layer in
//! software". [`Topology::ssc_order`] is that layer: the SSC of size `k` is
//! always the first `k` cores of the order, never the first `k` raw ids.

use crate::CoreId;
use serde::Serialize;

/// One logical CPU and the cache and memory domains it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CoreInfo {
    /// The id the OS (or the simulator) uses for this CPU.
    pub id: CoreId,
    /// Last-level-cache domain; cores with the same `(node, llc)` share it.
    pub llc: u32,
    /// NUMA node.
    pub node: u32,
}

/// Why a topology could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TopologyError {
    /// The per-core slices passed to [`Topology::from_parts`] differ in length.
    LengthMismatch,
    /// A core id appears twice.
    DuplicateCore(CoreId),
}

impl std::fmt::Display for TopologyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TopologyError::LengthMismatch => write!(f, "core, llc and node lists differ in length"),
            TopologyError::DuplicateCore(id) => write!(f, "core {id} listed twice"),
        }
    }
}

impl std::error::Error for TopologyError {}

/// The machine as the policy sees it: cores with their LLC and NUMA node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Topology {
    /// Every core the policy may place threads on, in no particular order.
    pub cores: Vec<CoreInfo>,
}

impl Topology {
    /// A regular machine: `n_cores` cores numbered `0..n_cores`, consecutive
    /// ids sharing an LLC of `cores_per_llc` cores, `llcs_per_node` LLCs per
    /// NUMA node (the last LLC and node may be partial).
    ///
    /// Zero sizes are treated as one.
    pub fn uniform(n_cores: u32, cores_per_llc: u32, llcs_per_node: u32) -> Self {
        let cores_per_llc = cores_per_llc.max(1);
        let llcs_per_node = llcs_per_node.max(1);
        let cores = (0..n_cores)
            .map(|id| {
                let llc = id / cores_per_llc;
                CoreInfo {
                    id,
                    llc,
                    node: llc / llcs_per_node,
                }
            })
            .collect();
        Topology { cores }
    }

    /// A machine described core by core: `ids[i]` sits in LLC `llc_of[i]` on
    /// node `node_of[i]` (as read from sysfs, or made up by a test).
    pub fn from_parts(
        ids: &[CoreId],
        llc_of: &[u32],
        node_of: &[u32],
    ) -> Result<Self, TopologyError> {
        if ids.len() != llc_of.len() || ids.len() != node_of.len() {
            return Err(TopologyError::LengthMismatch);
        }
        let mut seen: Vec<CoreId> = ids.to_vec();
        seen.sort_unstable();
        if let Some(pair) = seen.windows(2).find(|w| w[0] == w[1]) {
            return Err(TopologyError::DuplicateCore(pair[0]));
        }
        let cores = ids
            .iter()
            .zip(llc_of)
            .zip(node_of)
            .map(|((&id, &llc), &node)| CoreInfo { id, llc, node })
            .collect();
        Ok(Topology { cores })
    }

    /// Number of cores.
    pub fn len(&self) -> usize {
        self.cores.len()
    }

    /// True when the topology has no cores.
    pub fn is_empty(&self) -> bool {
        self.cores.is_empty()
    }

    /// The order in which cores join the SSC.
    ///
    /// Nodes are taken largest first and filled completely before the next;
    /// inside a node, LLC domains are taken largest first and filled before
    /// the next; inside an LLC, by id. Ties go to the lower id, so the order
    /// is deterministic.
    ///
    /// Guarantee, for every prefix length `k`: the prefix spans the fewest
    /// NUMA nodes any `k` cores can span, and the fewest LLC domains possible
    /// once nodes are filled one at a time. Nodes take priority over LLCs
    /// because a cross-node transfer is the costlier (paper 1, Sec. 4.1:
    /// migration latency grows with hops); with uneven domains the two goals
    /// can conflict, and no single order can be best for both at every `k`.
    /// Among equally large nodes, the one with the larger LLCs goes first.
    pub fn ssc_order(&self) -> Vec<CoreId> {
        let mut nodes = self.domains();
        nodes.sort_by(|a, b| {
            let size_a: usize = a.llcs.iter().map(|l| l.cores.len()).sum();
            let size_b: usize = b.llcs.iter().map(|l| l.cores.len()).sum();
            size_b
                .cmp(&size_a)
                .then_with(|| b.llc_sizes().cmp(&a.llc_sizes()))
                .then_with(|| a.first_core().cmp(&b.first_core()))
        });
        let mut order = Vec::with_capacity(self.cores.len());
        for node in &nodes {
            for llc in &node.llcs {
                order.extend_from_slice(&llc.cores);
            }
        }
        order
    }

    /// The SSC of `k` cores (the first `k` of [`Self::ssc_order`]) and the
    /// remaining general cores. `k` is clamped to the number of cores.
    pub fn split(&self, k: usize) -> (Vec<CoreId>, Vec<CoreId>) {
        let mut order = self.ssc_order();
        let complement = order.split_off(k.min(order.len()));
        (order, complement)
    }

    /// Groups cores into nodes, and each node's cores into LLCs sorted
    /// largest first (ties by lowest core id), cores sorted by id.
    fn domains(&self) -> Vec<NodeDomain> {
        let mut sorted = self.cores.clone();
        sorted.sort_by_key(|c| (c.node, c.llc, c.id));
        let mut nodes: Vec<NodeDomain> = Vec::new();
        for core in sorted {
            if nodes.last().map(|n| n.node) != Some(core.node) {
                nodes.push(NodeDomain {
                    node: core.node,
                    llcs: Vec::new(),
                });
            }
            let node = nodes.last_mut().expect("just pushed");
            if node.llcs.last().map(|l| l.llc) != Some(core.llc) {
                node.llcs.push(LlcDomain {
                    llc: core.llc,
                    cores: Vec::new(),
                });
            }
            node.llcs
                .last_mut()
                .expect("just pushed")
                .cores
                .push(core.id);
        }
        for node in &mut nodes {
            node.llcs.sort_by(|a, b| {
                b.cores
                    .len()
                    .cmp(&a.cores.len())
                    .then_with(|| a.cores[0].cmp(&b.cores[0]))
            });
        }
        nodes
    }
}

struct LlcDomain {
    llc: u32,
    cores: Vec<CoreId>,
}

struct NodeDomain {
    node: u32,
    /// Largest first.
    llcs: Vec<LlcDomain>,
}

impl NodeDomain {
    /// LLC sizes, largest first: compares which node packs better.
    fn llc_sizes(&self) -> Vec<usize> {
        self.llcs.iter().map(|l| l.cores.len()).collect()
    }

    fn first_core(&self) -> CoreId {
        self.llcs
            .iter()
            .flat_map(|l| l.cores.iter().copied())
            .min()
            .unwrap_or(CoreId::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_order_is_identity() {
        let topo = Topology::uniform(32, 4, 2);
        let expected: Vec<CoreId> = (0..32).collect();
        assert_eq!(topo.ssc_order(), expected);
    }

    #[test]
    fn interleaved_ids_are_regrouped_by_llc() {
        // Two LLCs whose ids alternate, as on many two-socket machines.
        let ids = [0, 1, 2, 3, 4, 5];
        let llc = [0, 1, 0, 1, 0, 1];
        let node = [0, 1, 0, 1, 0, 1];
        let topo = Topology::from_parts(&ids, &llc, &node).unwrap();
        assert_eq!(topo.ssc_order(), vec![0, 2, 4, 1, 3, 5]);
        let (ssc, rest) = topo.split(2);
        assert_eq!(ssc, vec![0, 2]);
        assert_eq!(rest, vec![4, 1, 3, 5]);
    }

    #[test]
    fn larger_node_and_llc_go_first() {
        // Node 0: one LLC of 2 cores. Node 1: LLCs of 1 and 3 cores.
        let ids = [0, 1, 2, 3, 4, 5];
        let llc = [0, 0, 1, 2, 2, 2];
        let node = [0, 0, 1, 1, 1, 1];
        let topo = Topology::from_parts(&ids, &llc, &node).unwrap();
        assert_eq!(topo.ssc_order(), vec![3, 4, 5, 2, 0, 1]);
    }

    #[test]
    fn from_parts_rejects_bad_input() {
        assert_eq!(
            Topology::from_parts(&[0, 1], &[0], &[0, 0]),
            Err(TopologyError::LengthMismatch)
        );
        assert_eq!(
            Topology::from_parts(&[3, 3], &[0, 0], &[0, 0]),
            Err(TopologyError::DuplicateCore(3))
        );
    }
}
