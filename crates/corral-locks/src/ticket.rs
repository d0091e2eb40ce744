//! The ticket spin lock.

use crate::sync::{const_fn_unless_loom, spin_loop, AtomicU32, Ordering};
use crate::RawLock;

/// Ticket lock: an acquirer takes the next ticket with one atomic increment
/// and spins until `now_serving` reaches it; release increments
/// `now_serving`. Every waiter spins on the same line, so each hand-off costs
/// time linear in the number of waiters — the cause of the collapse modelled
/// by eq. 1 of "Non-scalable locks are dangerous" (Boyd-Wickizer et al. 2012,
/// Sec. 2.1, Fig. 1; Sec. 3.2).
#[derive(Debug)]
pub struct TicketLock {
    next_ticket: AtomicU32,
    now_serving: AtomicU32,
}

impl TicketLock {
    const_fn_unless_loom! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self {
                next_ticket: AtomicU32::new(0),
                now_serving: AtomicU32::new(0),
            }
        }
    }

    /// Takes a ticket; the caller holds the lock once `now_serving` equals it.
    #[inline]
    pub(crate) fn take_ticket(&self) -> u32 {
        // Relaxed: ticket order only; the `now_serving` load acquires.
        self.next_ticket.fetch_add(1, Ordering::Relaxed)
    }

    /// The ticket being served; Acquire so the previous holder's critical
    /// section happens before ours once it equals our ticket.
    #[inline]
    pub(crate) fn now_serving(&self) -> u32 {
        self.now_serving.load(Ordering::Acquire)
    }

    #[cold]
    fn wait_for_turn(&self, ticket: u32) {
        while self.now_serving() != ticket {
            spin_loop();
        }
    }
}

impl Default for TicketLock {
    fn default() -> Self {
        Self::new()
    }
}

impl RawLock for TicketLock {
    const NAME: &'static str = "ticket";

    #[inline]
    fn lock(&self) {
        let ticket = self.take_ticket();
        if self.now_serving() != ticket {
            self.wait_for_turn(ticket);
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        let ticket = self.next_ticket.load(Ordering::Relaxed); // Relaxed: validated by the CAS.
                                                               // Free iff nobody holds an unserved ticket; the CAS fails if one was taken since.
        self.now_serving() == ticket
            && self
                .next_ticket
                .compare_exchange(
                    ticket,
                    ticket.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
    }

    #[inline]
    unsafe fn unlock(&self) {
        // Only the holder writes `now_serving`, so a plain load + store suffices.
        let served = self.now_serving.load(Ordering::Relaxed);
        // Release: our critical section happens before the next holder's.
        self.now_serving
            .store(served.wrapping_add(1), Ordering::Release);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        // Relaxed: a snapshot, no data guarded.
        self.next_ticket.load(Ordering::Relaxed) != self.now_serving.load(Ordering::Relaxed)
    }
}
