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

/// A running kernel-lock session of `corral run` or `corral attach`.
pub(crate) struct KernelRun {
    session: KernelSession,
}

impl KernelRun {
    /// Measures process `pid` (and, unless told not to, its children).
    pub(crate) fn track(&self, pid: i32) {
        self.session.track(pid as u32);
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

/// Loads the BPF source and starts the monitor, tracking nothing yet: call
/// it before spawning the program so no early fork is missed, then
/// [`KernelRun::track`]. A refusal (not root, no BTF, tracepoints missing,
/// BPF refused) is one line.
pub(crate) fn prepare(options: &KernelOptions) -> Result<KernelRun, CliError> {
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
    Ok(KernelRun { session })
}
