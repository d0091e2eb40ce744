//! CA clustering (paper 5, Sec. 2.3): lock-usage similarity, clusters,
//! globally shared locks and the CPU mapping plan.

use corral_policy::cluster::{
    cluster_threads, clustering_accuracy, globally_shared_slots, mapping_plan, similarity,
    CaParams, Cluster, SeVectors,
};

/// splitmix64: a small deterministic generator for synthetic workloads.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Workload {
    vectors: SeVectors,
    truth: Vec<u32>,
}

/// Planted lock-sharing groups (each on a primary and a secondary lock),
/// loners on private locks, a few globally shared locks touched by every
/// thread, and noise acquisitions of random locks from a large pool.
fn planted(seed: u64, global_share: f64, noise_share: f64) -> Workload {
    let mut rng = Rng(seed);
    let s = CaParams::default().se_vector_size;
    let groups = 4 + rng.below(3) as u32;
    let mut truth = Vec::new();
    for g in 0..groups {
        for _ in 0..3 + rng.below(5) {
            truth.push(g);
        }
    }
    let loners = 1 + rng.below(3) as u32;
    for l in 0..loners {
        truth.push(groups + l);
    }
    let globals: Vec<u64> = (0..3).map(|_| rng.next()).collect();
    let primary: Vec<u64> = (0..groups + loners).map(|_| rng.next()).collect();
    let secondary: Vec<u64> = (0..groups).map(|_| rng.next()).collect();
    let mut vectors = SeVectors::with_threads(s, truth.len());
    for (thread, &group) in truth.iter().enumerate() {
        for _ in 0..s {
            let u = rng.unit();
            let lock = if u < global_share {
                globals[rng.below(3) as usize]
            } else if u < global_share + noise_share {
                1 << 40 | rng.below(50_000)
            } else if group >= groups || rng.unit() < 0.9 {
                primary[group as usize]
            } else {
                secondary[group as usize]
            };
            vectors.record(thread, lock);
        }
    }
    Workload { vectors, truth }
}

#[test]
fn recording_fills_to_s_and_stops() {
    let mut v = SeVectors::new(8);
    let t = v.add_thread();
    assert_eq!(v.threads(), 1);
    for i in 0..7 {
        assert!(!v.record(t, i % 2));
    }
    assert!(!v.any_full());
    assert!(v.record(t, 0));
    assert!(v.any_full());
    assert!(v.record(t, 5)); // dropped
    assert_eq!(v.events(t), 8);
    assert_eq!(
        v.con_vector(t).iter().map(|&c| u32::from(c)).sum::<u32>(),
        8
    );
    assert_eq!(
        v.con_vector(t)[v.slot_of(0)],
        if v.slot_of(0) == v.slot_of(1) { 8 } else { 5 }
    );
    v.reset();
    assert_eq!(v.events(t), 0);
    assert!(!v.any_full());
    assert!(CaParams::default().should_record(10));
    assert!(!CaParams::default().should_record(9));
}

#[test]
fn similarity_is_the_normalised_vector_product() {
    let a = [4u16, 4, 0, 0];
    let b = [2u16, 0, 2, 4];
    assert_eq!(similarity(&a, &b, 8), 8.0 / 64.0);
    assert_eq!(similarity(&a, &a, 8), 0.5);
    assert_eq!(similarity(&[8, 0], &[8, 0], 8), 1.0);
}

#[test]
fn planted_groups_are_recovered_across_seeds() {
    for seed in 1..=6 {
        let w = planted(seed, 0.15, 0.08);
        let c = cluster_threads(&w.vectors, &CaParams::default());
        let accuracy = clustering_accuracy(&w.truth, &c.label);
        // Trivial answers score well when most pairs are apart: beat them.
        let n = w.truth.len() as u32;
        let singletons = clustering_accuracy(&w.truth, &(0..n).collect::<Vec<_>>());
        let one_cluster = clustering_accuracy(&w.truth, &vec![0; n as usize]);
        assert!(accuracy >= 0.9, "seed {seed}: accuracy {accuracy}");
        assert!(accuracy > singletons + 0.05 && accuracy > one_cluster + 0.05);
        assert!(c.globally_shared >= 3, "seed {seed}: {}", c.globally_shared);
        let mut seen = vec![0; w.truth.len()];
        for cluster in &c.clusters {
            for &t in &cluster.threads {
                seen[t as usize] += 1;
                assert_eq!(
                    c.label[t as usize] as usize,
                    c.clusters.iter().position(|x| x == cluster).unwrap()
                );
            }
        }
        assert!(seen.iter().all(|&n| n == 1));
    }
}

#[test]
fn globally_shared_locks_are_found_and_ignored() {
    // Threads 0-3 share nothing but one global lock (60% of their events).
    let s = 100;
    let mut v = SeVectors::with_threads(s, 4);
    for t in 0..4 {
        for i in 0..s {
            let lock = if i < 60 { 7 } else { 1000 + t as u64 };
            v.record(t, lock);
        }
    }
    let params = CaParams {
        se_vector_size: s,
        ..CaParams::default()
    };
    let shared = globally_shared_slots(&v, &params);
    assert!(shared[v.slot_of(7)]);
    assert_eq!(shared.iter().filter(|&&x| x).count(), 1);
    let apart = cluster_threads(&v, &params);
    assert_eq!(apart.clusters.len(), 4);
    // Without the exclusion, 0.6^2 = 0.36 > 0.3 would merge all of them.
    let naive = CaParams {
        global_share: 1.0,
        ..params
    };
    let merged = cluster_threads(&v, &naive);
    assert_eq!(merged.clusters.len(), 1);
    assert!((merged.clusters[0].intensity - 0.36).abs() < 1e-12);
    assert!(!merged.clusters[0].strong);
}

