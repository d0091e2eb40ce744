//! The per-process stats region of [`crate::abi`]: made by `corral run`
//! (an anonymous memory file, its room reserved before anything maps it),
//! inherited by the program it starts, published and written there by the
//! library, and read by `corral run` (and `corral top`) through the same
//! memory. No file in a shared directory: nobody can plant, fill or
//! remove it, and a full memory limit is one line at start, never a
//! SIGBUS in the program's threads.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering;

use serde::Serialize;

use crate::abi::{
    lock_table_offset, stats_file_len, LockRecord, MigState, StatsHeader, ThreadRecord, LOCK_SLOTS,
    STATS_MAGIC, STATS_VERSION,
};
use crate::channel::Channel;
pub use crate::lockprof::snapshot::{CallerSample, LockSnapshot};

/// The name every stats region carries (`/proc/PID/fd/N` reads
/// `/memfd:corral-stats (deleted)`), by which `corral top` finds them.
pub const REGION_NAME: &str = "corral-stats";

/// Names the region a program inherits: `FD:DEV:INO`, its descriptor
/// number there and the identity `fstat` must find under it (a program
/// that closed the number and opened a file of its own there is never
/// mapped).
pub const ENV_STATS_FD_C: &core::ffi::CStr = c"CORRAL_STATS_FD";

/// [`ENV_STATS_FD_C`]'s value for `fd`, inherited under the same number.
pub fn inherited_value(fd: BorrowedFd<'_>) -> io::Result<String> {
    let (dev, ino) = identity(fd.as_raw_fd())?;
    Ok(format!("{}:{dev}:{ino}", fd.as_raw_fd()))
}

/// The device and inode under descriptor number `fd`.
fn identity(fd: i32) -> io::Result<(u64, u64)> {
    // SAFETY: a zeroed stat is valid; fstat only writes into it.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: a descriptor number and a live stat buffer (a closed number
    // is refused with EBADF).
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((st.st_dev, st.st_ino))
}

/// `FD:DEV:INO` parsed.
fn parse_inherited(value: &[u8]) -> Option<(i32, u64, u64)> {
    let mut parts = value.split(|&b| b == b':').map(|p| {
        std::str::from_utf8(p)
            .ok()
            .and_then(|t| t.parse::<u64>().ok())
    });
    let fd = i32::try_from(parts.next()??).ok()?;
    let (dev, ino) = (parts.next()??, parts.next()??);
    parts.next().is_none().then_some((fd, dev, ino))
}

/// The library's side, in the process `corral run` started: maps and
/// publishes the region named in [`ENV_STATS_FD_C`] for process `pid`
/// (through `libcorral_shim.so` where it is loaded: it maps the region on
/// first need and closes the descriptor), closes the descriptor (the
/// program never sees it again), and makes the region's channel this
/// process's. `None` where there is none, or the number no longer holds
/// it.
pub fn adopt_inherited(pid: i32) -> Option<StatsMap> {
    let mut map = match shim_region() {
        Some(from_shim) => from_shim?,
        None => map_inherited()?,
    };
    map.write_header(pid).ok()?;
    map.keep_mapped();
    if let Some(channel) = map.channel() {
        crate::channel::install(channel);
    }
    Some(map)
}

/// The shim's mapping: `None` where no shim is loaded, `Some(None)` where
/// it has no region to give.
fn shim_region() -> Option<Option<StatsMap>> {
    // SAFETY: RTLD_DEFAULT and a NUL-terminated name.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"corral_shim_stats_region".as_ptr()) };
    if f.is_null() {
        return None;
    }
    // SAFETY: the shim exports this name as
    // `unsafe extern "C" fn(*mut usize) -> *mut u8`.
    let region = unsafe {
        core::mem::transmute::<*mut libc::c_void, unsafe extern "C" fn(*mut usize) -> *mut u8>(f)
    };
    let mut len = 0usize;
    // SAFETY: a live usize for the length.
    let base = unsafe { region(&mut len) };
    if base.is_null() || len < stats_file_len(1) {
        return Some(None);
    }
    Some(Some(StatsMap {
        base,
        len,
        writable: true,
        // The shim's mapping, never unmapped.
        kept: true,
    }))
}

