//! The driver-facing entry points of [`SscController`]: thread lifecycle,
//! Algorithm 2 (lock attempt), Algorithm 3 (slice end), the timer and growth
//! on load.

use super::*;

impl SscController {
    /// A controller over `order` (from `placement::Topology::ssc_order`),
    /// starting at `now` with the SSC at `params.initial_bound` cores.
    pub fn new(params: SscParams, order: Vec<CoreId>, now: Nanos) -> Self {
        let max_id = order.iter().copied().max().map_or(0, |m| m as usize + 1);
        let mut rank = vec![u32::MAX; max_id];
        for (position, &core) in order.iter().enumerate() {
            rank[core as usize] = position as u32;
        }
        let cores = (order.len() as u32).max(1);
        // A search that begins with a baseline round begins on every core.
        let bound = if params.baseline_unconfined {
            max_bound(&params, cores)
        } else {
            params.initial_bound.clamp(1, cores)
        };
        let search = SearchState::for_params(&params);
        SscController {
            params,
            order: order.into_boxed_slice(),
            rank: rank.into_boxed_slice(),
            bound: AtomicU32::new(bound),
            lock_intensive: AtomicU32::new(0),
            yielders: AtomicU32::new(0),
            keepers: AtomicU32::new(0),
            remig_next: AtomicU64::new(now.saturating_add(params.research_interval)),
            voted_slice: AtomicU64::new(0),
            settled_at: AtomicU64::new(now),
            contended_since: AtomicU64::new(0),
            progress: AtomicU64::new(0),
            progress_since: AtomicU64::new(now.saturating_add(params.vote_warmup)),
            progress_reported: AtomicBool::new(false),
            in_baseline: AtomicBool::new(matches!(
                search.phase,
                Phase::Baseline | Phase::Reference(_)
            )),
            round_waits_off: AtomicU64::new(0),
            round_waits_on: AtomicU64::new(0),
            waits_since: AtomicU64::new(now),
            waits_reported: AtomicBool::new(false),
            load_floor: AtomicU32::new(1),
            last_p: AtomicU64::new(0f64.to_bits()),
            baseline_rate: AtomicU64::new(0f64.to_bits()),
            memory: ClassMemory::new(params.class_memory_slots),
            voting: Mutex::new(Voting {
                locking: 0,
                slice: 0,
                votes: 0,
                search,
            }),
        }
    }

    /// State for a new thread of the program `program_key`. A program
    /// remembered as lock intensive starts `QualifyToMigrate` (where
    /// [`Self::can_confine`]).
    pub fn register_thread(&self, program_key: u64, now: Nanos) -> ThreadPolicyState {
        let bound = self.bound();
        let is_mig = if self.can_confine() && self.memory.contains(program_key) {
            self.note_contended(now);
            MigState::QualifyToMigrate
        } else {
            MigState::General
        };
        ThreadPolicyState {
            is_mig,
            placed_bound: bound,
            record_bound: bound,
            slice_begin: now,
            quiet: QuietStreak::default(),
            program_key,
            realtime: false,
            yields_core: None,
        }
    }

    /// A thread qualified at `now`: the first one starts the program's
    /// contended time (`SscParams::baseline_min_contended`).
    #[cold]
    fn note_contended(&self, now: Nanos) {
        // Relaxed: a hint, as every field here; only the first store wins.
        let _ = self
            .contended_since
            .compare_exchange(0, now.max(1), HINT, HINT);
    }

    /// The thread exits: it no longer counts as lock intensive.
    pub fn unregister_thread(&self, thread: &ThreadPolicyState) {
        if thread.is_mig == MigState::HaveMigrated {
            self.uncount();
        }
        if let Some(verdict) = thread.yields_core {
            uncount_saturating(self.judged(verdict));
        }
    }

    /// The count of registered threads with yield verdict `verdict`.
    #[inline]
    fn judged(&self, verdict: bool) -> &AtomicU32 {
        if verdict {
            &self.yielders
        } else {
            &self.keepers
        }
    }

    /// Alg. 3 lines 39-41: a slice of `thread` begins at `now`. A driver
    /// whose slices are back-to-back accounting windows calls it right after
    /// [`Self::on_slice_end`] with the same `now`.
    #[inline]
    pub fn begin_slice(&self, thread: &mut ThreadPolicyState, now: Nanos) {
        thread.slice_begin = now;
        thread.record_bound = self.bound();
    }

