//! The reader-writer lock's POSIX contracts with real threads and futexes:
//! shared reading, exclusion of writers, try and timed acquisition,
//! `EDEADLK`, and glibc's three preferences. The generic mutex harness
//! covers its write side (tests/harness.rs); loom its interleavings.
#![cfg(target_os = "linux")]

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use corral_locks::sys::clock::DeadlineClock;
use corral_locks::{RwDeadline, RwError, RwLock, RwPreference};

const PREFERENCES: [RwPreference; 3] = [
    RwPreference::Reader,
    RwPreference::Writer,
    RwPreference::WriterNonrecursive,
];

fn tid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// `ms` milliseconds from now on the monotonic clock.
fn in_ms(ms: u64) -> Option<RwDeadline> {
    let mut at = DeadlineClock::Monotonic.now();
    let ns = at.tv_nsec as u64 + ms * 1_000_000;
    at.tv_sec += (ns / 1_000_000_000) as libc::time_t;
    at.tv_nsec = (ns % 1_000_000_000) as libc::c_long;
    Some((DeadlineClock::Monotonic, at))
}

/// Waits until thread `tid` sleeps in the kernel (state S in /proc).
fn until_asleep(tid: i32) {
    let path = format!("/proc/self/task/{tid}/stat");
    let start = Instant::now();
    loop {
        let stat = std::fs::read_to_string(&path).unwrap();
        // The state follows the command name's closing parenthesis.
        let state = stat.rsplit_once(") ").unwrap().1.as_bytes()[0];
        if state == b'S' {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{tid} never slept"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// Ends the process if `f` does not return in time: a lost wake-up hangs.
fn with_watchdog(what: &'static str, f: impl FnOnce()) {
    let (done, watchdog) = mpsc::channel::<()>();
    let guard = thread::spawn(move || {
        if watchdog.recv_timeout(Duration::from_secs(120)).is_err() {
            eprintln!("{what} did not finish; lost wake-up?");
            std::process::abort();
        }
    });
    f();
    done.send(()).unwrap();
    guard.join().unwrap();
}

#[test]
fn all_zero_bytes_are_an_unlocked_reader_preferring_lock() {
    let lock = RwLock::default();
    assert_eq!(lock.preference(), RwPreference::Reader);
    // SAFETY: RwLock is plain atomics and a u32; zero is a valid value of each.
    let zeroed: RwLock = unsafe { core::mem::zeroed() };
    assert_eq!(zeroed.preference(), RwPreference::Reader);
    assert!(zeroed.try_write(tid()));
    assert_eq!(RwPreference::from_kind(2), RwPreference::WriterNonrecursive);
    assert_eq!(RwPreference::from_kind(1), RwPreference::Writer);
    assert_eq!(RwPreference::from_kind(7), RwPreference::Reader);
}

#[test]
fn try_timed_and_deadlock_contracts() {
    for p in PREFERENCES {
        let lock = RwLock::new(p);
        let me = tid();
        assert_eq!(lock.write(me, None), Ok(()));
        assert_eq!(lock.write(me, None), Err(RwError::Deadlock), "{p:?}");
        assert_eq!(lock.read(me, in_ms(10)), Err(RwError::Deadlock), "{p:?}");
        // Try operations by the holder report busy, as glibc's do.
        assert_eq!(lock.try_read(), Err(RwError::Busy));
        assert!(!lock.try_write(me));
        thread::scope(|s| {
            s.spawn(|| {
                let other = tid();
                assert_eq!(lock.try_read(), Err(RwError::Busy));
                assert!(!lock.try_write(other));
                let start = Instant::now();
                assert_eq!(lock.read(other, in_ms(30)), Err(RwError::TimedOut));
                assert_eq!(lock.write(other, in_ms(30)), Err(RwError::TimedOut));
                assert!(start.elapsed() >= Duration::from_millis(60));
                // SAFETY: this thread holds nothing: the check must say so.
                assert_eq!(unsafe { lock.release(|| other) }, Err(RwError::NotHeld));
            });
        });
        // SAFETY: write-locked above on this thread.
        assert_eq!(unsafe { lock.release(|| me) }, Ok(()));
        // SAFETY: nothing held now.
        assert_eq!(unsafe { lock.release(|| me) }, Err(RwError::NotHeld));

        // Readers share; a writer cannot get in.
        assert_eq!(lock.read(me, None), Ok(()));
        assert_eq!(lock.try_read(), Ok(()));
        thread::scope(|s| {
            s.spawn(|| {
                let other = tid();
                assert_eq!(lock.read(other, in_ms(10)), Ok(()));
                // SAFETY: read-locked just above on this thread.
                assert_eq!(unsafe { lock.release(|| other) }, Ok(()));
                assert!(!lock.try_write(other));
                assert_eq!(lock.write(other, in_ms(20)), Err(RwError::TimedOut));
            });
        });
        for _ in 0..2 {
            // SAFETY: this thread holds two read locks.
            assert_eq!(unsafe { lock.release(|| me) }, Ok(()));
        }
        assert!(lock.try_write(me));
        // SAFETY: write-locked just above.
        unsafe { lock.write_unlock() };
        // A passed deadline still takes a free lock.
        let past = Some((
            DeadlineClock::Realtime,
            libc::timespec {
                tv_sec: -1,
                tv_nsec: 0,
            },
        ));
        assert_eq!(lock.write(me, past), Ok(()));
        // SAFETY: write-locked just above.
        unsafe { lock.write_unlock() };
    }
}

/// A reader holds the lock and a writer waits: who else may read.
fn while_a_writer_waits(p: RwPreference) {
    let lock = RwLock::new(p);
    let me = tid();
    lock.read(me, None).unwrap();
    let order = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    thread::scope(|s| {
        let writer = s.spawn(|| {
            tx.send(tid()).unwrap();
            lock.write(tid(), None).unwrap();
            let at = order.fetch_add(1, Ordering::SeqCst);
            thread::sleep(Duration::from_millis(20));
            // SAFETY: write-locked above on this thread.
            unsafe { lock.write_unlock() };
            at
        });
        until_asleep(rx.recv().unwrap());
        if p == RwPreference::WriterNonrecursive {
            // New readers wait behind the writer, even with a deadline.
            assert_eq!(lock.try_read(), Err(RwError::Busy));
            let reader = s.spawn(|| {
                let other = tid();
                assert_eq!(lock.read(other, in_ms(30)), Err(RwError::TimedOut));
                lock.read(other, None).unwrap();
                let at = order.fetch_add(1, Ordering::SeqCst);
                // SAFETY: read-locked above on this thread.
                unsafe { lock.read_unlock() };
                at
            });
            thread::sleep(Duration::from_millis(60));
            // SAFETY: read-locked above on this thread.
            unsafe { lock.read_unlock() };
            assert_eq!(writer.join().unwrap(), 0, "the writer goes first");
            assert_eq!(reader.join().unwrap(), 1);
        } else {
            // Recursive and new readers get in while the writer waits.
            assert_eq!(lock.read(me, None), Ok(()), "{p:?}");
            s.spawn(|| {
                assert_eq!(lock.try_read(), Ok(()));
                // SAFETY: read-locked just above on this thread.
                unsafe { lock.read_unlock() };
            })
            .join()
            .unwrap();
            for _ in 0..2 {
                // SAFETY: this thread holds two read locks.
                unsafe { lock.read_unlock() };
            }
            assert_eq!(writer.join().unwrap(), 0);
        }
    });
    assert!(lock.try_write(me));
}

#[test]
fn preferences_while_a_writer_waits() {
    for p in PREFERENCES {
        with_watchdog("preference", || while_a_writer_waits(p));
    }
}

/// A released write lock goes to the readers that wait (`Reader`) or to
/// a writer that waits (the others), as in glibc.
#[test]
fn who_gets_a_released_write_lock() {
    for p in PREFERENCES {
        let lock = RwLock::new(p);
        let first = AtomicUsize::new(usize::MAX);
        with_watchdog("hand-over", || {
            lock.write(tid(), None).unwrap();
            let (tx, rx) = mpsc::channel();
            thread::scope(|s| {
                let reader = s.spawn(|| {
                    tx.send(tid()).unwrap();
                    lock.read(tid(), None).unwrap();
                    let _ =
                        first.compare_exchange(usize::MAX, 0, Ordering::SeqCst, Ordering::SeqCst);
                    // SAFETY: read-locked above on this thread.
                    unsafe { lock.read_unlock() };
                });
                until_asleep(rx.recv().unwrap());
                let writer = s.spawn(|| {
                    tx.send(tid()).unwrap();
                    lock.write(tid(), None).unwrap();
                    let _ =
                        first.compare_exchange(usize::MAX, 1, Ordering::SeqCst, Ordering::SeqCst);
                    // SAFETY: write-locked above on this thread.
                    unsafe { lock.write_unlock() };
                });
                until_asleep(rx.recv().unwrap());
                // SAFETY: write-locked above on this thread.
                unsafe { lock.write_unlock() };
                reader.join().unwrap();
                writer.join().unwrap();
            });
        });
        let expected = usize::from(p != RwPreference::Reader);
        assert_eq!(first.load(Ordering::SeqCst), expected, "{p:?}");
    }
}

/// Two counters a writer keeps equal; readers check them.
struct Pair {
    lock: RwLock,
    a: UnsafeCell<u64>,
    b: UnsafeCell<u64>,
    writing: AtomicBool,
}

// SAFETY: `a` and `b` are written under the write lock and read under a
// read lock.
unsafe impl Sync for Pair {}

/// Readers, writers and timed ones of both mixed; every write lands, no
/// reader sees a half-done write, and no waiter is stranded.
#[test]
fn readers_and_writers_with_timeouts() {
    for p in PREFERENCES {
        let pair = Pair {
            lock: RwLock::new(p),
            a: UnsafeCell::new(0),
            b: UnsafeCell::new(0),
            writing: AtomicBool::new(false),
        };
        let writes = AtomicUsize::new(0);
        let start = Barrier::new(6);
        with_watchdog("mixed", || {
            thread::scope(|s| {
                for t in 0..6 {
                    let (pair, writes, start) = (&pair, &writes, &start);
                    s.spawn(move || {
                        let me = tid();
                        start.wait();
                        for i in 0..400 {
                            let deadline = if (i + t) % 3 == 0 { in_ms(1) } else { None };
                            if t % 3 == 0 {
                                if pair.lock.write(me, deadline).is_err() {
                                    continue;
                                }
                                assert!(!pair.writing.swap(true, Ordering::Relaxed));
                                // SAFETY: under the write lock.
                                unsafe { *pair.a.get() += 1 };
                                thread::yield_now();
                                // SAFETY: under the write lock.
                                unsafe { *pair.b.get() += 1 };
                                pair.writing.store(false, Ordering::Relaxed);
                                writes.fetch_add(1, Ordering::Relaxed);
                                // SAFETY: write-locked above on this thread.
                                unsafe { pair.lock.write_unlock() };
                            } else {
                                if pair.lock.read(me, deadline).is_err() {
                                    continue;
                                }
                                assert!(!pair.writing.load(Ordering::Relaxed));
                                // SAFETY: under a read lock.
                                let (a, b) = unsafe { (*pair.a.get(), *pair.b.get()) };
                                assert_eq!(a, b, "{p:?}: a torn write");
                                // SAFETY: read-locked above on this thread.
                                unsafe { pair.lock.read_unlock() };
                            }
                        }
                    });
                }
            });
        });
        let n = writes.load(Ordering::Relaxed) as u64;
        // SAFETY: every thread has been joined.
        assert_eq!(unsafe { (*pair.a.get(), *pair.b.get()) }, (n, n));
        assert!(n > 0);
        assert!(pair.lock.try_write(tid()), "{p:?}: left locked");
    }
}

/// With `WriterNonrecursive` a waiting writer keeps readers out; once it
/// timed out, a new reader gets in although the first still reads.
#[test]
fn a_timed_out_writer_lets_readers_in() {
    let lock = RwLock::new(RwPreference::WriterNonrecursive);
    lock.read(tid(), None).unwrap();
    with_watchdog("writer timeout", || {
        thread::scope(|s| {
            s.spawn(|| assert_eq!(lock.write(tid(), in_ms(50)), Err(RwError::TimedOut)))
                .join()
                .unwrap();
            s.spawn(|| {
                assert_eq!(lock.read(tid(), None), Ok(()));
                // SAFETY: read-locked just above on this thread.
                unsafe { lock.read_unlock() };
            })
            .join()
            .unwrap();
        });
    });
    // SAFETY: read-locked above on this thread.
    unsafe { lock.read_unlock() };
}
