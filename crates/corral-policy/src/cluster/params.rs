//! The CA-Scheduler's parameters (paper 5).

use serde::Serialize;

/// CA-Scheduler parameters; defaults are paper 5's values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CaParams {
    /// seVector size `s`: synchronisation events recorded per thread before
    /// clustering (paper 5, Sec. 3.2: 2048). Also the number of hashed
    /// conVector slots, since `s` events touch at most `s` distinct locks.
    pub se_vector_size: u32,
    /// A thread joins a representative's cluster when their similarity is
    /// greater than this (paper 5, Sec. 3.2: `simThreshold` = 0.3).
    pub sim_threshold: f64,
    /// A cluster whose contention intensity is higher than this is
    /// strong-contention (paper 5, Sec. 3.3: `ciThreshold` = 0.4).
    pub ci_threshold: f64,
    /// A lock touched by more than this fraction of all threads is globally
    /// shared and ignored by clustering (paper 5, Sec. 2.3.1: "more than half").
    pub global_share: f64,
    /// Recording starts once this many threads exist (paper 5, Sec. 2.3.1:
    /// 10, "because our smallest benchmark spawns 10 threads").
    pub min_threads: u32,
    /// A thread takes part in a live round once its vector holds this many
    /// events (not in the paper, whose vectors record every event: a
    /// sampled one of a thread starved of CPU may hold a handful). At 64,
    /// a lock used half the time reads 0.5 +- 0.06 (one binomial sd);
    /// threads below it keep their placement until a later round.
    pub min_samples: u32,
}

impl Default for CaParams {
    fn default() -> Self {
        Self {
            se_vector_size: 2048,
            sim_threshold: 0.3,
            ci_threshold: 0.4,
            global_share: 0.5,
            min_threads: 10,
            min_samples: 64,
        }
    }
}

/// Ticks a round may wait, after the first vector filled, for the others.
pub const ROUND_WAIT_TICKS: u32 = 64;

impl CaParams {
    /// Whether a round is due: some vector is full (paper 5's cue) and
    /// `ready` of the `recording` (live) threads hold [`CaParams::min_samples`]
    /// events, the first vector having filled `ticks_since_first` ticks
    /// ago. Similarity is normalised per vector, so the others need not be
    /// full, only sampled enough; a thread starved of CPU is waited for at
    /// most [`ROUND_WAIT_TICKS`], then sits the round out.
    #[inline]
    pub fn round_due(
        &self,
        full: usize,
        ready: usize,
        recording: usize,
        ticks_since_first: u32,
    ) -> bool {
        full > 0 && (ready >= recording || ticks_since_first >= ROUND_WAIT_TICKS)
    }

    /// Whether an application with `threads` threads is worth recording.
    #[inline]
    pub fn should_record(&self, threads: usize) -> bool {
        threads >= self.min_threads as usize
    }
}
