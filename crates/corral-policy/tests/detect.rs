//! Detection: per-slice wait share, qualification, migrate-back streaks and
//! per-lock hotness.

use corral_policy::detect::{
    is_quiet, qualifies, wait_share, DetectParams, HotnessParams, LockHotness, QuietStreak,
};

#[test]
fn defaults_are_the_papers() {
    let p = DetectParams::default();
    assert_eq!(p.qualify_share, 0.10);
    assert!(p.release_share < p.qualify_share, "a hysteresis band");
    assert!(p.release_after_slices >= 2);
}

#[test]
fn share_is_waits_over_slice_length() {
    assert_eq!(wait_share(0, 1_000), 0.0);
    assert!((wait_share(300, 1_000) - 0.3).abs() < 1e-12);
    assert_eq!(wait_share(2_000, 1_000), 1.0, "clamped");
    assert_eq!(wait_share(10, 0), 0.0, "empty slice");
}

#[test]
fn threshold_qualifies_strictly_above_t() {
    let p = DetectParams::default();
    assert!(!qualifies(&p, 100_000, 0, 1_000_000, 0));
    assert!(qualifies(&p, 100_001, 0, 1_000_000, 0));
    assert!(!qualifies(&p, 5, 0, 0, 0));
    let strict = DetectParams {
        qualify_share: 0.5,
        ..p
    };
    assert!(!qualifies(&strict, 400, 0, 1_000, 0));
}

#[test]
fn with_a_handoff_cost_a_long_but_seldom_wait_does_not_qualify() {
    let p = corral_policy::ssc::SscParams::user_space().detect;
    assert!(p.handoff_ns > 0);
    let slice = 1_000_000;
    // Half the slice asleep behind a holder, in 3 waits (git grep's
    // workers): confinement could save only 3 hand-offs.
    assert!(!qualifies(&p, slice / 2, 3, slice, 0));
    // The same wait in hundreds of hand-offs (sysbench mutex) qualifies.
    assert!(qualifies(&p, slice / 2, 500, slice, 0));
    // Many waits but a short total wait still does not.
    assert!(!qualifies(&p, slice / 20, 500, slice, 0));
    // Without the cost (kernel spin locks, paper 1) the count is ignored.
    let kernel = corral_policy::ssc::SscParams::kernel().detect;
    assert_eq!(kernel.handoff_ns, 0);
    assert!(qualifies(&kernel, slice / 2, 0, slice, 0));
}

#[test]
fn k_quiet_slices_send_back_and_a_busy_one_resets() {
    let p = DetectParams {
        release_after_slices: 3,
        ..DetectParams::default()
    };
    let mut streak = QuietStreak::default();
    let slice = 1_000_000;
    let quiet = is_quiet(&p, 10_000, slice);
    let busy = is_quiet(&p, 200_000, slice);
    assert!(quiet && !busy);
    assert!(
        !is_quiet(&p, 60_000, slice),
        "between the thresholds is not quiet"
    );
    assert!(!streak.observe(&p, quiet));
    assert!(!streak.observe(&p, quiet));
    assert!(!streak.observe(&p, busy));
    assert_eq!(streak.slices, 0);
    assert!(!streak.observe(&p, quiet));
    assert!(!streak.observe(&p, quiet));
    assert!(streak.observe(&p, quiet));
    let never = DetectParams {
        release_after_slices: 0,
        ..p
    };
    let mut streak = QuietStreak::default();
    assert!((0..10).all(|_| !streak.observe(&never, true)));
}

#[test]
fn repeated_releases_back_off_exponentially() {
    let p = DetectParams::default();
    let k = p.release_after_slices;
    let mut streak = QuietStreak::default();
    let slices_to_release = |streak: &mut QuietStreak| (1..).find(|_| streak.observe(&p, true));
    assert_eq!(slices_to_release(&mut streak), Some(k));
    streak.released(2);
    assert_eq!(slices_to_release(&mut streak), Some(2 * k));
    streak.released(2);
    streak.released(2);
    assert_eq!(streak.backoff, 2, "capped at the maximum");
    streak.reset();
    assert_eq!(slices_to_release(&mut streak), Some(4 * k));
    // General slices forgive one level per release streak.
    streak.reset();
    (0..4 * k).for_each(|_| streak.observe_general(&p));
    assert_eq!(streak.backoff, 1);
    let mut off = QuietStreak::default();
    off.released(0);
    assert_eq!(off.needed(&p), k, "max 0 turns the backoff off");
}

