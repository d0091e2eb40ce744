//! `corral model`: paper 3's Markov model of a ticket spin lock (eq. 1), and
//! its constant-handoff (MCS-like) variant, over a list of core counts.

use corral_policy::model::{peak, McsModel, ModelPoint, TicketModel};
use serde::Serialize;

use crate::CliError;

/// Arguments of `corral model`.
#[derive(clap::Args)]
#[command(after_help = "\
Each core runs a closed loop: `a` cycles of non-serial work, then a serial \
section of `s` cycles under one lock. With a ticket lock every waiter re-reads \
the lock's cache line at each release, so a handoff costs about `c` cycles per \
waiting core; the model (paper 3, eq. 1) gives the expected speedup over one \
core and shows the sudden collapse past the peak. `--lock mcs` keeps the \
handoff constant.

Example: corral model --a 12500 --s 400 --c 100 --cores 1..48")]
pub(crate) struct ModelArgs {
    /// Non-serial work per operation, in cycles.
    #[arg(long = "a", value_name = "CYCLES", allow_negative_numbers = true, value_parser = positive)]
    pub(crate) a: f64,
    /// Serial section (critical section) length, in cycles.
    #[arg(long = "s", value_name = "CYCLES", allow_negative_numbers = true, value_parser = positive)]
    pub(crate) s: f64,
    /// Handoff cost per waiting core, in cycles.
    #[arg(long = "c", value_name = "CYCLES", allow_negative_numbers = true, value_parser = non_negative)]
    pub(crate) c: f64,
    /// Core counts: `1..48`, `1,2,4`, or a mix `1,2,8..16`.
    #[arg(long, value_name = "LIST", default_value = "1..48", value_parser = corral_launch::lists::parse_count_list)]
    pub(crate) cores: corral_launch::lists::Counts,
    /// Which lock the model describes.
    #[arg(long, value_enum, default_value_t = ModelLock::Ticket)]
    pub(crate) lock: ModelLock,
    /// Print `{"points":[{"cores":N,"speedup":X},...],"peak":{...}}`.
    #[arg(long)]
    pub(crate) json: bool,
}

/// The lock the model describes.
#[derive(Clone, Copy, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ModelLock {
    /// Handoff cost grows with the number of waiters (paper 3, eq. 1).
    Ticket,
    /// Constant handoff cost (MCS, CLH, K42).
    Mcs,
}

/// Parses a number of cycles > 0.
fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err("expected a positive number of cycles".into()),
    }
}

/// Parses a number of cycles >= 0.
fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err("expected a number of cycles >= 0".into()),
    }
}

/// `--json`'s document: the inputs, every point and the peak.
#[derive(Serialize)]
struct ModelReport<'a> {
    /// `--lock`.
    lock: ModelLock,
    /// `--a`, cycles.
    a: f64,
    /// `--s`, cycles.
    s: f64,
    /// `--c`, cycles.
    c: f64,
    /// Speedup at each core count.
    points: &'a [ModelPoint],
    /// The highest speedup, if any point.
    peak: Option<&'a ModelPoint>,
}

/// Evaluates the model at every core count and prints the table (or JSON).
pub(crate) fn run(args: ModelArgs) -> Result<(), CliError> {
    if args.cores.iter().any(|&n| n > 65_536) {
        return Err(CliError::bad_value(
            "--cores",
            "(list)",
            "core counts up to 65536",
        ));
    }
    let points: Vec<ModelPoint> = args
        .cores
        .iter()
        .map(|&n| {
            let speedup = match args.lock {
                ModelLock::Ticket => TicketModel {
                    a: args.a,
                    s: args.s,
                    c: args.c,
                }
                .speedup(n),
                ModelLock::Mcs => McsModel {
                    a: args.a,
                    s: args.s,
                    c: args.c,
                }
                .speedup(n),
            };
            ModelPoint { cores: n, speedup }
        })
        .collect();
    let report = ModelReport {
        lock: args.lock,
        a: args.a,
        s: args.s,
        c: args.c,
        points: &points,
        peak: peak(&points),
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    println!("{:>6} {:>9}", "cores", "speedup");
    for p in &points {
        println!("{:>6} {:>9.2}", p.cores, p.speedup);
    }
    if let (Some(pk), Some(last)) = (report.peak, points.last()) {
        println!(
            "peak {:.2}x at {} cores; {:.2}x at {} cores ({:.0}% of the peak)",
            pk.speedup,
            pk.cores,
            last.speedup,
            last.cores,
            100.0 * last.speedup / pk.speedup
        );
    }
    Ok(())
}
