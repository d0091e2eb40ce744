//! `corral bench apps`: real multithreaded programs from Debian's packages,
//! each under glibc's own locks, under corral's default (`corral run -- PROG`)
//! and under `corral run --lock ALG` for every algorithm, at several thread
//! counts, side by side in one invocation. The table users judge corral by.

pub(crate) mod catalog;
mod confirm;
pub(crate) mod fixture;
mod measure;
mod pin;
mod report;
mod rounds;
mod scaling;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use corral_launch::launch::{find_preload, resolve_program};
use corral_launch::CliError;
use corral_locks::Algorithm;
use corral_runtime::topology::format_cpu_list;
use serde::Serialize;

use crate::stats::MIN_ROUNDS;

use catalog::{App, Column};
use fixture::Fixture;
use measure::{loadavg, Bench};
use pin::{parse_pin_cpus, PinCpus};
use report::{
    control_below_bar, control_line, loss_of, point, print_app, verdict, AppPoint, Loss, Sample,
};
use rounds::{confirm_point, run_rounds, Point, Progress};

/// A run longer than this many times --duration-ms, plus
/// `TIMEOUT_ALLOWANCE_MS` for a loaded machine, is killed and its point
/// marked `timeout`.
const TIMEOUT_FACTOR: u64 = 20;
const TIMEOUT_ALLOWANCE_MS: u64 = 10_000;

/// Arguments of `corral bench apps`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
THE PROGRAMS (Debian packages; scripts/ci-deps.sh installs them)
  sysbench-mutex    sysbench mutex, one mutex, no work outside it: pure lock
                    handoff. Throughput: locks/s over sysbench's own total time.
  sysbench-threads  sysbench threads --thread-locks=1: every event takes one
                    mutex 100 times and yields the CPU while holding it.
                    Throughput: events/s over sysbench's total time.
  stress-ng-mutex   stress-ng --mutex N: N processes, each of two threads that
                    lock one mutex, change their SCHED_FIFO priority (as root)
                    and yield inside it. Run for whole seconds (--timeout, the
                    nearest to --duration-ms, at least 1): with a fixed number
                    of ops its end is racy and idles up to 1 s, under glibc
                    too. Throughput: bogo-ops over its own wall-clock time,
                    from its --yaml. As root, its real-time threads compete
                    with the kernel's real-time throttling, so its figures
                    vary up to 2x from run to run under glibc too.
  pigz              pigz -1 -b 32: the fastest level and smallest blocks, so its
                    mutex/condition-variable work queues hand off as often as
                    pigz allows. Throughput: input MB/s over the wall time.
  git-grep          git grep over a packed commit of 2048 generated files:
                    threads share git's object-reading mutex and its work-queue
                    mutex (about half a million lock calls a second). More work
                    is more runs. Throughput: files/s over the wall time.
  The first three are lock benchmarks; pigz and git-grep are everyday tools
  where locks are not the whole story, so corral must not cost them anything.

THE COLUMNS
  glibc     the program alone: glibc's own locks, no corral.
  default   `corral run -- PROG`: policy lca, lock futex.
  ALG       `corral run --lock ALG -- PROG` (policy lca). `futex` is the
            default's algorithm: its column measures the default again, which
            shows the run-to-run noise.
  glibc-again
            with --with-control: the program alone a second time; its ratio
            is glibc against itself, the machine's noise.

HOW A POINT IS MEASURED
  For each program and thread count the glibc run is timed first to pick an
  amount of work that takes about --duration-ms; every column then does that
  same work, so CPU seconds compare directly (stress-ng runs for a time, and its
  CPU is compared per op done). CPU is user+sys of the program and
  its children (getrusage). Wall time runs from the program's start to its
  exit: the `corral run` command's own start and its summary after the exit
  are not in it (time `corral run -- true` against `true` for those). A run
  longer than 20x --duration-ms + 10 s is killed and shown as `timeout`; one
  that fails is shown as `failed`. Other load on the machine moves every
  figure: the load average is printed at both ends.
  The table shows medians; the JSON document (--json, --report) also keeps
  every run of each point in round order (`runs`: throughput, wall and CPU
  seconds), where runs that fall in two groups show.
  With --pin-cpus every column runs under `taskset -c LIST`, so glibc and
  corral meet the same placement: left to the kernel on 2 CPUs, stress-ng's
  runs spread about 0.75-1.10x of their median under glibc alone; pinned to
  one CPU, about 2%.

