use std::sync::mpsc;

use corral_policy::cluster::clustering_accuracy;

use super::*;
use crate::affinity::allowed_cpus;

const THREADS: usize = 12;

/// Live threads that wait until the returned sender is dropped.
fn parked_threads() -> (Vec<i32>, mpsc::Sender<()>, Vec<std::thread::JoinHandle<()>>) {
    let (tid_tx, tid_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let stop_rx = std::sync::Arc::new(std::sync::Mutex::new(stop_rx));
    let handles = (0..THREADS)
        .map(|_| {
            let tid_tx = tid_tx.clone();
            let stop_rx = stop_rx.clone();
            std::thread::spawn(move || {
                tid_tx.send(crate::registry::current_tid()).unwrap();
                let _ = stop_rx.lock().unwrap().recv();
            })
        })
        .collect();
    let tids = (0..THREADS).map(|_| tid_rx.recv().unwrap()).collect();
    (tids, stop_tx, handles)
}

/// Feeds every thread `group(t)`'s two locks and one shared lock until a
/// round is applied.
fn feed_until_round(
    ca: &mut CaDriver,
    tids: &[i32],
    trails: &[LockTrail],
    group: impl Fn(usize) -> u64,
) -> CaApplied {
    for _ in 0..100 {
        for (t, trail) in trails.iter().enumerate() {
            let g = group(t);
            for k in 0..64u64 {
                trail.push(match k % 4 {
                    0 => 0x1000,
                    1 | 2 => 0x2000 + g * 64,
                    _ => 0x8000 + g * 64,
                });
            }
            ca.observe(t, tids[t], true, trail);
        }
        if let Some(applied) = ca.round() {
            return applied;
        }
    }
    panic!("no round after 100 ticks");
}

fn check(applied: &CaApplied, tids: &[i32], group: impl Fn(usize) -> u64) {
    let planted: Vec<u32> = (0..THREADS).map(|t| group(t) as u32).collect();
    let found: Vec<u32> = applied.threads.iter().map(|t| t.cluster).collect();
    assert_eq!(applied.threads.len(), THREADS);
    assert_eq!(clustering_accuracy(&planted, &found), 1.0, "{applied:?}");
    assert_eq!(applied.globally_shared, 1);
    for (t, th) in applied.threads.iter().enumerate() {
        assert_eq!(th.tid, tids[t]);
        assert_eq!(th.read_back, vec![th.cpu], "thread {t} read back");
    }
    if allowed_cpus().len() >= 2 {
        let cpu_of_group = |g: u64| {
            let t = (0..THREADS).find(|&t| group(t) == g).unwrap();
            applied.threads[t].cpu
        };
        assert_ne!(cpu_of_group(0), cpu_of_group(1), "groups share a CPU");
    }
}

#[test]
fn clusters_pin_read_back_and_recluster_when_usage_changes() {
    let (tids, stop, handles) = parked_threads();
    let trails: Vec<LockTrail> = (0..THREADS).map(|_| LockTrail::new()).collect();
    let params = CaParams::default();
    let cpus = allowed_cpus();
    let mut ca = CaDriver::new(params, Some(CsfParams::default()), cpus.clone());
    // First sight registers each thread.
    for (t, trail) in trails.iter().enumerate() {
        ca.observe(t, tids[t], true, trail);
    }

    let halves = |t: usize| (t / (THREADS / 2)) as u64;
    let first = feed_until_round(&mut ca, &tids, &trails, halves);
    check(&first, &tids, halves);
    assert_eq!(first.moved, THREADS as u32);
    // CSF: two locks each -> bonus 2 -> nice base - 2, read back per thread
    // with getpriority (raising priority needs CAP_SYS_NICE and RLIMIT_NICE
    // room; without them it stays nearer the base).
    let base = corral_locks::sys::sched::nice_of(0).unwrap();
    for th in &first.threads {
        let nice = th.nice.expect("CSF reads back every thread's nice");
        assert!(
            (base - 2..=base).contains(&nice),
            "nice {nice}, base {base}"
        );
        assert_eq!(corral_locks::sys::sched::nice_of(th.tid), Ok(nice));
    }

    // Usage changes: odd and even threads now share locks.
    let parity = |t: usize| (t % 2) as u64;
    let second = feed_until_round(&mut ca, &tids, &trails, parity);
    check(&second, &tids, parity);
    assert_eq!(second.round, 2);
    if cpus.len() >= 2 {
        assert!(second.moved > 0, "re-clustering moved nobody");
    }

    drop(stop);
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn too_few_threads_record_nothing() {
    let trail = LockTrail::new();
    let mut ca = CaDriver::new(CaParams::default(), None, vec![0]);
    ca.observe(0, 1, true, &trail);
    for _ in 0..10_000 {
        trail.push(0x1000);
    }
    ca.observe(0, 1, true, &trail);
    assert!(ca.round().is_none(), "one thread is below min_threads");
}
