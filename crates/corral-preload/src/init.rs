//! Start and end of the library in a process: the constructor that starts
//! the monitor, the fork handler and the exit flush.

use core::ffi::c_int;
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

use corral_runtime::config::{RuntimeConfig, ENV_EVENTS, ENV_PARENT_PID_C};
use corral_runtime::stats::StatsMap;
use corral_runtime::{monitor_thread, registry};

use crate::glibc::real;

/// Set in a forked child: its monitor does not exist.
static FORKED: AtomicBool = AtomicBool::new(false);

/// This is the process `corral run` started (see [`is_root_process`]).
static ROOT: AtomicBool = AtomicBool::new(false);

/// Where this process stands with its monitor. It starts at the first
/// `pthread_create`: a process that never makes a second thread (most of
/// what a shell script execs) pays for no monitor and no ticks; one whose
/// waits never call for a look, for no monitor thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum MonitorState {
    /// No monitor, and none will start: the configuration was refused, the
    /// start failed, or this is a fork child of a process whose monitor ran.
    Off = 0,
    /// Configured; waits for the process's second thread.
    Pending = 1,
    /// The first `pthread_create` is starting it, just after the program's
    /// thread (its own thread's create passes straight through).
    Starting = 2,
    /// Started: armed, its thread started at the first ring, or (policy
    /// ca) running from here (see `monitor_thread::start`).
    Running = 3,
}

static STATE: AtomicU8 = AtomicU8::new(MonitorState::Off as u8);

/// The configuration read at load, for the monitor's start.
static CONFIG: OnceLock<RuntimeConfig> = OnceLock::new();

/// The stats region published at load by the process `corral run` started
/// (so that `corral run` can tell a program that never loaded corral from
/// one that never made a second thread), with the pid that published it.
static STATS: Mutex<Option<(i32, StatsMap)>> = Mutex::new(None);

extern "C" fn after_fork_in_child() {
    FORKED.store(true, Ordering::Relaxed); // Relaxed: single-threaded here.
    registry::reset_after_fork();
    crate::cond::after_fork_in_child();
    corral_runtime::lockprof::detach();
    monitor_thread::after_fork_in_child();
    // A child of a process whose monitor ran has none: the monitor's state
    // was copied mid-flight. A child of one still waiting may start its own.
    // Relaxed: single-threaded here.
    if STATE.load(Ordering::Relaxed) != MonitorState::Pending as u8 {
        STATE.store(MonitorState::Off as u8, Ordering::Relaxed);
    }
}

/// One line to `corral run`: corral keeps running the program without a
/// policy.
fn degrade(why: &str) {
    corral_runtime::channel::say(&format!(
        "corral: {why}; the program runs on corral's locks without the policy"
    ));
}

/// What every process pays at load, most of them short-lived execs that
/// never make a thread: the fork handler and a look at the environment,
/// without allocating or entering the dynamic linker. The configuration is
/// read, and glibc's functions found, when the process makes its second
/// thread; only the process `corral run` started reads it now, for its
/// stats region.
extern "C" fn on_load() {
    wait_for_watcher();
    // SAFETY: registering a plain function pointer; no other arguments.
    unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
    adopt_parent_calibration();
    if let Some(n) = env_decimal(corral_runtime::config::ENV_CPUS_C) {
        corral_runtime::waiting::set_cpus(n.min(u64::from(u32::MAX)) as u32);
    }
    if is_root_process() {
        adopt_oncpu_table();
        ROOT.store(true, Ordering::Relaxed); // Relaxed: read at exit by this process.
                                             // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        // First: the configuration's refusal is said through its channel.
        let stats = corral_runtime::stats::adopt_inherited(pid);
        if let Some(channel) = corral_runtime::channel::current() {
            channel.set_threads_made_before_load(shim_threads_made());
        }
        let Some(cfg) = read_config() else { return };
        if let Some(mut map) = stats {
            corral_runtime::lockprof::attach(&mut map);
            *lock_stats() = Some((pid, map));
        }
        let _ = CONFIG.set(cfg);
    }
    // Release: a thread that sees Pending sees CONFIG and STATS.
    STATE.store(MonitorState::Pending as u8, Ordering::Release);
}

