//! Per-thread synchronisation-event vectors (paper 5, Sec. 2.3.1, Fig. 2).

use serde::Serialize;

/// Every thread's seVector (paper 5, Sec. 2.3.1, Fig. 2), kept directly as
/// its conVector: `s` counters
/// indexed by a hash of the lock id, so recording is one increment. Distinct
/// locks that hash to the same slot are merged (the paper keys by object).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeVectors {
    size: u32,
    /// `threads x size` counters, row-major.
    counts: Vec<u16>,
    /// Events recorded per thread, at most `size`.
    events: Vec<u32>,
    full: usize,
}

/// splitmix64's finaliser: lock ids are aligned addresses, so the low bits
/// alone would crowd a few slots.
#[inline]
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl SeVectors {
    /// An empty table whose vectors hold `size` events (paper 5's `s`),
    /// clamped to `1..=u16::MAX` so each counter fits in 16 bits.
    pub fn new(size: u32) -> Self {
        Self {
            size: size.clamp(1, u32::from(u16::MAX)),
            counts: Vec::new(),
            events: Vec::new(),
            full: 0,
        }
    }

    /// A table with `threads` empty vectors.
    pub fn with_threads(size: u32, threads: usize) -> Self {
        let mut v = Self::new(size);
        v.counts.resize(threads * v.size as usize, 0);
        v.events.resize(threads, 0);
        v
    }

    /// Registers one more thread and returns its index (allocates its vector
    /// once, at registration).
    pub fn add_thread(&mut self) -> usize {
        self.counts
            .resize(self.counts.len() + self.size as usize, 0);
        self.events.push(0);
        self.events.len() - 1
    }

    /// Vector size `s`, which is also the number of slots.
    #[inline]
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Number of registered threads.
    #[inline]
    pub fn threads(&self) -> usize {
        self.events.len()
    }

    /// Slot of a lock id.
    #[inline]
    pub fn slot_of(&self, lock_id: u64) -> usize {
        // Multiply-shift range reduction: uniform and division-free.
        ((u128::from(mix(lock_id)) * u128::from(self.size)) >> 64) as usize
    }

    /// Records that `thread` entered lock `lock_id`; returns whether its
    /// vector is now full, the paper's cue to cluster. Events beyond a full
    /// vector are dropped, so every vector sums to at most `s`.
    #[inline]
    pub fn record(&mut self, thread: usize, lock_id: u64) -> bool {
        let size = self.size;
        let slot = self.slot_of(lock_id);
        let events = &mut self.events[thread];
        if *events >= size {
            return true;
        }
        *events += 1;
        // events <= size <= u16::MAX bounds every counter, so no overflow.
        self.counts[thread * size as usize + slot] += 1;
        if *events == size {
            self.full += 1;
            return true;
        }
        false
    }

    /// How many vectors are full.
    #[inline]
    pub fn full_count(&self) -> usize {
        self.full
    }

    /// Whether any vector is full.
    #[inline]
    pub fn any_full(&self) -> bool {
        self.full > 0
    }

    /// Events recorded by `thread`.
    #[inline]
    pub fn events(&self, thread: usize) -> u32 {
        self.events[thread]
    }

    /// `thread`'s conVector: acquisitions per slot.
    #[inline]
    pub fn con_vector(&self, thread: usize) -> &[u16] {
        let size = self.size as usize;
        &self.counts[thread * size..(thread + 1) * size]
    }

    /// A table of the rows `keep` (in that order), renumbered from 0:
    /// the live threads of a round. Allocates; once per round.
    #[cold]
    pub fn compact(&self, keep: &[usize]) -> SeVectors {
        let mut out = SeVectors::new(self.size);
        for &t in keep {
            out.counts.extend_from_slice(self.con_vector(t));
            out.events.push(self.events[t]);
            out.full += usize::from(self.events[t] >= self.size);
        }
        out
    }

    /// Empties every vector for the next recording round (no allocation).
    pub fn reset(&mut self) {
        self.counts.fill(0);
        self.events.fill(0);
        self.full = 0;
    }
}
