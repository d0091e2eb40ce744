//! The thread that runs FF beside the programs: one period per
//! `monitoring_period_ns`, until stopped.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use corral_policy::faithful::FfParams;

use super::program::FfProgram;
use super::report::FfReport;

/// A running FF driver; [`FfDriver::finish`] stops it and returns the report.
#[derive(Debug)]
pub struct FfDriver {
    stop: mpsc::Sender<()>,
    handle: JoinHandle<FfReport>,
}

impl FfDriver {
    /// Starts FF over the programs rooted at `roots`. `on_first` is called
    /// once per program after its first period with its one-line notices
    /// (no PMU, slice refused), so they are said while the program runs.
    pub fn start(
        params: FfParams,
        roots: Vec<i32>,
        on_first: impl Fn(Vec<String>) + Send + 'static,
    ) -> std::io::Result<FfDriver> {
        let (stop, rx) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("corral-ff".into())
            .spawn(move || {
                let started = Instant::now();
                let mut programs: Vec<FfProgram> =
                    roots.iter().map(|&r| FfProgram::new(r, params)).collect();
                let period = Duration::from_nanos(params.monitoring_period_ns.max(1));
                let mut said = false;
                while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(period) {
                    let t_ms = started.elapsed().as_secs_f64() * 1e3;
                    for p in &mut programs {
                        p.period(t_ms, params.monitoring_period_ns);
                    }
                    if !said {
                        said = true;
                        let mut lines: Vec<String> = Vec::new();
                        for p in &programs {
                            lines.extend(p.miss_source().line());
                            lines.extend(p.slice_support().line());
                        }
                        lines.dedup();
                        on_first(lines);
                    }
                }
                FfReport {
                    period_ms: params.monitoring_period_ns / 1_000_000,
                    range: params.range,
                    programs: programs.iter().map(FfProgram::report).collect(),
                }
            })?;
        Ok(FfDriver { stop, handle })
    }

    /// Stops the driver (at once, mid-period) and returns its report.
    pub fn finish(self) -> FfReport {
        let _ = self.stop.send(());
        self.handle.join().unwrap_or_else(|_| FfReport {
            period_ms: 0,
            range: 0.0,
            programs: Vec::new(),
        })
    }
}
