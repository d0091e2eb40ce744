//! The search's state machine driven round by round: rounds while threads
//! still arrive, and the rounds after it settles.

use super::*;

/// A round of `measured` progress at `bound` of 2 cores with
/// `lock_intensive` threads.
fn round(bound: u32, lock_intensive: u32, measured: f64) -> Round {
    Round {
        measured: Some(measured),
        bound,
        lock_intensive,
        max_bound: 2,
        min_bound: 1,
        useful_perc: 0.0,
        waits_off_ssc: None,
        contended_for: Nanos::MAX,
        handoff_share: None,
    }
}

/// Feeds `rounds` to a fresh search, moving the bound as each step says;
/// returns the steps' kinds and the bound at the end.
fn run(params: &SscParams, rounds: &[(u32, f64)]) -> (Vec<DecisionKind>, u32) {
    drive(
        params,
        rounds.iter().map(|&(li, measured)| (li, measured, None)),
    )
}

/// [`run`] with each round's share of waits off the SSC.
fn run_with_waits(params: &SscParams, rounds: &[(u32, f64, f64)]) -> (Vec<DecisionKind>, u32) {
    drive(
        params,
        rounds
            .iter()
            .map(|&(li, measured, off)| (li, measured, Some(off))),
    )
}

/// Rounds of (lock-intensive, measured, share of waits off the SSC).
fn drive(
    params: &SscParams,
    rounds: impl IntoIterator<Item = (u32, f64, Option<f64>)>,
) -> (Vec<DecisionKind>, u32) {
    let mut state = SearchState::for_params(params);
    let mut bound = 2;
    let mut kinds = Vec::new();
    for (lock_intensive, measured, off) in rounds {
        let r = Round {
            waits_off_ssc: off,
            ..round(bound, lock_intensive, measured)
        };
        let step = state.determine(params, r);
        kinds.push(step.kind);
        match step.bound {
            BoundMove::To(b) => bound = b,
            BoundMove::Restart => bound = 2,
            BoundMove::Keep => {}
        }
    }
    (kinds, bound)
}

#[test]
fn rounds_while_threads_still_arrive_do_not_count() {
    // 64 threads qualify over three rounds after the baseline (1,000 on
    // both cores): the rounds at one core that held a part of them read
    // level with the baseline; once all are there, one core makes 3,000.
    let rounds = [
        (5, 1_000.0),
        (19, 900.0),
        (61, 1_000.0),
        (62, 3_000.0),
        (62, 3_000.0),
    ];
    let params = SscParams::user_space();
    let (kinds, bound) = run(&params, &rounds);
    assert_eq!(bound, 1, "{kinds:?}");
    assert_eq!(kinds.last(), Some(&DecisionKind::RefineSettle), "{kinds:?}");
    // Counting them, the search left the one core it needed.
    let counting = SscParams {
        arrival_growth: 0.0,
        ..params
    };
    let (kinds, bound) = run(&counting, &rounds);
    assert_eq!(bound, 2, "{kinds:?}");
    assert!(kinds.contains(&DecisionKind::SettleUnconfined), "{kinds:?}");
}

#[test]
fn one_stalled_round_does_not_send_a_confined_program_to_every_core() {
    // sysbench mutex at 64 threads: 52k on both cores, 100k on one, then
    // a round of a 40 ms stall at 9k, then 100k again.
    let rounds = [
        (30, 52_000.0),
        (31, 100_000.0),
        (31, 9_000.0),
        (31, 100_000.0),
        (31, 100_000.0),
        (31, 100_000.0),
    ];
    let params = SscParams::user_space();
    let (kinds, bound) = run(&params, &rounds);
    assert_eq!(kinds[2], DecisionKind::Hold, "{kinds:?}");
    assert_eq!(bound, 1, "{kinds:?}");
    assert!(
        !kinds.contains(&DecisionKind::SettleUnconfined),
        "{kinds:?}"
    );
    // Counted, the stall decided.
    let counted = SscParams {
        stall_fraction: 0.0,
        ..params
    };
    let (kinds, bound) = run(&counted, &rounds);
    assert_eq!(kinds[2], DecisionKind::SettleUnconfined, "{kinds:?}");
    assert_eq!(bound, 2, "{kinds:?}");
    // A bound that never did well is judged at once: a program that needs
    // its cores leaves one core on its first rounds there.
    let needs_cores = [(8, 52_000.0), (8, 9_000.0), (8, 9_000.0), (8, 9_000.0)];
    let (kinds, bound) = run(&params, &needs_cores);
    assert_eq!(bound, 2, "{kinds:?}");
    assert_eq!(kinds[1], DecisionKind::SettleUnconfined, "{kinds:?}");
}

