//! `corral bench ff`'s tables and paper 4's figures beside them.

use std::fmt::Write;

use corral_policy::faithful::FfSlice;

use super::report::{ArmRuns, BenchFfReport, Run};
use crate::stats::Spread;

/// Paper 4's published figures (Sec. IV, 24 cores, OpenSolaris TS as the
/// baseline), said under the table.
const PAPER_4: &str = "paper 4 (24-core OpenSolaris, TS baseline): at 200% load FF gains >10% \
     on 8 of 21 programs (up to +107%), 4-10% on 6, <4% on 7; at 100% up to +35%. The gains \
     come from ending preemption by a thread of the same program (\"backstabbing\"): under TS \
     a thread that slept comes back at a raised priority. EEVDF keeps no such priorities, but \
     a waking thread still preempts a running one; FF here puts every thread in SCHED_BATCH \
     (no wake-up preemption: the fixed class's counterpart) besides the nice value and the \
     Table I slice (`ff-preempt`, with --with-wakeup-preemption, keeps wake-up preemption). \
     On 16 cores at 200% load SCHED_BATCH took sysbench mutex's involuntary switches from \
     48,561 to 116 a run and pigz's from 5,812 to 157 at no loss of throughput. On 2 cores \
     a preempted lock holder stalls at most one other core (paper 4: up to 23), so the gain \
     FF can recover is smaller, and any one run's noise on a shared machine is +-10-20%.";

fn quantum(r: &Run) -> String {
    match (r.quantum_ms, r.slice, r.slice_ns) {
        (Some(q), Some(FfSlice::Default), Some(s)) => {
            format!("{q}:dflt({:.1})", s as f64 / 1e6)
        }
        (Some(q), _, Some(s)) => format!("{q}({:.0})", s as f64 / 1e6),
        (Some(q), _, None) => format!("{q}(-)"),
        _ => "-".into(),
    }
}

fn range(s: &Spread, digits: usize) -> String {
    format!("{:.d$} ({:.d$}-{:.d$})", s.median, s.min, s.max, d = digits)
}

fn arm_line(o: &mut String, lead: &str, a: &ArmRuns) {
    // The last run FF profiled (a run may end inside the first period).
    let last = a
        .runs
        .iter()
        .rev()
        .find(|r| r.quantum_ms.is_some())
        .or(a.runs.last());
    let (ratio, icx_ratio, verdict) = match &a.verdict {
        Some(v) => (
            format!("{:.2}x", v.throughput_ratio),
            format!("{:.2}x", v.involuntary_ratio),
            v.word(),
        ),
        None => ("".into(), "".into(), ""),
    };
    let mut not_fair = last
        .and_then(|r| r.threads_not_fair)
        .filter(|&n| n > 0)
        .map_or(String::new(), |n| format!(" ({n} rt thr left alone)"));
    // A run that ended inside FF's first period was never profiled: said,
    // not dropped, so the medians stay unbiased.
    let acted = a.runs.iter().filter(|r| r.quantum_ms.is_some()).count();
    if a.arm.runs_ff() && a.verdict.is_some() && acted < a.runs.len() {
        not_fair += &format!(" (FF acted in {acted}/{} runs)", a.runs.len());
    }
    let _ = writeln!(
        o,
        "{lead:<27} {:<13} {:>26} {:>6} {:>24} {:>6} {:>9} {:>13} {:>5} {verdict}{not_fair}",
        a.arm.name(),
        range(&a.throughput, 1),
        ratio,
        range(&a.involuntary, 0),
        icx_ratio,
        format!("{:.0}", a.voluntary.median),
        last.map_or("-".into(), quantum),
        last.and_then(|r| r.lock_contention)
            .map_or("-".into(), |c| format!("{c:.2}")),
    );
}

/// The tables: per program and load, the pairs, the simulator, paper 4.
pub(crate) fn render(r: &BenchFfReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "bench ff: {} cores, FF period {} ms, {} runs per arm in one shuffled order (seed {}); \
         median (min-max); a LOSS is FF < 0.95x with ranges apart (and, with default-again, \
         farther from 1x than it); quantum = Table I ms \
         (slice read back, ms; dflt: kernel default kept, Table I rows <= {} ms)",
        r.cores, r.period_ms, r.repeat, r.seed, r.keep_default_up_to_ms
    );
    for n in &r.notes {
        let _ = writeln!(o, "{n}");
    }
    let _ = writeln!(
        o,
        "{:<27} {:<13} {:>26} {:>6} {:>24} {:>6} {:>9} {:>13} {:>5} verdict",
        "program load threads (unit)",
        "arm",
        "throughput",
        "/def",
        "involuntary switches",
        "/def",
        "voluntary",
        "quantum",
        "lock"
    );
    for x in &r.rows {
        for (i, a) in x.arms.iter().enumerate() {
            let lead = if i == 0 {
                format!("{} {}% {}t ({})", x.app, x.load_pct, x.threads, x.unit)
            } else {
                String::new()
            };
            arm_line(&mut o, &lead, a);
        }
    }
    if !r.pairs.is_empty() {
        let _ = writeln!(
            o,
            "\ntwo programs at once, each at 100% (paper 4 Fig. 11), medians (min-max):"
        );
    }
    for p in &r.pairs {
        for a in &p.arms {
            let _ = writeln!(
                o,
                "{} + {} {:<13}: {} and {}; involuntary switches of both {}; quanta {:?}",
                p.apps[0],
                p.apps[1],
                a.arm.name(),
                range(&a.throughput[0], 1),
                range(&a.throughput[1], 1),
                range(&a.involuntary, 0),
                a.quantum_ms,
            );
        }
    }
    let _ = writeln!(
        o,
        "\nsimulator (corral-sim faithful vs default, same loads):"
    );
    for s in &r.sim {
        let ratio = if s.default_throughput > 0.0 {
            format!("{:.2}x", s.ff_throughput / s.default_throughput)
        } else {
            "-".into()
        };
        let _ = writeln!(
            o,
            "{:<13} {:>3} cores {:>4}%: ff/default {ratio}; switches {} -> {}",
            s.workload, s.cores, s.load_pct, s.default_switches, s.ff_switches
        );
    }
    let _ = writeln!(o, "\n{PAPER_4}");
    o
}
