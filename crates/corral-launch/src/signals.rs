//! Passing signals and exit status through `corral run`: a signal sent to
//! corral reaches the program, and corral dies of the signal that killed
//! the program (the program dies with corral if corral is killed outright:
//! see `watcher`).
//! A shell, systemd or docker then sees what it would see without corral.
//! `corral attach` catches the signals that ask it to stop, undoes its
//! placement, then dies of the signal.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signals forwarded to the program. SIGSTOP/SIGKILL cannot be caught;
/// job-control stops reach the program through its process group.
const FORWARDED: [libc::c_int; 7] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
];

/// The program's pidfd (or, where pidfds are missing, its pid as `-pid`);
/// 0 before it starts. Both statics are shared with a signal handler, so
/// every access is SeqCst: the handler and the main thread agree on one
/// order of "program started" and "signal pending".
static TARGET: AtomicI32 = AtomicI32::new(0);
/// A signal that arrived before the program existed, forwarded at start.
static PENDING: AtomicI32 = AtomicI32::new(0);

/// Installs the forwarding handlers (before the program starts).
pub fn forward_to_program() {
    for sig in FORWARDED {
        // SAFETY: a zeroed sigaction is valid; the handler is async-signal-safe.
        unsafe {
            let mut act: libc::sigaction = core::mem::zeroed();
            act.sa_sigaction = forward as *const () as libc::sighandler_t;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, core::ptr::null_mut());
        }
    }
}

/// Names the program the handlers forward to. A pidfd cannot reach another
/// process once the program is reaped and its pid reused; a pid can.
pub fn program_started(pid: i32) {
    // SAFETY: pidfd_open takes a pid and flags; a failure returns -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    TARGET.store(if fd >= 0 { fd } else { -pid }, Ordering::SeqCst);
    let sig = PENDING.swap(0, Ordering::SeqCst);
    if sig != 0 {
        send(sig);
    }
}

/// Stops forwarding (the program has been reaped).
pub fn program_ended() {
    let target = TARGET.swap(0, Ordering::SeqCst);
    if target > 0 {
        // SAFETY: closes the pidfd this module opened and nothing else uses.
        unsafe { libc::close(target) };
    }
}

extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let code = unsafe { (*info).si_code };
    // A terminal's signal (Ctrl-C) went to the whole foreground group, the
    // program included: sending it again would deliver it twice.
    if code == libc::SI_KERNEL {
        return;
    }
    if TARGET.load(Ordering::SeqCst) == 0 {
        PENDING.store(sig, Ordering::SeqCst);
    } else {
        send(sig);
    }
}

/// Async-signal-safe: two system calls.
fn send(sig: libc::c_int) {
    let target = TARGET.load(Ordering::SeqCst);
    if target > 0 {
        // SAFETY: `target` is a pidfd this module owns; no siginfo is passed.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                target,
                sig,
                core::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
    } else if target < 0 {
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(-target, sig) };
    }
}

/// PROG's exit code as a shell reports it (128 + signal when killed).
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// Ends corral as the program ended: with its exit code, or killed by the
/// same signal (without a core file of corral's own).
pub fn exit_like(status: ExitStatus) -> ! {
    if let Some(sig) = status.signal() {
        die_of(sig);
    }
    flush();
    std::process::exit(exit_code(status))
}

fn flush() {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
}

/// Ends corral killed by `sig`, as a shell or systemd expects of a process
/// told to stop by it (without a core file of corral's own); exits with
/// 128 + `sig` only if the signal does not end it.
pub fn die_of(sig: libc::c_int) -> ! {
    flush();
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain system calls on this process with valid arguments;
    // the signal's default action ends it here.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = core::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, core::ptr::null_mut());
        libc::raise(sig);
    }
    std::process::exit(128 + sig)
}

/// The signals that ask `corral attach` to stop: it undoes its placement
/// first, then dies of the signal.
const STOPPING: [libc::c_int; 3] = [libc::SIGHUP, libc::SIGINT, libc::SIGTERM];

/// The first stopping signal caught; 0 before one arrives.
static STOP_REQUESTED: AtomicI32 = AtomicI32::new(0);

/// Catches SIGHUP, SIGINT and SIGTERM into [`stop_requested`] instead of
/// dying at once, so the caller can undo what it did to another process.
/// A signal ignored already stays ignored (`nohup`, a background job's
/// SIGINT).
pub fn catch_stop_signals() {
    for sig in STOPPING {
        // SAFETY: a zeroed sigaction is valid; the handler is async-signal-safe;
        // `old` is written by the kernel before it is read.
        unsafe {
            let mut old: libc::sigaction = core::mem::zeroed();
            if libc::sigaction(sig, core::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut act: libc::sigaction = core::mem::zeroed();
            act.sa_sigaction = note_stop as *const () as libc::sighandler_t;
            act.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, core::ptr::null_mut());
        }
    }
}

/// The stopping signal caught so far, if any.
pub fn stop_requested() -> Option<libc::c_int> {
    // Relaxed: the value is all the handler passes on; a poll loop reads it.
    match STOP_REQUESTED.load(Ordering::Relaxed) {
        0 => None,
        sig => Some(sig),
    }
}

extern "C" fn note_stop(sig: libc::c_int) {
    // The first signal decides how corral ends; Relaxed as in `stop_requested`.
    let _ = STOP_REQUESTED.compare_exchange(0, sig, Ordering::Relaxed, Ordering::Relaxed);
}