#[test]
fn a_confined_round_whose_waits_are_still_off_the_ssc_does_not_count() {
    // sysbench mutex at 64 threads: 45k on both cores; on one core with
    // 52-58 threads qualified, most waits still off it and 45k; once the
    // last threads moved, 118k with the waits on the SSC.
    let rounds = [
        (50, 45_000.0, 0.5),
        (52, 45_000.0, 0.9),
        (55, 45_000.0, 0.9),
        (58, 45_000.0, 0.8),
        (60, 118_000.0, 0.1),
        (60, 118_000.0, 0.1),
        (60, 118_000.0, 0.1),
    ];
    let params = SscParams::user_space();
    let (kinds, bound) = run_with_waits(&params, &rounds);
    assert_eq!(bound, 1, "{kinds:?}");
    assert_eq!(&kinds[1..4], &[DecisionKind::Hold; 3], "{kinds:?}");
    assert!(
        !kinds.contains(&DecisionKind::SettleUnconfined),
        "{kinds:?}"
    );
    // Counted, the mixed rounds settled the program on every core.
    let counted = SscParams {
        mixed_waits_off_ssc: 0.0,
        ..params
    };
    let (kinds, bound) = run_with_waits(&counted, &rounds);
    assert_eq!(bound, 2, "{kinds:?}");
    assert!(kinds.contains(&DecisionKind::SettleUnconfined), "{kinds:?}");
}

#[test]
fn threads_that_never_stop_arriving_still_get_a_search() {
    // The count grows by half every round: after `arrival_hold_max` held
    // rounds the search counts again.
    let mut rounds = vec![(4u32, 1_000.0)];
    let mut lock_intensive = 4.0f64;
    for _ in 0..10 {
        lock_intensive *= 1.5;
        rounds.push((lock_intensive as u32, 3_000.0));
    }
    let params = SscParams::user_space();
    let (kinds, bound) = run(&params, &rounds);
    assert_eq!(bound, 1, "{kinds:?}");
    assert!(kinds.contains(&DecisionKind::RefineSettle), "{kinds:?}");
    // Without the cap it would never decide.
    let uncapped = SscParams {
        arrival_hold_max: u32::MAX,
        ..params
    };
    let (kinds, _) = run(&uncapped, &rounds);
    assert!(!kinds.contains(&DecisionKind::RefineSettle), "{kinds:?}");
}

#[test]
fn the_rounds_after_settling_record_where_the_threads_arrived() {
    // Settled on one core at 1,500 while threads still moved; there they
    // make 3,000 from then on, twice the record (beyond alpha = 1.3).
    let mut rounds = vec![(64, 1_000.0), (64, 1_500.0), (64, 1_500.0)];
    rounds.extend([(64, 3_000.0); 6]);
    // Every round reads the same on either bound here: no reference round.
    let params = SscParams {
        reference_every: 0,
        ..SscParams::user_space()
    };
    let (kinds, bound) = run(&params, &rounds);
    assert_eq!(kinds[2], DecisionKind::RefineSettle, "{kinds:?}");
    assert_eq!(bound, 1, "{kinds:?}");
    assert!(
        kinds[3..].iter().all(|k| *k == DecisionKind::Hold),
        "{kinds:?}"
    );
    // Recording only at the decision, the arrival reads as a jump.
    let at_decision = SscParams {
        settle_in_rounds: 0,
        ..params
    };
    let (kinds, _) = run(&at_decision, &rounds);
    assert!(
        kinds.contains(&DecisionKind::RestartThroughputJump),
        "{kinds:?}"
    );
}