#[test]
fn the_lock_with_most_waiting_is_hot() {
    let mut heat = LockHotness::new(HotnessParams::default(), 8);
    heat.record_wait(0xA, 9_000_000);
    for lock in 1..=5u64 {
        heat.record_wait(0x100 + lock, 200_000);
    }
    assert!(heat.is_hot(0xA));
    assert!(!heat.is_hot(0x101), "2% of the waiting is cold");
    assert!(!heat.is_hot(0xDEAD), "untracked");
    assert_eq!(heat.total_wait(), 10_000_000);
}

#[test]
fn little_waiting_overall_makes_nothing_hot() {
    let mut heat = LockHotness::new(HotnessParams::default(), 8);
    heat.record_wait(1, 1_000);
    assert!(!heat.is_hot(1));
}

#[test]
fn decay_cools_a_lock_that_stopped_waiting() {
    let mut heat = LockHotness::new(HotnessParams::default(), 8);
    heat.record_wait(1, 8_000_000);
    heat.record_wait(2, 1_000_000);
    assert!(heat.is_hot(1) && heat.is_hot(2));
    for _ in 0..4 {
        heat.decay();
        heat.record_wait(2, 1_000_000);
    }
    assert_eq!(heat.heat(1), 500_000);
    assert!(heat.is_hot(2));
    for _ in 0..20 {
        heat.decay();
        heat.record_wait(2, 1_000_000);
    }
    assert!(
        !heat.is_hot(1),
        "cooled to {} of {}",
        heat.heat(1),
        heat.total_wait()
    );
}

#[test]
fn a_full_table_evicts_the_coldest_for_a_hotter_lock() {
    let mut heat = LockHotness::new(HotnessParams::default(), 2);
    heat.record_wait(1, 5_000_000);
    heat.record_wait(2, 100);
    heat.record_wait(3, 50);
    assert_eq!(heat.heat(3), 0, "colder than everything tracked: dropped");
    heat.record_wait(4, 3_000_000);
    assert_eq!(heat.heat(2), 0, "the coldest was evicted");
    assert_eq!(heat.heat(4), 3_000_000);
    assert_eq!(heat.entries().len(), 2);
}

/// A slice of `cpu` ns of CPU time spanning `wall` ns, `wait` of them
/// waiting for a lock in 500 hand-offs (so only the share decides).
fn user_slice(cpu: u64, wall: u64, wait: u64) -> bool {
    user_slice_with(cpu, wall, wait, 500)
}

/// [`user_slice`] with `waits` hand-offs.
fn user_slice_with(cpu: u64, wall: u64, wait: u64, waits: u64) -> bool {
    let p = corral_policy::ssc::SscParams::user_space().detect;
    qualifies(&p, wait, waits, cpu, wall)
}

#[test]
fn a_thread_asleep_on_a_condvar_most_of_its_slice_qualifies_only_on_many_waits() {
    // 10 ms of wall: 9 ms asleep on a condition variable (no lock wait),
    // 0.5 ms waiting for a lock, 0.5 ms on the CPU. The sleep is not the
    // lock's: while awake, half its time went to the lock.
    let ms = 1_000_000;
    assert!(user_slice(ms / 2, 10 * ms, ms / 2), "500 waits in 0.5 ms");
    // git grep's producer: the same times in 10 waits, which a sleep
    // and a wake-up cost little beside, so confining it saves nothing.
    assert!(!user_slice_with(ms / 2, 10 * ms, ms / 2, 10));
}

#[test]
fn sysbench_threads_after_a_start_barrier_qualify_in_their_first_window() {
    // 64 threads on 2 cores: 4 ms on the CPU, 0.8 ms waiting in 5,300
    // contended acquisitions, over 45 ms mostly at sysbench's barrier.
    let ms = 1_000_000;
    assert!(user_slice_with(4 * ms, 45 * ms, ms * 8 / 10, 5_300));
}

