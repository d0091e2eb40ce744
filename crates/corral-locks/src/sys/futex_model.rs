//! Linux futexes as loom sees them, with [`super::futex`]'s signatures: a
//! sleeper really blocks (on a loom condition variable) until a wake picks
//! it, so a lost wake-up ends the model in the deadlock loom reports. The
//! compare and the enqueue are one step under a mutex, as the kernel does
//! them under its hash-bucket lock. Deadlines pass when a test calls
//! [`expire_deadlines`], which loom can schedule between any two steps.

use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::{Condvar, Mutex};

use super::clock::DeadlineClock;
pub use super::futex::{Sharing, WaitResult, WAKE_ALL};

/// The sleepers: `(word address, ticket)` in arrival order.
#[derive(Debug, Default)]
struct Table {
    next_ticket: u64,
    asleep: Vec<(usize, u64)>,
    expired: bool,
}

loom::lazy_static! {
    static ref TABLE: (Mutex<Table>, Condvar) = (Mutex::new(Table::default()), Condvar::new());
}

fn address(word: &AtomicU32) -> usize {
    word as *const AtomicU32 as usize
}

fn sleep(word: &AtomicU32, expected: u32, timed: bool) -> WaitResult {
    let (table, woken) = &*TABLE;
    let mut t = table.lock().unwrap();
    // SeqCst: the kernel's compare reads the word's latest value.
    if word.load(Ordering::SeqCst) != expected {
        return WaitResult::Mismatch;
    }
    if timed && t.expired {
        return WaitResult::TimedOut;
    }
    let ticket = t.next_ticket;
    t.next_ticket += 1;
    t.asleep.push((address(word), ticket));
    loop {
        t = woken.wait(t).unwrap();
        if !t.asleep.iter().any(|&(_, k)| k == ticket) {
            return WaitResult::Woken;
        }
        if timed && t.expired {
            t.asleep.retain(|&(_, k)| k != ticket);
            return WaitResult::TimedOut;
        }
    }
}

/// Model of [`super::futex::wait`].
pub fn wait(word: &AtomicU32, expected: u32, _sharing: Sharing) -> WaitResult {
    sleep(word, expected, false)
}

/// Model of [`super::futex::wait_until`]: the deadline passes at
/// [`expire_deadlines`], whatever its value.
pub fn wait_until(
    word: &AtomicU32,
    expected: u32,
    _clock: DeadlineClock,
    _deadline: &libc::timespec,
    _sharing: Sharing,
) -> WaitResult {
    sleep(word, expected, true)
}

/// Model of [`super::futex::wake`]: wakes the `n` oldest sleepers on `word`.
pub fn wake(word: &AtomicU32, n: u32, _sharing: Sharing) -> u32 {
    let (table, woken) = &*TABLE;
    let mut t = table.lock().unwrap();
    let at = address(word);
    let mut picked = 0;
    t.asleep.retain(|&(a, _)| {
        let pick = a == at && picked < n;
        picked += u32::from(pick);
        !pick
    });
    if picked > 0 {
        woken.notify_all();
    }
    picked
}

/// Every deadline of this execution passes now: timed sleepers still
/// asleep return `TimedOut`, later timed waits time out at once.
pub fn expire_deadlines() {
    let (table, woken) = &*TABLE;
    table.lock().unwrap().expired = true;
    woken.notify_all();
}
