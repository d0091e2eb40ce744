//! Trace tests of the search: the SSC controller replayed step by step on
//! synthetic observations (convergence, hysteresis, votes, warm-up,
//! adaptation).

mod ssc_driver;

use corral_policy::ssc::{
    Decision, DecisionKind, MigState, Phase, SscController, SscParams, ThreadPolicyState,
};
use corral_policy::Nanos;
use ssc_driver::*;

fn optima() -> Vec<u32> {
    let mut optima: Vec<u32> = (0..=10)
        .flat_map(|k| [(1u32 << k) - 1, 1 << k, (1 << k) + 1])
        .collect();
    optima.extend((1..=1024).step_by(37));
    optima.extend([10, 12, 24, 100, 600, 1000, 1023, 1024]);
    optima.retain(|&n| (1..=1024).contains(&n));
    optima.sort_unstable();
    optima.dedup();
    optima
}

#[test]
fn improved_search_finds_the_optimum_for_every_size() {
    for optimum in optima() {
        let mut driver = Driver::new(improved(), 1024, 1024);
        let found = driver.settle(&unimodal(optimum));
        assert!(
            found.abs_diff(optimum) <= 1,
            "n* = {optimum}: settled at {found}; log tail {:?}",
            &driver.log[driver.log.len().saturating_sub(4)..]
        );
    }
}

#[test]
fn paper_2013_doubles_and_settles_on_a_power_of_two() {
    for optimum in [1, 3, 5, 10, 12, 24, 100, 1000] {
        let mut expected = 1u32;
        while expected < 1024 && throughput(optimum, expected * 2) > throughput(optimum, expected) {
            expected *= 2;
        }
        let mut driver = Driver::new(SscParams::paper_2013(), 1024, 1024);
        let found = driver.settle(&unimodal(optimum));
        assert_eq!(found, expected, "n* = {optimum}");
        assert!(found.is_power_of_two());
        let kinds: Vec<DecisionKind> = driver
            .log
            .iter()
            .filter(|d| d.kind != DecisionKind::Hold)
            .map(|d| d.kind)
            .collect();
        assert!(
            kinds
                .iter()
                .all(|k| matches!(k, DecisionKind::Double | DecisionKind::StepBack)),
            "{kinds:?}"
        );
    }
    // Parallel find's case (paper 1, Sec. 4.6): optimum 10, the paper gets 8.
    let mut driver = Driver::new(SscParams::paper_2013(), 1024, 1024);
    assert_eq!(driver.settle(&unimodal(10)), 8);
}

#[test]
fn warm_up_removes_the_early_vote_skew() {
    // Paper 1, Sec. 4.6: votes taken while threads are still arriving skew
    // the search (here: too few work cores counted, so it doubles from the
    // wrong base). Warm-up waits until the arrivals stop.
    let mut skewed = 0;
    for optimum in [5, 10, 100, 1000] {
        let mut improved_driver = Driver::unsettled(improved(), 1024, 1024);
        assert_eq!(improved_driver.settle(&unimodal(optimum)), optimum);
        let mut paper = Driver::unsettled(SscParams::paper_2013(), 1024, 1024);
        let found = paper.settle(&unimodal(optimum));
        skewed += usize::from(!found.is_power_of_two());
    }
    assert!(
        skewed > 0,
        "the 2013 algorithm shows the skew in this harness"
    );
}

#[test]
fn a_single_noisy_round_never_moves_the_bound() {
    let mut driver = Driver::new(SscParams::paper_2013(), 64, 64);
    // T(1) = 0.85; at 2 cores the truth is T = 0.2, but every other round a
    // noisy reading shows no contention at all.
    let truth = |b: u32| if b == 1 { 0.15 } else { 0.9 };
    let noisy = |_: u32| 0.0;
    assert_eq!(driver.round(&truth).kind, DecisionKind::Hold);
    let double = driver.round(&truth);
    assert_eq!((double.kind, double.bound_after), (DecisionKind::Double, 2));
    for _ in 0..20 {
        let quiet = driver.round(&truth);
        let loud = driver.round(&noisy);
        for decision in [quiet, loud] {
            assert_eq!(decision.kind, DecisionKind::Hold, "{decision:?}");
            assert_eq!(driver.ctl.bound(), 2);
        }
    }
    // Consistent truth steps back (three rounds, as published).
    let kinds: Vec<DecisionKind> = (0..3).map(|_| driver.round(&truth).kind).collect();
    assert_eq!(
        kinds,
        [
            DecisionKind::Hold,
            DecisionKind::Hold,
            DecisionKind::StepBack
        ]
    );
    assert_eq!(driver.ctl.bound(), 1);
}

#[test]
fn votes_from_before_a_bound_change_are_dropped() {
    let mut driver = Driver::new(SscParams::paper_2013(), 64, 64);
    let share = unimodal(32);
    // Thread 0 starts a slice under bound 1 on the SSC core...
    driver.slice_of(0, &|_| 0);
    let stale_core = driver.core_of[0];
    let mut stale = driver.threads[0];
    driver.ctl.begin_slice(&mut stale, driver.now);
    assert_eq!(stale.record_bound, 1);
    // ...others move the bound to 2 meanwhile...
    while driver.ctl.bound() == 1 {
        driver.slice(&share);
    }
    let before = driver.ctl.vote_totals().unwrap();
    // ...so its slice, however contended, is not a vote.
    let obs = cpu_slice(stale_core, SLICE, 0);
    let out = driver.ctl.on_slice_end(&mut stale, obs, driver.now);
    assert!(!out.voted);
    assert_eq!(driver.ctl.vote_totals().unwrap(), before);
}