#[test]
fn on_every_core_a_fall_must_last_before_it_restarts() {
    // One core does worse (500 against 1,000): settled on every core.
    // Then three rounds at 600, a dip such programs make by themselves.
    let mut rounds = vec![(8, 1_000.0), (8, 500.0), (8, 500.0)];
    rounds.extend([(8, 1_000.0); 2]);
    rounds.extend([(8, 600.0); 3]);
    let params = SscParams::user_space();
    let (kinds, bound) = run(&params, &rounds);
    assert!(kinds.contains(&DecisionKind::SettleUnconfined), "{kinds:?}");
    assert!(
        !kinds.contains(&DecisionKind::RestartThroughputJump),
        "{kinds:?}"
    );
    assert_eq!(bound, 2, "{kinds:?}");
    // A fourth round of it restarts the search.
    rounds.push((8, 600.0));
    let (kinds, _) = run(&params, &rounds);
    assert_eq!(
        kinds.last(),
        Some(&DecisionKind::RestartThroughputJump),
        "{kinds:?}"
    );
    // With the confirmations of a confined bound, the dip restarted it.
    let (kinds, _) = run(
        &SscParams {
            unconfined_fall_rounds: 0,
            ..params
        },
        &rounds[..8],
    );
    assert!(
        kinds.contains(&DecisionKind::RestartThroughputJump),
        "{kinds:?}"
    );
}

#[test]
fn a_small_gain_from_confinement_keeps_every_core() {
    // One core 10% above every core on both rounds: within the user-space
    // margin (15%), so no confinement; the kernel preset's 5% keeps it.
    let rounds = [(8, 1_000.0), (8, 1_100.0), (8, 1_100.0)];
    let params = SscParams::user_space();
    let (kinds, bound) = run(&params, &rounds);
    assert_eq!(bound, 2, "{kinds:?}");
    let tight = SscParams {
        unconfined_margin: 0.05,
        ..params
    };
    let (kinds, bound) = run(&tight, &rounds);
    assert_eq!(bound, 1, "{kinds:?}");
}

#[test]
fn a_young_contention_with_light_hand_offs_is_not_confined_yet() {
    // Every 10 ms round on every core, its first threads qualified at 0 ms.
    let params = SscParams::user_space();
    // Hand-offs cost 5% of the time (light) or 50% (heavy, over the
    // qualifying 10%).
    let young = |contended_ms: u64, heavy: bool| Round {
        contended_for: contended_ms * 1_000_000,
        handoff_share: Some(if heavy { 0.5 } else { 0.05 }),
        ..round(2, 40, 500.0)
    };
    let mut state = SearchState::for_params(&params);
    // At 5% the 5 ms price of a trial is paid in 100 ms.
    for ms in [6, 16, 26, 36, 46, 56, 76, 96] {
        let step = state.determine(&params, young(ms, false));
        assert_eq!(step.kind, DecisionKind::Hold, "at {ms} ms");
        assert_eq!(step.bound, BoundMove::Keep, "at {ms} ms");
    }
    // Contended for long enough, the baseline decides and the trial begins.
    let step = state.determine(&params, young(106, false));
    assert_eq!(step.kind, DecisionKind::Baseline);
    assert_eq!(step.bound, BoundMove::To(1));
    // Heavy hand-offs (sysbench mutex) start the search at its first round.
    let mut state = SearchState::for_params(&params);
    let step = state.determine(&params, young(6, true));
    assert_eq!(step.kind, DecisionKind::Baseline);
    // The papers' presets never wait.
    let mut state = SearchState::for_params(&SscParams::kernel());
    let step = state.determine(&SscParams::kernel(), young(0, false));
    assert_eq!(step.kind, DecisionKind::Baseline);
}

#[test]
fn hand_offs_too_few_to_pay_for_a_trial_keep_every_core() {
    // pigz -p 64 on 2 CPUs: 59 threads qualify (they wait long), but the
    // program hands off 0.1-2.6 times a ms, under 0.3% of the time; a
    // trial cost it 25 ms on one core. A round without a wait is no
    // evidence either.
    let params = SscParams::user_space();
    let pigz = |contended_ms: u64, share: f64| Round {
        contended_for: contended_ms * 1_000_000,
        handoff_share: Some(share),
        ..round(2, 59, 140.0)
    };
    let mut state = SearchState::for_params(&params);
    for ms in (10..1_000).step_by(10) {
        let share = if ms % 20 == 0 { 0.0 } else { 0.0026 };
        let step = state.determine(&params, pigz(ms, share));
        assert_eq!(step.kind, DecisionKind::Hold, "at {ms} ms");
        assert_eq!(step.bound, BoundMove::Keep, "at {ms} ms");
        // Only time can start the trial: a driver may look less often.
        assert!(state.awaits_trial, "at {ms} ms");
    }
    // Long enough, even such a share has paid for one: 5 ms / 0.26%.
    let step = state.determine(&params, pigz(1_930, 0.0026));
    assert_eq!(step.kind, DecisionKind::Baseline);
    assert!(!state.awaits_trial);
    // Hand-offs that turn heavy start it at once.
    let mut state = SearchState::for_params(&params);
    assert_eq!(
        state.determine(&params, pigz(10, 0.0)).kind,
        DecisionKind::Hold
    );
    assert_eq!(
        state.determine(&params, pigz(20, 0.3)).kind,
        DecisionKind::Baseline
    );
}

