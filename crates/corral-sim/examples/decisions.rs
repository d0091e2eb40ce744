//! The SSC decision log of one `lca` point, for studying the search:
//! `cargo run --release -p corral-sim --example decisions -- WORKLOAD CORES SECONDS [LOCK]`
//! (LOCK: `qspinlock` or `mcs` runs `lca-LOCK`; `SEED` in the environment
//! picks the random stream, 1 by default). Prints each bound move
//! with its time, T (or measured progress) and p, then the point's figures.

use corral_policy::ssc::SscParams;
use corral_sim::lca::Lca;
use corral_sim::presets::preset;
use corral_sim::{simulate, OverLock, SimConfig, OVER_LOCKS};
use std::error::Error;

/// The kernel preset, with fields overridden from the environment for
/// experiments: `WARMUP_NS`, `CONFIRMATIONS`, `PROGRESS_ROUND_NS`,
/// `PROGRESS_ROUND_MIN`, `VOTES_PER_SSC_CORE`, `JUMP_CONFIRMATIONS`.
fn params() -> SscParams {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let mut p = SscParams::kernel();
    if let Some(v) = var("WARMUP_NS") {
        p.vote_warmup = v;
    }
    if let Some(v) = var("CONFIRMATIONS") {
        p.confirmations = v as u32;
    }
    if let Some(v) = var("PROGRESS_ROUND_NS") {
        p.progress_round = v;
    }
    if let Some(v) = var("PROGRESS_ROUND_MIN") {
        p.progress_round_min = v;
    }
    if let Some(v) = var("VOTES_PER_SSC_CORE") {
        p.votes_per_ssc_core = v as u32;
    }
    if let Some(v) = var("JUMP_CONFIRMATIONS") {
        p.jump_confirmations = v as u32;
    }
    p
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        return Err("usage: decisions WORKLOAD CORES SECONDS [LOCK]".into());
    }
    let workload = preset(&args[0]).ok_or("unknown workload")?;
    let cores: u32 = args[1].parse()?;
    let seed = std::env::var("SEED").map_or(Ok(1), |s| s.parse())?;
    let cfg = SimConfig::new(cores, args[2].parse()?, seed);
    let (result, lca) = match args.get(3) {
        Some(name) => {
            let lock = OVER_LOCKS
                .iter()
                .find(|(n, _)| n == name)
                .ok_or("LOCK: qspinlock or mcs")?
                .1;
            let mut policy = OverLock::new(Lca::with_params(params()), lock);
            let result = simulate(&cfg, &workload, &mut policy)?;
            (result, policy.into_inner())
        }
        None => {
            let mut policy = Lca::with_params(params());
            (simulate(&cfg, &workload, &mut policy)?, policy)
        }
    };
    for d in &lca.decisions {
        println!(
            "{:>9.3} ms {:?} {} -> {}  T {:.1}  p {:.3}  lock-intensive {}",
            d.at as f64 * 1e-6,
            d.kind,
            d.bound_before,
            d.bound_after,
            d.throughput,
            d.p,
            d.lock_intensive
        );
    }
    println!(
        "ops/s {:.0}  ssc {:?}  settle_ms {:?}",
        result.throughput, result.ssc, result.settle_ms
    );
    Ok(())
}
