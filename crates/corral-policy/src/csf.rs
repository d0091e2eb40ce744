//! Critical-Section-First (CSF): a priority bonus for threads holding locks
//! and bounded quantum renewals for a lock holder whose quantum expires
//! (paper 5, Xian et al., "Contention-Aware Scheduler", Sec. 2.3.2).

use serde::Serialize;

/// CSF parameters; defaults are paper 5's values where it gives one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CsfParams {
    /// `MAX_bonus` of `bonus = lockCount x MAX_bonus / MAX_lockCount`
    /// (paper 5, Sec. 2.3.2; the paper bounds the bonus by 5).
    pub max_bonus: i32,
    /// `MAX_lockCount`: the lock count that earns the whole bonus. Paper 5
    /// publishes no value; 5 gives one priority step per held lock.
    pub max_lock_count: u32,
    /// The bonus stays within +-this (paper 5: "bonus is between -5 and +5").
    pub bonus_limit: i32,
    /// Consecutive renewals before a lock holder is preempted anyway
    /// (paper 5, Sec. 2.3.2: `maxRenewal` = 5).
    pub max_renewal: u32,
}

impl Default for CsfParams {
    fn default() -> Self {
        Self {
            max_bonus: 5,
            max_lock_count: 5,
            bonus_limit: 5,
            max_renewal: 5,
        }
    }
}

impl CsfParams {
    /// `lockCount x MAX_bonus / MAX_lockCount` in integer arithmetic (as in
    /// the kernel), clamped to `[-bonus_limit, bonus_limit]`.
    #[inline]
    pub fn bonus(&self, lock_count: u32) -> i32 {
        let limit = i64::from(self.bonus_limit.abs());
        let raw = match self.max_lock_count {
            0 if lock_count > 0 => limit,
            0 => 0,
            max => i64::from(lock_count) * i64::from(self.max_bonus) / i64::from(max),
        };
        // Within +-limit, which is an i32, so the narrowing is lossless.
        raw.clamp(-limit, limit) as i32
    }

    /// `prio = static_prio - bonus`: lower is more urgent, as in Linux.
    #[inline]
    pub fn priority(&self, static_prio: i32, lock_count: u32) -> i32 {
        static_prio.saturating_sub(self.bonus(lock_count))
    }
}

/// What to do when a thread's quantum expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum QuantumDecision {
    /// Give the holder one more quantum.
    Renew,
    /// Preempt as usual.
    Preempt,
}

/// Per-thread renewal counter for CSF's quantum renewal (paper 5,
/// Sec. 2.3.2): a holder is renewed at most `max_renewal` times in a row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RenewalState {
    consecutive: u32,
}

impl RenewalState {
    /// Renewals granted since the thread last left the CPU.
    pub fn consecutive(&self) -> u32 {
        self.consecutive
    }

    /// The thread's quantum expired while it holds `lock_count` locks.
    #[inline]
    pub fn on_quantum_expiry(&mut self, params: &CsfParams, lock_count: u32) -> QuantumDecision {
        if lock_count > 0 && self.consecutive < params.max_renewal {
            self.consecutive += 1;
            QuantumDecision::Renew
        } else {
            self.consecutive = 0;
            QuantumDecision::Preempt
        }
    }

    /// The thread left the CPU for any other reason (blocked, yielded,
    /// migrated): the next expiry starts a fresh run of renewals.
    #[inline]
    pub fn on_descheduled(&mut self) {
        self.consecutive = 0;
    }
}
