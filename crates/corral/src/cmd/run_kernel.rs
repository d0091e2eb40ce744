//! Kernel-lock options of `corral run` (`--kernel-locks`) and `corral
//! attach`, and the session both drive: the BPF source, the monitor running
//! the SSC controller, and the report part it yields.

use corral_policy::ssc::SscParams;
use corral_runtime::kernel::{
    KernelLockSource, KernelReport, KernelSession, LockKinds, MonitorConfig, ProbeEnv, SourceConfig,
};

use crate::CliError;

/// Flags shared by `corral run --kernel-locks` and `corral attach`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct KernelOptions {
    /// Kernel lock kinds whose waiting counts: spin, mutex, rwsem, rtmutex
    /// (comma-separated) or all. Paper 1 counts spin locks only.
    #[arg(long, value_name = "LIST", default_value = "spin", value_parser = parse_kinds)]
    pub kernel_lock_kinds: LockKinds,
    /// Do not follow the processes the program forks.
    #[arg(long)]
    pub no_follow_forks: bool,
    /// Measure and decide, but leave every thread's affinity alone.
    #[arg(long)]
    pub observe_only: bool,
    /// Run the SSC controller exactly as published in 2013 (no migrate-back,
    /// warm-up, refinement, growth or classification memory).
    #[arg(long)]
    pub paper_2013: bool,
}

/// Flags of `corral run` for kernel locks.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct KernelArgs {
    /// Measure PROG's kernel lock waiting with BPF (root; Linux 5.19+) and
    /// confine its lock-intensive threads to the SSC by affinity.
    #[arg(long)]
    pub kernel_locks: bool,
    #[command(flatten)]
    pub options: KernelOptions,
}

fn parse_kinds(s: &str) -> Result<LockKinds, String> {
    s.parse()
}

/// A running kernel-lock session of `corral run` or `corral attach`.
pub struct KernelRun {
    session: KernelSession,
}

impl KernelRun {
    /// Measures process `pid` (and, unless told not to, its children).
    pub fn track(&self, pid: i32) {
        self.session.track(pid as u32);
    }

    /// Stops and returns the report part (`"kernel"` in `--report`).
    pub fn finish(self) -> KernelReport {
        self.session.finish()
    }
}

/// The SSC order of this machine's topology, restricted to the CPUs corral
/// may use.
fn ssc_order() -> Result<Vec<u32>, CliError> {
    let allowed = corral_runtime::affinity::allowed_cpus();
    corral_runtime::topology::ssc_order(&allowed)
        .map_err(|(_, e)| CliError(format!("reading the CPU topology: {e}")))
}

/// Loads the BPF source and starts the monitor, tracking nothing yet: call
/// it before spawning the program so no early fork is missed, then
/// [`KernelRun::track`]. `Ok(None)` without `--kernel-locks`. A refusal
/// (not root, no BTF, tracepoints missing, BPF refused) is one line.
pub fn prepare(options: &KernelOptions) -> Result<Option<KernelRun>, CliError> {
    let config = SourceConfig {
        kinds: options.kernel_lock_kinds,
        follow_forks: !options.no_follow_forks,
    };
    let source = KernelLockSource::open(&ProbeEnv::from_env(), config)
        .map_err(|r| CliError(r.to_string()))?;
    let mut monitor = MonitorConfig::new(ssc_order()?);
    monitor.apply = !options.observe_only;
    if options.paper_2013 {
        monitor.ssc = SscParams::paper_2013();
    }
    let session = KernelSession::start(source, monitor)?;
    Ok(Some(KernelRun { session }))
}

/// `corral run`, before spawning the program: with `--kernel-locks`, loads
/// and starts a session tracking nothing yet (then [`KernelRun::track`] the
/// child, so none of its forks is missed); `Ok(None)` without it.
pub fn before_spawn(args: &KernelArgs) -> Result<Option<KernelRun>, CliError> {
    if !args.kernel_locks {
        return Ok(None);
    }
    prepare(&args.options)
}

/// The `q` quantile of per-slice shares (0 when there are none).
fn quantile(shares: &[f32], q: f64) -> f64 {
    let mut sorted = shares.to_vec();
    sorted.sort_by(f32::total_cmp);
    let at = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(at).map_or(0.0, |&s| f64::from(s))
}

/// Prints a session's report for a person: per thread its kernel lock-wait
/// share, the SSC decisions and the affinity applied (read back).
pub fn print_report(r: &KernelReport) {
    println!(
        "kernel locks ({}): {} slices over {:.2} s, overall wait share {:.1}%, {} dropped; SSC order {:?}",
        r.kinds.join(","),
        r.slices,
        r.duration_ns as f64 / 1e9,
        r.wait_share * 100.0,
        r.dropped_slices,
        r.order
    );
    println!(
        "{:>8} {:<16} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:<15} affinity (read back)",
        "tid", "comm", "slices", "windows", "share%", "p50%", "p90%", "max%", ">T", "class"
    );
    for t in &r.threads {
        let mark = if t.lock_intensive { "*" } else { " " };
        let affinity = t
            .affinity_at_end
            .as_ref()
            .map_or("(exited)".to_string(), |a| format!("{a:?}"));
        println!(
            "{:>8} {:<16} {:>7} {:>7} {:>7.2} {:>7.2} {:>7.2} {:>7.1} {:>6} {:<15} {affinity}",
            t.tid,
            t.comm,
            t.slices,
            t.windows,
            t.wait_share * 100.0,
            quantile(&t.slice_shares, 0.5) * 100.0,
            quantile(&t.slice_shares, 0.9) * 100.0,
            t.max_slice_share * 100.0,
            t.intensive_slices,
            format!("{:?}{mark}", t.class),
        );
    }
    println!(
        "(share%: waiting / slice time; p50/p90/max over windows, slices merged to >= 1 ms; \
         * = classified lock intensive: a window over T = {:.0}%)",
        r.threshold * 100.0
    );
    println!(
        "SSC decisions: {} and {} holds (final bound {}, SSC {:?})",
        r.decisions.len(),
        r.holds,
        r.final_bound,
        r.final_ssc
    );
    for d in r.decisions.iter().take(20) {
        println!(
            "  {:?}: bound {} -> {} (T = {:.3}, p = {:.3})",
            d.kind, d.bound_before, d.bound_after, d.throughput, d.p
        );
    }
    println!("affinity changes: {}", r.affinity.len());
    for a in r.affinity.iter().take(20) {
        println!(
            "  +{:.3} s tid {} -> {} {:?}, read back {:?}",
            a.at_ns as f64 / 1e9,
            a.tid,
            a.to,
            a.requested,
            a.read_back
        );
    }
    if !r.hot_locks.is_empty() {
        println!("hottest kernel locks (waiting by tracked tasks, sleeping included):");
        for l in r.hot_locks.iter().take(5) {
            println!(
                "  {} {:<12} {:<32} {:>10.3} ms {:>8} waits",
                l.addr,
                l.kind,
                l.symbol.as_deref().unwrap_or("-"),
                l.wait_ns as f64 / 1e6,
                l.count
            );
        }
    }
}
