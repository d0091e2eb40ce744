//! `corral doctor`: what this machine lets corral do, found out before a
//! run rather than from its one-line refusals. Each check says what it
//! found, what that means for corral, and how to enable what is missing;
//! the exit status is non-zero only where `corral run` could not work at
//! all.

use serde::Serialize;

use crate::CliError;

/// Arguments of `corral doctor`.
#[derive(clap::Args)]
pub(crate) struct DoctorArgs {
    /// Print the checks as one JSON document instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Verdict {
    /// Everything corral uses here is there.
    Ok,
    /// corral works without it, with less (said in `meaning`).
    Limited,
    /// `corral run` cannot work.
    Fatal,
}

/// One check.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Check {
    /// What was checked.
    pub(crate) what: &'static str,
    /// How it came out.
    pub(crate) verdict: Verdict,
    /// What was found.
    pub(crate) found: String,
    /// What it means for corral.
    pub(crate) meaning: String,
    /// How to enable what is missing (empty when nothing is).
    pub(crate) enable: String,
}

/// Every check, and whether `corral run` can work.
#[derive(Debug, Serialize)]
pub(crate) struct DoctorReport {
    /// `corral run` can start a program with corral's locks.
    pub(crate) runnable: bool,
    /// The checks, in the order a user would fix them.
    pub(crate) checks: Vec<Check>,
}

fn check(
    what: &'static str,
    verdict: Verdict,
    found: impl Into<String>,
    meaning: impl Into<String>,
    enable: impl Into<String>,
) -> Check {
    Check {
        what,
        verdict,
        found: found.into(),
        meaning: meaning.into(),
        enable: enable.into(),
    }
}

/// `libcorral_preload.so` as `corral run` would find it, without building
/// it: `$CORRAL_PRELOAD`, else beside this executable.
fn preload() -> Check {
    let path = corral_launch::launch::preload_location();
    match path.filter(|p| p.is_file()) {
        Some(p) => {
            let shim = p.with_file_name("libcorral_shim.so").is_file();
            check(
                "preload library",
                Verdict::Ok,
                p.display().to_string(),
                if shim {
                    "corral run interposes pthread locks; the shim beside it defers the \
                     load until a process locks"
                } else {
                    "corral run interposes pthread locks; no libcorral_shim.so beside it, \
                     so every process loads the full library at start"
                },
                "",
            )
        }
        None => check(
            "preload library",
            Verdict::Fatal,
            "libcorral_preload.so not found ($CORRAL_PRELOAD, or beside corral)",
            "corral run cannot interpose locks",
            "cargo build --release -p corral-preload -p corral-shim, or set CORRAL_PRELOAD",
        ),
    }
}