    /// Alg. 2 (`migrate_to_special_cores`), called before `thread` acquires a
    /// lock while running on `current`. Returns the core it must move to, if
    /// any: the least-loaded of the SSC's cores (`loads[core]` = runnable
    /// threads on `core`, as the driver counts them; missing entries count
    /// as 0; ties prefer `current`, then the order).
    #[inline]
    pub fn on_lock_attempt(
        &self,
        thread: &mut ThreadPolicyState,
        current: CoreId,
        loads: &[u32],
        _now: Nanos,
    ) -> Option<CoreId> {
        // `now` is unused since the warm-up became per thread; kept for
        // drivers already passing it.
        if self.will_place(thread) {
            self.place(thread, self.bound(), current, loads)
        } else {
            None
        }
    }

    /// Whether [`Self::on_lock_attempt`] has anything to do for `thread`: it
    /// is lock intensive and not yet placed under the current bound. A
    /// driver may check it before gathering run-queue loads.
    #[inline]
    pub fn will_place(&self, thread: &ThreadPolicyState) -> bool {
        match thread.is_mig {
            MigState::General => false,
            MigState::HaveMigrated => thread.placed_bound != self.bound(),
            MigState::QualifyToMigrate => true,
        }
    }

    /// Where `thread` belongs now ([`Placement::of`] under this controller's
    /// lock-intensive count). Drivers that move threads at their lock
    /// attempts (Algorithm 2 proper, the simulator) read it between
    /// attempts.
    #[inline]
    pub fn placement(&self, thread: &ThreadPolicyState) -> Placement {
        if thread.realtime {
            return Placement::Unconfined;
        }
        Placement::of(thread.is_mig, self.lock_intensive())
    }

    /// Algorithm 2 for a driver that places threads from a monitor instead
    /// of inside each lock attempt (both Linux runtimes): a lock-intensive
    /// thread is admitted as at a lock attempt on `current` (its core when
    /// known; `None` counts as off the SSC), then [`Self::placement`]. The
    /// driver confines the thread to [`Self::cores_of`] the result; the
    /// kernel balances it inside.
    #[inline]
    pub fn place_from_monitor(
        &self,
        thread: &mut ThreadPolicyState,
        current: Option<CoreId>,
        loads: &[u32],
        now: Nanos,
    ) -> Placement {
        if thread.is_mig.is_lock_intensive() {
            // Cores outside the order are never SSC cores.
            let _ = self.on_lock_attempt(thread, current.unwrap_or(CoreId::MAX), loads, now);
        }
        self.placement(thread)
    }

    /// Where the driver's own observer (a monitor thread that ticks every
    /// millisecond while searching) runs: as a thread that is never lock
    /// intensive, on the general cores while any thread is confined. On the
    /// SSC its ticks would preempt a lock holder that every confined waiter
    /// is queued behind, and its own 1 ms sleeps there took 3-4 ms.
    #[inline]
    pub fn observer_placement(&self) -> Placement {
        Placement::of(MigState::General, self.lock_intensive())
    }

    /// The CPUs of `placement` under the current bound (see
    /// [`Placement::cores`]).
    #[inline]
    pub fn cores_of(&self, placement: Placement) -> &[CoreId] {
        placement.cores(&self.order, self.bound())
    }

    #[cold]
    fn place(
        &self,
        thread: &mut ThreadPolicyState,
        bound: u32,
        current: CoreId,
        loads: &[u32],
    ) -> Option<CoreId> {
        if thread.is_mig == MigState::QualifyToMigrate {
            self.lock_intensive.fetch_add(1, HINT);
            thread.is_mig = MigState::HaveMigrated;
        }
        thread.placed_bound = bound;
        let load_of = |core: CoreId| loads.get(core as usize).copied().unwrap_or(0);
        let ssc = &self.order[..(bound as usize).min(self.order.len())];
        let mut target = *ssc.first()?;
        for &core in ssc {
            if load_of(core) < load_of(target) {
                target = core;
            }
        }
        if self.is_ssc_core(current) && load_of(current) <= load_of(target) {
            return None;
        }
        if self.params.vote_warmup > 0 {
            // Per-thread warm-up: the slice under way began off the SSC (or
            // on another SSC core), so it is no vote; the next one is.
            thread.record_bound = 0;
        }
        Some(target)
    }

