//! The monitor's rounds: each closes every thread's accounting windows
//! (slices of thread CPU time), feeds them to paper 1's SSC controller
//! (Algorithm 3: detection and voting; Algorithm 4: the model-driven
//! search), chooses each thread's placement for Algorithm 2 (applied by the
//! thread itself at its next lock attempt, see
//! [`crate::registry::on_lock_attempt`]), and publishes the stats region and
//! the decision log. The thread that runs them, and when it starts, is
//! [`crate::monitor_thread`]'s.
//!
//! The monitor never panics on bad input: with `panic = "abort"` a panic
//! would take the observed program down with it.

use std::sync::atomic::Ordering;

use corral_locks::sys::clock::{monotonic_ns, thread_cpu_ns_of as cpu_ns_of};
use corral_locks::wait::{now_ticks, ticks_to_ns};
use corral_policy::placement::Placement;
use corral_policy::ssc::{
    program_key, Phase, SliceObs, SscController, ThreadAction, ThreadPolicyState,
};
use corral_policy::CoreId;

use crate::abi::MigState;
use crate::config::{Policy, RuntimeConfig};
use crate::events::{Event, EventLog, PROGRESS_EVERY_NS};
use crate::registry;
use crate::stats::StatsMap;

/// What the monitor reads of one thread each tick.
#[derive(Clone, Copy, Debug)]
pub struct ThreadSample {
    /// Kernel thread id.
    pub tid: i32,
    /// The thread's CPU time; `None` once it has exited.
    pub cpu_ns: Option<u64>,
    /// Lock waiting since the last sample, in wait-clock ticks.
    pub wait_ticks: u64,
    /// Contended acquisitions since the last sample.
    pub waits: u64,
    /// Lock attempts of the thread so far (a running count).
    pub attempts: u64,
    /// Its calls to `sched_yield` so far (a running count).
    pub yields: u64,
    /// The placement the thread last applied to itself.
    pub applied: Placement,
    /// Whether it was in a lock wait under way (see
    /// `WaitCounter::claim_waiting`).
    pub in_wait: bool,
    /// When it took its registry slot (monotonic ns) and its CPU time
    /// then; `None` where not known (its first window then begins when the
    /// monitor first sees it).
    pub registered: Option<(u64, u64)>,
}

/// What became of one sampled thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observed {
    /// It belongs here now.
    Placed(Placement),
    /// It has exited.
    Exited,
    /// Not placed: no placing policy, or a thread seen exiting before.
    Unmanaged,
}

/// What the monitor keeps per registered thread.
#[derive(Debug)]
struct Track {
    tid: i32,
    policy: ThreadPolicyState,
    window_cpu_start: u64,
    /// When the open window began (monitor clock): its wall span.
    window_wall_start: u64,
    window_wait_ticks: u64,
    /// Contended acquisitions in the open window.
    window_waits: u64,
    /// The thread was in a wait under way at a sample of this window.
    window_in_wait: bool,
    cpu_ns: u64,
    wait_ticks: u64,
    contended: u64,
    slices: u64,
    last_share_ppm: u32,
    /// The slot's `attempts` when last read.
    attempts_seen: u64,
    /// The slot's `yields` when last read.
    yields_seen: u64,
    /// Its yields since it came (published; the windows take theirs).
    yields: u64,
    /// Lock attempts and yields in the open window.
    window_attempts: u64,
    window_yields: u64,
    /// Said once: its slices would qualify, but it yields as it locks.
    said_yields: bool,
    /// Whether it was in a real-time class when last looked at.
    realtime: bool,
    gone: bool,
}

impl Track {
    fn new(
        tid: i32,
        policy: ThreadPolicyState,
        (cpu_start, wall_start): (u64, u64),
        (attempts, yields): (u64, u64),
        gone: bool,
    ) -> Self {
        Track {
            tid,
            policy,
            window_cpu_start: cpu_start,
            window_wall_start: wall_start,
            window_wait_ticks: 0,
            window_waits: 0,
            window_in_wait: false,
            cpu_ns: cpu_start,
            wait_ticks: 0,
            contended: 0,
            slices: 0,
            last_share_ppm: 0,
            attempts_seen: attempts,
            yields_seen: yields,
            yields: 0,
            window_attempts: 0,
            window_yields: 0,
            said_yields: false,
            realtime: false,
            gone,
        }
    }
}

