//! Why kernel-lock tracing cannot start, said in one line with what still
//! works, and the checks that find out before anything is loaded.

use std::fmt;
use std::path::{Path, PathBuf};

/// The tracepoints the BPF program attaches to, as `group/name` under
/// tracefs `events/`.
pub const REQUIRED_TRACEPOINTS: [&str; 4] = [
    "lock/contention_begin",
    "lock/contention_end",
    "sched/sched_switch",
    "sched/sched_process_fork",
];

/// What still works when kernel locks cannot be traced.
const STILL_WORKS: &str = "user-space locks still work (corral run without --kernel-locks)";

/// Why kernel-lock tracing cannot start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Neither root nor CAP_BPF with CAP_PERFMON (nor CAP_SYS_ADMIN).
    NotRoot,
    /// The kernel's BTF (needed to attach BTF tracepoints) is missing or
    /// unreadable.
    NoBtf {
        /// Where BTF was looked for.
        path: PathBuf,
        /// Why it could not be read.
        reason: String,
    },
    /// A tracepoint is absent (kernels before 5.19 lack `lock:contention_*`).
    TracepointMissing {
        /// `category:name`.
        name: String,
    },
    /// The kernel refused the BPF object, a program or an attachment.
    BpfRefused {
        /// The kernel's or libbpf's error.
        reason: String,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self {
            Refusal::NotRoot => "not root (needs CAP_BPF and CAP_PERFMON, or root)".to_string(),
            Refusal::NoBtf { path, reason } => {
                format!("no kernel BTF at {} ({reason})", path.display())
            }
            Refusal::TracepointMissing { name } => {
                format!(
                    "tracepoint {} missing (needs Linux 5.19+)",
                    name.replace('/', ":")
                )
            }
            Refusal::BpfRefused { reason } => format!("BPF refused: {reason}"),
        };
        // One line: whatever the kernel said is folded onto it.
        let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
        write!(f, "kernel locks unavailable: {why}; {STILL_WORKS}")
    }
}

impl std::error::Error for Refusal {}

/// Where the loader looks; tests point it at missing or fake files to
/// inject each refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeEnv {
    /// The kernel's BTF.
    pub btf_path: PathBuf,
    /// The tracefs mount (its `events/` lists the tracepoints).
    pub tracefs: PathBuf,
    /// A BPF object to load instead of the built-in one.
    pub object_override: Option<PathBuf>,
    /// The `/proc/<pid>/status` whose effective capabilities count.
    pub status_path: PathBuf,
}

impl ProbeEnv {
    /// The running system.
    pub fn system() -> Self {
        let tracefs = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.join("events").is_dir())
            .unwrap_or_else(|| PathBuf::from("/sys/kernel/tracing"));
        ProbeEnv {
            btf_path: PathBuf::from("/sys/kernel/btf/vmlinux"),
            tracefs,
            object_override: None,
            status_path: PathBuf::from("/proc/self/status"),
        }
    }

    /// [`ProbeEnv::system`] with overrides from `CORRAL_BTF_PATH`,
    /// `CORRAL_TRACEFS` and `CORRAL_BPF_OBJECT`, so a failure can be injected
    /// into the command line as into a test.
    pub fn from_env() -> Self {
        let mut env = ProbeEnv::system();
        if let Some(p) = std::env::var_os("CORRAL_BTF_PATH") {
            env.btf_path = p.into();
        }
        if let Some(p) = std::env::var_os("CORRAL_TRACEFS") {
            env.tracefs = p.into();
        }
        env.object_override = std::env::var_os("CORRAL_BPF_OBJECT").map(PathBuf::from);
        env
    }
}

/// CAP_SYS_ADMIN, CAP_PERFMON and CAP_BPF (linux/capability.h).
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// Whether an effective capability mask may load and attach tracing BPF:
/// CAP_BPF with CAP_PERFMON (Linux 5.8+), or CAP_SYS_ADMIN.
pub fn has_bpf_capabilities(cap_eff: u64) -> bool {
    let has = |cap: u32| cap_eff & (1u64 << cap) != 0;
    has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON))
}

