//! The programs `corral bench apps` runs (how each is started for a thread
//! count and an amount of work, and how its own report of that work is
//! read) and the columns it runs them in.

use std::ffi::OsString;

use corral_locks::Algorithm;
use corral_runtime::config::RuntimeConfig;
use serde::Serialize;

use super::fixture::Fixture;
use crate::peer::Peer;

/// A real multithreaded program from Debian's packages, run as is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum App {
    /// `sysbench mutex` on one mutex: the pure lock-handoff case.
    SysbenchMutex,
    /// `sysbench threads --thread-locks=1`: a yield inside the critical
    /// section, so waiters pile up behind a holder that gave its CPU away.
    SysbenchThreads,
    /// `stress-ng --mutex N`: N processes of two threads each, run for a
    /// time (see [`App::seconds_of_work`]).
    StressNgMutex,
    /// `pigz`: a compressor whose threads meet at mutex/condition-variable
    /// work queues.
    Pigz,
    /// `git grep` over a commit: threads that share git's object-reading
    /// mutex and its work-queue mutex.
    GitGrep,
    /// `sysbench threads` at its own default of 1000 yields an event: a
    /// holder that gives its CPU away, and nothing else.
    SysbenchYields,
    /// RocksDB's `db_bench readrandom` on a small database held wholly in
    /// one block-cache shard: readers meet at the shard's mutex.
    RocksdbReadrandom,
}

/// What one run of a program did, by its own account where it gives one.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Done {
    /// Units of work (locks, events, bogo operations, MB, files).
    pub(crate) units: f64,
    /// The time those units took: the program's own figure where it prints
    /// one, else the run's wall time.
    pub(crate) seconds: f64,
}

impl App {
    /// Every program, in the order `all` runs them.
    pub(crate) const ALL: [App; 7] = [
        App::SysbenchMutex,
        App::SysbenchThreads,
        App::StressNgMutex,
        App::Pigz,
        App::GitGrep,
        App::SysbenchYields,
        App::RocksdbReadrandom,
    ];

