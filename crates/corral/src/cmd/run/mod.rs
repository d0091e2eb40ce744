//! `corral run -- PROG ARGS`: runs an unmodified program with corral's
//! locks (LD_PRELOAD) and the SSC policy, then reports each thread's lock
//! wait share, the SSC size over time and every decision.

mod report;
mod settle;
pub(crate) mod timeline;

use std::path::PathBuf;

use corral_launch::launch::{
    find_preload, launch_observed, resolve_program, Collect, Output, Spawn,
};
use corral_launch::signals::{exit_code, exit_like};
use corral_locks::Algorithm;
use corral_runtime::config::{self, Policy, RuntimeConfig};
use corral_runtime::events::for_each_event;
use corral_runtime::faithful::FfDriver;
use corral_runtime::policies::PolicySet;

use super::kernel_opts::{prepare, KernelOptions};
use crate::CliError;
use report::{build_report, ca_summary, ff_summary, summary, Loading, LogSummary, ThreadCount};

/// Arguments of `corral run`.
#[derive(clap::Args)]
#[command(after_help = "\
WHAT PROG'S ENVIRONMENT GAINS
  LD_PRELOAD      libcorral_shim.so (or libcorral_preload.so where no shim lies
                  beside it) after the entries already there, which keep
                  coming first. The shim loads the full library at a
                  process's first pthread lock call: processes that never
                  lock (most of what a script execs) never load it.
  GLIBC_TUNABLES  glibc.rtld.optional_static_tls raised by the full library's
                  TLS size (about 5 KB) over PROG's own value, other tunables
                  kept: the room glibc needs to load it late with static TLS.
  CORRAL_*        the configuration, the pid of this corral run, the CPU
                  topology and the TSC calibration it read once (so that no
                  process spins 250 us to calibrate its own).
  Children inherit all of it: they run under corral too.")]
