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
        let mut raw = [0u64; MASK_WORDS];
        for (r, w) in raw.iter_mut().zip(&self.words) {
            *r = w.load(Ordering::Relaxed); // Relaxed: see the type's docs.
        }
        if raw.iter().all(|&w| w == 0) {
            return true;
        }
        // SAFETY: `raw` is a readable bitmap of the size passed, laid out as
        // the kernel's cpumask (little-endian u64 words).
        let rc = unsafe {
            libc::syscall(
                libc::SYS_sched_setaffinity,
                tid,
                core::mem::size_of_val(&raw),
                raw.as_ptr(),
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