/// The threads this process made while the shim deferred this library's
/// load (0 without a shim, or loaded at the first call).
fn shim_threads_made() -> u32 {
    // SAFETY: RTLD_DEFAULT and a NUL-terminated name.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"corral_shim_threads_made".as_ptr()) };
    if f.is_null() {
        return 0;
    }
    // SAFETY: the shim exports this name as `extern "C" fn() -> u32`.
    let made = unsafe { core::mem::transmute::<*mut libc::c_void, extern "C" fn() -> u32>(f) };
    made()
}

/// Uses the on-CPU table the shim mapped at its load, where it did (see
/// `corral_runtime::oncpu`): lock waiters then follow their holder's run
/// state. Only the process `corral run` started has one (its forks keep
/// the mapping).
fn adopt_oncpu_table() {
    // SAFETY: RTLD_DEFAULT and a NUL-terminated name.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"corral_shim_oncpu_table".as_ptr()) };
    if f.is_null() {
        return;
    }
    // SAFETY: the shim exports this name as `extern "C" fn() -> *const u64`.
    let table =
        unsafe { core::mem::transmute::<*mut libc::c_void, extern "C" fn() -> *const u64>(f) }();
    // SAFETY: the shim's table is null or a read-only mapping of
    // ONCPU_BYTES that is never unmapped.
    unsafe { corral_runtime::oncpu::adopt(table) };
}

/// Takes the TSC calibration `corral run` passed down, if it is there and
/// sane: a process then never spins to calibrate (250 us of CPU, a fifth of
/// what a short process paid for corral). Read without allocating.
fn adopt_parent_calibration() {
    if let Some(q32) = env_decimal(corral_runtime::config::ENV_TSC_Q32_C) {
        corral_locks::sys::clock::adopt_calibration(q32);
    }
}

/// The configuration from the environment, applied to the waiters; `None`
/// (after one line on stderr) when it is refused.
fn read_config() -> Option<RuntimeConfig> {
    match RuntimeConfig::from_env() {
        Ok(cfg) => {
            registry::set_waiting(cfg.waiting);
            Some(cfg)
        }
        Err(e) => {
            degrade(&e.to_string());
            None
        }
    }
}

fn lock_stats() -> std::sync::MutexGuard<'static, Option<(i32, StatsMap)>> {
    STATS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether the monitor waits for its start: the process's first
/// `pthread_create` starts it.
#[inline]
fn monitor_pending() -> bool {
    // Acquire: pairs with on_load's Release (CONFIG, STATS).
    STATE.load(Ordering::Acquire) == MonitorState::Pending as u8
}

#[cold]
fn start_monitor() {
    if STATE
        .compare_exchange(
            MonitorState::Pending as u8,
            MonitorState::Starting as u8,
            Ordering::Acquire, // as in monitor_pending
            Ordering::Relaxed,
        )
        .is_err()
    {
        return;
    }
    let Some(cfg) = CONFIG.get().cloned().or_else(read_config) else {
        STATE.store(MonitorState::Off as u8, Ordering::Relaxed);
        return;
    };
    // SAFETY: getpid has no preconditions (and is right after a fork).
    let pid = unsafe { libc::getpid() };
    let stats = match lock_stats().take() {
        Some((owner, map)) if owner == pid => Some(map),
        // Made by the parent before it forked us: the parent's to write.
        Some((_, map)) => {
            core::mem::forget(map);
            None
        }
        None => None,
    };
    let events = is_root_process() && std::env::var_os(ENV_EVENTS).is_some_and(|v| v == "1");
    let started = monitor_thread::start(cfg, stats, events);
    let state = match started {
        Ok(()) => MonitorState::Running,
        Err(e) => {
            degrade(&e.0);
            MonitorState::Off
        }
    };
    STATE.store(state as u8, Ordering::Release); // Release: nothing reads it for data
}