THE VERDICT
  Under each table: the points where corral's default loses, that is its
  throughput is below 0.95x glibc's, or its throughput is within 0.95-1.05x and
  its CPU time above 1.2x glibc's. Nothing is left out for looking bad; with
  --repeat, a throughput loss whose median lies inside glibc's own range over
  its repeats is marked so (glibc's run-to-run noise is that wide there),
  and with --with-control one no farther from 1x than glibc-again's ratio is
  marked \"within the machine's noise\". With 5 repeats or more each loss
  shows the 95% interval of its ratio (a bootstrap over the repeats' rounds,
  each run side by side), and the verdict counts the losses whose interval
  lies wholly below 0.95x. Marked losses still count.
  With --confirm-rounds R, a point whose interval reaches both sides of
  0.95x (its first rounds cannot tell a loss from a pass) runs every column
  again, --repeat rounds at a time, until the interval lies on one side or R
  rounds are added. The ratio before and after is printed under its table.
  Points clear of the bar, above or below, are not run again: a chance loss
  is not re-drawn any more than a chance pass.
  With --with-control the last line counts the points where glibc-again,
  glibc against itself, reads under 0.95x: how often noise alone fails the
  bar in the same runs.
  Where one lock is all the work (sysbench-mutex), the default must also keep
  0.8x of its own 1-thread rate at every count. That is measured with every
  count given the 1-thread point's work, the default alone, side by side
  (repeat more runs): the table's points are sized on glibc, whose hand-offs
  make the 64-thread work a fifth of the 1-thread work, so corral's run there
  lasts about 60 ms and its search's first milliseconds weigh in it. Both
  ratios are printed, the table's second.

EXAMPLES
  corral bench apps                                  the whole table (minutes)
  corral bench apps --apps sysbench-mutex --threads 1,4,64 --locks default,mcs
  corral bench apps --repeat 3 --report apps.json    medians of 3, JSON kept
  corral bench apps --locks default --repeat 7 --confirm-rounds 14 --with-control
                                                     the acceptance table
  corral bench apps --apps stress-ng-mutex --pin-cpus 0 --locks default
                                                     one CPU, low noise")]
pub struct BenchAppsArgs {
    /// Programs (comma-separated): sysbench-mutex, sysbench-threads,
    /// stress-ng-mutex, pigz, git-grep, sysbench-yields,
    /// rocksdb-readrandom, or `all`.
    #[arg(long, value_name = "LIST", default_value = "all", value_parser = parse_apps)]
    pub(crate) apps: Apps,
    /// Thread counts (for stress-ng-mutex: processes of two threads each).
    #[arg(long, value_name = "LIST", default_value = "1,2,4,8,16,32,64", value_parser = parse_threads)]
    pub(crate) threads: corral_launch::lists::Counts,
    /// Columns besides glibc (always measured): `default`, lock algorithm
    /// names, or `all` (default plus every algorithm).
    #[arg(long, value_name = "LIST", default_value = "all", value_parser = parse_columns)]
    pub(crate) locks: Columns,
    /// Target length of each run; the work is sized on glibc to take this long.
    #[arg(long, value_name = "MS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub(crate) duration_ms: u64,
    /// Runs of each point; with more than one the medians are reported.
    /// Each repeat runs every column once, starting one column later than
    /// the repeat before.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub(crate) repeat: u32,
    /// Up to this many more rounds at each point whose first --repeat
    /// rounds leave the default's verdict open: its 95% interval reaches
    /// both sides of 0.95x glibc. Every column runs again side by side,
    /// --repeat rounds at a time, until the interval lies on one side or
    /// the rounds are spent; the table shows the medians over all rounds
    /// and lists each such point's ratio before and after. Points clear of
    /// the bar either way get none. 0: off. Needs --repeat 5 or more and
    /// the default among --locks.
    #[arg(long, value_name = "ROUNDS", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=500))]
    pub(crate) confirm_rounds: u32,
    /// Also run each program without corral a second time (column
    /// `glibc-again`): its ratio to glibc is the machine's noise at that
    /// point, and a loss no farther from 1x than it is marked so in the
    /// verdict.
    #[arg(long)]
    pub(crate) with_control: bool,
    /// Run every program, in every column, on these CPUs only (`taskset
    /// -c LIST`: `0`, `0-3`, `0,2,4-7`).
    #[arg(long, value_name = "LIST", value_parser = parse_pin_cpus)]
    pub(crate) pin_cpus: Option<PinCpus>,
    /// Run the corral columns whose lock parks (default, futex, adaptive)
    /// as `corral run --load-after-contended N`: each process stays on
    /// glibc's locks until it has handed a mutex to a waiting thread N
    /// times (`corral run`'s default: 1000). 0: corral loads at the first lock call.
    #[arg(long, value_name = "N", default_value_t = corral_policy::engage::LOAD_AFTER_CONTENDED)]
    pub(crate) load_after_contended: u32,
    /// Another lock library as a column: NAME=LIB.so, preloaded into the
    /// program as LD_PRELOAD does, in the same rounds as glibc and corral
    /// (FlexGuard: its interpose library, built from its public source; it needs
    /// root and TSC_KHZ in the environment); repeatable.
    #[arg(long, value_name = "NAME=LIB.so")]
    pub(crate) peer: Vec<crate::peer::Peer>,
    /// Print the JSON document instead of the tables.
    #[arg(long)]
    pub(crate) json: bool,
    /// Also write the JSON document to FILE.
    #[arg(long, value_name = "FILE.json")]
    pub(crate) report: Option<PathBuf>,
}

/// A parsed `--apps` list.
#[derive(Clone, Debug)]
pub(crate) struct Apps(Vec<App>);

fn parse_apps(s: &str) -> Result<Apps, String> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim) {
        if item == "all" {
            out = App::ALL.to_vec();
            continue;
        }
        let app = App::ALL
            .into_iter()
            .find(|a| a.name() == item)
            .ok_or_else(|| {
                let names: Vec<&str> = App::ALL.iter().map(|a| a.name()).collect();
                format!(
                    "unknown program '{item}'; allowed: {}, all",
                    names.join(", ")
                )
            })?;
        if !out.contains(&app) {
            out.push(app);
        }
    }
    Ok(Apps(out))
}

