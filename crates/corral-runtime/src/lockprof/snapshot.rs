//! Reading the lock table: what `corral run`, `corral top` and the
//! metrics endpoint show.

use core::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use crate::abi::{lock_kind, LockRecord, LOCK_CALLERS, LOCK_OVERFLOW};

/// One sampled caller of a lock's contended acquisitions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallerSample {
    /// Return address in the process (the instruction after the call);
    /// 1 where the stack could not be walked.
    pub addr: u64,
    /// Contended acquisitions sampled from here.
    pub samples: u32,
}

/// One lock's contention, from its record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LockSnapshot {
    /// The lock's address in the process; `None` for the overflow slot
    /// (locks that found no slot of their own).
    pub addr: Option<u64>,
    /// How it was taken when it waited: `mutex`, `spinlock`, `rwlock:R`,
    /// `rwlock:W`, `rwlock:RW`, joined with `+` when mixed.
    pub kind: String,
    /// Acquisitions that had to wait.
    pub contended: u64,
    /// Their total waiting, ns.
    pub wait_ns: u64,
    /// The longest wait, ns.
    pub max_wait_ns: u64,
    /// Distinct waiting threads (exact up to 64; tids are hashed mod 64).
    pub waiters: u32,
    /// Sampled callers, most samples first.
    pub callers: Vec<CallerSample>,
    /// Samples of callers beyond those kept.
    pub other_samples: u32,
    /// How its waits went (parking locks: the default and `adaptive`).
    #[serde(default)]
    pub waits: WaitOutcomes,
}

/// Why waiters of a lock slept, by count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParkCounts {
    /// The holder was off its CPU.
    pub holder_off_cpu: u32,
    /// The spin budget (a park's cost, or the learned share of it) was spent.
    pub budget_spent: u32,
    /// Others waited first: sleepers on the lock, or spinners on every CPU
    /// but the holder's.
    pub crowded: u32,
    /// The lock was released and taken again faster than a probe: its
    /// holder serves more alone.
    pub short_cycle: u32,
}

/// How a parking lock's contended acquisitions waited: spun to the
/// hand-off, spun then slept, or slept at once, and why they slept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitOutcomes {
    /// Took the lock while spinning.
    pub spun_to_handoff: u32,
    /// Spun, then slept.
    pub spun_then_parked: u32,
    /// Slept without spinning.
    pub parked_at_once: u32,
    /// Why the sleepers of both kinds slept.
    pub parked_because: ParkCounts,
}

impl WaitOutcomes {
    /// From [`LockRecord::outcomes`], by [`crate::abi::WaitTally`]'s slots.
    pub fn from_counts(c: [u32; crate::abi::WAIT_OUTCOMES]) -> Self {
        WaitOutcomes {
            spun_to_handoff: c[0],
            spun_then_parked: c[1],
            parked_at_once: c[2],
            parked_because: ParkCounts {
                holder_off_cpu: c[3],
                budget_spent: c[4],
                crowded: c[5],
                short_cycle: c[6],
            },
        }
    }

    /// Waits counted.
    pub fn total(&self) -> u64 {
        u64::from(self.spun_to_handoff)
            + u64::from(self.spun_then_parked)
            + u64::from(self.parked_at_once)
    }
}

impl LockSnapshot {
    /// Mean wait, ns.
    pub fn avg_wait_ns(&self) -> u64 {
        self.wait_ns.checked_div(self.contended).unwrap_or(0)
    }
}

/// The name of a [`LockRecord::kinds`] value.
pub fn kind_name(kinds: u32) -> String {
    let mut names = Vec::new();
    if kinds & lock_kind::MUTEX != 0 {
        names.push("mutex");
    }
    if kinds & lock_kind::SPIN != 0 {
        names.push("spinlock");
    }
    match (
        kinds & lock_kind::RW_READ != 0,
        kinds & lock_kind::RW_WRITE != 0,
    ) {
        (true, true) => names.push("rwlock:RW"),
        (true, false) => names.push("rwlock:R"),
        (false, true) => names.push("rwlock:W"),
        (false, false) => {}
    }
    if names.is_empty() {
        "?".into()
    } else {
        names.join("+")
    }
}

/// Every record that waited, most total wait first; tick counts become ns
/// with the header's `ns_per_2p32_ticks`.
pub fn locks(table: &[LockRecord], ns_per_2p32_ticks: u64) -> Vec<LockSnapshot> {
    let ns = |ticks: u64| ((ticks as u128 * ns_per_2p32_ticks as u128) >> 32) as u64;
    // Relaxed throughout: a monitoring view tolerates a record mid-update.
    let mut out: Vec<LockSnapshot> = table
        .iter()
        .filter(|r| r.contended.load(Ordering::Relaxed) != 0)
        .map(|r| {
            let addr = r.addr.load(Ordering::Relaxed);
            let mut callers: Vec<CallerSample> = (0..LOCK_CALLERS)
                .map(|i| CallerSample {
                    addr: r.callers[i].load(Ordering::Relaxed),
                    samples: r.caller_samples[i].load(Ordering::Relaxed),
                })
                .filter(|c| c.addr != 0 && c.samples != 0)
                .collect();
            callers.sort_by_key(|c| core::cmp::Reverse(c.samples));
            LockSnapshot {
                addr: (addr != LOCK_OVERFLOW).then_some(addr),
                kind: kind_name(r.kinds.load(Ordering::Relaxed)),
                contended: r.contended.load(Ordering::Relaxed),
                wait_ns: ns(r.wait_ticks.load(Ordering::Relaxed)),
                max_wait_ns: ns(r.max_wait_ticks.load(Ordering::Relaxed)),
                waiters: r.waiters.load(Ordering::Relaxed).count_ones(),
                callers,
                other_samples: r.other_samples.load(Ordering::Relaxed),
                waits: WaitOutcomes::from_counts(core::array::from_fn(|i| {
                    r.outcomes[i].load(Ordering::Relaxed)
                })),
            }
        })
        .collect();
    out.sort_by_key(|l| core::cmp::Reverse(l.wait_ns));
    out
}
