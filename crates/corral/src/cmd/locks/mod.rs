//! The lock profile as the CLI shows it: the top locks with their callers
//! named (`perf lock contention`'s columns), and per thread. Shared by
//! `corral run`'s exit table and JSON report, `corral top` and `corral
//! report`. With `--kernel-locks` the kernel's locks join them as rows.

pub(crate) mod kernel;
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

/// Where a lock lives: the program's memory or the kernel's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LockSpace {
    /// A lock of the program, profiled by corral's library.
    #[default]
    User,
    /// A kernel lock its threads waited on, seen by BPF (`--kernel-locks`).
    Kernel,
}

/// One lock's contention, named.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct LockReport {
    /// User space or kernel (reports from before kernel rows: user).
    #[serde(default)]
    pub(crate) space: LockSpace,
    /// The lock's address (in the process, or the kernel's), hex; `None`
    /// for user locks that found no slot of their own in the table,
    /// counted together.
    pub(crate) addr: Option<String>,
    /// The data symbol the lock lies in (a static mutex, a static kernel
    /// lock as `symbol+0xOFF`), if any.
    pub(crate) symbol: Option<String>,
    /// User: `mutex`, `spinlock`, `rwlock:R`, `rwlock:W`, `rwlock:RW`.
    /// Kernel: those, `rwsem:R`, `rtmutex`, `pcpu-sem:W`, `semaphore`, ...
    pub(crate) kind: String,
    /// Acquisitions that had to wait.
    pub(crate) contended: u64,
    /// Their total waiting, ns (kernel: sleeping included).
    pub(crate) wait_ns: u64,
    /// The longest wait, ns (`None`: not kept, as for kernel locks).
    pub(crate) max_wait_ns: Option<u64>,
    /// Mean wait, ns.
    pub(crate) avg_wait_ns: u64,
    /// Distinct threads that waited, exact up to 64 (`None`: not kept, as
    /// for kernel locks).
    pub(crate) waiters: Option<u32>,
    /// Sampled callers, most samples first.
    pub(crate) callers: Vec<CallerReport>,
    /// Samples of further callers.
    pub(crate) other_samples: u32,
    /// How its waiters waited: spun to the hand-off, spun then slept, or
    /// slept at once, and why (`None`: not kept, as for kernel locks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) waits: Option<corral_runtime::lockprof::snapshot::WaitOutcomes>,
}

impl LockReport {
    /// The top caller's name, `?` when unnamed, `-` for a kernel lock (the
    /// BPF samples no callers).
    pub(crate) fn caller_name(&self) -> &str {
        if self.space == LockSpace::Kernel {
            return "-";
        }
        self.callers
            .first()
            .and_then(|c| c.function.as_deref())
            .unwrap_or("?")
    }

    /// The lock as the table names it: its symbol, else its address, else
    /// `(other locks)`; a kernel lock's name is prefixed `kernel ` (`kernel
    /// files_lock+0x40`, `kernel 0xffff888100a2b3c0`), telling the rows apart.
    pub(crate) fn lock_name(&self) -> String {
        let name = match (&self.symbol, &self.addr) {
            (Some(s), _) => s.clone(),
            (None, Some(a)) => a.clone(),
            (None, None) => "(other locks)".into(),
        };
        match self.space {
            LockSpace::User => name,
            LockSpace::Kernel => format!("kernel {name}"),
        }
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
        space: LockSpace::User,
        addr: l.addr.map(|a| format!("{a:#x}")),
        symbol,
        kind: l.kind.clone(),
        contended: l.contended,
        wait_ns: l.wait_ns,
        max_wait_ns: Some(l.max_wait_ns),
        avg_wait_ns: l.avg_wait_ns(),
        waiters: Some(l.waiters),
        callers,
        other_samples: l.other_samples,
        waits: (l.waits.total() > 0).then_some(l.waits),
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

/// `value` as a table cell, `-` where it is not kept.
fn known<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "-".into(), |v| v.to_string())
}

/// The top `n` locks as a `perf lock contention`-like table; a kernel
/// lock's name starts `kernel ` (see [`LockReport::lock_name`]).
pub(crate) fn lock_table(locks: &[LockReport], n: usize) -> String {
    let mut out = format!(
        "{:>10} {:>11} {:>11} {:>11} {:>7} {:>9}  {:<18} {}\n",
        "contended", "total wait", "max wait", "avg wait", "waiters", "type", "lock", "caller"
    );
    for l in locks.iter().take(n) {
        let caller = match l.callers.first().and_then(|c| c.location.as_ref()) {
            Some(loc) => format!("{} ({loc})", l.caller_name()),
            None => l.caller_name().to_string(),
        };
        out += &format!(
            "{:>10} {:>11} {:>11} {:>11} {:>7} {:>9}  {:<18} {}\n",
            l.contended,
            duration(l.wait_ns),
            known(l.max_wait_ns.map(duration)),
            duration(l.avg_wait_ns),
            known(l.waiters),
            l.kind,
            l.lock_name(),
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
            space: LockSpace::User,
            addr: addr.map(Into::into),
            symbol: None,
            kind: "mutex".into(),
            contended,
            wait_ns: contended * 1_000,
            max_wait_ns: Some(5_000),
            avg_wait_ns: 1_000,
            waiters: Some(3),
            callers: vec![CallerReport {
                addr: "0x1234".into(),
                samples: 9,
                function: Some("worker".into()),
                location: Some("w.c:12".into()),
                object: None,
            }],
            other_samples: 0,
            waits: None,
        };
        let t = lock_table(&[l(Some("0x7f00"), 42), l(None, 7)], 5);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with(" contended  total wait"));
        assert!(lines[1].contains("42") && lines[1].contains("  0x7f00"));
        assert!(lines[1].ends_with("worker (w.c:12)"), "{}", lines[1]);
        assert!(lines[2].contains("(other locks)"));
        assert_eq!(lock_table(&[l(None, 1)], 0).lines().count(), 1);
    }
}
