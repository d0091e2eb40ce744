//! Tests of the monitor: classification, placement and the decision log.

use super::*;
use crate::events::read_log;
use crate::waiting::thread_cpu_ns;
use std::sync::mpsc;
use std::time::Duration;

/// Held by every test whose monitor ticks: a tick samples every registry
/// slot, other tests' threads included, and claims their waits under way,
/// which the monitor of the test they belong to would then never see.
static TICKING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn ticking() -> std::sync::MutexGuard<'static, ()> {
    TICKING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers the calling thread in the registry (its first lock attempt);
/// its tid and slot.
fn register_this_thread() -> (i32, usize) {
    registry::on_lock_attempt();
    let tid = registry::current_tid();
    let index = (0..registry::slots_in_use())
        .find(|&i| registry::slot(i).tid.load(Ordering::Acquire) == tid)
        .unwrap();
    (tid, index)
}

/// Registers a thread that reports `wait_ns` of lock waiting (in waits of
/// 1 us) over at least `cpu_ns` of CPU time, then parks until told to exit.
fn thread_with_share(
    wait_ns: u64,
    cpu_ns: u64,
) -> (i32, usize, mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (ready_tx, ready_rx) = mpsc::channel();
    let (exit_tx, exit_rx) = mpsc::channel::<()>();
    let handle = std::thread::spawn(move || {
        let (tid, index) = register_this_thread();
        ready_tx.send((tid, index)).unwrap();
        exit_rx.recv().unwrap();
        let start = thread_cpu_ns();
        while thread_cpu_ns() < start + cpu_ns {
            std::hint::black_box(0u64);
        }
        // In waits of 1 us: hand-offs, as a contended lock has them (the
        // user-space preset counts them, DetectParams::handoff_ns).
        for _ in 0..wait_ns / 1_000 {
            registry::slot(index)
                .wait
                .record(corral_locks::wait::ns_to_ticks(1_000));
        }
        exit_rx.recv().unwrap();
    });
    let (tid, index) = ready_rx.recv().unwrap();
    (tid, index, exit_tx, handle)
}

#[test]
fn a_waiting_thread_qualifies_and_is_placed_on_the_ssc_and_others_on_the_rest() {
    let _ticking = ticking();
    let mut cfg = RuntimeConfig {
        slice_ns: 1_000_000,
        ..RuntimeConfig::default()
    };
    // The search starting on one core, not with its round on every core
    // (where the SSC and the rest are both cores): the two sets differ.
    cfg.ssc.baseline_unconfined = false;
    let path =
        std::env::temp_dir().join(format!("corral-monitor-test.{}.jsonl", std::process::id()));
    let mut m = Monitor::new(
        cfg,
        vec![0, 1],
        None,
        Some(EventLog::create(&path).unwrap()),
    );
    let (hot_tid, hot, hot_go, hot_join) = thread_with_share(1_900_000, 2_000_000);
    let (_, cold, cold_go, cold_join) = thread_with_share(0, 2_000_000);
    m.tick(); // both threads seen: windows open
    let opened = std::time::Instant::now();
    hot_go.send(()).unwrap();
    cold_go.send(()).unwrap();
    // Each thread burns its CPU, records its waits and parks again.
    // Every wait recorded, not only the first.
    while registry::slot(hot).wait.snapshot().1 < 1_900 {
        std::thread::yield_now();
    }
    while crate::waiting::cpu_ns_of(registry::slot(cold).tid.load(Ordering::Relaxed)).unwrap_or(0)
        < 2_000_000
    {
        std::thread::yield_now();
    }
    // Qualification is over the time a thread ran or waited, which a
    // loaded machine stretches past 19 ms: the hot thread (parked now, so
    // no other writer) also waited the whole span, as a sleeper on a lock
    // does.
    let span = opened.elapsed().as_nanos() as u64;
    registry::slot(hot)
        .wait
        .record(corral_locks::wait::ns_to_ticks(span));
    m.tick();
    assert_eq!(
        registry::slot(hot).want.load(Ordering::Relaxed),
        Placement::Ssc
    );
    assert_eq!(
        registry::slot(cold).want.load(Ordering::Relaxed),
        Placement::General
    );
    assert_eq!(m.ctrl.as_ref().unwrap().lock_intensive(), 1);
    // Its key was read when it qualified (not when it came: nothing was
    // remembered then) and remembered.
    assert!(m.ctrl.as_ref().unwrap().keys_matter());
    assert_eq!(registry::SSC_MASK.cpus(), vec![0]);
    assert_eq!(registry::GENERAL_MASK.cpus(), vec![1]);
    // The monitor itself leaves the SSC to the confined thread, once.
    assert_eq!(m.own_move(), Some(vec![1]));
    assert_eq!(m.own_move(), None);
    hot_go.send(()).unwrap();
    cold_go.send(()).unwrap();
    hot_join.join().unwrap();
    cold_join.join().unwrap();
    // Both gone, so nobody is confined: back on every CPU. A join returns
    // when the kernel clears the tid, a moment before the thread is reaped
    // and its clock stops reading (see `waiting`'s test): a round may still
    // see it, so rounds go on until one does not (at most 1 s).
    for _ in 0..1_000 {
        m.tick();
        if m.ctrl.as_ref().unwrap().lock_intensive() == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(m.ctrl.as_ref().unwrap().lock_intensive(), 0);
    assert_eq!(m.own_move(), Some(vec![0, 1]));
    drop(m);
    let events = read_log(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Qualified { tid, .. } if *tid == hot_tid)));
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Exited { tid, .. } if *tid == hot_tid)));
}

