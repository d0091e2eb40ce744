//! Applying FF's two knobs to one thread: the program's nice value and the
//! quantum as EEVDF's requested slice, read back after every write.

use corral_locks::sys::sched::{self, Errno, SCHED_BATCH, SCHED_OTHER, SLICE_MAX_NS, SLICE_MIN_NS};
use serde::Serialize;

/// Why a thread did not take the quantum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApplyError {
    /// It exited.
    Gone,
    /// In a class the program chose (real-time, idle, or batch where FF
    /// keeps wake-up preemption): left as it is.
    NotFair {
        /// Its policy.
        policy: u32,
    },
    /// `sched_setattr` failed (a sandbox's filter, an old kernel).
    Refused(Errno),
}

/// What a thread holds after [`apply`], as read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Applied {
    /// Its slice (`sched_getattr`'s `sched_runtime`).
    pub slice_ns: u64,
    /// Its nice value.
    pub nice: i32,
    /// Its policy (the one FF asked for, for any thread FF changed).
    pub policy: u32,
}

/// How the kernel met a requested slice: the first thread's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum SliceSupport {
    /// Nothing asked yet.
    Untried,
    /// Read back as asked, or as EEVDF's clamp of it.
    Applied,
    /// The call succeeded but the slice read back is not the one asked:
    /// a kernel before 6.12 ignores `sched_runtime` for SCHED_OTHER.
    Ignored {
        /// Asked, ns.
        asked_ns: u64,
        /// Read back, ns.
        read_back_ns: u64,
    },
    /// `sched_setattr` was refused.
    Refused {
        /// Its errno.
        errno: i32,
    },
}

impl SliceSupport {
    /// The verdict on asking `asked_ns` (0: the kernel's default) and
    /// getting `result`. Asking for the default tells nothing of whether a
    /// slice would take: still untried unless refused.
    pub fn judge(asked_ns: u64, result: Result<Applied, ApplyError>) -> SliceSupport {
        match result {
            Ok(_) if asked_ns == 0 => SliceSupport::Untried,
            Ok(a) if a.slice_ns == asked_ns.clamp(SLICE_MIN_NS, SLICE_MAX_NS) => {
                SliceSupport::Applied
            }
            Ok(a) => SliceSupport::Ignored {
                asked_ns,
                read_back_ns: a.slice_ns,
            },
            Err(ApplyError::Refused(errno)) => SliceSupport::Refused { errno },
            Err(_) => SliceSupport::Untried,
        }
    }

    /// The one line said when the slice does not apply: why, and what
    /// still works. `None` when it applies.
    pub fn line(self) -> Option<String> {
        let still = "still applied: one nice value for every thread; still reported: lock \
                     contention, the scaling factor, the Table I quantum it picks and the \
                     context switches";
        match self {
            SliceSupport::Untried | SliceSupport::Applied => None,
            SliceSupport::Ignored { asked_ns, read_back_ns } => Some(format!(
                "corral: ff: the kernel ignores sched_runtime for SCHED_OTHER (asked {asked_ns} ns, \
                 read back {read_back_ns} ns; EEVDF slices need Linux 6.12+): no quantum applied; {still}"
            )),
            SliceSupport::Refused { errno } => Some(format!(
                "corral: ff: sched_setattr refused ({}): no quantum applied; {still}",
                std::io::Error::from_raw_os_error(errno)
            )),
        }
    }
}

/// Whether FF may set a thread found in class `held`: SCHED_OTHER, or
/// SCHED_BATCH where that is FF's own doing (`batch_is_ffs`: FF puts
/// threads there, and this one was not there before FF began).
#[inline]
pub(super) fn is_ffs(held: u32, batch_is_ffs: bool) -> bool {
    held == SCHED_OTHER || (held == SCHED_BATCH && batch_is_ffs)
}

/// Gives thread `tid` the fair class `policy` (SCHED_OTHER, or SCHED_BATCH
/// for no wake-up preemption), `nice` and a slice of `slice_ns`, and reads
/// them back. `held` is what the caller just read of it, with its class
/// already judged FF's to set (`is_ffs`). A nice value it may not take
/// (raising priority needs CAP_SYS_NICE) leaves its own, with the rest
/// still applied.
pub fn apply(
    tid: i32,
    held: &Applied,
    policy: u32,
    nice: i32,
    slice_ns: u64,
) -> Result<Applied, ApplyError> {
    let set = match sched::set_fair(tid, policy, nice, slice_ns) {
        Err(libc::EPERM | libc::EACCES) if held.nice != nice => {
            sched::set_fair(tid, policy, held.nice, slice_ns)
        }
        r => r,
    };
    match set {
        Ok(()) => {}
        Err(libc::ESRCH) => return Err(ApplyError::Gone),
        Err(e) => return Err(ApplyError::Refused(e)),
    }
    read_back(tid).ok_or(ApplyError::Gone)
}

/// What thread `tid` holds now, without changing it.
pub fn read_back(tid: i32) -> Option<Applied> {
    let a = sched::get_attr(tid).ok()?;
    Some(Applied {
        slice_ns: a.sched_runtime,
        nice: a.sched_nice,
        policy: a.sched_policy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judges_clamps_old_kernels_and_refusals() {
        let ok = |slice_ns| {
            Ok(Applied {
                slice_ns,
                nice: 0,
                policy: SCHED_OTHER,
            })
        };
        assert_eq!(
            SliceSupport::judge(20_000_000, ok(20_000_000)),
            SliceSupport::Applied
        );
        // Table I's 250 ms is above EEVDF's 100 ms cap.
        assert_eq!(
            SliceSupport::judge(250_000_000, ok(100_000_000)),
            SliceSupport::Applied
        );
        let old = SliceSupport::judge(20_000_000, ok(0));
        assert!(old.line().unwrap().contains("6.12"));
        let refused = SliceSupport::judge(20_000_000, Err(ApplyError::Refused(libc::EPERM)));
        assert_eq!(refused, SliceSupport::Refused { errno: libc::EPERM });
        assert!(refused.line().unwrap().contains("one nice value"));
        assert_eq!(SliceSupport::Applied.line(), None);
        // The default (0) read back as the kernel's base slice says nothing.
        assert_eq!(SliceSupport::judge(0, ok(1_400_000)), SliceSupport::Untried);
    }
}
