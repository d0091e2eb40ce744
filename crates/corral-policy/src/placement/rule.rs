//! The placement rule (paper 1, Sec. 3.4: lock-intensive threads on the SSC,
//! the others balanced apart on the remaining cores).

use core::ops::Range;

use serde::Serialize;

use crate::ssc::MigState;
use crate::CoreId;

/// Where a thread belongs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum Placement {
    /// Nobody is lock intensive: no confinement, the thread keeps every CPU
    /// it started with.
    Unconfined = 0,
    /// Lock intensive and admitted to the SSC (`HaveMigrated`).
    Ssc = 1,
    /// Not admitted while some thread is: the general cores.
    General = 2,
}

impl Placement {
    /// The rule: a thread that has migrated (Algorithm 2 admitted it) runs
    /// on the SSC; every other thread runs on the general cores while any
    /// thread is lock intensive, and anywhere otherwise. A thread that has
    /// only qualified (`QualifyToMigrate`) is not on the SSC yet: Algorithm
    /// 2 moves it at its next lock attempt, and a driver that places from a
    /// monitor admits it there (`SscController::place_from_monitor`).
    #[inline]
    pub fn of(state: MigState, lock_intensive: u32) -> Placement {
        match state {
            MigState::HaveMigrated => Placement::Ssc,
            MigState::General | MigState::QualifyToMigrate if lock_intensive > 0 => {
                Placement::General
            }
            MigState::General | MigState::QualifyToMigrate => Placement::Unconfined,
        }
    }

    /// The positions in the SSC order (`0..cores`) that this placement
    /// allows under `bound`: the SSC is the prefix `0..bound`; the general
    /// cores are the rest, or every core when the SSC covers them all (a
    /// thread must run somewhere); unconfined is every core.
    #[inline]
    pub fn span(self, bound: u32, cores: usize) -> Range<usize> {
        let bound = (bound as usize).clamp(1, cores.max(1)).min(cores);
        match self {
            Placement::Ssc => 0..bound,
            Placement::General if bound < cores => bound..cores,
            Placement::General | Placement::Unconfined => 0..cores,
        }
    }

    /// The CPUs of `order` (the SSC order) this placement allows under
    /// `bound` (see [`Placement::span`]).
    #[inline]
    pub fn cores(self, order: &[CoreId], bound: u32) -> &[CoreId] {
        &order[self.span(bound, order.len())]
    }

    /// The placement stored as [`Placement::as_u8`], for atomics; `None` for
    /// any other value.
    #[inline]
    pub fn from_u8(v: u8) -> Option<Placement> {
        match v {
            0 => Some(Placement::Unconfined),
            1 => Some(Placement::Ssc),
            2 => Some(Placement::General),
            _ => None,
        }
    }

    /// The value [`Placement::from_u8`] reads back.
    #[inline]
    pub fn as_u8(self) -> u8 {
        self as u8
    }
}

impl core::fmt::Display for Placement {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Placement::Unconfined => "unconfined",
            Placement::Ssc => "ssc",
            Placement::General => "general",
        })
    }
}

/// The general cores under `bound`: the SSC's complement in `order`, or the
/// whole order when the SSC covers every core.
#[inline]
pub fn general_cores(order: &[CoreId], bound: u32) -> &[CoreId] {
    Placement::General.cores(order, bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_migrated_threads_are_confined_to_the_ssc() {
        assert_eq!(Placement::of(MigState::HaveMigrated, 3), Placement::Ssc);
        assert_eq!(
            Placement::of(MigState::QualifyToMigrate, 3),
            Placement::General
        );
        assert_eq!(Placement::of(MigState::General, 3), Placement::General);
        assert_eq!(Placement::of(MigState::General, 0), Placement::Unconfined);
        assert_eq!(
            Placement::of(MigState::QualifyToMigrate, 0),
            Placement::Unconfined
        );
    }

    #[test]
    fn the_general_set_is_every_core_when_the_ssc_covers_them() {
        let order = [4, 5, 6, 7];
        assert_eq!(Placement::Ssc.cores(&order, 1), &[4]);
        assert_eq!(Placement::General.cores(&order, 1), &[5, 6, 7]);
        assert_eq!(Placement::General.cores(&order, 4), &order);
        assert_eq!(Placement::General.cores(&order, 9), &order);
        assert_eq!(Placement::Ssc.cores(&order, 9), &order);
        assert_eq!(Placement::Unconfined.cores(&order, 2), &order);
        assert_eq!(general_cores(&order, 3), &[7]);
        // A bound of 0 is never set (the SSC has at least one core).
        assert_eq!(Placement::Ssc.cores(&order, 0), &[4]);
    }

    #[test]
    fn round_trips_through_a_byte() {
        for p in [Placement::Unconfined, Placement::Ssc, Placement::General] {
            assert_eq!(Placement::from_u8(p.as_u8()), Some(p));
        }
        assert_eq!(Placement::from_u8(7), None);
    }
}