/// The monitor's state; one per process.
#[derive(Debug)]
pub struct Monitor {
    cfg: RuntimeConfig,
    ctrl: Option<SscController>,
    start_ns: u64,
    cpus: Vec<u32>,
    tracks: Vec<Track>,
    published_bound: u32,
    stats: Option<StatsMap>,
    events: Option<EventLog>,
    /// The executable's path: the program half of every thread's
    /// classification-memory key. Read at the first key needed.
    program: std::cell::OnceCell<Vec<u8>>,
    /// Lock attempts of every thread seen this tick: the whole program's progress.
    progress: u64,
    /// Lock waits seen this tick (any thread).
    waits_this_tick: u64,
    /// Of them, by threads that run on the SSC (the rest run off it).
    waits_on_ssc_this_tick: u64,
    /// When the last round ran, and whether its waits could qualify a
    /// thread ([`corral_policy::detect::handoffs_could_qualify`]).
    last_tick_ns: u64,
    heavy_waits: bool,
    /// The progress series: attempts and waits since `series_since`.
    series: (u64, u64),
    series_since: u64,
    /// Paper 5's CA-Scheduler, under policy `ca`.
    ca: Option<crate::ca::CaDriver>,
    /// Whether this round may open files (see [`Files`]).
    files: Files,
    /// The CPUs the monitor thread was last moved to (at first, every CPU
    /// of the process: where it was born).
    own_cores: Vec<u32>,
}

/// Whether the thread running the monitor's round may open files: only in a
/// descriptor table the program cannot touch (see
/// [`corral_locks::sys::fdtable`]). A number opened in the program's table
/// can be closed by the program's close-all loop and reused for its own
/// file, which corral would then write into or close.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Files {
    /// The round may open files: the log is flushed, thread names read.
    Open,
    /// No files: the log's lines wait in memory, thread names go unread.
    Deferred,
}

impl Monitor {
    /// A monitor over `cpus` (the process's CPUs, in SSC order). `stats`
    /// and `events` are optional outputs.
    pub fn new(
        cfg: RuntimeConfig,
        cpus: Vec<u32>,
        stats: Option<StatsMap>,
        events: Option<EventLog>,
    ) -> Self {
        let start_ns = monotonic_ns();
        let own_cores = cpus.clone();
        let ctrl =
            (cfg.policy == Policy::Lca).then(|| SscController::new(cfg.ssc, cpus.clone(), 0));
        let mut m = Monitor {
            cfg,
            ctrl,
            start_ns,
            cpus,
            tracks: Vec::new(),
            published_bound: 0,
            stats,
            events,
            program: std::cell::OnceCell::new(),
            progress: 0,
            waits_this_tick: 0,
            waits_on_ssc_this_tick: 0,
            last_tick_ns: 0,
            heavy_waits: false,
            series: (0, 0),
            series_since: 0,
            ca: None,
            files: Files::Open,
            own_cores,
        };
        if cfg.policy.is_ca() {
            let csf = (cfg.policy == Policy::CaCsf).then(corral_policy::csf::CsfParams::default);
            let ca = corral_policy::cluster::CaParams::default();
            let mut driver = crate::ca::CaDriver::new(ca, csf, m.cpus.clone());
            driver.set_debug(std::env::var_os(crate::config::ENV_CA_DEBUG).is_some());
            m.ca = Some(driver);
        }
        let bound = m.ctrl.as_ref().map_or(0, SscController::bound);
        m.log(Event::Start {
            t_ms: 0.0,
            // SAFETY: getpid has no preconditions.
            pid: unsafe { libc::getpid() },
            policy: cfg.policy.name().into(),
            lock: cfg.lock.name().into(),
            bound,
            cpus: m.cpus.clone(),
        });
        m
    }

    /// Whether the next rounds may open files.
    pub fn set_files(&mut self, files: Files) {
        self.files = files;
    }

    /// Starts the monitor's clock at `ns` (monotonic) if that is earlier:
    /// an armed monitor's clock starts at its arming, not at its thread's
    /// start (see [`crate::monitor_thread`]).
    pub(crate) fn start_clock_at(&mut self, ns: u64) {
        self.start_ns = self.start_ns.min(ns);
    }

    /// Whether the last round's waits could qualify a thread
    /// ([`corral_policy::detect::handoffs_could_qualify`]).
    pub(crate) fn heavy_waits(&self) -> bool {
        self.heavy_waits
    }

