//! The program dies with corral, killed or not, without a parent-death
//! signal of its own.
//!
//! `PR_SET_PDEATHSIG` on the program would be visible to it
//! (`PR_GET_PDEATHSIG` reads 9 where a program run by hand reads 0), and
//! one that arms its own would take corral's off. Instead corral forks a
//! watcher before it starts the program: a child of corral, not of the
//! program, in a process group of its own (the terminal's signals miss
//! it), holding none of corral's descriptors but its two own, named so
//! that `pkill corral` and `pkill -f corral` miss it too. It gets the
//! program's pidfd and blocks on a socket whose other end only corral
//! holds: end-of-file there before corral said "done" means corral is
//! gone (SIGKILL included), and the watcher SIGKILLs the program. A pidfd
//! names one process: once the program is reaped it reaches nothing, and
//! never a process that took its pid.
//!
//! The program waits, before any code of its own runs, until the watcher
//! holds its pidfd, so that corral killed at any moment of the start
//! leaves no program behind. A program corral forks and execs (a static
//! one; every benchmark run) registers itself between fork and exec. One
//! spawned without that step is handed over by corral, and the preloaded
//! library waits at load on the start pipe named in its environment
//! ([`ENV_START_FD_C`]). Where no library loads (a set-user-ID program)
//! nothing waits: corral killed between its spawn and the hand-over
//! leaves that program running.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::OnceLock;

pub(crate) use corral_runtime::config::{ENV_START_FD_C, ENV_START_LINK_C};

/// Sent with the program's pidfd: hold it, let the program go.
const HOLD: u8 = b'P';
/// No pidfd could be made: let the program go unwatched.
const UNWATCHED: u8 = b'U';
/// corral reaped the program: exit without a signal.
const DONE: u8 = b'D';
/// Written to the start pipe once the pidfd is held.
const GO: u8 = b'g';

/// The watcher's name, for `ps` and `/proc/PID/comm` (15 bytes at most).
const NAME: &core::ffi::CStr = c"run-watcher";

/// A running watcher, owned by the launch that forked it.
#[derive(Debug)]
pub(crate) struct Watcher {
    pid: libc::pid_t,
    /// corral's end of the socket pair (close-on-exec); `None` once closed.
    ctl: Option<OwnedFd>,
    /// The start pipe's read end (close-on-exec), until the program is
    /// started.
    start: Option<OwnedFd>,
}

/// Whether this kernel makes pidfds (Linux 5.3+); asked once per process,
/// with one line on stderr where not.
fn pidfds_work() -> bool {
    static WORK: OnceLock<bool> = OnceLock::new();
    *WORK.get_or_init(|| {
        // SAFETY: getpid has no preconditions.
        match pidfd_open(unsafe { libc::getpid() }) {
            Some(fd) => {
                drop(fd);
                true
            }
            None => {
                eprintln!(
                    "corral: no pidfds here ({}): a program corral runs will not die \
                     with corral if corral is killed",
                    io::Error::last_os_error()
                );
                false
            }
        }
    })
}

