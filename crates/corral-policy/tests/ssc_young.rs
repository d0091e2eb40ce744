//! A program contended only briefly, whose hand-offs are few, is not
//! confined before it has been contended for `baseline_min_contended`
//! (git grep on 16 cores lived 20-30 ms and spent its last third on one
//! core), nor before its hand-offs would have paid for the trial
//! (`trial_price`), priced over the time their waits were counted. Heavy
//! hand-offs still start the search at the first round, which closes
//! early where most of them are by threads on the SSC
//! (`heavy_baseline_round`).

mod ssc_driver;

use corral_policy::ssc::{DecisionKind, SscParams};
use corral_policy::Nanos;
use ssc_driver::*;

/// Drives 32 lock-intensive threads on 16 cores (qualified at 0) that
/// make 500 acquisitions a ms, of which `waits_per_ms` contended; returns
/// when the baseline round decided.
fn baseline_at(params: SscParams, waits_per_ms: u64) -> Nanos {
    baseline_before(params, waits_per_ms, Nanos::MAX).expect("a baseline decision")
}

/// [`baseline_at`], driven until `until` at most (`None`: no baseline
/// decision by then).
fn baseline_before(params: SscParams, waits_per_ms: u64, until: Nanos) -> Option<Nanos> {
    baseline_with_waits(params, (0, waits_per_ms), until)
}

/// [`baseline_before`] with the contended acquisitions a ms split into
/// those of threads off the SSC and on it.
fn baseline_with_waits(params: SscParams, (off, on): (u64, u64), until: Nanos) -> Option<Nanos> {
    let mut driver = Driver::unsettled(params, 16, 32);
    let steps_per_ms = 1_000_000 / STEP;
    for step in 0..200_000u64 {
        let now = driver.now;
        if now >= until {
            return None;
        }
        if let Some(d) = driver.ctl.observe_progress(500 / steps_per_ms, now) {
            if d.kind == DecisionKind::Baseline {
                return Some(now);
            }
        }
        // At the end of each ms, its waits (as a monitor's tick reports them).
        if step % steps_per_ms == steps_per_ms - 1 {
            driver.ctl.observe_waits(off, on);
        }
        if let Some(d) = driver.slice(&|_| 0.5) {
            if d.kind == DecisionKind::Baseline {
                return Some(driver.now);
            }
        }
    }
    None
}

#[test]
fn light_hand_offs_wait_for_the_contention_to_last() {
    let params = SscParams::user_space();
    let min = params.baseline_min_contended;
    assert!(min > 0);
    // 400 contended a ms on 16 cores: 0.8 ms of hand-offs against 16 ms
    // of the cores' time a ms, 5%: the trial's price is paid in 100 ms.
    let at = baseline_at(params, 400);
    assert!(at >= 100_000_000, "confined after {} ms", at / 1_000_000);
    // Without the wait the trial would have begun a round after the start.
    let eager = SscParams {
        baseline_min_contended: 0,
        trial_price: 0,
        ..params
    };
    assert!(baseline_at(eager, 400) < min);
}

#[test]
fn hand_offs_that_could_never_pay_for_a_trial_keep_every_core() {
    // 10 contended a ms on 16 cores (git grep's few): 0.125% of the
    // time, a price paid in 4 s; none within this second of contention.
    let params = SscParams::user_space();
    assert!(baseline_before(params, 10, 1_000_000_000).is_none());
    // The papers' floor alone would have confined it after 48 ms.
    let floor_only = SscParams {
        trial_price: 0,
        ..params
    };
    let at = baseline_before(floor_only, 10, 1_000_000_000).expect("a trial");
    assert!(at >= floor_only.baseline_min_contended);
}

#[test]
fn heavy_hand_offs_start_the_search_at_once() {
    // 2,000 contended a ms: 4 ms of hand-offs a ms, 2.5x the share.
    let params = SscParams::user_space();
    let at = baseline_at(params, 2_000);
    assert!(
        at < params.baseline_min_contended,
        "waited {} ms",
        at / 1_000_000
    );
}

#[test]
fn heavy_hand_offs_on_the_ssc_close_the_round_on_every_core_early() {
    // sysbench mutex at 64 threads on 2 CPUs: a 10 ms round on every core
    // ran at a sixth of the confined rate. Its rate only serves as the
    // trial's reference, which the late probe of every core re-measures.
    let params = SscParams::user_space();
    let full_round = params.vote_warmup + params.progress_round;
    let short_round = params.vote_warmup + params.heavy_baseline_round;
    assert!(params.heavy_baseline_round > 0 && short_round < full_round);
    let at = baseline_with_waits(params, (0, 2_000), Nanos::MAX).expect("a baseline");
    assert!(
        (short_round..short_round + 1_000_000).contains(&at),
        "baseline at {} us",
        at / 1_000
    );
    // Waits mostly by threads not placed yet: the trial would confine a
    // few of them; the round is as long as any.
    let at = baseline_with_waits(params, (1_500, 500), Nanos::MAX).expect("a baseline");
    assert!(at >= full_round, "baseline at {} us", at / 1_000);
    // Light hand-offs, all on the SSC: no early close either.
    let light = baseline_with_waits(params, (0, 400), Nanos::MAX).expect("a baseline");
    assert!(light >= params.baseline_min_contended);
    // Off, every round is as long as any.
    let off = SscParams {
        heavy_baseline_round: 0,
        ..params
    };
    let at = baseline_with_waits(off, (0, 2_000), Nanos::MAX).expect("a baseline");
    assert!(at >= full_round, "baseline at {} us", at / 1_000);
}

#[test]
fn hand_offs_are_priced_over_the_time_their_waits_were_counted() {
    // 640 contended a ms on 16 cores: 8% of the cores' time, under the
    // qualifying 10%. The first round's waits count from the start, its
    // progress only after the 4 ms warm-up: over the round alone they read
    // 11-12%, heavy, and the trial began at its first round.
    let params = SscParams::user_space();
    let at = baseline_at(params, 640);
    assert!(
        at >= params.baseline_min_contended,
        "confined after {} ms",
        at / 1_000_000
    );
}
