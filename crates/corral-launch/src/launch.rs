//! Starting a program under `libcorral_preload.so` and collecting what its
//! runtime published: shared by `corral run`, `corral bench counter`,
//! `corral bench apps` and `corral demo`.

use std::ffi::OsStr;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use corral_runtime::config::{
    RuntimeConfig, ENV_EVENTS, ENV_PARENT_PID, ENV_SHIM_TARGET, ENV_TOPOLOGY,
};
use corral_runtime::events::MemoryLog;
use corral_runtime::oncpu::ENV_ONCPU_FD;
use corral_runtime::stats::{StatsSnapshot, ENV_STATS_FD_C};

use crate::signals;
use crate::watcher::{Watcher, ENV_START_FD_C, ENV_START_LINK_C};
use crate::CliError;

/// The preload library's file name.
const PRELOAD_NAME: &str = "libcorral_preload.so";
/// Overrides where the preload library is looked for.
const ENV_PRELOAD: &str = "CORRAL_PRELOAD";
/// The small preload that loads the full library at a process's first
/// pthread lock call (crates/corral-shim), looked for beside it.
const SHIM_NAME: &str = "libcorral_shim.so";

/// Where `libcorral_preload.so` is looked for, built or not:
/// `$CORRAL_PRELOAD`, else next to this executable (`corral doctor` asks
/// without building it).
pub fn preload_location() -> Option<PathBuf> {
    match std::env::var_os(ENV_PRELOAD) {
        Some(p) => Some(PathBuf::from(p)),
        None => Some(std::env::current_exe().ok()?.parent()?.join(PRELOAD_NAME)),
    }
}

/// Finds `libcorral_preload.so`: `$CORRAL_PRELOAD`, else next to this
/// executable. Run from a cargo target directory of this workspace (e.g.
/// `cargo run --release -- demo` on a fresh clone, which builds only the
/// CLI), a missing library is built once with cargo.
pub fn find_preload() -> Result<PathBuf, CliError> {
    if let Some(p) = std::env::var_os(ENV_PRELOAD) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(CliError(format!(
                "{ENV_PRELOAD}: {} does not exist",
                p.display()
            )))
        };
    }
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .ok_or_else(|| CliError("cannot locate the corral executable".into()))?;
    let lib = dir.join(PRELOAD_NAME);
    if lib.is_file() {
        return Ok(lib);
    }
    build_preload(dir)?;
    if lib.is_file() {
        Ok(lib)
    } else {
        Err(CliError(format!("{PRELOAD_NAME} not found next to {}; build it with `cargo build --release -p corral-preload`", exe.display())))
    }
}

/// Builds the preload library into the target directory `dir` belongs to,
/// if `dir` is a cargo profile directory and this workspace's sources exist.
fn build_preload(dir: &Path) -> Result<(), CliError> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let profile = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let Some(target_dir) = dir.parent() else {
        return Ok(());
    };
    if !manifest.is_file() || !(profile == "release" || profile == "debug") {
        return Ok(());
    }
    eprintln!(
        "corral: building {PRELOAD_NAME} and {SHIM_NAME} once (cargo build -p corral-preload -p corral-shim)..."
    );
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.arg("build")
        .arg("-q")
        .args(["-p", "corral-preload", "-p", "corral-shim"])
        .arg("--manifest-path")
        .arg(&manifest);
    cmd.arg("--target-dir").arg(target_dir);
    if profile == "release" {
        cmd.arg("--release");
    }
    let status = cmd
        .status()
        .map_err(|e| CliError(format!("cannot run cargo to build {PRELOAD_NAME}: {e}")))?;
    if !status.success() {
        return Err(CliError(format!(
            "building {PRELOAD_NAME} failed ({status})"
        )));
    }
    Ok(())
}