    /// The name in `--apps` and in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            App::SysbenchMutex => "sysbench-mutex",
            App::SysbenchThreads => "sysbench-threads",
            App::StressNgMutex => "stress-ng-mutex",
            App::Pigz => "pigz",
            App::GitGrep => "git-grep",
            App::SysbenchYields => "sysbench-yields",
            App::RocksdbReadrandom => "rocksdb-readrandom",
        }
    }

    /// The executable.
    pub(crate) fn program(self) -> &'static str {
        match self {
            App::SysbenchMutex | App::SysbenchThreads | App::SysbenchYields => "sysbench",
            App::StressNgMutex => "stress-ng",
            App::Pigz => "pigz",
            App::GitGrep => "git",
            App::RocksdbReadrandom => "db_bench",
        }
    }

    /// The Debian package that ships [`App::program`].
    pub(crate) fn package(self) -> &'static str {
        match self {
            App::SysbenchMutex | App::SysbenchThreads | App::SysbenchYields => "sysbench",
            App::StressNgMutex => "stress-ng",
            App::Pigz => "pigz",
            App::GitGrep => "git",
            App::RocksdbReadrandom => "rocksdb-tools",
        }
    }

    /// The throughput's unit.
    pub(crate) fn unit(self) -> &'static str {
        match self {
            App::SysbenchMutex => "locks/s",
            App::SysbenchThreads | App::SysbenchYields => "events/s",
            App::RocksdbReadrandom => "reads/s",
            App::StressNgMutex => "bogo-ops/s",
            App::Pigz => "MB/s",
            App::GitGrep => "files/s",
        }
    }

    /// The command line with N for the thread count and W for the work.
    pub(crate) fn template(self) -> &'static str {
        match self {
            App::SysbenchMutex => {
                "sysbench mutex --threads=N --mutex-num=1 --mutex-loops=0 --mutex-locks=W/N run"
            }
            App::SysbenchThreads => {
                "sysbench threads --threads=N --thread-locks=1 --thread-yields=100 --events=W --time=0 run"
            }
            App::StressNgMutex => {
                "stress-ng --mutex N --timeout W (N processes x 2 threads, for W seconds; as root under setpriv --bounding-set=-sys_nice)"
            }
            App::Pigz => "pigz -1 -b 32 -p N -c FILE... (W copies of a 4 MiB text file)",
            App::GitGrep => "git grep --threads=N -c -e mutex HEAD (W runs; 2048 files)",
            App::SysbenchYields => {
                "sysbench threads --threads=N --thread-locks=1 --events=W --time=0 run (1000 yields an event, its default)"
            }
            App::RocksdbReadrandom => {
                "db_bench --benchmarks=readrandom --use_existing_db=1 --threads=N --reads=W/N --cache_numshardbits=0 (200,000 keys made once by fillseq, all in the cache)"
            }
        }
    }

    /// A first amount of work to time, small enough for any thread count.
    pub(crate) fn first_work(self) -> u64 {
        match self {
            App::SysbenchMutex => 200_000,
            App::SysbenchThreads => 50,
            App::SysbenchYields => 5,
            App::RocksdbReadrandom => 20_000,
            App::StressNgMutex | App::Pigz | App::GitGrep => 1,
        }
    }

    /// For a program given a time, not an amount of work: the whole seconds
    /// (its only unit) closest to `target_s`, at least one; no probe is run.
    ///
    /// stress-ng's mutex stressor is run this way because its end is racy:
    /// with `--mutex-ops` the instance's last thread can signal its parent
    /// before the parent pauses, and the run then idles until a 1 s alarm,
    /// under glibc too. A run of a fixed amount of work then measured that
    /// stall, not the locks (session 11's table: 20 ms of work, 1 s of wall
    /// time). With `--timeout` its ops are counted over its own clock.
    pub(crate) fn seconds_of_work(self, target_s: f64) -> Option<u64> {
        match self {
            App::StressNgMutex => Some((target_s.round() as u64).max(1)),
            _ => None,
        }
    }

    /// Processes per sample and the work each is given: `git grep` cannot
    /// be told to do more, so more work is more runs.
    pub(crate) fn runs(self, work: u64) -> (u64, u64) {
        match self {
            App::GitGrep => (work, 1),
            _ => (1, work),
        }
    }

    /// Whether the program's stdout is read (else it goes to /dev/null).
    pub(crate) fn reads_stdout(self) -> bool {
        matches!(
            self,
            App::SysbenchMutex
                | App::SysbenchThreads
                | App::SysbenchYields
                | App::StressNgMutex
                | App::RocksdbReadrandom
        )
    }

    /// The command line for `threads` threads and `work` units.
    pub(crate) fn argv(self, fx: &Fixture, threads: u32, work: u64) -> Vec<OsString> {
        let mut v: Vec<OsString> = Vec::new();
        if self == App::StressNgMutex && corral_runtime::files::euid() == 0 {
            v.extend(WITHOUT_REAL_TIME.map(OsString::from));
        }
        v.push(self.program().into());
        let mut push = |s: String| v.push(s.into());
        match self {
            App::SysbenchMutex => {
                for a in [
                    "mutex".to_string(),
                    format!("--threads={threads}"),
                    "--mutex-num=1".into(),
                    "--mutex-loops=0".into(),
                    format!("--mutex-locks={}", per_thread(work, threads)),
                    "run".into(),
                ] {
                    push(a);
                }
            }
            App::SysbenchThreads | App::SysbenchYields => {
                let mut args = vec![
                    "threads".to_string(),
                    format!("--threads={threads}"),
                    "--thread-locks=1".into(),
                ];
                if self == App::SysbenchThreads {
                    args.push("--thread-yields=100".into());
                }
                args.extend([format!("--events={work}"), "--time=0".into(), "run".into()]);
                for a in args {
                    push(a);
                }
            }
            App::RocksdbReadrandom => {
                let mut db = OsString::from("--db=");
                db.push(fx.rocksdb());
                v.push(db);
                for a in [
                    "--benchmarks=readrandom".to_string(),
                    "--use_existing_db=1".into(),
                    format!("--num={}", super::fixture::ROCKSDB_KEYS),
                    format!("--reads={}", per_thread(work, threads)),
                    format!("--threads={threads}"),
                    "--cache_numshardbits=0".into(),
                    "--cache_size=67108864".into(),
                    "--compression_type=none".into(),
                ] {
                    v.push(a.into());
                }
            }
            App::StressNgMutex => {
                for a in [
                    "--mutex".to_string(),
                    threads.to_string(),
                    "--timeout".into(),
                    work.max(1).to_string(),
                    "--quiet".into(),
                    // Without it the --yaml report has no metrics (and it
                    // must come after --quiet, which would clear it).
                    "--metrics-brief".into(),
                    // Its log on stdout, which is read, not on the terminal.
                    "--stdout".into(),
                    "--yaml".into(),
                ] {
                    push(a);
                }
                v.push(fx.stress_yaml().into());
            }
            App::Pigz => {
                for a in ["-1", "-b", "32", "-p"] {
                    push(a.into());
                }
                push(threads.to_string());
                push("-c".into());
                for _ in 0..work {
                    v.push(fx.pigz_input().into());
                }
            }
            App::GitGrep => {
                v.push("-C".into());
                v.push(fx.repo().into());
                for a in [
                    "--no-pager".to_string(),
                    "grep".into(),
                    format!("--threads={threads}"),
                    "-c".into(),
                    "-e".into(),
                    "mutex".into(),
                    "HEAD".into(),
                ] {
                    v.push(a.into());
                }
            }
        }
        v
    }

    /// Reads what one run of `work` units did from its exit status and
    /// stdout (or the files it wrote); `wall_s` stands in where the program
    /// times nothing.
    pub(crate) fn done(
        self,
        fx: &Fixture,
        status: std::process::ExitStatus,
        stdout: &[u8],
        threads: u32,
        work: u64,
        wall_s: f64,
    ) -> Result<Done, String> {
        let out = String::from_utf8_lossy(stdout);
        // stress-ng's exit 3 is judged below, by the work it reports.
        let stress_ng_short_of_threads = self == App::StressNgMutex && status.code() == Some(3);
        if !(status.success() || stress_ng_short_of_threads) {
            let last = out.lines().rev().find(|l| !l.trim().is_empty());
            return Err(match last {
                Some(line) => format!("{} exited ({status}): {}", self.program(), line.trim()),
                None => format!("{} exited ({status})", self.program()),
            });
        }
        match self {
            App::SysbenchMutex => Ok(Done {
                units: (per_thread(work, threads) * u64::from(threads)) as f64,
                seconds: sysbench_total_time(&out)?,
            }),
            App::SysbenchThreads | App::SysbenchYields => Ok(Done {
                units: field(&out, "total number of events:")?,
                seconds: sysbench_total_time(&out)?,
            }),
            App::StressNgMutex => {
                let yaml = std::fs::read_to_string(fx.stress_yaml())
                    .map_err(|e| format!("stress-ng wrote no --yaml file: {e}"))?;
                let units = field(&yaml, "bogo-ops:")?;
                // Exit 3 is "a stressor could not create its threads"; a
                // run that still did work counts, one that did none fails.
                if !status.success() && units <= 0.0 {
                    let fail = out.lines().find(|l| l.contains("fail:")).unwrap_or("");
                    return Err(format!(
                        "stress-ng exited ({status}) without an operation in {work} s: {}",
                        fail.trim()
                    ));
                }
                Ok(Done {
                    units,
                    seconds: field(&yaml, "wall-clock-time:")?,
                })
            }
            App::Pigz => Ok(Done {
                units: (work * fx.pigz_bytes()) as f64 / 1e6,
                seconds: wall_s,
            }),
            App::GitGrep => Ok(Done {
                units: (work * fx.repo_files()) as f64,
                seconds: wall_s,
            }),
            App::RocksdbReadrandom => db_bench_done(&out),
        }
    }
}

