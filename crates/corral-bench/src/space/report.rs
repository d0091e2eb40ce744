//! What `corral bench space` measured, as JSON and as the printed
//! distribution and worst points.

use std::fmt::Write as _;

use serde::Serialize;

use super::point::Point;
use crate::peer::Peer;
use crate::stats;

/// A column: the program as it is, corral's default, or a peer library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Arm {
    /// glibc's own locks: the baseline every ratio is to.
    Glibc,
    /// glibc again (`--with-control`): the machine's noise, as a ratio.
    GlibcAgain,
    /// `corral run`'s defaults.
    Default,
    /// Another lock library (`--peer`).
    Peer(Peer),
}

impl Arm {
    /// The column's name.
    pub(crate) fn name(&self) -> &str {
        match self {
            Arm::Glibc => "glibc",
            Arm::GlibcAgain => "glibc-again",
            Arm::Default => "default",
            Arm::Peer(p) => &p.name,
        }
    }
}

/// One run.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Run {
    /// Critical sections a second, by the program's own clock; `None` for a
    /// run that failed.
    pub(crate) rate: Option<f64>,
    /// Critical sections done.
    pub(crate) ops: u64,
    /// User plus system CPU seconds.
    pub(crate) cpu_s: f64,
    /// Wall seconds from spawn to exit.
    pub(crate) wall_s: f64,
    /// corral's SSC size when the program exited (its stats region; none
    /// where corral never loaded or for other columns): under the CPU
    /// count, the program ended confined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssc_bound: Option<u32>,
    /// Why the run gave no rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) failed: Option<String>,
}

impl Run {
    /// CPU seconds per million critical sections.
    fn cpu_per_mop(&self) -> Option<f64> {
        (self.rate.is_some() && self.ops > 0).then(|| self.cpu_s / self.ops as f64 * 1e6)
    }
}

/// How a column did at a point against glibc.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Verdict {
    /// The ratio's 95% interval lies wholly below [`stats::BAR`].
    Loses,
    /// Neither.
    Even,
    /// The interval lies wholly above 1 / [`stats::BAR`].
    Wins,
    /// Too few good rounds for an interval: judged by the median alone.
    Unsure,
    /// A run failed.
    Failed,
}

/// One column at one point.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ArmResult {
    /// The column's name.
    pub(crate) arm: String,
    /// Every run, in round order.
    pub(crate) runs: Vec<Run>,
    /// Median rate, critical sections a second.
    pub(crate) rate: Option<f64>,
    /// Median rate over glibc's.
    pub(crate) ratio: Option<f64>,
    /// The ratio's 95% bootstrap interval over the rounds.
    pub(crate) interval: Option<(f64, f64)>,
    /// Median CPU per critical section over glibc's.
    pub(crate) cpu_ratio: Option<f64>,
    /// Against glibc.
    pub(crate) verdict: Verdict,
}

/// One point's result.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct PointResult {
    /// Its index in the sample (0 for a replayed point).
    pub(crate) index: usize,
    /// The printed form: `corral bench space --point '...'` replays it.
    pub(crate) printed: String,
    /// The parameters.
    pub(crate) point: Point,
    /// glibc first, then the columns in `--peer` order.
    pub(crate) arms: Vec<ArmResult>,
}

