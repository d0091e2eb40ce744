//! `corral report FILE.json --svg OUT.svg`: a `corral run --report`
//! document drawn with plotters: the SSC size over time, each thread's
//! lock wait share over time, and the top locks by total wait as bars.

use std::path::PathBuf;

use plotters::prelude::*;
use serde::Deserialize;

use super::locks::LockReport;
use super::run::timeline::TimePoint;
use crate::CliError;

/// Arguments of `corral report`.
#[derive(clap::Args)]
pub(crate) struct ReportArgs {
    /// A report written by `corral run --report`.
    #[arg(value_name = "FILE.json")]
    pub(crate) input: PathBuf,
    /// Write the plots here as SVG.
    #[arg(long, value_name = "OUT.svg")]
    pub(crate) svg: PathBuf,
    /// Locks drawn as bars.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub(crate) top_locks: usize,
}

/// The parts of the report drawn; other fields are ignored.
#[derive(Deserialize)]
struct Doc {
    #[serde(default)]
    timeline: Vec<TimePoint>,
    #[serde(default)]
    locks: Vec<LockReport>,
}

const WIDTH: u32 = 900;
const PANEL: u32 = 300;

/// Draws the report.
pub(crate) fn report(args: ReportArgs) -> Result<(), CliError> {
    let text = std::fs::read_to_string(&args.input)
        .map_err(|e| CliError(format!("{}: {e}", args.input.display())))?;
    let doc: Doc = serde_json::from_str(&text).map_err(|e| {
        CliError(format!(
            "{}: not a corral run report: {e}",
            args.input.display()
        ))
    })?;
    let svg = draw(&doc, args.top_locks).map_err(|e| CliError(format!("drawing: {e}")))?;
    std::fs::write(&args.svg, svg)
        .map_err(|e| CliError(format!("--svg {}: {e}", args.svg.display())))
}

type DrawResult<T> = Result<T, Box<dyn std::error::Error>>;

/// The three panels as one SVG document.
fn draw(doc: &Doc, top: usize) -> DrawResult<String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, 3 * PANEL)).into_drawing_area();
        root.fill(&WHITE)?;
        let panels = root.split_evenly((3, 1));
        let t_max = doc.timeline.last().map_or(1.0, |p| p.t_ms.max(1.0));
        ssc_panel(&panels[0], &doc.timeline, t_max)?;
        share_panel(&panels[1], &doc.timeline, t_max)?;
        lock_panel(&panels[2], &doc.locks, top)?;
        root.present()?;
    }
    Ok(out)
}

fn ssc_panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    tl: &[TimePoint],
    t_max: f64,
) -> DrawResult<()> {
    let y_max = tl.iter().map(|p| p.ssc_bound).max().unwrap_or(1).max(1);
    let mut chart = ChartBuilder::on(area)
        .caption("SSC size over time", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..t_max, 0u32..y_max + 1)?;
    chart.configure_mesh().x_desc("ms").y_desc("cores").draw()?;
    // A step line: the size holds until the next sample.
    let mut steps = Vec::new();
    for w in tl.windows(2) {
        steps.push((w[0].t_ms, w[0].ssc_bound));
        steps.push((w[1].t_ms, w[0].ssc_bound));
    }
    if let Some(p) = tl.last() {
        steps.push((p.t_ms, p.ssc_bound));
    }
    chart.draw_series(LineSeries::new(steps, &RED))?;
    Ok(())
}

fn share_panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    tl: &[TimePoint],
    t_max: f64,
) -> DrawResult<()> {
    let mut chart = ChartBuilder::on(area)
        .caption("lock wait share per thread", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..t_max, 0.0..1.0)?;
    chart.configure_mesh().x_desc("ms").y_desc("share").draw()?;
    let mut tids: Vec<i32> = tl
        .iter()
        .flat_map(|p| p.threads.iter().map(|t| t.tid))
        .collect();
    tids.sort_unstable();
    tids.dedup();
    for (i, tid) in tids.iter().enumerate() {
        let colour = Palette99::pick(i).to_rgba();
        let series: Vec<(f64, f64)> = tl
            .iter()
            .filter_map(|p| {
                p.threads
                    .iter()
                    .find(|t| t.tid == *tid)
                    .map(|t| (p.t_ms, t.wait_share))
            })
            .collect();
        chart
            .draw_series(LineSeries::new(series, colour.stroke_width(1)))?
            .label(format!("tid {tid}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour));
    }
    if !tids.is_empty() {
        chart.configure_series_labels().border_style(BLACK).draw()?;
    }
    Ok(())
}

fn lock_panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    locks: &[LockReport],
    top: usize,
) -> DrawResult<()> {
    let shown: Vec<&LockReport> = locks.iter().take(top.max(1)).collect();
    let x_max = shown.iter().map(|l| l.wait_ns).max().unwrap_or(1).max(1) as f64 / 1e6;
    let mut chart = ChartBuilder::on(area)
        .caption("top locks by total wait (ms)", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(10)
        .build_cartesian_2d(0.0..x_max * 1.05, 0..shown.len().max(1))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc("ms")
        .draw()?;
    chart.draw_series(shown.iter().enumerate().map(|(i, l)| {
        Rectangle::new(
            [(0.0, i), (l.wait_ns as f64 / 1e6, i + 1)],
            BLUE.mix(0.4).filled(),
        )
    }))?;
    chart.draw_series(shown.iter().enumerate().map(|(i, l)| {
        let lock = l.lock_name();
        Text::new(
            format!(
                "{lock} {} <- {} ({} contended)",
                l.kind,
                l.caller_name(),
                l.contended
            ),
            (x_max * 0.01, i),
            ("sans-serif", 13),
        )
    }))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::run::timeline::ThreadShare;

    #[test]
    fn draws_every_panel_with_the_locks_named() {
        let doc = Doc {
            timeline: (0..5)
                .map(|i| TimePoint {
                    t_ms: 100.0 * i as f64,
                    ssc_bound: 1 + i % 2,
                    threads: vec![ThreadShare { tid: 41, wait_share: 0.5 }],
                })
                .collect(),
            locks: serde_json::from_str(
                r#"[{"addr":"0x10","symbol":"big_lock+0x0","kind":"mutex","contended":9,
                "wait_ns":5000000,"max_wait_ns":1,"avg_wait_ns":1,"waiters":2,
                "callers":[{"addr":"0x1","samples":1,"function":"worker","location":null,"object":null}],
                "other_samples":0}]"#,
            )
            .unwrap(),
        };
        let svg = draw(&doc, 10).unwrap();
        assert!(svg.starts_with("<svg"));
        for text in [
            "SSC size over time",
            "lock wait share per thread",
            "tid 41",
            "big_lock+0x0 mutex &lt;- worker",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
    }

    #[test]
    fn an_old_report_without_profile_draws_empty_panels() {
        let doc: Doc = serde_json::from_str(r#"{"threads":[]}"#).unwrap();
        assert!(draw(&doc, 10).unwrap().contains("top locks"));
    }
}