    /// Alg. 3 lines 1-38, at the end of a slice of `thread` at `now`:
    /// qualification, migrate-back, voting, and (for the thread that gets the
    /// voting lock once votes suffice) a determination; then the timer.
    #[inline]
    pub fn on_slice_end(
        &self,
        thread: &mut ThreadPolicyState,
        obs: SliceObs,
        now: Nanos,
    ) -> SliceDecision {
        let mut out = SliceDecision {
            action: ThreadAction::Stay,
            voted: false,
            decision: None,
        };
        thread.realtime = obs.realtime;
        if obs.attempts >= YIELD_VERDICT_MIN_ATTEMPTS || obs.yields >= obs.attempts.max(1) {
            let verdict = gives_core_away(&self.params.detect, obs.yields, obs.attempts);
            if thread.yields_core != Some(verdict) {
                if let Some(before) = thread.yields_core {
                    uncount_saturating(self.judged(before));
                }
                self.judged(verdict).fetch_add(1, HINT);
            }
            thread.yields_core = Some(verdict);
        }
        // A thread asleep behind the lock all window (one attempt, no yield
        // yet) cannot be judged; in a program of yielders it waits for a
        // window that can (64 sysbench threads qualified on such windows).
        let judged = thread.yields_core.is_some() || self.yielders.load(HINT) == 0;
        match thread.is_mig {
            MigState::General => {
                let qualified = !obs.realtime
                    && qualifies(
                        &self.params.detect,
                        obs.lock_wait,
                        obs.waits,
                        obs.slice_len,
                        obs.wall_len,
                    );
                if qualified && !self.can_confine() {
                    thread.quiet.observe_general(&self.params.detect);
                    out.action = ThreadAction::NoCoreToSpare;
                } else if qualified && thread.yields_core == Some(true) {
                    thread.quiet.observe_general(&self.params.detect);
                    out.action = ThreadAction::YieldsCore;
                } else if !qualified || !judged {
                    thread.quiet.observe_general(&self.params.detect);
                } else {
                    thread.is_mig = MigState::QualifyToMigrate;
                    thread.placed_bound = self.bound();
                    thread.quiet.reset();
                    if thread.program_key != UNKNOWN_KEY {
                        self.memory.remember(thread.program_key);
                    }
                    self.note_contended(now);
                    out.action = ThreadAction::Qualified;
                }
            }
            MigState::QualifyToMigrate | MigState::HaveMigrated
                if obs.realtime || thread.yields_core == Some(true) =>
            {
                // Turned real-time on the SSC (the program schedules it
                // now), or found to yield as it locks: it gives its core
                // away there, and the general threads lose one. Not after a
                // quiet streak: sysbench threads at 64 threads on 2 CPUs
                // had one thread qualify before any was judged, and its
                // streak of 1 ms CPU slices came so slowly that the search
                // confined it alone to one CPU 123 ms into the run, the 63
                // others on the other (0.87 s against 0.30 s).
                self.send_back(thread);
                out.action = ThreadAction::MigrateBack;
            }
            MigState::QualifyToMigrate | MigState::HaveMigrated => {
                out.voted = self.vote(thread, obs);
                if self.voted_slice.load(HINT)
                    > u64::from(self.bound()) * self.params.vote_slice_per_core
                {
                    if let Some(mut voting) = try_voting(&self.voting) {
                        // Re-checked under the lock: another thread may have decided.
                        if self.votes_suffice(&voting, now) {
                            out.decision = Some(self.determine(&mut voting, now));
                        }
                    }
                }
                if self.params.migrate_back
                    && thread
                        .quiet
                        .observe(&self.params.detect, self.is_quiet(obs))
                {
                    self.send_back(thread);
                    out.action = ThreadAction::MigrateBack;
                }
            }
        }
        if let Some(restart) = self.tick(now) {
            out.decision = Some(restart);
        }
        out
    }

