//! A hand-written SVG plot: throughput versus cores, one panel per workload,
//! one line per policy.

use crate::config::SimResult;
use std::fmt::Write;

const PANEL_W: f64 = 640.0;
const PANEL_H: f64 = 300.0;
const MARGIN_L: f64 = 80.0;
const MARGIN_R: f64 = 130.0;
const MARGIN_T: f64 = 34.0;
const MARGIN_B: f64 = 46.0;
/// Core ranges at least this wide get a log2 axis.
const LOG_AXIS_RATIO: f64 = 32.0;
const COLOURS: [&str; 8] = [
    "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Distinct values in first-seen order.
fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// The SVG document for `points`: throughput (ops/s) in every panel.
pub fn svg_plot(points: &[SimResult]) -> String {
    svg_plot_labelled(points, |_| "ops/s")
}

/// [`svg_plot`] where `points`' `throughput` carries another figure: each
/// panel's y axis is labelled `y_label(panel)` (the panel is the points'
/// `workload`).
pub fn svg_plot_labelled<'a>(points: &[SimResult], y_label: impl Fn(&str) -> &'a str) -> String {
    let workloads = distinct(points.iter().map(|p| p.workload.as_str()));
    let policies = distinct(points.iter().map(|p| p.policy.as_str()));
    let total_w = MARGIN_L + PANEL_W + MARGIN_R;
    let panel_full_h = MARGIN_T + PANEL_H + MARGIN_B;
    let total_h = panel_full_h * workloads.len().max(1) as f64;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{total_h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (wi, w) in workloads.iter().enumerate() {
        let top = wi as f64 * panel_full_h + MARGIN_T;
        let mine: Vec<&SimResult> = points.iter().filter(|p| p.workload == *w).collect();
        let max_x = mine.iter().map(|p| p.cores).max().unwrap_or(1).max(1) as f64;
        let max_y = mine
            .iter()
            .map(|p| p.throughput)
            .fold(0.0, f64::max)
            .max(1e-9)
            * 1.05;
        let min_x = mine.iter().map(|p| p.cores).min().unwrap_or(1).max(1) as f64;
        // Sweeps from a few cores to a thousand read better on a log2 axis.
        let log = max_x / min_x >= LOG_AXIS_RATIO;
        let x = |c: f64| {
            if log {
                MARGIN_L + (c / min_x).log2() / (max_x / min_x).log2() * PANEL_W
            } else {
                MARGIN_L + c / max_x * PANEL_W
            }
        };
        let y = |v: f64| top + PANEL_H - v / max_y * PANEL_H;
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" font-size="14" font-weight="bold">{}</text>"#,
            MARGIN_L,
            top - 12.0,
            escape(w)
        );
        let _ = writeln!(
            svg,
            r#"<rect x="{MARGIN_L}" y="{top}" width="{PANEL_W}" height="{PANEL_H}" fill="none" stroke="black"/>"#
        );
        for i in 0..=4 {
            let v = max_y * i as f64 / 4.0;
            let _ = writeln!(
                svg,
                r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
                MARGIN_L,
                MARGIN_L + PANEL_W,
                MARGIN_L - 6.0,
                y(v) + 4.0,
                format_si(v),
                y = y(v)
            );
        }
        let ticks: Vec<f64> = if log {
            std::iter::successors(Some(min_x), |c| Some(c * 2.0))
                .take_while(|&c| c <= max_x * 1.0001)
                .collect()
        } else {
            (0..=4).map(|i| max_x * i as f64 / 4.0).collect()
        };
        for c in ticks {
            let _ = writeln!(
                svg,
                r#"<text x="{}" y="{}" text-anchor="middle">{:.0}</text>"#,
                x(c),
                top + PANEL_H + 16.0,
                c
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle">cores{}</text>"#,
            MARGIN_L + PANEL_W / 2.0,
            top + PANEL_H + 34.0,
            if log { " (log2 scale)" } else { "" }
        );
        let _ = writeln!(
            svg,
            r#"<text transform="translate(16,{}) rotate(-90)" text-anchor="middle">{}</text>"#,
            top + PANEL_H / 2.0,
            y_label(w)
        );
        for (pi, p) in policies.iter().enumerate() {
            let colour = COLOURS[pi % COLOURS.len()];
            let mut line: Vec<&&SimResult> = mine.iter().filter(|r| r.policy == *p).collect();
            line.sort_by_key(|r| r.cores);
            if line.is_empty() {
                continue;
            }
            let pts: Vec<String> = line
                .iter()
                .map(|r| format!("{:.1},{:.1}", x(r.cores as f64), y(r.throughput)))
                .collect();
            let _ = writeln!(
                svg,
                r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
                pts.join(" ")
            );
            let ly = top + 14.0 + pi as f64 * 18.0;
            let lx = MARGIN_L + PANEL_W + 12.0;
            let _ = writeln!(
                svg,
                r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="3"/><text x="{}" y="{}">{}</text>"#,
                lx + 22.0,
                lx + 28.0,
                ly + 4.0,
                escape(p)
            );
        }
    }
    svg.push_str("</svg>\n");
    svg
}

fn format_si(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.1}G", v / 1e9),
        v if v >= 1e6 => format!("{:.1}M", v / 1e6),
        v if v >= 1e3 => format!("{:.1}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_polyline_per_policy_and_panel_per_workload() {
        let mk = |w: &str, p: &str, cores, throughput| SimResult {
            workload: w.into(),
            policy: p.into(),
            cores,
            throughput,
            ..SimResult::default()
        };
        let pts = vec![
            mk("a", "default", 1, 10.0),
            mk("a", "default", 2, 20.0),
            mk("a", "lca", 1, 10.0),
            mk("a", "lca", 2, 25.0),
            mk("b<&>", "default", 4, 5.0),
        ];
        let svg = svg_plot(&pts);
        assert_eq!(svg.matches("<polyline").count(), 3);
        assert!(svg.contains("b&lt;&amp;&gt;"));
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    }
}
