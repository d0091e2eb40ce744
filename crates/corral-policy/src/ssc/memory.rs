//! Classification memory: programs (or program/lock pairs) seen lock
//! intensive before, so their new threads start classified.
//!
//! Paper 1, Sec. 4.6, reports that parallel find's short-lived processes
//! exit before they are classified; remembering the classification per
//! program fixes that.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The classification-memory key of a thread: FNV-1a over its program
/// (the executable's path, or any name the driver uses for the whole
/// program) and its thread name (`comm`), so threads of one program with
/// different roles are remembered apart. Stable across runs and builds.
pub fn program_key(program: &[u8], thread: &[u8]) -> u64 {
    let fnv = |h: u64, bytes: &[u8]| {
        bytes
            .iter()
            .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
    };
    // A separator byte no path or comm contains keeps ("ab", "c") and
    // ("a", "bc") apart.
    fnv(fnv(fnv(0xcbf2_9ce4_8422_2325, program), &[0]), thread)
}

/// A small lossy set of 64-bit keys (program or program/lock hashes) in a
/// fixed table: two candidate slots per key, a full pair overwrites its first
/// slot. Lock free; losing an entry only delays a classification by a slice.
#[derive(Debug)]
pub struct ClassMemory {
    slots: Box<[AtomicU64]>,
    /// Set by the first `remember`: before it, no key can match.
    used: AtomicBool,
}

impl ClassMemory {
    /// A table of `capacity` slots; 0 disables the memory.
    pub fn new(capacity: usize) -> Self {
        ClassMemory {
            slots: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
            used: AtomicBool::new(false),
        }
    }

    /// Whether nothing was ever remembered: no key can match yet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        !self.used.load(Ordering::Relaxed) // Relaxed: a hint, as `contains`.
    }

    /// Number of slots.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Was `key` remembered (and not since forgotten or evicted)?
    #[inline]
    pub fn contains(&self, key: u64) -> bool {
        let key = stored_key(key);
        // Relaxed: a hint read alone; no other data is published through it.
        self.pair(key)
            .any(|slot| slot.load(Ordering::Relaxed) == key)
    }

    /// Remembers `key`.
    #[inline]
    pub fn remember(&self, key: u64) {
        if self.slots.is_empty() {
            return;
        }
        self.used.store(true, Ordering::Relaxed); // Relaxed: see `is_empty`.
        let key = stored_key(key);
        let mut pair = self.pair(key);
        let (Some(first), second) = (pair.next(), pair.next()) else {
            return;
        };
        let held = [Some(first), second].map(|s| s.map(|s| s.load(Ordering::Relaxed)));
        if held.contains(&Some(key)) {
            return;
        }
        let target = match second {
            Some(second) if held[0] != Some(0) && held[1] == Some(0) => second,
            _ => first,
        };
        target.store(key, Ordering::Relaxed);
    }

    /// Forgets `key` (its program cooled down).
    #[inline]
    pub fn forget(&self, key: u64) {
        let key = stored_key(key);
        for slot in self.pair(key) {
            // A racing remember of the same key may be lost: the next
            // qualification stores it again.
            let _ = slot.compare_exchange(key, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    fn pair(&self, key: u64) -> impl Iterator<Item = &AtomicU64> {
        let len = self.slots.len();
        let first = if len == 0 {
            0
        } else {
            (mix(key) % len as u64) as usize
        };
        let count = len.min(2);
        (0..count).map(move |i| &self.slots[(first + i) % len])
    }
}

/// 0 marks a free slot, so key 0 is stored as 1.
#[inline]
fn stored_key(key: u64) -> u64 {
    key.max(1)
}

/// splitmix64's finaliser: spreads nearby keys over the table.
#[inline]
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remember_forget_and_disabled() {
        let memory = ClassMemory::new(8);
        assert!(!memory.contains(42));
        memory.remember(42);
        assert!(memory.contains(42));
        memory.forget(42);
        assert!(!memory.contains(42));
        let off = ClassMemory::new(0);
        off.remember(42);
        assert!(!off.contains(42));
    }

    #[test]
    fn two_colliding_keys_both_fit() {
        let memory = ClassMemory::new(1);
        memory.remember(1);
        assert!(memory.contains(1));
        memory.remember(2);
        assert!(memory.contains(2), "a full table overwrites");
    }
}