fn glibc() -> Check {
    // SAFETY: returns a static NUL-terminated string.
    let v = unsafe { core::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
    let v = v.to_string_lossy().into_owned();
    let at_least = |want: (u32, u32)| {
        let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= want
    };
    if at_least((2, 25)) {
        check(
            "glibc",
            Verdict::Ok,
            v,
            "mutex and condition-variable layouts corral keeps",
            "",
        )
    } else {
        check(
            "glibc",
            Verdict::Limited,
            v,
            "older than 2.25: process-shared condition variables are not recognised",
            "a newer distribution",
        )
    }
}

fn privileges() -> Check {
    let caps = corral_runtime::kernel::effective_caps(std::path::Path::new("/proc/self/status"))
        .unwrap_or(0);
    let euid = corral_runtime::files::euid();
    if corral_runtime::kernel::has_bpf_capabilities(caps) {
        check(
            "privileges",
            Verdict::Ok,
            format!("uid {euid}, may load tracing BPF"),
            "the on-CPU table and --kernel-locks are possible",
            "",
        )
    } else {
        check(
            "privileges",
            Verdict::Limited,
            format!("uid {euid}, no CAP_BPF with CAP_PERFMON (nor CAP_SYS_ADMIN)"),
            "waiters spin on a learned budget, not on the holder's run state; no \
             --kernel-locks",
            "run as root, or grant CAP_BPF and CAP_PERFMON",
        )
    }
}

fn kernel_locks() -> Check {
    let env = corral_runtime::kernel::ProbeEnv::system();
    match corral_runtime::kernel::preflight(&env) {
        Ok(()) => check(
            "kernel lock tracepoints",
            Verdict::Ok,
            format!(
                "BTF at {}, lock:contention_begin/end",
                env.btf_path.display()
            ),
            "corral run --kernel-locks and corral attach can measure kernel locks",
            "",
        ),
        Err(refusal) => check(
            "kernel lock tracepoints",
            Verdict::Limited,
            refusal.to_string(),
            "no --kernel-locks or corral attach",
            "root, a kernel with BTF and lock:contention_* (Linux 5.19+)",
        ),
    }
}

fn oncpu_table() -> Check {
    match corral_launch::holder::status() {
        Ok(()) => check(
            "on-CPU table (BPF on sched_switch)",
            Verdict::Ok,
            "loaded",
            "waiters of the default lock spin only while the lock's holder runs",
            "",
        ),
        Err(why) => check(
            "on-CPU table (BPF on sched_switch)",
            Verdict::Limited,
            why.to_string(),
            "waiters spin on a budget learned per lock (corral run says which)",
            "root, Linux 5.8+ with BTF",
        ),
    }
}

fn stats_region() -> Check {
    let max = corral_runtime::abi::DEFAULT_MAX_THREADS;
    let bytes = corral_runtime::abi::stats_file_len(max);
    match corral_runtime::stats::StatsMap::new_region(max) {
        Ok(_) => check(
            "stats region (memfd)",
            Verdict::Ok,
            format!("{} KiB reserved", bytes / 1024),
            "live stats, the exit table, the report and corral top",
            "",
        ),
        Err(e) => check(
            "stats region (memfd)",
            Verdict::Limited,
            e.to_string(),
            "programs run without stats, the exit table or the decision log",
            "memfd_create and fallocate (Linux 3.17+), memory and file-size limits that \
             allow it (ulimit -f)",
        ),
    }
}

fn cpus() -> Check {
    let allowed = corral_runtime::affinity::allowed_cpus().len();
    let online = corral_runtime::topology::read_sysfs()
        .map(|t| t.len())
        .unwrap_or(0);
    let found = format!("{allowed} of {online} online CPUs allowed");
    if allowed <= 1 {
        check(
            "CPUs",
            Verdict::Limited,
            found,
            "one CPU: nothing to confine; corral measures only",
            "run with more CPUs (taskset, the cgroup's cpuset)",
        )
    } else if allowed < online {
        check(
            "CPUs",
            Verdict::Ok,
            found,
            "the SSC is searched within the allowed CPUs (a cpuset or taskset limits it)",
            "",
        )
    } else {
        check("CPUs", Verdict::Ok, found, "the SSC may use every CPU", "")
    }
}

fn slices() -> Check {
    match corral_locks::sys::sched::get_attr(0) {
        Ok(a) if a.sched_runtime > 0 => check(
            "EEVDF slices",
            Verdict::Ok,
            format!("this thread's slice {} us", a.sched_runtime / 1000),
            "--policy ff sets each thread's quantum",
            "",
        ),
        Ok(_) => check(
            "EEVDF slices",
            Verdict::Limited,
            "no slice reported (a kernel before EEVDF, 6.6)",
            "--policy ff keeps the kernel's quantum (its nice and class still apply)",
            "Linux 6.12+ for per-thread slices",
        ),
        Err(errno) => check(
            "EEVDF slices",
            Verdict::Limited,
            format!(
                "sched_getattr refused ({})",
                std::io::Error::from_raw_os_error(errno)
            ),
            "--policy ff keeps the kernel's quantum",
            "Linux 6.12+",
        ),
    }
}

fn rseq_extension() -> Check {
    use corral_runtime::csf::SliceExtension;
    match SliceExtension::detect_here() {
        SliceExtension::Available => check(
            "rseq slice extension",
            Verdict::Ok,
            "granted",
            "--policy ca,csf renews a lock holder's quantum",
            "",
        ),
        SliceExtension::Refused { errno } => check(
            "rseq slice extension",
            Verdict::Limited,
            format!("refused ({})", std::io::Error::from_raw_os_error(errno)),
            "--policy ca,csf gives holders its nice bonus only",
            "Linux 7.0+",
        ),
    }
}

fn pmu() -> Check {
    use corral_locks::sys::perf::{CacheEvent, Counter};
    match Counter::open(0, CacheEvent::References) {
        Ok(_) => check(
            "PMU (cache counters)",
            Verdict::Ok,
            "LLC references countable",
            "--policy ff measures each program's miss ratio",
            "",
        ),
        Err(errno) => check(
            "PMU (cache counters)",
            Verdict::Limited,
            format!(
                "perf_event_open refused ({})",
                std::io::Error::from_raw_os_error(errno)
            ),
            "--policy ff chooses quanta without the miss ratio",
            "a machine or VM that exposes its PMU; kernel.perf_event_paranoid <= 2",
        ),
    }
}

/// Every check, in the order a user would fix them.
pub(crate) fn examine() -> DoctorReport {
    let checks = vec![
        preload(),
        glibc(),
        stats_region(),
        cpus(),
        privileges(),
        oncpu_table(),
        kernel_locks(),
        slices(),
        rseq_extension(),
        pmu(),
    ];
    DoctorReport {
        runnable: checks.iter().all(|c| c.verdict != Verdict::Fatal),
        checks,
    }
}

/// The table: one row per check, then what to enable.
fn table(r: &DoctorReport) -> String {
    let mark = |v: Verdict| match v {
        Verdict::Ok => "ok",
        Verdict::Limited => "limited",
        Verdict::Fatal => "MISSING",
    };
    let mut out = String::new();
    for c in &r.checks {
        out += &format!("{:<8} {:<34} {}\n", mark(c.verdict), c.what, c.found);
        out += &format!("{:<8} {:<34} means: {}\n", "", "", c.meaning);
        if !c.enable.is_empty() {
            out += &format!("{:<8} {:<34} enable: {}\n", "", "", c.enable);
        }
    }
    out += if r.runnable {
        "corral run can work here.\n"
    } else {
        "corral run cannot work here: see MISSING above.\n"
    };
    out
}

/// `corral doctor`.
pub(crate) fn run(args: DoctorArgs) -> Result<(), CliError> {
    let report = examine();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", table(&report));
    }
    if !report.runnable {
        std::process::exit(1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fatal_check_makes_the_machine_unrunnable_and_the_table_says_so() {
        let r = DoctorReport {
            runnable: false,
            checks: vec![check(
                "preload library",
                Verdict::Fatal,
                "not found",
                "cannot interpose",
                "build it",
            )],
        };
        let t = table(&r);
        assert!(t.contains("MISSING  preload library"), "{t}");
        assert!(t.contains("enable: build it"), "{t}");
        assert!(t.ends_with("cannot work here: see MISSING above.\n"), "{t}");
    }

    #[test]
    fn every_check_runs_here_and_says_what_it_found() {
        let r = examine();
        assert_eq!(r.checks.len(), 10);
        for c in &r.checks {
            assert!(!c.found.is_empty() && !c.meaning.is_empty(), "{c:?}");
            assert_eq!(c.enable.is_empty(), c.verdict == Verdict::Ok, "{c:?}");
        }
    }
}