#[test]
fn waits_that_qualify_nobody_let_the_monitor_back_off() {
    // Waits but nobody placed or to place (git grep, a real-time thread):
    // rounds back off as when idle (they were every 4 ticks).
    assert_eq!(Pace::of(true, false, false), Pace::Idle);
    assert_eq!(Pace::of(false, false, false), Pace::Idle);
    // A thread to place, or a search under way: every tick.
    assert_eq!(Pace::of(true, false, true), Pace::Searching);
    assert_eq!(Pace::of(true, true, true), Pace::Searching);
    // Placed and settled: the adaptation check every few ticks.
    assert_eq!(Pace::of(true, true, false), Pace::Settled);
}

/// Two samples of thread `tid` in slot `slot`: at 0 (its window opens) and
/// at `wall_ns`, after `cpu_ns` of CPU time and `wait_ns` of lock waiting
/// in 500 waits. Returns where the monitor places it.
fn one_slice(
    m: &mut Monitor,
    slot: usize,
    tid: i32,
    cpu_ns: u64,
    wall_ns: u64,
    wait_ns: u64,
) -> Observed {
    let sample = |cpu, wait_ticks, waits| ThreadSample {
        tid,
        cpu_ns: Some(cpu),
        wait_ticks,
        waits,
        attempts: 0,
        yields: 0,
        applied: Placement::Unconfined,
        in_wait: false,
        registered: None,
    };
    m.observe(slot, sample(0, 0, 0), 0, 0.0);
    let wait = corral_locks::wait::ns_to_ticks(wait_ns);
    m.observe(
        slot,
        sample(cpu_ns, wait, 500),
        wall_ns,
        wall_ns as f64 / 1e6,
    )
}

/// A monitor placing by policy lca on CPUs 0 and 1, slices of `slice_ns`.
fn lca_monitor(slice_ns: u64) -> Monitor {
    lca_monitor_on(slice_ns, vec![0, 1])
}

/// [`lca_monitor`] on `cpus`.
fn lca_monitor_on(slice_ns: u64, cpus: Vec<u32>) -> Monitor {
    let cfg = RuntimeConfig {
        policy: Policy::Lca,
        slice_ns,
        ..RuntimeConfig::default()
    };
    Monitor::new(cfg, cpus, None, None)
}

#[test]
fn the_wait_share_is_over_the_time_the_thread_ran_or_waited() {
    let ms = 1_000_000;
    let mut m = lca_monitor(ms);
    // 1 ms on the CPU in 10 ms, 50 us of it waiting for a lock, the rest
    // asleep on a condition variable: under 5% of the 1.05 ms it ran or
    // waited.
    let sleeper = one_slice(&mut m, 0, 1_000_001, ms, 10 * ms, ms / 20);
    assert_eq!(sleeper, Observed::Placed(Placement::Unconfined));
    assert_eq!(m.controller().unwrap().lock_intensive(), 0);
    // 1 ms on the CPU in 10 ms, 0.5 ms waiting, ready to run the rest on a
    // crowded core: a third of what it ran or waited, though 5% of the span.
    let crowded = one_slice(&mut m, 1, 1_000_002, ms, 10 * ms, ms / 2);
    assert_eq!(crowded, Observed::Placed(Placement::Ssc));
    // 1 ms on the CPU in 1.6 ms, 1 ms waiting: 62% of its wall span.
    let waiter = one_slice(&mut m, 2, 1_000_003, ms, ms * 16 / 10, ms);
    assert_eq!(waiter, Observed::Placed(Placement::Ssc));
}