/// `pidfd_open(pid, 0)`, close-on-exec; `None` on failure (errno set).
fn pidfd_open(pid: libc::pid_t) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags; a failure returns -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as RawFd;
    // SAFETY: a fresh descriptor, owned here.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Watcher {
    /// Forks the watcher; `Ok(None)` where the kernel makes no pidfds
    /// (the program then runs unwatched).
    pub(crate) fn start() -> io::Result<Option<Watcher>> {
        if !pidfds_work() {
            return Ok(None);
        }
        let mut pair = [-1; 2];
        // SAFETY: a two-int array for the new descriptors.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                pair.as_mut_ptr(),
            )
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh descriptors, owned here.
        let (ctl, theirs) =
            unsafe { (OwnedFd::from_raw_fd(pair[0]), OwnedFd::from_raw_fd(pair[1])) };
        let mut pipe = [-1; 2];
        // SAFETY: a two-int array for the new descriptors.
        if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh descriptors, owned here.
        let (start, go) = unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };
        // Prepared here: the forked child may not allocate.
        let title = Title::new();
        let (watch_ctl, watch_go) = (theirs.as_raw_fd(), go.as_raw_fd());
        // SAFETY: the child runs `watch`, which makes only async-signal-safe
        // calls on memory prepared before the fork, and never returns.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            watch(watch_ctl, watch_go, title.as_ref());
        }
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        // Only the watcher keeps the start pipe's write end and its socket
        // end: the program sees the pipe close if the watcher dies, and the
        // watcher sees the socket close when corral dies.
        drop(go);
        drop(theirs);
        Ok(Some(Watcher {
            pid,
            ctl: Some(ctl),
            start: Some(start),
        }))
    }

    /// Makes `cmd`'s child register with the watcher between fork and exec
    /// and wait until the watcher holds its pidfd (exiting as if killed if
    /// the watcher is gone first). For a program forked and exec'd.
    pub(crate) fn register_in_child(&self, cmd: &mut Command) {
        let (Some(ctl), Some(start)) = (&self.ctl, &self.start) else {
            return;
        };
        let (ctl, start) = (ctl.as_raw_fd(), start.as_raw_fd());
        // SAFETY: the closure runs in the child between fork and exec and
        // makes only async-signal-safe system calls on descriptors the
        // child inherited (both close at its exec).
        unsafe {
            cmd.pre_exec(move || {
                match pidfd_open(libc::getpid()) {
                    Some(fd) => send(ctl, HOLD, Some(fd.as_raw_fd())),
                    None => send(ctl, UNWATCHED, None),
                };
                if !wait_for_go(start) {
                    // SAFETY: _exit has no preconditions and does not return.
                    libc::_exit(128 + libc::SIGKILL);
                }
                Ok(())
            })
        };
    }

    /// An inheritable (not close-on-exec) copy of the start pipe's read
    /// end for a program spawned without a step between fork and exec,
    /// with what `/proc/self/fd/N` reads for it: the caller names both in
    /// the program's environment and drops the copy once it is started.
    pub(crate) fn start_for_spawn(&self) -> Option<(OwnedFd, String)> {
        let start = self.start.as_ref()?;
        // F_DUPFD, not F_DUPFD_CLOEXEC: the copy survives the exec.
        // SAFETY: duplicating a descriptor owned here.
        let dup = unsafe { libc::fcntl(start.as_raw_fd(), libc::F_DUPFD, 3) };
        if dup < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor, owned here.
        let dup = unsafe { OwnedFd::from_raw_fd(dup) };
        let link = std::fs::read_link(format!("/proc/self/fd/{}", dup.as_raw_fd())).ok()?;
        Some((dup, link.to_str()?.to_owned()))
    }

    /// The program exists (or failed to start): later children must not
    /// inherit the start pipe.
    pub(crate) fn program_spawned(&mut self) {
        self.start = None;
    }

    /// Hands the program, spawned without a step between fork and exec,
    /// to the watcher, which lets it go on from the preload's wait. Called
    /// before the program can be reaped, so the pidfd names it.
    pub(crate) fn hand_over(&self, pid: libc::pid_t) {
        let Some(ctl) = &self.ctl else { return };
        match pidfd_open(pid) {
            Some(fd) => send(ctl.as_raw_fd(), HOLD, Some(fd.as_raw_fd())),
            None => {
                eprintln!(
                    "corral: no pidfd for the program ({}): it will not die with corral \
                     if corral is killed",
                    io::Error::last_os_error()
                );
                send(ctl.as_raw_fd(), UNWATCHED, None)
            }
        };
    }

    /// The program is reaped: the watcher exits without a signal, and is
    /// reaped in turn (after the caller measured its children's CPU time).
    pub(crate) fn finish(self) {
        if let Some(ctl) = &self.ctl {
            send(ctl.as_raw_fd(), DONE, None);
        }
    }
}