    /// Alg. 3 line 20 (voted time above `bound x vote_slice_per_core`), plus
    /// corral's vote count (see [`SscParams::votes_per_ssc_core`]); with
    /// measured progress, also a window as long as the votes' mean slice
    /// (slices ending together would otherwise give a near-empty window),
    /// at least [`SscParams::progress_round`] long and holding at least
    /// [`SscParams::progress_round_min`] units: a driver that samples
    /// progress once a tick makes short windows noisy.
    #[inline]
    fn votes_suffice(&self, voting: &Voting, now: Nanos) -> bool {
        if self.measures_progress() {
            let window = now.saturating_sub(self.progress_since.load(HINT));
            if window == 0
                || window < voting.slice / u64::from(voting.votes.max(1))
                || window < self.shortest_round(now)
                || self.progress.load(HINT) < self.params.progress_round_min
            {
                return false;
            }
        }
        let bound = self.bound();
        let needed = bound
            .saturating_mul(self.params.votes_per_ssc_core)
            .min(self.lock_intensive())
            .max(u32::from(self.params.votes_per_ssc_core > 0));
        voting.slice > u64::from(bound) * self.params.vote_slice_per_core && voting.votes >= needed
    }

    /// The current progress window as `(start, first_close)`: a report
    /// made before `start` is not counted (see [`Self::observe_progress`]),
    /// and none made before `first_close` can close a round, so a driver
    /// that sees every acquisition may drop its count before `start`, sum
    /// it until `first_close` and report once, with the same decisions as
    /// reporting each acquisition (it re-reads the window after any call
    /// that may decide: a report, a slice end, a tick). `first_close` is
    /// `Nanos::MAX` when rounds are not closed by time.
    #[inline]
    pub fn progress_window(&self) -> (Nanos, Nanos) {
        let start = self.progress_since.load(HINT);
        let close = match self.params.progress_round {
            0 => Nanos::MAX,
            every => start.saturating_add(self.heavy_baseline_round().unwrap_or(every)),
        };
        (start, close)
    }

    /// The shortest round the current one may be at `now`:
    /// `SscParams::heavy_baseline_round` while the search is on every core
    /// and the hand-offs counted so far are heavy, else `progress_round`.
    #[inline]
    fn shortest_round(&self, now: Nanos) -> Nanos {
        match self.heavy_baseline_round() {
            Some(short) if self.handoffs_heavy(now) => short,
            _ => self.params.progress_round,
        }
    }

    /// `SscParams::heavy_baseline_round` while the search is on every core
    /// and it is shorter than any other round.
    #[inline]
    fn heavy_baseline_round(&self) -> Option<Nanos> {
        let short = self.params.heavy_baseline_round;
        (short > 0 && short < self.params.progress_round && self.in_baseline.load(HINT))
            .then_some(short)
    }

    /// Whether the waits of this round so far cost more in hand-offs than
    /// the qualifying share of every core's time (the trial needs no wait),
    /// most of them by threads already placed on the SSC: the trial that
    /// follows then confines most of the contention, not the few threads
    /// judged first (sysbench mutex at 64 threads on 2 CPUs: a round closed
    /// with one of them qualified ran its trial no faster than every core).
    fn handoffs_heavy(&self, now: Nanos) -> bool {
        let on = self.round_waits_on.load(HINT);
        let waits = self.round_waits_off.load(HINT) + on;
        let over = now.saturating_sub(self.waits_since.load(HINT));
        self.waits_reported.load(HINT)
            && on * 2 > waits
            && crate::detect::handoffs_could_qualify(
                &self.params.detect,
                waits,
                over,
                self.max_bound(),
            )
    }

    /// Whether rounds compare measured progress rates.
    #[inline]
    pub(super) fn measures_progress(&self) -> bool {
        self.params.use_progress && self.progress_reported.load(HINT)
    }

    /// Contended acquisitions since the last call by threads running off
    /// the SSC (`off`) and on it (`on`), as the driver places them: a
    /// confined round in which most waits are still off the SSC measures
    /// a mix of bounds (see `SscParams::mixed_waits_off_ssc`).
    pub fn observe_waits(&self, off: u64, on: u64) {
        if !self.waits_reported.load(HINT) {
            self.waits_reported.store(true, HINT);
        }
        if off > 0 {
            self.round_waits_off.fetch_add(off, HINT);
        }
        if on > 0 {
            self.round_waits_on.fetch_add(on, HINT);
        }
    }