#[test]
fn a_window_spent_asleep_on_a_lock_qualifies_without_cpu_time() {
    // One of 64 sysbench threads parked on its mutex from before its
    // window began: 4 ms of wall, no CPU, the wait counted while under way.
    let ms = 1_000_000;
    let p = corral_policy::ssc::SscParams::user_space().detect;
    assert!(qualifies(&p, 4 * ms, 1, 0, 4 * ms));
    // Without the wait itself in the window (counted in an earlier one),
    // no hand-off is seen; without a wall span, nothing at all.
    assert!(!qualifies(&p, 4 * ms, 0, 0, 4 * ms));
    assert!(!qualifies(&p, 4 * ms, 1, 0, 0));
}

#[test]
fn a_thread_waiting_most_of_its_wall_slice_on_a_lock_qualifies() {
    // 10 ms of wall: 6 ms waiting for a lock (60%), 4 ms on the CPU.
    let ms = 1_000_000;
    assert!(user_slice(4 * ms, 10 * ms, 6 * ms));
    // A spinning waiter: its wait is CPU time, the spans are one.
    assert!(user_slice(ms, ms, ms * 6 / 10));
    // A wall span shorter than the CPU time (the two clocks read apart)
    // never makes the share larger than over CPU time.
    assert!(user_slice(ms, ms / 2, ms / 5));
    assert!(!user_slice(ms, ms / 2, ms / 10));
}

#[test]
fn the_controller_qualifies_over_the_time_a_thread_ran_or_waited() {
    use corral_policy::ssc::{MigState, SliceObs, SscController, SscParams, ThreadAction};
    let ms = 1_000_000;
    let ctl = SscController::new(SscParams::user_space(), vec![0, 1], 0);
    let slice = |wall_len, lock_wait| SliceObs {
        core: u32::MAX,
        slice_len: ms / 2,
        wall_len,
        lock_wait,
        waits: 500,
        attempts: 0,
        yields: 0,
        realtime: false,
    };
    // Off the CPU most of 10 ms, waiting 40 us of the 540 it ran or waited.
    let mut sleeper = started(&ctl, 1);
    let out = ctl.on_slice_end(&mut sleeper, slice(10 * ms, ms / 25), 10 * ms);
    assert_eq!(out.action, ThreadAction::Stay);
    assert_eq!(sleeper.is_mig, MigState::General);
    // Ready to run most of 10 ms on a crowded core, waiting 250 us of the
    // 750 it ran or waited: a third, though 2.5% of the span.
    let mut crowded = started(&ctl, 2);
    let out = ctl.on_slice_end(&mut crowded, slice(10 * ms, ms / 4), 10 * ms);
    assert_eq!(out.action, ThreadAction::Qualified);
    assert_eq!(crowded.is_mig, MigState::QualifyToMigrate);
    let mut waiter = started(&ctl, 3);
    let out = ctl.on_slice_end(&mut waiter, slice(ms * 5 / 4, ms * 3 / 4), 10 * ms);
    assert_eq!(out.action, ThreadAction::Qualified, "60% of its wall span");
    assert_eq!(waiter.is_mig, MigState::QualifyToMigrate);
}

#[test]
fn a_window_closes_on_a_cpu_slice_or_four_slices_of_wall_time_until_placed() {
    use corral_policy::detect::{window_over, WALL_SLICES};
    let slice = 1_000_000;
    assert!(!window_over(
        slice,
        slice - 1,
        WALL_SLICES * slice - 1,
        true
    ));
    assert!(window_over(slice, slice, 0, true));
    assert!(window_over(slice, 0, WALL_SLICES * slice, true));
    // A placed thread's windows are CPU slices only.
    assert!(!window_over(slice, slice - 1, 100 * slice, false));
    assert!(window_over(slice, slice, 0, false));
}

