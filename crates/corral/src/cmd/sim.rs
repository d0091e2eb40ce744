//! `corral sim`: run the many-core simulator over workloads x policies x
//! core counts, in parallel, and report a table, JSON, CSV or an SVG plot.

use crate::CliError;
use corral_launch::lists::parse_count_list;
use corral_sim::presets::{preset, NAMES};
use corral_sim::{
    run_sweep, svg_plot, to_csv, SweepSpec, Workload, OVER_LOCKS, POLICIES, SCHEDULERS,
};
use std::io::{IsTerminal, Write};
use std::path::Path;

/// Arguments of `corral sim`.
#[derive(clap::Args)]
pub(crate) struct SimArgs {
    /// Workloads: built-in names or JSON files, comma-separated.
    #[arg(long, default_value = "mempop", value_delimiter = ',')]
    pub workload: Vec<String>,
    /// Policies, comma-separated. Baselines are named for the machine's spin
    /// lock: ticket (2012 kernels; `default` is an alias), qspinlock (Linux
    /// 4.2+), mcs. Scheduling policies (lca, lca-2013, faithful, ca;
    /// diagnostics lca-grow, lca-nowarm) run over the workload's declared
    /// locks (ticket in every preset), or over another as POLICY-LOCK, e.g.
    /// lca-qspinlock, lca-mcs. `--list` describes each.
    #[arg(long, default_value = "default", value_delimiter = ',')]
    pub policy: Vec<String>,
    /// Core counts, e.g. `48`, `1,2,4` or `1..48`.
    #[arg(long, value_name = "LIST", default_value = "1,2,4,8,16,24,32,48", value_parser = parse_count_list)]
    pub cores: corral_launch::lists::Counts,
    /// Simulated seconds per point (the first 20% is warm-up).
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true)]
    pub seconds: f64,
    /// Seed of every point's random stream.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// `c` of paper 3's eq. 1: ticket handoff cycles per contending core.
    #[arg(long, value_name = "CYCLES")]
    pub contender_cycles: Option<f64>,
    /// Print the points and events/s as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the points as CSV to this file.
    #[arg(long, value_name = "FILE.csv")]
    pub csv: Option<String>,
    /// Also write the JSON report to this file.
    #[arg(long, value_name = "FILE.json")]
    pub out: Option<String>,
    /// Draw throughput versus cores, one line per policy, into this SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<String>,
    /// List the built-in workloads and the policies, then exit.
    #[arg(long)]
    pub list: bool,
}

/// A built-in workload, or a JSON workload file.
fn load_workload(spec: &str) -> Result<Workload, CliError> {
    if let Some(w) = preset(spec) {
        return Ok(w);
    }
    let path = Path::new(spec);
    if !path.exists() {
        return Err(CliError(format!(
            "--workload: unknown workload '{spec}' (no such file either); built-in: {}",
            NAMES.join(", ")
        )));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError(format!("--workload: cannot read {spec}: {e}")))?;
    Workload::from_json(&text).map_err(|e| CliError(format!("--workload {spec}: {e}")))
}

fn list() {
    println!("workloads:");
    for name in NAMES {
        let w = preset(name).expect("listed presets exist");
        println!("  {name:<16} {}", w.description);
    }
    println!("policies:");
    for (name, what) in POLICIES {
        println!("  {name:<16} {what}");
    }
    let locks: Vec<&str> = OVER_LOCKS.iter().map(|l| l.0).collect();
    println!(
        "  POLICY-LOCK      POLICY ({}) over LOCK ({}) instead of the declared spin locks",
        SCHEDULERS.join(", "),
        locks.join(", ")
    );
}

fn progress_bar(done: usize, total: usize) {
    const WIDTH: usize = 30;
    let filled = done * WIDTH / total.max(1);
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r[{}{}] {done}/{total}",
        "#".repeat(filled),
        " ".repeat(WIDTH - filled)
    );
    if done == total {
        let _ = writeln!(err);
    }
}

pub(crate) fn run(args: SimArgs) -> Result<(), CliError> {
    if args.list {
        list();
        return Ok(());
    }
    CliError::check_sim_seconds(args.seconds)?;
    for p in &args.policy {
        corral_sim::make_policy(p, 1).map_err(|e| CliError(format!("--policy: {e}")))?;
    }
    let workloads = args
        .workload
        .iter()
        .map(|w| load_workload(w.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut costs = corral_sim::LockCosts::default();
    if let Some(c) = args.contender_cycles {
        if !(c >= 0.0 && c.is_finite()) {
            return Err(CliError::bad_value(
                "--contender-cycles",
                &c.to_string(),
                "expected cycles >= 0",
            ));
        }
        costs.per_contender = c;
    }
    let spec = SweepSpec {
        costs,
        workloads,
        policies: args.policy.clone(),
        cores: args.cores.0.clone(),
        seconds: args.seconds,
        seed: args.seed,
    };
    let show_progress = std::io::stderr().is_terminal();
    let quiet = |_: usize, _: usize| {};
    let report = if show_progress {
        run_sweep(&spec, &progress_bar)
    } else {
        run_sweep(&spec, &quiet)
    }
    .map_err(|e| CliError(e.to_string()))?;
    let json = serde_json::to_string_pretty(&report).map_err(|e| CliError(e.to_string()))?;
    if let Some(path) = &args.out {
        std::fs::write(path, &json).map_err(|e| CliError(format!("--out {path}: {e}")))?;
    }
    if let Some(path) = &args.csv {
        std::fs::write(path, to_csv(&report))
            .map_err(|e| CliError(format!("--csv {path}: {e}")))?;
    }
    if let Some(path) = &args.plot {
        std::fs::write(path, svg_plot(&report.points))
            .map_err(|e| CliError(format!("--plot {path}: {e}")))?;
    }
    if args.json {
        println!("{json}");
        return Ok(());
    }
    println!(
        "{:<16} {:<14} {:>6} {:>14} {:>9} {:>6} {:>5} {:>9}",
        "workload", "policy", "cores", "ops/s", "speedup", "wait", "ssc", "settle_ms"
    );
    for p in &report.points {
        println!(
            "{:<16} {:<14} {:>6} {:>14.0} {:>9.2} {:>5.1}% {:>5} {:>9}",
            p.workload,
            p.policy,
            p.cores,
            p.throughput,
            p.speedup,
            p.wait_share * 100.0,
            p.ssc.map(|s| s.to_string()).unwrap_or_else(|| "-".into()),
            p.settle_ms
                .map(|s| format!("{s:.1}"))
                .unwrap_or_else(|| "-".into())
        );
    }
    println!(
        "{:.1} M events/s per host core; {:.1} s wall",
        report.events_per_second / 1e6,
        report.wall_seconds
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_load_by_name_or_file_with_clear_errors() {
        assert_eq!(load_workload("mempop").unwrap().name, "mempop");
        let e = load_workload("no-such-workload").unwrap_err().0;
        assert!(
            e.contains("unknown workload 'no-such-workload'") && e.contains("fops"),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("corral-sim-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("w.json");
        std::fs::write(
            &file,
            r#"{"name":"x","locks":[{"name":"l","algo":"ticket"}],"operation":[{"work":1,"lock":"l","cs":-5}]}"#,
        )
        .unwrap();
        let e = load_workload(file.to_str().unwrap()).unwrap_err().0;
        assert!(e.contains("operation[0].cs"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
