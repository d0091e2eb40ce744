//! The decision log: one JSON object per line, written by the monitor when
//! asked (`CORRAL_EVENTS`), read back by `corral run` for its report.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

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

/// Appends events to a file, one line each.
#[derive(Debug)]
pub struct EventLog {
    out: BufWriter<File>,
}

impl EventLog {
    /// Creates (truncates) the log at `path`.
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(EventLog {
            out: BufWriter::new(File::create(path)?),
        })
    }

    /// Writes one event.
    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, event).map_err(io::Error::other)?;
        self.out.write_all(b"\n")
    }

    /// Pushes buffered lines to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Reads a log back; lines that do not parse (a torn last line) are skipped.
pub fn read_log(path: &Path) -> io::Result<Vec<Event>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
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
}
