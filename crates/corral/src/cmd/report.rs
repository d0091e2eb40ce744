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
    /// The run's event log; its search decisions are marked on the SSC
    /// panel.
    #[serde(default)]
    decisions: Vec<serde_json::Value>,
}

/// A search decision worth a mark: what the search compared, when.
struct Mark {
    t_ms: f64,
    bound: u32,
    label: String,
}

/// The decisions that measured every core or judged against it: the
/// baseline, each reference round (with the confined rounds' rate it
/// left) and its outcome (with the rate every core read: `all`), a drop
/// and a settle on every core. A reader sees what each decision compared.
fn marks(decisions: &[serde_json::Value]) -> Vec<Mark> {
    decisions
        .iter()
        .filter(|d| d["event"] == "decision")
        .filter_map(|d| {
            let rate = d["throughput"].as_f64()?;
            let what = match d["kind"].as_str()? {
                "Baseline" => "baseline: all",
                "Reference" => "reference: confined",
                "KeepConfined" => "keep: all",
                "DropConfined" => "drop: all",
                "SettleUnconfined" => "unconfined: all",
                _ => return None,
            };
            Some(Mark {
                t_ms: d["t_ms"].as_f64()?,
                bound: u32::try_from(d["bound_after"].as_u64()?).ok()?,
                label: format!("{what} {rate:.0}/ms"),
            })
        })
        .collect()
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
        let marks = marks(&doc.decisions);
        let t_max = doc
            .timeline
            .last()
            .map(|p| p.t_ms)
            .into_iter()
            .chain(marks.iter().map(|m| m.t_ms))
            .fold(1.0, f64::max);
        ssc_panel(&panels[0], &doc.timeline, &marks, t_max)?;
        share_panel(&panels[1], &doc.timeline, t_max)?;
        lock_panel(&panels[2], &doc.locks, top)?;
        root.present()?;
    }
    Ok(out)
}

fn ssc_panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    tl: &[TimePoint],
    marks: &[Mark],
    t_max: f64,
) -> DrawResult<()> {
    let y_max = tl
        .iter()
        .map(|p| p.ssc_bound)
        .chain(marks.iter().map(|m| m.bound))
        .max()
        .unwrap_or(1)
        .max(1);
    // Room above the line for the marks' upright labels.
    let y_top = if marks.is_empty() {
        y_max + 1
    } else {
        2 * y_max + 2
    };
    let mut chart = ChartBuilder::on(area)
        .caption("SSC size over time", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..t_max, 0u32..y_top)?;
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
    chart.draw_series(
        marks
            .iter()
            .map(|m| Circle::new((m.t_ms, m.bound), 4, BLACK.filled())),
    )?;
    chart.draw_series(marks.iter().map(|m| {
        Text::new(
            m.label.clone(),
            (m.t_ms, m.bound),
            ("sans-serif", 11)
                .into_font()
                .transform(FontTransform::Rotate270),
        )
    }))?;
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
            decisions: Vec::new(),
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
    fn the_search_decisions_are_marked_with_what_they_compared() {
        let doc: Doc = serde_json::from_str(
            r#"{"decisions":[
            {"event":"qualified","t_ms":5.0,"tid":7,"share":0.8},
            {"event":"decision","t_ms":14.9,"kind":"Baseline","bound_before":2,"bound_after":1,"throughput":1135.0},
            {"event":"decision","t_ms":30.0,"kind":"Hold","bound_before":1,"bound_after":1,"throughput":2200.0},
            {"event":"decision","t_ms":115.4,"kind":"Reference","bound_before":1,"bound_after":2,"throughput":2373.0},
            {"event":"decision","t_ms":130.0,"kind":"KeepConfined","bound_before":2,"bound_after":1,"throughput":2167.0},
            {"event":"decision","t_ms":310.4,"kind":"DropConfined","bound_before":1,"bound_after":2,"throughput":1938.0}]}"#,
        )
        .unwrap();
        let svg = draw(&doc, 10).unwrap();
        for text in [
            "baseline: all 1135/ms",
            "reference: confined 2373/ms",
            "keep: all 2167/ms",
            "drop: all 1938/ms",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
        assert!(!svg.contains("2200/ms"), "a hold is not marked");
    }

    #[test]
    fn an_old_report_without_profile_draws_empty_panels() {
        let doc: Doc = serde_json::from_str(r#"{"threads":[]}"#).unwrap();
        assert!(draw(&doc, 10).unwrap().contains("top locks"));
    }
}
