//! `corral bench counter`: paper 1's single counter (and paper 4's doubly
//! linked list and multiple counters) as a real, separate program under
//! `corral run`, side by side with glibc's own locks, at several thread
//! counts. Ratios come from one invocation.

use corral_launch::launch::{find_preload, launch, Output};
use corral_launch::CliError;
use corral_locks::Algorithm;
use corral_runtime::config::{Policy, RuntimeConfig, Waiting};
use serde::Serialize;

use super::worker::WorkerResult;
use crate::peer::Peer;

/// Arguments of `corral bench counter`.
#[derive(clap::Args, Debug)]
pub struct BenchCounterArgs {
    /// `counter` (paper 1), `list` or `counters` (paper 4).
    #[arg(long, default_value = "counter", value_parser = ["counter", "list", "counters"])]
    pub(crate) workload: String,
    /// Thread counts.
    #[arg(long, value_name = "LIST", default_value = "1,2,4,8,16", value_parser = corral_launch::lists::parse_count_list)]
    pub(crate) threads: corral_launch::lists::Counts,
    /// Lock algorithm for policies `none` and `lca`.
    #[arg(long = "lock", value_name = "ALG", default_value = "ticket")]
    pub(crate) lock: Algorithm,
    /// Policies: `glibc` (no corral), `none`, `lca`, `default` (`corral run` with no flags: lca over futex, whatever --lock says)
    #[arg(long = "policy", value_name = "LIST", default_value = "glibc,none,lca", value_parser = parse_policies)]
    pub(crate) policies: Policies,
    /// Length of each point.
    #[arg(long, value_name = "MS", default_value_t = 400, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) duration_ms: u64,
    /// Private work between critical sections, in arithmetic iterations.
    #[arg(long, value_name = "ITERATIONS", default_value_t = 0)]
    pub(crate) work: u32,
    /// Another lock library as a column: NAME=LIB.so, preloaded into the
    /// worker as LD_PRELOAD does; repeatable.
    #[arg(long, value_name = "NAME=LIB.so")]
    pub(crate) peer: Vec<Peer>,
    /// Print `{"points":[...]}` as JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// A policy column: glibc's locks, or corral's under a policy, or a peer
/// library's. In JSON, its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchPolicy {
    /// glibc's own locks: the program runs without corral.
    Glibc,
    /// corral's locks and measurement without confinement, each waiter
    /// waiting as its algorithm does (`corral run --policy none --wait
    /// spin`): the collapse the policy cures.
    None,
    /// corral's locks under the SSC policy.
    Lca,
    /// `corral run` with no flags: policy lca with the default lock
    /// (futex), whatever `--lock` names.
    Default,
    /// Another lock library (`--peer`), kept for the whole process.
    Peer(&'static Peer),
}

impl Serialize for BenchPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl BenchPolicy {
    /// The name in `--policy` and in the table.
    pub(crate) fn name(self) -> &'static str {
        match self {
            BenchPolicy::Glibc => "glibc",
            BenchPolicy::None => "none",
            BenchPolicy::Lca => "lca",
            BenchPolicy::Default => "default",
            BenchPolicy::Peer(p) => &p.name,
        }
    }
}

/// A parsed `--policy` list.
#[derive(Clone, Debug)]
pub(crate) struct Policies(pub Vec<BenchPolicy>);

/// Parses `--policy`: comma-separated column names.
fn parse_policies(s: &str) -> Result<Policies, String> {
    s.split(',')
        .map(|p| match p.trim() {
            "glibc" => Ok(BenchPolicy::Glibc),
            "none" => Ok(BenchPolicy::None),
            "lca" => Ok(BenchPolicy::Lca),
            "default" => Ok(BenchPolicy::Default),
            other => Err(format!(
                "unknown policy '{other}'; allowed: glibc, none, lca, default"
            )),
        })
        .collect::<Result<Vec<_>, _>>()
        .and_then(|list| {
            match list
                .iter()
                .enumerate()
                .find(|(i, p)| list[..*i].contains(p))
            {
                Some((_, twice)) => Err(format!(
                    "policy '{}' is listed twice: each policy is one column of the table; \
                     run the command again to repeat a point",
                    twice.name()
                )),
                None => Ok(Policies(list)),
            }
        })
}

/// One measured point.
#[derive(Clone, Debug, Serialize)]
pub struct CounterPoint {
    /// `counter`, `list` or `counters`.
    pub(crate) workload: String,
    /// Threads of the worker program.
    pub(crate) threads: u32,
    /// The column.
    pub(crate) policy: BenchPolicy,
    /// The lock algorithm, `pthread` under glibc.
    pub(crate) lock: String,
    /// Operations per second.
    pub(crate) throughput: f64,
    /// SSC size at the end (lca only).
    pub(crate) ssc_bound: Option<u32>,
}

/// `--json`'s document.
#[derive(Serialize)]
struct CounterReport {
    /// Every point, by thread count then policy.
    points: Vec<CounterPoint>,
}

