//! Properties of the SSC topology order on random, possibly uneven machines.

use corral_policy::placement::Topology;
use corral_policy::CoreId;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// A random machine: 1-4 nodes, each with 1-4 LLCs of 1-6 cores; core ids
/// shuffled so ids say nothing about domains.
fn topology() -> impl Strategy<Value = Topology> {
    prop::collection::vec(prop::collection::vec(1usize..=6, 1..=4), 1..=4)
        .prop_flat_map(|nodes| {
            let n: usize = nodes.iter().flatten().sum();
            (
                Just(nodes),
                Just((0..n as CoreId).collect::<Vec<_>>()).prop_shuffle(),
            )
        })
        .prop_map(|(nodes, ids)| {
            let (mut llc_of, mut node_of) = (Vec::new(), Vec::new());
            let mut llc_id = 0;
            for (node, llcs) in nodes.iter().enumerate() {
                for &size in llcs {
                    llc_of.extend(std::iter::repeat_n(llc_id, size));
                    node_of.extend(std::iter::repeat_n(node as u32, size));
                    llc_id += 1;
                }
            }
            Topology::from_parts(&ids, &llc_of, &node_of).unwrap()
        })
}

fn domain_of(topo: &Topology) -> BTreeMap<CoreId, (u32, u32)> {
    topo.cores.iter().map(|c| (c.id, (c.node, c.llc))).collect()
}

/// Fewest nodes any k cores can span: largest nodes first.
fn min_nodes(topo: &Topology, k: usize) -> usize {
    let mut sizes: BTreeMap<u32, usize> = BTreeMap::new();
    for core in &topo.cores {
        *sizes.entry(core.node).or_default() += 1;
    }
    let mut sizes: Vec<usize> = sizes.into_values().collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let mut covered = 0;
    sizes
        .iter()
        .take_while(|&&s| {
            let needed = covered < k;
            covered += s;
            needed
        })
        .count()
}

/// Fewest LLCs that hold `k` cores inside one node: largest LLCs first.
fn min_llcs_in_node(topo: &Topology, node: u32, k: usize) -> usize {
    let mut sizes: BTreeMap<u32, usize> = BTreeMap::new();
    for core in topo.cores.iter().filter(|c| c.node == node) {
        *sizes.entry(core.llc).or_default() += 1;
    }
    let mut sizes: Vec<usize> = sizes.into_values().collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    let mut covered = 0;
    sizes
        .iter()
        .take_while(|&&s| {
            let needed = covered < k;
            covered += s;
            needed
        })
        .count()
}

proptest! {
    #[test]
    fn ssc_and_complement_partition_the_cores(topo in topology(), k in 0usize..=100) {
        let (ssc, rest) = topo.split(k);
        prop_assert_eq!(ssc.len(), k.min(topo.len()));
        let ssc_set: BTreeSet<CoreId> = ssc.iter().copied().collect();
        let rest_set: BTreeSet<CoreId> = rest.iter().copied().collect();
        prop_assert_eq!(ssc_set.len(), ssc.len(), "no duplicates");
        prop_assert!(ssc_set.is_disjoint(&rest_set));
        let all: BTreeSet<CoreId> = topo.cores.iter().map(|c| c.id).collect();
        let union: BTreeSet<CoreId> = ssc_set.union(&rest_set).copied().collect();
        prop_assert_eq!(union, all);
    }

    #[test]
    fn every_prefix_spans_the_fewest_domains(topo in topology()) {
        let order = topo.ssc_order();
        let domain = domain_of(&topo);
        for k in 1..=order.len() {
            let prefix = &order[..k];
            let nodes: BTreeSet<u32> = prefix.iter().map(|c| domain[c].0).collect();
            prop_assert_eq!(nodes.len(), min_nodes(&topo, k), "k = {}", k);
            // Nodes are filled one at a time: only the last one is partial,
            // and inside it the LLCs used are the fewest possible.
            let last_node = domain[&prefix[k - 1]].0;
            let in_last = prefix.iter().filter(|c| domain[*c].0 == last_node).count();
            let llcs_in_last: BTreeSet<u32> =
                prefix.iter().filter(|c| domain[*c].0 == last_node).map(|c| domain[c].1).collect();
            prop_assert_eq!(llcs_in_last.len(), min_llcs_in_node(&topo, last_node, in_last), "k = {}", k);
            let full_nodes_cores = k - in_last;
            let full: usize = nodes.iter().filter(|&&n| n != last_node)
                .map(|&n| topo.cores.iter().filter(|c| c.node == n).count()).sum();
            prop_assert_eq!(full, full_nodes_cores, "earlier nodes are full at k = {}", k);
        }
    }

    #[test]
    fn regular_machines_reach_the_global_llc_minimum(
        nodes in 1u32..=4, llcs in 1u32..=4, per_llc in 1u32..=8,
    ) {
        let topo = Topology::uniform(nodes * llcs * per_llc, per_llc, llcs);
        let order = topo.ssc_order();
        let domain = domain_of(&topo);
        for k in 1..=order.len() {
            let spanned: BTreeSet<(u32, u32)> = order[..k].iter().map(|c| domain[c]).collect();
            prop_assert_eq!(spanned.len(), k.div_ceil(per_llc as usize));
        }
    }
}