impl PointResult {
    /// Builds a point's result from its runs, `runs[a][r]` being column
    /// `a`'s run in round `r`; column 0 is glibc.
    pub(crate) fn new(
        index: usize,
        point: Point,
        arms: &[Arm],
        runs: Vec<Vec<Run>>,
    ) -> PointResult {
        let rates = |rs: &[Run]| -> Option<Vec<f64>> { rs.iter().map(|r| r.rate).collect() };
        let cpus = |rs: &[Run]| -> Option<Vec<f64>> { rs.iter().map(Run::cpu_per_mop).collect() };
        let glibc_rates = rates(&runs[0]);
        let glibc_cpu = cpus(&runs[0]);
        let arms = arms
            .iter()
            .zip(runs)
            .map(|(arm, runs)| {
                let mine = rates(&runs);
                let rate = mine.clone().and_then(stats::median);
                let ratio = match (&mine, &glibc_rates) {
                    (Some(m), Some(g)) => stats::ratio_of_medians(g, m),
                    _ => None,
                };
                let interval = match (&mine, &glibc_rates) {
                    (Some(m), Some(g)) => stats::ratio_interval(g, m),
                    _ => None,
                };
                let cpu_ratio = match (cpus(&runs), &glibc_cpu) {
                    (Some(m), Some(g)) => stats::ratio_of_medians(g, &m),
                    _ => None,
                };
                let verdict = verdict(ratio, interval);
                ArmResult {
                    arm: arm.name().to_owned(),
                    runs,
                    rate,
                    ratio,
                    interval,
                    cpu_ratio,
                    verdict,
                }
            })
            .collect();
        PointResult {
            index,
            printed: point.to_string(),
            point,
            arms,
        }
    }

    /// The column named `name`.
    pub(crate) fn arm(&self, name: &str) -> Option<&ArmResult> {
        self.arms.iter().find(|a| a.arm == name)
    }
}

/// A column's verdict from its ratio and interval.
fn verdict(ratio: Option<f64>, interval: Option<(f64, f64)>) -> Verdict {
    match (ratio, interval) {
        (None, _) => Verdict::Failed,
        (Some(_), Some((lo, hi))) => match stats::verdict(lo, hi) {
            stats::Verdict::Below => Verdict::Loses,
            stats::Verdict::Above => Verdict::Wins,
            stats::Verdict::Straddles => Verdict::Even,
        },
        (Some(_), None) => Verdict::Unsure,
    }
}

/// A column's ratios over every point.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Distribution {
    /// The column.
    pub(crate) arm: String,
    /// Points with a ratio.
    pub(crate) points: usize,
    /// Ratio quantiles: min, 10%, 25%, median, 75%, 90%, max.
    pub(crate) quantiles: [f64; 7],
    /// The geometric mean of the ratios.
    pub(crate) geomean: f64,
    /// Points it loses, is even at, wins, cannot tell and failed.
    pub(crate) loses: usize,
    /// Even.
    pub(crate) even: usize,
    /// Wins.
    pub(crate) wins: usize,
    /// Unsure.
    pub(crate) unsure: usize,
    /// Failed.
    pub(crate) failed: usize,
    /// The median of its CPU-per-critical-section ratios to glibc.
    pub(crate) cpu_ratio_median: Option<f64>,
}

/// The whole measurement.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SpaceReport {
    /// The sampler's seed (none for a replayed point).
    pub(crate) seed: Option<u64>,
    /// Rounds per point: every column once per round, in rotated order.
    pub(crate) rounds: usize,
    /// Each run's length, ms.
    pub(crate) duration_ms: u64,
    /// The columns, glibc first.
    pub(crate) arms: Vec<String>,
    /// Every point measured.
    pub(crate) points: Vec<PointResult>,
    /// Per column but glibc.
    pub(crate) distribution: Vec<Distribution>,
    /// The default's worst points, by their indices in `points`.
    pub(crate) worst: Vec<usize>,
    /// Points the budget left unmeasured.
    pub(crate) skipped: usize,
}

/// CPUs this process may run on (what an unconfined SSC holds), read once.
fn cpus() -> u32 {
    static CPUS: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| corral_runtime::affinity::allowed_cpus().len().max(1) as u32)
}

/// The `q` quantile of sorted `v` (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Column `arm`'s distribution over `points`.
pub(crate) fn distribution(arm: &str, points: &[PointResult]) -> Option<Distribution> {
    let results: Vec<&ArmResult> = points.iter().filter_map(|p| p.arm(arm)).collect();
    let mut ratios: Vec<f64> = results.iter().filter_map(|a| a.ratio).collect();
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let count = |v: Verdict| results.iter().filter(|a| a.verdict == v).count();
    let cpus: Vec<f64> = results.iter().filter_map(|a| a.cpu_ratio).collect();
    Some(Distribution {
        arm: arm.to_owned(),
        points: ratios.len(),
        quantiles: [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0].map(|q| quantile(&ratios, q)),
        geomean: (ratios.iter().map(|r| r.max(1e-12).ln()).sum::<f64>() / ratios.len() as f64)
            .exp(),
        loses: count(Verdict::Loses),
        even: count(Verdict::Even),
        wins: count(Verdict::Wins),
        unsure: count(Verdict::Unsure),
        failed: count(Verdict::Failed),
        cpu_ratio_median: stats::median(cpus),
    })
}