#[test]
fn the_wait_for_a_trial_is_the_price_over_the_share() {
    let params = SscParams::user_space();
    let ms = |share: Option<f64>| params.trial_after(share) / 1_000_000;
    // Unknown (no waits reported) or heavy: at once.
    assert_eq!(ms(None), 0);
    assert_eq!(ms(Some(0.11)), 0);
    // Light: the price over the share, never under the floor.
    assert_eq!(ms(Some(0.1)), 50);
    assert_eq!(ms(Some(0.025)), 200);
    assert_eq!(ms(Some(0.02)), 250);
    assert_eq!(params.trial_after(Some(0.0)), Nanos::MAX);
    // Without a price, only the floor.
    let floor_only = SscParams {
        trial_price: 0,
        ..params
    };
    assert_eq!(floor_only.trial_after(Some(0.0)), 48_000_000);
    assert_eq!(SscParams::kernel().trial_after(Some(0.0)), 0);
}

/// Rounds spent at a doubled bound of 2 of 16 cores whose progress is
/// `at_two` against 40,000 at one core (after a baseline of 6,000 on
/// every core), before the search leaves it; and the bound it goes to.
fn rounds_at_two(params: &SscParams, at_two: f64) -> (usize, u32) {
    let mut state = SearchState::for_params(params);
    let mut bound = 16;
    let mut at_two_rounds = 0;
    for _ in 0..20 {
        let measured = match bound {
            16 => 6_000.0,
            1 => 40_000.0,
            2 => at_two,
            _ => 10_000.0,
        };
        let r = Round {
            max_bound: 16,
            ..round(bound, 16, measured)
        };
        if bound == 2 {
            at_two_rounds += 1;
        }
        let step = state.determine(params, r);
        match step.bound {
            BoundMove::To(b) => bound = b,
            BoundMove::Restart => bound = 16,
            BoundMove::Keep => {}
        }
        if at_two_rounds > 0 && bound != 2 {
            return (at_two_rounds, bound);
        }
    }
    (at_two_rounds, bound)
}

#[test]
fn a_probe_at_under_half_is_rejected_after_one_round() {
    // sysbench mutex on 16 cores: one core makes 40k, two make 15k.
    let params = SscParams::user_space();
    assert_eq!(rounds_at_two(&params, 15_000.0), (1, 1));
    // Without the rule, the step back takes its confirmations.
    let confirming = SscParams {
        reject_below: 0.0,
        ..params
    };
    assert_eq!(rounds_at_two(&confirming, 15_000.0), (3, 1));
    // A probe within noise of its reference still takes them.
    assert_eq!(rounds_at_two(&params, 30_000.0), (3, 1));
}

#[test]
fn a_refinement_probe_at_under_half_is_left_after_one_round() {
    let probing = |params: &SscParams, measured: f64| {
        let mut state = SearchState::for_params(params);
        // Every thread arrived rounds ago (no arrival hold).
        state.last_lock_intensive = 16;
        state.phase = Phase::Refine(Refine {
            center: 2,
            center_thro: 40_000.0,
            step: 1,
            dir: 1,
            moved_dir: 0,
            probe: 3,
            streak: 0,
        });
        let r = Round {
            max_bound: 16,
            ..round(3, 16, measured)
        };
        state.determine(params, r).bound
    };
    let params = SscParams::user_space();
    assert_eq!(probing(&params, 10_000.0), BoundMove::To(1));
    // Within noise, or without the rule: the probe holds for its rounds.
    assert_eq!(probing(&params, 30_000.0), BoundMove::Keep);
    let confirming = SscParams {
        reject_below: 0.0,
        ..params
    };
    assert_eq!(probing(&confirming, 10_000.0), BoundMove::Keep);
}