/// `--threads`: stress-ng and sysbench accept far more, but a point past a
/// few hundred threads on a small machine only measures thread creation.
fn parse_threads(s: &str) -> Result<corral_launch::lists::Counts, String> {
    let counts = corral_launch::lists::parse_count_list(s)?;
    match counts.iter().find(|&&n| n > 1024) {
        Some(n) => Err(format!("{n} threads is over the limit of 1024")),
        None => Ok(counts),
    }
}

/// A parsed `--locks` list (glibc not included).
#[derive(Clone, Debug)]
pub(crate) struct Columns(Vec<Column>);

fn parse_columns(s: &str) -> Result<Columns, String> {
    let mut out = Vec::new();
    let mut add = |c: Column| {
        if !out.contains(&c) {
            out.push(c);
        }
    };
    for item in s.split(',').map(str::trim) {
        match item {
            "all" => {
                add(Column::Default);
                Algorithm::ALL
                    .into_iter()
                    .for_each(|a| add(Column::Lock(a)));
            }
            "default" => add(Column::Default),
            "glibc" => {} // always measured
            name => add(Column::Lock(name.parse().map_err(
                |e: corral_locks::UnknownAlgorithm| format!("{e}, default, all"),
            )?)),
        }
    }
    if out.is_empty() {
        return Err("nothing to compare with glibc; give default, an algorithm or all".into());
    }
    Ok(Columns(out))
}