/// Maps the descriptor named in the environment, if it still holds the
/// region, and closes it.
fn map_inherited() -> Option<StatsMap> {
    // SAFETY: a NUL-terminated name; getenv allocates nothing.
    let raw = unsafe { libc::getenv(ENV_STATS_FD_C.as_ptr()) };
    if raw.is_null() {
        return None;
    }
    // SAFETY: getenv returned a NUL-terminated string.
    let value = unsafe { core::ffi::CStr::from_ptr(raw) }.to_bytes();
    let (fd, dev, ino) = parse_inherited(value)?;
    if identity(fd).ok()? != (dev, ino) {
        return None;
    }
    // SAFETY: open (fstat found it), and kept open until the drop below.
    let map = StatsMap::map(unsafe { BorrowedFd::borrow_raw(fd) }, true);
    // SAFETY: the descriptor `corral run` passed for this process to take
    // (checked above): closed once, here.
    drop(unsafe { OwnedFd::from_raw_fd(fd) });
    map.ok()
}

/// The regions this process made for the programs it runs, by the
/// program's pid (kept open by their owner, which unregisters before it
/// closes them).
static LOCAL: std::sync::Mutex<Vec<(i32, i32)>> = std::sync::Mutex::new(Vec::new());

/// Lets readers in this process ([`StatsMap::open_local`]) find `fd`, the
/// region of program `pid`; the caller unregisters it before closing it.
pub fn register_local(pid: i32, fd: BorrowedFd<'_>) {
    let mut local = LOCAL.lock().unwrap_or_else(|p| p.into_inner());
    local.retain(|(p, _)| *p != pid);
    local.push((pid, fd.as_raw_fd()));
}

/// Forgets program `pid`'s region (before its descriptor closes).
pub fn unregister_local(pid: i32) {
    LOCAL
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|(p, _)| *p != pid);
}