pub(crate) struct RunArgs {
    /// `lca` confines lock-intensive threads to the SSC (a program that may
    /// run on one CPU only has nothing to confine: it is measured, and
    /// left where it is); `none` keeps
    /// corral's locks and measurement without confinement (the control);
    /// `ff` (paper 4's faithful scheduling) gives every thread of PROG and
    /// its children one nice value, no wake-up preemption (SCHED_BATCH)
    /// and one quantum (EEVDF slice) chosen from its scaling factor each
    /// --ff-period-ms; `lca,ff` does both.
    /// `ca` (paper 5's contention-aware scheduler) samples the locks each
    /// thread takes, clusters threads that share locks once a seVector of
    /// 2,048 samples fills (at 10 threads or more), pins each cluster to a
    /// CPU and re-clusters every round; `ca,csf` adds Critical-Section-First:
    /// a nice bonus of up to -5 by lock count, and rseq slice extension
    /// where the kernel has it (Linux 7.0; a refusal is said in one line).
    /// Default: `lca`, or `none` with --kernel-locks (whose monitor then
    /// does the placing).
    #[arg(long, value_name = "none|lca|ca|ca,csf|ff|lca,ff")]
    pub(crate) policy: Option<PolicySet>,
    /// FF's monitoring period in milliseconds (paper 4: 1,000).
    #[arg(long, value_name = "MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
    pub(crate) ff_period_ms: u64,
    /// FF keeps the kernel's default slice for Table I quanta up to this
    /// many milliseconds (default 20: OpenSolaris TS's shortest quantum,
    /// the paper's baseline, against EEVDF's ~1-3 ms); 0 applies every row
    /// of Table I literally.
    #[arg(long, value_name = "MS", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(0..=250))]
    pub(crate) ff_keep_default_up_to_ms: u32,
    /// FF keeps the kernel's wake-up preemption: a waking thread may
    /// preempt a running one of the same program (often the lock holder).
    /// By default FF puts every thread in SCHED_BATCH, the fair class
    /// without it: paper 4's fixed class, where no thread preempts another
    /// before its quantum ends.
    #[arg(long)]
    pub(crate) ff_wakeup_preemption: bool,
    /// Lock algorithm replacing pthread mutexes. The default, `futex`, puts
    /// waiters to sleep in the kernel; the spin locks (ticket, mcs, ...)
    /// are there to study and reproduce collapse.
    #[arg(long = "lock", value_name = "ALG", default_value = "futex")]
    pub(crate) lock: Algorithm,
    /// Lock-intensive threshold T: the wait share that qualifies a thread (paper 1: 0.10).
    #[arg(long, value_name = "SHARE")]
    pub(crate) threshold: Option<f64>,
    /// Accounting window, in microseconds of thread CPU time.
    #[arg(long, value_name = "US")]
    pub(crate) slice_us: Option<u64>,
    /// Monitor period in microseconds.
    #[arg(long, value_name = "US")]
    pub(crate) tick_us: Option<u64>,
    /// Confirmations before the SSC size moves (paper 1: 2).
    #[arg(long, value_name = "N")]
    pub(crate) confirmations: Option<u32>,
    /// Re-search timeout in milliseconds (paper 1: 30,000).
    #[arg(long, value_name = "MS")]
    pub(crate) research_ms: Option<u64>,
    /// Vote warm-up after the SSC size changes, in microseconds: slices
    /// that began sooner do not count toward the next decision, nor does a
    /// thread's slice during its move onto the SSC (default 4,000; 0 turns
    /// both off). User-space locks only, as the flags above; the
    /// kernel-lock monitor keeps its preset's 1,250.
    #[arg(long, value_name = "US")]
    pub(crate) vote_warmup_us: Option<u64>,
    /// Largest SSC in cores (0 = every CPU).
    #[arg(long, value_name = "N")]
    pub(crate) max_ssc: Option<u32>,
    /// Keep lock-intensive threads on the SSC even when they cool down.
    #[arg(long)]
    pub(crate) no_migrate_back: bool,
    /// Spin probes (about 5 ns each) before a waiter sleeps until the
    /// release wakes it.
    #[arg(long, value_name = "N", alias = "spin-before-yield")]
    pub(crate) spin_before_park: Option<u32>,
    /// How a waiter no policy manages waits (with --policy none, in forked
    /// children, on real-time threads): `park` spins briefly, then sleeps
    /// until the release wakes it (default); `spin` waits as the algorithm
    /// does, without bound: with more threads than cores a FIFO lock
    /// (ticket, mcs, clh, k42) then collapses. For studying collapse only.
    #[arg(long, value_name = "park|spin")]
    pub(crate) wait: Option<String>,
    /// Keep each of PROG's processes on glibc's locks until it has handed
    /// a mutex to a waiting thread N times (an unlock that finds a thread
    /// asleep on it), then load corral in it: a short run that barely
    /// contends (git grep: about 150 contended calls in 15 ms) never pays
    /// corral's library load, 0.2-0.4 ms per process, and a contended one
    /// loads within a millisecond or two. Default 1000
    /// with a parking --lock (futex, the default, or adaptive), whose
    /// mutexes glibc can have locked before the load; any other --lock
    /// loads at once. 0: load at the first lock call (to study corral's
    /// own paths on a program that barely contends).
    #[arg(long, value_name = "N")]
    pub(crate) load_after_contended: Option<u32>,
    /// Write the report (threads, SSC over time, decisions) as JSON here.
    #[arg(long, value_name = "FILE.json")]
    pub(crate) report: Option<PathBuf>,
    /// Write the decision log (JSON lines) here. corral's monitor thread
    /// writes it from the program's first lock waits that could qualify a
    /// thread (policy ca: from its second thread); a program whose waits
    /// never do leaves it empty.
    #[arg(long, value_name = "FILE.jsonl")]
    pub(crate) events: Option<PathBuf>,
    /// No summary on stderr at exit.
    #[arg(long)]
    pub(crate) quiet: bool,
    /// Locks in the exit table of the most contended locks (0: no table);
    /// with --kernel-locks, kernel locks are rows too, named
    /// `kernel SYMBOL+0xOFF` or `kernel 0xADDR`.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub(crate) top_locks: usize,
    /// Also print lock waiting per thread at exit (as `perf lock contention -t`).
    #[arg(long)]
    pub(crate) per_thread: bool,
    /// Keep no per-lock profile in PROG (its cost is then none at all).
    #[arg(long)]
    pub(crate) no_lock_profile: bool,
    /// Serve PROG's live stats as Prometheus metrics at ADDR
    /// (http://ADDR/metrics) while it runs; port 0 picks one, said on stderr.
    #[arg(long, value_name = "IP:PORT")]
    pub(crate) metrics: Option<std::net::SocketAddr>,
    /// Sample PROG's stats every this many milliseconds for the report's
    /// timeline (`corral report --svg` plots it).
    #[arg(long, value_name = "MS", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) sample_ms: u64,
    /// Allow --metrics on an address other than loopback.
    #[arg(long, requires = "metrics")]
    pub(crate) metrics_public: bool,
    /// Measure PROG's kernel lock waiting with BPF (root; Linux 5.19+) and
    /// confine its lock-intensive threads to the SSC by affinity; the locks
    /// it waited on join the exit table and the report's `locks`.
    #[arg(long)]
    pub(crate) kernel_locks: bool,
    /// How a waiter of the default lock learns whether to spin or sleep:
    /// `auto` spins exactly while the lock's holder runs on a CPU (told by
    /// a BPF program on sched_switch: root, Linux 5.8+), else on a budget
    /// learned per lock; `budget` uses the budget only. Either way no
    /// waiter spins longer than a sleep and wake-up cost (measured). The
    /// summary says which is in use
    #[arg(long, value_enum, value_name = "MODE", default_value = "auto")]
    pub(crate) holder_state: HolderStateArg,
    /// The kernel-lock options `corral attach` shares.
    #[command(flatten)]
    pub(crate) kernel: KernelOptions,
    /// The program and its arguments.
    /// Any bytes, as the shell passes them (not only UTF-8).
    #[arg(last = true, required = true, value_name = "PROG")]
    pub(crate) prog: Vec<std::ffi::OsString>,
}

