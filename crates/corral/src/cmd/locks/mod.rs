//! The lock profile as the CLI shows it: the top locks with their callers
//! named (`perf lock contention`'s columns), and per thread. Shared by
//! `corral run`'s exit table and JSON report, `corral top` and `corral
//! report`.

pub(crate) mod symbols;

use corral_runtime::stats::{LockSnapshot, StatsSnapshot};
use serde::{Deserialize, Serialize};

use symbols::Symbolizer;

/// One sampled caller of a lock, named.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct CallerReport {
    /// Return address in the process, hex.
    pub(crate) addr: String,
    /// Contended acquisitions sampled from here.
    pub(crate) samples: u32,
    /// `function` (with debug info) or `symbol+0xOFF`, or `file+0xOFF`.
    pub(crate) function: Option<String>,
    /// `file:line`, with debug info.
    pub(crate) location: Option<String>,
    /// The file the address is in.
    pub(crate) object: Option<String>,
}

/// One lock's contention, named.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct LockReport {
    /// The lock's address in the process, hex; `None` for locks that found
    /// no slot of their own in the table, counted together.
    pub(crate) addr: Option<String>,
    /// The data symbol the lock lies in (a static mutex), if any.
    pub(crate) symbol: Option<String>,
    /// `mutex`, `spinlock`, `rwlock:R`, `rwlock:W`, `rwlock:RW`.
    pub(crate) kind: String,
    /// Acquisitions that had to wait.
    pub(crate) contended: u64,
    /// Their total waiting, ns.
    pub(crate) wait_ns: u64,
    /// The longest wait, ns.
    pub(crate) max_wait_ns: u64,
    /// Mean wait, ns.
    pub(crate) avg_wait_ns: u64,
    /// Distinct threads that waited (exact up to 64).
    pub(crate) waiters: u32,
    /// Sampled callers, most samples first.
    pub(crate) callers: Vec<CallerReport>,
    /// Samples of further callers.
    pub(crate) other_samples: u32,
}

impl LockReport {
    /// The top caller's name, or `?`.
    pub(crate) fn caller_name(&self) -> &str {
        self.callers
            .first()
            .and_then(|c| c.function.as_deref())
            .unwrap_or("?")
    }
}

/// Names every lock of `stats` with the process's `maps` (none: addresses
/// stay unnamed).
pub(crate) fn lock_reports(stats: &StatsSnapshot, maps: Option<&str>) -> Vec<LockReport> {
    let mut sym = maps.map(Symbolizer::new);
    stats
        .locks
        .iter()
        .map(|l| lock_report(l, sym.as_mut()))
        .collect()
}

fn lock_report(l: &LockSnapshot, mut sym: Option<&mut Symbolizer>) -> LockReport {
    let callers = l
        .callers
        .iter()
        .map(|c| {
            let named = match (&mut sym, c.addr) {
                (_, corral_runtime::lockprof::UNKNOWN_CALLER) => Default::default(),
                (Some(s), a) => s.name(a, true),
                (None, _) => Default::default(),
            };
            CallerReport {
                addr: format!("{:#x}", c.addr),
                samples: c.samples,
                function: named.name,
                location: named.location,
                object: named.object,
            }
        })
        .collect();
    let symbol = match (l.addr, sym) {
        (Some(a), Some(s)) => Some(s.name(a, false))
            .filter(|n| n.symbolic)
            .and_then(|n| n.name),
        _ => None,
    };
    LockReport {
        addr: l.addr.map(|a| format!("{a:#x}")),
        symbol,
        kind: l.kind.clone(),
        contended: l.contended,
        wait_ns: l.wait_ns,
        max_wait_ns: l.max_wait_ns,
        avg_wait_ns: l.avg_wait_ns(),
        waiters: l.waiters,
        callers,
        other_samples: l.other_samples,
    }
}

/// `ns` as perf prints durations: `ns`, `us`, `ms` or `s`.
pub(crate) fn duration(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.2} us", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.2} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// The top `n` locks as a `perf lock contention`-like table.
pub(crate) fn lock_table(locks: &[LockReport], n: usize) -> String {
    let mut out = format!(
        "{:>10} {:>11} {:>11} {:>11} {:>7} {:>9}  {:<18} {}\n",
        "contended", "total wait", "max wait", "avg wait", "waiters", "type", "lock", "caller"
    );
    for l in locks.iter().take(n) {
        let lock = l
            .symbol
            .clone()
            .or_else(|| l.addr.clone())
            .unwrap_or_else(|| "(other locks)".into());
        let caller = match l.callers.first().and_then(|c| c.location.as_ref()) {
            Some(loc) => format!("{} ({loc})", l.caller_name()),
            None => l.caller_name().to_string(),
        };
        out += &format!(
            "{:>10} {:>11} {:>11} {:>11} {:>7} {:>9}  {:<18} {}\n",
            l.contended,
            duration(l.wait_ns),
            duration(l.max_wait_ns),
            duration(l.avg_wait_ns),
            l.waiters,
            l.kind,
            lock,
            caller
        );
    }
    out
}

/// Per thread (`--per-thread`, as `perf lock contention -t`): contended
/// acquisitions, total and mean wait, wait share, most waiting first.
pub(crate) fn thread_table(stats: &StatsSnapshot) -> String {
    let mut threads: Vec<_> = stats.threads.iter().collect();
    threads.sort_by_key(|t| core::cmp::Reverse(t.wait_ns));
    let mut out = format!(
        "{:>10} {:>11} {:>11} {:>10} {:>8}  {}\n",
        "contended", "total wait", "avg wait", "wait share", "tid", "lock-intensive"
    );
    for t in threads {
        out += &format!(
            "{:>10} {:>11} {:>11} {:>9.1}% {:>8}  {}\n",
            t.contended,
            duration(t.wait_ns),
            duration(t.wait_ns.checked_div(t.contended).unwrap_or(0)),
            100.0 * t.wait_share,
            t.tid,
            if t.lock_intensive { "yes" } else { "no" }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_perf_prints_them() {
        assert_eq!(duration(999), "999 ns");
        assert_eq!(duration(1_500), "1.50 us");
        assert_eq!(duration(2_500_000), "2.50 ms");
        assert_eq!(duration(3_000_000_000), "3.00 s");
    }

    #[test]
    fn the_table_names_lock_and_caller_and_counts_the_rest_as_other() {
        let l = |addr: Option<&str>, contended| LockReport {
            addr: addr.map(Into::into),
            symbol: None,
            kind: "mutex".into(),
            contended,
            wait_ns: contended * 1_000,
            max_wait_ns: 5_000,
            avg_wait_ns: 1_000,
            waiters: 3,
            callers: vec![CallerReport {
                addr: "0x1234".into(),
                samples: 9,
                function: Some("worker".into()),
                location: Some("w.c:12".into()),
                object: None,
            }],
            other_samples: 0,
        };
        let t = lock_table(&[l(Some("0x7f00"), 42), l(None, 7)], 5);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with(" contended  total wait"));
        assert!(lines[1].contains("42") && lines[1].contains("0x7f00"));
        assert!(lines[1].ends_with("worker (w.c:12)"), "{}", lines[1]);
        assert!(lines[2].contains("(other locks)"));
        assert_eq!(lock_table(&[l(None, 1)], 0).lines().count(), 1);
    }
}