#[test]
fn a_thread_that_yields_as_it_locks_stays_on_the_general_cores() {
    use corral_policy::detect::gives_core_away;
    use corral_policy::ssc::{MigState, SliceObs, SscController, SscParams, ThreadAction};
    let ms = 1_000_000;
    // sysbench threads --thread-locks=1: one yield per lock, inside it,
    // and a wait share far over the bar.
    let slice = |attempts, yields| SliceObs {
        core: u32::MAX,
        slice_len: ms,
        wall_len: 2 * ms,
        lock_wait: ms,
        waits: 500,
        attempts,
        yields,
        realtime: false,
    };
    let user = SscParams::user_space();
    let ctl = SscController::new(user, vec![0, 1], 0);
    let mut yielder = started(&ctl, 1);
    let out = ctl.on_slice_end(&mut yielder, slice(800, 800), ms);
    assert_eq!(out.action, ThreadAction::YieldsCore);
    assert_eq!(yielder.is_mig, MigState::General);
    // A worker that yields once per batch of locks qualifies.
    let mut worker = started(&ctl, 2);
    let out = ctl.on_slice_end(&mut worker, slice(800, 10), ms);
    assert_eq!(out.action, ThreadAction::Qualified);
    // The bar: one yield for every two attempts; none without yields.
    assert!(gives_core_away(&user.detect, 400, 800));
    assert!(!gives_core_away(&user.detect, 399, 800));
    assert!(!gives_core_away(&user.detect, 0, 0));
    // Kernel locks (and paper 1) have no such test.
    let kernel = SscParams::kernel();
    assert_eq!(kernel.detect.yields_per_attempt, 0.0);
    let ctl = SscController::new(kernel, vec![0, 1], 0);
    let mut t = started(&ctl, 3);
    let obs = SliceObs {
        wall_len: 0,
        ..slice(800, 800)
    };
    assert_eq!(
        ctl.on_slice_end(&mut t, obs, ms).action,
        ThreadAction::Qualified
    );
}

#[test]
fn a_placed_thread_that_starts_yielding_goes_back() {
    use corral_policy::ssc::{MigState, SliceObs, SscController, SscParams, ThreadAction};
    let ms = 1_000_000;
    let params = SscParams::user_space();
    let ctl = SscController::new(params, vec![0, 1], 0);
    let slice = |yields| SliceObs {
        core: 0,
        slice_len: ms,
        wall_len: ms,
        lock_wait: ms / 2,
        waits: 500,
        attempts: 800,
        yields,
        realtime: false,
    };
    let mut t = started(&ctl, 1);
    assert_eq!(
        ctl.on_slice_end(&mut t, slice(0), ms).action,
        ThreadAction::Qualified
    );
    // Its waits stay heavy; only its yields change.
    let mut now = ms;
    let mut back = false;
    for _ in 0..params.detect.release_after_slices {
        ctl.begin_slice(&mut t, now);
        now += ms;
        back |= ctl.on_slice_end(&mut t, slice(800), now).action == ThreadAction::MigrateBack;
    }
    assert!(back, "yielding slices count as quiet");
    assert_eq!(t.is_mig, MigState::General);
}

#[test]
fn waits_that_could_qualify_are_told_from_waits_that_never_will() {
    use corral_policy::detect::handoffs_could_qualify;
    let user = corral_policy::ssc::SscParams::user_space().detect;
    let ms = 1_000_000;
    // 2 CPUs, 1 ms: hand-offs of 2 us must cost over 10% of 2 ms.
    assert!(!handoffs_could_qualify(&user, 40, ms, 2), "git grep: tens");
    assert!(!handoffs_could_qualify(&user, 100, ms, 2));
    assert!(handoffs_could_qualify(&user, 101, ms, 2));
    assert!(
        handoffs_could_qualify(&user, 3_000, ms, 2),
        "sysbench mutex"
    );
    assert!(!handoffs_could_qualify(&user, 0, ms, 2));
    // Without a hand-off cost (kernel spin locks) any wait counts.
    let kernel = corral_policy::ssc::SscParams::kernel().detect;
    assert!(handoffs_could_qualify(&kernel, 1, ms, 2));
}