/// `--holder-state`'s values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum HolderStateArg {
    /// The on-CPU table where BPF loads, else the budget.
    Auto,
    /// The learned budget only.
    Budget,
}

/// A tuning flag of `corral run`, the configuration variable it sets, and
/// its value as text when given.
type Tuning = (&'static str, &'static str, Option<String>);

fn text<T: ToString>(v: Option<T>) -> Option<String> {
    v.map(|v| v.to_string())
}

impl RunArgs {
    /// Every tuning flag with its variable, in one table: the values go to
    /// the preload library's parser, and its error's key leads back to the
    /// flag.
    fn tuning(&self) -> [Tuning; 11] {
        [
            ("--threshold", config::ENV_THRESHOLD, text(self.threshold)),
            ("--slice-us", config::ENV_SLICE_US, text(self.slice_us)),
            ("--tick-us", config::ENV_TICK_US, text(self.tick_us)),
            (
                "--confirmations",
                config::ENV_CONFIRMATIONS,
                text(self.confirmations),
            ),
            (
                "--research-ms",
                config::ENV_RESEARCH_MS,
                text(self.research_ms),
            ),
            (
                "--vote-warmup-us",
                config::ENV_VOTE_WARMUP_US,
                text(self.vote_warmup_us),
            ),
            ("--max-ssc", config::ENV_MAX_SSC, text(self.max_ssc)),
            (
                "--no-migrate-back",
                config::ENV_MIGRATE_BACK,
                self.no_migrate_back.then(|| "0".to_string()),
            ),
            (
                "--spin-before-park",
                config::ENV_SPIN_BEFORE_PARK,
                text(self.spin_before_park),
            ),
            ("--wait", config::ENV_WAIT, self.wait.clone()),
            (
                "--load-after-contended",
                config::ENV_LOAD_AFTER_CONTENDED,
                text(self.load_after_contended),
            ),
        ]
    }

