//! Hardware cache counters of one thread (`perf_event_open`): the last-level
//! cache references and misses whose ratio paper 4 puts in its scaling
//! factor. Where the machine has no PMU (most VMs) the open fails with
//! ENOENT or EOPNOTSUPP, and the caller says so.

use super::sched::Errno;

/// PERF_TYPE_HARDWARE.
const TYPE_HARDWARE: u32 = 0;
/// PERF_FLAG_FD_CLOEXEC.
const FLAG_FD_CLOEXEC: libc::c_ulong = 8;
/// `exclude_kernel` (bit 5) and `exclude_hv` (bit 6): user-space counts
/// only, which perf_event_paranoid 2 allows an unprivileged owner.
const FLAGS_USER_ONLY: u64 = (1 << 5) | (1 << 6);

/// Which generalised hardware event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheEvent {
    /// PERF_COUNT_HW_CACHE_REFERENCES: last-level cache accesses.
    References,
    /// PERF_COUNT_HW_CACHE_MISSES: last-level cache misses.
    Misses,
}

impl CacheEvent {
    fn config(self) -> u64 {
        match self {
            CacheEvent::References => 2,
            CacheEvent::Misses => 3,
        }
    }
}

/// `struct perf_event_attr` up to `config1` (PERF_ATTR_SIZE_VER0, 64 bytes);
/// the kernel accepts this size from any caller.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// An open counter; closed on drop.
#[derive(Debug)]
pub struct Counter {
    fd: i32,
}

impl Counter {
    /// Counts `event` in thread `tid`'s user space from now on.
    pub fn open(tid: i32, event: CacheEvent) -> Result<Counter, Errno> {
        let attr = PerfEventAttr {
            kind: TYPE_HARDWARE,
            size: core::mem::size_of::<PerfEventAttr>() as u32,
            config: event.config(),
            flags: FLAGS_USER_ONLY,
            ..PerfEventAttr::default()
        };
        // SAFETY: `attr` is a valid perf_event_attr of the size it states,
        // read by the kernel during the call only.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                tid,
                -1i32,
                -1i32,
                FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
        } else {
            Ok(Counter { fd: fd as i32 })
        }
    }

    /// The count so far; `None` if the read fails.
    pub fn read(&self) -> Option<u64> {
        let mut v = 0u64;
        // SAFETY: reads 8 bytes into `v`, a live u64, from our own fd.
        let n = unsafe { libc::read(self.fd, (&mut v as *mut u64).cast(), 8) };
        (n == 8).then_some(v)
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        // SAFETY: closes the descriptor this counter opened and owns.
        unsafe { libc::close(self.fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_opens_and_counts_or_says_why_not() {
        // SAFETY: gettid has no preconditions.
        let me = unsafe { libc::gettid() };
        match Counter::open(me, CacheEvent::References) {
            Ok(c) => assert!(c.read().is_some()),
            // No PMU (a VM), or perf_event_paranoid forbids it.
            Err(e) => assert!(
                [libc::ENOENT, libc::EOPNOTSUPP, libc::EACCES, libc::EPERM].contains(&e),
                "unexpected errno {e}"
            ),
        }
    }
}
