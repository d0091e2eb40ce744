//! `corral bench kernel`: real kernel-lock-intensive programs from paper 1
//! (mmapbench, sockbench, parallel postmark, parallel find and grep) and
//! paper 3 (FOPS, MEMPOP), each run by threads or by processes.

mod catalog;
mod fixture;
mod workloads;

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use corral_launch::CliError;
use serde::{Deserialize, Serialize};

use catalog::Bench;
use fixture::{Fixture, FixtureShape};
use workloads::Worker;

/// Arguments of `corral bench kernel`.
#[derive(clap::Args, Clone, Debug)]
#[command(after_help = "\
Each benchmark is a real program: N threads of this process (or, with \
--processes, N processes) loop over system calls that contend the kernel's \
locks. Run it under `corral run --kernel-locks` or `corral attach` to see the \
waiting. Data lives in a scratch directory on tmpfs (--dir), removed after.")]
pub struct BenchKernelArgs {
    /// Benchmarks to run (comma-separated), or `all`.
    #[arg(value_name = "BENCH", required = true, value_delimiter = ',', value_parser = parse_bench)]
    pub(crate) benches: Vec<Option<Bench>>,
    /// Workers (threads, or processes with --processes).
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub(crate) threads: u32,
    /// Run each worker as its own process instead of a thread.
    #[arg(long)]
    pub(crate) processes: bool,
    /// How long each benchmark runs, unless --ops-per-worker is given.
    #[arg(long, value_name = "MS", default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) duration_ms: u64,
    /// Stop each worker after N operations instead of after --duration-ms.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) ops_per_worker: Option<u64>,
    /// Scratch directory base (tmpfs, as in paper 1).
    #[arg(long, value_name = "DIR", default_value = "/dev/shm")]
    pub(crate) dir: PathBuf,
    /// mmapbench's shared file size (paper 1: 500).
    #[arg(long, value_name = "MIB", default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub(crate) mmap_mib: u64,
    /// Postmark's initial files per worker (paper 1: 500 or 10000).
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub(crate) postmark_files: u32,
    /// Find/grep tree: subdirectories per directory.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub(crate) tree_fanout: u32,
    /// Find/grep tree: levels below each worker's root.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=8))]
    pub(crate) tree_depth: u32,
    /// Find/grep tree: files per directory.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(0..=1024))]
    pub(crate) tree_files: u32,
    /// Print one JSON document instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Internal: run as worker process I over the fixture at --worker-root.
    #[arg(long, hide = true, value_name = "I", requires = "worker_root")]
    pub(crate) worker_index: Option<usize>,
    #[arg(long, hide = true, value_name = "DIR")]
    pub(crate) worker_root: Option<PathBuf>,
}

/// One item of the BENCH list: a benchmark, or `None` for `all`.
fn parse_bench(s: &str) -> Result<Option<Bench>, String> {
    if s.trim() == "all" {
        return Ok(None);
    }
    <Bench as clap::ValueEnum>::from_str(s.trim(), true)
        .map(Some)
        .map_err(|_| {
            let names: Vec<&str> = Bench::ALL.iter().map(|b| b.name()).collect();
            format!(
                "unknown benchmark '{s}'; allowed: {}, all",
                names.join(", ")
            )
        })
}

/// One benchmark's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct BenchResult {
    /// The benchmark.
    bench: Bench,
    /// Workers that ran it.
    workers: u32,
    /// Whether the workers were processes rather than threads.
    processes: bool,
    /// CPUs this process may use.
    cpus: usize,
    /// Wall time from the workers' start to their end.
    elapsed_ms: f64,
    /// Operations of all workers together.
    ops: u64,
    /// `ops` over the elapsed time.
    ops_per_sec: f64,
    /// Each worker's operations, by worker index.
    ops_per_worker: Vec<u64>,
}

/// `corral bench kernel --json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct BenchKernelReport {
    /// The generated data's shape (the fixture flags).
    shape: serde_json::Value,
    /// One result per benchmark, in the order run.
    results: Vec<BenchResult>,
}

impl BenchKernelArgs {
    /// The fixture the flags describe.
    fn shape(&self) -> FixtureShape {
        FixtureShape {
            mmap_mib: self.mmap_mib,
            postmark_files: self.postmark_files,
            tree_fanout: self.tree_fanout,
            tree_depth: self.tree_depth,
            files_per_dir: self.tree_files,
        }
    }

    /// The benchmarks to run, without repeats; `all` expands in place.
    fn selected(&self) -> Vec<Bench> {
        let mut out = Vec::new();
        for b in &self.benches {
            match b {
                Some(b) if !out.contains(b) => out.push(*b),
                Some(_) => {}
                None => out = Bench::ALL.to_vec(),
            }
        }
        out
    }
}

