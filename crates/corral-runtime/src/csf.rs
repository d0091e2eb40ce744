//! Critical-Section-First on Linux (paper 5, Sec. 2.3.2): the priority
//! bonus as a nice value per thread, set by the monitor and read back with
//! `getpriority`, and the quantum renewal as rseq time-slice extension
//! where the kernel has it. The bonus itself is `corral_policy::csf`'s.

use corral_locks::sys::sched::{self, Errno};
use serde::Serialize;

/// Whether the kernel grants rseq time-slice extension (Linux 7.0's
/// `PR_RSEQ_SLICE_EXTENSION`): CSF's quantum renewal. Paper 5 renews a
/// holder's whole quantum up to `maxRenewal` (5) times in a row; the kernel
/// grants one short extension (tens of microseconds) per request, so a
/// renewal maps to one request and `maxRenewal` bounds consecutive ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum SliceExtension {
    /// Granted: holders may ask for extensions.
    Available,
    /// Refused: the bonus alone runs.
    Refused {
        /// The prctl's errno.
        errno: i32,
    },
}

impl SliceExtension {
    /// Probes with `prctl` (the real one, or a fake in tests).
    pub fn detect(prctl: impl FnOnce() -> Result<(), Errno>) -> SliceExtension {
        match prctl() {
            Ok(()) => SliceExtension::Available,
            Err(errno) => SliceExtension::Refused { errno },
        }
    }

    /// Probes this kernel.
    pub fn detect_here() -> SliceExtension {
        Self::detect(sched::enable_rseq_slice_extension)
    }

    /// The one line said when the kernel refuses; `None` when granted.
    pub fn line(self) -> Option<String> {
        match self {
            SliceExtension::Available => None,
            SliceExtension::Refused { errno } => Some(format!(
                "corral: csf: prctl(PR_RSEQ_SLICE_EXTENSION) refused ({}; needs Linux 7.0): \
                 no quantum renewal, the lock-holder nice bonus alone runs",
                std::io::Error::from_raw_os_error(errno)
            )),
        }
    }
}

/// A thread's nice value after CSF asked for `base - bonus`: the value
/// read back with `getpriority` (`None`: the thread is gone).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct NiceApplied {
    /// Thread id.
    pub tid: i32,
    /// Nice asked.
    pub asked: i32,
    /// Nice read back.
    pub read_back: Option<i32>,
}

/// Sets thread `tid` to `nice` (raising priority needs CAP_SYS_NICE; a
/// refusal leaves it as it was) and reads it back.
pub fn apply_nice(tid: i32, nice: i32) -> NiceApplied {
    let _ = sched::set_nice(tid, nice);
    NiceApplied {
        tid,
        asked: nice,
        read_back: sched::nice_of(tid).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_prctl_gives_one_line() {
        let refused = SliceExtension::detect(|| Err(libc::EINVAL));
        assert_eq!(
            refused,
            SliceExtension::Refused {
                errno: libc::EINVAL
            }
        );
        let line = refused.line().expect("a refusal is said");
        assert!(!line.contains('\n'));
        assert!(line.contains("PR_RSEQ_SLICE_EXTENSION") && line.contains("bonus alone"));
        assert_eq!(SliceExtension::detect(|| Ok(())).line(), None);
    }

    #[test]
    fn this_kernel_is_probed_without_failing() {
        // 6.18 refuses; 7.0+ grants. Either way a verdict, no panic.
        let v = SliceExtension::detect_here();
        assert_eq!(v.line().is_some(), v != SliceExtension::Available);
    }

    #[test]
    fn nice_is_read_back_per_thread() {
        let got = std::thread::spawn(|| {
            let tid = crate::registry::current_tid();
            apply_nice(tid, 3)
        })
        .join()
        .unwrap();
        // Lowering priority needs no privilege.
        assert_eq!(got.read_back, Some(3));
    }
}
