//! The kernel preset's search begins with one round on every core: a
//! program whose lock does not collapse reaches its cores in a few jumps
//! instead of doubling from one core, a search that ends below that round
//! settles on every core without a late probe, and a collapsing program
//! still keeps its small SSC.

mod ssc_driver;

use corral_policy::ssc::{Decision, DecisionKind, Phase, SscParams};
use ssc_driver::*;

/// Settles a kernel-preset driver of `threads` lock-intensive threads on
/// `cores` cores whose program makes `rate(bound)` lock acquisitions per
/// slice step; returns the bound and the moves (holds left out).
fn settle(cores: u32, threads: usize, rate: &dyn Fn(u32) -> u64) -> (u32, Vec<DecisionKind>) {
    let mut driver = Driver::new(SscParams::kernel(), cores, threads);
    let share = unimodal(4);
    let mut log: Vec<Decision> = Vec::new();
    for _ in 0..200_000 {
        let bound = driver.ctl.bound();
        if let Some(d) = driver.ctl.observe_progress(rate(bound), driver.now) {
            log.push(d);
        }
        if let Some(d) = driver.slice(&share) {
            log.push(d);
        }
        let settled = matches!(driver.ctl.search_state().unwrap().phase, Phase::Settled);
        if settled && !log.is_empty() {
            let moves = log
                .iter()
                .map(|d| d.kind)
                .filter(|k| *k != DecisionKind::Hold);
            return (driver.ctl.bound(), moves.collect());
        }
    }
    panic!("did not settle: {:?}", log.last());
}

#[test]
fn a_program_whose_lock_scales_reaches_its_cores_in_a_few_jumps() {
    // Progress grows with every core given: nothing collapses.
    let (bound, moves) = settle(1024, 1024, &|n| 100 * u64::from(n));
    assert_eq!(bound, 1024, "{moves:?}");
    assert_eq!(moves.first(), Some(&DecisionKind::Baseline), "{moves:?}");
    let climbs = moves.iter().filter(|k| **k == DecisionKind::Double).count();
    // Doubling from one core would take ten steps.
    assert!(climbs <= 3, "{climbs} steps: {moves:?}");
    assert!(!moves.contains(&DecisionKind::ProbeUnconfined), "{moves:?}");
}

#[test]
fn a_search_that_ends_below_every_core_settles_there_without_a_probe() {
    // Four lock-intensive threads cap the climb at 4 cores, but the rest of
    // the program runs best on all 64.
    let (bound, moves) = settle(64, 4, &|n| {
        if n == 64 {
            3_000
        } else {
            1_000 + u64::from(n)
        }
    });
    assert_eq!(bound, 64, "{moves:?}");
    assert_eq!(
        moves.last(),
        Some(&DecisionKind::SettleUnconfined),
        "{moves:?}"
    );
    assert!(!moves.contains(&DecisionKind::ProbeUnconfined), "{moves:?}");
}

#[test]
fn a_collapsing_program_still_keeps_its_small_ssc() {
    // Every core added costs: one core is best, every core far worse.
    let (bound, moves) = settle(64, 16, &|n| 64_000 / u64::from(n));
    assert_eq!(bound, 1, "{moves:?}");
    assert_eq!(moves.first(), Some(&DecisionKind::Baseline), "{moves:?}");
}

#[test]
fn a_climb_that_ends_level_with_every_core_settles_there_without_refining() {
    // Progress stops growing at 60 cores and stays level up to every core:
    // no bound beats no confinement, so probing around 60 only wastes rounds.
    let (bound, moves) = settle(256, 256, &|n| 100 * u64::from(n.min(60)));
    assert_eq!(bound, 256, "{moves:?}");
    assert!(!moves.contains(&DecisionKind::RefineProbe), "{moves:?}");
    assert_eq!(
        moves.last(),
        Some(&DecisionKind::SettleUnconfined),
        "{moves:?}"
    );
}

#[test]
fn a_program_far_below_its_baseline_leaves_one_core_after_one_short_round() {
    // One acquisition per core per 10 us step: one core makes a thousandth
    // of every core's progress, 100 units a millisecond, half the units a
    // round otherwise rests on.
    let params = SscParams::kernel();
    let mut driver = Driver::new(params, 1024, 1024);
    let share = unimodal(4);
    let mut log: Vec<Decision> = Vec::new();
    // Linear growth from one core meets the baseline only at every core,
    // which the baseline round measured: the search settles there.
    let leaves = |d: &Decision| d.kind == DecisionKind::SettleUnconfined;
    while driver.now < 100_000_000 && !log.iter().any(leaves) {
        let bound = u64::from(driver.ctl.bound());
        if let Some(d) = driver.ctl.observe_progress(bound, driver.now) {
            log.push(d);
        }
        if let Some(d) = driver.slice(&share) {
            log.push(d);
        }
    }
    let at = |kind| log.iter().position(|d| d.kind == kind);
    let baseline = at(DecisionKind::Baseline).expect("a baseline round");
    let double = at(DecisionKind::SettleUnconfined).expect("a move to every core");
    // No confirming round at one core: the baseline already shows that
    // more cores do better.
    assert_eq!(double, baseline + 1, "{log:?}");
    assert_eq!(log[baseline].bound_after, 1, "{log:?}");
    // One round of `progress_round` after the warm-up, not the two 2 ms
    // rounds that 200 units each would take.
    let at_one_core = log[double].at - log[baseline].at;
    assert!(
        at_one_core < params.vote_warmup + 2 * params.progress_round,
        "{at_one_core} ns at one core: {log:?}"
    );
    assert_eq!(log[double].bound_after, 1024, "{log:?}");
}
