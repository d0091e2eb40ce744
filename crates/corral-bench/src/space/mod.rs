//! `corral bench space`: the judge. Points drawn from a seed over a space
//! of lock workloads (threads, locks and their skew, critical-section and
//! outside lengths, what the holder does, mutex, rwlock or condition
//! variable), each run by one C program under glibc, corral's default and
//! every `--peer`, interleaved in rotated order round after round; the
//! distribution of ratios to glibc and the worst points, each with the
//! command that replays it alone.

mod point;
mod program;
mod report;

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use corral_launch::CliError;

pub(crate) use point::{sample, Point};
use program::{Program, Runner};
use report::{distribution, render, worst, Arm, PointResult, Run, SpaceReport};

use crate::peer::{check_unique, Peer};

/// The seed the judge's table is measured with when none is given.
pub(crate) const DEFAULT_SEED: u64 = 20261128;
/// Fewest rounds that give a 95% interval.
const MIN_ROUNDS: usize = crate::stats::MIN_ROUNDS;
/// A run's length bounds, ms, whatever the budget.
const RUN_MS: (u64, u64) = (30, 3_000);
/// What starting and ending one run costs beside its length (a process,
/// corral's library, the thread start), ms: used only to size the runs.
const RUN_OVERHEAD_MS: u64 = 15;

/// `corral bench space`.
#[derive(clap::Args, Debug)]
pub struct BenchSpaceArgs {
    /// Points to draw from the space.
    #[arg(long, default_value_t = 60)]
    pub(crate) points: usize,
    /// The sampler's seed: the same seed draws the same points.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub(crate) seed: u64,
    /// The whole run's time, seconds: sizes each run's length (between 30
    /// ms and 3 s); points the budget cannot reach are left out and
    /// counted.
    #[arg(long, default_value_t = 300.0)]
    pub(crate) budget_s: f64,
    /// Each run's length in ms, instead of sizing it from --budget-s.
    #[arg(long)]
    pub(crate) duration_ms: Option<u64>,
    /// Rounds per point (every column once a round, in rotated order); 5 or
    /// more give a 95% interval.
    #[arg(long, default_value_t = 5)]
    pub(crate) rounds: usize,
    /// Measure this one point alone (its printed form, as the worst points
    /// are printed), instead of drawing points.
    #[arg(long, value_name = "PRINTED")]
    pub(crate) point: Option<Point>,
    /// Another lock library as a column: NAME=LIB.so, preloaded as
    /// LD_PRELOAD does; repeatable.
    #[arg(long, value_name = "NAME=LIB.so")]
    pub(crate) peer: Vec<Peer>,
    /// Also run glibc a second time: the machine's noise as a ratio.
    #[arg(long)]
    pub(crate) with_control: bool,
    /// How many of the default's worst points to print.
    #[arg(long, default_value_t = 5)]
    pub(crate) worst: usize,
    /// Print the JSON document instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Also write the JSON document to this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) report: Option<PathBuf>,
}

impl BenchSpaceArgs {
    fn check(&self) -> Result<(), CliError> {
        if self.point.is_none() && self.points == 0 {
            return Err(CliError::bad_value(
                "--points",
                "0",
                "expected at least one point",
            ));
        }
        if self.rounds == 0 {
            return Err(CliError::bad_value(
                "--rounds",
                "0",
                "expected at least one round",
            ));
        }
        if !(self.budget_s > 0.0 && self.budget_s.is_finite()) {
            return Err(CliError::bad_value(
                "--budget-s",
                &self.budget_s.to_string(),
                "expected a positive number of seconds",
            ));
        }
        if let Some(ms) = self.duration_ms {
            if ms == 0 {
                return Err(CliError::bad_value(
                    "--duration-ms",
                    "0",
                    "expected a positive length",
                ));
            }
        }
        check_unique(&self.peer).map_err(CliError)
    }

    /// The columns, glibc first.
    fn arms(&self) -> Vec<Arm> {
        let mut arms = vec![Arm::Glibc, Arm::Default];
        if self.with_control {
            arms.push(Arm::GlibcAgain);
        }
        arms.extend(self.peer.iter().cloned().map(Arm::Peer));
        arms
    }