#[test]
fn a_waiter_asleep_on_a_lock_qualifies_after_a_wall_window_with_little_cpu() {
    let ms = 1_000_000;
    let mut m = lca_monitor(ms);
    // 0.1 ms on the CPU in 3 ms, asleep on the lock the rest: the window
    // is not over yet (neither a CPU slice nor four slices of wall time).
    let early = one_slice(&mut m, 0, 1_000_003, ms / 10, 3 * ms, 2 * ms);
    assert_eq!(early, Observed::Placed(Placement::Unconfined));
    assert_eq!(m.controller().unwrap().lock_intensive(), 0);
    // 0.1 ms on the CPU in 4 ms, 3.5 ms asleep on the lock: one of 64
    // oversubscribed waiters. The wall window closes and the thread
    // qualifies without waiting for a millisecond of CPU.
    let mut m = lca_monitor(ms);
    let parked = one_slice(&mut m, 0, 1_000_004, ms / 10, 4 * ms, ms * 35 / 10);
    assert_eq!(parked, Observed::Placed(Placement::Ssc));
}

#[test]
fn a_thread_asleep_on_a_lock_qualifies_while_it_still_waits() {
    // One of 32 sysbench threads parked on its mutex for tens of ms: its
    // wait, recorded only at its end, qualified it 43-50 ms into the run.
    let _ticking = ticking();
    let mut m = lca_monitor(1_000_000);
    let (ready_tx, ready_rx) = mpsc::channel();
    let (wake_tx, wake_rx) = mpsc::channel::<()>();
    let sleeper = std::thread::spawn(move || {
        let (_, index) = register_this_thread();
        // Asleep on a lock until told, as a parked futex waiter is.
        let waiting = corral_locks::wait::Waiting::begin();
        ready_tx.send(index).unwrap();
        wake_rx.recv().unwrap();
        waiting.end();
    });
    let index = ready_rx.recv().unwrap();
    let since = std::time::Instant::now();
    let mut placed = false;
    while !placed && since.elapsed() < Duration::from_secs(2) {
        m.tick();
        placed = registry::slot(index).want.load(Ordering::Relaxed) == Placement::Ssc;
        std::thread::sleep(Duration::from_millis(1));
    }
    wake_tx.send(()).unwrap();
    sleeper.join().unwrap();
    assert!(placed, "not qualified while it waited");
}

/// A sample of a thread asleep on a lock: `cpu_ns` of CPU so far, `wait_ns`
/// of waiting since the last sample in `waits` new waits, `in_wait` still.
fn asleep(
    cpu_ns: u64,
    wait_ns: u64,
    waits: u64,
    in_wait: bool,
    registered: Option<(u64, u64)>,
) -> ThreadSample {
    ThreadSample {
        tid: 1_000_010,
        cpu_ns: Some(cpu_ns),
        wait_ticks: corral_locks::wait::ns_to_ticks(wait_ns),
        waits,
        attempts: 1,
        yields: 0,
        applied: Placement::Unconfined,
        in_wait,
        registered,
    }
}

#[test]
fn a_thread_is_accounted_from_when_it_took_its_slot() {
    // sysbench's threads take their slots at its start barrier, before a
    // round that backs off sees them: one took it 1 ms into the monitor's
    // life and has been asleep on the lock since; it is first seen at 5 ms.
    let ms = 1_000_000;
    let mut m = lca_monitor(ms);
    let registered = Some((m.start_ns + ms, 0));
    let seen = m.observe(
        0,
        asleep(ms / 100, 4 * ms, 1, true, registered),
        5 * ms,
        5.0,
    );
    assert_eq!(seen, Observed::Placed(Placement::Ssc));
    // From first sight instead, its window has only begun.
    let mut m = lca_monitor(ms);
    let seen = m.observe(0, asleep(ms / 100, 4 * ms, 1, true, None), 5 * ms, 5.0);
    assert_eq!(seen, Observed::Placed(Placement::Unconfined));
}