/// Runs `workers` workers of `bench` as threads of this process, from one
/// barrier, each until `ops` operations or `stop`; returns each one's count.
fn run_threads(
    bench: Bench,
    fixture: &Fixture,
    first: usize,
    workers: usize,
    limit: Limit,
) -> Result<Vec<u64>, CliError> {
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(workers + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|i| {
                let (stop, barrier) = (&stop, &barrier);
                s.spawn(move || -> std::io::Result<u64> {
                    let worker = Worker::new(first + i, bench, fixture);
                    barrier.wait();
                    let mut worker = worker?;
                    let mut done = 0;
                    // Relaxed: a plain stop flag; a few extra operations are harmless.
                    while !stop.load(Ordering::Relaxed) && limit.ops.is_none_or(|n| done < n) {
                        worker.op()?;
                        done += 1;
                    }
                    Ok(done)
                })
            })
            .collect();
        barrier.wait();
        if limit.ops.is_none() {
            std::thread::sleep(limit.duration);
            stop.store(true, Ordering::Relaxed); // see the workers' load
        }
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .expect("benchmark worker panicked")
                    .map_err(|e| CliError(format!("{}: {e}", bench.name())))
            })
            .collect()
    })
}

/// When a worker stops.
#[derive(Clone, Copy)]
struct Limit {
    /// After this many operations, if given.
    ops: Option<u64>,
    /// Otherwise after this long.
    duration: Duration,
}

/// Runs each worker as a process: this executable again, one worker each.
fn run_processes(
    args: &BenchKernelArgs,
    bench: Bench,
    fixture: &Fixture,
) -> Result<Vec<u64>, CliError> {
    let exe = std::env::current_exe()?;
    let children: Vec<_> = (0..args.threads as usize)
        .map(|i| {
            let mut cmd = Command::new(&exe);
            cmd.args(["bench", "kernel", bench.name(), "--threads", "1", "--json"])
                .arg(format!("--duration-ms={}", args.duration_ms))
                .arg(format!("--postmark-files={}", args.postmark_files))
                .arg(format!("--worker-index={i}"))
                .arg("--worker-root")
                .arg(&fixture.root);
            if let Some(n) = args.ops_per_worker {
                cmd.arg(format!("--ops-per-worker={n}"));
            }
            cmd.stdout(std::process::Stdio::piped()).spawn()
        })
        .collect::<Result<_, _>>()?;
    let mut counts = Vec::new();
    for child in children {
        let out = child.wait_with_output()?;
        if !out.status.success() {
            return Err(CliError(format!(
                "{}: a worker process failed ({})",
                bench.name(),
                out.status
            )));
        }
        let report: BenchKernelReport = serde_json::from_slice(&out.stdout)
            .map_err(|e| CliError(format!("worker output: {e}")))?;
        counts.extend(
            report
                .results
                .iter()
                .flat_map(|r| r.ops_per_worker.iter().copied()),
        );
    }
    Ok(counts)
}

/// Runs one benchmark: prepares its data (or, in a worker process, uses
/// the parent's) and runs the workers.
fn run_one(args: &BenchKernelArgs, bench: Bench) -> Result<BenchResult, CliError> {
    let limit = Limit {
        ops: args.ops_per_worker,
        duration: Duration::from_millis(args.duration_ms),
    };
    let workers = args.threads as usize;
    let started = Instant::now();
    let counts = match (&args.worker_root, args.worker_index) {
        (Some(root), Some(index)) => {
            let fixture = Fixture::existing(root.clone(), args.postmark_files);
            run_threads(bench, &fixture, index, 1, limit)?
        }
        _ => {
            let fixture =
                Fixture::create(&args.dir, bench, workers, args.shape()).map_err(|e| {
                    CliError(format!(
                        "{}: cannot prepare {}: {e}",
                        bench.name(),
                        args.dir.display()
                    ))
                })?;
            let started_here = Instant::now();
            let counts = if args.processes {
                run_processes(args, bench, &fixture)?
            } else {
                run_threads(bench, &fixture, 0, workers, limit)?
            };
            return Ok(result(args, bench, counts, started_here.elapsed()));
        }
    };
    Ok(result(args, bench, counts, started.elapsed()))
}

/// The result of `counts` operations per worker over `elapsed`.
fn result(
    args: &BenchKernelArgs,
    bench: Bench,
    counts: Vec<u64>,
    elapsed: Duration,
) -> BenchResult {
    let ops: u64 = counts.iter().sum();
    let secs = elapsed.as_secs_f64().max(1e-9);
    BenchResult {
        bench,
        workers: args.threads,
        processes: args.processes,
        cpus: corral_runtime::affinity::allowed_cpus().len(),
        elapsed_ms: secs * 1e3,
        ops,
        ops_per_sec: ops as f64 / secs,
        ops_per_worker: counts,
    }
}

/// Runs every selected benchmark and prints the table (or the JSON
/// document).
pub(crate) fn run(args: BenchKernelArgs) -> Result<(), CliError> {
    let mut report = BenchKernelReport {
        shape: serde_json::to_value(args.shape())?,
        results: Vec::new(),
    };
    for bench in args.selected() {
        if !args.json {
            eprintln!(
                "[bench kernel] {} with {} {}",
                bench.name(),
                args.threads,
                if args.processes {
                    "processes"
                } else {
                    "threads"
                }
            );
        }
        report.results.push(run_one(&args, bench)?);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "{:<10} {:>8} {:>10} {:>12} {:>14}",
        "bench", "workers", "ms", "ops", "ops/s"
    );
    for r in &report.results {
        println!(
            "{:<10} {:>8} {:>10.0} {:>12} {:>14.0}",
            r.bench.name(),
            r.workers,
            r.elapsed_ms,
            r.ops,
            r.ops_per_sec
        );
    }
    Ok(())
}