/// Every published region this user may open, found through the
/// descriptors of the processes that hold them (`corral run`'s), mapped
/// read-only, one per program, lowest pid first.
pub fn published_regions() -> Vec<StatsMap> {
    let want = format!("/memfd:{REGION_NAME} ");
    let mut found: Vec<StatsMap> = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for proc_dir in procs.flatten() {
        let is_pid = proc_dir
            .file_name()
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        if !is_pid {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(proc_dir.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let named = std::fs::read_link(fd.path())
                .is_ok_and(|t| t.as_os_str().to_string_lossy().starts_with(&want));
            let Some(file) = named.then(|| std::fs::File::open(fd.path()).ok()).flatten() else {
                continue;
            };
            let Ok(map) = StatsMap::open(std::os::fd::AsFd::as_fd(&file)) else {
                continue;
            };
            // Relaxed: fixed before the magic, which `open` read with Acquire.
            let pid = map.header().pid.load(Ordering::Relaxed);
            if !found
                .iter()
                .any(|m| m.header().pid.load(Ordering::Relaxed) == pid)
            {
                found.push(map);
            }
        }
    }
    found.sort_by_key(|m| m.header().pid.load(Ordering::Relaxed));
    found
}

/// A shared mapping of a stats region.
#[derive(Debug)]
pub struct StatsMap {
    base: *mut u8,
    len: usize,
    writable: bool,
    /// Never unmapped: the lock profile's writers hold `'static` pointers.
    kept: bool,
}

// SAFETY: every field reached through the mapping is an atomic.
unsafe impl Send for StatsMap {}
// SAFETY: as above.
unsafe impl Sync for StatsMap {}

/// The most thread records a region of `len` bytes holds.
fn max_threads_for(len: usize) -> u32 {
    let fixed = stats_file_len(0);
    let per = core::mem::size_of::<ThreadRecord>();
    (len.saturating_sub(fixed) / per).min(u32::MAX as usize) as u32
}

impl StatsMap {
    /// Makes a region with room for `max_threads` records: a close-on-exec
    /// memory file, its pages reserved now (`fallocate`), so that a memory
    /// limit refuses it here rather than killing a writer later.
    pub fn new_region(max_threads: u32) -> io::Result<OwnedFd> {
        let name = std::ffi::CString::new(REGION_NAME).map_err(io::Error::other)?;
        // SAFETY: a NUL-terminated name and flags; returns a new descriptor.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor this function owns from here.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let len = stats_file_len(max_threads) as libc::off_t;
        // A file-size limit (`ulimit -f`) refuses the extension with
        // SIGXFSZ, whose default kills: ignored for the call, so that the
        // refusal is an error here, then restored before any child inherits
        // the disposition.
        // SAFETY: swaps SIGXFSZ's disposition and puts the old one back;
        // fallocate takes an open descriptor, mode 0 (allocate and extend).
        let rc = unsafe {
            let old = libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let rc = libc::fallocate(fd.as_raw_fd(), 0, 0, len);
            let err = io::Error::last_os_error();
            libc::signal(libc::SIGXFSZ, old);
            (rc, err)
        };
        if rc.0 != 0 {
            return Err(rc.1);
        }
        Ok(fd)
    }

    /// Maps the region `fd` made by `corral run` read-write and publishes
    /// its header for process `pid`: the library's side. The descriptor
    /// may be closed once this returns; the mapping stays.
    pub fn publish(fd: BorrowedFd<'_>, pid: i32) -> io::Result<Self> {
        let map = Self::map(fd, true)?;
        map.write_header(pid)?;
        Ok(map)
    }

    fn write_header(&self, pid: i32) -> io::Result<()> {
        let max_threads = max_threads_for(self.len).min(crate::abi::DEFAULT_MAX_THREADS);
        if max_threads == 0 || !self.writable {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "stats region too short",
            ));
        }
        let h = self.header();
        // Relaxed: the magic, stored last with Release, publishes these.
        h.version.store(STATS_VERSION, Ordering::Relaxed);
        h.max_threads.store(max_threads, Ordering::Relaxed);
        h.pid.store(pid, Ordering::Relaxed);
        h.ns_per_2p32_ticks
            .store(corral_locks::wait::ticks_to_ns(1 << 32), Ordering::Relaxed);
        // Release: readers that see the magic see the fields above.
        h.magic.store(STATS_MAGIC, Ordering::Release);
        Ok(())
    }

    /// Maps the region `fd` read-write without looking inside: `corral
    /// run`'s side, before and after the program publishes it (see
    /// [`Self::published`]), and the only reader that drains its log.
    pub fn map_owned(fd: BorrowedFd<'_>) -> io::Result<Self> {
        Self::map(fd, true)
    }

    /// Maps a published region read-only (`corral top`); refuses a foreign
    /// or incompatible one.
    pub fn open(fd: BorrowedFd<'_>) -> io::Result<Self> {
        let map = Self::map(fd, false)?;
        if !map.published() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a published corral stats region of this version",
            ));
        }
        Ok(map)
    }

    /// Program `pid`'s region, made by this process and published by the
    /// program, mapped read-only (`corral run`'s samplers and FF).
    pub fn open_local(pid: i32) -> Option<Self> {
        let local = LOCAL.lock().unwrap_or_else(|p| p.into_inner());
        let &(_, fd) = local.iter().find(|(p, _)| *p == pid)?;
        // SAFETY: registered descriptors stay open until unregistered,
        // which waits for this lock.
        Self::open(unsafe { BorrowedFd::borrow_raw(fd) }).ok()
    }

    /// Whether the library published the region (this version's layout,
    /// and as long as its header says).
    pub fn published(&self) -> bool {
        let h = self.header();
        // Acquire: pairs with `publish`'s Release store of the magic.
        h.magic.load(Ordering::Acquire) == STATS_MAGIC
            && h.version.load(Ordering::Relaxed) == STATS_VERSION
            && stats_file_len(h.max_threads.load(Ordering::Relaxed)) <= self.len
    }

    fn map(fd: BorrowedFd<'_>, writable: bool) -> io::Result<Self> {
        // SAFETY: a zeroed stat is valid; fstat only writes into it.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        // SAFETY: an open descriptor and a live stat buffer.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let len = st.st_size.max(0) as usize;
        if len < stats_file_len(1) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "stats region too short",
            ));
        }
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a fresh shared mapping of `len` bytes of an open file; the
        // kernel picks the address.
        let base = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(StatsMap {
            base: base.cast(),
            len,
            writable,
            kept: false,
        })
    }

    /// The channel after the lock table (messages, log, maps), where this
    /// mapping may write (the library's, or `corral run`'s). Its room is
    /// the region's, whether published yet or not.
    pub fn channel(&self) -> Option<Channel> {
        // SAFETY: the channel and its areas end within the mapping
        // (`channel_offset_for_len`), which is page-aligned, writable, and
        // lives as long as `self`, which callers keep while they use the view.
        self.writable
            .then(|| unsafe { Channel::at(self.base, self.len) })
    }

    /// Keeps the mapping for the rest of the process (the library's
    /// channel and lock table are reached through `'static` pointers).
    pub fn keep_mapped(&mut self) {
        self.kept = true;
    }

    /// The lock table.
    pub fn locks(&self) -> &[LockRecord] {
        let max = self.header().max_threads.load(Ordering::Relaxed); // Relaxed: fixed at creation.
        let offset = lock_table_offset(max);
        // SAFETY: `create` and `open` checked the file holds the whole
        // table after `max` records; 64-byte aligned; fields are atomics.
        unsafe {
            core::slice::from_raw_parts(self.base.add(offset) as *const LockRecord, LOCK_SLOTS)
        }
    }

    /// The lock table for the rest of the process: the mapping is never
    /// unmapped from now on, even when this handle is dropped.
    pub fn keep_locks_mapped(&mut self) -> &'static [LockRecord] {
        self.kept = true;
        let locks = self.locks();
        // SAFETY: the mapping outlives the process now (`kept`).
        unsafe { core::slice::from_raw_parts(locks.as_ptr(), locks.len()) }
    }

    /// The header.
    pub fn header(&self) -> &StatsHeader {
        // SAFETY: the mapping is at least one header long, page-aligned, and
        // every header field is an atomic.
        unsafe { &*(self.base as *const StatsHeader) }
    }

    /// Record `i`, if within the table.
    pub fn record(&self, i: usize) -> Option<&ThreadRecord> {
        let max = self.header().max_threads.load(Ordering::Relaxed) as usize; // Relaxed: fixed at creation.
        if i >= max || stats_file_len(i as u32 + 1) > self.len {
            return None;
        }
        let offset = core::mem::size_of::<StatsHeader>() + i * core::mem::size_of::<ThreadRecord>();
        // SAFETY: in bounds (checked), 64-byte aligned, fields are atomics.
        Some(unsafe { &*(self.base.add(offset) as *const ThreadRecord) })
    }

    /// A snapshot of the header and every used record.
    pub fn snapshot(&self) -> StatsSnapshot {
        let h = self.header();
        // Relaxed throughout: a monitoring view tolerates a mid-update record.
        let n = h.n_threads.load(Ordering::Relaxed) as usize;
        let threads = (0..n)
            .filter_map(|i| self.record(i))
            .filter(|r| r.tid.load(Ordering::Relaxed) != 0)
            .map(|r| {
                let wait_ns = r.wait_ns.load(Ordering::Relaxed);
                let cpu_ns = r.cpu_ns.load(Ordering::Relaxed);
                let state = MigState::from_u32(r.mig_state.load(Ordering::Relaxed))
                    .unwrap_or(MigState::General);
                ThreadSnapshot {
                    tid: r.tid.load(Ordering::Relaxed),
                    wait_ns,
                    cpu_ns,
                    wait_share: if cpu_ns == 0 {
                        0.0
                    } else {
                        (wait_ns as f64 / cpu_ns as f64).min(1.0)
                    },
                    lock_intensive: state != MigState::General,
                    contended: r.contended.load(Ordering::Relaxed),
                    slices: r.slices.load(Ordering::Relaxed),
                    last_share: f64::from(r.last_share_ppm.load(Ordering::Relaxed)) / 1e6,
                    yields: u64::from(r.yields.load(Ordering::Relaxed)),
                }
            })
            .collect();
        let ns_per_2p32 = h.ns_per_2p32_ticks.load(Ordering::Relaxed);
        StatsSnapshot {
            locks: crate::lockprof::snapshot::locks(self.locks(), ns_per_2p32),
            lock_profile: h.lock_profile.load(Ordering::Relaxed) != 0,
            pid: h.pid.load(Ordering::Relaxed),
            ssc_bound: h.ssc_bound.load(Ordering::Relaxed),
            n_lock_intensive: h.n_lock_intensive.load(Ordering::Relaxed),
            generation: h.generation.load(Ordering::Relaxed),
            throughput: h.throughput_ppm.load(Ordering::Relaxed) as f64 / 1e6,
            threads,
            events_dropped: 0,
            messages_dropped: 0,
            threads_made: (0, 0),
        }
    }
}