#[test]
fn a_wait_that_spans_windows_is_a_hand_off_in_each() {
    let ms = 1_000_000;
    let window_after = |in_wait| {
        let mut m = lca_monitor(ms);
        m.observe(0, asleep(0, 0, 0, false, None), 0, 0.0);
        // A millisecond on the CPU without a wait: a window, not qualified.
        let ran = m.observe(0, asleep(ms, 0, 0, false, None), ms, 1.0);
        assert_eq!(ran, Observed::Placed(Placement::Unconfined));
        // Then asleep on a lock for 4 ms, in a wait counted (once) in the
        // window it began: here only its time.
        m.observe(0, asleep(ms, 4 * ms, 0, in_wait, None), 5 * ms, 5.0)
    };
    assert_eq!(window_after(true), Observed::Placed(Placement::Ssc));
    assert_eq!(window_after(false), Observed::Placed(Placement::Unconfined));
}

#[test]
fn a_thread_that_yields_as_it_locks_is_said_once_and_not_placed() {
    let ms = 1_000_000;
    let path = std::env::temp_dir().join(format!("corral-yield-test.{}.jsonl", std::process::id()));
    let cfg = RuntimeConfig {
        policy: Policy::Lca,
        slice_ns: ms,
        ..RuntimeConfig::default()
    };
    let mut m = Monitor::new(
        cfg,
        vec![0, 1],
        None,
        Some(EventLog::create(&path).unwrap()),
    );
    let tid = 1_000_003;
    // Each ms: 1 ms of CPU, 0.9 ms of it waiting in 500 waits (that alone
    // qualifies), 800 lock attempts and 800 yields.
    let sample = |n: u64| ThreadSample {
        tid,
        cpu_ns: Some(n * ms),
        wait_ticks: if n == 0 {
            0
        } else {
            corral_locks::wait::ns_to_ticks(ms * 9 / 10)
        },
        waits: if n == 0 { 0 } else { 500 },
        attempts: 800 * n,
        yields: 800 * n,
        applied: Placement::Unconfined,
        in_wait: false,
        registered: None,
    };
    for n in 0..4 {
        let got = m.observe(0, sample(n), n * ms, n as f64);
        assert_eq!(got, Observed::Placed(Placement::Unconfined), "slice {n}");
    }
    assert_eq!(m.ctrl.as_ref().unwrap().lock_intensive(), 0);
    // Its only judged thread yields: rounds find nothing to do, and come
    // as seldom as a dormant monitor's.
    assert!(m.only_yielders());
    drop(m);
    let events = read_log(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let said: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, Event::YieldsCore { tid: t, yields_per_attempt, .. } if *t == tid && *yields_per_attempt == 1.0))
        .collect();
    assert_eq!(said.len(), 1, "{events:?}");
}

#[test]
fn a_thread_first_seen_after_it_registered_is_judged_on_all_it_did_since() {
    // Registered as the monitor started, first seen 1 ms later: 1 ms of
    // CPU, 0.9 ms of it waiting in 500 waits, 800 attempts and 800 yields,
    // all in its first window. Judged on its waits alone it would qualify.
    let ms = 1_000_000;
    let mut m = lca_monitor(ms);
    let sample = ThreadSample {
        tid: 1_000_009,
        cpu_ns: Some(ms),
        wait_ticks: corral_locks::wait::ns_to_ticks(ms * 9 / 10),
        waits: 500,
        attempts: 800,
        yields: 800,
        applied: Placement::Unconfined,
        in_wait: false,
        registered: Some((m.start_ns, 0)),
    };
    assert_eq!(
        m.observe(0, sample, ms, 1.0),
        Observed::Placed(Placement::Unconfined)
    );
    assert_eq!(m.ctrl.as_ref().unwrap().lock_intensive(), 0);
    assert_eq!(m.tracks[0].yields, 800, "its yields since it registered");
}

#[test]
fn a_registered_thread_counts_its_yields() {
    let counted = std::thread::spawn(|| {
        registry::on_yield(); // not registered yet: nowhere to count
        let (_, index) = register_this_thread();
        for _ in 0..3 {
            registry::on_yield();
        }
        registry::slot(index).watch.yields.load(Ordering::Relaxed)
    })
    .join()
    .unwrap();
    assert_eq!(counted, 3);
}