    /// Whether quiet rounds may doze (not under policy ca, whose
    /// clustering keeps the rounds at [`IDLE_TICK_MAX`]).
    pub(crate) fn may_doze(&self) -> bool {
        self.ca.is_none()
    }

    fn now(&self) -> u64 {
        monotonic_ns().saturating_sub(self.start_ns)
    }

    fn log(&mut self, e: Event) {
        if let Some(log) = &mut self.events {
            if log.write(&e).is_err() {
                self.events = None;
            }
        }
    }

    /// Whether the policy can decide nothing, whatever the waits (see
    /// [`Pace::Dormant`]): policy lca with no core to spare, where no
    /// thread is placed and no search runs.
    pub fn is_dormant(&self) -> bool {
        self.ca.is_none() && self.ctrl.as_ref().is_some_and(|c| !c.can_confine())
    }

    /// How the monitor's first sleep ends (see [`Start`]).
    pub fn first_sleep(&self) -> Start {
        if self.is_dormant() {
            Start::Dormant
        } else if self.ca.is_some() {
            Start::Tick
        } else {
            Start::OnCall
        }
    }

    /// Whether every thread judged gives its core away as it locks (see
    /// [`corral_policy::ssc::SscController::only_yielders`]): rounds then
    /// find nothing to do until that changes, and come as seldom as
    /// [`Pace::Dormant`]'s.
    fn only_yielders(&self) -> bool {
        self.ca.is_none() && self.ctrl.as_ref().is_some_and(|c| c.only_yielders())
    }

    /// One round: every thread's counters, windows and placement; the
    /// timer; the masks; the stats region. Returns how often the next round
    /// is needed (see [`Pace`]).
    pub fn tick(&mut self) -> Pace {
        self.waits_this_tick = 0;
        self.waits_on_ssc_this_tick = 0;
        let now = self.now();
        let t_ms = now as f64 / 1e6;
        for i in 0..registry::slots_in_use() {
            self.observe_slot(i, now, t_ms);
        }
        let applied = self.ca.as_mut().and_then(crate::ca::CaDriver::round);
        if let Some(applied) = applied {
            self.log(Event::Clustered { t_ms, applied });
        }
        if let Some(ctrl) = &self.ctrl {
            // Measured progress lets the search compare K(n) rather than
            // the n(1 - p) estimate (see SscParams::use_progress).
            let on = self.waits_on_ssc_this_tick;
            ctrl.observe_waits(self.waits_this_tick - on, on);
            let by_time = ctrl.observe_progress(std::mem::take(&mut self.progress), now);
            for d in [by_time, ctrl.tick(now)].into_iter().flatten() {
                self.log(Event::from_decision(t_ms, &d));
            }
        }
        self.publish_placement();
        self.publish_stats();
        self.log_progress(now, t_ms);
        if let Some(log) = &mut self.events {
            if self.files == Files::Open || !log.opens_files() {
                let _ = log.flush();
            }
        }
        if let Some(ca) = &self.ca {
            // Every tick until the first plan (the trails hold one tick of
            // samples), then re-clustering at the settled pace; idle while
            // too few threads run to record (a 1-thread program would
            // otherwise be ticked every millisecond for nothing).
            let recording = ca.recording();
            if recording != registry::sampling() {
                // Only on a change: the flag's line is read by every lock.
                registry::set_sampling(recording);
            }
            return match (recording, ca.rounds()) {
                (false, _) => Pace::Idle,
                (true, 0) => Pace::Searching,
                (true, _) => Pace::Settled,
            };
        }
        if self.is_dormant() || self.only_yielders() {
            self.last_tick_ns = now;
            self.heavy_waits = false;
            return Pace::Dormant;
        }
        let placed = self.ctrl.as_ref().is_some_and(|c| c.lock_intensive() > 0);
        let contended = self.waits_this_tick > 0 || placed;
        self.heavy_waits = corral_policy::detect::handoffs_could_qualify(
            &self.cfg.ssc.detect,
            self.waits_this_tick,
            now.saturating_sub(std::mem::replace(&mut self.last_tick_ns, now)),
            self.cpus.len() as u32,
        );
        // Nothing to search without lock-intensive threads, nor while the
        // round on every core waits for the program to have been contended
        // long enough for a trial (pigz -p 64: 59 threads qualify, whose
        // CPU clocks every 1 ms round read); a thread that just qualified
        // still has to move.
        let searching = self.ctrl.as_ref().is_some_and(|c| {
            placed
                && !matches!(
                    c.search_state().map(|s| (s.phase, s.awaits_trial)),
                    Some((Phase::Settled, _) | (_, true))
                )
                || self
                    .tracks
                    .iter()
                    .any(|t| !t.gone && c.will_place(&t.policy))
        });
        Pace::of(contended, placed, searching)
    }

