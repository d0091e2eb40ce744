//! A CPU set that lives in static memory and is applied without allocating,
//! so a thread can move itself inside an interposed `pthread_mutex_lock`.

use core::sync::atomic::{AtomicU64, Ordering};

/// Words of a set: 1,024 CPUs, glibc's `CPU_SETSIZE`.
pub const MASK_WORDS: usize = 16;

/// A set of CPU ids below `64 * MASK_WORDS`, one atomic word per 64 CPUs.
/// Written by the monitor, read by threads applying it; a reader racing a
/// write may see a mix of old and new words, which [`AtomicCpuMask::apply`]
/// tolerates (the generation check re-applies it).
#[derive(Debug)]
pub struct AtomicCpuMask {
    words: [AtomicU64; MASK_WORDS],
}

impl AtomicCpuMask {
    /// The empty set, usable in a `static`.
    pub const fn new() -> Self {
        Self {
            words: [const { AtomicU64::new(0) }; MASK_WORDS],
        }
    }

    /// Replaces the set by `cpus` (ids beyond the capacity are dropped).
    pub fn store(&self, cpus: &[u32]) {
        let mut words = [0u64; MASK_WORDS];
        for &cpu in cpus {
            if let Some(w) = words.get_mut(cpu as usize / 64) {
                *w |= 1 << (cpu % 64);
            }
        }
        for (slot, w) in self.words.iter().zip(words) {
            // Relaxed: the generation counter published after it orders it.
            slot.store(w, Ordering::Relaxed);
        }
    }

    /// The CPUs in the set.
    pub fn cpus(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for (i, w) in self.words.iter().enumerate() {
            let w = w.load(Ordering::Relaxed); // Relaxed: a snapshot.
            out.extend(
                (0..64)
                    .filter(|b| w & (1 << b) != 0)
                    .map(|b| (i * 64 + b) as u32),
            );
        }
        out
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| w.load(Ordering::Relaxed) == 0) // Relaxed: a snapshot.
    }

    /// Confines thread `tid` (0 = the caller) to the set; does nothing for an
    /// empty set. No allocation. Returns false if the kernel refused.
    #[inline]
    pub fn apply(&self, tid: i32) -> bool {
        let m = self.snapshot();
        m.is_empty() || m.apply(tid)
    }
}

impl AtomicCpuMask {
    /// A copy of the set.
    pub fn snapshot(&self) -> CpuMask {
        let mut m = CpuMask::EMPTY;
        for (r, w) in m.0.iter_mut().zip(&self.words) {
            *r = w.load(Ordering::Relaxed); // Relaxed: see the type's docs.
        }
        m
    }
}

/// A plain CPU set, laid out as the kernel's cpumask (little-endian u64
/// words), for a thread's own affinity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuMask(pub [u64; MASK_WORDS]);

impl CpuMask {
    /// No CPU.
    pub const EMPTY: CpuMask = CpuMask([0; MASK_WORDS]);

    /// Whether no CPU is in the set.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The CPUs in both sets.
    pub fn and(&self, other: &CpuMask) -> CpuMask {
        let mut m = *self;
        for (a, b) in m.0.iter_mut().zip(other.0) {
            *a &= b;
        }
        m
    }

    /// Where a placement onto `target` lands for a thread whose own
    /// affinity is `self`: narrowed within it, never widened or replaced.
    /// An empty `target` (no set chosen) or one disjoint from the thread's
    /// own CPUs leaves the thread where it asked to be.
    pub fn narrowed_to(&self, target: &CpuMask) -> CpuMask {
        let both = self.and(target);
        if target.is_empty() || both.is_empty() {
            *self
        } else {
            both
        }
    }

    /// The affinity of thread `tid` (0 = the caller), or `None` if the
    /// kernel refused. No allocation.
    pub fn of_thread(tid: i32) -> Option<CpuMask> {
        let mut m = CpuMask::EMPTY;
        // SAFETY: `m.0` is a writable bitmap of the size passed.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_sched_getaffinity,
                tid,
                core::mem::size_of_val(&m.0),
                m.0.as_mut_ptr(),
            )
        };
        (rc > 0).then_some(m)
    }

    /// Sets thread `tid`'s (0 = the caller) affinity to the set; false if
    /// the kernel refused or the set is empty.
    pub fn apply(&self, tid: i32) -> bool {
        if self.is_empty() {
            return false;
        }
        // SAFETY: `self.0` is a readable bitmap of the size passed.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_sched_setaffinity,
                tid,
                core::mem::size_of_val(&self.0),
                self.0.as_ptr(),
            )
        };
        rc == 0
    }
}

impl Default for AtomicCpuMask {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask(cpus: &[u32]) -> CpuMask {
        let a = AtomicCpuMask::new();
        a.store(cpus);
        a.snapshot()
    }

    #[test]
    fn a_placement_narrows_within_the_threads_own_cpus_and_never_replaces_them() {
        let own = mask(&[1, 2]);
        assert_eq!(own.narrowed_to(&mask(&[0, 1])), mask(&[1]));
        // Disjoint: the thread stays where it asked to be.
        assert_eq!(own.narrowed_to(&mask(&[0])), own);
        assert_eq!(own.narrowed_to(&CpuMask::EMPTY), own);
        assert_eq!(mask(&[0, 1, 2, 3]).narrowed_to(&mask(&[3])), mask(&[3]));
    }

    #[test]
    fn reads_back_what_it_applied() {
        std::thread::spawn(|| {
            let own = CpuMask::of_thread(0).unwrap();
            let first = (0..64 * MASK_WORDS as u32)
                .find(|&c| own.0[c as usize / 64] & (1 << (c % 64)) != 0)
                .unwrap();
            let one = mask(&[first]);
            assert!(one.apply(0));
            assert_eq!(CpuMask::of_thread(0), Some(one));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn stores_and_lists_cpus_across_words() {
        let m = AtomicCpuMask::new();
        assert!(m.is_empty());
        m.store(&[0, 3, 64, 1023, 5000]);
        assert_eq!(m.cpus(), vec![0, 3, 64, 1023]);
    }

    #[test]
    fn applies_to_a_scratch_thread() {
        let allowed = crate::affinity::allowed_cpus();
        let first = allowed[0];
        let seen = std::thread::spawn(move || {
            let m = AtomicCpuMask::new();
            m.store(&[first]);
            assert!(m.apply(0));
            crate::affinity::get_thread_affinity(0).unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(seen, vec![first]);
    }
}
