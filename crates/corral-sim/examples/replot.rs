//! Redraws a `corral sim --out` JSON report as SVG:
//! `cargo run --release -p corral-sim --example replot -- REPORT.json OUT.svg`.

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        return Err("usage: replot REPORT.json OUT.svg".into());
    };
    let text = std::fs::read_to_string(input).map_err(|e| e.to_string())?;
    let report: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let points = report["points"].as_array().ok_or("no points")?;
    let results: Vec<corral_sim::SimResult> = points
        .iter()
        .map(|p| corral_sim::SimResult {
            workload: p["workload"].as_str().unwrap_or("").into(),
            policy: p["policy"].as_str().unwrap_or("").into(),
            cores: p["cores"].as_u64().unwrap_or(0) as u32,
            throughput: p["throughput"].as_f64().unwrap_or(0.0),
            ..Default::default()
        })
        .collect();
    std::fs::write(output, corral_sim::svg_plot(&results)).map_err(|e| e.to_string())
}