/// Measures every (threads, policy) point, printing progress if asked.
pub fn measure(
    workload: &str,
    threads: &[u32],
    policies: &[BenchPolicy],
    lock: Algorithm,
    duration_ms: u64,
    work: u32,
    progress: bool,
) -> Result<Vec<CounterPoint>, CliError> {
    let preload = find_preload()?;
    let exe = std::env::current_exe()?.to_string_lossy().into_owned();
    let mut points = Vec::new();
    for &n in threads {
        for &policy in policies {
            let prog: Vec<std::ffi::OsString> = [
                exe.as_str(),
                "bench",
                "worker",
                "--workload",
                workload,
                "--threads",
                &n.to_string(),
                "--duration-ms",
                &duration_ms.to_string(),
                "--work",
                &work.to_string(),
            ]
            .iter()
            .map(|s| s.into())
            .collect();
            let cfg = match policy {
                BenchPolicy::Default => RuntimeConfig::default(),
                _ => RuntimeConfig {
                    policy: if policy == BenchPolicy::Lca {
                        Policy::Lca
                    } else {
                        Policy::None
                    },
                    lock,
                    waiting: if policy == BenchPolicy::None {
                        Waiting::Spin
                    } else {
                        Waiting::Park
                    },
                    // A column that studies a lock runs it from the first
                    // call; only the default column is `corral run`'s.
                    load_after_contended: 0,
                    ..RuntimeConfig::default()
                },
            };
            let (lib, prog) = match policy {
                BenchPolicy::Glibc => (None, prog),
                BenchPolicy::Peer(p) => (None, p.wrap(prog)),
                _ => (Some(preload.as_path()), prog),
            };
            let (outcome, stdout) = launch(&cfg, lib, &prog, None, Output::Capture)?;
            if !outcome.status.success() {
                return Err(CliError(format!(
                    "the benchmark worker failed ({}) at {n} threads, {}",
                    outcome.status,
                    policy.name()
                )));
            }
            let line = String::from_utf8_lossy(&stdout);
            let result: WorkerResult = serde_json::from_str(line.trim()).map_err(|e| {
                CliError(format!("unreadable worker output '{}': {e}", line.trim()))
            })?;
            let point = CounterPoint {
                workload: workload.to_string(),
                threads: n,
                policy,
                lock: match policy {
                    BenchPolicy::Glibc => "pthread".into(),
                    BenchPolicy::Peer(p) => p.lib.display().to_string(),
                    _ => cfg.lock.name().into(),
                },
                throughput: result.ops as f64 / result.seconds.max(1e-9),
                ssc_bound: outcome
                    .stats
                    .filter(|_| matches!(policy, BenchPolicy::Lca | BenchPolicy::Default))
                    .map(|s| s.ssc_bound),
            };
            if progress {
                eprintln!(
                    "  {:>3} threads  {:<6} {:>14.0} ops/s",
                    n,
                    policy.name(),
                    point.throughput
                );
            }
            points.push(point);
        }
    }
    Ok(points)
}

/// Throughput of `policy` at `threads`, if measured.
pub fn throughput_of(points: &[CounterPoint], threads: u32, policy: BenchPolicy) -> Option<f64> {
    points
        .iter()
        .find(|p| p.threads == threads && p.policy == policy)
        .map(|p| p.throughput)
}

/// Prints the table: one row per thread count, one column per policy.
pub fn print_table(points: &[CounterPoint], threads: &[u32], policies: &[BenchPolicy]) {
    let mut header = format!("{:>8}", "threads");
    for p in policies {
        header.push_str(&format!(" {:>16}", format!("{} ops/s", p.name())));
    }
    println!("{header}");
    for &n in threads {
        let mut row = format!("{n:>8}");
        for &p in policies {
            let cell = throughput_of(points, n, p).map_or("-".to_string(), |t| format!("{t:.0}"));
            row.push_str(&format!(" {cell:>16}"));
        }
        println!("{row}");
    }
}

/// Measures and prints the table (or the JSON document).
pub(crate) fn run(args: BenchCounterArgs) -> Result<(), CliError> {
    crate::peer::check_unique(&args.peer).map_err(CliError)?;
    let mut policies = args.policies.0.clone();
    // Leaked: a column names its peer for the rest of the process.
    policies.extend(
        args.peer
            .iter()
            .map(|p| BenchPolicy::Peer(Box::leak(Box::new(p.clone())))),
    );
    let policies = &policies;
    if !args.json {
        eprintln!(
            "corral bench counter: workload {}, lock {}, {} ms per point, work {} outside the lock",
            args.workload, args.lock, args.duration_ms, args.work
        );
    }
    let points = measure(
        &args.workload,
        &args.threads,
        policies,
        args.lock,
        args.duration_ms,
        args.work,
        !args.json,
    )?;
    if args.json {
        let doc = CounterReport { points };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_table(&points, &args.threads, policies);
    }
    Ok(())
}
