//! Which kernel lock kinds count as lock waiting.

use std::fmt;
use std::str::FromStr;

/// A set of kernel lock kinds, as the BPF program classifies
/// `lock:contention_begin`'s flags. Paper 1 counts spin locks only (Sec. 3.2
/// wraps `spin_lock()`), so [`LockKinds::default`] is [`LockKinds::SPIN`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LockKinds(u32);

/// (name, bit) of every kind; the bits match `KIND_*` in the BPF source.
const NAMES: [(&str, u32); 4] = [("spin", 1), ("mutex", 2), ("rwsem", 4), ("rtmutex", 8)];

impl LockKinds {
    /// Spin locks and rwlocks (`LCB_F_SPIN`): paper 1's scope.
    pub const SPIN: LockKinds = LockKinds(1);
    /// Mutexes, optimistic spinning on the owner included (`LCB_F_MUTEX`).
    pub const MUTEX: LockKinds = LockKinds(2);
    /// Read-write semaphores (`mmap_lock`, `i_rwsem`) and per-CPU ones.
    pub const RWSEM: LockKinds = LockKinds(4);
    /// RT mutexes (`LCB_F_RT`).
    pub const RTMUTEX: LockKinds = LockKinds(8);

    /// The bit mask the BPF program reads.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// True if every kind of `other` is in `self`.
    pub fn contains(self, other: LockKinds) -> bool {
        self.0 & other.0 == other.0
    }

    /// The kinds' names, in a fixed order.
    pub fn names(self) -> Vec<&'static str> {
        NAMES
            .iter()
            .filter(|(_, bit)| self.0 & bit != 0)
            .map(|(n, _)| *n)
            .collect()
    }
}

impl Default for LockKinds {
    fn default() -> Self {
        LockKinds::SPIN
    }
}

/// A name in a lock-kind list that is not a kernel lock kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownLockKind(pub String);

impl fmt::Display for UnknownLockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown lock kind '{}': use spin, mutex, rwsem, rtmutex or all",
            self.0
        )
    }
}

impl std::error::Error for UnknownLockKind {}

impl FromStr for LockKinds {
    type Err = UnknownLockKind;

    /// `spin,mutex,rwsem,rtmutex` in any order, or `all`.
    fn from_str(s: &str) -> Result<Self, UnknownLockKind> {
        if s.trim() == "all" {
            return Ok(LockKinds(NAMES.iter().map(|(_, b)| b).sum()));
        }
        let mut bits = 0;
        for item in s.split(',').map(str::trim) {
            let (_, bit) = NAMES
                .iter()
                .find(|(name, _)| *name == item)
                .ok_or_else(|| UnknownLockKind(item.to_string()))?;
            bits |= bit;
        }
        Ok(LockKinds(bits))
    }
}

impl fmt::Display for LockKinds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.names().join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_rejects_unknown_kinds() {
        let kinds: LockKinds = "rwsem, spin".parse().unwrap();
        assert!(kinds.contains(LockKinds::SPIN) && kinds.contains(LockKinds::RWSEM));
        assert!(!kinds.contains(LockKinds::MUTEX));
        assert_eq!(kinds.to_string(), "spin,rwsem");
        assert_eq!("all".parse::<LockKinds>().unwrap().names().len(), 4);
        assert_eq!(
            "spin,futex".parse::<LockKinds>(),
            Err(UnknownLockKind("futex".into()))
        );
        assert_eq!(LockKinds::default(), LockKinds::SPIN);
    }
}
