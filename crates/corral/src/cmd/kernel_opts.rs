//! The kernel-lock options `corral run --kernel-locks` and `corral attach`
//! share, and the session they start: the BPF source and the monitor
//! running the SSC controller.

use corral_policy::ssc::SscParams;
use corral_runtime::kernel::{
    KernelLockSource, KernelReport, KernelSession, LockKinds, MonitorConfig, ProbeEnv, SourceConfig,
};

use crate::CliError;

/// Flags shared by `corral run --kernel-locks` and `corral attach`.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct KernelOptions {
    /// Kernel lock kinds whose waiting counts: spin, mutex, rwsem, rtmutex
    /// (comma-separated) or all. Paper 1 counts spin locks only.
    #[arg(long, value_name = "LIST", default_value = "spin")]
    pub(crate) kernel_lock_kinds: LockKinds,
    /// Do not follow the processes the program forks.
    #[arg(long)]
    pub(crate) no_follow_forks: bool,
    /// Measure and decide, but leave every thread's affinity alone.
    #[arg(long)]
    pub(crate) observe_only: bool,
    /// Run the SSC controller exactly as published in 2013 (no migrate-back,
    /// warm-up, refinement, growth or classification memory).
    #[arg(long)]
    pub(crate) paper_2013: bool,
}

impl KernelOptions {
    /// The first of these flags given, which only the kernel-lock monitor
    /// reads: without `--kernel-locks` it would do nothing, silently.
    pub(crate) fn first_given(&self) -> Option<&'static str> {
        [
            (
                self.kernel_lock_kinds != LockKinds::default(),
                "--kernel-lock-kinds",
            ),
            (self.no_follow_forks, "--no-follow-forks"),
            (self.observe_only, "--observe-only"),
            (self.paper_2013, "--paper-2013"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
}

/// A running kernel-lock session of `corral run` or `corral attach`.
pub(crate) struct KernelRun {
    session: KernelSession,
    follow_forks: bool,
}

impl KernelRun {
    /// Measures process `pid` (and, unless told not to, its children) from
    /// now on.
    pub(crate) fn track(&self, pid: i32) -> std::io::Result<()> {
        self.session.track(pid as u32)
    }

    /// Call right before spawning the program. Following forks, corral
    /// tracks itself across the spawn so the kernel adds the program at its
    /// fork: tracked only after `spawn` returns, the program could fork
    /// children before that, and they would never be measured.
    pub(crate) fn before_spawn(&self) -> Result<(), CliError> {
        if !self.follow_forks {
            return Ok(());
        }
        self.track(std::process::id() as i32).map_err(|e| {
            CliError(format!(
                "--kernel-locks: cannot track corral's own process across the spawn: {e}"
            ))
        })
    }

    /// Call with the program's pid as soon as it is spawned: tracks it
    /// (without following forks, only now) and stops tracking corral.
    pub(crate) fn spawned(&self, pid: i32) {
        // Following forks the kernel added it already; this is a no-op then.
        let _ = self.track(pid);
        if self.follow_forks {
            self.session.untrack(std::process::id());
        }
    }

    /// A handle on the report so far (`--metrics`).
    pub(crate) fn live(&self) -> corral_runtime::kernel::KernelLive {
        self.session.live()
    }

    /// Stops and returns the report part (`"kernel"` in `--report`).
    pub(crate) fn finish(self) -> KernelReport {
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

/// Loads the BPF source and starts the monitor, tracking nothing yet: then
/// [`KernelRun::track`] a running process, or [`KernelRun::before_spawn`]
/// and [`KernelRun::spawned`] around the program's spawn. A refusal (not
/// root, no BTF, tracepoints missing, BPF refused) is one line.
pub(crate) fn prepare(
    options: &KernelOptions,
    max_ssc: Option<u32>,
) -> Result<KernelRun, CliError> {
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
    if let Some(cores) = max_ssc {
        monitor.ssc.max_bound = cores;
    }
    let session = KernelSession::start(source, monitor)?;
    Ok(KernelRun {
        session,
        follow_forks: config.follow_forks,
    })
}