/// A program as the report describes it.
#[derive(Clone, Debug, Serialize)]
struct AppInfo {
    /// The name.
    app: App,
    /// Its command line (N threads, W work).
    command: &'static str,
    /// The throughput's unit.
    unit: &'static str,
    /// The Debian package.
    package: &'static str,
}

/// `--json`'s document.
#[derive(Clone, Debug, Serialize)]
struct AppsReport {
    /// CPUs this process may use.
    cpus: usize,
    /// With --pin-cpus: the CPUs every run was confined to.
    pin_cpus: Option<Vec<u32>>,
    /// The 1-minute load average before the first run and after the last:
    /// other work on the machine moves every figure.
    loadavg_start: Option<f64>,
    loadavg_end: Option<f64>,
    /// Target length of each run.
    duration_ms: u64,
    /// Runs per point.
    repeat: u32,
    /// --confirm-rounds: the most rounds added to a point whose first
    /// rounds left the default's verdict open (each such point says what
    /// it was given in its `confirmation`).
    confirm_rounds: u32,
    /// --load-after-contended: the contended hand-offs each process of a
    /// parking corral column made on glibc's locks before corral loaded.
    load_after_contended: u32,
    /// The thread counts.
    threads: Vec<u32>,
    /// The columns, glibc first.
    configs: Vec<&'static str>,
    /// The programs.
    apps: Vec<AppInfo>,
    /// Every point, by program, thread count, column.
    points: Vec<AppPoint>,
    /// Where one lock is the program's work (sysbench-mutex): the default
    /// at every thread count given the 1-thread point's work, side by
    /// side; each point's `ratio_vs_own_one_thread` is the rate it keeps.
    own_rate_same_work: Vec<AppPoint>,
    /// Where corral's default loses.
    losses: Vec<Loss>,
    /// With --with-control: where glibc against itself reads under the
    /// default's bar (0.95x), the rate at which noise alone fails it.
    control_below_bar: Vec<Loss>,
}