    /// Logs the program's progress once a [`PROGRESS_EVERY_NS`] window is
    /// over (only where there is a log to read it from).
    fn log_progress(&mut self, now: u64, t_ms: f64) {
        let window = now.saturating_sub(self.series_since);
        if self.events.is_none() || window < PROGRESS_EVERY_NS {
            return;
        }
        let (attempts, waits) = std::mem::take(&mut self.series);
        self.series_since = now;
        let ms = window as f64 / 1e6;
        self.log(Event::Progress {
            t_ms,
            attempts_per_ms: attempts as f64 / ms,
            waits_per_ms: waits as f64 / ms,
        });
    }

    /// Reads slot `i` of the registry and observes it; the thread applies
    /// the placement chosen at its next lock attempt.
    fn observe_slot(&mut self, i: usize, now: u64, t_ms: f64) {
        let slot = registry::slot(i);
        // Acquire: pairs with the registering thread's Release.
        let tid = slot.tid.load(Ordering::Acquire);
        if tid == 0 {
            return;
        }
        let (done_ticks, done_waits) = slot.wait.take();
        // A wait under way counts from now, not from its end: a thread
        // asleep on a lock then qualifies within its first window.
        let (open_ticks, open_waits) = slot.wait.claim_waiting(now_ticks());
        let in_wait = open_ticks > 0;
        let (wait_ticks, waits) = (done_ticks + open_ticks, done_waits + open_waits);
        let sample = ThreadSample {
            tid,
            cpu_ns: cpu_ns_of(tid),
            wait_ticks,
            waits,
            // Relaxed: a count the thread alone writes.
            attempts: slot.watch.attempts.load(Ordering::Relaxed),
            // Relaxed: as `attempts`.
            yields: slot.watch.yields.load(Ordering::Relaxed),
            // Relaxed: a hint of where the thread runs.
            applied: slot.applied.load(Ordering::Relaxed),
            in_wait,
            // Relaxed: published by the tid's Release (read above).
            registered: Some((
                slot.registered_ns.load(Ordering::Relaxed),
                slot.registered_cpu_ns.load(Ordering::Relaxed),
            )),
        };
        let observed = self.observe(i, sample, now, t_ms);
        if let Some(ca) = &mut self.ca {
            let alive = !self.tracks.get(i).is_none_or(|t| t.gone);
            ca.observe(i, tid, alive, &slot.trail);
        }
        match observed {
            Observed::Placed(want) => registry::set_want(i, want),
            Observed::Exited => slot.gone.store(true, Ordering::Relaxed), // Relaxed: informational.
            Observed::Unmanaged => {}
        }
    }

