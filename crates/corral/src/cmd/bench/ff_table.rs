//! `corral bench ff`'s tables.

use std::fmt::Write;

use super::ff::{BenchFfReport, Run};

fn quantum(r: &Run) -> String {
    match (r.quantum_ms, r.slice_ns) {
        (Some(q), Some(s)) => format!("{q} ms ({:.0})", s as f64 / 1e6),
        (Some(q), None) => format!("{q} ms (-)"),
        _ => "-".into(),
    }
}

fn ratio(a: f64, b: f64) -> String {
    if a > 0.0 {
        format!("{:.2}x", b / a)
    } else {
        "-".into()
    }
}

/// The tables: per program and load, the pairs, the simulator.
pub(crate) fn render(r: &BenchFfReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "bench ff: {} cores, FF period {} ms; throughput FF/default; involuntary (voluntary) \
         context switches; quantum chosen (slice read back, ms)",
        r.cores, r.period_ms
    );
    for n in &r.notes {
        let _ = writeln!(o, "{n}");
    }
    let _ = writeln!(
        o,
        "{:<17} {:>5} {:>4} {:>14} {:>14} {:>6} {:>19} {:>19} {:>6} {:>13} {:>5}",
        "program",
        "load",
        "thr",
        "default",
        "ff",
        "ff/def",
        "default icx (vcx)",
        "ff icx (vcx)",
        "icx",
        "quantum",
        "lock"
    );
    for x in &r.rows {
        let _ = writeln!(
            o,
            "{:<17} {:>4}% {:>4} {:>14.1} {:>14.1} {:>6} {:>19} {:>19} {:>6} {:>13} {:>5.2}",
            x.app,
            x.load_pct,
            x.threads,
            x.default.throughput,
            x.ff.throughput,
            ratio(x.default.throughput, x.ff.throughput),
            format!("{} ({})", x.default.involuntary, x.default.voluntary),
            format!("{} ({})", x.ff.involuntary, x.ff.voluntary),
            ratio(x.default.involuntary as f64, x.ff.involuntary as f64),
            quantum(&x.ff),
            x.ff.lock_contention.unwrap_or(0.0),
        );
    }
    let _ = writeln!(o, "\ntwo programs at once, each at 100% (paper 4 Fig. 11):");
    for p in &r.pairs {
        let _ = writeln!(
            o,
            "{} + {}: ff/default {} and {}; involuntary switches of both {} -> {}; quanta {} and {}",
            p.apps[0],
            p.apps[1],
            ratio(p.default[0].throughput, p.ff[0].throughput),
            ratio(p.default[1].throughput, p.ff[1].throughput),
            p.involuntary[0],
            p.involuntary[1],
            quantum(&p.ff[0]),
            quantum(&p.ff[1]),
        );
    }
    let _ = writeln!(
        o,
        "\nsimulator (corral-sim faithful vs default, same loads):"
    );
    for s in &r.sim {
        let _ = writeln!(
            o,
            "{:<13} {:>3} cores {:>4}%: ff/default {}; switches {} -> {}",
            s.workload,
            s.cores,
            s.load_pct,
            ratio(s.default_throughput, s.ff_throughput),
            s.default_switches,
            s.ff_switches
        );
    }
    o
}