impl Drop for Watcher {
    /// Closes corral's end (a watcher not told "done" SIGKILLs the program,
    /// as it would had corral died), then reaps the watcher, which exits at
    /// once: only this process's own child, by pid.
    fn drop(&mut self) {
        self.start = None;
        self.ctl = None;
        loop {
            // SAFETY: waits for this process's own child; no status is read.
            let r = unsafe { libc::waitpid(self.pid, core::ptr::null_mut(), 0) };
            if r >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
    }
}

/// Sends `kind` (and `fd`, if any) on the socket; a watcher already gone
/// is no error here (the start pipe tells the program). Async-signal-safe.
fn send(ctl: RawFd, kind: u8, fd: Option<RawFd>) {
    let mut byte = kind;
    let mut iov = libc::iovec {
        iov_base: (&raw mut byte).cast(),
        iov_len: 1,
    };
    let mut space = Cmsg::zeroed();
    // SAFETY: a zeroed msghdr is valid; the pointers set below are to
    // live locals, and the control buffer is CMSG_SPACE(4) bytes, aligned.
    unsafe {
        let mut msg: libc::msghdr = core::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if let Some(fd) = fd {
            msg.msg_control = (&raw mut space).cast();
            msg.msg_controllen = Cmsg::SPACE;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(4) as usize;
            libc::CMSG_DATA(cmsg).cast::<RawFd>().write_unaligned(fd);
        }
        // MSG_NOSIGNAL: corral keeps SIGPIPE's default action.
        while libc::sendmsg(ctl, &msg, libc::MSG_NOSIGNAL) < 0
            && *libc::__errno_location() == libc::EINTR
        {}
    }
}

/// What the watcher reads from corral's socket.
enum Message {
    /// The program's pidfd.
    Hold(RawFd),
    /// Let the program go unwatched.
    Unwatched,
    /// corral reaped the program.
    Done,
    /// corral is gone (end-of-file), or the socket failed.
    Gone,
}

/// Reads one message. Async-signal-safe.
fn receive(ctl: RawFd) -> Message {
    let mut byte = 0u8;
    let mut iov = libc::iovec {
        iov_base: (&raw mut byte).cast(),
        iov_len: 1,
    };
    let mut space = Cmsg::zeroed();
    // SAFETY: a zeroed msghdr is valid; its pointers are to live locals,
    // and the kernel writes at most `msg_controllen` bytes of control data.
    unsafe {
        let mut msg: libc::msghdr = core::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = (&raw mut space).cast();
        msg.msg_controllen = Cmsg::SPACE;
        let n = loop {
            let n = libc::recvmsg(ctl, &mut msg, libc::MSG_CMSG_CLOEXEC);
            if n >= 0 || *libc::__errno_location() != libc::EINTR {
                break n;
            }
        };
        if n <= 0 {
            return Message::Gone;
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        let fd = if !cmsg.is_null()
            && (*cmsg).cmsg_level == libc::SOL_SOCKET
            && (*cmsg).cmsg_type == libc::SCM_RIGHTS
        {
            libc::CMSG_DATA(cmsg).cast::<RawFd>().read_unaligned()
        } else {
            -1
        };
        match (byte, fd) {
            (HOLD, fd) if fd >= 0 => Message::Hold(fd),
            (DONE, _) => Message::Done,
            _ => Message::Unwatched,
        }
    }
}

const _: () = assert!(Cmsg::SPACE <= 32);

/// Room for one descriptor's control message, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct Cmsg([u8; 32]);

impl Cmsg {
    /// CMSG_SPACE(4): 24 bytes on 64-bit Linux.
    // SAFETY: CMSG_SPACE is arithmetic on its argument.
    const SPACE: usize = unsafe { libc::CMSG_SPACE(4) } as usize;

    fn zeroed() -> Cmsg {
        Cmsg([0; 32])
    }
}

/// Waits for the watcher's byte on the start pipe; false where the pipe
/// closed without it (the watcher is gone). Async-signal-safe.
fn wait_for_go(start: RawFd) -> bool {
    let mut byte = 0u8;
    loop {
        // SAFETY: reads one byte into a live local.
        let n = unsafe { libc::read(start, (&raw mut byte).cast(), 1) };
        if n == 1 {
            return true;
        }
        // SAFETY: reads this thread's errno.
        if n == 0 || unsafe { *libc::__errno_location() } != libc::EINTR {
            return false;
        }
    }
}

/// The watcher's command line, written over corral's own argument area
/// (`/proc/PID/cmdline`): found before the fork, where reading a file may
/// allocate.
struct Title {
    /// Where the argument area starts, and its new bytes (the name, then
    /// NULs to its end).
    area: Option<(u64, Vec<u8>)>,
}

impl Title {
    fn new() -> Title {
        static AREA: OnceLock<Option<(u64, u64)>> = OnceLock::new();
        let area = *AREA.get_or_init(|| {
            let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
            // Fields after the name, which may hold spaces: state is
            // field 3, arg_start and arg_end are fields 48 and 49.
            let (_, rest) = stat.rsplit_once(')')?;
            let mut fields = rest.split_whitespace().skip(45);
            let start: u64 = fields.next()?.parse().ok()?;
            let end: u64 = fields.next()?.parse().ok()?;
            (start < end).then_some((start, end))
        });
        Title {
            area: area.map(|(start, end)| {
                let len = usize::try_from(end - start).unwrap_or(0);
                let mut bytes = vec![0u8; len];
                let name = NAME.to_bytes();
                let n = name.len().min(len.saturating_sub(1));
                bytes[..n].copy_from_slice(&name[..n]);
                (start, bytes)
            }),
        }
    }

    fn as_ref(&self) -> Option<(u64, &[u8])> {
        self.area
            .as_ref()
            .map(|(start, bytes)| (*start, bytes.as_slice()))
    }
}

/// The watcher's whole life, in the forked child: only async-signal-safe
/// system calls (the parent may have had other threads, holding locks).
fn watch(ctl: RawFd, go: RawFd, title: Option<(u64, &[u8])>) -> ! {
    // SAFETY: system calls on this single-threaded child's own state, with
    // pointers to live locals and to memory prepared before the fork.
    unsafe {
        // Its own process group: the terminal's SIGINT, SIGQUIT and SIGTSTP
        // go to corral's group (corral and the program), not here.
        libc::setpgid(0, 0);
        quiet_signals();
        libc::prctl(libc::PR_SET_NAME, NAME.as_ptr());
        if let Some((start, bytes)) = title {
            // Through /proc/self/mem: a bad area fails the write, not the
            // watcher.
            let mem = libc::open(c"/proc/self/mem".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if mem >= 0 {
                libc::pwrite(
                    mem,
                    bytes.as_ptr().cast(),
                    bytes.len(),
                    start as libc::off_t,
                );
                libc::close(mem);
            }
        }
        close_all_but(ctl, go);
    }
    let mut go = Some(go);
    let mut held: RawFd = -1;
    loop {
        match receive(ctl) {
            Message::Hold(fd) => {
                if held < 0 {
                    held = fd;
                } else {
                    // SAFETY: a received descriptor, owned here.
                    unsafe { libc::close(fd) };
                }
                release(&mut go);
            }
            Message::Unwatched => release(&mut go),
            Message::Done => break,
            Message::Gone => {
                if held >= 0 {
                    // SAFETY: a pidfd this process holds; a process already
                    // reaped gets nothing (ESRCH), nor does any other.
                    unsafe {
                        libc::syscall(
                            libc::SYS_pidfd_send_signal,
                            held,
                            libc::SIGKILL,
                            core::ptr::null::<libc::siginfo_t>(),
                            0,
                        )
                    };
                }
                break;
            }
        }
    }
    // SAFETY: _exit has no preconditions and does not return.
    unsafe { libc::_exit(0) }
}

/// Lets the program go: one byte on the start pipe, which then closes.
fn release(go: &mut Option<RawFd>) {
    if let Some(fd) = go.take() {
        let byte = GO;
        // SAFETY: writes one byte from a live local to a descriptor owned
        // here (SIGPIPE is ignored: a program already gone makes it EPIPE).
        unsafe {
            libc::write(fd, (&raw const byte).cast(), 1);
            libc::close(fd);
        }
    }
}

/// The terminal's and job control's signals ignored, every other signal's
/// action the default (corral's forwarding handlers are not the
/// watcher's), none blocked.
///
/// # Safety
/// Called in the forked watcher only.
unsafe fn quiet_signals() {
    const IGNORED: [libc::c_int; 7] = [
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGPIPE,
        libc::SIGTSTP,
        libc::SIGTTIN,
        libc::SIGTTOU,
    ];
    // SAFETY: sigaction and sigprocmask on this process, with zeroed
    // (valid) structures; SIGKILL, SIGSTOP and glibc's reserved signals
    // are refused harmlessly.
    unsafe {
        for sig in 1..=64 {
            let mut act: libc::sigaction = core::mem::zeroed();
            act.sa_sigaction = if IGNORED.contains(&sig) {
                libc::SIG_IGN
            } else {
                libc::SIG_DFL
            };
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, core::ptr::null_mut());
        }
        let mut none: libc::sigset_t = core::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, core::ptr::null_mut());
    }
}

/// Closes every descriptor but `a` and `b`: the watcher keeps nothing of
/// corral's (its terminal, its output pipe, the program's table).
///
/// # Safety
/// Called in the forked watcher only.
unsafe fn close_all_but(a: RawFd, b: RawFd) {
    let (lo, hi) = (a.min(b) as u32, a.max(b) as u32);
    // `a` and `b` differ, so `hi` is at least 1.
    for (first, last) in [
        (0, lo.checked_sub(1)),
        (lo + 1, Some(hi - 1)),
        (hi + 1, Some(u32::MAX)),
    ] {
        let Some(last) = last.filter(|&last| first <= last) else {
            continue;
        };
        // SAFETY: closes descriptors of this process; none is in use.
        if unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) } == 0 {
            continue;
        }
        // Before Linux 5.9: one by one, up to the descriptor limit.
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into a live local.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
        let top = limit.rlim_cur.min(1 << 16) as u32;
        for fd in first..=last.min(top) {
            // SAFETY: as above.
            unsafe { libc::close(fd as RawFd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    fn watcher() -> Watcher {
        Watcher::start()
            .unwrap()
            .expect("a kernel with pidfds (Linux 5.3+)")
    }

    /// Polls `cond` every 10 ms for up to 10 s (an event awaited, not a timing).
    fn eventually(cond: impl Fn() -> bool) -> bool {
        (0..1000).any(|_| {
            let ok = cond();
            if !ok {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            ok
        })
    }

    fn spawn_registered(w: &mut Watcher, script: &str) -> std::process::Child {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        w.register_in_child(&mut cmd);
        let child = cmd.spawn().unwrap();
        w.program_spawned();
        child
    }

    #[test]
    fn a_watcher_not_told_done_kills_the_program() {
        let mut w = watcher();
        let mut child = spawn_registered(&mut w, "sleep 30");
        // What corral's death does: its end closes without "done".
        drop(w);
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
    }

    #[test]
    fn a_program_handed_over_after_its_spawn_is_killed_too() {
        let mut w = watcher();
        let (fd, link) = w.start_for_spawn().unwrap();
        assert!(link.starts_with("pipe:["), "{link}");
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        drop(fd);
        w.program_spawned();
        w.hand_over(child.id() as i32);
        drop(w);
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
    }

    #[test]
    fn done_leaves_the_program_be_and_no_watcher_behind() {
        let mut w = watcher();
        let pid = w.pid;
        let mut child = spawn_registered(&mut w, "sleep 0.2; exit 3");
        assert_eq!(child.wait().unwrap().code(), Some(3));
        w.finish();
        // Reaped by finish: no such child any more.
        // SAFETY: asks after a pid of this process's children; no status.
        let r = unsafe { libc::waitpid(pid, core::ptr::null_mut(), libc::WNOHANG) };
        assert_eq!(r, -1);
        assert_eq!(
            io::Error::last_os_error().raw_os_error(),
            Some(libc::ECHILD)
        );
    }

    #[test]
    fn without_its_watcher_a_program_never_runs() {
        let dir = std::env::temp_dir().join(format!("corral-watcher-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ran = dir.join("ran");
        let mut w = watcher();
        // SAFETY: kills this test's own watcher; Drop reaps it.
        unsafe { libc::kill(w.pid, libc::SIGKILL) };
        let script = format!("touch '{}'", ran.display());
        let mut child = spawn_registered(&mut w, &script);
        // Exited between fork and exec, as if killed with corral.
        assert_eq!(child.wait().unwrap().code(), Some(128 + libc::SIGKILL));
        assert!(!ran.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_watcher_keeps_to_itself() {
        let w = watcher();
        let pid = w.pid;
        let read = |what: &str| std::fs::read(format!("/proc/{pid}/{what}")).unwrap_or_default();
        assert!(eventually(|| read("comm") == b"run-watcher\n"));
        // Its command line no longer names corral (or this test).
        let cmdline = read("cmdline");
        assert!(cmdline.starts_with(b"run-watcher\0"), "{cmdline:?}");
        assert!(cmdline[b"run-watcher".len()..].iter().all(|&b| b == 0));
        // Its own process group: "pid (comm) state ppid pgrp ...".
        let stat = String::from_utf8(read("stat")).unwrap();
        let pgrp: i32 = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2)?.parse().ok())
            .unwrap();
        assert_eq!(pgrp, pid);
        // Nothing of this process's but its socket end and the start pipe.
        let links = || -> Vec<String> {
            std::fs::read_dir(format!("/proc/{pid}/fd"))
                .map(|d| {
                    d.flatten()
                        .filter_map(|e| std::fs::read_link(e.path()).ok())
                        .map(|l| l.to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default()
        };
        assert!(
            eventually(|| {
                let l = links();
                l.len() == 2
                    && l.iter()
                        .all(|l| l.starts_with("socket:[") || l.starts_with("pipe:["))
            }),
            "{:?}",
            links()
        );
        drop(w);
    }
}