    /// The runtime configuration the flags describe, validated by the same
    /// parser the preload library uses; an error names the flag.
    pub(crate) fn config(&self) -> Result<RuntimeConfig, CliError> {
        // One SSC controller per run: with --kernel-locks the kernel monitor
        // places threads, so the user-space side only measures unless told.
        let default_policy = if self.kernel_locks {
            Policy::None
        } else {
            Policy::Lca
        };
        let base = RuntimeConfig {
            policy: self.policy.map_or(default_policy, |p| p.placement),
            lock: self.lock,
            ..RuntimeConfig::default()
        }
        .to_env();
        let tuning = self.tuning();
        let given = |k: &str| {
            tuning
                .iter()
                .find(|(_, key, _)| *key == k)
                .and_then(|(_, _, value)| value.clone())
        };
        let from_base = |k: &str| {
            base.iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| v.clone())
        };
        let cfg =
            RuntimeConfig::from_lookup(|k| given(k).or_else(|| from_base(k))).map_err(|e| {
                match tuning.iter().find(|(_, key, _)| *key == e.key) {
                    Some((flag, ..)) => {
                        CliError::bad_value(flag, &e.value, &format!("expected {}", e.expected))
                    }
                    None => e.into(),
                }
            })?;
        // Asked for, and refused by the one rule of which locks can defer.
        let asked = self.load_after_contended.unwrap_or(0);
        if asked > 0 && cfg.load_after() == 0 {
            return Err(CliError::bad_value(
                "--load-after-contended",
                &asked.to_string(),
                &format!(
                    "--lock {} does not keep glibc's mutex words, so a mutex glibc \
                     locked before the load could not be released by corral: use it \
                     with --lock futex or adaptive, or give 0",
                    cfg.lock.name()
                ),
            ));
        }
        Ok(cfg)
    }
}