/// Resolves PROG as the shell would (a path, or a name on `$PATH`);
/// `None` if there is no such executable file.
pub fn resolve_program(prog: &std::ffi::OsStr) -> Option<PathBuf> {
    let is_exec = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.is_file()
            && p.metadata()
                .map(|m| m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
    };
    if prog.as_encoded_bytes().contains(&b'/') {
        let p = PathBuf::from(prog);
        return is_exec(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| is_exec(p))
}

/// `libcorral_shim.so` beside the full library `lib`, if it is there: what
/// `corral run` preloads, so that a process that never locks (most of what
/// a script execs) never loads the full library. Without it the full
/// library is preloaded itself, as before the shim.
fn shim_beside(lib: &Path) -> Option<PathBuf> {
    let shim = lib.with_file_name(SHIM_NAME);
    shim.is_file().then_some(shim)
}

/// `LD_PRELOAD` with corral's library after the entries already there: a
/// library the user preloads to interpose pthread locks keeps coming first
/// and reaches corral's through `RTLD_NEXT`, as it reached glibc's.
fn preload_list(old: Option<std::ffi::OsString>, lib: &Path) -> std::ffi::OsString {
    match old.filter(|v| !v.is_empty()) {
        Some(mut value) => {
            value.push(":");
            value.push(lib);
            value
        }
        None => lib.as_os_str().to_owned(),
    }
}

/// What a run left behind.
#[derive(Debug)]
pub struct Outcome {
    /// How the program ended.
    pub status: ExitStatus,
    /// The stats region's last state (none if the program never published
    /// it: it never loaded corral, or the region could not be made).
    pub stats: Option<StatsSnapshot>,
    /// The decision log, where [`Collect::WithLog`] asked for it and no
    /// file took it.
    pub log: Option<MemoryLog>,
    /// Whether the program was lent a stats region (not where it loads no
    /// preload, nor where the region could not be reserved: said at start).
    pub region_lent: bool,
    /// The program's `/proc/PID/maps` at its exit (where it kept a lock
    /// profile), to name the profile's addresses.
    pub maps: Option<String>,
    /// From just before the spawn to the reaping.
    pub wall: Duration,
    /// User plus system CPU time of the program and of the descendants it
    /// waited for (the `RUSAGE_CHILDREN` difference over the run: this
    /// process reaps no other child meanwhile).
    pub cpu: Duration,
}

/// How the program's output is handled.
#[derive(Debug)]
pub enum Output {
    /// Shares corral's stdout and stderr.
    Inherit,
    /// stdout is captured and returned.
    Capture,
    /// stdout goes to `/dev/null` (a compressor's output in a benchmark).
    Null,
}

/// How a program is started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spawn {
    /// Every run alike, with or without corral: fork, register with the
    /// watcher (this crate's `watcher` module) in the child, exec. What
    /// benchmarks use, so that the columns they compare pay the same start.
    Uniform,
    /// For a program the preloaded library loads into (the caller checked:
    /// [`crate::elf::loads_preloads`]): vfork and exec at once
    /// (`posix_spawn`); corral hands the program to the watcher, and the
    /// library waits at load until the watcher holds it. Sooner than a fork
    /// of corral. Without a preload, as [`Spawn::Uniform`].
    Direct,
}

/// What is read back from a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collect {
    /// The exit status, times, stats and lock maps.
    Everything,
    /// As [`Collect::Everything`], and the decision log kept in memory
    /// where no file was given for it (`corral run`'s report).
    WithLog,
    /// The exit status and times only (`corral run --quiet` with no
    /// report reads nothing else).
    StatusOnly,
}

/// How benchmarks start every run: alike, and everything read back.
pub const UNIFORM: (Spawn, Collect) = (Spawn::Uniform, Collect::Everything);

/// Runs `prog` under the preload with `cfg` (or without corral when
/// `preload` is `None`), waits for it, and collects its stats region.
pub fn launch(
    cfg: &RuntimeConfig,
    preload: Option<&Path>,
    prog: &[std::ffi::OsString],
    events: Option<&Path>,
    output: Output,
) -> Result<(Outcome, Vec<u8>), CliError> {
    launch_observed(cfg, preload, prog, events, output, UNIFORM, &|_| {})
}