type CreateFn = unsafe extern "C" fn(
    *mut libc::pthread_t,
    *const libc::pthread_attr_t,
    extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    *mut libc::c_void,
) -> c_int;

static REAL_CREATE: OnceLock<CreateFn> = OnceLock::new();

/// glibc's `pthread_create`, past this library.
fn real_create() -> CreateFn {
    *REAL_CREATE.get_or_init(|| {
        // SAFETY: a NUL-terminated name; RTLD_NEXT searches past this library.
        let p = unsafe { libc::dlsym(libc::RTLD_NEXT, c"pthread_create".as_ptr()) };
        if p.is_null() {
            corral_runtime::channel::say("corral: cannot find glibc's pthread_create");
            // SAFETY: abort has no preconditions and does not return.
            unsafe { libc::abort() }
        }
        // SAFETY: glibc's pthread_create has exactly this signature.
        unsafe { core::mem::transmute::<*mut libc::c_void, CreateFn>(p) }
    })
}

/// `pthread_create`, interposed only to start the monitor when the process
/// makes its second thread; the thread itself is glibc's.
///
/// The monitor starts just after that thread, not before it, and only
/// arms: its own thread waits for the first ring (see
/// `corral_runtime::monitor_thread::start`). Any thread made in the program's
/// burst of creates delays the burst: made before the program's first,
/// git grep --threads=2 ran at 0.89-0.92x of its speed without corral, made
/// just after it 0.93-0.97x; made at the first ring, after the burst, none.
///
/// # Safety
///
/// As glibc's `pthread_create`.
#[no_mangle]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    start: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    arg: *mut libc::c_void,
) -> c_int {
    let first = monitor_pending();
    if first {
        // Found before the program's thread exists, so that none of its
        // lock calls enters the dynamic linker (which may allocate).
        let _ = real();
    }
    // Relaxed: both written by this process's load or its fork handler.
    if ROOT.load(Ordering::Relaxed) && !FORKED.load(Ordering::Relaxed) {
        if let Some(channel) = corral_runtime::channel::current() {
            channel.thread_made();
        }
    }
    // SAFETY: the caller's arguments, passed on unchanged.
    let rc = unsafe { real_create()(thread, attr, start, arg) };
    if first {
        start_monitor();
    }
    rc
}

/// Starts the monitor where the process made its threads before this
/// library loaded: `libcorral_shim.so` calls it after a load that
/// `corral run --load-after-contended` deferred until contention, when
/// the program's threads are already running (glibc made them, so the
/// first `pthread_create`, which starts the monitor, was never seen here).
#[no_mangle]
pub extern "C" fn corral_preload_late_start() {
    if monitor_pending() {
        // Found now, so that no lock call of the running threads enters
        // the dynamic linker (which may allocate).
        let _ = real();
        start_monitor();
    }
}

/// The process `corral run` started (not a grandchild that inherited the
/// environment): it alone writes the stats region and the decision log.
/// Read without allocating: it runs at every exec.
fn is_root_process() -> bool {
    let parent = env_decimal(ENV_PARENT_PID_C).and_then(|p| i32::try_from(p).ok());
    // SAFETY: getppid has no preconditions.
    parent.is_some_and(|p| p == unsafe { libc::getppid() })
}