/// A 4 ms wall window of a thread asleep behind a lock most of it (0.1 ms
/// of CPU, 100 waits), with `attempts` lock attempts and `yields` yields.
/// A thread of `ctl` registered with key `key`, its first slice begun at 0.
fn started(
    ctl: &corral_policy::ssc::SscController,
    key: u64,
) -> corral_policy::ssc::ThreadPolicyState {
    let mut t = ctl.register_thread(key, 0);
    ctl.begin_slice(&mut t, 0);
    t
}

/// The action for `t`'s window of `attempts` lock attempts and `yields`
/// yields, spent asleep behind the lock ([`asleep_window`]), ending at `at`.
fn asleep_end(
    ctl: &corral_policy::ssc::SscController,
    t: &mut corral_policy::ssc::ThreadPolicyState,
    (attempts, yields): (u64, u64),
    at: u64,
) -> corral_policy::ssc::ThreadAction {
    ctl.on_slice_end(t, asleep_window(attempts, yields), at)
        .action
}

fn asleep_window(attempts: u64, yields: u64) -> corral_policy::ssc::SliceObs {
    let ms = 1_000_000;
    corral_policy::ssc::SliceObs {
        core: u32::MAX,
        slice_len: ms / 10,
        wall_len: 4 * ms,
        lock_wait: 4 * ms,
        waits: 100,
        attempts,
        yields,
        realtime: false,
    }
}

#[test]
fn a_yielder_asleep_behind_the_lock_for_a_whole_slice_still_counts_as_a_yielder() {
    use corral_policy::ssc::{MigState, SscController, SscParams, ThreadAction};
    let ms = 1_000_000;
    let ctl = SscController::new(SscParams::user_space(), vec![0, 1], 0);
    let mut t = started(&ctl, 1);
    assert_eq!(
        asleep_end(&ctl, &mut t, (40, 40), 4 * ms),
        ThreadAction::YieldsCore
    );
    // 64 threads behind one lock: a whole window asleep, one attempt and
    // no yield yet. It qualified on such windows.
    ctl.begin_slice(&mut t, 4 * ms);
    assert_eq!(
        asleep_end(&ctl, &mut t, (1, 0), 8 * ms),
        ThreadAction::YieldsCore
    );
    assert_eq!(t.is_mig, MigState::General);
    // Attempts enough without a yield: it stopped yielding, and qualifies.
    ctl.begin_slice(&mut t, 8 * ms);
    assert_eq!(
        asleep_end(&ctl, &mut t, (40, 0), 12 * ms),
        ThreadAction::Qualified
    );
}

#[test]
fn among_yielders_a_thread_not_judged_yet_waits_for_a_window_that_can_judge_it() {
    use corral_policy::ssc::{SscController, SscParams, ThreadAction};
    let ms = 1_000_000;
    // Without yielders, a sleeper behind the lock (one attempt) qualifies
    // on its wall window, as sysbench mutex's 64 sleepers must.
    let ctl = SscController::new(SscParams::user_space(), vec![0, 1], 0);
    let mut sleeper = started(&ctl, 1);
    assert_eq!(
        asleep_end(&ctl, &mut sleeper, (1, 0), 4 * ms),
        ThreadAction::Qualified
    );
    // Once one thread is judged a yielder, a sleeper not judged yet stays.
    let ctl = SscController::new(SscParams::user_space(), vec![0, 1], 0);
    let mut yielder = started(&ctl, 1);
    assert_eq!(
        asleep_end(&ctl, &mut yielder, (40, 40), 4 * ms),
        ThreadAction::YieldsCore
    );
    let mut sleeper = started(&ctl, 2);
    assert_eq!(
        asleep_end(&ctl, &mut sleeper, (1, 0), 4 * ms),
        ThreadAction::Stay
    );
    // The yielder gone, the sleeper qualifies again.
    ctl.unregister_thread(&yielder);
    ctl.begin_slice(&mut sleeper, 4 * ms);
    assert_eq!(
        asleep_end(&ctl, &mut sleeper, (1, 0), 8 * ms),
        ThreadAction::Qualified
    );
}

