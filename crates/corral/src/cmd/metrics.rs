//! `--metrics ADDR`: the Prometheus (OpenMetrics) text exposition of a
//! running program's stats file, encoded by `prometheus-client`: lock wait
//! per lock and per thread, SSC size, lock-intensive threads, monitor
//! rounds, and contention the lock table could not place. A loopback
//! address unless `--metrics-public`.

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

use corral_runtime::stats::{StatsMap, StatsSnapshot};

use super::locks::symbols::Symbolizer;
use crate::CliError;

/// The labels of a lock's series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LockLabels {
    /// Address (hex), or `other` for locks without a slot of their own.
    lock: String,
    kind: String,
    /// The top sampled caller, named.
    caller: String,
}

/// The labels of a thread's series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ThreadLabels {
    tid: String,
}

type FloatCounter = Counter<f64, std::sync::atomic::AtomicU64>;
type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// The exposition of `stats`, callers named with `sym`.
pub(crate) fn render(stats: &StatsSnapshot, sym: Option<&mut Symbolizer>) -> String {
    let mut reg = Registry::with_prefix("corral");
    let wait = Family::<LockLabels, FloatCounter>::default();
    let contended = Family::<LockLabels, Counter>::default();
    let max_wait = Family::<LockLabels, FloatGauge>::default();
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
        };
        wait.get_or_create(&labels).inc_by(l.wait_ns as f64 / 1e9);
        contended.get_or_create(&labels).inc_by(l.contended);
        max_wait
            .get_or_create(&labels)
            .set(l.max_wait_ns as f64 / 1e9);
    }
    reg.register("lock_wait_seconds", "Waiting for each lock", wait);
    reg.register(
        "lock_contended",
        "Acquisitions of each lock that waited",
        contended,
    );
    reg.register(
        "lock_max_wait_seconds",
        "Longest wait for each lock",
        max_wait,
    );
    let t_wait = Family::<ThreadLabels, FloatCounter>::default();
    let t_share = Family::<ThreadLabels, FloatGauge>::default();
    for t in &stats.threads {
        let labels = ThreadLabels {
            tid: t.tid.to_string(),
        };
        t_wait.get_or_create(&labels).inc_by(t.wait_ns as f64 / 1e9);
        t_share.get_or_create(&labels).set(t.wait_share);
    }
    reg.register(
        "thread_lock_wait_seconds",
        "Lock waiting of each thread",
        t_wait,
    );
    reg.register(
        "thread_wait_share",
        "Lock waiting over CPU time of each thread",
        t_share,
    );
    let gauge = |v: i64| {
        let g = Gauge::<i64>::default();
        g.set(v);
        g
    };
    reg.register(
        "ssc_size",
        "Cores of the SSC (0: none in force)",
        gauge(stats.ssc_bound.into()),
    );
    reg.register(
        "lock_intensive_threads",
        "Threads classified lock-intensive",
        gauge(stats.n_lock_intensive.into()),
    );
    let rounds = Counter::<u64>::default();
    rounds.inc_by(stats.generation);
    reg.register("monitor_rounds", "Decision rounds of the monitor", rounds);
    let dropped = Counter::<u64>::default();
    dropped.inc_by(
        stats
            .locks
            .iter()
            .filter(|l| l.addr.is_none())
            .map(|l| l.contended)
            .sum(),
    );
    reg.register(
        "lock_table_overflow",
        "Contended acquisitions of locks that found no slot in the lock table",
        dropped,
    );
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &reg);
    out
}

/// Binds `addr` (loopback unless `public`) and serves the stats of the
/// process whose pid `pid` holds (0: not started yet) on a thread.
/// Returns the address bound (port 0 picks one).
pub(crate) fn serve(
    addr: SocketAddr,
    public: bool,
    pid: Arc<AtomicI32>,
) -> Result<SocketAddr, CliError> {
    if !addr.ip().is_loopback() && !public {
        return Err(CliError::bad_value(
            "--metrics",
            &addr.to_string(),
            "a loopback address (127.0.0.1 or [::1]); add --metrics-public to bind another",
        ));
    }
    let listener =
        TcpListener::bind(addr).map_err(|e| CliError(format!("--metrics {addr}: {e}")))?;
    let bound = listener.local_addr()?;
    std::thread::Builder::new()
        .name("corral-metrics".into())
        .spawn(move || {
            let mut cache: Option<(String, Symbolizer)> = None;
            for conn in listener.incoming().flatten() {
                // A failed scrape costs that scrape, not the run.
                let _ = answer(conn, &pid, &mut cache);
            }
        })?;
    Ok(bound)
}

/// Answers one HTTP request: the exposition at `/metrics` (or `/`).
fn answer(
    mut conn: TcpStream,
    pid: &AtomicI32,
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
    let pid = pid.load(Ordering::Relaxed); // Relaxed: a pid, no data behind it.
    let stats = (pid != 0)
        .then(|| StatsMap::open(&corral_runtime::abi::stats_path(pid)).ok())
        .flatten()
        .map(|m| m.snapshot());
    let body = match stats {
        Some(s) => {
            // Keep the symbolizer (its loaded files) while the maps are the same.
            let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
            if cache.as_ref().is_none_or(|(m, _)| *m != maps) {
                *cache = Some((maps.clone(), Symbolizer::new(&maps)));
            }
            render(&s, cache.as_mut().map(|(_, s)| s))
        }
        None => "# EOF\n".to_string(),
    };
    write!(
        conn,
        "HTTP/1.1 200 OK\r\ncontent-type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}
