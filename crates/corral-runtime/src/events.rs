//! The decision log: one JSON object per line, written by the monitor when
//! asked (`CORRAL_EVENTS`) into the stats region's ring, taken out by
//! `corral run` into the `--events` file or its own memory, and read back
//! for its report.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::files::{self, FileError};

use corral_policy::ssc::Decision;
use serde::{Deserialize, Serialize};

/// One line of the log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The monitor started with this SSC size (0 = no SSC: policy none).
    Start {
        /// Milliseconds since the monitor started.
        t_ms: f64,
        /// The managed process.
        pid: i32,
        /// Placement policy name.
        policy: String,
        /// Lock algorithm name.
        lock: String,
        /// Initial SSC bound.
        bound: u32,
        /// The CPUs the process may use, in SSC order.
        cpus: Vec<u32>,
    },
    /// A controller decision (search, timer, adaptation).
    Decision {
        /// Milliseconds since the monitor started.
        t_ms: f64,
        /// The decision's kind (`DecisionKind`, as its name).
        kind: String,
        /// SSC bound before the decision.
        bound_before: u32,
        /// SSC bound after it.
        bound_after: u32,
        /// Normalised throughput T(n) measured.
        throughput: f64,
        /// Estimated lock-intensive share of execution.
        p: f64,
        /// Lock-intensive threads counted.
        lock_intensive: u32,
    },
    /// A thread qualified as lock intensive at the end of a slice.
    Qualified {
        /// Milliseconds since the monitor started.
        t_ms: f64,
        /// The thread.
        tid: i32,
        /// Its lock-wait share in that slice.
        share: f64,
    },
    /// A thread cooled down and went back to the general cores.
    MigrateBack {
        /// Milliseconds since the monitor started.
        t_ms: f64,
        /// The thread.
        tid: i32,
        /// Its lock-wait share in the last slice.
        share: f64,
    },
    /// A thread's slice would have qualified, but it yields about as often
    /// as it locks (`corral_policy::detect::gives_core_away`): it stays on
    /// the general cores. Said once per thread.
    YieldsCore {
        /// Milliseconds since the monitor started.
        t_ms: f64,
        /// The thread.
        tid: i32,
        /// Its lock-wait share in that slice.
        share: f64,
        /// Its calls to `sched_yield` per lock attempt in that slice.
        yields_per_attempt: f64,
    },
    /// The whole program's progress over the last window (about
    /// [`PROGRESS_EVERY_NS`]): the time series a settling curve is read from.
    Progress {
        /// Milliseconds since the monitor started, at the window's end.
        t_ms: f64,
        /// Lock attempts (every interposed lock call) per millisecond.
        attempts_per_ms: f64,
        /// Contended acquisitions per millisecond.
        waits_per_ms: f64,
    },
    /// A CA-Scheduler round applied (paper 5): every member's cluster, CPU
    /// and affinity read back.
    Clustered {
        /// Milliseconds since the monitor started.
        t_ms: f64,
        /// The round and its threads.
        applied: crate::ca::CaApplied,
    },
    /// A thread exited.
    Exited {
        /// Milliseconds since the monitor started.
        t_ms: f64,
        /// The thread.
        tid: i32,
    },
}

impl Event {
    /// An event for a controller decision taken at `t_ms`.
    pub fn from_decision(t_ms: f64, d: &Decision) -> Self {
        Event::Decision {
            t_ms,
            kind: format!("{:?}", d.kind),
            bound_before: d.bound_before,
            bound_after: d.bound_after,
            throughput: d.throughput,
            p: d.p,
            lock_intensive: d.lock_intensive,
        }
    }
}

/// The window of a [`Event::Progress`] record: long enough to count many
/// attempts, short against the 100 ms a search should settle in.
pub const PROGRESS_EVERY_NS: u64 = 10_000_000;

/// Largest a log grows before it is rotated to `<path>.old` (or, kept in
/// memory, before its older half goes): a steadily contended program logs
/// a decision every few milliseconds for hours.
pub const ROTATE_BYTES: u64 = 8 << 20;

