//! The monitor's thread: when it starts, how a waiting thread rings it, and
//! the exit's last round.
//!
//! A program's second thread arms the monitor ([`start`]); its thread
//! starts at the first ring, when some thread's waits could qualify it
//! ([`after_wait`]). Made at the second thread, in the middle of the
//! program's burst of creates, even a bare sleeping thread delayed the
//! burst's last creates by a scheduler slice: the creating thread ran past
//! its slice, and a new worker preempted it (perf sched on a C program
//! making 4 workers on 2 CPUs: 1.92 -> 2.37 ms, nothing if made after the
//! burst). git grep at 2, 4 and 8 threads on 2 CPUs ran at 0.89x, 0.93x and
//! 0.93x of its speed without corral; with the thread started at the first
//! ring, 0.98x, 0.96x and 0.96x (150 interleaved runs each). A program
//! whose waits never call for a look runs no thread of corral's: its
//! exit's last round runs in the exiting thread, and its decision log is
//! not written (nothing was decided). Policy ca, which samples from its
//! first round, starts the thread at the second thread.
//!
//! The ringing thread spawns the monitor's thread while it holds the lock
//! it waited for, inside `pthread_mutex_lock`: a call that is not
//! async-signal-safe, so no signal handler may make it (as glibc's own
//! `pthread_create`, which the spawn calls, may take malloc's locks). The
//! new thread takes the CPUs and the fair class of the thread that armed
//! the monitor, not those of its ringer, which the program may have pinned
//! to one CPU (the monitor then saw a 1-CPU process) or made real-time.

use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use corral_locks::sys::clock::monotonic_ns;
use corral_locks::wait::ticks_to_ns;

use crate::config::{Policy, RuntimeConfig};
use crate::doorbell::{Doorbell, Woke};
use crate::events::EventLog;
use crate::monitor::{Files, Monitor, MonitorPriority};
use crate::pace::Rhythm;
use crate::registry;
use crate::stats::StatsMap;

/// The process's monitor, shared by its thread and the exit flush.
static MONITOR: Mutex<Option<Monitor>> = Mutex::new(None);

/// What the monitor thread starts from, kept from the arming until the
/// first ring (or the exit) takes it.
struct Armed {
    cfg: RuntimeConfig,
    stats: Option<StatsMap>,
    /// Whether `corral run` asked for the decision log (written into the
    /// stats region's ring).
    log: bool,
    /// When it was armed: the monitor's clock starts there, so a thread
    /// registered since counts its waits from its registration.
    armed_ns: u64,
    /// The CPUs and the class of the thread that armed it (the program's
    /// second thread's creator): the monitor's thread takes them, not
    /// those of whichever thread rings first, which the program may have
    /// pinned to one CPU or made real-time.
    cpus: Vec<u32>,
    fair_nice: Option<i32>,
}

static ARMED: Mutex<Option<Armed>> = Mutex::new(None);

/// Why the monitor could not start.
#[derive(Debug)]
pub struct StartError(pub String);

/// Starts the monitor for `cfg`, at the program's second thread: arms it
/// (its thread starts at the first ring, see the module's note), or, for
/// policy ca, starts its thread now.
/// The thread reads the topology, publishes into `stats` (the region
/// `corral run` made) and writes the log into it where `log` asks;
/// placement is on for policy `lca` from here. If the thread cannot start,
/// nothing is managed and the program keeps corral's plain locks (an error
/// here, one line to `corral run` later).
pub fn start(cfg: RuntimeConfig, stats: Option<StatsMap>, log: bool) -> Result<(), StartError> {
    let cpus = crate::affinity::allowed_cpus();
    if cpus.is_empty() {
        return Err(StartError("cannot read the process's CPU affinity".into()));
    }
    registry::set_spin_before_park(cfg.spin_before_park);
    // Policy ca turns sampling on once the program has threads enough to
    // record (see `Monitor::tick`); until then its locks skip the hash.
    registry::set_sampling(false);
    // Relaxed: set before the monitor thread that reads it is spawned.
    TABLE.store(TABLE_UNKNOWN, Ordering::Relaxed);
    let _ = RING_DETECT.set(cfg.ssc.detect);
    let now = cfg.policy.is_ca();
    let armed_ns = monotonic_ns();
    // Relaxed: a ringing thread's rough measure of time since; the start
    // counts as a look (waits before it are not a span's).
    LAST_LOOK_NS.store(armed_ns, Ordering::Relaxed);
    // Relaxed: published to ringers by the bell's Release (`listen`), to
    // the exit and to threads made later by their create.
    // SAFETY: getpid has no preconditions.
    MONITOR_PID.store(unsafe { libc::getpid() }, Ordering::Relaxed);
    registry::set_managed(cfg.policy == Policy::Lca);
    let fair_nice = match corral_locks::sys::sched::realtime_of(0) {
        Some(false) => corral_locks::sys::sched::nice_of(0).ok(),
        _ => None,
    };
    let armed = Armed {
        cfg,
        stats,
        log,
        armed_ns,
        cpus,
        fair_nice,
    };
    if now {
        BELL.reset();
        spawn(armed).inspect_err(|_| unmanage())?;
    } else {
        *lock_armed() = Some(armed);
        BELL.listen();
    }
    Ok(())
}

