//! `corral run`'s report: each thread's lock wait share, the SSC size over
//! time and every decision, as `--report`'s JSON and as the summary line.

use corral_locks::Algorithm;
use corral_policy::faithful::FfSlice;
use corral_runtime::config::{Policy, RuntimeConfig};
use corral_runtime::events::Event;
use corral_runtime::faithful::FfReport;
use corral_runtime::kernel::KernelReport;
use corral_runtime::stats::StatsSnapshot;
use serde::Serialize;

use super::settle::{ProgressPoint, Settle};

/// One thread in the report.
#[derive(Serialize)]
pub(crate) struct ThreadReport {
    /// Thread id.
    pub(crate) tid: i32,
    /// Lock waiting over the thread's CPU time, 0 to 1.
    pub(crate) wait_share: f64,
    /// Classified lock intensive at the end, or at any time by the log.
    pub(crate) lock_intensive: bool,
    /// Its slices would have qualified, but it yields about as often as it
    /// locks, so it was kept on the general cores (the log's `yields_core`).
    pub(crate) kept_for_yielding: bool,
    /// Lock waiting over the thread's life, ns.
    pub(crate) wait_ns: u64,
    /// Thread CPU time the monitor saw, ns.
    pub(crate) cpu_ns: u64,
    /// Acquisitions that had to wait.
    pub(crate) contended: u64,
    /// Accounting windows closed.
    pub(crate) slices: u64,
    /// Calls to `sched_yield` and `pthread_yield`.
    pub(crate) yields: u64,
}

/// The SSC size from a point in time on.
#[derive(Serialize)]
pub(crate) struct SscPoint {
    /// Milliseconds since the monitor started.
    pub(crate) t_ms: f64,
    /// SSC size in cores from then on.
    pub(crate) bound: u32,
}

/// What corral's library did inside PROG.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum RuntimeState {
    /// No stats came back: the library never loaded (PROG made fewer
    /// contended hand-offs than `load_after_contended`; or a static or
    /// setuid program, or one that cleared `LD_PRELOAD`), and PROG ran
    /// without corral; or it was lent no stats region (corral said why).
    NoStats,
    /// Loaded, but PROG never made a second thread, so no monitor ran.
    SingleThreaded,
    /// The monitor ran and applied the policy.
    Monitored,
}

impl RuntimeState {
    /// From the stats region the library publishes at load (none: not loaded)
    /// and the monitor publishes into (never: no monitor).
    pub(crate) fn of(stats: Option<&StatsSnapshot>) -> Self {
        match stats {
            None => RuntimeState::NoStats,
            Some(s) if s.generation == 0 => RuntimeState::SingleThreaded,
            Some(_) => RuntimeState::Monitored,
        }
    }
}

/// Decision-log events kept in the report: the newest, so a program that
/// logs for hours gives a bounded report.
pub(crate) const EVENTS_KEPT: usize = 10_000;

/// `--report`'s document.
#[derive(Serialize)]
pub(crate) struct RunReport {
    /// The policy asked for (in force only when `runtime` is `monitored`).
    pub(crate) policy: Policy,
    /// The lock algorithm that replaced pthread mutexes.
    pub(crate) lock: Algorithm,
    /// What corral's library did inside PROG.
    pub(crate) runtime: RuntimeState,
    /// Contended hand-offs (unlocks that found a thread asleep on the
    /// mutex) each of PROG's processes made on glibc's locks before
    /// corral's library loaded in it (`--load-after-contended`; 0:
    /// at the first lock call). A run that never reached them reports
    /// `no-stats`.
    pub(crate) load_after_contended: u32,
    /// How waiters of a parking lock decided to spin or sleep: following
    /// their holder's run state (BPF), or on a learned budget, and why.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub(crate) waiting: Option<String>,
    /// PROG's exit code as a shell reports it.
    pub(crate) exit_code: i32,
    /// Every thread that took a lock, from the final stats.
    pub(crate) threads: Vec<ThreadReport>,
    /// Every thread PROG made, against those in `threads`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) thread_count: Option<ThreadCount>,
    /// The SSC size over time: the start, then every change.
    pub(crate) ssc: Vec<SscPoint>,
    /// Controller decisions (search, timer, adaptation) in the log.
    pub(crate) decision_count: u64,
    /// Thread exits in the log.
    pub(crate) exit_count: u64,
    /// The decision log less its start record: the newest
    /// [`EVENTS_KEPT`] events.
    pub(crate) decisions: Vec<Event>,
    /// Older events left out of `decisions`.
    pub(crate) events_left_out: u64,
    /// The whole program's progress, one point per ~10 ms window (the
    /// newest [`EVENTS_KEPT`]).
    pub(crate) progress: Vec<ProgressPoint>,
    /// How fast progress settled once contention began (from `progress`).
    pub(crate) settle: Option<Settle>,
    /// Whether PROG kept a per-lock profile (off: `--no-lock-profile`).
    pub(crate) lock_profile: bool,
    /// Every lock that waited, most total wait first, callers named; with
    /// `--kernel-locks` the kernel locks too (`space: kernel`).
    pub(crate) locks: Vec<crate::cmd::locks::LockReport>,
    /// The SSC size and each thread's wait share, sampled while PROG ran.
    pub(crate) timeline: Vec<super::timeline::TimePoint>,
    /// With `--kernel-locks`: kernel lock waiting per thread and slice, the
    /// SSC decisions and the affinity applied (read back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) kernel: Option<KernelReport>,
    /// `--policy` as given (`lca,ff`), when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) policies: Option<String>,
    /// With `--policy ff`: per program and period, the scaling factor, the
    /// quantum chosen and read back, and the context switches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ff: Option<FfReport>,
    /// With `--policy ca`: clustering rounds applied (paper 5).
    pub(crate) ca_rounds: u64,
    /// With `--policy ca`: the last round, each thread's cluster, CPU and
    /// affinity read back (and CSF's nice, read back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ca: Option<corral_runtime::ca::CaApplied>,
}