/// Where a log's lines go.
#[derive(Debug)]
enum Sink {
    /// A file, reopened by name at each flush.
    File {
        path: PathBuf,
        identity: (u64, u64),
        written: u64,
    },
    /// The stats region's ring, inside the program.
    Channel(crate::channel::Channel),
}

/// Appends events, one line each: inside a program, to the stats region's
/// ring ([`EventLog::into_channel`]); in `corral run`, to a file. A file
/// log holds no descriptor between flushes: a program may close
/// descriptors it did not open and reuse their numbers, and a held one
/// would then write corral's lines into the program's file. Each flush
/// reopens the file by name (no link followed) and checks it is still the
/// one created.
#[derive(Debug)]
pub struct EventLog {
    sink: Sink,
    pending: Vec<u8>,
}

impl EventLog {
    /// Creates the log at `path` (see [`files::create_private`]: never
    /// through a link, never over another's file).
    pub fn create(path: &Path) -> Result<Self, FileError> {
        let file = files::create_private(path)?;
        let md = file.metadata().map_err(|source| FileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(EventLog {
            sink: Sink::File {
                path: path.to_path_buf(),
                identity: (md.dev(), md.ino()),
                written: 0,
            },
            pending: Vec::new(),
        })
    }

    /// A log into `channel`'s ring: what the library's monitor writes.
    pub fn into_channel(channel: crate::channel::Channel) -> Self {
        EventLog {
            sink: Sink::Channel(channel),
            pending: Vec::new(),
        }
    }

    /// Whether a flush opens a file (a ring's does not).
    pub fn opens_files(&self) -> bool {
        matches!(self.sink, Sink::File { .. })
    }

    /// Buffers whole lines taken out of a ring (a file log's writer in
    /// `corral run`).
    pub fn write_lines(&mut self, lines: &[u8]) {
        if self.pending.len() as u64 >= ROTATE_BYTES {
            return;
        }
        self.pending.extend_from_slice(lines);
    }

    /// Buffers one event. Lines past [`ROTATE_BYTES`] not yet flushed (a
    /// monitor that may not open files until exit) are dropped.
    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        if self.pending.len() as u64 >= ROTATE_BYTES {
            return Ok(());
        }
        serde_json::to_writer(&mut self.pending, event).map_err(io::Error::other)?;
        self.pending.push(b'\n');
        Ok(())
    }

    /// Appends the buffered lines to the file, rotating it first when
    /// full, or to the ring, dropping (and counting) lines it has no room
    /// for.
    pub fn flush(&mut self) -> Result<(), FileError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let (path, identity, written) = match &mut self.sink {
            Sink::Channel(channel) => {
                for line in pending.split_inclusive(|&b| b == b'\n') {
                    channel.push_event(line);
                }
                return Ok(());
            }
            Sink::File {
                path,
                identity,
                written,
            } => (path, identity, written),
        };
        if *written + pending.len() as u64 > ROTATE_BYTES {
            let old = old_path(path);
            std::fs::rename(&*path, &old).map_err(|source| FileError::Io {
                path: old.clone(),
                source,
            })?;
            let file = files::create_private(path)?;
            let md = file.metadata().map_err(|source| FileError::Io {
                path: path.clone(),
                source,
            })?;
            *identity = (md.dev(), md.ino());
            *written = 0;
        }
        let mut file = files::open_append_checked(path, *identity)?;
        let result = file.write_all(&pending);
        *written += pending.len() as u64;
        result.map_err(|source| FileError::Io {
            path: path.clone(),
            source,
        })
    }
}

/// A log `corral run` keeps in its own memory for its report, where no
/// `--events` file was asked for: its newer [`ROTATE_BYTES`] and the ones
/// before, as a file log's rotation keeps them.
#[derive(Debug, Default)]
pub struct MemoryLog {
    old: Vec<u8>,
    current: Vec<u8>,
}

impl MemoryLog {
    /// Appends whole lines taken out of a ring.
    pub fn write_lines(&mut self, lines: &[u8]) {
        if (self.current.len() + lines.len()) as u64 > ROTATE_BYTES {
            self.old = std::mem::take(&mut self.current);
        }
        self.current.extend_from_slice(lines);
    }