/// The effective capability mask in a `/proc/<pid>/status` file.
pub fn effective_caps(status_path: &Path) -> Option<u64> {
    let status = std::fs::read_to_string(status_path).ok()?;
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))?
        .trim();
    u64::from_str_radix(hex, 16).ok()
}

/// The checks that need no loading, in the order a user would fix them:
/// privileges, BTF, tracepoints. The kernel's own verdict on the object
/// comes later, from [`super::KernelLockSource::open`].
pub fn preflight(env: &ProbeEnv) -> Result<(), Refusal> {
    if !effective_caps(&env.status_path).is_some_and(has_bpf_capabilities) {
        return Err(Refusal::NotRoot);
    }
    if let Err(e) = std::fs::metadata(&env.btf_path) {
        return Err(Refusal::NoBtf {
            path: env.btf_path.clone(),
            reason: e.to_string(),
        });
    }
    let events = env.tracefs.join("events");
    // Without tracefs mounted the BTF attach is the only test left.
    if events.is_dir() {
        if let Some(name) = REQUIRED_TRACEPOINTS
            .iter()
            .find(|tp| !events.join(tp).is_dir())
        {
            return Err(Refusal::TracepointMissing {
                name: name.to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_masks() {
        assert!(has_bpf_capabilities(1 << CAP_SYS_ADMIN));
        assert!(has_bpf_capabilities((1 << CAP_BPF) | (1 << CAP_PERFMON)));
        assert!(!has_bpf_capabilities(1 << CAP_BPF));
        assert!(!has_bpf_capabilities(0));
    }

    #[test]
    fn every_refusal_is_one_line_naming_what_still_works() {
        let all = [
            Refusal::NotRoot,
            Refusal::NoBtf {
                path: "/x".into(),
                reason: "No such file".into(),
            },
            Refusal::TracepointMissing {
                name: "lock/contention_begin".into(),
            },
            Refusal::BpfRefused {
                reason: "verifier:\nline two".into(),
            },
        ];
        for r in all {
            let line = r.to_string();
            assert!(!line.contains('\n'), "{line}");
            assert!(line.contains("user-space locks still work"), "{line}");
        }
    }

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("corral-refusal-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A fake system: a status file with `cap_eff`, a BTF file, and a
    /// tracefs with `tracepoints`.
    fn fake_env(tag: &str, cap_eff: u64, tracepoints: &[&str]) -> ProbeEnv {
        let dir = scratch(tag);
        std::fs::write(
            dir.join("status"),
            format!("Name:\tx\nCapEff:\t{cap_eff:016x}\n"),
        )
        .unwrap();
        std::fs::write(dir.join("vmlinux"), b"btf").unwrap();
        for tp in tracepoints {
            std::fs::create_dir_all(dir.join("tracing/events").join(tp)).unwrap();
        }
        ProbeEnv {
            btf_path: dir.join("vmlinux"),
            tracefs: dir.join("tracing"),
            object_override: None,
            status_path: dir.join("status"),
        }
    }

    #[test]
    fn preflight_names_the_first_missing_piece() {
        let root = 1 << CAP_SYS_ADMIN;
        let ok = fake_env("ok", root, &REQUIRED_TRACEPOINTS);
        assert_eq!(preflight(&ok), Ok(()));

        let user = fake_env("user", 0, &REQUIRED_TRACEPOINTS);
        assert_eq!(preflight(&user), Err(Refusal::NotRoot));

        let mut no_btf = fake_env("nobtf", root, &REQUIRED_TRACEPOINTS);
        no_btf.btf_path = no_btf.btf_path.with_file_name("absent");
        assert!(matches!(preflight(&no_btf), Err(Refusal::NoBtf { .. })));

        let old_kernel = fake_env(
            "old",
            root,
            &["sched/sched_switch", "sched/sched_process_fork"],
        );
        assert_eq!(
            preflight(&old_kernel),
            Err(Refusal::TracepointMissing {
                name: "lock/contention_begin".into()
            })
        );
    }
}
