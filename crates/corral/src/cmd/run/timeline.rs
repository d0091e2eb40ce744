//! PROG's stats region sampled while it runs, for `corral report --svg`:
//! the SSC size and each thread's lock wait share per interval.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use corral_runtime::stats::{StatsMap, StatsSnapshot};
use serde::{Deserialize, Serialize};

/// Samples kept; past this, every other one goes and the interval doubles.
const MAX_POINTS: usize = 2_000;

/// One thread's waiting over one interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ThreadShare {
    /// Thread id.
    pub(crate) tid: i32,
    /// Lock waiting over CPU time in the interval, 0 to 1.
    pub(crate) wait_share: f64,
}

/// The state at one sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct TimePoint {
    /// Milliseconds since PROG started.
    pub(crate) t_ms: f64,
    /// SSC size in cores (0: none in force).
    pub(crate) ssc_bound: u32,
    /// Threads that waited or ran in the interval.
    pub(crate) threads: Vec<ThreadShare>,
}

/// The shares of the interval from `prev` to `now`.
fn point(t_ms: f64, prev: Option<&StatsSnapshot>, now: &StatsSnapshot) -> TimePoint {
    let threads = now
        .threads
        .iter()
        .filter_map(|t| {
            let (w0, c0) = prev
                .and_then(|p| p.threads.iter().find(|o| o.tid == t.tid))
                .map_or((0, 0), |o| (o.wait_ns, o.cpu_ns));
            let cpu = t.cpu_ns.saturating_sub(c0);
            (cpu > 0).then(|| ThreadShare {
                tid: t.tid,
                wait_share: (t.wait_ns.saturating_sub(w0) as f64 / cpu as f64).min(1.0),
            })
        })
        .collect();
    TimePoint {
        t_ms,
        ssc_bound: now.ssc_bound,
        threads,
    }
}

/// A sampler thread: started before PROG, reads the stats region of the pid
/// in `pid` every interval until `stop`.
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    points: Arc<Mutex<Vec<TimePoint>>>,
    thread: std::thread::JoinHandle<()>,
}

impl Sampler {
    /// Starts sampling every `every` once `pid` is set.
    pub(crate) fn start(pid: Arc<AtomicI32>, every: Duration) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let points = Arc::new(Mutex::new(Vec::new()));
        let (s, p) = (stop.clone(), points.clone());
        let thread = std::thread::Builder::new()
            .name("corral-timeline".into())
            .spawn(move || sample(&pid, every, &s, &p))?;
        Ok(Sampler {
            stop,
            points,
            thread,
        })
    }

    /// Stops and returns the samples.
    pub(crate) fn finish(self) -> Vec<TimePoint> {
        self.stop.store(true, Ordering::Relaxed); // Relaxed: a flag, nothing behind it.
        let _ = self.thread.join();
        std::mem::take(&mut *self.points.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

fn sample(pid: &AtomicI32, mut every: Duration, stop: &AtomicBool, out: &Mutex<Vec<TimePoint>>) {
    let start = Instant::now();
    let mut prev: Option<StatsSnapshot> = None;
    // Relaxed: flags and a pid, nothing behind them.
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(every);
        let pid = pid.load(Ordering::Relaxed);
        let Some(now) = (pid != 0)
            .then(|| StatsMap::open_local(pid))
            .flatten()
            .map(|m| m.snapshot())
        else {
            continue;
        };
        let t_ms = start.elapsed().as_secs_f64() * 1e3;
        let mut points = out.lock().unwrap_or_else(|p| p.into_inner());
        points.push(point(t_ms, prev.as_ref(), &now));
        if points.len() >= MAX_POINTS {
            let kept: Vec<TimePoint> = points.drain(..).step_by(2).collect();
            *points = kept;
            every *= 2;
        }
        prev = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_runtime::stats::ThreadSnapshot;

    fn snap(threads: &[(i32, u64, u64)]) -> StatsSnapshot {
        StatsSnapshot {
            pid: 1,
            ssc_bound: 2,
            n_lock_intensive: 0,
            generation: 1,
            throughput: 0.0,
            threads: threads
                .iter()
                .map(|&(tid, wait_ns, cpu_ns)| ThreadSnapshot {
                    tid,
                    wait_ns,
                    cpu_ns,
                    wait_share: 0.0,
                    lock_intensive: false,
                    contended: 0,
                    slices: 0,
                    last_share: 0.0,
                    yields: 0,
                })
                .collect(),
            lock_profile: true,
            locks: vec![],
            events_dropped: 0,
            messages_dropped: 0,
            threads_made: (0, 0),
        }
    }

    #[test]
    fn shares_are_of_the_interval_not_of_the_life() {
        let a = snap(&[(1, 100, 1_000), (2, 0, 1_000)]);
        let b = snap(&[(1, 100, 2_000), (2, 900, 2_000), (3, 0, 0)]);
        let p = point(5.0, Some(&a), &b);
        assert_eq!(p.ssc_bound, 2);
        assert_eq!(
            p.threads,
            vec![
                ThreadShare {
                    tid: 1,
                    wait_share: 0.0
                },
                ThreadShare {
                    tid: 2,
                    wait_share: 0.9
                }
            ],
            "thread 3 did not run"
        );
        assert_eq!(point(1.0, None, &a).threads[0].wait_share, 0.1);
    }
}
