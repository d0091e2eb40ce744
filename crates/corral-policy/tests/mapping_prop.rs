//! Properties of the CA mapping plan (paper 5, Sec. 2.3.1).
//!
//! What balance the plan can promise: strong clusters are never split, so a
//! large one can force a CPU above `T_avg`. Hence:
//! - always: every thread is mapped exactly once, and every strong cluster
//!   sits whole on one CPU;
//! - always: weak threads go only to CPUs still underutilised after the
//!   strong step, and level out there: a CPU that received weak threads has
//!   at most one thread more than any CPU of that underutilised list;
//! - when every cluster is weak, or every strong cluster is a single thread,
//!   every CPU's load is within one of `T_avg` (floor or ceil of it).

use corral_policy::cluster::{mapping_plan, Cluster};
use corral_policy::CoreId;
use proptest::prelude::*;

/// Clusters with the given sizes and strong flags over a shuffled
/// permutation of the thread ids.
fn clusters_strategy(max_clusters: usize) -> impl Strategy<Value = Vec<Cluster>> {
    prop::collection::vec((1usize..12, any::<bool>()), 0..max_clusters).prop_flat_map(|shape| {
        let n: usize = shape.iter().map(|&(size, _)| size).sum();
        let ids: Vec<u32> = (0..n as u32).collect();
        (Just(shape), Just(ids).prop_shuffle()).prop_map(|(shape, ids)| {
            let mut rest = ids.as_slice();
            shape
                .into_iter()
                .map(|(size, strong)| {
                    let (mine, tail) = rest.split_at(size);
                    rest = tail;
                    Cluster {
                        threads: mine.to_vec(),
                        intensity: if strong { 0.9 } else { 0.1 },
                        strong,
                    }
                })
                .collect()
        })
    })
}

fn cpus(n: u32) -> Vec<CoreId> {
    // Non-contiguous ids: the plan must use the ids it is given.
    (0..n).map(|i| 3 * i + 1).collect()
}

fn within_one_of_average(load: &[u32], threads: usize) {
    let t_avg = threads as f64 / load.len() as f64;
    for &l in load {
        assert!(
            f64::from(l) >= t_avg.floor() && f64::from(l) <= t_avg.ceil(),
            "load {l} vs T_avg {t_avg}: {load:?}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_thread_once_and_strong_clusters_whole(clusters in clusters_strategy(14), n_cpus in 1u32..9) {
        let cpus = cpus(n_cpus);
        let plan = mapping_plan(&clusters, &cpus).unwrap();
        let n: usize = clusters.iter().map(|c| c.threads.len()).sum();
        prop_assert_eq!(plan.cpu_of_thread.len(), n);
        let mut counted = vec![0u32; cpus.len()];
        for &cpu in &plan.cpu_of_thread {
            let i = cpus.iter().position(|&c| c == cpu);
            prop_assert!(i.is_some(), "unknown cpu {}", cpu);
            counted[i.unwrap()] += 1;
        }
        prop_assert_eq!(&counted, &plan.load);
        for c in clusters.iter().filter(|c| c.strong) {
            let first = plan.cpu_of_thread[c.threads[0] as usize];
            prop_assert!(c.threads.iter().all(|&t| plan.cpu_of_thread[t as usize] == first));
        }
    }

    #[test]
    fn weak_threads_level_out_on_the_underutilised_cpus(clusters in clusters_strategy(14), n_cpus in 1u32..9) {
        let cpus = cpus(n_cpus);
        let plan = mapping_plan(&clusters, &cpus).unwrap();
        let index = |cpu: CoreId| cpus.iter().position(|&c| c == cpu).unwrap();
        let mut got_weak = vec![false; cpus.len()];
        for c in clusters.iter().filter(|c| !c.strong) {
            for &t in &c.threads {
                got_weak[index(plan.cpu_of_thread[t as usize])] = true;
            }
        }
        let under: Vec<usize> = plan.underutilised.iter().map(|&c| index(c)).collect();
        for (i, &weak) in got_weak.iter().enumerate() {
            if !weak {
                continue;
            }
            prop_assert!(under.contains(&i), "cpu {} was full after the strong step", cpus[i]);
            for &j in &under {
                prop_assert!(plan.load[i] <= plan.load[j] + 1, "{:?} under {:?}", plan.load, under);
            }
        }
    }

    #[test]
    fn all_weak_is_balanced_within_one(sizes in prop::collection::vec(1usize..20, 0..12), n_cpus in 1u32..17) {
        let mut next = 0u32;
        let clusters: Vec<Cluster> = sizes
            .iter()
            .map(|&size| {
                let threads = (next..next + size as u32).collect();
                next += size as u32;
                Cluster { threads, intensity: 0.0, strong: false }
            })
            .collect();
        let plan = mapping_plan(&clusters, &cpus(n_cpus)).unwrap();
        within_one_of_average(&plan.load, next as usize);
    }

    #[test]
    fn singleton_strong_clusters_keep_balance_within_one(
        clusters in clusters_strategy(14),
        n_cpus in 1u32..9,
    ) {
        // Turn every strong cluster into singletons, keep weak ones.
        let clusters: Vec<Cluster> = clusters
            .into_iter()
            .flat_map(|c| {
                if c.strong {
                    c.threads.iter().map(|&t| Cluster { threads: vec![t], intensity: 0.9, strong: true }).collect()
                } else {
                    vec![c]
                }
            })
            .collect();
        let n: usize = clusters.iter().map(|c| c.threads.len()).sum();
        let plan = mapping_plan(&clusters, &cpus(n_cpus)).unwrap();
        within_one_of_average(&plan.load, n);
    }
}