/// In the process `corral run` spawned without a step between fork and
/// exec: waits until corral's watcher holds it (and will kill it if corral
/// dies), which the watcher says with a byte on the start pipe named in
/// the environment (corral-launch's `watcher`). A pipe closed without it
/// means corral died before it could hand this process over: it exits as
/// if killed with corral. The byte is looked at, not read, so that every
/// process that finds the pipe finds it; the descriptor is then closed,
/// and a later exec (or the shim, which does the same) finds none. Checked
/// whether or not corral is still this process's parent. Read without
/// allocating: every exec under `corral run` runs it.
fn wait_for_watcher() {
    let Some(fd) =
        env_decimal(corral_runtime::config::ENV_START_FD_C).and_then(|n| i32::try_from(n).ok())
    else {
        return;
    };
    // SAFETY: a NUL-terminated name; getenv allocates nothing.
    let link = unsafe { libc::getenv(corral_runtime::config::ENV_START_LINK_C.as_ptr()) };
    if link.is_null() {
        return;
    }
    // SAFETY: getenv returned a NUL-terminated string that lives as long as
    // the environment is not modified (nothing else runs at load).
    let link = unsafe { core::ffi::CStr::from_ptr(link) }.to_bytes();
    if !fd_link_is(fd, link) {
        return;
    }
    let mut ready = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let mut waiting: c_int = 0;
    // SAFETY: poll on one live pollfd, then FIONREAD into a live int, then
    // close of the descriptor corral passed this process for it.
    unsafe {
        while libc::poll(&mut ready, 1, -1) < 0 && *libc::__errno_location() == libc::EINTR {}
        libc::ioctl(fd, libc::FIONREAD, &mut waiting);
        libc::close(fd);
    }
    if waiting <= 0 {
        // SAFETY: _exit has no preconditions and does not return.
        unsafe { libc::_exit(128 + libc::SIGKILL) };
    }
}

/// Whether descriptor `fd`'s link in `/proc/self/fd` reads `want`; the
/// shim's `sys::fd_link_is` is its twin. Without allocating.
fn fd_link_is(fd: i32, want: &[u8]) -> bool {
    const PREFIX: &[u8] = b"/proc/self/fd/";
    let Ok(mut n) = u32::try_from(fd) else {
        return false;
    };
    let mut digits = [0u8; 10];
    let mut len = 0;
    for d in digits.iter_mut() {
        *d = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // The prefix, the digits (most significant first), a NUL.
    let mut path = [0u8; PREFIX.len() + 11];
    path[..PREFIX.len()].copy_from_slice(PREFIX);
    for (slot, d) in path[PREFIX.len()..]
        .iter_mut()
        .zip(digits[..len].iter().rev())
    {
        *slot = *d;
    }
    let mut buf = [0u8; 64];
    // SAFETY: a NUL-terminated path and a live buffer of its length.
    let got = unsafe { libc::readlink(path.as_ptr().cast(), buf.as_mut_ptr().cast(), buf.len()) };
    usize::try_from(got).is_ok_and(|got| buf.get(..got) == Some(want))
}

/// The environment variable `name` as a decimal number: `None` if unset,
/// empty, not all digits, or past u64. Read without allocating: every exec
/// runs it.
fn env_decimal(name: &core::ffi::CStr) -> Option<u64> {
    // SAFETY: a NUL-terminated name; getenv allocates nothing.
    let raw = unsafe { libc::getenv(name.as_ptr()) };
    if raw.is_null() {
        return None;
    }
    // SAFETY: getenv returned a NUL-terminated string that lives as long as
    // the environment is not modified (nothing else runs at load).
    parse_decimal(unsafe { core::ffi::CStr::from_ptr(raw) }.to_bytes())
}

/// A decimal number, parsed here rather than by `str::parse`: every exec
/// runs it, and each std function it enters is another code page to fault
/// in.
fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        if !d.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

extern "C" fn on_unload() {
    if FORKED.load(Ordering::Relaxed) {
        return;
    }
    // Asked before the path is built: a raw-cloned child must not allocate
    // here (its parent's other threads may have held malloc's lock at the
    // clone). Only the process corral run started attaches the profile, so
    // the others skip the question.
    // Relaxed: written by this process's own load.
    let maps = ROOT.load(Ordering::Relaxed) && corral_runtime::lockprof::saves_maps();
    let after: Option<fn()> = maps.then_some(save_maps);
    // Relaxed: this thread's own view suffices; final_flush checks the pid.
    if STATE.load(Ordering::Relaxed) == MonitorState::Running as u8 {
        monitor_thread::final_flush(after);
    } else if let Some(after) = after {
        after();
    }
}

/// The lock profile's copy of the memory map, for its callers' names.
fn save_maps() {
    corral_runtime::lockprof::save_maps();
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

#[used]
#[link_section = ".fini_array"]
static ON_UNLOAD: extern "C" fn() = on_unload;
