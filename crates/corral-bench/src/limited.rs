//! A run with a watchdog: every bench that runs real programs kills one
//! that overstays its limit, through a pidfd so no other process can be hit.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use corral_launch::launch::{launch_observed, Output, UNIFORM};
use corral_launch::CliError;
use corral_runtime::config::RuntimeConfig;

/// [`launch_observed`] with a watchdog that kills the program after
/// `limit`; the flag says whether it did.
pub(crate) fn launch_limited(
    cfg: &RuntimeConfig,
    lib: Option<&Path>,
    argv: &[std::ffi::OsString],
    output: Output,
    limit: Duration,
) -> Result<(corral_launch::launch::Outcome, Vec<u8>, bool), CliError> {
    let (fd_tx, fd_rx) = mpsc::channel::<i32>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || -> bool {
        let Ok(fd) = fd_rx.recv() else {
            return false; // never started
        };
        let fired = matches!(
            done_rx.recv_timeout(limit),
            Err(mpsc::RecvTimeoutError::Timeout)
        );
        if fired {
            // SAFETY: fd is a pidfd this thread owns; a pidfd names one
            // process, so a program already reaped gets nothing and no other
            // process can get the signal.
            unsafe {
                libc::syscall(libc::SYS_pidfd_send_signal, fd, libc::SIGKILL, 0, 0);
            }
        }
        // SAFETY: closes the pidfd opened for this thread and nothing else.
        unsafe { libc::close(fd) };
        fired
    });
    // The pidfd is opened at the spawn, before the program can be reaped,
    // so the watchdog can never signal another process that reused its pid.
    let on_spawn = |pid: i32| {
        // SAFETY: pidfd_open takes a pid and flags; a failure returns -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
        if fd >= 0 {
            let _ = fd_tx.send(fd);
        }
    };
    let result = launch_observed(cfg, lib, argv, None, output, UNIFORM, &on_spawn);
    drop(fd_tx);
    let _ = done_tx.send(());
    let fired = watchdog.join().unwrap_or(false);
    let (outcome, stdout) = result?;
    Ok((outcome, stdout, fired))
}