/// The prefix that keeps stress-ng's mutex threads from making themselves
/// SCHED_FIFO, as they do whenever they may (as root): util-linux's
/// `setpriv` drops CAP_SYS_NICE, so their `pthread_setschedparam` fails,
/// as it does for any other user. As root, real-time threads that yield
/// inside the lock fight the kernel's real-time throttling, which starves
/// stress-ng's own parent: runs then overran their 1 s by up to 1 s, and a
/// point's throughput spread 250k-3.2M bogo-ops/s under glibc alone.
const WITHOUT_REAL_TIME: [&str; 4] = [
    "setpriv",
    "--bounding-set=-sys_nice",
    "--inh-caps=-sys_nice",
    "--",
];

/// db_bench's `readrandom : 11.3 micros/op 176324 ops/sec 0.907 seconds
/// 160000 operations; ...`: the operations and the seconds they took.
fn db_bench_done(out: &str) -> Result<Done, String> {
    let line = out
        .lines()
        .find(|l| l.starts_with("readrandom"))
        .ok_or("no 'readrandom' line in db_bench's output")?;
    let before = |unit: &str| -> Result<f64, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = words
            .iter()
            .position(|w| w.trim_end_matches(';') == unit)
            .filter(|&i| i > 0)
            .ok_or_else(|| format!("'{line}': no '{unit}'"))?;
        words[at - 1]
            .parse()
            .map_err(|_| format!("'{line}': '{}' is not a number", words[at - 1]))
    };
    let seconds = before("seconds")?;
    if seconds <= 0.0 {
        return Err(format!("'{line}': no time"));
    }
    Ok(Done {
        units: before("operations")?,
        seconds,
    })
}

/// sysbench mutex's per-thread lock count for `work` in all.
fn per_thread(work: u64, threads: u32) -> u64 {
    work.div_ceil(u64::from(threads)).max(1)
}

/// sysbench's `total time:   1.2345s`.
fn sysbench_total_time(out: &str) -> Result<f64, String> {
    let t = field(out, "total time:")?;
    if t > 0.0 {
        Ok(t)
    } else {
        Err(format!("sysbench reported a total time of {t} s"))
    }
}

