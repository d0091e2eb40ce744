//! corral's own files (the TSC calibration kept per boot, a decision log
//! asked for with `--events`): created in a directory only corral's user
//! can enter, or at the user's path, never through a link, never over a
//! file corral did not make, owner-only. (The program's stats are in a
//! region `corral run` lends it: see `crate::stats`.) corral often runs as root
//! in a world-writable `/dev/shm`: a predictable name there must not let
//! anyone plant a link that corral would follow and truncate.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Where the private directories live.
const BASE: &str = "/dev/shm";

/// Why corral refused to use a path.
#[derive(Debug)]
pub enum FileError {
    /// The path exists and is not what corral made: a link, another user's
    /// file or directory, or a directory others may enter.
    Unsafe {
        /// The path refused.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The operating system refused.
    Io {
        /// The path concerned.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileError::Unsafe { path, why } => {
                write!(f, "refusing {}: {why}", path.display())
            }
            FileError::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FileError::Unsafe { .. } => None,
            FileError::Io { source, .. } => Some(source),
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> FileError + '_ {
    move |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// This process's effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// corral's directory for this user: `/dev/shm/corral-<euid>`, mode 0700.
pub fn private_dir_path() -> PathBuf {
    Path::new(BASE).join(format!("corral-{}", euid()))
}

/// Creates (or checks) `dir` as a private directory: a real directory, not
/// a link, owned by the effective user, entered by nobody else. In a sticky
/// world-writable parent such a directory cannot be renamed or replaced by
/// others once it passed this check.
pub fn ensure_private_dir(dir: &Path) -> Result<(), FileError> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_err(dir)(e)),
    }
    // lstat: a link where the directory should be is refused, not followed.
    let md = fs::symlink_metadata(dir).map_err(io_err(dir))?;
    let unsafe_because = |why: String| FileError::Unsafe {
        path: dir.to_path_buf(),
        why,
    };
    if !md.file_type().is_dir() {
        return Err(unsafe_because("not a directory (a link or a file)".into()));
    }
    if md.uid() != euid() {
        return Err(unsafe_because(format!(
            "owned by uid {}, not {}",
            md.uid(),
            euid()
        )));
    }
    if md.mode() & 0o077 != 0 {
        return Err(unsafe_because(format!(
            "mode {:o} lets other users in (want 0700)",
            md.mode() & 0o777
        )));
    }
    Ok(())
}

/// The private directory, created and checked.
pub fn private_dir() -> Result<PathBuf, FileError> {
    let dir = private_dir_path();
    ensure_private_dir(&dir)?;
    Ok(dir)
}

/// Creates `path` new, read-write, owner-only, close-on-exec, refusing a
/// link in its place. An existing regular file of ours is a leftover of a
/// process that had the same pid (its owner was killed): it is removed
/// first. Anything else already there is refused.
pub fn create_private(path: &Path) -> Result<File, FileError> {
    let open = || {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true) // O_CREAT | O_EXCL: never follows a link
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
    };
    match open() {
        Ok(f) => return Ok(f),
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(io_err(path)(e)),
        Err(_) => {}
    }
    let md = fs::symlink_metadata(path).map_err(io_err(path))?;
    if !md.file_type().is_file() || md.uid() != euid() || md.nlink() != 1 {
        return Err(FileError::Unsafe {
            path: path.to_path_buf(),
            why: "something corral did not make is already there (a link, another \
                  user's file, or a file with other names)"
                .into(),
        });
    }
    fs::remove_file(path).map_err(io_err(path))?;
    open().map_err(io_err(path))
}

/// Opens an existing file of ours for appending, refusing a link, and only
/// if it is still the file with identity `(dev, ino)`.
pub fn open_append_checked(path: &Path, identity: (u64, u64)) -> Result<File, FileError> {
    let file = OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(io_err(path))?;
    let md = file.metadata().map_err(io_err(path))?;
    if (md.dev(), md.ino()) != identity {
        return Err(FileError::Unsafe {
            path: path.to_path_buf(),
            why: "replaced by another file since corral created it".into(),
        });
    }
    Ok(file)
}

/// Whether process `pid` is alive (or exists but is not ours to signal).
/// A zombie is not, where the reaper is slow (a container's init): it wrote
/// its last byte, and its files would otherwise never be removed. A zombie
/// whose parent is `corral` is: that CLI reads its child's files after
/// reaping it and removes them itself (another run starting in between
/// must not take them).
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(pid, 0) == 0 || *libc::__errno_location() != libc::ESRCH };
    exists
        && match exited_child_of(pid) {
            Some(parent) => is_corral(parent),
            None => true,
        }
}