    /// Progress report from the driver: `count` units of useful work (lock
    /// acquisitions) completed by `now`. Optional; once reported, the search
    /// compares progress rates instead of n(1 - p) (see
    /// [`SscParams::use_progress`]). Progress during the warm-up after a
    /// bound change is not counted. With [`SscParams::progress_round`], a
    /// round long and full enough is determined here (returned for the
    /// log). Never blocks.
    #[inline]
    pub fn observe_progress(&self, count: u64, now: Nanos) -> Option<Decision> {
        if !self.params.use_progress {
            return None;
        }
        if count > 0 {
            if !self.progress_reported.load(HINT) {
                self.progress_reported.store(true, HINT);
            }
            if now >= self.progress_since.load(HINT) {
                self.progress.fetch_add(count, HINT);
            }
        }
        self.round_by_time(now)
    }

    /// A round closed by time rather than votes (see
    /// [`SscParams::progress_round`]).
    fn round_by_time(&self, now: Nanos) -> Option<Decision> {
        if self.params.progress_round == 0
            || self.lock_intensive() == 0
            || !self.measures_progress()
        {
            return None;
        }
        let elapsed = now.saturating_sub(self.progress_since.load(HINT));
        let every = self.shortest_round(now);
        let progress = self.progress.load(HINT);
        let full = progress >= self.params.progress_round_min
            || self.far_below_baseline(progress, elapsed);
        if elapsed < every || !(full || elapsed >= every.saturating_mul(10)) {
            return None;
        }
        let mut voting = try_voting(&self.voting)?;
        Some(self.determine(&mut voting, now))
    }

    /// Whether a round short of `progress_round_min` units may close: half
    /// the baseline rate (on every core) would have counted at least the
    /// minimum by now, and it counted at most half that (and a tenth of the
    /// minimum, so its rate is not zero). Its rate is then below half the
    /// baseline beyond the noise the minimum guards against, and a program
    /// that needs its cores (at one core after a restart) is not held there
    /// for the many milliseconds the minimum would take.
    #[inline]
    fn far_below_baseline(&self, progress: u64, elapsed: Nanos) -> bool {
        let per_ms = f64::from_bits(self.baseline_rate.load(HINT));
        let min = self.params.progress_round_min;
        let half = per_ms * 0.5 * elapsed as f64 * 1e-6;
        per_ms > 0.0
            && half >= min as f64
            && progress as f64 * 2.0 <= half
            && progress.saturating_mul(10) >= min
    }

    /// Alg. 3 lines 11-19: counts the slice if it ran on an SSC core and
    /// began under the current bound (and, with warm-up, long enough after
    /// the last change, and not before its thread moved in: `place` zeroes
    /// `record_bound` then).
    #[inline]
    fn vote(&self, thread: &ThreadPolicyState, obs: SliceObs) -> bool {
        let bound = self.bound();
        let warm = self.params.vote_warmup == 0
            || thread.slice_begin
                >= self
                    .settled_at
                    .load(HINT)
                    .saturating_add(self.params.vote_warmup);
        if !(warm && thread.record_bound == bound && self.is_ssc_core(obs.core)) {
            return false;
        }
        let Some(mut voting) = try_voting(&self.voting) else {
            return false;
        };
        if thread.record_bound != self.bound() {
            return false;
        }
        voting.locking = voting
            .locking
            .saturating_add(obs.lock_wait.min(obs.slice_len));
        voting.slice = voting.slice.saturating_add(obs.slice_len);
        voting.votes = voting.votes.saturating_add(1);
        self.voted_slice.store(voting.slice, HINT);
        true
    }

    /// Quiet for migrate-back: below the release share and well below the
    /// SSC's last measured p (see [`SscParams::release_peer_fraction`]).
    #[inline]
    fn is_quiet(&self, obs: SliceObs) -> bool {
        let ssc_p = f64::from_bits(self.last_p.load(HINT));
        is_quiet(&self.params.detect, obs.lock_wait, obs.slice_len)
            && (obs.lock_wait as f64)
                < self.params.release_peer_fraction * ssc_p * obs.slice_len as f64
    }

