//! A kernel-lock session: the source and the monitor on their own thread,
//! polling the ring of slices until told to finish.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::kallsyms::KernelSymbols;
use super::monitor::MonitorConfig;
use super::monitor::{KernelMonitor, ReportInputs};
use super::report::{HotLock, KernelReport};
use super::source::KernelLockSource;
use corral_locks::sys::clock::monotonic_ns;

/// How often the monitor reads the ring and re-places threads. Paper 1 acts
/// at every slice end in the kernel; 20 ms keeps a user-space monitor within
/// a few CFS slices of that at negligible cost.
pub(super) const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Lowest address of the x86-64 kernel image (and modules): static locks
/// live above it, allocated ones below, in the direct map.
const KERNEL_IMAGE_START: u64 = 0xffff_ffff_8000_0000;

/// A running monitor; [`KernelSession::finish`] stops it, yields the report
/// (affinity read back before anything is undone) and gives the threads
/// still running their original affinity. Dropping it without `finish`
/// stops it too. The process running the session is never measured nor
/// placed, even while tracked (see [`KernelSession::track`]).
#[derive(Debug)]
pub struct KernelSession {
    stop: Arc<AtomicBool>,
    /// Shared with the worker so that tracking takes effect at once, not at
    /// its next poll: a fork right after `track` must already be followed.
    source: Arc<Mutex<KernelLockSource>>,
    /// Shared with [`KernelLive`] readers between the worker's polls.
    monitor: Arc<Mutex<KernelMonitor>>,
    worker: Option<JoinHandle<KernelReport>>,
}

/// A handle reading a running session's report so far (`corral attach
/// --metrics`); it outlives the session harmlessly, reporting its end.
#[derive(Debug, Clone)]
pub struct KernelLive {
    source: Arc<Mutex<KernelLockSource>>,
    monitor: Arc<Mutex<KernelMonitor>>,
    /// kallsyms, read at the first report that needs it (tens of ms).
    symbols: Arc<Mutex<Option<KernelSymbols>>>,
}

impl KernelLive {
    /// The report so far, as [`KernelSession::finish`] would return it now
    /// (without restoring anything).
    pub fn report(&self) -> KernelReport {
        let mut symbols = lock(&self.symbols);
        // Taken one at a time, as the worker does: no lock order to keep.
        let inputs = inputs(&mut lock(&self.source), std::process::id(), &mut symbols);
        lock(&self.monitor).report(monotonic_ns(), inputs)
    }
}

/// Locks `source`; a panic elsewhere leaves the maps usable.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl KernelSession {
    /// Starts monitoring with `source` (already tracking whatever it was
    /// told) under `cfg`.
    pub fn start(source: KernelLockSource, cfg: MonitorConfig) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let source = Arc::new(Mutex::new(source));
        let monitor = Arc::new(Mutex::new(KernelMonitor::new(cfg, monotonic_ns())));
        let (stop2, source2, monitor2) = (stop.clone(), source.clone(), monitor.clone());
        let worker = std::thread::Builder::new()
            .name("corral-kmon".into())
            .spawn(move || run(&source2, &monitor2, &stop2))?;
        Ok(KernelSession {
            stop,
            source,
            monitor,
            worker: Some(worker),
        })
    }

    /// A handle on the report so far, for a reader on another thread.
    pub fn live(&self) -> KernelLive {
        KernelLive {
            source: self.source.clone(),
            monitor: self.monitor.clone(),
            symbols: Arc::new(Mutex::new(None)),
        }
    }

    /// Tracks process `tgid` from now on: when this returns, the kernel
    /// counts its slices and (following forks) adds the processes it forks.
    /// Tracking the session's own process lets a program it spawns be
    /// followed from its fork; its own slices are still left out.
    pub fn track(&self, tgid: u32) -> std::io::Result<()> {
        lock(&self.source).track(tgid)
    }

    /// Stops tracking process `tgid` (the processes it forked stay tracked).
    pub fn untrack(&self, tgid: u32) {
        lock(&self.source).untrack(tgid);
    }

    /// Stops after a last read and returns the report.
    pub fn finish(mut self) -> KernelReport {
        self.stop.store(true, Ordering::Release); // pairs with the worker's Acquire load
        self.worker
            .take()
            .expect("worker")
            .join()
            .expect("kernel monitor thread panicked")
    }
}

impl Drop for KernelSession {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release); // as in `finish`
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

fn run(
    shared: &Mutex<KernelLockSource>,
    monitor: &Mutex<KernelMonitor>,
    stop: &AtomicBool,
) -> KernelReport {
    // The monitor's own process: tracked only across a spawn, never placed.
    let own = std::process::id();
    let mut batch = Vec::new();
    loop {
        let last = stop.load(Ordering::Acquire);
        batch.clear();
        lock(shared).drain(&mut batch);
        let mut m = lock(monitor);
        for rec in batch.iter().filter(|r| r.tgid != own) {
            m.on_slice(rec);
        }
        m.apply(monotonic_ns());
        drop(m);
        if last {
            break;
        }
        std::thread::sleep(POLL_INTERVAL);
    }
    let inputs = inputs(&mut lock(shared), own, &mut None);
    let mut m = lock(monitor);
    let report = m.report(monotonic_ns(), inputs);
    m.restore();
    report
}

/// What the report takes from `source`; `symbols` caches kallsyms.
fn inputs(
    source: &mut KernelLockSource,
    own: u32,
    symbols: &mut Option<KernelSymbols>,
) -> ReportInputs {
    let config = source.config();
    // Every lock: the CLI's table shows the top ones, the JSON all; the
    // BPF map bounds them.
    let hottest = source.lock_hotness();
    // Reading kallsyms costs tens of ms; only static locks (in the kernel
    // image or modules, not the direct map) can be named by it.
    if symbols.is_none() && hottest.iter().any(|l| l.addr >= KERNEL_IMAGE_START) {
        *symbols = Some(KernelSymbols::read());
    }
    let hot_locks = hottest
        .into_iter()
        .map(|l| HotLock {
            addr: format!("{:#x}", l.addr),
            symbol: symbols.as_ref().and_then(|s| s.name(l.addr)),
            kind: l.kind(),
            wait_ns: l.wait_ns,
            count: l.count,
        })
        .collect();
    ReportInputs {
        kinds: config.kinds.names(),
        follow_forks: config.follow_forks,
        processes: source.tracked().into_iter().filter(|&p| p != own).collect(),
        dropped: source.dropped(),
        hot_locks,
    }
}
