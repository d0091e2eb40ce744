//! Helpers shared by the registry's integration tests (each its own
//! process).

use std::sync::atomic::Ordering;

use corral_runtime::registry::{current_tid, slot, slots_in_use};

/// The slot of the calling thread, which must be registered.
pub(crate) fn my_slot() -> usize {
    let tid = current_tid();
    (0..slots_in_use())
        .find(|&i| slot(i).tid.load(Ordering::Acquire) == tid)
        .expect("registered")
}
