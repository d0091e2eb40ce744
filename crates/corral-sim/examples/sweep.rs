//! A minimal sweep driver without the CLI:
//! `cargo run --release -p corral-sim --example sweep -- WORKLOADS POLICIES CORES SECONDS [C]`
//! (comma lists; a workload is a built-in name or a JSON file). Prints JSON.

use corral_sim::presets::preset;
use corral_sim::{run_sweep, LockCosts, SweepSpec, Workload};
use std::error::Error;

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        return Err("usage: sweep WORKLOADS POLICIES CORES SECONDS [C]".into());
    }
    let list = |s: &str| s.split(',').map(str::to_string).collect::<Vec<_>>();
    let workloads = list(&args[0])
        .iter()
        .map(|w| -> Result<Workload, Box<dyn Error>> {
            match preset(w) {
                Some(p) => Ok(p),
                None => Ok(Workload::from_json(&std::fs::read_to_string(w)?)?),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let cores = list(&args[2])
        .iter()
        .map(|c| c.parse::<u32>())
        .collect::<Result<Vec<_>, _>>()?;
    let mut costs = LockCosts::default();
    if let Some(c) = args.get(4) {
        costs.per_contender = c.parse().map_err(|_| "C: not a number")?;
    }
    let spec = SweepSpec {
        workloads,
        policies: list(&args[1]),
        cores,
        seconds: args[3].parse().map_err(|_| "SECONDS: not a number")?,
        seed: 1,
        costs,
    };
    let report = run_sweep(&spec, &|_, _| {})?;
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