    /// One thread's sample at `now` (ns since the monitor started): its
    /// counters, its accounting window (closed into a slice once it holds
    /// `slice_ns` of CPU time or spans a few slices of wall time, see
    /// [`corral_policy::detect::window_over`]) and its placement (Algorithm 2 from the
    /// monitor). `slot` names the thread's registry slot; a new `tid` there
    /// is a new thread. The live monitor samples the registry; tests pass
    /// synthetic samples.
    pub fn observe(&mut self, slot: usize, sample: ThreadSample, now: u64, t_ms: f64) -> Observed {
        let i = slot;
        let tid = sample.tid;
        while self.tracks.len() <= i {
            self.tracks.push(Track::new(
                0,
                ThreadPolicyState::unregistered(),
                (0, 0),
                (0, 0),
                true,
            ));
        }
        if self.tracks[i].tid != tid {
            // Only a new thread needs its key, and only once the memory
            // holds one: it costs a /proc read (about 15 us), and a short
            // program's first round reads every thread's. Otherwise it is
            // read if the thread qualifies (`close_window`).
            let key = match &self.ctrl {
                Some(c) if c.keys_matter() => Self::thread_key(&self.program, tid, self.files),
                _ => corral_policy::ssc::UNKNOWN_KEY,
            };
            let old_policy = self.tracks[i].policy;
            let policy = self
                .ctrl
                .as_ref()
                .map_or(old_policy, |c| c.register_thread(key, now));
            let counts = (sample.attempts, sample.yields);
            let start = self.window_start(&sample, now);
            let mut track = Track::new(tid, policy, start, counts, false);
            if self.window_from_registration(&sample) {
                // The first window holds the attempts and yields since the
                // thread registered (its slot's counts start from zero
                // there), as it holds its waits and CPU time since: the
                // yield verdict compares them. The progress counts only
                // what follows (`attempts_seen`).
                (track.window_attempts, track.window_yields) = counts;
                track.yields = sample.yields;
            }
            self.tracks[i] = track;
        }
        let track = &mut self.tracks[i];
        if track.gone {
            return Observed::Unmanaged;
        }
        self.waits_this_tick += sample.waits;
        if sample.applied == Placement::Ssc {
            self.waits_on_ssc_this_tick += sample.waits;
        }
        let attempts = sample.attempts.wrapping_sub(track.attempts_seen);
        self.progress += attempts;
        self.series.0 += attempts;
        self.series.1 += sample.waits;
        track.attempts_seen = sample.attempts;
        track.window_attempts += attempts;
        let new_yields = sample.yields.wrapping_sub(track.yields_seen);
        track.window_yields += new_yields;
        track.yields += new_yields;
        track.yields_seen = sample.yields;
        track.window_wait_ticks += sample.wait_ticks;
        track.window_waits += sample.waits;
        track.window_in_wait |= sample.in_wait;
        track.wait_ticks += sample.wait_ticks;
        track.contended += sample.waits;
        let Some(cpu) = sample.cpu_ns else {
            track.gone = true;
            if let Some(ctrl) = &self.ctrl {
                ctrl.unregister_thread(&track.policy);
            }
            self.log(Event::Exited { t_ms, tid });
            return Observed::Exited;
        };
        track.cpu_ns = cpu;
        let slice_len = cpu.saturating_sub(track.window_cpu_start);
        let wall_len = now.saturating_sub(track.window_wall_start);
        let general = track.policy.is_mig == corral_policy::ssc::MigState::General;
        let closed =
            corral_policy::detect::window_over(self.cfg.slice_ns, slice_len, wall_len, general);
        if closed {
            self.close_window(i, slice_len, sample.applied, now, t_ms);
        }
        let placed = self.place(i, now);
        if closed {
            // The next window begins after the placement, as a simulated
            // task's slice begins after its move and a kernel slice after
            // the migration: a thread placed now votes from this window on
            // (with a warm-up shorter than a window, the drivers disagreed).
            if let Some(ctrl) = &self.ctrl {
                ctrl.begin_slice(&mut self.tracks[i].policy, now);
            }
        }
        match placed {
            Some(want) => Observed::Placed(want),
            None => Observed::Unmanaged,
        }
    }

    /// Where a new thread's first window begins, as `(cpu_ns, wall_ns)`:
    /// when it took its slot, if the monitor ran then (its waits count
    /// from there), else now. sysbench's 64 threads register at its start
    /// barrier, milliseconds before a round that backs off while nothing
    /// qualifies first sees them: their wall windows closed 4 ms after
    /// that, and they qualified a round later.
    fn window_start(&self, sample: &ThreadSample, now: u64) -> (u64, u64) {
        let cpu_now = sample.cpu_ns.unwrap_or(0);
        match sample.registered {
            Some((at_ns, cpu_ns)) if self.window_from_registration(sample) => {
                (cpu_ns.min(cpu_now), (at_ns - self.start_ns).min(now))
            }
            _ => (cpu_now, now),
        }
    }

    /// Whether a newly seen thread's first window starts where it
    /// registered (after the monitor started), not where it is first seen.
    fn window_from_registration(&self, sample: &ThreadSample) -> bool {
        sample
            .registered
            .is_some_and(|(at_ns, _)| at_ns >= self.start_ns)
    }

    /// The controller, when the policy places threads.
    pub fn controller(&self) -> Option<&SscController> {
        self.ctrl.as_ref()
    }

