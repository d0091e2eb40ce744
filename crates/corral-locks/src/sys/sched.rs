//! A thread's scheduling attributes: its nice value and, for SCHED_OTHER,
//! the slice it asks of EEVDF (`sched_attr.sched_runtime`, Linux 6.12+).
//! Faithful scheduling sets both on every thread of a program.

/// SCHED_OTHER (the fair class).
pub const SCHED_OTHER: u32 = 0;
/// SCHED_BATCH: the fair class without wake-up preemption.
pub const SCHED_BATCH: u32 = 3;

/// EEVDF's bounds on a requested slice (kernel/sched/syscalls.c clamps
/// `sched_runtime` to [0.1 ms, 100 ms]).
pub const SLICE_MIN_NS: u64 = 100_000;
/// See [`SLICE_MIN_NS`].
pub const SLICE_MAX_NS: u64 = 100_000_000;

/// The kernel's `struct sched_attr` (include/uapi/linux/sched/types.h),
/// size `SCHED_ATTR_SIZE_VER1`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedAttr {
    /// This struct's size, set by the caller of `sched_setattr`.
    pub size: u32,
    /// SCHED_OTHER, SCHED_FIFO, ...
    pub sched_policy: u32,
    /// SCHED_FLAG_*.
    pub sched_flags: u64,
    /// Nice value of a fair-class thread.
    pub sched_nice: i32,
    /// Real-time priority.
    pub sched_priority: u32,
    /// For SCHED_OTHER on EEVDF: the requested slice in nanoseconds
    /// (0 = the default base slice).
    pub sched_runtime: u64,
    /// SCHED_DEADLINE's deadline.
    pub sched_deadline: u64,
    /// SCHED_DEADLINE's period.
    pub sched_period: u64,
    /// Utilisation clamp, minimum.
    pub sched_util_min: u32,
    /// Utilisation clamp, maximum.
    pub sched_util_max: u32,
}

/// The errno of a failed call.
pub type Errno = i32;

fn errno() -> Errno {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `sched_yield(2)`: the syscall itself, not glibc's symbol, which
/// corral's preload interposes. It cannot fail on Linux; returns 0.
pub fn yield_cpu() -> i32 {
    // SAFETY: sched_yield takes no arguments and touches no memory.
    unsafe { libc::syscall(libc::SYS_sched_yield) as i32 }
}

/// Does thread `tid` run in a real-time class (SCHED_FIFO, SCHED_RR,
/// SCHED_DEADLINE)? `None` for a thread that is gone: its caller keeps
/// what it knew (a real-time thread's last window, closed after it
/// exited, must not read as a fair one's).
pub fn realtime_of(tid: i32) -> Option<bool> {
    // SAFETY: no pointer arguments; a bad tid is an error return.
    let policy = unsafe { libc::sched_getscheduler(tid) };
    (policy >= 0).then_some(matches!(
        policy,
        libc::SCHED_FIFO | libc::SCHED_RR | SCHED_DEADLINE
    ))
}

/// SCHED_DEADLINE (not bound by the libc crate).
const SCHED_DEADLINE: i32 = 6;

/// Thread `tid`'s attributes (`sched_getattr`).
pub fn get_attr(tid: i32) -> Result<SchedAttr, Errno> {
    let mut attr = SchedAttr::default();
    let size = core::mem::size_of::<SchedAttr>() as u32;
    // SAFETY: `attr` is a writable sched_attr of `size` bytes, alive for
    // the call; the kernel writes at most `size` bytes.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut attr as *mut SchedAttr,
            size,
            0u32,
        )
    };
    if rc == 0 {
        Ok(attr)
    } else {
        Err(errno())
    }
}

/// Puts thread `tid` in the fair class `policy` ([`SCHED_OTHER`] or
/// [`SCHED_BATCH`]) at `nice` with a requested slice of `runtime_ns`
/// (`sched_setattr`; 0 asks for the default slice). EEVDF clamps the slice
/// to [0.1 ms, 100 ms]: read it back with [`get_attr`].
pub fn set_fair(tid: i32, policy: u32, nice: i32, runtime_ns: u64) -> Result<(), Errno> {
    debug_assert!(policy == SCHED_OTHER || policy == SCHED_BATCH);
    let attr = SchedAttr {
        size: core::mem::size_of::<SchedAttr>() as u32,
        sched_policy: policy,
        sched_nice: nice,
        sched_runtime: runtime_ns,
        ..SchedAttr::default()
    };
    // SAFETY: `attr` is a valid sched_attr whose `size` field is its size;
    // the kernel only reads it.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            tid,
            &attr as *const SchedAttr,
            0u32,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// Thread `tid`'s nice value (`getpriority`).
pub fn nice_of(tid: i32) -> Result<i32, Errno> {
    // getpriority may return -1 as a value: errno tells.
    // SAFETY: errno is this thread's; writing it has no other effect.
    unsafe { *libc::__errno_location() = 0 };
    // SAFETY: getpriority reads no memory of ours.
    let v = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t) };
    match errno() {
        0 => Ok(v),
        e => Err(e),
    }
}

/// Sets thread `tid`'s nice value (`setpriority`).
pub fn set_nice(tid: i32, nice: i32) -> Result<(), Errno> {
    // SAFETY: setpriority reads no memory of ours.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// `PR_RSEQ_SLICE_EXTENSION` (include/uapi/linux/prctl.h, Linux 7.0).
pub const PR_RSEQ_SLICE_EXTENSION: i32 = 79;
/// Its `SET` sub-command.
pub const PR_RSEQ_SLICE_EXTENSION_SET: u64 = 2;
/// Its enable flag.
pub const PR_RSEQ_SLICE_EXT_ENABLE: u64 = 1;

/// Asks the kernel to enable rseq time-slice extension for the calling
/// thread (`prctl(PR_RSEQ_SLICE_EXTENSION, SET, ENABLE)`); kernels before
/// 7.0 answer `EINVAL`.
pub fn enable_rseq_slice_extension() -> Result<(), Errno> {
    // SAFETY: prctl with integer arguments reads no memory of ours.
    let rc = unsafe {
        libc::prctl(
            PR_RSEQ_SLICE_EXTENSION,
            PR_RSEQ_SLICE_EXTENSION_SET,
            PR_RSEQ_SLICE_EXT_ENABLE,
            0u64,
            0u64,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> i32 {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() }
    }

    #[test]
    fn nice_and_attr_agree_on_this_thread() {
        let a = get_attr(me()).unwrap();
        assert_eq!(a.sched_nice, nice_of(me()).unwrap());
        assert!(get_attr(-5).is_err());
        assert_eq!(set_nice(i32::MAX, 0), Err(libc::ESRCH));
    }

    #[test]
    fn a_gone_thread_has_no_class_rather_than_a_fair_one() {
        assert_eq!(realtime_of(me()), Some(false));
        let tid = std::thread::spawn(me).join().unwrap();
        assert_eq!(realtime_of(tid), None);
    }
}
