//! A program contended only briefly, whose hand-offs are few, is not
//! confined before it has been contended for `baseline_min_contended`:
//! git grep on 16 cores lived 20-30 ms and spent its last third on one
//! core. Heavy hand-offs still start the search at the first round.

mod ssc_driver;

use corral_policy::ssc::{DecisionKind, SscParams};
use corral_policy::Nanos;
use ssc_driver::*;

/// Drives 32 lock-intensive threads on 16 cores (qualified at 0) that
/// make 500 acquisitions a ms, of which `waits_per_ms` contended; returns
/// when the baseline round decided.
fn baseline_at(params: SscParams, waits_per_ms: u64) -> Nanos {
    let mut driver = Driver::unsettled(params, 16, 32);
    let steps_per_ms = 1_000_000 / STEP;
    for step in 0..20_000u64 {
        let now = driver.now;
        if let Some(d) = driver.ctl.observe_progress(500 / steps_per_ms, now) {
            if d.kind == DecisionKind::Baseline {
                return now;
            }
        }
        if step % steps_per_ms == 0 {
            driver.ctl.observe_waits(0, waits_per_ms);
        }
        if let Some(d) = driver.slice(&|_| 0.5) {
            if d.kind == DecisionKind::Baseline {
                return driver.now;
            }
        }
    }
    panic!("no baseline decision: {:?}", driver.log);
}

#[test]
fn light_hand_offs_wait_for_the_contention_to_last() {
    let params = SscParams::user_space();
    let min = params.baseline_min_contended;
    assert!(min > 0);
    // 10 contended a ms on 16 cores: 20 us of hand-offs against 1.6 ms of
    // CPU time a ms.
    let at = baseline_at(params, 10);
    assert!(at >= min, "confined after {} ms", at / 1_000_000);
    // Without the wait the trial would have begun a round after the start.
    let eager = SscParams {
        baseline_min_contended: 0,
        ..params
    };
    assert!(baseline_at(eager, 10) < min);
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