/// The parent of `pid` if `/proc/<pid>/stat` says the process has exited
/// (Z or X).
fn exited_child_of(pid: i32) -> Option<i32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The state and the parent follow the command name's closing parenthesis.
    let mut fields = stat.rsplit_once(')')?.1.split_ascii_whitespace();
    let state = fields.next()?;
    matches!(state, "Z" | "X")
        .then(|| fields.next()?.parse().ok())
        .flatten()
}

/// Whether `pid` is a `corral` CLI (by its command name).
fn is_corral(pid: i32) -> bool {
    fs::read(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_ascii_end() == b"corral")
}

/// The pid a file of the private directory belongs to, from its name
/// (`stats.<pid>`, `maps.<pid>`, `events.<pid>.jsonl`, `events.<pid>.jsonl.old`,
/// and `tsc.<pid>`, the TSC calibration of the CLI `<pid>` before its rename).
fn owner_pid(name: &str) -> Option<i32> {
    let rest = name
        .strip_prefix("stats.")
        .or_else(|| name.strip_prefix("maps."))
        .or_else(|| name.strip_prefix("events."))
        .or_else(|| name.strip_prefix("tsc."))?;
    rest.split('.').next()?.parse().ok()
}

/// Removes the files of processes that are gone (killed before they could
/// clean up). Returns how many were removed. Files of live processes and
/// names corral does not use are left alone.
pub fn remove_stale(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner_pid) else {
            continue;
        };
        let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
        if is_file && !alive(pid) && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Removes the scratch directories `<prefix><pid>` in `base` of processes