/// The decision log folded event by event (never held whole).
#[derive(Default)]
pub(crate) struct LogSummary {
    qualified: std::collections::HashSet<i32>,
    kept_for_yielding: std::collections::HashSet<i32>,
    ssc: Vec<SscPoint>,
    decision_count: u64,
    exit_count: u64,
    kept: std::collections::VecDeque<Event>,
    left_out: u64,
    progress: std::collections::VecDeque<ProgressPoint>,
    ca_rounds: u64,
    ca_last: Option<corral_runtime::ca::CaApplied>,
}

impl LogSummary {
    /// Folds in the next event of the log.
    pub(crate) fn add(&mut self, e: Event) {
        match &e {
            Event::Start { t_ms, bound, .. } => {
                self.ssc.push(SscPoint {
                    t_ms: *t_ms,
                    bound: *bound,
                });
                return;
            }
            Event::Decision {
                t_ms,
                bound_before,
                bound_after,
                ..
            } => {
                self.decision_count += 1;
                if bound_before != bound_after {
                    self.ssc.push(SscPoint {
                        t_ms: *t_ms,
                        bound: *bound_after,
                    });
                }
            }
            Event::Qualified { tid, .. } => {
                self.qualified.insert(*tid);
            }
            Event::YieldsCore { tid, .. } => {
                self.kept_for_yielding.insert(*tid);
            }
            Event::Exited { .. } => self.exit_count += 1,
            Event::Clustered { applied, .. } => {
                self.ca_rounds += 1;
                self.ca_last = Some(applied.clone());
            }
            Event::MigrateBack { .. } => {}
            Event::Progress {
                t_ms,
                attempts_per_ms,
                waits_per_ms,
            } => {
                if self.progress.len() == EVENTS_KEPT {
                    self.progress.pop_front();
                }
                self.progress.push_back(ProgressPoint {
                    t_ms: *t_ms,
                    attempts_per_ms: *attempts_per_ms,
                    waits_per_ms: *waits_per_ms,
                });
                return;
            }
        }
        if self.kept.len() == EVENTS_KEPT {
            self.kept.pop_front();
            self.left_out += 1;
        }
        self.kept.push_back(e);
    }
}

/// The report from the final stats and the folded decision log.
pub(crate) fn build_report(
    cfg: &RuntimeConfig,
    exit_code: i32,
    stats: Option<&StatsSnapshot>,
    maps: Option<&str>,
    log: LogSummary,
    name_locks: bool,
) -> RunReport {
    let threads: Vec<ThreadReport> = stats
        .map(|s| {
            s.threads
                .iter()
                .map(|t| ThreadReport {
                    tid: t.tid,
                    wait_share: t.wait_share,
                    lock_intensive: t.lock_intensive || log.qualified.contains(&t.tid),
                    kept_for_yielding: log.kept_for_yielding.contains(&t.tid),
                    wait_ns: t.wait_ns,
                    cpu_ns: t.cpu_ns,
                    contended: t.contended,
                    slices: t.slices,
                    yields: t.yields,
                })
                .collect()
        })
        .unwrap_or_default();
    let progress: Vec<ProgressPoint> = log.progress.into();
    RunReport {
        policy: cfg.policy,
        lock: cfg.lock,
        runtime: RuntimeState::of(stats),
        load_after_contended: cfg.load_after(),
        waiting: None,
        exit_code,
        thread_count: stats.map(|s| ThreadCount::of(s, &threads)),
        threads,
        ssc: log.ssc,
        decision_count: log.decision_count,
        exit_count: log.exit_count,
        decisions: log.kept.into(),
        events_left_out: log.left_out,
        settle: Settle::of(&progress),
        progress,
        lock_profile: stats.is_some_and(|s| s.lock_profile),
        // Naming reads every mapped binary's symbols: tens of milliseconds
        // after PROG's exit, paid only where a table or report shows them.
        locks: stats
            .filter(|_| name_locks)
            .map(|s| crate::cmd::locks::lock_reports(s, maps))
            .unwrap_or_default(),
        timeline: Vec::new(),
        kernel: None,
        policies: None,
        ff: None,
        ca_rounds: log.ca_rounds,
        ca: log.ca_last,
    }
}