#[test]
fn the_monitor_takes_priority_only_while_it_searches_or_places() {
    let mut p = MonitorPriority::new(Some(0));
    assert_eq!(p.after(Pace::Idle, false), None, "born idle");
    assert_eq!(p.after(Pace::Searching, false), Some(MONITOR_NICE));
    assert_eq!(p.after(Pace::Settled, false), None, "already there");
    assert_eq!(p.after(Pace::Idle, false), Some(0));
    // A program that runs niced keeps its monitor at its own nice while
    // idle, and never below what the program asked for itself.
    let mut niced = MonitorPriority::new(Some(5));
    assert_eq!(niced.after(Pace::Searching, false), Some(MONITOR_NICE));
    assert_eq!(niced.after(Pace::Idle, false), Some(5));
    let mut eager = MonitorPriority::new(Some(-15));
    assert_eq!(eager.after(Pace::Searching, false), None);
    // Refused (no CAP_SYS_NICE): not asked again.
    let mut p = MonitorPriority::new(Some(0));
    assert_eq!(p.after(Pace::Searching, false), Some(MONITOR_NICE));
    p.refused();
    assert_eq!(p.after(Pace::Searching, false), None);
    assert_eq!(p.after(Pace::Idle, false), None);
    // Idle, but waits heavy enough to qualify someone soon.
    let mut p = MonitorPriority::new(Some(0));
    assert_eq!(p.after(Pace::Idle, true), Some(MONITOR_NICE));
    assert_eq!(p.after(Pace::Idle, false), Some(0));
    // Unreadable: never changed.
    assert_eq!(
        MonitorPriority::new(None).after(Pace::Searching, false),
        None
    );
}

#[test]
fn a_monitor_without_a_table_of_its_own_keeps_its_log_lines_until_it_may_open_files() {
    let _ticking = ticking();
    let path = std::env::temp_dir().join(format!(
        "corral-monitor-deferred-test.{}.jsonl",
        std::process::id()
    ));
    let mut m = Monitor::new(
        RuntimeConfig::default(),
        vec![0, 1],
        None,
        Some(EventLog::create(&path).unwrap()),
    );
    m.set_files(Files::Deferred);
    m.tick();
    m.tick();
    assert!(
        read_log(&path).unwrap().is_empty(),
        "flushed with no table of its own"
    );
    m.set_files(Files::Open);
    m.tick();
    let events = read_log(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(events.first(), Some(Event::Start { .. })));
}

#[test]
fn on_one_cpu_the_monitor_is_dormant_whatever_the_waits() {
    let ms = 1_000_000;
    let tick = Duration::from_millis(1);
    // 1 ms on the CPU in 1.6 ms, 1 ms waiting: on two CPUs such waits ring
    // the monitor, which listens from its start.
    let mut two = lca_monitor(ms);
    one_slice(&mut two, 0, 1_000_007, ms, ms * 16 / 10, ms);
    assert!(!two.is_dormant());
    assert_eq!(two.first_sleep(), Start::OnCall);
    assert!(Rhythm::new(tick, two.first_sleep()).listen);
    // On one CPU the same waits decide nothing: the first round comes after
    // DOZE_MAX, so do the next ones (tick() returns Pace::Dormant), and no
    // waiting thread rings the monitor. (tick() itself publishes the
    // process's masks, which other tests read: not called here.)
    let mut one = lca_monitor_on(ms, vec![0]);
    one_slice(&mut one, 0, 1_000_008, ms, ms * 16 / 10, ms);
    assert!(one.is_dormant());
    let mut rhythm = Rhythm::new(tick, one.first_sleep());
    assert_eq!((rhythm.sleep, rhythm.listen), (DOZE_MAX, false));
    rhythm.after_round(Pace::Dormant, true, true, false);
    assert_eq!((rhythm.sleep, rhythm.listen), (DOZE_MAX, false));
}

#[test]
fn on_one_cpu_a_waiter_that_would_qualify_is_left_where_it_is() {
    let ms = 1_000_000;
    // 1 ms on the CPU in 1.6 ms, 1 ms waiting: it qualifies on two CPUs.
    let mut two = lca_monitor(ms);
    let placed = one_slice(&mut two, 0, 1_000_005, ms, ms * 16 / 10, ms);
    assert_eq!(placed, Observed::Placed(Placement::Ssc));
    // One CPU: the SSC would be every core, so nothing moves and nothing
    // is counted lock intensive (the monitor's rounds then stay idle).
    let mut one = lca_monitor_on(ms, vec![0]);
    let left = one_slice(&mut one, 0, 1_000_006, ms, ms * 16 / 10, ms);
    assert_eq!(left, Observed::Placed(Placement::Unconfined));
    let ctrl = one.controller().unwrap();
    assert!(!ctrl.can_confine());
    assert_eq!(ctrl.lock_intensive(), 0);
}