/// Nothing managed: the monitor could not start.
fn unmanage() {
    MONITOR_PID.store(0, Ordering::Relaxed);
    registry::set_managed(false);
}

/// The monitor over `cpus` (the process's, as its arming saw them), its
/// clock started at `start_ns`; `topology`: in SSC order (sysfs), else as
/// the affinity lists them (the exit's round, which must open no file in
/// the program's table).
fn build(
    cfg: RuntimeConfig,
    cpus: Vec<u32>,
    stats: Option<StatsMap>,
    events: Option<EventLog>,
    start_ns: u64,
    topology: bool,
) -> Monitor {
    let cpus = if topology {
        crate::topology::ssc_order(&cpus).unwrap_or_else(|(cpus, _)| cpus)
    } else {
        cpus
    };
    let mut m = Monitor::new(cfg, cpus, stats, events);
    m.start_clock_at(start_ns);
    m
}

/// Starts the armed monitor's thread: called by the thread whose ring woke
/// it (once: the first to take [`ARMED`]), holding the lock it waited for:
/// the spawn is paid once, the monitor's set-up runs in its own thread,
/// and the round the ring asked for follows at once.
#[cold]
fn start_armed() {
    // Relaxed: the winning ring's Acquire (`Doorbell::ring`) made the
    // arming's store visible.
    // SAFETY: getpid has no preconditions (and is not cached by glibc).
    if MONITOR_PID.load(Ordering::Relaxed) != unsafe { libc::getpid() } {
        // A child's copy (a raw clone runs no atfork handler): the armed
        // start and its stats are the parent's, and their lock may have
        // been held by a parent's thread at the clone.
        return;
    }
    let Some(armed) = lock_armed().take() else {
        return;
    };
    if let Err(e) = spawn(armed) {
        unmanage();
        crate::channel::say(&format!(
            "corral: {}; the program runs on corral's locks without the policy",
            e.0
        ));
    }
}

/// Spawns the monitor thread over `armed`, with every signal blocked (it
/// must never take the program's).
fn spawn(armed: Armed) -> Result<(), StartError> {
    let spawned = with_signals_blocked(|| {
        std::thread::Builder::new()
            .name("corral-monitor".into())
            .spawn(move || run(armed))
    });
    if spawned.is_ok() {
        // Counted by the interposed pthread_create as one of the program's.
        if let Some(channel) = crate::channel::current() {
            channel.thread_unmade();
        }
    }
    spawned
        .map(drop)
        .map_err(|e| StartError(format!("cannot start the monitor thread: {e}")))
}

/// Runs `f` with every signal blocked in this thread (a thread spawned
/// inside inherits the mask).
fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: plain sigset_t values, filled by sigfillset; pthread_sigmask
    // swaps this thread's mask and the old one is restored below.
    unsafe {
        let mut all: libc::sigset_t = core::mem::zeroed();
        let mut old: libc::sigset_t = core::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let out = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, core::ptr::null_mut());
        out
    }
}