/// Every thread PROG's process made (its main thread and each
/// `pthread_create`), against the threads the report lists: those that
/// took a lock while corral's library was loaded. A thread missing from
/// the list never locked after the load; where the load was deferred to a
/// contended hand-off (`--load-after-contended`), up to
/// `made_before_load` of them may have run and ended before it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ThreadCount {
    /// The main thread and every `pthread_create` call.
    pub(crate) made: u64,
    /// Of them, made while corral's library was deferred.
    pub(crate) made_before_load: u64,
    /// Listed in `threads`.
    pub(crate) in_report: u64,
    /// Made and not listed: ended before the load, or never locked after it.
    pub(crate) not_in_report: u64,
    /// CPU time of PROG (and the children it waited for) outside the listed
    /// threads, ms: filled in by `corral run` from the exit's rusage.
    pub(crate) cpu_ms_not_in_report: Option<f64>,
}

impl ThreadCount {
    fn of(s: &StatsSnapshot, threads: &[ThreadReport]) -> Self {
        let (before, after) = s.threads_made;
        let made = 1 + u64::from(before) + u64::from(after);
        let in_report = threads.len() as u64;
        ThreadCount {
            made,
            made_before_load: u64::from(before),
            in_report,
            not_in_report: made.saturating_sub(in_report),
            cpu_ms_not_in_report: None,
        }
    }

    /// Fills in the CPU outside the listed threads from `cpu`, PROG's.
    pub(crate) fn with_cpu(&mut self, cpu: std::time::Duration, threads: &[ThreadReport]) {
        let listed: u64 = threads.iter().map(|t| t.cpu_ns).sum();
        let outside = (cpu.as_nanos() as u64).saturating_sub(listed);
        self.cpu_ms_not_in_report = Some(outside as f64 / 1e6);
    }

    /// The summary's line, where threads other than one (the main thread,
    /// which often takes no lock) are not listed; the report always counts.
    pub(crate) fn line(&self) -> Option<String> {
        if self.not_in_report < 2 {
            return None;
        }
        let cpu = self
            .cpu_ms_not_in_report
            .map(|ms| {
                format!(
                    "; CPU outside the listed threads (corral's monitor's too): about {ms:.1} ms"
                )
            })
            .unwrap_or_default();
        let before = match self.made_before_load {
            0 => String::new(),
            n => format!(
                "; {n} were made before corral loaded at a contended hand-off, and may \
                 have ended before it"
            ),
        };
        Some(format!(
            "corral: threads PROG made: {}, not in the report: {} (they took no lock while \
             corral was loaded{before}){cpu}",
            self.made, self.not_in_report
        ))
    }
}

/// CA's summary line: rounds, the last round's clusters, and whether every
/// thread's affinity read back as planned.
pub(crate) fn ca_summary(r: &RunReport) -> Option<String> {
    if !r.policy.is_ca() {
        return None;
    }
    let Some(last) = &r.ca else {
        return Some(
            "corral: ca: no clustering round (fewer than 10 threads took locks, or no \
             seVector filled)"
                .into(),
        );
    };
    let ok = last
        .threads
        .iter()
        .filter(|t| t.read_back == [t.cpu])
        .count();
    Some(format!(
        "corral: ca: {} rounds; last: {} threads in {} clusters ({} strong), {} globally shared \
         lock slots; affinity read back as planned for {}/{}",
        r.ca_rounds,
        last.threads.len(),
        last.clusters,
        last.strong,
        last.globally_shared,
        ok,
        last.threads.len()
    ))
}

/// When corral's library was to load in PROG: what the summary of a run
/// without stats can say of why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Loading {
    /// PROG is static: it loads no preload.
    Never,
    /// At PROG's first lock call.
    AtFirstCall,
    /// At a process's N-th contended hand-off (`--load-after-contended`).
    AfterContended(u32),
}

