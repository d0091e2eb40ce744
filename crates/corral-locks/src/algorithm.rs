//! Naming the lock algorithms at run time (CLI, reports) and dispatching
//! generic code over them.

use core::fmt;
use core::str::FromStr;

use serde::{Deserialize, Serialize};

/// One of the nine lock algorithms of this crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// Test-and-set spin lock.
    Tas,
    /// Test-and-test-and-set spin lock.
    Ttas,
    /// FIFO ticket lock (the lock of the Markov model).
    Ticket,
    /// Ticket lock with proportional back-off.
    TicketBackoff,
    /// MCS queue lock (local spinning on a per-waiter node).
    Mcs,
    /// CLH queue lock (spins on the predecessor's node).
    Clh,
    /// K42 variant of MCS (no node passed by the caller).
    K42,
    /// Blocking lock: waiters sleep in the kernel at once.
    Futex,
    /// Spin briefly, then sleep on a futex (glibc-style adaptive).
    Adaptive,
}

impl Algorithm {
    /// Every algorithm, spinning ones first.
    pub const ALL: [Algorithm; 9] = [
        Algorithm::Tas,
        Algorithm::Ttas,
        Algorithm::Ticket,
        Algorithm::TicketBackoff,
        Algorithm::Mcs,
        Algorithm::Clh,
        Algorithm::K42,
        Algorithm::Futex,
        Algorithm::Adaptive,
    ];

    /// The short CLI name, equal to the implementing type's `RawLock::NAME`.
    pub const fn name(self) -> &'static str {
        match self {
            Algorithm::Tas => "tas",
            Algorithm::Ttas => "ttas",
            Algorithm::Ticket => "ticket",
            Algorithm::TicketBackoff => "ticket-backoff",
            Algorithm::Mcs => "mcs",
            Algorithm::Clh => "clh",
            Algorithm::K42 => "k42",
            Algorithm::Futex => "futex",
            Algorithm::Adaptive => "adaptive",
        }
    }

    /// Whether waiters sleep in the kernel rather than spin forever.
    pub const fn is_parking(self) -> bool {
        matches!(self, Algorithm::Futex | Algorithm::Adaptive)
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown algorithm name; its message lists the allowed ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownAlgorithm(pub String);

impl fmt::Display for UnknownAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown lock algorithm '{}'; allowed: ", self.0)?;
        for (i, alg) in Algorithm::ALL.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{alg}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownAlgorithm {}

impl FromStr for Algorithm {
    type Err = UnknownAlgorithm;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Algorithm::ALL
            .into_iter()
            .find(|alg| alg.name() == s)
            .ok_or_else(|| UnknownAlgorithm(s.to_owned()))
    }
}

/// Runs `$body` with `$L` bound to the lock type of the algorithm `$alg`:
/// `with_lock_type!(alg, L => run::<L>())` expands to a `match` over all nine.
#[macro_export]
macro_rules! with_lock_type {
    ($alg:expr, $L:ident => $body:expr) => {
        match $alg {
            $crate::Algorithm::Tas => {
                type $L = $crate::TasLock;
                $body
            }
            $crate::Algorithm::Ttas => {
                type $L = $crate::TtasLock;
                $body
            }
            $crate::Algorithm::Ticket => {
                type $L = $crate::TicketLock;
                $body
            }
            $crate::Algorithm::TicketBackoff => {
                type $L = $crate::TicketBackoffLock;
                $body
            }
            $crate::Algorithm::Mcs => {
                type $L = $crate::McsLock;
                $body
            }
            $crate::Algorithm::Clh => {
                type $L = $crate::ClhLock;
                $body
            }
            $crate::Algorithm::K42 => {
                type $L = $crate::K42Lock;
                $body
            }
            $crate::Algorithm::Futex => {
                type $L = $crate::FutexLock;
                $body
            }
            $crate::Algorithm::Adaptive => {
                type $L = $crate::AdaptiveLock;
                $body
            }
        }
    };
}