/// The monitor thread: sets the monitor up (its files in its own
/// descriptor table), then rounds at the pace they ask for, until the
/// exit's last round.
fn run(armed: Armed) {
    registry::exclude_current_thread();
    // Only a process with a log has something to say about where it goes:
    // a forked child of the program has none, and 64 would say it 64 times.
    // Refused (a seccomp filter, an old kernel): the rounds then open no
    // file (threads go unnamed); the log goes to the region either way.
    let files = match corral_locks::sys::fdtable::take_private() {
        Ok(()) => Files::Open,
        Err(_) => Files::Deferred,
    };
    if armed.cfg.policy == Policy::CaCsf {
        // Quantum renewal needs the kernel's slice extension; the holder-side
        // request and release are not written yet, so where it is granted
        // only the probe runs (see `csf::SliceExtension`).
        if let Some(line) = crate::csf::SliceExtension::detect_here().line() {
            crate::channel::say(&line);
        }
    }
    let events = armed
        .log
        .then(crate::channel::current)
        .flatten()
        .map(EventLog::into_channel);
    let tick = Duration::from_nanos(armed.cfg.tick_ns);
    // Refused (a cpuset shrank meanwhile): it runs where it was born.
    let _ = crate::affinity::set_thread_affinity(0, &armed.cpus);
    if let (Some(nice), Some(true)) = (armed.fair_nice, corral_locks::sys::sched::realtime_of(0)) {
        // Leaving a real-time class needs no privilege; refused, the
        // monitor keeps its ringer's class, as it kept its creator's.
        let _ =
            corral_locks::sys::sched::set_fair(0, corral_locks::sys::sched::SCHED_OTHER, nice, 0);
    }
    let mut m = build(
        armed.cfg,
        armed.cpus,
        armed.stats,
        events,
        armed.armed_ns,
        true,
    );
    m.set_files(files);
    let start = m.first_sleep();
    *lock_monitor() = Some(m);
    let table = if files == Files::Open {
        TABLE_OWN
    } else {
        TABLE_SHARED
    };
    // Release: an exit that reads it asks this thread for the last round.
    TABLE.store(table, Ordering::Release);
    let tid = registry::current_tid();
    let mut priority = MonitorPriority::new(corral_locks::sys::sched::nice_of(tid).ok());
    // Calibrate the TSC here, not inside some thread's first wait.
    let _ = ticks_to_ns(1);
    let mut rhythm = Rhythm::new(tick, start);
    loop {
        let woke = BELL.sleep(rhythm.sleep, rhythm.listen);
        if woke == Woke::Exit {
            let after = AFTER_LAST_ROUND
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .take();
            last_round(after);
            BELL.answer();
            return;
        }
        // Relaxed: a ringing thread's rough measure of time since.
        LAST_LOOK_NS.store(monotonic_ns(), Ordering::Relaxed);
        let (pace, heavy, doze, own) = match lock_monitor().as_mut() {
            Some(m) => (m.tick(), m.heavy_waits(), m.may_doze(), m.own_move()),
            None => return,
        };
        if let Some(cores) = own {
            // Refused (a cpuset shrank under the program): the
            // monitor ticks where it is, as before it moved.
            let _ = crate::affinity::set_thread_affinity(0, &cores);
        }
        if let Some(nice) = priority.after(pace, heavy) {
            // Refused without CAP_SYS_NICE: the default priority
            // only delays ticks. Not asked again.
            if corral_locks::sys::sched::set_nice(tid, nice).is_err() {
                priority.refused();
            }
        }
        rhythm.after_round(pace, heavy, doze, woke == Woke::Rung);
    }
}

fn lock_monitor() -> std::sync::MutexGuard<'static, Option<Monitor>> {
    MONITOR
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn lock_armed() -> std::sync::MutexGuard<'static, Option<Armed>> {
    ARMED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// In a forked child: nothing rings for the parent's armed monitor (its
/// start is the parent's, and the arming pid keeps the child from it; its
/// lock may have been held by a parent's thread at the fork, so it is not
/// touched here).
pub fn after_fork_in_child() {
    BELL.reset();
}

/// The process whose monitor runs or is armed (0: none). A child made by a
/// raw `clone` or `_Fork` runs no atfork handler and inherits [`MONITOR`]
/// as it was, possibly locked by a monitor thread the child does not have.
static MONITOR_PID: AtomicI32 = AtomicI32::new(0);

/// Where the monitor thread's descriptors live: not known yet (it has not
/// run), its own table, or the program's (`unshare` refused).
static TABLE: AtomicU32 = AtomicU32::new(TABLE_UNKNOWN);
const TABLE_UNKNOWN: u32 = 0;
const TABLE_OWN: u32 = 1;
const TABLE_SHARED: u32 = 2;

/// Rung by the program's exit for the last round, and by a waiting thread
/// while the monitor listens (it sleeps after a quiet round, or is armed).
static BELL: Doorbell = Doorbell::new();