/// Begin time of the first counted vote after the first bound change, and
/// the time of that change.
fn first_vote_after_bound_change(warmup: Nanos) -> (Nanos, Nanos) {
    let params = SscParams {
        vote_warmup: warmup,
        ..SscParams::default()
    };
    let mut driver = Driver::new(params, 8, 8);
    let share = unimodal(8);
    while driver.ctl.bound() == 1 {
        driver.slice(&share);
    }
    let changed = driver.now;
    for _ in 0..10_000 {
        let i = driver.next;
        driver.next = (i + 1) % 8;
        let begin = driver.now;
        let out_voted = {
            driver.slice_of(i, &|_| SLICE / 4);
            driver.ctl.vote_totals().unwrap().1 > 0
        };
        if out_voted {
            return (begin, changed);
        }
    }
    panic!("never voted");
}

#[test]
fn warm_up_ignores_votes_right_after_a_bound_change() {
    let (vote, changed) = first_vote_after_bound_change(50 * STEP);
    assert!(
        vote >= changed + 50 * STEP,
        "vote at {vote}, bound changed at {changed}"
    );
    let (vote, changed) = first_vote_after_bound_change(0);
    assert!(
        vote <= changed + STEP,
        "without warm-up the next slice votes"
    );
}

/// One slice of `thread` that begins on general core `from` and moves into
/// the SSC at a lock attempt midway; returns whether it voted.
fn slice_with_arrival(ctl: &SscController, thread: &mut ThreadPolicyState, now: Nanos) -> bool {
    let from = ctl.order()[ctl.order().len() - 1];
    ctl.begin_slice(thread, now);
    let target = ctl
        .on_lock_attempt(thread, from, &[], now + STEP)
        .expect("moves into the SSC");
    let obs = cpu_slice(target, SLICE / 2, 0);
    ctl.on_slice_end(thread, obs, now + 2 * STEP).voted
}

#[test]
fn a_thread_votes_only_after_a_full_slice_on_the_ssc() {
    // Per-thread warm-up: the slice during which a thread arrives is no
    // vote (it began off the SSC); its next slice is, and arrivals of
    // others (short-lived tasks) never hold back the settled threads.
    let mut driver = Driver::new(improved(), 8, 4);
    driver.now = 10 * improved().vote_warmup;
    let mut newcomer = driver.ctl.register_thread(PROGRAM, driver.now);
    assert_eq!(newcomer.is_mig, MigState::QualifyToMigrate);
    assert!(!slice_with_arrival(&driver.ctl, &mut newcomer, driver.now));
    driver.now += 2 * STEP;
    let obs = cpu_slice(driver.ctl.ssc_cores()[0], SLICE / 2, 0);
    let settled = &mut driver.threads[0];
    driver.ctl.begin_slice(settled, driver.now - STEP);
    assert!(
        driver.ctl.on_slice_end(settled, obs, driver.now).voted,
        "a settled thread votes right after an arrival"
    );
    driver.ctl.begin_slice(&mut newcomer, driver.now);
    assert!(
        driver
            .ctl
            .on_slice_end(&mut newcomer, obs, driver.now + STEP)
            .voted
    );
    // The 2013 algorithm counts the arrival slice.
    let paper = Driver::new(SscParams::paper_2013(), 8, 4);
    let mut late = paper.ctl.register_thread(PROGRAM, 0);
    late.is_mig = MigState::QualifyToMigrate;
    assert!(slice_with_arrival(&paper.ctl, &mut late, 0));
}

#[test]
fn timer_restarts_the_search_from_one() {
    let mut driver = Driver::new(improved(), 64, 64);
    let found = driver.settle(&unimodal(16));
    assert_eq!(found, 16);
    driver.now += SscParams::default().research_interval;
    let decision = driver.ctl.tick(driver.now).unwrap();
    assert_eq!(
        (decision.kind, decision.bound_before, decision.bound_after),
        (DecisionKind::RestartTimer, 16, 1)
    );
    assert!(matches!(
        driver.ctl.search_state().unwrap().phase,
        Phase::Climb
    ));
    assert_eq!(driver.settle(&unimodal(16)), 16);
}

/// Settles at n* = 16 on 64 cores, then feeds `after` until a restart.
fn restart_after(after: &dyn Fn(u32) -> f64, drop_threads: usize) -> Option<Decision> {
    let mut driver = Driver::new(improved(), 64, 64);
    assert_eq!(driver.settle(&unimodal(16)), 16);
    for i in 0..drop_threads {
        let thread = driver.threads[i];
        driver.ctl.unregister_thread(&thread);
    }
    let n = driver.threads.len() - drop_threads;
    driver.threads.truncate(n);
    driver.next = 0;
    (0..10)
        .map(|_| driver.round(after))
        .find(|d| d.kind != DecisionKind::Hold)
}

#[test]
fn behaviour_changes_restart_the_search() {
    let same = unimodal(16);
    assert_eq!(
        restart_after(&same, 0),
        None,
        "a steady T inside [beta, alpha] holds"
    );
    let slightly_better = |n: u32| unimodal(16)(n) * 0.8; // T x 1.2
    assert_eq!(restart_after(&slightly_better, 0), None);
    let contention_gone = |_: u32| 0.0; // T x 2 > alpha
    assert_eq!(
        restart_after(&contention_gone, 0).unwrap().kind,
        DecisionKind::RestartThroughputJump
    );
    let contention_up = |_: u32| 0.9; // T x 0.2 < beta
    assert_eq!(
        restart_after(&contention_up, 0).unwrap().kind,
        DecisionKind::RestartThroughputJump
    );
    let restart = restart_after(&same, 60).unwrap(); // 4 threads left < 16 cores
    assert_eq!(
        (restart.kind, restart.bound_after),
        (DecisionKind::RestartWorkCores, 1)
    );
}
