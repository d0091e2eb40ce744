//! `--metrics ADDR`: the Prometheus (OpenMetrics) text exposition of a
//! running program's stats region (`corral run`) or of a kernel-lock session
//! (`corral attach`), encoded by `prometheus-client`: lock wait per lock
//! and per thread, SSC size, lock-intensive threads, monitor rounds, and
//! what was dropped (contention the lock table could not place, kernel
//! slices a full ring lost). A loopback address unless `--metrics-public`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use corral_runtime::kernel::{KernelLive, KernelReport};
use corral_runtime::stats::{StatsMap, StatsSnapshot};

use super::locks::symbols::Symbolizer;
use crate::CliError;

/// The labels of a lock's series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LockLabels {
    /// Address (hex), or `other` for locks without a slot of their own.
    lock: String,
    kind: String,
    /// The top sampled caller, named; `-` for a kernel lock (none sampled).
    caller: String,
    /// `user` (the program's locks) or `kernel` (`corral attach`).
    space: &'static str,
}

/// The labels of a thread's series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ThreadLabels {
    tid: String,
}

type FloatCounter = Counter<f64, std::sync::atomic::AtomicU64>;
type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// The series both expositions share, filled then registered.
#[derive(Default)]
struct Exposition {
    wait: Family<LockLabels, FloatCounter>,
    contended: Family<LockLabels, Counter>,
    max_wait: Family<LockLabels, FloatGauge>,
    t_wait: Family<ThreadLabels, FloatCounter>,
    t_share: Family<ThreadLabels, FloatGauge>,
}

fn counter(v: u64) -> Counter {
    let c = Counter::<u64>::default();
    c.inc_by(v);
    c
}

fn gauge(v: i64) -> Gauge {
    let g = Gauge::<i64>::default();
    g.set(v);
    g
}

impl Exposition {
    /// One lock's series; `max_wait_ns` where kept.
    fn lock(&self, labels: &LockLabels, wait_ns: u64, contended: u64, max_wait_ns: Option<u64>) {
        self.wait.get_or_create(labels).inc_by(wait_ns as f64 / 1e9);
        self.contended.get_or_create(labels).inc_by(contended);
        if let Some(m) = max_wait_ns {
            self.max_wait.get_or_create(labels).set(m as f64 / 1e9);
        }
    }

    fn thread(&self, tid: impl ToString, wait_ns: u64, share: f64) {
        let labels = ThreadLabels {
            tid: tid.to_string(),
        };
        self.t_wait
            .get_or_create(&labels)
            .inc_by(wait_ns as f64 / 1e9);
        self.t_share.get_or_create(&labels).set(share);
    }

    /// The text, with the scalar series of either driver.
    fn finish(self, ssc_size: u32, intensive: u32, rounds: u64, extra: Registry) -> String {
        let mut reg = extra;
        reg.register("lock_wait_seconds", "Waiting for each lock", self.wait);
        reg.register(
            "lock_contended",
            "Acquisitions of each lock that waited",
            self.contended,
        );
        reg.register(
            "lock_max_wait_seconds",
            "Longest wait for each lock",
            self.max_wait,
        );
        reg.register(
            "thread_lock_wait_seconds",
            "Lock waiting of each thread",
            self.t_wait,
        );
        reg.register(
            "thread_wait_share",
            "Lock waiting over CPU time of each thread",
            self.t_share,
        );
        reg.register(
            "ssc_size",
            "Cores of the SSC (0: none in force)",
            gauge(ssc_size.into()),
        );
        reg.register(
            "lock_intensive_threads",
            "Threads classified lock-intensive",
            gauge(intensive.into()),
        );
        reg.register(
            "monitor_rounds",
            "Decision rounds of the monitor",
            counter(rounds),
        );
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &reg);
        out
    }
}

/// The exposition of `stats`, callers named with `sym`.
pub(crate) fn render(stats: &StatsSnapshot, sym: Option<&mut Symbolizer>) -> String {
    let e = Exposition::default();
    let mut sym = sym;
    for l in &stats.locks {
        let caller = match (l.callers.first(), sym.as_deref_mut()) {
            (Some(c), Some(s)) => s.name(c.addr, true).name.unwrap_or_else(|| "?".into()),
            (Some(c), None) => format!("{:#x}", c.addr),
            (None, _) => "?".into(),
        };
        let labels = LockLabels {
            lock: l.addr.map_or("other".into(), |a| format!("{a:#x}")),
            kind: l.kind.clone(),
            caller,
            space: "user",
        };
        e.lock(&labels, l.wait_ns, l.contended, Some(l.max_wait_ns));
    }
    for t in &stats.threads {
        e.thread(t.tid, t.wait_ns, t.wait_share);
    }
    let mut reg = Registry::with_prefix("corral");
    let overflow = stats
        .locks
        .iter()
        .filter(|l| l.addr.is_none())
        .map(|l| l.contended)
        .sum();
    reg.register(
        "lock_table_overflow",
        "Contended acquisitions of locks that found no slot in the lock table",
        counter(overflow),
    );
    e.finish(
        stats.ssc_bound,
        stats.n_lock_intensive,
        stats.generation,
        reg,
    )
}