/// Runs the sweep and prints the tables (or the JSON document).
pub(crate) fn run(args: BenchAppsArgs) -> Result<(), CliError> {
    let apps = &args.apps.0;
    for app in apps {
        if resolve_program(app.program().as_ref()).is_none() {
            return Err(CliError(format!(
                "--apps {}: '{}' is not installed; install the Debian package '{}' (scripts/ci-deps.sh installs every program this bench runs)",
                app.name(),
                app.program(),
                app.package()
            )));
        }
    }
    if let Some(pin) = &args.pin_cpus {
        let allowed = corral_runtime::affinity::allowed_cpus();
        let missing = pin.missing_from(&allowed);
        if !missing.is_empty() {
            return Err(CliError(format!(
                "--pin-cpus {}: this process may not run on CPUs {} (it may on {})",
                pin.to_list(),
                format_cpu_list(&missing),
                format_cpu_list(&allowed)
            )));
        }
        if resolve_program("taskset".as_ref()).is_none() {
            return Err(CliError(
                "--pin-cpus runs each program under taskset, which is not installed; install the Debian package 'util-linux'".into(),
            ));
        }
    }
    if args.confirm_rounds > 0 && (args.repeat as usize) < MIN_ROUNDS {
        return Err(CliError(format!(
            "--confirm-rounds {} needs --repeat {} or more: the open verdicts it settles are read from a 95% interval over the rounds, and {} round(s) give none",
            args.confirm_rounds, MIN_ROUNDS, args.repeat
        )));
    }
    if args.confirm_rounds > 0 && !args.locks.0.contains(&Column::Default) {
        return Err(CliError(format!(
            "--confirm-rounds {} settles the default's verdicts, and --locks has no `default`",
            args.confirm_rounds
        )));
    }
    crate::peer::check_unique(&args.peer).map_err(CliError)?;
    let mut columns = vec![Column::Glibc];
    columns.extend(args.locks.0.iter().copied());
    // Leaked: a column names its peer for the rest of the process.
    columns.extend(
        args.peer
            .iter()
            .map(|p| Column::Peer(Box::leak(Box::new(p.clone())))),
    );
    if args.with_control {
        columns.push(Column::GlibcAgain);
    }
    // Opened now: an unwritable path is refused before minutes of running.
    let report_file = match &args.report {
        Some(path) => Some(
            std::fs::File::create(path)
                .map_err(|e| CliError(format!("--report {}: {e}", path.display())))?,
        ),
        None => None,
    };
    let preload = find_preload()?;
    let target = args.duration_ms as f64 / 1e3;
    let same_work_apps = apps
        .iter()
        .filter(|&&a| scaling::wants_same_work(a, &args.threads, &columns))
        .count();
    let total =
        (apps.len() * columns.len() + same_work_apps) * args.threads.len() * args.repeat as usize;
    // Each point: the run plus ~50 ms of start-up; each (app, threads): a
    // calibration of about 1.5 runs.
    let estimate_s =
        total as f64 * (target + 0.05) + (apps.len() * args.threads.len()) as f64 * 1.5 * target;
    eprintln!(
        "corral bench apps: {} programs x {} thread counts x {} columns x {} repeat(s) = {total} runs of about {} ms: about {:.0} min if every column ran as fast as glibc; slower columns stretch it (the progress lines say what is left)",
        apps.len(),
        args.threads.len(),
        columns.len(),
        args.repeat,
        args.duration_ms,
        (estimate_s / 60.0).ceil()
    );
    if args.confirm_rounds > 0 {
        let most = apps.len() * args.threads.len() * columns.len() * args.confirm_rounds as usize;
        eprintln!(
            "corral bench apps: and up to {} more rounds at each point whose verdict the first {} leave open (at most {most} more runs; the progress lines count them as they start)",
            args.confirm_rounds, args.repeat
        );
    }
    if let Some(pin) = &args.pin_cpus {
        eprintln!(
            "corral bench apps: every run on CPUs {} (taskset -c)",
            pin.to_list()
        );
    }
    let loadavg_start = loadavg();
    let fx = Fixture::create(
        &std::env::temp_dir(),
        apps.contains(&App::Pigz),
        apps.contains(&App::GitGrep),
    )
    .map_err(|e| CliError(format!("preparing the inputs: {e}")))?;
    let bench = Bench {
        fx: &fx,
        preload: Some(preload),
        limit: Duration::from_millis(args.duration_ms * TIMEOUT_FACTOR + TIMEOUT_ALLOWANCE_MS),
        pin: args.pin_cpus.clone(),
        load_after_contended: args.load_after_contended,
    };
    let mut progress = Progress {
        done: 0,
        total,
        started: Instant::now(),
    };
    let mut points: Vec<AppPoint> = Vec::new();
    let mut same_work: Vec<AppPoint> = Vec::new();
    let default_at = columns.iter().position(|&c| c == Column::Default);
    for &app in apps {
        let mut work_one = None;
        for &n in args.threads.iter() {
            let work = bench.calibrate(app, n, target)?;
            if n == 1 {
                work_one = Some(work);
            }
            let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); columns.len()];
            let at = Point {
                app,
                threads: n,
                work,
            };
            let mut sample = |c: Column| bench.sample(app, c, n, work);
            run_rounds(
                &mut sample,
                at,
                &columns,
                0..args.repeat,
                &mut samples,
                &mut progress,
            )?;
            let confirmation = match default_at {
                Some(d) if args.confirm_rounds > 0 => confirm_point(
                    &mut sample,
                    at,
                    &columns,
                    d,
                    (args.repeat, args.confirm_rounds),
                    &mut samples,
                    &mut progress,
                )?,
                _ => None,
            };
            let glibc = point(app, n, Column::Glibc, work, &samples[0], None);
            points.push(glibc.clone());
            for (i, &c) in columns.iter().enumerate().skip(1) {
                let mut p = point(app, n, c, work, &samples[i], Some(&glibc));
                p.ratio_interval = report::ratio_interval(&samples[0], &samples[i]);
                if Some(i) == default_at {
                    p.confirmation = confirmation.clone();
                }
                points.push(p);
            }
        }
        if let (Some(work_one), true) = (
            work_one,
            scaling::wants_same_work(app, &args.threads, &columns),
        ) {
            let seen = |n: u32, s: &Sample| progress.seen(app, n, "default, 1-thread work", s);
            same_work.extend(scaling::same_work(
                &bench,
                app,
                &args.threads,
                work_one,
                args.repeat,
                seen,
            )?);
        }
    }
    drop(fx);
    report::attach_control(&mut points);
    scaling::attach_own_rate(&mut points);
    let losses: Vec<Loss> = points
        .iter()
        .filter(|p| p.config == Column::Default.name())
        .filter_map(|p| {
            loss_of(p).map(|why| Loss {
                app: p.app,
                threads: p.threads,
                why,
            })
        })
        .collect();
    let control_below_bar = control_below_bar(&points);
    let report = AppsReport {
        cpus: corral_runtime::affinity::allowed_cpus().len(),
        pin_cpus: args.pin_cpus.as_ref().map(|p| p.cpus().to_vec()),
        loadavg_start,
        loadavg_end: loadavg(),
        duration_ms: args.duration_ms,
        repeat: args.repeat,
        confirm_rounds: args.confirm_rounds,
        load_after_contended: args.load_after_contended,
        threads: args.threads.to_vec(),
        configs: columns.iter().map(|c| c.name()).collect(),
        apps: apps
            .iter()
            .map(|&a| AppInfo {
                app: a,
                command: a.template(),
                unit: a.unit(),
                package: a.package(),
            })
            .collect(),
        points,
        own_rate_same_work: same_work,
        losses,
        control_below_bar,
    };
    let text = serde_json::to_string_pretty(&report)?;
    if let (Some(mut file), Some(path)) = (report_file, &args.report) {
        use std::io::Write;
        file.write_all((text.clone() + "\n").as_bytes())
            .map_err(|e| CliError(format!("--report {}: {e}", path.display())))?;
    }
    if args.json {
        println!("{text}");
        return Ok(());
    }
    let load = |l: Option<f64>| l.map_or("?".to_string(), |l| format!("{l:.1}"));
    println!(
        "corral bench apps: {} CPUs{}, {} ms per run, {} repeat(s){}, load average {} before, {} after",
        report.cpus,
        args.pin_cpus.as_ref().map_or(String::new(), |p| format!(
            ", every run pinned to CPUs {}",
            p.to_list()
        )),
        args.duration_ms,
        args.repeat,
        if args.repeat > 1 { " (medians)" } else { "" },
        load(report.loadavg_start),
        load(report.loadavg_end)
    );
    for &app in apps {
        print_app(app, &report.points, &args.threads, &columns);
        if let Some(line) = scaling::line(app, &report.points, &report.own_rate_same_work) {
            println!("{line}");
        }
    }
    let all: Vec<String> = report.losses.iter().map(Loss::named).collect();
    let measured = report
        .points
        .iter()
        .filter(|p| p.config == Column::Default.name())
        .count();
    println!();
    println!("overall {}", verdict(&all, measured));
    if args.with_control {
        let controls = report
            .points
            .iter()
            .filter(|p| p.config == Column::GlibcAgain.name())
            .count();
        println!("{}", control_line(&report.control_below_bar, controls));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_errors_name_the_choices() {
        assert_eq!(parse_apps("pigz,all").unwrap().0, App::ALL.to_vec());
        assert!(parse_apps("memcached")
            .unwrap_err()
            .contains("sysbench-mutex"));
        let cols = parse_columns("default,mcs,glibc").unwrap().0;
        assert_eq!(cols, vec![Column::Default, Column::Lock(Algorithm::Mcs)]);
        assert_eq!(
            parse_columns("all").unwrap().0.len(),
            1 + Algorithm::ALL.len()
        );
        let e = parse_columns("bakery").unwrap_err();
        assert!(
            e.contains("bakery") && e.contains("ticket") && e.contains("default"),
            "{e}"
        );
        assert!(parse_columns("glibc").is_err());
        assert!(parse_threads("1,2048").is_err());
    }
}