impl Drop for StatsMap {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        // SAFETY: unmaps exactly the mapping made in `map`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// One thread in a snapshot.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThreadSnapshot {
    /// Thread id.
    pub tid: i32,
    /// Lock waiting over the thread's life, ns.
    pub wait_ns: u64,
    /// Thread CPU time seen by the monitor, ns.
    pub cpu_ns: u64,
    /// `wait_ns / cpu_ns`, clamped to 1.
    pub wait_share: f64,
    /// Classified lock intensive at the snapshot.
    pub lock_intensive: bool,
    /// Acquisitions that had to wait.
    pub contended: u64,
    /// Accounting windows closed.
    pub slices: u64,
    /// Share of the last closed window (over the time its thread ran or
    /// waited for a lock, as qualification measures it).
    pub last_share: f64,
    /// Calls to `sched_yield` and `pthread_yield` (stopping at `u32::MAX`).
    pub yields: u64,
}

/// A snapshot of one process's stats region.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StatsSnapshot {
    /// The process.
    pub pid: i32,
    /// Current SSC bound.
    pub ssc_bound: u32,
    /// Threads classified lock intensive.
    pub n_lock_intensive: u32,
    /// Publication counter, bumped at every publish.
    pub generation: u64,
    /// Last normalised throughput T(n).
    pub throughput: f64,
    /// Every thread slot in use.
    pub threads: Vec<ThreadSnapshot>,
    /// Whether the lock profile was kept (off: `CORRAL_LOCK_PROFILE=0`).
    pub lock_profile: bool,
    /// Every lock that waited, most total wait first.
    pub locks: Vec<LockSnapshot>,
    /// Decision-log lines the program dropped because `corral run` had
    /// not yet taken the ones before out of the region.
    pub events_dropped: u64,
    /// Messages of corral's the program dropped for want of room.
    pub messages_dropped: u32,
    /// `pthread_create` calls before corral's library loaded (a deferred
    /// load) and after it.
    pub threads_made: (u32, u32),
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_reader_sees_what_the_writer_published() {
        let fd = StatsMap::new_region(4).unwrap();
        let owner = StatsMap::map_owned(fd.as_fd()).unwrap();
        assert!(!owner.published(), "nothing published before the library");
        let writer = StatsMap::publish(fd.as_fd(), 42).unwrap();
        assert!(owner.published());
        let rec = writer.record(1).unwrap();
        rec.tid.store(7, Ordering::Relaxed);
        rec.wait_ns.store(250, Ordering::Relaxed);
        rec.cpu_ns.store(1_000, Ordering::Relaxed);
        rec.mig_state
            .store(MigState::HaveMigrated as u32, Ordering::Relaxed);
        writer.header().n_threads.store(2, Ordering::Relaxed);
        writer.header().ssc_bound.store(1, Ordering::Relaxed);
        assert!(writer.record(4).is_none());
        writer.channel().unwrap().say(b"hello");
        let snap = StatsMap::open(fd.as_fd()).unwrap().snapshot();
        assert_eq!(snap.pid, 42);
        assert_eq!(snap.ssc_bound, 1);
        assert_eq!(snap.threads.len(), 1, "record 0 is unused and skipped");
        assert_eq!(snap.threads[0].tid, 7);
        assert_eq!(snap.threads[0].wait_share, 0.25);
        assert!(snap.threads[0].lock_intensive);
        let mut cursor = 0;
        assert_eq!(
            owner.channel().unwrap().messages_since(&mut cursor),
            ["hello"]
        );
        assert!(StatsMap::open(fd.as_fd()).unwrap().channel().is_none());
    }

    #[test]
    fn refuses_a_region_that_is_not_published() {
        let fd = StatsMap::new_region(4).unwrap();
        let err = StatsMap::open(fd.as_fd()).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        let file = std::fs::File::open("/proc/self/exe").unwrap();
        assert!(StatsMap::open(file.as_fd()).is_err());
    }

    #[test]
    fn the_inherited_name_holds_the_number_and_the_identity() {
        let fd = StatsMap::new_region(4).unwrap();
        let value = inherited_value(fd.as_fd()).unwrap();
        let (n, dev, ino) = parse_inherited(value.as_bytes()).unwrap();
        assert_eq!(n, fd.as_raw_fd());
        assert_eq!(identity(fd.as_raw_fd()).unwrap(), (dev, ino));
        let other = std::fs::File::open("/proc/self/exe").unwrap();
        assert_ne!(identity(other.as_raw_fd()).unwrap(), (dev, ino));
        for bad in ["", "3", "3:1", "x:1:2", "3:1:2:4", "-1:1:2"] {
            assert_eq!(parse_inherited(bad.as_bytes()), None, "{bad}");
        }
    }
}
