//! `corral reproduce`: each seed figure the simulator can honestly redo,
//! written as SVG, CSV (the paper's stated values beside corral's) and a
//! short text of where and why they differ.

mod figures;

pub use figures::{Figure, Metric, Published, Quantity, Recipe, FIGURES};

use crate::config::SimResult;
use crate::error::SimError;
use crate::presets::preset;
use crate::sweep::{run_sweep, SweepSpec};
use crate::workload::Workload;
use crate::{svg_plot_labelled, LockCosts};
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a figure was not reproduced.
#[derive(Debug)]
pub enum ReproduceError {
    /// No figure of that name.
    UnknownFigure {
        /// The name asked for.
        name: String,
    },
    /// The sweep refused its input.
    Sim(SimError),
    /// An output file could not be written.
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

impl fmt::Display for ReproduceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReproduceError::UnknownFigure { name } => {
                let names: Vec<&str> = FIGURES.iter().map(|f| f.name).collect();
                write!(
                    f,
                    "unknown figure '{name}'; known: {}, or all",
                    names.join(", ")
                )
            }
            ReproduceError::Sim(e) => write!(f, "{e}"),
            ReproduceError::Write { path, error } => {
                write!(f, "cannot write {}: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for ReproduceError {}

/// The figure called `name`.
///
/// # Errors
///
/// [`ReproduceError::UnknownFigure`], whose message lists the known names.
pub fn find(name: &str) -> Result<&'static Figure, ReproduceError> {
    FIGURES
        .iter()
        .find(|f| f.name == name)
        .ok_or_else(|| ReproduceError::UnknownFigure {
            name: name.to_string(),
        })
}

/// How much to simulate per figure.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    /// Simulated seconds per point.
    pub seconds: f64,
    /// Core counts above this are left out (none: all of the figure's).
    pub max_cores: Option<u32>,
}

/// What one figure produced.
#[derive(Clone, Debug, Serialize)]
pub struct FigureReport {
    /// The figure's name.
    pub name: String,
    /// Whether it was redone (false: see `reason`).
    pub redone: bool,
    /// Why it was not redone.
    pub reason: Option<String>,
    /// Files written.
    pub files: Vec<PathBuf>,
    /// Stated values against corral's.
    pub compared: Vec<Compared>,
    /// Points simulated.
    pub points: usize,
    /// Simulator events per host-core second.
    pub events_per_second: f64,
}

/// One value the paper states, beside corral's.
#[derive(Clone, Debug, Serialize)]
pub struct Compared {
    /// Series (workload).
    pub series: String,
    /// What is compared.
    pub quantity: Quantity,
    /// The paper's value.
    pub published: f64,
    /// corral's, when its sweep has the points it needs.
    pub corral: Option<f64>,
    /// Where the paper states it.
    pub source: String,
}

/// A workload by name: a preset, or `s<CS>f<PERMILLE>`, paper 3's
/// single-ticket-lock microbenchmark with a CS-cycle section taking
/// PERMILLE thousandths of an operation on one core.
pub fn workload(name: &str) -> Option<Workload> {
    if let Some(w) = preset(name) {
        return Some(w);
    }
    let (cs, permille) = name.strip_prefix('s')?.split_once('f')?;
    let cs: f64 = cs.parse().ok()?;
    let share = permille.parse::<f64>().ok()? / 1000.0;
    if !(cs > 0.0 && share > 0.0 && share <= 1.0) {
        return None;
    }
    let mut w = preset("markov")?;
    w.name = name.to_string();
    w.description = format!(
        "one ticket lock: {cs}-cycle section, {:.1}% of an operation",
        share * 100.0
    );
    let step = w.operation.first_mut()?;
    step.cs = cs;
    step.work = cs / share - cs;
    Some(w)
}

fn write(path: PathBuf, text: &str, files: &mut Vec<PathBuf>) -> Result<(), ReproduceError> {
    std::fs::write(&path, text).map_err(|error| ReproduceError::Write {
        path: path.clone(),
        error,
    })?;
    files.push(path);
    Ok(())
}

/// Redoes `fig` into `dir` at `scale`: `<name>.svg`, `<name>.csv` and
/// `<name>.txt`; a figure that cannot be redone writes only its text.
///
/// # Errors
///
/// The sweep refused its input, or a file could not be written.
pub fn reproduce(fig: &Figure, dir: &Path, scale: Scale) -> Result<FigureReport, ReproduceError> {
    let mut files = Vec::new();
    let txt = dir.join(format!("{}.txt", fig.name));
    let (workloads, policies, cores, metrics) = match fig.recipe {
        Recipe::Cannot(why) => {
            write(
                txt,
                &format!("{}\nnot redone here: {why}\n", fig.title),
                &mut files,
            )?;
            return Ok(FigureReport {
                name: fig.name.into(),
                redone: false,
                reason: Some(why.into()),
                files,
                compared: Vec::new(),
                points: 0,
                events_per_second: 0.0,
            });
        }
        Recipe::Sim {
            workloads,
            policies,
            cores,
            metrics,
        } => (workloads, policies, cores, metrics),
    };
    let spec = SweepSpec {
        workloads: workloads
            .iter()
            .map(|w| {
                workload(w).ok_or_else(|| ReproduceError::UnknownFigure {
                    name: format!("{} (its workload {w})", fig.name),
                })
            })
            .collect::<Result<_, _>>()?,
        policies: policies.iter().map(|p| p.to_string()).collect(),
        cores: cores
            .iter()
            .copied()
            .filter(|&n| scale.max_cores.is_none_or(|m| n <= m))
            .collect(),
        seconds: scale.seconds,
        seed: 1,
        costs: LockCosts::default(),
    };
    let report = run_sweep(&spec, &|_, _| {}).map_err(ReproduceError::Sim)?;
    let compared = compare(fig.published, &report.points, policies);
    let mut svg_points = Vec::new();
    let mut csv = String::from("series,policy,cores,quantity,corral,published,source\n");
    for &m in metrics {
        for p in &report.points {
            let v = metric(p, m);
            csv.push_str(
                &format!(
                    "{},{},{},{:?},{v:.4},,plot only\n",
                    p.workload, p.policy, p.cores, m
                )
                .to_lowercase(),
            );
            let mut q = p.clone();
            q.throughput = v;
            if metrics.len() > 1 || m != Metric::Throughput {
                q.workload = format!("{} {m:?}", p.workload);
            }
            svg_points.push(q);
        }
    }
    for c in &compared {
        csv.push_str(&format!(
            "{},{},,{},{},{},\"{}\"\n",
            c.series,
            policies.join("/"),
            serde_json::to_value(c.quantity)
                .map(|v| v.as_str().unwrap_or("").to_string())
                .unwrap_or_default(),
            c.corral.map(|v| format!("{v:.4}")).unwrap_or_default(),
            c.published,
            c.source.replace('"', "'")
        ));
    }
    write(
        dir.join(format!("{}.svg", fig.name)),
        &svg_plot_labelled(&svg_points, |panel| {
            metrics
                .iter()
                .find(|m| panel.ends_with(&format!(" {m:?}")))
                .map_or("ops/s", |m| m.axis_label())
        }),
        &mut files,
    )?;
    write(dir.join(format!("{}.csv", fig.name)), &csv, &mut files)?;
    let mut text = format!(
        "{}\ncorral: {} simulated s per point, seed 1, cores {:?}\n\nwhere and why it differs: {}\n",
        fig.title, scale.seconds, spec.cores, fig.differs
    );
    for c in &compared {
        text.push_str(&format!(
            "- {} {:?}: paper {} ({}), corral {}\n",
            c.series,
            c.quantity,
            c.published,
            c.source,
            c.corral
                .map(|v| format!("{v:.2}"))
                .unwrap_or_else(|| "n/a at this scale".into())
        ));
    }
    write(txt, &text, &mut files)?;
    Ok(FigureReport {
        name: fig.name.into(),
        redone: true,
        reason: None,
        files,
        compared,
        points: report.points.len(),
        events_per_second: report.events_per_second,
    })
}

/// The plotted value of a point.
fn metric(p: &SimResult, m: Metric) -> f64 {
    match m {
        Metric::Throughput => p.throughput,
        Metric::WaitShare => p.wait_share,
        Metric::Ssc => p.ssc.map_or(0.0, f64::from),
        Metric::Power => p.power,
        Metric::WorkPerEnergy => p.work_per_energy,
    }
}

/// corral's value of each stated one, from the sweep's points.
fn compare(published: &[Published], points: &[SimResult], policies: &[&str]) -> Vec<Compared> {
    let series_of = |series: &str, policy: Option<&&str>, m: Metric| -> Vec<(u32, f64)> {
        let Some(policy) = policy else {
            return Vec::new();
        };
        points
            .iter()
            .filter(|p| p.workload == series && p.policy == *policy)
            .map(|p| (p.cores, metric(p, m)))
            .collect()
    };
    let line = |series: &str, policy: Option<&&str>| series_of(series, policy, Metric::Throughput);
    let wait_at = |series: &str, policy: Option<&&str>, n: u32| {
        series_of(series, policy, Metric::WaitShare)
            .iter()
            .find(|p| p.0 == n)
            .map(|p| p.1)
    };
    // The largest cut of the wait share at `n` cores over every workload.
    let max_wait_cut = |n: u32| {
        let mut workloads: Vec<&str> = points.iter().map(|p| p.workload.as_str()).collect();
        workloads.dedup();
        workloads
            .into_iter()
            .filter_map(|w| {
                let before = wait_at(w, policies.first(), n)?;
                let after = wait_at(w, policies.get(1), n)?;
                (before > 0.0).then(|| 1.0 - after / before)
            })
            .fold(None, |best: Option<f64>, cut| {
                Some(best.map_or(cut, |b| b.max(cut)))
            })
    };
    let at = |l: &[(u32, f64)], n: u32| l.iter().find(|p| p.0 == n).map(|p| p.1);
    let peak = |l: &[(u32, f64)]| {
        l.iter()
            .copied()
            .fold(None, |b: Option<(u32, f64)>, p| match b {
                Some(b) if b.1 >= p.1 => Some(b),
                _ => Some(p),
            })
    };
    published
        .iter()
        .map(|s| {
            let first = line(s.series, policies.first());
            let second = line(s.series, policies.get(1));
            let corral = match s.quantity {
                Quantity::PeakCores => peak(&first).map(|p| f64::from(p.0)),
                Quantity::PeakOverOneCore => {
                    peak(&first).zip(at(&first, 1)).map(|(p, one)| p.1 / one)
                }
                Quantity::At48OverOneCore => at(&first, 48).zip(at(&first, 1)).map(|(a, b)| a / b),
                Quantity::SecondOverFirstAt48 => {
                    at(&second, 48).zip(at(&first, 48)).map(|(a, b)| a / b)
                }
                Quantity::SecondPeakOverFirstPeak => {
                    peak(&second).zip(peak(&first)).map(|(a, b)| a.1 / b.1)
                }
                Quantity::WaitShareAt16 => wait_at(s.series, policies.first(), 16),
                Quantity::WaitShareAt32 => wait_at(s.series, policies.first(), 32),
                Quantity::MaxWaitCutAt32 => max_wait_cut(32),
            };
            Compared {
                series: s.series.into(),
                quantity: s.quantity,
                published: s.value,
                corral,
                source: s.source.into(),
            }
        })
        .collect()
}