    /// The classification-memory key of a thread: its program and its name.
    /// Unknown where the round may not open files.
    fn thread_key(program: &std::cell::OnceCell<Vec<u8>>, tid: i32, files: Files) -> u64 {
        if files == Files::Deferred {
            return corral_policy::ssc::UNKNOWN_KEY;
        }
        let program = program.get_or_init(|| {
            std::fs::read_link("/proc/self/exe")
                .map(|p| p.into_os_string().into_encoded_bytes())
                .unwrap_or_default()
        });
        let comm = std::fs::read(format!("/proc/self/task/{tid}/comm")).unwrap_or_default();
        program_key(program, comm.trim_ascii_end())
    }

    fn close_window(&mut self, i: usize, slice_len: u64, applied: Placement, now: u64, t_ms: f64) {
        let track = &mut self.tracks[i];
        let lock_wait = ticks_to_ns(track.window_wait_ticks);
        // A wait that spans windows is counted once, in the window it
        // began; a later window it spans holds it too, for the hand-off
        // test (the stats keep the one count).
        let in_wait = core::mem::take(&mut track.window_in_wait);
        let waits = core::mem::take(&mut track.window_waits).max(u64::from(in_wait));
        let attempts = core::mem::take(&mut track.window_attempts);
        let yields = core::mem::take(&mut track.window_yields);
        // A thread gone since keeps its class: its last window is no
        // fair-class evidence (a SCHED_FIFO thread qualified on it).
        let realtime = self.ctrl.is_some() && {
            if let Some(now_rt) = corral_locks::sys::sched::realtime_of(track.tid) {
                track.realtime = now_rt;
            }
            track.realtime
        };
        let wall_len = now.saturating_sub(track.window_wall_start);
        // The share the policy qualifies on (see `detect::active_span`).
        let share = corral_policy::detect::span_share(lock_wait, slice_len, wall_len);
        track.last_share_ppm = (share * 1e6) as u32;
        track.slices += 1;
        track.window_cpu_start += slice_len;
        track.window_wall_start = now;
        track.window_wait_ticks = 0;
        let Some(ctrl) = &self.ctrl else { return };
        // Where the thread runs is known only as its placement: an SSC
        // thread's slice counts as on the SSC; others on no SSC core.
        let core = match (applied, ctrl.ssc_cores().first()) {
            (Placement::Ssc, Some(&c)) => c,
            _ => CoreId::MAX,
        };
        let obs = SliceObs {
            core,
            slice_len,
            wall_len,
            lock_wait,
            waits,
            attempts,
            yields,
            realtime,
        };
        let out = ctrl.on_slice_end(&mut track.policy, obs, now);
        let tid = track.tid;
        if out.action == ThreadAction::Qualified
            && track.policy.program_key == corral_policy::ssc::UNKNOWN_KEY
        {
            ctrl.learn_key(
                &mut track.policy,
                Self::thread_key(&self.program, tid, self.files),
            );
        }
        match out.action {
            ThreadAction::Qualified => self.log(Event::Qualified { t_ms, tid, share }),
            ThreadAction::MigrateBack => self.log(Event::MigrateBack { t_ms, tid, share }),
            ThreadAction::YieldsCore if !track.said_yields => {
                track.said_yields = true;
                let per_attempt = yields as f64 / attempts.max(1) as f64;
                self.log(Event::YieldsCore {
                    t_ms,
                    tid,
                    share,
                    yields_per_attempt: per_attempt,
                });
            }
            ThreadAction::YieldsCore | ThreadAction::Stay | ThreadAction::NoCoreToSpare => {}
        }
        if let Some(d) = out.decision {
            self.log(Event::from_decision(t_ms, &d));
        }
    }

    /// Algorithm 2 for thread `i` from the monitor: the policy admits and
    /// places it; the thread moves itself at its next lock attempt. `None`
    /// without a placing policy.
    fn place(&mut self, i: usize, now: u64) -> Option<Placement> {
        let ctrl = self.ctrl.as_ref()?;
        let track = &mut self.tracks[i];
        // Its core is not known here: counted as off the SSC.
        Some(ctrl.place_from_monitor(&mut track.policy, None, &[], now))
    }

    /// The CPUs the monitor thread must move itself to, when they changed
    /// since the last call: the general cores while any thread is confined,
    /// every CPU otherwise ([`SscController::observer_placement`]). `None`
    /// without a placing policy or with no change.
    pub fn own_move(&mut self) -> Option<Vec<u32>> {
        let ctrl = self.ctrl.as_ref()?;
        let cores = ctrl.cores_of(ctrl.observer_placement());
        if cores == self.own_cores.as_slice() {
            return None;
        }
        // Into the kept buffer, so the one allocation is the copy returned.
        self.own_cores.clear();
        self.own_cores.extend_from_slice(cores);
        Some(self.own_cores.clone())
    }

