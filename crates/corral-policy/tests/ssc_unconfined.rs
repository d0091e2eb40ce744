//! "No confinement" as a candidate (the user-space preset): a program whose
//! parallel part needs the cores keeps them, one that collapses keeps its
//! small SSC, and rounds close by time when lock-intensive threads vote
//! slowly.

mod ssc_driver;

use corral_policy::ssc::{Decision, DecisionKind, Phase, SscParams};
use ssc_driver::*;

/// Settles a driver of `threads` lock-intensive threads on 64 cores whose
/// whole program makes `rate(bound)` lock attempts per slice step; returns
/// the bound and the decision log.
fn settle(threads: usize, rate: &dyn Fn(u32) -> u64) -> (u32, Vec<Decision>) {
    settle_on(64, threads, rate)
}

/// [`settle`] on `cores` cores.
fn settle_on(cores: u32, threads: usize, rate: &dyn Fn(u32) -> u64) -> (u32, Vec<Decision>) {
    let mut driver = Driver::new(SscParams::user_space(), cores, threads);
    let share = unimodal(4);
    for _ in 0..200_000 {
        let bound = driver.ctl.bound();
        if let Some(d) = driver.ctl.observe_progress(rate(bound), driver.now) {
            driver.log.push(d);
        }
        let decided = driver.slice(&share).is_some() || driver.log.last().is_some();
        if decided && matches!(driver.ctl.search_state().unwrap().phase, Phase::Settled) {
            return (driver.ctl.bound(), driver.log);
        }
    }
    panic!("did not settle: {:?}", driver.log.last());
}

fn kinds(log: &[Decision]) -> Vec<DecisionKind> {
    log.iter()
        .map(|d| d.kind)
        .filter(|k| *k != DecisionKind::Hold)
        .collect()
}

#[test]
fn a_program_that_needs_every_core_keeps_them() {
    // Four lock-intensive threads cap the climb at 4 cores, but the rest of
    // the program runs best on all 64: the baseline round measured that, so
    // the climb settles there without probing every core again.
    let (bound, log) = settle(4, &|n| if n == 64 { 3_000 } else { 1_000 + u64::from(n) });
    assert_eq!(bound, 64, "{:?}", kinds(&log));
    let k = kinds(&log);
    assert_eq!(k.first(), Some(&DecisionKind::Baseline), "{k:?}");
    assert_eq!(k.last(), Some(&DecisionKind::SettleUnconfined), "{k:?}");
    assert!(!k.contains(&DecisionKind::ProbeUnconfined), "{k:?}");
}

#[test]
fn a_tie_goes_to_no_confinement() {
    // The best bound is 3% better than every core: within the 5% margin.
    let (bound, _) = settle(4, &|n| match n {
        64 => 1_000,
        4 => 1_030,
        _ => 900 + 10 * u64::from(n),
    });
    assert_eq!(bound, 64);
}

#[test]
fn a_collapsing_program_keeps_its_small_ssc() {
    // Every core added costs: one core is best, every core far worse.
    let (bound, log) = settle(16, &|n| 64_000 / u64::from(n));
    assert_eq!(bound, 1);
    let k = kinds(&log);
    // Every core is measured once, first, and not again.
    assert_eq!(k.first(), Some(&DecisionKind::Baseline), "{k:?}");
    assert!(!k.contains(&DecisionKind::ProbeUnconfined), "{k:?}");
    assert_eq!(k.last(), Some(&DecisionKind::RefineSettle), "{k:?}");
    // The papers' preset never leaves the SSC to measure every core.
    let mut driver = Driver::new(SscParams::paper_2013(), 64, 16);
    driver.settle(&unimodal(1));
    let k = kinds(&driver.log);
    assert!(!k.contains(&DecisionKind::ProbeUnconfined), "{k:?}");
    assert!(!k.contains(&DecisionKind::Baseline), "{k:?}");
}

#[test]
fn on_two_cores_one_core_is_judged_against_the_baseline() {
    // Two cores: the doubling's first step is every core, which the
    // baseline round measured. Moving there again spent rounds at a third
    // of the rate (sysbench mutex).
    let (bound, log) = settle_on(2, 2, &|n| if n == 1 { 3_000 } else { 1_000 });
    assert_eq!(bound, 1);
    let k = kinds(&log);
    assert_eq!(k, [DecisionKind::Baseline, DecisionKind::RefineSettle]);
    // After the baseline, the bound never goes back to every core.
    let mut after = log.iter().skip_while(|d| d.kind != DecisionKind::Baseline);
    assert!(after.all(|d| d.bound_after == 1), "{log:?}");
    // One core within the margin of every core: no confinement.
    let (bound, log) = settle_on(2, 2, &|n| if n == 1 { 1_020 } else { 1_000 });
    assert_eq!(bound, 2);
    assert_eq!(kinds(&log).last(), Some(&DecisionKind::SettleUnconfined));
}

/// When, after the warm-up, the first round closes with no slice ends at
/// all (threads that use little CPU) and `per_ms` attempts a millisecond.
fn first_round_by_time(per_ms: u64) -> Option<u64> {
    let params = SscParams::user_space();
    let driver = Driver::new(params, 8, 2);
    let ms = 1_000_000;
    (1..=200u64).map(|step| step * ms).find(|&t| {
        driver
            .ctl
            .observe_progress(per_ms, params.vote_warmup + t)
            .is_some()
    })
}

#[test]
fn rounds_close_by_time_once_enough_progress_is_counted() {
    let every = SscParams::user_space().progress_round;
    // 20 attempts a millisecond: the 400 needed take 20 ms.
    assert_eq!(first_round_by_time(20), Some(2 * every));
    // Too little progress: the round waits ten times as long.
    assert_eq!(first_round_by_time(3), Some(10 * every));
}
