//! The monitor against synthetic slices of real (parked) threads.

use super::*;
use std::sync::mpsc;

/// A parked thread of this process for the monitor to move; returns its
/// tid and a sender that releases it.
fn scratch_thread() -> (u32, mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (tid_tx, tid_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let handle = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tid_tx.send(unsafe { libc::gettid() } as u32).unwrap();
        let _ = go_rx.recv();
    });
    (tid_rx.recv().unwrap(), go_tx, handle)
}

fn slice(tid: u32, begin_ns: u64, len_ns: u64, wait_ns: u64) -> SliceRecord {
    SliceRecord {
        tid,
        tgid: std::process::id(),
        cpu: 0,
        nr_waits: 1,
        begin_ns,
        len_ns,
        wait_ns,
        last: false,
    }
}

#[test]
fn a_waiting_thread_is_confined_to_the_ssc_and_a_quiet_one_to_the_complement() {
    let cpus = crate::affinity::allowed_cpus();
    let (hot, hot_go, hot_join) = scratch_thread();
    let (cold, cold_go, cold_join) = scratch_thread();
    let mut cfg = MonitorConfig::new(cpus.clone());
    cfg.ssc.migrate_back = false;
    let mut monitor = KernelMonitor::new(cfg, 1_000);
    // The quiet one first: a thread first seen after its program was
    // classified starts lock intensive (classification memory).
    monitor.on_slice(&slice(cold, 2_000, 1_000_000, 10_000)); // 1%
    monitor.on_slice(&slice(hot, 2_000, 1_000_000, 400_000)); // 40% > T
    monitor.apply(1_100_000);
    assert_eq!(monitor.intensive_threads(), vec![hot]);
    let ssc = monitor.controller().ssc_cores().to_vec();
    assert_eq!(ssc, vec![cpus[0]], "the search starts from one core");
    assert_eq!(get_thread_affinity(hot as i32).unwrap(), ssc);
    let report = monitor.report(2_000_000, ReportInputs::default());
    let moved = report
        .affinity
        .iter()
        .find(|a| a.tid == hot)
        .expect("hot thread moved");
    assert_eq!((moved.to, &moved.read_back), (Placement::Ssc, &ssc));
    if cpus.len() > 1 {
        // The others keep off the SSC (separate balancing, Sec. 3.4).
        assert_eq!(
            get_thread_affinity(cold as i32).unwrap(),
            cpus[1..].to_vec()
        );
    }
    let hot_report = report.threads.iter().find(|t| t.tid == hot).unwrap();
    assert!(hot_report.lock_intensive && (hot_report.wait_share - 0.4).abs() < 1e-9);
    assert_eq!(hot_report.slice_shares, vec![0.4f32]);
    // Its last slice (exit) takes it out of the lock-intensive count.
    assert_eq!(monitor.controller().lock_intensive(), 1);
    monitor.on_slice(&SliceRecord {
        last: true,
        ..slice(hot, 3_000_000, 1_000, 0)
    });
    assert_eq!(monitor.controller().lock_intensive(), 0);
    monitor.restore();
    assert_eq!(get_thread_affinity(cold as i32).unwrap(), cpus, "restored");
    for (go, join) in [(hot_go, hot_join), (cold_go, cold_join)] {
        go.send(()).unwrap();
        join.join().unwrap();
    }
}

#[test]
fn short_slices_are_merged_before_classification() {
    let (tid, go, join) = scratch_thread();
    let mut cfg = MonitorConfig::new(vec![0]);
    cfg.apply = false;
    let mut monitor = KernelMonitor::new(cfg, 0);
    // 20 us slices with a 5 us wait each (25%), while the thread mostly
    // runs lock-free: 40 of them and 2 ms of clean running, merged.
    for i in 0..40 {
        monitor.on_slice(&slice(tid, 1_000 + i * 100_000, 20_000, 5_000));
    }
    assert!(
        monitor.intensive_threads().is_empty(),
        "merged windows still pending"
    );
    monitor.on_slice(&slice(tid, 5_000_000, 2_000_000, 0));
    assert!(
        monitor.intensive_threads().is_empty(),
        "200 us of 2.8 ms is 7% < T"
    );
    let report = monitor.report(9_000_000, ReportInputs::default());
    assert_eq!(
        (report.threads[0].slices, report.threads[0].windows),
        (41, 1)
    );
    go.send(()).unwrap();
    join.join().unwrap();
}

#[test]
fn observe_only_leaves_affinity_alone() {
    let cpus = crate::affinity::allowed_cpus();
    let (hot, go, join) = scratch_thread();
    let mut cfg = MonitorConfig::new(cpus.clone());
    cfg.apply = false;
    let mut monitor = KernelMonitor::new(cfg, 1_000);
    monitor.on_slice(&slice(hot, 2_000, 1_000_000, 900_000));
    monitor.apply(1_100_000);
    assert_eq!(monitor.intensive_threads(), vec![hot]);
    assert_eq!(get_thread_affinity(hot as i32).unwrap(), cpus);
    assert!(monitor
        .report(2_000_000, ReportInputs::default())
        .affinity
        .is_empty());
    go.send(()).unwrap();
    join.join().unwrap();
}

#[test]
fn slices_begun_before_a_bound_change_do_not_vote() {
    let mut monitor = KernelMonitor::new(MonitorConfig::new(vec![0, 1]), 0);
    monitor.bound_changed_at = 5_000;
    let (tid, go, join) = scratch_thread();
    monitor.on_slice(&slice(tid, 4_000, 1_000_000, 500_000));
    assert_eq!(monitor.threads[&tid].state.record_bound, 0);
    monitor.on_slice(&slice(tid, 6_000, 1_000_000, 500_000));
    assert_eq!(
        monitor.threads[&tid].state.record_bound,
        monitor.controller().bound()
    );
    go.send(()).unwrap();
    join.join().unwrap();
}