    /// Republishes the SSC and general sets when the bound changed.
    fn publish_placement(&mut self) {
        let Some(ctrl) = &self.ctrl else { return };
        let bound = ctrl.bound();
        if bound == self.published_bound {
            return;
        }
        self.published_bound = bound;
        registry::publish_masks(
            ctrl.cores_of(Placement::Ssc),
            ctrl.cores_of(Placement::General),
        );
    }

    fn publish_stats(&self) {
        let Some(stats) = &self.stats else { return };
        // Relaxed throughout: a monitoring view (see `abi`).
        for (i, track) in self.tracks.iter().enumerate() {
            let Some(rec) = stats.record(i) else { break };
            rec.tid.store(track.tid, Ordering::Relaxed);
            let state = MigState::from(track.policy.is_mig);
            rec.mig_state.store(state as u32, Ordering::Relaxed);
            rec.placed_bound
                .store(track.policy.placed_bound, Ordering::Relaxed);
            rec.wait_ns
                .store(ticks_to_ns(track.wait_ticks), Ordering::Relaxed);
            rec.cpu_ns.store(track.cpu_ns, Ordering::Relaxed);
            rec.contended.store(track.contended, Ordering::Relaxed);
            rec.slices.store(track.slices, Ordering::Relaxed);
            rec.last_share_ppm
                .store(track.last_share_ppm, Ordering::Relaxed);
            let yields = u32::try_from(track.yields).unwrap_or(u32::MAX);
            rec.yields.store(yields, Ordering::Relaxed);
        }
        let h = stats.header();
        h.n_threads
            .store(self.tracks.len() as u32, Ordering::Relaxed);
        if let Some(ctrl) = &self.ctrl {
            h.ssc_bound.store(ctrl.bound(), Ordering::Relaxed);
            h.n_lock_intensive
                .store(ctrl.lock_intensive(), Ordering::Relaxed);
        }
        h.generation.fetch_add(1, Ordering::Relaxed);
    }
}

/// Nice value the monitor thread asks for while it searches or places: a
/// program that oversubscribes the CPUs with spinning threads would
/// otherwise delay its ticks by tens of milliseconds, and the search with
/// them. Needs CAP_SYS_NICE; without it the monitor keeps the default
/// priority.
pub const MONITOR_NICE: i32 = -10;

/// The monitor thread's nice value: [`MONITOR_NICE`] while it searches or
/// has placed threads, or sees waits that could qualify a thread soon
/// (sysbench mutex at 64 threads settled 50% later without it); the one it
/// was born with otherwise. At -10 all the time, its rounds preempted a
/// short program's threads at once: git grep --threads=4 (20 ms, a few
/// waits per ms) took 1.6 ms longer per run, 0.6 ms at its default nice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MonitorPriority {
    /// The nice value it was born with (`None`: unreadable, never changed).
    born: Option<i32>,
    /// The nice value it has now.
    now: Option<i32>,
    /// Raising it was refused: not asked again.
    refused: bool,
}

impl MonitorPriority {
    /// A monitor thread born with nice `born`.
    pub fn new(born: Option<i32>) -> Self {
        MonitorPriority {
            born,
            now: born,
            refused: false,
        }
    }

    /// The nice value to set after a round of `pace` whose waits were
    /// `heavy` or not, if it changes.
    pub fn after(&mut self, pace: Pace, heavy: bool) -> Option<i32> {
        let born = self.born?;
        let busy = !pace.is_quiet(heavy);
        // Never lower than the program asked for itself.
        let want = if busy && !self.refused {
            born.min(MONITOR_NICE)
        } else {
            born
        };
        (self.now != Some(want)).then(|| {
            self.now = Some(want);
            want
        })
    }

    /// The last change asked was refused (raising needs CAP_SYS_NICE).
    pub fn refused(&mut self) {
        self.refused = true;
        self.now = self.born;
    }
}

pub use crate::pace::{
    Pace, Rhythm, Start, DOZE_AFTER_QUIET_ROUNDS, DOZE_MAX, IDLE_TICK_MAX, SETTLED_TICKS,
};

#[cfg(test)]
#[path = "monitor_tests.rs"]
mod tests;