/// When the monitor's last round began, or it was armed (monotonic ns).
static LAST_LOOK_NS: AtomicU64 = AtomicU64::new(0);

/// The detection parameters a waiting thread rings by (the first
/// monitor's: a forked child's has the same configuration).
static RING_DETECT: OnceLock<corral_policy::detect::DetectParams> = OnceLock::new();

/// How soon after a quiet round a waiting thread may ring the monitor: the
/// longest contention that starts can go unseen (not
/// [`crate::monitor::IDLE_TICK_MAX`]: sysbench mutex at 64 threads runs at
/// a fifth of its settled rate until it is seen).
pub const ONSET_LOOK: Duration = Duration::from_millis(4);

/// Called by a thread after each contended wait: rings a monitor that
/// listens (it sleeps after a quiet round, or is armed) if the thread's
/// waits since the monitor's last round could qualify it
/// ([`corral_policy::detect::waits_call_for_a_look`] over [`ONSET_LOOK`]).
/// The ring that finds the monitor armed starts its thread.
#[inline]
pub fn after_wait() {
    if BELL.listening() {
        ring_if_waits_qualify();
    }
}

#[cold]
fn ring_if_waits_qualify() {
    let Some(params) = RING_DETECT.get() else {
        return;
    };
    // Relaxed: a rough span; the round it may start measures its own.
    let span = monotonic_ns().saturating_sub(LAST_LOOK_NS.load(Ordering::Relaxed));
    // The counter the monitor takes each round: waits since that round.
    let (wait_ticks, waits) = corral_locks::wait::thread_counter().snapshot();
    let round = ONSET_LOOK.as_nanos() as u64;
    let wait_ns = ticks_to_ns(wait_ticks);
    if corral_policy::detect::waits_call_for_a_look(params, wait_ns, waits, span, round)
        && BELL.ring()
    {
        start_armed();
    }
}

/// What the last round does after its tick (the lock profile's maps copy).
static AFTER_LAST_ROUND: Mutex<Option<fn()>> = Mutex::new(None);

/// How long an exit waits for the monitor thread's last round. It answers
/// within a tick; only a monitor that cannot run at all makes the exit
/// wait this long, and then the last round's lines are lost.
const LAST_ROUND_WAIT: Duration = Duration::from_secs(1);

/// The last round: a tick that may open files, then `after`.
fn last_round(after: Option<fn()>) {
    if let Some(m) = lock_monitor().as_mut() {
        m.set_files(Files::Open);
        m.tick();
    }
    run_after(after);
}

fn run_after(after: Option<fn()>) {
    if let Some(after) = after {
        after();
    }
}

/// A last round at exit, so the stats region holds final totals and the log
/// its last lines, followed by `after`. The monitor thread runs it, in its
/// own descriptor table: the program's other threads still run while it
/// exits. A monitor still armed (never rung) has no thread: its round runs
/// here, opening no file (its stats region is mapped, and its log goes
/// there). Only
/// in the process that armed or started the monitor (anywhere else the
/// monitor's lock may be held forever, and `after` runs here).
pub fn final_flush(after: Option<fn()>) {
    // SAFETY: getpid has no preconditions (and is not cached by glibc, so
    // it is right after a raw clone).
    let pid = unsafe { libc::getpid() };
    // Relaxed: written once before the monitor thread starts, by this
    // process's own start; a child sees the parent's pid, never ours.
    if MONITOR_PID.load(Ordering::Relaxed) != pid {
        run_after(after);
        return;
    }
    if let Some(armed) = lock_armed().take() {
        if armed.stats.is_some() {
            // The log goes to the region: no file to open here.
            let events = armed
                .log
                .then(crate::channel::current)
                .flatten()
                .map(EventLog::into_channel);
            let mut m = build(
                armed.cfg,
                armed.cpus,
                armed.stats,
                events,
                armed.armed_ns,
                false,
            );
            m.set_files(Files::Deferred);
            m.tick();
            // Kept, as a running monitor is: the stats stay mapped.
            *lock_monitor() = Some(m);
        }
        run_after(after);
        return;
    }
    // Acquire: pairs with the monitor thread's Release.
    if TABLE.load(Ordering::Acquire) == TABLE_SHARED {
        // Its files would be in the program's table anyway.
        last_round(after);
        return;
    }
    *AFTER_LAST_ROUND
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = after;
    BELL.ask(LAST_ROUND_WAIT);
}
