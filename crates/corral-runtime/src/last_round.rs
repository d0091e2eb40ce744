//! The program's exit asks the monitor thread for the last round (final
//! stats, the log's last lines, the lock profile's maps copy) instead of
//! running it itself: only the monitor thread has a descriptor table the
//! program's other threads cannot close numbers in (see
//! [`corral_locks::sys::fdtable`]).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use corral_locks::sys::clock::monotonic_ns;
use corral_locks::sys::futex::{self, Sharing, WAKE_ALL};

const QUIET: u32 = 0;
const ASKED: u32 = 1;
const DONE: u32 = 2;

/// The word the monitor thread sleeps on between rounds.
#[derive(Debug)]
pub struct Doorbell {
    word: AtomicU32,
}

impl Doorbell {
    /// A bell nobody has rung.
    pub const fn new() -> Self {
        Doorbell {
            word: AtomicU32::new(QUIET),
        }
    }

    /// Unrung again (a forked child's monitor starts from a copy).
    pub fn reset(&self) {
        // Relaxed: set before the monitor thread that reads it is spawned.
        self.word.store(QUIET, Ordering::Relaxed);
    }

    /// The monitor's pause between rounds: sleeps `pause` unless the exit
    /// rings first; whether it rang.
    pub fn sleep(&self, pause: Duration) -> bool {
        let deadline = monotonic_ns().saturating_add(pause.as_nanos() as u64);
        loop {
            // Acquire: pairs with `ask`'s Release (what the asker stored
            // for the last round is visible).
            if self.word.load(Ordering::Acquire) == ASKED {
                return true;
            }
            let now = monotonic_ns();
            if now >= deadline {
                return false;
            }
            futex::wait_for(&self.word, QUIET, deadline - now, Sharing::Private);
        }
    }

    /// The monitor's answer: the last round is done.
    pub fn answer(&self) {
        // Release: the asker sees everything the last round did.
        self.word.store(DONE, Ordering::Release);
        futex::wake(&self.word, WAKE_ALL, Sharing::Private);
    }

    /// Rings and waits for the answer, at most `limit`; whether it came.
    pub fn ask(&self, limit: Duration) -> bool {
        // Release: pairs with `sleep`'s Acquire.
        match self
            .word
            .compare_exchange(QUIET, ASKED, Ordering::Release, Ordering::Acquire)
        {
            Ok(_) => {}
            Err(DONE) => return true,
            Err(_) => {} // asked already (a second exit): wait for the same answer
        }
        futex::wake(&self.word, WAKE_ALL, Sharing::Private);
        let deadline = monotonic_ns().saturating_add(limit.as_nanos() as u64);
        loop {
            // Acquire: pairs with `answer`'s Release.
            if self.word.load(Ordering::Acquire) == DONE {
                return true;
            }
            let now = monotonic_ns();
            if now >= deadline {
                return false;
            }
            futex::wait_for(&self.word, ASKED, deadline - now, Sharing::Private);
        }
    }
}

impl Default for Doorbell {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_exit_wakes_a_sleeping_monitor_and_waits_for_its_answer() {
        let bell = Arc::new(Doorbell::new());
        let rounds = Arc::new(AtomicU32::new(0));
        let monitor = {
            let (bell, rounds) = (bell.clone(), rounds.clone());
            std::thread::spawn(move || {
                // A pause far longer than the test: only the ring ends it.
                while !bell.sleep(Duration::from_secs(600)) {}
                rounds.fetch_add(1, Ordering::Relaxed);
                bell.answer();
            })
        };
        assert!(bell.ask(Duration::from_secs(600)));
        assert_eq!(
            rounds.load(Ordering::Relaxed),
            1,
            "answered before the round"
        );
        monitor.join().unwrap();
        assert!(bell.ask(Duration::ZERO), "a second exit finds it answered");
    }

    #[test]
    fn an_exit_nobody_answers_gives_up_at_its_limit() {
        let bell = Doorbell::new();
        assert!(!bell.ask(Duration::from_millis(5)));
        assert!(
            bell.sleep(Duration::ZERO),
            "a monitor that comes late still sees the ring"
        );
    }

    #[test]
    fn an_unrung_sleep_lasts_its_pause() {
        let bell = Doorbell::new();
        assert!(!bell.sleep(Duration::from_millis(1)));
    }
}