    /// Each run's length: the flag's, or the budget shared over every run.
    fn run_ms(&self, points: usize, arms: usize) -> u64 {
        self.duration_ms.unwrap_or_else(|| {
            let runs = (points * arms * self.rounds) as f64;
            let each = (self.budget_s * 1000.0 / runs) as u64;
            each.saturating_sub(RUN_OVERHEAD_MS)
                .clamp(RUN_MS.0, RUN_MS.1)
        })
    }
}

/// Runs `corral bench space`.
pub(crate) fn run(args: BenchSpaceArgs) -> Result<(), CliError> {
    args.check()?;
    let (points, seed): (Vec<(usize, Point)>, Option<u64>) = match args.point {
        Some(p) => (vec![(0, p)], None),
        None => (
            sample(args.points, args.seed)
                .into_iter()
                .enumerate()
                .collect(),
            Some(args.seed),
        ),
    };
    let arms = args.arms();
    let duration_ms = args.run_ms(points.len(), arms.len());
    let preload = corral_launch::launch::find_preload()?;
    let program = Program::build(&std::env::temp_dir())?;
    let runner = Runner {
        program: &program,
        preload: &preload,
        duration_ms,
    };
    if args.rounds < MIN_ROUNDS {
        eprintln!(
            "note: {} rounds give no interval ({MIN_ROUNDS} do); verdicts are 'unsure'",
            args.rounds
        );
    }
    let report = measure(&args, &runner, &arms, &points, seed)?;
    let json = serde_json::to_string_pretty(&report)? + "\n";
    if let Some(path) = &args.report {
        std::fs::write(path, &json)
            .map_err(|e| CliError(format!("--report {}: {e}", path.display())))?;
    }
    if args.json {
        print!("{json}");
    } else {
        print!("{}", render(&report));
    }
    Ok(())
}

/// Measures every point within the budget.
fn measure(
    args: &BenchSpaceArgs,
    runner: &Runner<'_>,
    arms: &[Arm],
    points: &[(usize, Point)],
    seed: Option<u64>,
) -> Result<SpaceReport, CliError> {
    let started = Instant::now();
    let names: Vec<&str> = arms.iter().map(Arm::name).collect();
    eprintln!(
        "bench space: {} point(s) x {} columns ({}) x {} rounds, {} ms a run",
        points.len(),
        arms.len(),
        names.join(", "),
        args.rounds,
        runner.duration_ms
    );
    let mut results = Vec::new();
    for (done, &(index, point)) in points.iter().enumerate() {
        // A replayed point always runs; drawn ones stop at the budget (with
        // a tenth's grace for the runs' own spread).
        if args.point.is_none() && started.elapsed().as_secs_f64() > args.budget_s * 1.1 {
            break;
        }
        let runs = rounds(runner, arms, &point, args.rounds)?;
        let result = PointResult::new(index, point, arms, runs);
        progress(&result, done + 1, points.len(), started);
        results.push(result);
    }
    let distribution = arms
        .iter()
        .skip(1)
        .filter_map(|a| distribution(a.name(), &results))
        .collect();
    Ok(SpaceReport {
        seed,
        rounds: args.rounds,
        duration_ms: runner.duration_ms,
        arms: names.iter().map(|n| n.to_string()).collect(),
        worst: worst(&results, args.worst),
        skipped: points.len() - results.len(),
        points: results,
        distribution,
    })
}

/// `rounds` rounds of every column at `point`; column order rotates by
/// one each round, so no column always runs first (after an idle
/// machine) or right after the same other column. `runs[a][r]`.
fn rounds(
    runner: &Runner<'_>,
    arms: &[Arm],
    point: &Point,
    rounds: usize,
) -> Result<Vec<Vec<Run>>, CliError> {
    let mut runs: Vec<Vec<Run>> = vec![Vec::with_capacity(rounds); arms.len()];
    for r in 0..rounds {
        for k in 0..arms.len() {
            let a = (r + k) % arms.len();
            runs[a].push(runner.run(point, &arms[a])?);
        }
    }
    Ok(runs)
}

/// One line a point on stderr: what it read and the time left.
fn progress(p: &PointResult, done: usize, total: usize, started: Instant) {
    let elapsed = started.elapsed().as_secs_f64();
    let left = elapsed / done as f64 * (total - done) as f64;
    eprintln!(
        "[{done}/{total}] #{} {}: {} ({elapsed:.0} s, ~{left:.0} s left)",
        p.index,
        p.printed,
        report::columns_line(p)
    );
    let _ = std::io::stderr().flush();
}