#[test]
fn a_placed_thread_found_to_yield_as_it_locks_goes_back_at_once() {
    use corral_policy::ssc::{MigState, SscController, SscParams, ThreadAction};
    let ms = 1_000_000;
    // Qualified asleep behind the lock before any thread was judged (one
    // attempt, no yield), as one of sysbench threads' 64 did.
    let ctl = SscController::new(SscParams::user_space(), vec![0, 1], 0);
    let mut t = started(&ctl, 1);
    assert_eq!(
        asleep_end(&ctl, &mut t, (1, 0), 4 * ms),
        ThreadAction::Qualified
    );
    assert_ne!(t.is_mig, MigState::General);
    // Its first slice that can judge it: a yield per lock. It leaves the
    // SSC now, not after a streak of quiet slices.
    ctl.begin_slice(&mut t, 4 * ms);
    assert_eq!(
        asleep_end(&ctl, &mut t, (40, 40), 8 * ms),
        ThreadAction::MigrateBack
    );
    assert_eq!(t.is_mig, MigState::General);
    assert_eq!(ctl.lock_intensive(), 0);
}

#[test]
fn on_one_core_a_qualifying_thread_stays_and_nothing_is_searched() {
    use corral_policy::ssc::{MigState, SliceObs, SscController, SscParams, ThreadAction};
    let ms = 1_000_000;
    // A waiter far over the bar, no yields.
    let obs = SliceObs {
        core: u32::MAX,
        slice_len: ms,
        wall_len: 2 * ms,
        lock_wait: ms,
        waits: 500,
        attempts: 800,
        yields: 0,
        realtime: false,
    };
    let two = SscController::new(SscParams::user_space(), vec![0, 1], 0);
    assert!(two.can_confine());
    let mut t = started(&two, 7);
    assert_eq!(
        two.on_slice_end(&mut t, obs, ms).action,
        ThreadAction::Qualified
    );
    // The same program on one core: nowhere to confine it to.
    let one = SscController::new(SscParams::user_space(), vec![0], 0);
    assert!(!one.can_confine());
    let mut t = started(&one, 7);
    assert_eq!(
        one.on_slice_end(&mut t, obs, ms).action,
        ThreadAction::NoCoreToSpare
    );
    assert_eq!(t.is_mig, MigState::General);
    assert!(!one.will_place(&t));
    assert_eq!(one.lock_intensive(), 0);
    // Nor does a program remembered as lock intensive start qualified.
    one.memory().remember(7);
    assert_eq!(one.register_thread(7, 2 * ms).is_mig, MigState::General);
    two.memory().remember(7);
    assert_eq!(
        two.register_thread(7, 2 * ms).is_mig,
        MigState::QualifyToMigrate
    );
}

#[test]
fn a_program_whose_judged_threads_all_yield_has_nothing_to_confine() {
    use corral_policy::ssc::{SscController, SscParams, ThreadAction};
    let ms = 1_000_000;
    let ctl = SscController::new(SscParams::user_space(), vec![0, 1], 0);
    assert!(!ctl.only_yielders(), "nobody judged yet");
    // sysbench threads: each worker yields once per lock.
    let mut a = started(&ctl, 1);
    let mut b = started(&ctl, 2);
    for t in [&mut a, &mut b] {
        assert_eq!(
            asleep_end(&ctl, t, (40, 40), 4 * ms),
            ThreadAction::YieldsCore
        );
    }
    // A thread not judged (its main thread, which seldom locks) changes
    // nothing.
    let _main = started(&ctl, 3);
    assert!(ctl.only_yielders());
    // A thread that keeps its core as it locks might be confined.
    let mut keeper = started(&ctl, 4);
    asleep_end(&ctl, &mut keeper, (40, 0), 4 * ms);
    assert!(!ctl.only_yielders());
    ctl.unregister_thread(&keeper);
    assert!(ctl.only_yielders());
    // A yielder that stops yielding is a keeper now.
    ctl.begin_slice(&mut a, 4 * ms);
    asleep_end(&ctl, &mut a, (40, 0), 8 * ms);
    assert!(!ctl.only_yielders());
    // None left: nothing is known.
    ctl.unregister_thread(&a);
    ctl.unregister_thread(&b);
    assert!(!ctl.only_yielders());
}