/// Runs PROG under the preload library, reports, and exits with PROG's
/// exit code.
pub(crate) fn run(args: RunArgs) -> Result<(), CliError> {
    let cfg = args.config()?;
    if let (false, Some(flag)) = (args.kernel_locks, args.kernel.first_given()) {
        return Err(CliError(format!(
            "{flag}: applies to the kernel-lock monitor only; add --kernel-locks \
             (for user-space locks, --policy none measures without placing)"
        )));
    }
    let prog_name = &args.prog[0];
    let Some(program) = resolve_program(prog_name) else {
        return Err(CliError(format!(
            "PROG '{}' not found (or not executable)",
            prog_name.to_string_lossy()
        )));
    };
    // A static program loads no preload to wait for corral's watcher at
    // load: corral forks it and it waits between fork and exec.
    let spawn = if corral_launch::elf::loads_preloads(&program) {
        Spawn::Direct
    } else {
        Spawn::Uniform
    };
    let loading = match (spawn, cfg.load_after()) {
        (Spawn::Uniform, _) => Loading::Never,
        (_, 0) => Loading::AtFirstCall,
        (_, n) => Loading::AfterContended(n),
    };
    let preload = find_preload()?;
    corral_launch::holder::set_mode(match args.holder_state {
        HolderStateArg::Auto => corral_launch::holder::HolderMode::Auto,
        HolderStateArg::Budget => corral_launch::holder::HolderMode::Budget,
    });
    if args.no_lock_profile {
        // Read by the preload library at load; no other thread runs yet.
        std::env::set_var(corral_runtime::lockprof::ENV_LOCK_PROFILE, "0");
    }
    // The report's decisions: kept in memory where no --events file takes them.
    let keep_log = (args.report.is_some() || !args.quiet) && args.events.is_none();
    // Opened now: an unwritable path is refused before PROG runs, not
    // after, where the error would replace PROG's exit status.
    let report_file = match &args.report {
        Some(path) => Some(
            std::fs::File::create(path)
                .map_err(|e| CliError(format!("--report {}: {e}", path.display())))?,
        ),
        None => None,
    };
    // Loaded before the spawn so that none of the child's early forks is
    // missed; a refusal stops here, before PROG starts.
    let kernel = if args.kernel_locks {
        let k = prepare(&args.kernel, args.max_ssc)?;
        k.before_spawn()?;
        Some(k)
    } else {
        None
    };
    let faithful = args.policy.is_some_and(|p| p.faithful);
    let ff = std::cell::RefCell::new(None);
    let metrics_pid = std::sync::Arc::new(std::sync::atomic::AtomicI32::new(0));
    if let Some(addr) = args.metrics {
        let bound = super::metrics::serve(
            addr,
            args.metrics_public,
            super::metrics::Watched::Program(metrics_pid.clone()),
        )?;
        eprintln!("corral: metrics at http://{bound}/metrics");
    }
    let sampler = match &args.report {
        Some(_) => Some(timeline::Sampler::start(
            metrics_pid.clone(),
            std::time::Duration::from_millis(args.sample_ms),
        )?),
        None => None,
    };
    let wanted = match (args.quiet && args.report.is_none(), keep_log) {
        (true, _) => Collect::StatusOnly,
        (false, true) => Collect::WithLog,
        (false, false) => Collect::Everything,
    };
    let (outcome, _) = launch_observed(
        &cfg,
        Some(&preload),
        &args.prog,
        args.events.as_deref(),
        Output::Inherit,
        (spawn, wanted),
        &|pid| {
            // Relaxed: the server reads a pid, nothing else through it.
            metrics_pid.store(pid, std::sync::atomic::Ordering::Relaxed);
            if let Some(k) = &kernel {
                k.spawned(pid);
            }
            if faithful {
                *ff.borrow_mut() = start_ff(pid, ff_params(&args), args.quiet);
            }
        },
    )?;
    let ff_report = ff.into_inner().map(FfDriver::finish);
    let kernel_report = kernel.map(|k| k.finish());
    let code = exit_code(outcome.status);
    let mut log = LogSummary::default();
    match (&args.events, &outcome.log) {
        // An unreadable log leaves the report without decisions.
        (Some(p), _) => drop(for_each_event(p, |e| log.add(e))),
        (None, Some(memory)) => memory.for_each_event(|e| log.add(e)),
        (None, None) => {}
    }
    let mut report = build_report(
        &cfg,
        code,
        outcome.stats.as_ref(),
        outcome.maps.as_deref(),
        log,
        args.report.is_some() || (!args.quiet && args.top_locks > 0),
    );
    if let Some(k) = &kernel_report {
        let user = std::mem::take(&mut report.locks);
        let kernel = crate::cmd::locks::kernel::kernel_lock_reports(&k.hot_locks);
        report.locks = crate::cmd::locks::kernel::merge(user, kernel);
    }
    report.kernel = kernel_report;
    if cfg.lock.is_parking() {
        report.waiting = Some(corral_launch::holder::describe());
    }
    if let Some(count) = &mut report.thread_count {
        count.with_cpu(outcome.cpu, &report.threads);
    }
    report.policies = args.policy.map(|p| p.name());
    report.ff = ff_report;
    report.timeline = sampler.map(timeline::Sampler::finish).unwrap_or_default();
    if !args.quiet {
        let line = match (&outcome.stats, outcome.region_lent, loading) {
            (None, false, Loading::AtFirstCall | Loading::AfterContended(_)) => format!(
                "corral: exit {code}; no stats from PROG: it was lent no stats region \
                 (see the line above)"
            ),
            _ => summary(&report, outcome.stats.as_ref(), loading),
        };
        eprintln!("{line}");
        if let Some(line) = report.thread_count.as_ref().and_then(ThreadCount::line) {
            eprintln!("{line}");
        }
        if let Some(w) = &report.waiting {
            eprintln!("corral: {w}");
        }
        if let Some(line) = ca_summary(&report) {
            eprintln!("{line}");
        }
        for line in report.ff.as_ref().map(ff_summary).unwrap_or_default() {
            eprintln!("{line}");
        }
        if args.top_locks > 0 && !report.locks.is_empty() {
            eprint!(
                "{}",
                crate::cmd::locks::lock_table(&report.locks, args.top_locks)
            );
        }
        if let (true, Some(stats)) = (args.per_thread, &outcome.stats) {
            eprint!("{}", crate::cmd::locks::thread_table(stats));
        }
    }
    if let (Some(mut file), Some(path)) = (report_file, &args.report) {
        use std::io::Write;
        let text = serde_json::to_string_pretty(&report)?;
        // PROG has run: a failed write is said, and PROG's status still wins.
        if let Err(e) = file.write_all((text + "\n").as_bytes()) {
            eprintln!("corral: --report {}: {e}", path.display());
        }
    }
    exit_like(outcome.status);
}

