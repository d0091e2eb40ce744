//! `corral run -- PROG ARGS`: runs an unmodified program with corral's
//! locks (LD_PRELOAD) and the SSC policy, then reports each thread's lock
//! wait share, the SSC size over time and every decision.

mod report;

use std::path::{Path, PathBuf};

use corral_locks::Algorithm;
use corral_runtime::config::{self, Policy, RuntimeConfig};
use corral_runtime::events::{read_log, Event};

use super::kernel_opts::{prepare, KernelOptions};
use super::launch::{exit_code, find_preload, launch_observed, resolve_program, Output};
use crate::CliError;
use report::{build_report, summary};

/// Arguments of `corral run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// `lca` confines lock-intensive threads to the SSC; `none` keeps
    /// corral's locks and measurement without confinement (the control).
    /// Default: `lca`, or `none` with --kernel-locks (whose monitor then
    /// does the placing).
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<Policy>,
    /// Lock algorithm replacing pthread mutexes.
    #[arg(long = "lock", value_name = "ALG", default_value = "ticket", value_parser = parse_alg)]
    pub lock: Algorithm,
    /// Lock-intensive threshold T: the wait share that qualifies a thread (paper 1: 0.10).
    #[arg(long, value_name = "SHARE")]
    pub threshold: Option<f64>,
    /// Accounting window, in microseconds of thread CPU time.
    #[arg(long, value_name = "US")]
    pub slice_us: Option<u64>,
    /// Monitor period in microseconds.
    #[arg(long, value_name = "US")]
    pub tick_us: Option<u64>,
    /// Confirmations before the SSC size moves (paper 1: 2).
    #[arg(long, value_name = "N")]
    pub confirmations: Option<u32>,
    /// Re-search timeout in milliseconds (paper 1: 30,000).
    #[arg(long, value_name = "MS")]
    pub research_ms: Option<u64>,
    /// Largest SSC in cores (0 = every CPU).
    #[arg(long, value_name = "N")]
    pub max_ssc: Option<u32>,
    /// Keep lock-intensive threads on the SSC even when they cool down.
    #[arg(long)]
    pub no_migrate_back: bool,
    /// Spin probes before a waiter under the SSC policy yields.
    #[arg(long, value_name = "N")]
    pub spin_before_yield: Option<u32>,
    /// Write the report (threads, SSC over time, decisions) as JSON here.
    #[arg(long, value_name = "FILE.json")]
    pub report: Option<PathBuf>,
    /// Write the decision log (JSON lines) here.
    #[arg(long, value_name = "FILE.jsonl")]
    pub events: Option<PathBuf>,
    /// No summary on stderr at exit.
    #[arg(long)]
    pub quiet: bool,
    /// Measure PROG's kernel lock waiting with BPF (root; Linux 5.19+) and
    /// confine its lock-intensive threads to the SSC by affinity.
    #[arg(long)]
    pub kernel_locks: bool,
    /// The kernel-lock options `corral attach` shares.
    #[command(flatten)]
    pub kernel: KernelOptions,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROG")]
    pub prog: Vec<String>,
}

pub(crate) fn parse_policy(s: &str) -> Result<Policy, String> {
    Policy::parse(s)
}

pub(crate) fn parse_alg(s: &str) -> Result<Algorithm, String> {
    s.parse()
        .map_err(|e: corral_locks::UnknownAlgorithm| e.to_string())
}

impl RunArgs {
    /// The runtime configuration the flags describe, validated by the same
    /// parser the preload library uses.
    pub fn config(&self) -> Result<RuntimeConfig, CliError> {
        // One SSC controller per run: with --kernel-locks the kernel monitor
        // places threads, so the user-space side only measures unless told.
        let default_policy = if self.kernel_locks {
            Policy::None
        } else {
            Policy::Lca
        };
        let base = RuntimeConfig {
            policy: self.policy.unwrap_or(default_policy),
            lock: self.lock,
            ..RuntimeConfig::default()
        };
        let mut env: Vec<(&str, String)> = base.to_env();
        let mut set = |k: &'static str, v: Option<String>| {
            if let Some(v) = v {
                env.retain(|(key, _)| *key != k);
                env.push((k, v));
            }
        };
        set(config::ENV_THRESHOLD, self.threshold.map(|v| v.to_string()));
        set(config::ENV_SLICE_US, self.slice_us.map(|v| v.to_string()));
        set(config::ENV_TICK_US, self.tick_us.map(|v| v.to_string()));
        set(
            config::ENV_CONFIRMATIONS,
            self.confirmations.map(|v| v.to_string()),
        );
        set(
            config::ENV_RESEARCH_MS,
            self.research_ms.map(|v| v.to_string()),
        );
        set(config::ENV_MAX_SSC, self.max_ssc.map(|v| v.to_string()));
        set(
            config::ENV_MIGRATE_BACK,
            self.no_migrate_back.then(|| "0".to_string()),
        );
        set(
            config::ENV_SPIN_BEFORE_YIELD,
            self.spin_before_yield.map(|v| v.to_string()),
        );
        RuntimeConfig::from_lookup(|k| {
            env.iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| v.clone())
        })
        .map_err(|e| {
            let flag = e
                .split(':')
                .next()
                .unwrap_or("")
                .trim_start_matches("CORRAL_")
                .to_lowercase()
                .replace('_', "-");
            CliError(format!(
                "--{flag}{}",
                e.split_once(':')
                    .map_or(String::new(), |(_, rest)| format!(":{rest}"))
            ))
        })
    }
}

pub fn run(args: RunArgs) -> Result<(), CliError> {
    let cfg = args.config()?;
    let prog_name = &args.prog[0];
    if resolve_program(prog_name).is_none() {
        return Err(CliError(format!(
            "PROG '{prog_name}' not found (or not executable)"
        )));
    }
    let preload = find_preload()?;
    let scratch_events = (args.report.is_some() || !args.quiet) && args.events.is_none();
    let events_path = match (&args.events, scratch_events) {
        (Some(p), _) => Some(p.clone()),
        (None, true) => {
            Some(std::env::temp_dir().join(format!("corral-events.{}.jsonl", std::process::id())))
        }
        (None, false) => None,
    };
    // Loaded before the spawn so that none of the child's early forks is
    // missed; a refusal stops here, before PROG starts.
    let kernel = if args.kernel_locks {
        Some(prepare(&args.kernel)?)
    } else {
        None
    };
    let (outcome, _) = launch_observed(
        &cfg,
        Some(&preload),
        &args.prog,
        events_path.as_deref(),
        Output::Inherit,
        &|pid| {
            if let Some(k) = &kernel {
                k.track(pid);
            }
        },
    )?;
    let kernel_report = kernel.map(|k| k.finish());
    let code = exit_code(outcome.status);
    let events = events_path.as_deref().map(read_events).unwrap_or_default();
    if scratch_events {
        if let Some(p) = &events_path {
            let _ = std::fs::remove_file(p);
        }
    }
    let mut report = build_report(&cfg, code, outcome.stats.as_ref(), events);
    report.kernel = kernel_report;
    if !args.quiet {
        eprintln!("{}", summary(&report, outcome.stats.as_ref()));
    }
    if let Some(path) = &args.report {
        let text = serde_json::to_string_pretty(&report).map_err(|e| CliError(e.to_string()))?;
        std::fs::write(path, text + "\n")
            .map_err(|e| CliError(format!("--report {}: {e}", path.display())))?;
    }
    std::process::exit(code);
}

fn read_events(path: &Path) -> Vec<Event> {
    read_log(path).unwrap_or_default()
}