/// The human summary printed at exit.
pub(crate) fn summary(r: &RunReport, stats: Option<&StatsSnapshot>, loading: Loading) -> String {
    let Some(stats) = stats else {
        let (code, policy) = (r.exit_code, r.policy.name());
        return match loading {
            Loading::Never => format!(
                "corral: exit {code}; no stats from PROG: corral's library did not load (PROG is \
                 static: it loads no preload), so policy {policy} was not applied"
            ),
            Loading::AfterContended(n) => format!(
                "corral: exit {code}; no stats from PROG: corral's library did not load, as PROG \
                 did not hand a mutex to a waiting thread {n} times (--load-after-contended; 0 \
                 loads it at the first lock call), and PROG ran on glibc's locks (or the library \
                 could not load: a setuid program, or one that clears LD_PRELOAD)"
            ),
            Loading::AtFirstCall => format!(
                "corral: exit {code}; no stats from PROG: corral's library did not load (a setuid \
                 program, or one that clears LD_PRELOAD: then policy {policy} was not applied) or \
                 could not publish its stats (said above)"
            ),
        };
    };
    if r.runtime == RuntimeState::SingleThreaded {
        return format!(
            "corral: policy {}, lock {}: exit {}; PROG never made a second thread, so no monitor ran",
            r.policy.name(),
            r.lock,
            r.exit_code
        );
    }
    let intensive = r.threads.iter().filter(|t| t.lock_intensive).count();
    let yielding = r.threads.iter().filter(|t| t.kept_for_yielding).count();
    let yielding = if yielding == 0 {
        String::new()
    } else {
        format!(" ({yielding} more kept off the SSC: they yield as often as they lock)")
    };
    let mut top: Vec<&ThreadReport> = r.threads.iter().collect();
    top.sort_by(|a, b| b.wait_share.total_cmp(&a.wait_share));
    let shares: Vec<String> = top
        .iter()
        .take(4)
        .map(|t| format!("{}:{:.1}%", t.tid, 100.0 * t.wait_share))
        .collect();
    let bound = stats.ssc_bound.to_string();
    let settle = r.settle.map_or(String::new(), |s| {
        format!(
            "; progress reached 0.9x of its settled {:.0} lock attempts/ms {:.0} ms after \
             contention began",
            s.settled_attempts_per_ms, s.settle_ms
        )
    });
    let policy = r.policies.clone().unwrap_or_else(|| r.policy.name().into());
    format!(
        "corral: policy {}, lock {}: {} threads locked, {} lock-intensive{yielding}; SSC size {}; {} decisions; \
         highest wait shares {}{settle}",
        policy,
        r.lock,
        r.threads.len(),
        intensive,
        if r.policy == Policy::None { "none".to_string() } else { bound },
        r.decision_count,
        if shares.is_empty() { "-".to_string() } else { shares.join(" ") }
    )
}

/// FF's summary line: periods, the factor and quantum over them, the slice
/// read back and the context switches.
pub(crate) fn ff_summary(ff: &FfReport) -> Vec<String> {
    ff.programs
        .iter()
        .map(|p| {
            let Some(last) = p.periods.last() else {
                return format!(
                    "corral: ff: PROG {} ended within the first {} ms period: no quantum applied",
                    p.root, ff.period_ms
                );
            };
            let quanta: Vec<String> = p
                .periods
                .iter()
                .filter(|x| x.changed)
                .map(|x| match x.slice {
                    FfSlice::Default => format!(
                        "{} ms: kernel default slice (factor {:.2})",
                        x.quantum_ms, x.scaling_factor
                    ),
                    FfSlice::Ms { .. } => {
                        format!("{} ms (factor {:.2})", x.quantum_ms, x.scaling_factor)
                    }
                })
                .collect();
            let (vol, invol) = p
                .periods
                .iter()
                .fold((0, 0), |(v, i), x| (v + x.voluntary, i + x.involuntary));
            let slice = last
                .slice_ns
                .map_or("-".to_string(), |s| format!("{:.1} ms", s as f64 / 1e6));
            format!(
                "corral: ff: {} periods of {} ms, nice {}; quantum {}; slice read back {} on {}/{} \
                 threads; context switches {} voluntary, {} involuntary",
                p.periods.len(),
                ff.period_ms,
                p.nice,
                quanta.join(" -> "),
                slice,
                last.threads_at_slice,
                last.threads,
                vol,
                invol
            ) + &match last.threads_not_fair {
                0 => String::new(),
                n => format!(
                    "; {n} threads in a class the program chose (real-time, idle) \
                     left alone"
                ),
            }
        })
        .collect()
}