    /// One lock-intensive thread fewer; saturating, so a driver that
    /// unregisters a copied state twice cannot wrap the count.
    #[cold]
    fn uncount(&self) {
        uncount_saturating(&self.lock_intensive);
    }

    #[cold]
    fn send_back(&self, thread: &mut ThreadPolicyState) {
        if thread.is_mig == MigState::HaveMigrated {
            self.uncount();
        }
        thread.is_mig = MigState::General;
        thread.quiet.released(self.params.release_backoff_max);
        if thread.program_key != UNKNOWN_KEY {
            self.memory.forget(thread.program_key);
        }
    }

    /// Whether a new thread's key can change how it registers: only once
    /// the classification memory holds a key. Until then a driver for whom
    /// a key costs something (a `/proc` read) may register threads with
    /// [`UNKNOWN_KEY`] and give a thread's key when it qualifies
    /// ([`Self::learn_key`]).
    #[inline]
    pub fn keys_matter(&self) -> bool {
        self.memory.capacity() > 0 && !self.memory.is_empty()
    }

    /// Gives `thread`, registered with [`UNKNOWN_KEY`], its key: a thread
    /// that qualified is remembered as it would have been at qualification.
    pub fn learn_key(&self, thread: &mut ThreadPolicyState, key: u64) {
        thread.program_key = key;
        if thread.is_mig != MigState::General && key != UNKNOWN_KEY {
            self.memory.remember(key);
        }
    }

    /// Alg. 3 lines 28-37: restarts the search if the re-search timer has
    /// fired (the bound unchanged for `research_interval`, or an adaptation
    /// trigger). Any thread's slice end calls it; a driver may also call it
    /// from a periodic monitor.
    #[inline]
    pub fn tick(&self, now: Nanos) -> Option<Decision> {
        if now < self.remig_next.load(HINT) {
            return None;
        }
        self.fire_timer(now)
    }

    #[cold]
    fn fire_timer(&self, now: Nanos) -> Option<Decision> {
        let mut voting = try_voting(&self.voting)?;
        if now < self.remig_next.load(HINT) {
            return None;
        }
        let bound_before = self.bound();
        let bound_after = self.restart(&mut voting, now);
        Some(Decision {
            at: now,
            kind: DecisionKind::RestartTimer,
            bound_before,
            bound_after,
            throughput: 0.0,
            p: 0.0,
            lock_intensive: self.lock_intensive(),
            climbing: voting.search.climbing,
        })
    }

    /// Paper 2's growth on load: `loads[core]` = runnable threads on `core`.
    /// If the SSC's cores average more than `grow_runnable_per_core`, the
    /// bound grows to the cores needed to bring it back, which also becomes a
    /// floor for the search until a report shows it is no longer needed.
    /// Call it periodically (e.g. from a monitor); it never blocks.
    pub fn on_ssc_load(&self, loads: &[u32], now: Nanos) -> Option<Decision> {
        let threshold = self.params.grow_runnable_per_core;
        if threshold <= 0.0 {
            return None;
        }
        let ssc = self.ssc_cores();
        let runnable: u64 = ssc
            .iter()
            .map(|&c| u64::from(loads.get(c as usize).copied().unwrap_or(0)))
            .sum();
        let needed = ((runnable as f64 / threshold).ceil() as u32).clamp(1, self.max_bound());
        self.load_floor.store(needed, HINT);
        let bound_before = self.bound();
        if needed <= bound_before {
            return None;
        }
        let mut voting = try_voting(&self.voting)?;
        voting.search = SearchState::new();
        voting.search.work_cores_last_step = needed;
        self.note_phase(&voting.search);
        self.move_bound(&mut voting, needed, now);
        Some(Decision {
            at: now,
            kind: DecisionKind::GrowOnLoad,
            bound_before,
            bound_after: needed,
            throughput: 0.0,
            p: 0.0,
            lock_intensive: self.lock_intensive(),
            climbing: voting.search.climbing,
        })
    }
}

/// Takes one from `count`, never below zero (a driver may unregister a
/// copied state twice).
fn uncount_saturating(count: &AtomicU32) {
    let _ = count.fetch_update(HINT, HINT, |n| n.checked_sub(1));
}