/// The machine's topology as [`ENV_TOPOLOGY`] carries it: read from sysfs
/// once per CLI process (a benchmark launches hundreds of runs), not by
/// every process that starts a monitor.
fn encoded_topology() -> Option<&'static str> {
    static TOPOLOGY: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    TOPOLOGY
        .get_or_init(|| {
            corral_runtime::topology::read_sysfs()
                .ok()
                .map(|t| corral_runtime::topology::encode(&t))
        })
        .as_deref()
}

/// The CPUs this process may use, once per CLI process.
fn cpus() -> Option<usize> {
    static CPUS: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().ok().map(|n| n.get()))
}

/// [`launch`], calling `on_spawn` with the child's pid as soon as it exists
/// (the kernel-lock monitor starts tracking it there).
pub fn launch_observed(
    cfg: &RuntimeConfig,
    preload: Option<&Path>,
    prog: &[std::ffi::OsString],
    events: Option<&Path>,
    output: Output,
    (spawn, collect): (Spawn, Collect),
    on_spawn: &dyn Fn(i32),
) -> Result<(Outcome, Vec<u8>), CliError> {
    let (name, args) = prog
        .split_first()
        .ok_or_else(|| CliError("no program given".into()))?;
    // The program dies with corral through the watcher, not through a
    // parent-death signal that it would see (PR_GET_PDEATHSIG). Forked
    // first: before the on-CPU table's loading grows this process, which
    // would make the fork slower.
    let mut watcher = Watcher::start()
        .map_err(|e| CliError(format!("cannot start corral's watcher process: {e}")))?;
    let mut cmd = Command::new(name);
    cmd.args(args);
    let mut oncpu_fd = None;
    let mut region = None;
    if let Some(lib) = preload {
        // The shim only where the full library's TLS size is known: its
        // late dlopen needs that room (see static_tls).
        let shim = shim_beside(lib).zip(crate::static_tls::need_of(lib).ok());
        let with_shim = shim.is_some();
        let first = match shim {
            Some((shim, need)) => {
                cmd.env(ENV_SHIM_TARGET, std::path::absolute(lib)?);
                cmd.env(
                    "GLIBC_TUNABLES",
                    crate::static_tls::tunables_with_room(
                        std::env::var_os("GLIBC_TUNABLES").as_deref(),
                        need,
                    ),
                );
                shim
            }
            None => lib.to_path_buf(),
        };
        cmd.env(
            "LD_PRELOAD",
            preload_list(std::env::var_os("LD_PRELOAD"), &first),
        );
        for (k, v) in cfg.to_env() {
            cmd.env(k, v);
        }
        cmd.env(ENV_PARENT_PID, std::process::id().to_string());
        if let Some(topo) = encoded_topology() {
            cmd.env(ENV_TOPOLOGY, topo);
        }
        if let Ok(name) = corral_runtime::config::ENV_TSC_Q32_C.to_str() {
            cmd.env(name, crate::tsc::calibration_q32().to_string());
        }
        // The log is written into the region and taken out here.
        match events.is_some() || collect == Collect::WithLog {
            true => cmd.env(ENV_EVENTS, "1"),
            false => cmd.env_remove(ENV_EVENTS),
        };
        if let Some(n) = cpus() {
            if let Ok(name) = corral_runtime::config::ENV_CPUS_C.to_str() {
                cmd.env(name, n.to_string());
            }
        }
        // Only a shim maps the table (and closes the descriptor), and only
        // in a program that loads preloads: elsewhere it would stay open.
        let loads = resolve_program(name).is_some_and(|p| crate::elf::loads_preloads(&p));
        oncpu_fd = if with_shim && loads {
            crate::holder::child_fd()
        } else {
            None
        };
        // Likewise the stats region: the library maps it and closes it.
        if loads {
            region = crate::region::Region::make();
        }
    }
    match &oncpu_fd {
        Some(fd) => cmd.env(ENV_ONCPU_FD, fd.as_raw_fd().to_string()),
        None => cmd.env_remove(ENV_ONCPU_FD),
    };
    let stats_fd = region.as_ref().and_then(|r| r.child_fd());
    let stats_env = ENV_STATS_FD_C.to_str().unwrap_or_default();
    match &stats_fd {
        Some((_, value)) => cmd.env(stats_env, value),
        None => cmd.env_remove(stats_env),
    };
    let drain = region.as_ref().map(|r| {
        let sink = match (events, collect) {
            (Some(p), _) => crate::region::LogSink::file(p),
            (None, Collect::WithLog) => crate::region::LogSink::Memory(MemoryLog::default()),
            (None, _) => crate::region::LogSink::Discard,
        };
        r.start_drain(sink)
    });
    match output {
        Output::Inherit => {}
        Output::Capture => {
            cmd.stdout(Stdio::piped());
        }
        Output::Null => {
            cmd.stdout(Stdio::null());
        }
    }
    let forked = spawn == Spawn::Uniform || preload.is_none();
    let start_fd = match &watcher {
        Some(w) if forked => {
            w.register_in_child(&mut cmd);
            None
        }
        Some(w) => w.start_for_spawn(),
        None => None,
    };
    let start_vars = [ENV_START_FD_C, ENV_START_LINK_C].map(|c| OsStr::from_bytes(c.to_bytes()));
    match &start_fd {
        Some((fd, link)) => {
            cmd.env(start_vars[0], fd.as_raw_fd().to_string());
            cmd.env(start_vars[1], link);
        }
        None => {
            cmd.env_remove(start_vars[0]);
            cmd.env_remove(start_vars[1]);
        }
    }
    signals::forward_to_program();
    let cpu_before = children_cpu();
    let started = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| CliError(format!("cannot start '{}': {e}", name.to_string_lossy())))?;
    // The child has its copies (or failed to start): these go now, so that
    // no later child inherits them.
    drop(oncpu_fd);
    drop(stats_fd);
    drop(start_fd);
    let pid = child.id() as i32;
    if let Some(r) = &region {
        r.register(pid);
    }
    if let Some(w) = &mut watcher {
        w.program_spawned();
        if !forked {
            w.hand_over(pid);
        }
    }
    signals::program_started(pid);
    on_spawn(pid);
    let out = child.wait_with_output();
    let wall = started.elapsed();
    let cpu = children_cpu().saturating_sub(cpu_before);
    // Reaped after the measure (its CPU is not the program's). A program
    // not reaped is killed by it, as if corral had died.
    if let Some(w) = watcher {
        if out.is_ok() {
            w.finish();
        } else {
            drop(w);
        }
    }
    signals::program_ended();
    let log = drain.and_then(crate::region::Drain::finish);
    let region_lent = region.is_some();
    let (stats, maps) = match (&region, collect) {
        (Some(r), Collect::Everything | Collect::WithLog) => (r.snapshot(), r.maps()),
        _ => (None, None),
    };
    if let Some(r) = region {
        r.unregister(pid);
    }
    let out =
        out.map_err(|e| CliError(format!("waiting for '{}': {e}", name.to_string_lossy())))?;
    Ok((
        Outcome {
            status: out.status,
            stats,
            log,
            region_lent,
            maps,
            wall,
            cpu,
        },
        out.stdout,
    ))
}

/// User plus system CPU time of this process's reaped children so far.
fn children_cpu() -> Duration {
    // SAFETY: a zeroed rusage is valid, and getrusage only writes into it.
    let ru = unsafe {
        let mut ru: libc::rusage = core::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn existing_preloads_keep_their_place_before_corrals() {
        let lib = Path::new("/x/libcorral_preload.so");
        assert_eq!(preload_list(None, lib), "/x/libcorral_preload.so");
        assert_eq!(
            preload_list(Some("".into()), lib),
            "/x/libcorral_preload.so"
        );
        assert_eq!(
            preload_list(Some("/a.so:/b.so".into()), lib),
            "/a.so:/b.so:/x/libcorral_preload.so"
        );
    }
}