/// The exposition of a kernel-lock session (`corral attach`): kernel locks
/// (no longest wait nor callers: the BPF keeps none), threads' kernel lock
/// waiting, and the slices the ring dropped.
pub(crate) fn render_kernel(r: &KernelReport) -> String {
    let e = Exposition::default();
    for l in &r.hot_locks {
        let labels = LockLabels {
            lock: l.addr.clone(),
            kind: l.kind.to_string(),
            caller: "-".into(),
            space: "kernel",
        };
        e.lock(&labels, l.wait_ns, l.count, None);
    }
    for t in &r.threads {
        e.thread(t.tid, t.wait_ns, t.wait_share);
    }
    let mut reg = Registry::with_prefix("corral");
    reg.register(
        "dropped_slices",
        "Kernel slices lost to a full ring",
        counter(r.dropped_slices),
    );
    let intensive = r.threads.iter().filter(|t| t.lock_intensive).count() as u32;
    let rounds = r.decisions.len() as u64 + r.holds;
    e.finish(r.final_bound, intensive, rounds, reg)
}

/// What the endpoint serves.
#[derive(Clone)]
pub(crate) enum Watched {
    /// The stats region of the program whose pid this holds (0: not started).
    Program(Arc<AtomicI32>),
    /// A kernel-lock session's report so far.
    Kernel(KernelLive),
}

/// Refuses an `addr` off loopback unless `public`: checked before anything
/// else starts (a kernel session, the program).
pub(crate) fn check(addr: SocketAddr, public: bool) -> Result<(), CliError> {
    if !addr.ip().is_loopback() && !public {
        return Err(CliError::bad_value(
            "--metrics",
            &addr.to_string(),
            "a loopback address (127.0.0.1 or [::1]); add --metrics-public to bind another",
        ));
    }
    Ok(())
}

/// Binds `addr` (loopback unless `public`) and serves what is `watched` on
/// a thread. Returns the address bound (port 0 picks one).
pub(crate) fn serve(
    addr: SocketAddr,
    public: bool,
    watched: Watched,
) -> Result<SocketAddr, CliError> {
    check(addr, public)?;
    let listener =
        TcpListener::bind(addr).map_err(|e| CliError(format!("--metrics {addr}: {e}")))?;
    let bound = listener.local_addr()?;
    std::thread::Builder::new()
        .name("corral-metrics".into())
        .spawn(move || {
            let mut cache: Option<(String, Symbolizer)> = None;
            for conn in listener.incoming().flatten() {
                // A failed scrape costs that scrape, not the run.
                let _ = answer(conn, &watched, &mut cache);
            }
        })?;
    Ok(bound)
}

/// Answers one HTTP request: the exposition at `/metrics` (or `/`).
fn answer(
    mut conn: TcpStream,
    watched: &Watched,
    cache: &mut Option<(String, Symbolizer)>,
) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut req = Vec::new();
    let mut buf = [0u8; 1024];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 8192 {
        let n = conn.read(&mut buf)?;
        if n == 0 {
            break;
        }
        req.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&req);
    let path = line.split_whitespace().nth(1).unwrap_or("");
    if !matches!(path, "/metrics" | "/") {
        return conn.write_all(
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        );
    }
    let body = match watched {
        Watched::Program(pid) => program_body(pid, cache),
        Watched::Kernel(live) => render_kernel(&live.report()),
    };
    write!(
        conn,
        "HTTP/1.1 200 OK\r\ncontent-type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The program's exposition, or an empty one before it starts.
fn program_body(pid: &AtomicI32, cache: &mut Option<(String, Symbolizer)>) -> String {
    let pid = pid.load(Ordering::Relaxed); // Relaxed: a pid, no data behind it.
    let stats = (pid != 0)
        .then(|| StatsMap::open_local(pid))
        .flatten()
        .map(|m| m.snapshot());
    match stats {
        Some(s) => {
            // Keep the symbolizer (its loaded files) while the maps are the same.
            let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
            if cache.as_ref().is_none_or(|(m, _)| *m != maps) {
                *cache = Some((maps.clone(), Symbolizer::new(&maps)));
            }
            render(&s, cache.as_mut().map(|(_, s)| s))
        }
        None => "# EOF\n".to_string(),
    }
}