/// that are gone (a benchmark killed before its clean-up ran). Only plain
/// directories of this user: a link of that name is left, never followed.
/// Returns how many were removed.
pub fn remove_stale_scratch(base: &Path, prefix: &str) -> usize {
    let Ok(entries) = fs::read_dir(base) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // symlink_metadata: the entry itself, not what a link points to.
        let ours = fs::symlink_metadata(entry.path())
            .is_ok_and(|md| md.file_type().is_dir() && md.uid() == euid());
        if ours && pid > 0 && !alive(pid) && fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::fs::symlink;

    /// A forked child that exits at once; the caller reaps it (or not).
    fn exiting_child() -> i32 {
        // SAFETY: the child only calls _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: async-signal-safe exit of the forked child.
            unsafe { libc::_exit(0) };
        }
        pid
    }

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("corral-files-{tag}.{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        ensure_private_dir(&dir).unwrap();
        dir
    }

    #[test]
    fn a_zombies_files_are_stale() {
        let dir = scratch("zombie");
        let pid = exiting_child();
        // Not reaped yet: a zombie, as under an init that never reaps.
        while exited_child_of(pid).is_none() {
            std::thread::yield_now();
        }
        fs::write(dir.join(format!("stats.{pid}")), b"x").unwrap();
        fs::write(dir.join(format!("stats.{}", std::process::id())), b"x").unwrap();
        assert_eq!(remove_stale(&dir), 1);
        // SAFETY: reaps the child forked above.
        unsafe { libc::waitpid(pid, core::ptr::null_mut(), 0) };
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_zombie_that_corral_will_reap_keeps_its_files() {
        let dir = scratch("corral-zombie");
        let mut pipe = [0i32; 2];
        // SAFETY: a fresh pipe into a two-int array.
        assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
        // SAFETY: the child calls only async-signal-safe functions: it dies
        // with the forking thread (a failed assertion leaves no orphan),
        // names itself corral, forks a grandchild that exits at once, writes
        // the grandchild's pid and waits (never reaping it) until killed.
        let parent = unsafe { libc::fork() };
        if parent == 0 {
            // SAFETY: as above; the pointers passed are to live locals and a
            // static C string.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                libc::prctl(libc::PR_SET_NAME, c"corral".as_ptr());
                let zombie = libc::fork();
                if zombie == 0 {
                    libc::_exit(0);
                }
                libc::write(pipe[1], (&raw const zombie).cast(), 4);
                loop {
                    libc::pause();
                }
            }
        }
        let mut zombie = 0i32;
        // SAFETY: reads the four bytes of the pid the child wrote into a
        // live local of that size.
        let got = unsafe { libc::read(pipe[0], (&raw mut zombie).cast(), 4) };
        assert_eq!(got, 4);
        while exited_child_of(zombie).is_none() {
            std::thread::yield_now();
        }
        fs::write(dir.join(format!("stats.{zombie}")), b"x").unwrap();
        assert_eq!(
            remove_stale(&dir),
            0,
            "corral's unreaped child lost its stats"
        );
        // SAFETY: kills and reaps the child forked above (init reaps the
        // grandchild) and closes the pipe's two ends, ours alone.
        unsafe {
            libc::kill(parent, libc::SIGKILL);
            libc::waitpid(parent, core::ptr::null_mut(), 0);
            libc::close(pipe[0]);
            libc::close(pipe[1]);
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_planted_link_is_refused_and_its_target_untouched() {
        let dir = scratch("link");
        let victim = dir.join("victim");
        fs::write(&victim, b"precious").unwrap();
        let path = dir.join("stats.1");
        symlink(&victim, &path).unwrap();
        let err = create_private(&path).unwrap_err();
        assert!(matches!(err, FileError::Unsafe { .. }), "{err}");
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_hard_link_is_refused() {
        let dir = scratch("hard");
        let victim = dir.join("victim");
        fs::write(&victim, b"precious").unwrap();
        let path = dir.join("stats.1");
        fs::hard_link(&victim, &path).unwrap();
        assert!(create_private(&path).is_err());
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_leftover_of_ours_is_replaced_owner_only() {
        let dir = scratch("stale");
        let path = dir.join("stats.1");
        fs::write(&path, b"old").unwrap();
        let mut f = create_private(&path).unwrap();
        f.write_all(b"new").unwrap();
        let md = fs::metadata(&path).unwrap();
        assert_eq!(md.mode() & 0o777, 0o600);
        let mut s = String::new();
        File::open(&path).unwrap().read_to_string(&mut s).unwrap();
        assert_eq!(s, "new");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_link_or_open_directory_is_refused() {
        let base = scratch("dir");
        let real = base.join("real");
        fs::create_dir(&real).unwrap();
        let link = base.join("link");
        symlink(&real, &link).unwrap();
        assert!(matches!(
            ensure_private_dir(&link),
            Err(FileError::Unsafe { .. })
        ));
        let open = base.join("open");
        DirBuilder::new().mode(0o777).create(&open).unwrap();
        fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        assert!(matches!(
            ensure_private_dir(&open),
            Err(FileError::Unsafe { .. })
        ));
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_replaced_file_is_not_appended_to() {
        let dir = scratch("replaced");
        let path = dir.join("events.1.jsonl");
        let f = create_private(&path).unwrap();
        let md = f.metadata().unwrap();
        fs::remove_file(&path).unwrap();
        fs::write(&path, b"someone else's").unwrap();
        assert!(open_append_checked(&path, (md.dev(), md.ino())).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_files_of_dead_processes_are_removed() {
        let dir = scratch("sweep");
        // A pid beyond pid_max (2^22) never exists.
        let dead = dir.join("stats.99999999");
        let live = dir.join(format!("events.{}.jsonl", std::process::id()));
        let other = dir.join("notes.txt");
        for p in [&dead, &live, &other] {
            fs::write(p, b"x").unwrap();
        }
        assert_eq!(remove_stale(&dir), 1);
        assert!(!dead.exists());
        assert!(live.exists() && other.exists());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stale_scratch_of_a_dead_process_goes_and_links_and_live_ones_stay() {
        let base = scratch("scratch");
        let dead = exiting_child();
        // SAFETY: reaps the child forked above.
        unsafe { libc::waitpid(dead, core::ptr::null_mut(), 0) };
        let me = std::process::id();
        fs::create_dir(base.join(format!("bench-{dead}"))).unwrap();
        fs::write(base.join(format!("bench-{dead}/data")), b"x").unwrap();
        fs::create_dir(base.join(format!("bench-{me}"))).unwrap();
        // A planted link under a dead pid's name: neither it nor its target
        // is touched.
        let target = base.join("target");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("keep"), b"x").unwrap();
        let other = dead + 1_000_000;
        symlink(&target, base.join(format!("bench-{other}"))).unwrap();
        assert_eq!(remove_stale_scratch(&base, "bench-"), 1);
        assert!(!base.join(format!("bench-{dead}")).exists());
        assert!(base.join(format!("bench-{me}")).is_dir());
        assert!(target.join("keep").is_file());
        fs::remove_dir_all(&base).unwrap();
    }
}