/// Feeds `n` rounds to a fresh search on 2 cores, round `i`'s
/// (lock-intensive, measured) read from `rate(i, bound)`; returns each
/// step's kind with the bound after it.
fn drive_by(
    params: &SscParams,
    n: usize,
    rate: impl Fn(usize, u32) -> (u32, f64),
) -> Vec<(DecisionKind, u32)> {
    let mut state = SearchState::for_params(params);
    let mut bound = 2;
    let mut log = Vec::new();
    for i in 0..n {
        let (lock_intensive, measured) = rate(i, bound);
        let step = state.determine(params, round(bound, lock_intensive, measured));
        match step.bound {
            BoundMove::To(b) => bound = b,
            BoundMove::Restart => bound = 2,
            BoundMove::Keep => {}
        }
        log.push((step.kind, bound));
    }
    log
}

#[test]
fn a_rising_then_flat_unconfined_rate_is_not_the_reference() {
    // The program's threads arrive over its first rounds: on every core it
    // climbs 1,000 -> 5,000 a ms and stays there; confined to one core it
    // makes 3,800. Measured on the rise, every core looks worse.
    let params = SscParams::user_space();
    let every_core = |i: usize| {
        [1_000.0, 2_000.0, 3_000.0, 4_000.0]
            .get(i)
            .copied()
            .unwrap_or(5_000.0)
    };
    // Light hand-offs: the rounds that wait for a trial see the rise, and
    // the baseline waits for it to end.
    let mut state = SearchState::for_params(&params);
    let mut baseline = None;
    for i in 0..6 {
        let r = Round {
            contended_for: (50 + 20 * i as u64) * 1_000_000,
            handoff_share: Some(0.05),
            ..round(2, 8, every_core(i))
        };
        let step = state.determine(&params, r);
        if step.kind == DecisionKind::Baseline {
            baseline = Some(step.thro);
            break;
        }
    }
    assert_eq!(baseline, Some(5_000.0));
    // Heavy hand-offs: no trial to wait for; the first round counts, on
    // the rise, and the search settles confined. The reference rounds
    // find every core better and leave it.
    let log = drive_by(&params, 40, |i, bound| {
        (8, if bound == 2 { every_core(i) } else { 3_800.0 })
    });
    let settled = log
        .iter()
        .position(|&(k, b)| k == DecisionKind::RefineSettle && b == 1)
        .expect("never settled confined");
    let dropped = log
        .iter()
        .position(|&(k, _)| k == DecisionKind::DropConfined)
        .expect("never dropped");
    assert!(dropped - settled <= 10, "{log:?}");
    assert!(log[dropped..].iter().all(|&(_, b)| b == 2), "{log:?}");
}

#[test]
fn a_bound_that_measures_below_the_reference_is_dropped_within_two_rounds() {
    // Every core makes 1,000 a ms; one core 1,200 until round 12, then
    // 950: below every core, yet no jump from 1,200 (beta 0.7).
    let params = SscParams::user_space();
    let log = drive_by(&params, 30, |i, bound| match bound {
        2 => (8, 1_000.0),
        _ if i < 12 => (8, 1_200.0),
        _ => (8, 950.0),
    });
    let first_below = 12;
    assert!(
        log[..first_below].iter().any(|&(_, b)| b == 1),
        "never confined: {log:?}"
    );
    let dropped = first_below
        + log[first_below..]
            .iter()
            .position(|&(k, _)| k == DecisionKind::DropConfined)
            .expect("never dropped");
    // Rounds run on the confined bound (a reference round between them
    // runs on every core and does not count).
    let confined_rounds = (first_below..=dropped)
        .filter(|&i| log[i - 1].1 == 1)
        .count();
    assert!(confined_rounds <= 2, "{confined_rounds}: {log:?}");
    assert!(log[dropped..].iter().all(|&(_, b)| b == 2), "{log:?}");
}

