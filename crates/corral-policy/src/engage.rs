//! When corral takes over a process's locks.
//!
//! Loading corral's library costs a process about 0.2-0.4 ms (its thread
//! registry, its monitor thread, its static TLS). A short run that barely
//! contends loses that to glibc and gains nothing from it: `git grep` at 4
//! threads makes about 150 contended lock calls in a 15 ms process, and
//! read 0.95x glibc with the library loaded at the first lock call against
//! 1.00x with the load deferred (`corral bench apps`). A program that does
//! contend hands a mutex to a waiting thread a thousand times within a
//! millisecond or two (`sysbench mutex` at 8 threads settled 21-33 ms
//! after contention began either way), so waiting for them costs it
//! nothing measurable.

/// Contended hand-offs (unlocks of a mutex a thread sleeps on) a process
/// makes on glibc's locks before corral's library loads in it: the
/// default of `corral run --load-after-contended`.
pub const LOAD_AFTER_CONTENDED: u32 = 1_000;

/// The count a process is actually given: `requested` where its lock
/// algorithm keeps glibc's mutex words (`keeps_glibc_words`), so that a
/// mutex glibc locked before the load is one corral can release after it;
/// otherwise 0, loading at the first lock call.
#[must_use]
pub const fn load_after(requested: u32, keeps_glibc_words: bool) -> u32 {
    if keeps_glibc_words {
        requested
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_lock_on_glibcs_words_defers() {
        assert_eq!(load_after(LOAD_AFTER_CONTENDED, true), 1_000);
        assert_eq!(load_after(LOAD_AFTER_CONTENDED, false), 0);
        assert_eq!(load_after(0, true), 0);
    }
}
