//! The word the monitor thread sleeps on between rounds, and who may wake
//! it early: the program's exit, for the last round (final stats, the
//! log's last lines, the lock profile's maps copy), which it runs in its own
//! descriptor table (see [`corral_locks::sys::fdtable`]) rather than the
//! exiting thread in the program's; and, while it listens (a sleep after a
//! round that found nothing to manage), a thread whose waits could qualify
//! it.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use corral_locks::sys::clock::monotonic_ns;
use corral_locks::sys::futex::{self, Sharing, WAKE_ALL};

const QUIET: u32 = 0;
const ASKED: u32 = 1;
const DONE: u32 = 2;
const LISTENING: u32 = 3;
const RUNG: u32 = 4;

/// Why the monitor's sleep ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Woke {
    /// Its pause was over.
    Timeout,
    /// A waiting thread rang while it dozed.
    Rung,
    /// The program exits: the last round.
    Exit,
}

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
    /// asks first, or, where `listening`, a waiting thread rings.
    pub fn sleep(&self, pause: Duration, listening: bool) -> Woke {
        if listening {
            // Relaxed: the bell's own state; nothing else is published.
            let _ =
                self.word
                    .compare_exchange(QUIET, LISTENING, Ordering::Relaxed, Ordering::Relaxed);
        }
        let deadline = monotonic_ns().saturating_add(pause.as_nanos() as u64);
        loop {
            // Acquire: pairs with `ask`'s Release (what the asker stored
            // for the last round is visible).
            let now_word = self.word.load(Ordering::Acquire);
            match now_word {
                ASKED | DONE => return Woke::Exit,
                RUNG => {
                    // Fails only to an exit's ask, seen next time round.
                    if self
                        .word
                        .compare_exchange(RUNG, QUIET, Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                    {
                        return Woke::Rung;
                    }
                    continue;
                }
                _ => {}
            }
            let now = monotonic_ns();
            if now >= deadline {
                // Relaxed: the bell's own state, as above.
                match self.word.compare_exchange(
                    LISTENING,
                    QUIET,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) | Err(QUIET) => return Woke::Timeout,
                    Err(_) => continue, // rung or asked just now
                }
            }
            futex::wait_for(&self.word, now_word, deadline - now, Sharing::Private);
        }
    }

    /// Whether the monitor listens for a ring (a waiting thread's look before [`ring`]).
    ///
    /// [`ring`]: Doorbell::ring
    #[inline]
    pub fn listening(&self) -> bool {
        // Relaxed: a hint; `ring` decides.
        self.word.load(Ordering::Relaxed) == LISTENING
    }

    /// Listening before the monitor thread exists: the first ring is the
    /// one that starts it (see `monitor_thread::start`).
    pub fn listen(&self) {
        // Release: a thread that rings it (made before it, the program's
        // first) sees what the arming stored before (the arming pid).
        self.word.store(LISTENING, Ordering::Release);
    }

    /// Wakes a listening monitor (once: the first ringer wakes it);
    /// whether this call was that ringer.
    #[cold]
    pub fn ring(&self) -> bool {
        // Acquire: pairs with `listen`'s Release (the ringer that starts
        // the monitor reads the arming); the round it starts reads the
        // counters on its own.
        let rang = self
            .word
            .compare_exchange(LISTENING, RUNG, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        if rang {
            futex::wake(&self.word, 1, Sharing::Private);
        }
        rang
    }

    /// The monitor's answer: the last round is done.
    pub fn answer(&self) {
        // Release: the asker sees everything the last round did.
        self.word.store(DONE, Ordering::Release);
        futex::wake(&self.word, WAKE_ALL, Sharing::Private);
    }

    /// Rings for the last round and waits for the answer, at most `limit`;
    /// whether it came.
    pub fn ask(&self, limit: Duration) -> bool {
        // Acquire: a DONE seen here carries the answered round with it.
        let mut word = self.word.load(Ordering::Acquire);
        loop {
            match word {
                DONE => return true,
                ASKED => break, // a second exit: wait for the same answer
                _ => {}
            }
            // Release: pairs with `sleep`'s Acquire.
            match self
                .word
                .compare_exchange(word, ASKED, Ordering::Release, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(now) => word = now,
            }
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
                while bell.sleep(Duration::from_secs(600), true) != Woke::Exit {}
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
        assert_eq!(
            bell.sleep(Duration::ZERO, false),
            Woke::Exit,
            "a monitor that comes late still sees the ask"
        );
    }

    #[test]
    fn an_unrung_sleep_lasts_its_pause() {
        let bell = Doorbell::new();
        assert_eq!(bell.sleep(Duration::from_millis(1), true), Woke::Timeout);
        assert!(
            !bell.listening(),
            "a listening pause that ended unrung is over"
        );
    }

    #[test]
    fn a_ring_wakes_only_a_listening_monitor_and_only_once() {
        let bell = Arc::new(Doorbell::new());
        bell.ring();
        assert_eq!(
            bell.sleep(Duration::ZERO, false),
            Woke::Timeout,
            "rang while awake"
        );
        let monitor = {
            let bell = bell.clone();
            std::thread::spawn(move || bell.sleep(Duration::from_secs(600), true))
        };
        while !bell.listening() {
            std::thread::yield_now();
        }
        bell.ring();
        bell.ring();
        assert_eq!(monitor.join().unwrap(), Woke::Rung);
        assert!(!bell.listening());
        assert_eq!(
            bell.sleep(Duration::ZERO, false),
            Woke::Timeout,
            "the second ring was lost"
        );
    }

    #[test]
    fn an_exit_wakes_a_listening_monitor() {
        let bell = Arc::new(Doorbell::new());
        let monitor = {
            let bell = bell.clone();
            std::thread::spawn(move || {
                let woke = bell.sleep(Duration::from_secs(600), true);
                bell.answer();
                woke
            })
        };
        while !bell.listening() {
            std::thread::yield_now();
        }
        assert!(bell.ask(Duration::from_secs(600)));
        assert_eq!(monitor.join().unwrap(), Woke::Exit);
    }
}