/// FF's parameters from `corral run`'s flags.
fn ff_params(args: &RunArgs) -> corral_policy::faithful::FfParams {
    use corral_policy::faithful::WakeupPreemption;
    corral_policy::faithful::FfParams {
        monitoring_period_ns: args.ff_period_ms * 1_000_000,
        keep_default_up_to_ms: args.ff_keep_default_up_to_ms,
        wakeup_preemption: if args.ff_wakeup_preemption {
            WakeupPreemption::On
        } else {
            WakeupPreemption::Off
        },
        ..Default::default()
    }
}

/// Starts FF over PROG (`pid`) and its children; its notices (no PMU,
/// slice refused) go to stderr after the first period unless `quiet`. A
/// driver that cannot start costs one line; PROG runs on.
fn start_ff(pid: i32, params: corral_policy::faithful::FfParams, quiet: bool) -> Option<FfDriver> {
    FfDriver::start(params, vec![pid], move |lines| {
        if !quiet {
            for l in lines {
                eprintln!("{l}");
            }
        }
    })
    .map_err(|e| eprintln!("corral: ff: cannot start its thread ({e}); PROG runs without FF"))
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn config(flags: &[&str]) -> Result<RuntimeConfig, CliError> {
        let argv = ["corral"].iter().chain(flags).chain(&["--", "true"]);
        Cli::try_parse_from(argv).unwrap().run.config()
    }

    #[test]
    fn every_tuning_flag_exists() {
        let cmd = Cli::command();
        let longs: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
        let args = Cli::try_parse_from(["corral", "--", "true"]).unwrap().run;
        for (flag, _, _) in args.tuning() {
            assert!(longs.contains(&&flag[2..]), "{flag} is not a flag");
        }
    }

    #[test]
    fn a_deferred_load_needs_a_parking_lock() {
        assert_eq!(
            config(&["--load-after-contended", "1000"])
                .unwrap()
                .load_after_contended,
            1000
        );
        assert_eq!(
            config(&["--lock", "adaptive", "--load-after-contended", "5"])
                .unwrap()
                .load_after_contended,
            5
        );
        let refused = config(&["--lock", "ticket", "--load-after-contended", "5"]).unwrap_err();
        assert!(
            refused
                .0
                .starts_with("--load-after-contended: invalid value '5': --lock ticket"),
            "{}",
            refused.0
        );
        // 0 is the load at the first call, with any lock.
        assert_eq!(
            config(&["--lock", "ticket", "--load-after-contended", "0"])
                .unwrap()
                .load_after(),
            0
        );
        assert_eq!(
            config(&["--load-after-contended", "0"])
                .unwrap()
                .load_after(),
            0
        );
    }

    #[test]
    fn the_default_defers_the_load_where_the_lock_allows() {
        let default = corral_policy::engage::LOAD_AFTER_CONTENDED;
        assert_eq!(config(&[]).unwrap().load_after(), default);
        assert_eq!(
            config(&["--lock", "adaptive"]).unwrap().load_after(),
            default
        );
        // A spinning lock, not asked for a deferred load, loads at once
        // rather than being refused.
        assert_eq!(config(&["--lock", "ticket"]).unwrap().load_after(), 0);
        assert_eq!(config(&["--lock", "mcs"]).unwrap().load_after(), 0);
    }

    #[test]
    fn a_bad_value_names_its_flag() {
        assert_eq!(
            config(&["--slice-us", "10"]).unwrap_err().0,
            "--slice-us: invalid value '10': expected microseconds >= 100"
        );
        assert!(config(&["--threshold", "1.5"])
            .unwrap_err()
            .0
            .starts_with("--threshold: "));
        assert_eq!(
            config(&["--confirmations", "3"]).unwrap().ssc.confirmations,
            3
        );
        assert_eq!(
            config(&["--vote-warmup-us", "1250"])
                .unwrap()
                .ssc
                .vote_warmup,
            1_250_000
        );
    }

    #[test]
    fn overflowing_durations_name_the_flag() {
        for (flag, value) in [
            ("--slice-us", u64::MAX),
            ("--tick-us", u64::MAX / 1_000 + 1),
            ("--research-ms", u64::MAX),
        ] {
            let e = config(&[flag, &value.to_string()]).unwrap_err().0;
            assert!(
                e.starts_with(&format!("{flag}: invalid value '{value}'")),
                "{e}"
            );
            assert!(e.contains("overflows"), "{e}");
        }
    }
}
