//! The ticket lock with proportional backoff.

use crate::sync::{const_fn_unless_loom, spin_loop};
use crate::ticket::TicketLock;
use crate::RawLock;

/// Spin-loop iterations a waiter pauses per ticket between its own and the
/// one being served. The paper tunes this constant per machine and gives no
/// value; 64 pause iterations is roughly one short critical section.
pub const PROPORTIONAL_BACKOFF_SPINS_PER_WAITER: u32 = 64;

/// Ticket lock with proportional backoff: a waiter that is `d` tickets away
/// from being served pauses for `d x PROPORTIONAL_BACKOFF_SPINS_PER_WAITER`
/// spins before reading `now_serving` again, cutting the read traffic on the
/// shared line ("Non-scalable locks are dangerous", Boyd-Wickizer et al.
/// 2012, Sec. 4.1, "proportional lock").
#[derive(Debug)]
pub struct TicketBackoffLock {
    ticket: TicketLock,
}

impl TicketBackoffLock {
    const_fn_unless_loom! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { ticket: TicketLock::new() }
        }
    }

    #[cold]
    fn wait_for_turn(&self, ticket: u32) {
        loop {
            let distance = ticket.wrapping_sub(self.ticket.now_serving());
            if distance == 0 {
                return;
            }
            for _ in 0..distance.saturating_mul(PROPORTIONAL_BACKOFF_SPINS_PER_WAITER) {
                spin_loop();
            }
        }
    }
}

impl Default for TicketBackoffLock {
    fn default() -> Self {
        Self::new()
    }
}

impl RawLock for TicketBackoffLock {
    const NAME: &'static str = "ticket-backoff";

    #[inline]
    fn lock(&self) {
        let ticket = self.ticket.take_ticket();
        if self.ticket.now_serving() != ticket {
            self.wait_for_turn(ticket);
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.ticket.try_lock()
    }

    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: the caller holds the lock, which is the inner ticket lock.
        unsafe { self.ticket.unlock() }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.ticket.is_locked()
    }
}
