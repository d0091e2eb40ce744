//! The on-CPU table for the programs corral starts: loaded once per CLI
//! process where BPF allows, and handed to each program as a read-only
//! descriptor that the program's shim maps and closes at load.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Mutex, OnceLock};

use corral_runtime::kernel::{OnCpuRefusal, OnCpuTable, ProbeEnv};

/// How waiters learn whether their lock's holder runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HolderMode {
    /// From the on-CPU table where BPF loads, else a learned spin budget.
    #[default]
    Auto,
    /// The learned spin budget only (no BPF).
    Budget,
}

static MODE: OnceLock<HolderMode> = OnceLock::new();
static TABLE: OnceLock<Result<Mutex<OnCpuTable>, OnCpuRefusal>> = OnceLock::new();

/// Read where no mode was set (`CORRAL_HOLDER_STATE=budget`): how the
/// benchmarks measure the fallback.
pub const ENV_HOLDER_STATE: &str = "CORRAL_HOLDER_STATE";

/// Chooses the mode for every later launch (first call wins).
pub fn set_mode(mode: HolderMode) {
    let _ = MODE.set(mode);
}

fn table() -> &'static Result<Mutex<OnCpuTable>, OnCpuRefusal> {
    let mode =
        MODE.get()
            .copied()
            .unwrap_or_else(|| match std::env::var(ENV_HOLDER_STATE).as_deref() {
                Ok("budget") => HolderMode::Budget,
                _ => HolderMode::Auto,
            });
    TABLE.get_or_init(|| match mode {
        HolderMode::Budget => Err(OnCpuRefusal::Off),
        HolderMode::Auto => OnCpuTable::open(&ProbeEnv::from_env()).map(Mutex::new),
    })
}

/// The table's state, loading it on first use: `Ok` where waiters follow
/// their holder's run state, else why not.
pub fn status() -> Result<(), OnCpuRefusal> {
    table().as_ref().map(|_| ()).map_err(Clone::clone)
}

/// One line on how the programs' waiters wait, for `corral run`'s summary.
pub fn describe() -> String {
    match status() {
        Ok(()) => "waiting: spin while the holder runs (BPF on sched_switch)".into(),
        Err(why) => format!("waiting: spin on a learned budget (holder state: {why})"),
    }
}

/// A descriptor of the table for one child, inheritable (not
/// close-on-exec): the caller names it in the child's environment and
/// drops it once the child is started. `None` without a table.
pub(crate) fn child_fd() -> Option<OwnedFd> {
    let table = table().as_ref().ok()?;
    let table = table.lock().ok()?;
    let fd = table.map_fd().ok()?;
    // F_DUPFD, not F_DUPFD_CLOEXEC: the copy survives the exec.
    // SAFETY: duplicating a descriptor the table keeps open meanwhile.
    let dup = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD, 3) };
    if dup < 0 {
        return None;
    }
    // SAFETY: a fresh descriptor from fcntl, owned here.
    Some(unsafe { std::os::fd::FromRawFd::from_raw_fd(dup) })
}