#[test]
fn a_stale_reference_is_measured_again_and_every_core_wins() {
    // Every core read 1,000 a ms while the search ran and confinement
    // 3,000; from round 15 every core makes 5,000 (the program's parallel
    // part grew), confinement still 3,000: no round of the confined bound
    // could tell without measuring every core again.
    let params = SscParams::user_space();
    let log = drive_by(&params, 60, |i, bound| match bound {
        2 if i < 15 => (8, 1_000.0),
        2 => (8, 5_000.0),
        _ => (8, 3_000.0),
    });
    assert!(log[..15].iter().any(|&(_, b)| b == 1), "{log:?}");
    assert!(
        log.iter().any(|&(k, _)| k == DecisionKind::Reference),
        "{log:?}"
    );
    assert_eq!(log.last().map(|l| l.1), Some(2), "{log:?}");
}

#[test]
fn reference_rounds_of_a_program_confinement_helps_are_few() {
    // sysbench mutex on 2 CPUs: every core makes a sixth of one core.
    let params = SscParams::user_space();
    let log = drive_by(&params, 200, |_, bound| {
        (8, if bound == 2 { 1_000.0 } else { 6_000.0 })
    });
    let settled_at = log
        .iter()
        .position(|&(k, _)| k == DecisionKind::RefineSettle)
        .expect("never settled");
    let after = &log[settled_at..];
    let references = after
        .iter()
        .filter(|&&(k, _)| k == DecisionKind::Reference)
        .count();
    let keeps = after
        .iter()
        .filter(|&&(k, _)| k == DecisionKind::KeepConfined)
        .count();
    // After 4 settled rounds, then 8, 16, 32, 32, ...: 8 in 190 rounds,
    // 1 round in 24 on every core.
    assert!(
        (3..=9).contains(&references),
        "{references} in {}",
        after.len()
    );
    // Each reference round went back to the confined bound.
    assert!(keeps + 1 >= references && keeps <= references, "{log:?}");
    assert!(!after.iter().any(|&(k, _)| k == DecisionKind::DropConfined));
    let last_kept = after
        .iter()
        .rev()
        .find(|&&(k, _)| k != DecisionKind::Reference)
        .map(|l| l.1);
    assert_eq!(last_kept, Some(1), "{log:?}");
}

#[test]
fn the_first_rounds_back_from_a_reference_round_do_not_restart_the_search() {
    // sysbench mutex at 8 threads on 2 CPUs: 50k a ms on one core, 15k
    // on both; the second round back on one core reads 33k (a stall).
    // Recorded as the settled rate, it made the next ordinary rounds a
    // jump, and the search restarted (seen in `corral run --report`).
    let params = SscParams::user_space();
    let prev = std::cell::Cell::new(2);
    let since_back = std::cell::Cell::new(u32::MAX);
    let log = drive_by(&params, 120, |_, bound| {
        if prev.replace(bound) == 2 && bound == 1 {
            since_back.set(0);
        } else {
            since_back.set(since_back.get().saturating_add(1));
        }
        let rate = match bound {
            2 => 15_000.0,
            _ if since_back.get() == 1 => 33_000.0,
            _ => 50_000.0,
        };
        (8, rate)
    });
    assert!(
        log.iter().any(|&(k, _)| k == DecisionKind::KeepConfined),
        "{log:?}"
    );
    assert!(
        !log.iter().any(|&(k, _)| matches!(
            k,
            DecisionKind::RestartThroughputJump | DecisionKind::RestartWorkCores
        )),
        "{log:?}"
    );
}

#[test]
fn a_baseline_waits_for_a_measured_round() {
    // `corral run` at a late load: the votes close the first round before
    // the monitor has reported any progress; its T = n(1 - p) is about 2
    // where measured rounds read thousands a ms.
    let params = SscParams::user_space();
    let unmeasured = Round {
        measured: None,
        useful_perc: 0.95,
        ..round(2, 8, 0.0)
    };
    let mut state = SearchState::for_params(&params);
    let step = state.determine(&params, unmeasured);
    assert_eq!(step.kind, DecisionKind::Hold);
    let step = state.determine(&params, round(2, 8, 4_000.0));
    assert_eq!(step.kind, DecisionKind::Baseline);
    assert_eq!(state.unconfined_thro, Some(4_000.0));
    // A driver that never measures (the kernel-lock monitor) is not held.
    let kernel = SscParams::kernel();
    let mut state = SearchState::for_params(&kernel);
    let step = state.determine(&kernel, unmeasured);
    assert_eq!(step.kind, DecisionKind::Baseline);
}