#[test]
fn a_lock_touched_by_exactly_half_is_not_global() {
    let mut v = SeVectors::with_threads(4, 4);
    for t in 0..2 {
        for _ in 0..4 {
            v.record(t, 9);
        }
    }
    let shared = globally_shared_slots(
        &v,
        &CaParams {
            se_vector_size: 4,
            ..CaParams::default()
        },
    );
    assert!(!shared[v.slot_of(9)]);
}

#[test]
fn intensity_separates_strong_from_weak() {
    let mut w = planted(42, 0.1, 0.0);
    let c = cluster_threads(&w.vectors, &CaParams::default());
    // 90% of 90% on the primary lock: similarity ~0.66, strong.
    assert!(c
        .clusters
        .iter()
        .filter(|c| c.threads.len() > 1)
        .all(|c| c.strong && c.intensity > 0.6));
    assert!(c
        .clusters
        .iter()
        .filter(|c| c.threads.len() == 1)
        .all(|c| !c.strong && c.intensity == 0.0));
    // Spread each group evenly over three locks: similarity 1/3, weak.
    w.vectors.reset();
    for t in 0..w.truth.len() {
        for i in 0..2048u64 {
            w.vectors.record(t, u64::from(w.truth[t]) * 3 + i % 3);
        }
    }
    let c = cluster_threads(&w.vectors, &CaParams::default());
    assert_eq!(clustering_accuracy(&w.truth, &c.label), 1.0);
    assert!(c.clusters.iter().all(|c| !c.strong));
}

#[test]
fn accuracy_matches_the_pair_definition() {
    assert_eq!(clustering_accuracy(&[0, 0, 1, 1], &[5, 5, 7, 7]), 1.0);
    // Pairs: (0,1) agree, (2,3) disagree, cross pairs: (0,2)(0,3)(1,2)(1,3) agree.
    assert_eq!(clustering_accuracy(&[0, 0, 1, 1], &[0, 0, 1, 2]), 5.0 / 6.0);
    assert_eq!(clustering_accuracy(&[0, 0, 0], &[1, 2, 3]), 0.0);
    assert_eq!(clustering_accuracy(&[3], &[4]), 1.0);
}

fn cluster(threads: std::ops::Range<u32>, strong: bool) -> Cluster {
    Cluster {
        threads: threads.collect(),
        intensity: if strong { 0.5 } else { 0.1 },
        strong,
    }
}

#[test]
fn mapping_plan_follows_the_three_steps() {
    // 16 threads, 4 CPUs: T_avg = 4.
    let clusters = [
        cluster(0..4, false),
        cluster(4..7, true),
        cluster(7..12, true),
        cluster(12..14, false),
        cluster(14..16, false),
    ];
    let cpus = [10, 11, 12, 13];
    let plan = mapping_plan(&clusters, &cpus).unwrap();
    assert_eq!(plan.t_avg, 4.0);
    // Strong 5 -> CPU 10 (full), strong 3 -> CPU 11 (still under T_avg).
    assert_eq!(plan.underutilised, vec![12, 13, 11]);
    assert!((plan.t_avg2 - 11.0 / 3.0).abs() < 1e-12);
    assert_eq!(plan.load, vec![5, 3, 4, 4]);
    assert!(plan.cpu_of_thread[7..12].iter().all(|&c| c == 10));
    assert!(plan.cpu_of_thread[4..7].iter().all(|&c| c == 11));
    assert!(plan.cpu_of_thread[0..4].iter().all(|&c| c == 12));
    assert!(plan.cpu_of_thread[12..16].iter().all(|&c| c == 13));
    assert_eq!(plan.split_clusters, 0);
}

#[test]
fn weak_clusters_are_split_to_balance() {
    let plan = mapping_plan(&[cluster(0..9, false)], &[0, 1, 2]).unwrap();
    assert_eq!(plan.load, vec![3, 3, 3]);
    assert_eq!(plan.split_clusters, 1);
    assert!(mapping_plan(&[cluster(0..2, false)], &[]).is_none());
}

#[test]
#[should_panic(expected = "partition")]
fn mapping_plan_rejects_a_thread_in_two_clusters() {
    let clusters = [cluster(0..2, false), cluster(1..3, false)];
    mapping_plan(&clusters, &[0]);
}

#[test]
fn a_round_needs_one_full_vector_and_every_recorder_sampled_enough() {
    let p = CaParams::default();
    assert!(!p.round_due(0, 10, 10, 1000), "no full vector yet");
    assert!(p.round_due(1, 10, 10, 0), "the rest need not be full");
    assert!(!p.round_due(1, 9, 10, 5), "one thread below min_samples");
    assert!(p.round_due(1, 9, 10, corral_policy::cluster::ROUND_WAIT_TICKS));
}