/// The indices of the `k` points where the default's ratio is lowest.
pub(crate) fn worst(points: &[PointResult], k: usize) -> Vec<usize> {
    let mut by: Vec<(usize, f64)> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((i, p.arm("default")?.ratio?)))
        .collect();
    by.sort_by(|a, b| a.1.total_cmp(&b.1));
    by.into_iter().take(k).map(|(i, _)| i).collect()
}

/// Every column but glibc at one point: `default 0.93x ...; flexguard ...`.
pub(crate) fn columns_line(p: &PointResult) -> String {
    let cols: Vec<String> = p
        .arms
        .iter()
        .skip(1)
        .map(|a| format!("{} {}", a.arm, arm_line(a)))
        .collect();
    cols.join("; ")
}

/// One column at one point: `0.93x [0.88-0.99] cpu 1.10x even`.
fn arm_line(a: &ArmResult) -> String {
    let mut s = match a.ratio {
        Some(r) => format!("{r:.2}x"),
        None => "failed".into(),
    };
    if let Some((lo, hi)) = a.interval {
        let _ = write!(s, " [{lo:.2}-{hi:.2}]");
    }
    if let Some(c) = a.cpu_ratio {
        let _ = write!(s, " cpu {c:.2}x");
    }
    let cpus = cpus();
    let confined = a
        .runs
        .iter()
        .filter(|r| r.ssc_bound.is_some_and(|b| b < cpus))
        .count();
    if confined > 0 {
        let _ = write!(s, " confined in {confined}/{} runs", a.runs.len());
    }
    let v = serde_json::to_string(&a.verdict).unwrap_or_default();
    let _ = write!(s, " {}", v.trim_matches('"'));
    s
}

/// The printed report: the distribution per column and the worst points.
pub(crate) fn render(r: &SpaceReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{} points, {} rounds each, {} ms a run; ratio = median rate over glibc's, [95% interval], cpu = CPU per critical section over glibc's",
        r.points.len(),
        r.rounds,
        r.duration_ms
    );
    let _ = writeln!(
        out,
        "{:<12} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7} {:>5} {:>5} {:>5} {:>6} {:>6}",
        "column",
        "min",
        "p10",
        "p25",
        "median",
        "p75",
        "p90",
        "max",
        "geomean",
        "loses",
        "even",
        "wins",
        "unsure",
        "cpu"
    );
    for d in &r.distribution {
        let q = d.quantiles;
        let _ = writeln!(
            out,
            "{:<12} {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>7.2} {:>5} {:>5} {:>5} {:>6} {:>6}",
            d.arm,
            q[0],
            q[1],
            q[2],
            q[3],
            q[4],
            q[5],
            q[6],
            d.geomean,
            d.loses,
            d.even,
            d.wins,
            d.unsure + d.failed,
            d.cpu_ratio_median.map(|c| format!("{c:.2}")).unwrap_or_else(|| "-".into())
        );
    }
    let _ = writeln!(
        out,
        "loses/wins: the 95% interval wholly below {:.2}x / above {:.2}x glibc",
        stats::BAR,
        1.0 / stats::BAR
    );
    if !r.worst.is_empty() {
        let _ = writeln!(out, "\nthe default's worst points:");
    }
    for &i in &r.worst {
        let p = &r.points[i];
        let _ = writeln!(out, "#{:<3} {}", p.index, columns_line(p));
        let _ = writeln!(out, "     corral bench space --point '{}'", p.printed);
    }
    if r.skipped > 0 {
        let _ = writeln!(
            out,
            "\n{} points not measured: --budget-s ran out",
            r.skipped
        );
    }
    out
}
