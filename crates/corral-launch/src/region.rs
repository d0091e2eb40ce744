//! The stats region of one run, on `corral run`'s side: made before the
//! spawn (see `corral_runtime::stats`), lent to the program under a
//! descriptor number it takes and closes, and drained while it runs: its
//! messages printed on corral's own stderr, its decision log written where
//! the caller asked.

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use corral_runtime::abi::DEFAULT_MAX_THREADS;
use corral_runtime::channel::Channel;
use corral_runtime::events::{EventLog, MemoryLog};
use corral_runtime::stats::{StatsMap, StatsSnapshot};

/// How often the drain looks: a message reaches the terminal within it,
/// and the log's ring (1 MiB) never fills between two looks.
const DRAIN_EVERY: Duration = Duration::from_millis(20);

/// One run's region: its descriptor and corral's read-write mapping.
pub(crate) struct Region {
    fd: OwnedFd,
    map: Arc<StatsMap>,
}

impl Region {
    /// A new region, or `None` after one line on stderr (the program then
    /// runs without live stats, report figures or decision log).
    pub(crate) fn make() -> Option<Self> {
        let made = StatsMap::new_region(DEFAULT_MAX_THREADS)
            .and_then(|fd| Ok((StatsMap::map_owned(fd.as_fd())?, fd)));
        match made {
            Ok((map, fd)) => Some(Region {
                fd,
                map: Arc::new(map),
            }),
            Err(e) => {
                eprintln!(
                    "corral: cannot reserve the stats region ({e}); PROG runs without \
                     live stats, the exit table or the decision log"
                );
                None
            }
        }
    }

    /// An inheritable copy of the descriptor for the child (not
    /// close-on-exec) and the value naming it there; dropped by the caller
    /// once the child is started.
    pub(crate) fn child_fd(&self) -> Option<(OwnedFd, String)> {
        // F_DUPFD, not F_DUPFD_CLOEXEC: the copy survives the exec.
        // SAFETY: duplicating a descriptor this region keeps open.
        let dup = unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_DUPFD, 3) };
        if dup < 0 {
            return None;
        }
        // SAFETY: a fresh descriptor from fcntl, owned here.
        let dup = unsafe { OwnedFd::from_raw_fd(dup) };
        let value = corral_runtime::stats::inherited_value(dup.as_fd()).ok()?;
        Some((dup, value))
    }

    /// Lets this process's samplers find the region as program `pid`'s.
    pub(crate) fn register(&self, pid: i32) {
        corral_runtime::stats::register_local(pid, self.fd.as_fd());
    }

    /// Undoes [`Self::register`] (before the descriptor closes).
    pub(crate) fn unregister(&self, pid: i32) {
        corral_runtime::stats::unregister_local(pid);
    }

    /// The last state, if the program published the region.
    pub(crate) fn snapshot(&self) -> Option<StatsSnapshot> {
        let mut snap = self.map.published().then(|| self.map.snapshot())?;
        if let Some(c) = self.map.channel() {
            snap.events_dropped = c.events_dropped();
            snap.messages_dropped = c.messages_dropped();
            snap.threads_made = c.threads_made();
        }
        Some(snap)
    }

    /// The memory map the program wrote at exit.
    pub(crate) fn maps(&self) -> Option<String> {
        self.map.channel()?.maps()
    }

    /// Starts taking the program's messages and log out of the region.
    pub(crate) fn start_drain(&self, sink: LogSink) -> Drain {
        let map = self.map.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("corral-drain".into())
            .spawn(move || {
                let mut state = DrainState { sink, cursor: 0 };
                let Some(channel) = map.channel() else {
                    return state.sink;
                };
                // Relaxed: a flag; the last pass after it reads everything.
                while !stopping.load(Ordering::Relaxed) {
                    state.pass(&channel);
                    std::thread::park_timeout(DRAIN_EVERY);
                }
                state.pass(&channel);
                state.sink
            })
            .ok();
        Drain { stop, thread }
    }
}

/// Where the decision log taken out of the region goes.
pub(crate) enum LogSink {
    /// A file (`--events`), rotated as the monitor's own log was.
    File(Option<EventLog>),
    /// `corral run`'s memory, for its report.
    Memory(MemoryLog),
    /// Nowhere: nobody asked.
    Discard,
}

impl LogSink {
    /// The log file at `path`, created now (a refusal is one line, and the
    /// run goes on without it).
    pub(crate) fn file(path: &Path) -> Self {
        let log = EventLog::create(path)
            .map_err(|e| eprintln!("corral: --events: {e}"))
            .ok();
        LogSink::File(log)
    }
}

struct DrainState {
    sink: LogSink,
    cursor: usize,
}

impl DrainState {
    fn pass(&mut self, channel: &Channel) {
        for line in channel.messages_since(&mut self.cursor) {
            eprintln!("{line}");
        }
        let lines = channel.drain_events();
        if lines.is_empty() {
            return;
        }
        match &mut self.sink {
            LogSink::File(Some(log)) => {
                log.write_lines(&lines);
                if let Err(e) = log.flush() {
                    eprintln!("corral: --events: {e}; the rest of the log is lost");
                    self.sink = LogSink::File(None);
                }
            }
            LogSink::Memory(log) => log.write_lines(&lines),
            LogSink::File(None) | LogSink::Discard => {}
        }
    }
}

/// The drain's thread, stopped once the program has ended.
pub(crate) struct Drain {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<LogSink>>,
}

impl Drain {
    /// Stops the drain after a last pass; the log kept in memory, if any.
    pub(crate) fn finish(self) -> Option<MemoryLog> {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread?;
        thread.thread().unpark();
        match thread.join().ok()? {
            LogSink::Memory(log) => Some(log),
            _ => None,
        }
    }
}