/// The number after `key` on the first line that starts with it (leading
/// blanks ignored), a trailing unit letter dropped.
fn field(text: &str, key: &str) -> Result<f64, String> {
    let line = text
        .lines()
        .map(str::trim_start)
        .find(|l| l.starts_with(key))
        .ok_or_else(|| format!("no '{key}' in the program's output"))?;
    let value = line[key.len()..]
        .trim()
        .trim_end_matches(|c: char| c.is_ascii_alphabetic());
    value
        .parse()
        .map_err(|_| format!("'{line}': '{value}' is not a number"))
}

/// One column of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Column {
    /// The program alone.
    Glibc,
    /// The program alone again (--with-control): its ratio to `Glibc` is
    /// the machine's run-to-run noise at that point.
    GlibcAgain,
    /// `corral run -- PROG`.
    Default,
    /// `corral run --lock ALG -- PROG`.
    Lock(Algorithm),
    /// The program under another lock library (`--peer`); kept for the
    /// whole process, as the command line's flags are.
    Peer(&'static Peer),
}

impl Column {
    /// The name in `--locks`, the table and the JSON.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Column::Glibc => "glibc",
            Column::GlibcAgain => "glibc-again",
            Column::Default => "default",
            Column::Lock(alg) => alg.name(),
            Column::Peer(p) => &p.name,
        }
    }

    /// The configuration `corral run` would pass; `None` for glibc.
    pub(crate) fn config(self) -> Option<RuntimeConfig> {
        match self {
            Column::Glibc | Column::GlibcAgain | Column::Peer(_) => None,
            Column::Default => Some(RuntimeConfig::default()),
            Column::Lock(lock) => Some(RuntimeConfig {
                lock,
                ..RuntimeConfig::default()
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sysbench_and_stress_ng_reports() {
        let sysbench = "General statistics:\n    total time:                          0.0286s\n    total number of events:              4\n";
        assert_eq!(sysbench_total_time(sysbench).unwrap(), 0.0286);
        assert_eq!(field(sysbench, "total number of events:").unwrap(), 4.0);
        let yaml = "metrics:\n    - stressor: mutex\n      bogo-ops: 20002\n      wall-clock-time: 0.066999\n";
        assert_eq!(field(yaml, "bogo-ops:").unwrap(), 20002.0);
        assert_eq!(field(yaml, "wall-clock-time:").unwrap(), 0.066999);
        assert!(field("nothing", "total time:").is_err());
        assert!(sysbench_total_time("total time: 0.0000s").is_err());
    }

    #[test]
    fn stress_ng_runs_for_whole_seconds_with_its_metrics_kept() {
        assert_eq!(App::StressNgMutex.seconds_of_work(0.02), Some(1));
        assert_eq!(App::StressNgMutex.seconds_of_work(2.6), Some(3));
        assert_eq!(App::SysbenchMutex.seconds_of_work(2.6), None);
        let fx = Fixture::create(&std::env::temp_dir(), false, false).unwrap();
        let argv: Vec<String> = App::StressNgMutex
            .argv(&fx, 4, 2)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        let at = |flag: &str| argv.iter().position(|a| a == flag).unwrap();
        assert_eq!(argv[at("--timeout") + 1], "2");
        assert_eq!(argv[at("--mutex") + 1], "4");
        assert!(!argv.contains(&"--mutex-ops".to_string()), "{argv:?}");
        // stress-ng 0.15's --quiet clears the metrics asked for before it.
        assert!(at("--quiet") < at("--metrics-brief"), "{argv:?}");
    }

    #[test]
    fn reads_db_bench_readrandom() {
        let out = "Read rate: 0 ops/second\nreadrandom   :      11.330 micros/op 176324 ops/sec 0.907 seconds 160000 operations;   19.5 MB/s (80000 of 80000 found)\n";
        let d = db_bench_done(out).unwrap();
        assert_eq!((d.units, d.seconds), (160000.0, 0.907));
        assert!(db_bench_done("Read rate: 0 ops/second\n").is_err());
    }

    #[test]
    fn sysbench_yields_keeps_sysbench_default_yields() {
        let fx = Fixture::create(&std::env::temp_dir(), false, false).unwrap();
        let argv = |app: App| -> Vec<String> {
            app.argv(&fx, 8, 10)
                .into_iter()
                .map(|a| a.into_string().unwrap())
                .collect()
        };
        assert!(argv(App::SysbenchThreads).contains(&"--thread-yields=100".to_string()));
        assert!(!argv(App::SysbenchYields)
            .iter()
            .any(|a| a.starts_with("--thread-yields")));
    }

    #[test]
    fn sysbench_mutex_splits_the_work_over_the_threads() {
        assert_eq!(per_thread(1000, 3), 334);
        assert_eq!(per_thread(1, 64), 1);
    }
}
