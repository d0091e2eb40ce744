//! The records the BPF program hands to user space.

use serde::Serialize;

/// `SLICE_LAST` of the BPF source: the task exited.
const SLICE_LAST: u32 = 1;

/// Size of one `struct slice_record` in the BPF source.
pub const SLICE_RECORD_BYTES: usize = 48;

/// One finished time slice of a tracked task: paper 1's `slice_len` and
/// `acc_lock_time` (Algorithms 1 and 3), measured in the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SliceRecord {
    /// Thread id.
    pub tid: u32,
    /// Process id.
    pub tgid: u32,
    /// CPU the slice ran on.
    pub cpu: u32,
    /// Lock waits that ended in this slice.
    pub nr_waits: u32,
    /// Switch-in time, `CLOCK_MONOTONIC` ns.
    pub begin_ns: u64,
    /// Slice length (switch-in to switch-out), ns.
    pub len_ns: u64,
    /// Lock waiting inside the slice, ns (never more than `len_ns`).
    pub wait_ns: u64,
    /// The task exited at the end of this slice.
    pub last: bool,
}

impl SliceRecord {
    /// Decodes the BPF program's native-endian layout; `None` if short.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Option<SliceRecord> {
        if bytes.len() < SLICE_RECORD_BYTES {
            return None;
        }
        let u32_at = |at: usize| u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap());
        let u64_at = |at: usize| u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap());
        let len_ns = u64_at(24);
        Some(SliceRecord {
            tid: u32_at(0),
            tgid: u32_at(4),
            cpu: u32_at(8),
            nr_waits: u32_at(12),
            begin_ns: u64_at(16),
            len_ns,
            // A wait clipped to the slice cannot exceed it; guard anyway.
            wait_ns: u64_at(32).min(len_ns),
            last: u32_at(40) & SLICE_LAST != 0,
        })
    }

    /// When the slice ended.
    #[inline]
    pub fn end_ns(&self) -> u64 {
        self.begin_ns + self.len_ns
    }

    /// Paper 1, Sec. 3.2: the slice's lock-waiting share.
    #[inline]
    pub fn wait_share(&self) -> f64 {
        corral_policy::detect::wait_share(self.wait_ns, self.len_ns)
    }
}

/// Hotness of one kernel lock (paper 2): total waiting on it and how many
/// waits, by tracked tasks, since tracing began.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LockStat {
    /// The lock's kernel address.
    pub addr: u64,
    /// Summed waiting, ns.
    pub wait_ns: u64,
    /// Number of waits.
    pub count: u64,
    /// Every `lock:contention_begin` flag seen on it (`LCB_F_*`).
    pub flags: u32,
}

impl LockStat {
    /// The lock's kind from its flags, as `perf lock contention` names them:
    /// read-write kinds say how they were waited for (`:R`, `:W`, or `:RW`
    /// when both: the flags of every wait are or-ed together).
    pub fn kind(&self) -> &'static str {
        const SPIN: u32 = 1;
        const READ: u32 = 2;
        const WRITE: u32 = 4;
        const RT: u32 = 8;
        const PERCPU: u32 = 16;
        const MUTEX: u32 = 32;
        let f = self.flags;
        // Indexed by the READ and WRITE bits.
        let rw = |names: [&'static str; 4]| names[((f & (READ | WRITE)) >> 1) as usize];
        if f & MUTEX != 0 {
            "mutex"
        } else if f & RT != 0 {
            "rtmutex"
        } else if f & SPIN != 0 {
            rw(["spinlock", "rwlock:R", "rwlock:W", "rwlock:RW"])
        } else if f & PERCPU != 0 {
            rw(["pcpu-sem", "pcpu-sem:R", "pcpu-sem:W", "pcpu-sem:RW"])
        } else if f & (READ | WRITE) != 0 {
            rw(["rwsem", "rwsem:R", "rwsem:W", "rwsem:RW"])
        } else {
            "semaphore"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_bpf_layout_and_clips_the_wait() {
        let mut bytes = Vec::new();
        for v in [7u32, 5, 1, 3] {
            bytes.extend_from_slice(&v.to_ne_bytes());
        }
        for v in [1_000u64, 400, 900] {
            bytes.extend_from_slice(&v.to_ne_bytes());
        }
        bytes.extend_from_slice(&SLICE_LAST.to_ne_bytes());
        bytes.extend_from_slice(&0u32.to_ne_bytes());
        let rec = SliceRecord::parse(&bytes).unwrap();
        assert_eq!((rec.tid, rec.tgid, rec.cpu, rec.nr_waits), (7, 5, 1, 3));
        assert_eq!((rec.begin_ns, rec.len_ns, rec.wait_ns), (1_000, 400, 400));
        assert_eq!(rec.end_ns(), 1_400);
        assert!(rec.last);
        assert!((rec.wait_share() - 1.0).abs() < 1e-12);
        assert!(SliceRecord::parse(&bytes[..47]).is_none());
    }

    #[test]
    fn lock_kinds_from_contention_flags() {
        let kind = |flags| {
            LockStat {
                flags,
                ..LockStat::default()
            }
            .kind()
        };
        assert_eq!(kind(1), "spinlock");
        assert_eq!(kind(1 | 4), "rwlock:W");
        assert_eq!(kind(32 | 1), "mutex"); // optimistic spinning on the owner
        assert_eq!(kind(2), "rwsem:R");
        assert_eq!(kind(4), "rwsem:W");
        assert_eq!(kind(2 | 4), "rwsem:RW"); // read by some waits, written by others
        assert_eq!(kind(16 | 2), "pcpu-sem:R");
        assert_eq!(kind(8), "rtmutex");
        assert_eq!(kind(0), "semaphore");
    }
}
