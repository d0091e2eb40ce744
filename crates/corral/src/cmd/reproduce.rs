//! `corral reproduce FIGURE` and `corral reproduce all`: the seed papers'
//! figures redone by the simulator, each as SVG, CSV and a text of where and
//! why corral's differ.

use crate::CliError;
use corral_sim::reproduce::{self, Recipe, Scale, FIGURES};
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `corral reproduce`.
#[derive(clap::Args)]
pub(crate) struct ReproduceArgs {
    /// A figure name (see --list), or `all`.
    #[arg(required_unless_present = "list")]
    pub figure: Option<String>,
    /// Directory the SVG, CSV and text files go to (created if missing).
    #[arg(long, value_name = "DIR", default_value = "corral-figures")]
    pub out_dir: PathBuf,
    /// Simulated seconds per point; 0.1 runs `all` in about 3 minutes on 2
    /// host cores, longer runs are smoother.
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    pub seconds: f64,
    /// Leave out core counts above this (a quick look at a figure).
    #[arg(long, value_name = "CORES")]
    pub max_cores: Option<u32>,
    /// List the figures and whether each can be redone, then exit.
    #[arg(long)]
    pub list: bool,
    /// Print a JSON summary (files, stated against corral's values).
    #[arg(long)]
    pub json: bool,
}

fn list() {
    for f in FIGURES {
        match f.recipe {
            Recipe::Sim { .. } => println!("{:<12} {}", f.name, f.title),
            Recipe::Cannot(why) => println!("{:<12} {} [not redone: {why}]", f.name, f.title),
        }
    }
}

pub(crate) fn run(args: ReproduceArgs) -> Result<(), CliError> {
    if args.list {
        list();
        return Ok(());
    }
    CliError::check_sim_seconds(args.seconds)?;
    if args.max_cores == Some(0) {
        return Err(CliError::bad_value(
            "--max-cores",
            "0",
            "expected at least 1 core",
        ));
    }
    let name = args.figure.as_deref().unwrap_or("all");
    let figures: Vec<_> = if name == "all" {
        FIGURES.iter().collect()
    } else {
        vec![reproduce::find(name).map_err(|e| CliError(format!("FIGURE: {e}")))?]
    };
    std::fs::create_dir_all(&args.out_dir)
        .map_err(|e| CliError(format!("--out-dir {}: {e}", args.out_dir.display())))?;
    let scale = Scale {
        seconds: args.seconds,
        max_cores: args.max_cores,
    };
    let start = Instant::now();
    let mut reports = Vec::new();
    for (i, f) in figures.iter().enumerate() {
        let t0 = Instant::now();
        let r = reproduce::reproduce(f, &args.out_dir, scale)
            .map_err(|e| CliError(format!("{}: {e}", f.name)))?;
        let what = match &r.reason {
            Some(why) => format!("not redone: {why}"),
            None => format!(
                "{} points, {:.1} M events/s",
                r.points,
                r.events_per_second / 1e6
            ),
        };
        eprintln!(
            "[{}/{}] {:<12} {:>6.1} s  {what}",
            i + 1,
            figures.len(),
            f.name,
            t0.elapsed().as_secs_f64()
        );
        reports.push(r);
    }
    let wall = start.elapsed().as_secs_f64();
    if args.json {
        let doc = serde_json::json!({
            "out_dir": args.out_dir,
            "seconds_per_point": args.seconds,
            "wall_seconds": wall,
            "figures": reports,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).map_err(|e| CliError(e.to_string()))?
        );
    } else {
        println!(
            "{} figures ({} redone) in {} ({wall:.0} s)",
            reports.len(),
            reports.iter().filter(|r| r.redone).count(),
            args.out_dir.display()
        );
    }
    Ok(())
}