    /// Streams the log back to `each`, oldest first; lines that do not
    /// parse are skipped.
    pub fn for_each_event(&self, mut each: impl FnMut(Event)) {
        for part in [&self.old, &self.current] {
            for line in part.split(|&b| b == b'\n') {
                if let Ok(e) = serde_json::from_slice(line) {
                    each(e);
                }
            }
        }
    }
}

impl Drop for EventLog {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Where a full log goes: `<path>.old`.
pub fn old_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".old");
    PathBuf::from(p)
}

/// Streams a log back to `each`, its rotated part first, line by line (the
/// log is never held whole); lines that do not parse (a torn last line) are
/// skipped.
pub fn for_each_event(path: &Path, mut each: impl FnMut(Event)) -> io::Result<()> {
    let old = old_path(path);
    for p in [old.as_path(), path] {
        let file = match File::open(p) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound && p == old => continue,
            Err(e) => return Err(e),
        };
        for line in BufReader::new(file).lines() {
            if let Ok(e) = serde_json::from_str(&line?) {
                each(e);
            }
        }
    }
    Ok(())
}

/// [`for_each_event`] into a vector, for tests and small logs.
pub fn read_log(path: &Path) -> io::Result<Vec<Event>> {
    let mut events = Vec::new();
    for_each_event(path, |e| events.push(e))?;
    Ok(events)
}

/// Removes a log and its rotated part.
pub fn remove_log(path: &Path) {
    let _ = std::fs::remove_file(old_path(path));
    let _ = std::fs::remove_file(path);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_through_a_file() {
        let path = std::env::temp_dir().join(format!("corral-events-test.{}", std::process::id()));
        let mut log = EventLog::create(&path).unwrap();
        let events = vec![
            Event::Start {
                t_ms: 0.0,
                pid: 1,
                policy: "lca".into(),
                lock: "ticket".into(),
                bound: 1,
                cpus: vec![0, 1],
            },
            Event::Qualified {
                t_ms: 4.5,
                tid: 9,
                share: 0.5,
            },
        ];
        for e in &events {
            log.write(e).unwrap();
        }
        log.flush().unwrap();
        std::fs::write(
            &path,
            std::fs::read_to_string(&path).unwrap() + "{\"event\":\"trunc",
        )
        .unwrap();
        let back = read_log(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(back, events);
    }

    fn exited(tid: i32) -> Event {
        Event::Exited { t_ms: 1.0, tid }
    }

    #[test]
    fn the_log_holds_no_descriptor_a_program_could_reuse() {
        let path = std::env::temp_dir().join(format!("corral-events-fd.{}", std::process::id()));
        let mut log = EventLog::create(&path).unwrap();
        log.write(&exited(1)).unwrap();
        log.flush().unwrap();
        let held = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == path))
            .count();
        assert_eq!(held, 0, "a descriptor of the log stays open");
        assert_eq!(read_log(&path).unwrap(), vec![exited(1)]);
        remove_log(&path);
    }

    #[test]
    fn a_full_log_rotates_and_reads_back_in_order() {
        let path = std::env::temp_dir().join(format!("corral-events-rot.{}", std::process::id()));
        let mut log = EventLog::create(&path).unwrap();
        let line = serde_json::to_vec(&exited(0)).unwrap().len() as u64 + 1;
        let n = (ROTATE_BYTES / line) as i32 + 10;
        for tid in 0..n {
            log.write(&exited(tid)).unwrap();
            if tid % 1000 == 0 {
                log.flush().unwrap();
            }
        }
        log.flush().unwrap();
        assert!(old_path(&path).exists());
        let size = |p: &Path| std::fs::metadata(p).unwrap().len();
        assert!(size(&path) <= ROTATE_BYTES && size(&old_path(&path)) <= ROTATE_BYTES);
        let back = read_log(&path).unwrap();
        let tids: Vec<i32> = back
            .iter()
            .map(|e| match e {
                Event::Exited { tid, .. } => *tid,
                _ => -1,
            })
            .collect();
        assert!(tids.windows(2).all(|w| w[1] == w[0] + 1), "in order");
        assert_eq!(*tids.last().unwrap(), n - 1);
        remove_log(&path);
    }
}
