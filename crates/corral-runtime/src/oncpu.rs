//! The on-CPU table as the program reads it: one u64 per thread, written
//! by `bpf/oncpu.bpf.c` at every context switch, mapped read-only into the
//! process (by the shim at load, from the descriptor `corral run` passed
//! down, which it then closes). A waiter reads its lock holder's word with
//! a plain load ([`holder_state`]).

use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

pub use corral_policy::waiting::HolderState;

/// Words in the table (a power of two); must match `ONCPU_SLOTS` in
/// `bpf/oncpu.bpf.c`.
pub const ONCPU_SLOTS: usize = 65_536;

/// Bytes of the mapping: a BPF array's elements are 8 bytes apart.
pub const ONCPU_BYTES: usize = ONCPU_SLOTS * 8;

/// The environment variable that names the table's descriptor (a
/// read-only BPF map) in the process `corral run` starts.
pub const ENV_ONCPU_FD: &str = "CORRAL_ONCPU_FD";

/// The table; null where there is none (no BPF, or not under `corral run`).
static TABLE: AtomicPtr<AtomicU64> = AtomicPtr::new(core::ptr::null_mut());

/// Uses the table mapped at `base` from now on.
///
/// # Safety
/// `base` is null or the start of a read-only mapping of [`ONCPU_BYTES`]
/// bytes, 8-aligned, that is never unmapped.
pub unsafe fn adopt(base: *const u64) {
    // Relaxed: the mapping exists before any thread can read the pointer
    // through a lock wait (it is made at load, before the program runs).
    TABLE.store(base as *mut AtomicU64, Ordering::Relaxed);
}

/// What the table says of thread `tid` (0: no holder recorded).
#[inline]
pub fn holder_state(tid: u32) -> HolderState {
    let base = TABLE.load(Ordering::Relaxed); // Relaxed: see `adopt`.
    if base.is_null() || tid == 0 {
        return HolderState::Unknown;
    }
    // SAFETY: `adopt`'s contract: ONCPU_SLOTS words, mapped for good; the
    // index is masked into range.
    let word = unsafe { &*base.add(tid as usize & (ONCPU_SLOTS - 1)) };
    // Relaxed: a hint about another thread, never a guard for data.
    decode(word.load(Ordering::Relaxed), tid)
}

/// A slot's word read for `tid`: `tid << 1 | on_cpu`, or another thread's.
#[inline]
pub fn decode(word: u64, tid: u32) -> HolderState {
    if word >> 1 != u64::from(tid) {
        HolderState::Unknown
    } else if word & 1 == 1 {
        HolderState::Running
    } else {
        HolderState::OffCpu
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_speaks_only_for_its_own_thread() {
        assert_eq!(decode(42 << 1 | 1, 42), HolderState::Running);
        assert_eq!(decode(42 << 1, 42), HolderState::OffCpu);
        assert_eq!(decode((42 + 65_536) << 1 | 1, 42), HolderState::Unknown);
        assert_eq!(decode(1 << 40 | 42 << 1 | 1, 42), HolderState::Unknown);
        assert_eq!(decode(0, 42), HolderState::Unknown);
    }
}
