//! The reader-writer lock on Linux futexes.

use crate::sync::futex::{self, Sharing, WaitResult, WAKE_ALL};
use crate::sync::{const_fn_unless_loom, spin_loop, AtomicI32, AtomicU32, Ordering};
use crate::sys::clock::DeadlineClock;
use crate::RawLock;

/// Readers holding the lock, in the low 30 bits of the state.
const MASK: u32 = (1 << 30) - 1;
const READ_LOCKED: u32 = 1;
/// The count's all-ones value: a writer holds the lock.
const WRITE_LOCKED: u32 = MASK;
const MAX_READERS: u32 = MASK - 1;
/// Readers may sleep on the state word.
const READERS_WAITING: u32 = 1 << 30;
/// Writers may sleep on `writer_wake`.
const WRITERS_WAITING: u32 = 1 << 31;
const WAITING: u32 = READERS_WAITING | WRITERS_WAITING;

/// The writer [`RawLock`] users record: no thread's id.
const ANONYMOUS_WRITER: i32 = -1;

/// State probes before a waiter sleeps (the Rust standard library's).
const SPIN_LIMIT: u32 = if cfg!(loom) { 0 } else { 100 };

/// A deadline on one of the clocks POSIX timed locks take.
pub type RwDeadline = (DeadlineClock, libc::timespec);

/// Which side goes first, with glibc's `pthread_rwlockattr_setkind_np`
/// values; each behaves as glibc's kind of that value does
/// (`nptl/pthread_rwlock_common.c`: "A thread is allowed to acquire a read
/// lock recursively [...] unless the kind of the rwlock is set to
/// PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP"). glibc's default is
/// `Reader`, not writer preference: programs written against glibc re-take
/// read locks while writers wait, and would deadlock on anything stricter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum RwPreference {
    /// `PTHREAD_RWLOCK_PREFER_READER_NP`, glibc's default: a reader enters
    /// whenever no writer holds the lock, even while writers wait, so a
    /// thread may take a read lock it already holds; a released write lock
    /// goes to the readers that wait.
    Reader = 0,
    /// `PTHREAD_RWLOCK_PREFER_WRITER_NP`: readers enter as with `Reader`
    /// (glibc keeps recursive reads safe), but a released lock goes to a
    /// waiting writer first.
    Writer = 1,
    /// `PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`: as `Writer`, and a
    /// waiting writer keeps new readers out, so a thread that re-takes its
    /// read lock while a writer waits deadlocks, as in glibc.
    WriterNonrecursive = 2,
}

impl RwPreference {
    /// The preference of glibc's kind `kind`; glibc accepts no other
    /// values, anything else reads as its default.
    #[inline]
    pub const fn from_kind(kind: u32) -> Self {
        match kind {
            1 => Self::Writer,
            2 => Self::WriterNonrecursive,
            _ => Self::Reader,
        }
    }
}

/// Why an acquisition or release did not happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwError {
    /// A try found the lock held against the caller (`EBUSY`).
    Busy,
    /// The caller holds the write lock (`EDEADLK`).
    Deadlock,
    /// The read count is at its maximum (`EAGAIN`).
    TooManyReaders,
    /// The deadline passed first (`ETIMEDOUT`).
    TimedOut,
    /// An unlock by a thread that holds neither side (`EPERM`).
    NotHeld,
}

impl RwError {
    /// The POSIX error number.
    pub const fn errno(self) -> i32 {
        match self {
            Self::Busy => libc::EBUSY,
            Self::Deadlock => libc::EDEADLK,
            Self::TooManyReaders => libc::EAGAIN,
            Self::TimedOut => libc::ETIMEDOUT,
            Self::NotHeld => libc::EPERM,
        }
    }
}

/// Reader-writer lock after the Rust standard library's futex `RwLock`
/// (`library/std/src/sys/sync/rwlock/futex.rs`, Mara Bos, 2022): one state
/// word holds the read count (all ones: write-locked) and two waiting
/// bits; readers sleep on the state, writers on `writer_wake`, which every
/// writer wake-up bumps. Changed from it: glibc's three preferences, the
/// writer's thread id (`EDEADLK`), and timed waits, whose writers give up
/// their waiting bit on timeout as glibc's do.
///
/// Callers name themselves by a non-zero thread id (`me`); the write
/// holder's stays in the lock, so that it gets `EDEADLK` as in glibc.
///
/// 16 bytes of 4-byte words; all zero is an unlocked `Reader` lock. The
/// preference is the last word so that a `pthread_rwlock_t` can put it on
/// glibc's `__flags`, where glibc's static initialisers write the kind.
#[derive(Debug)]
#[repr(C)]
pub struct RwLock {
    state: AtomicU32,
    writer_wake: AtomicU32,
    /// Thread id of the write holder; 0 when none.
    writer: AtomicI32,
    /// An [`RwPreference`]; fixed from construction on.
    kind: u32,
}

impl RwLock {
    /// Where the preference word lies in the lock.
    pub const KIND_OFFSET: usize = core::mem::offset_of!(RwLock, kind);

    const_fn_unless_loom! {
        /// An unlocked lock.
        pub fn new(preference: RwPreference) -> Self {
            Self {
                state: AtomicU32::new(0),
                writer_wake: AtomicU32::new(0),
                writer: AtomicI32::new(0),
                kind: preference as u32,
            }
        }
    }

    /// The lock's preference.
    #[inline]
    pub fn preference(&self) -> RwPreference {
        RwPreference::from_kind(self.kind)
    }

    /// Whether thread `me` holds the write lock.
    #[inline]
    pub fn is_writer(&self, me: i32) -> bool {
        // Relaxed: only `me` stores `me`, and it reads its own stores.
        self.writer.load(Ordering::Relaxed) == me
    }

    #[inline]
    fn read_lockable(&self, s: u32) -> bool {
        s & MASK < MAX_READERS
            && (s & WAITING == 0 || self.preference() != RwPreference::WriterNonrecursive)
    }

    /// `pthread_rwlock_tryrdlock`: a read lock if that needs no waiting.
    #[inline]
    pub fn try_read(&self) -> Result<(), RwError> {
        let mut s = self.state.load(Ordering::Relaxed); // Relaxed: the CAS acquires.
        loop {
            if !self.read_lockable(s) {
                return Err(if s & MASK == MAX_READERS {
                    RwError::TooManyReaders
                } else {
                    RwError::Busy
                });
            }
            // Acquire: the last writer's critical section happens before ours.
            match self.state.compare_exchange_weak(
                s,
                s + READ_LOCKED,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(now) => s = now,
            }
        }
    }

    /// `pthread_rwlock_trywrlock` by thread `me`: the write lock if it is free.
    #[inline]
    pub fn try_write(&self, me: i32) -> bool {
        let mut s = self.state.load(Ordering::Relaxed); // Relaxed: the CAS acquires.
        while s & MASK == 0 {
            // Acquire: every earlier critical section happens before ours.
            match self.state.compare_exchange_weak(
                s,
                s | WRITE_LOCKED,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    self.writer.store(me, Ordering::Relaxed); // Relaxed: see `is_writer`.
                    return true;
                }
                Err(now) => s = now,
            }
        }
        false
    }

    /// `pthread_rwlock_rdlock` by thread `me`: a read lock, waiting until
    /// `deadline` if one is given.
    #[inline]
    pub fn read(&self, me: i32, deadline: Option<RwDeadline>) -> Result<(), RwError> {
        match self.try_read() {
            // Only a busy lock can be the caller's: no check before.
            Err(RwError::Busy) if self.is_writer(me) => Err(RwError::Deadlock),
            Err(RwError::Busy) => self.read_contended(deadline),
            done => done,
        }
    }

    /// `pthread_rwlock_wrlock` by thread `me`: the write lock, waiting until
    /// `deadline` if one is given.
    #[inline]
    pub fn write(&self, me: i32, deadline: Option<RwDeadline>) -> Result<(), RwError> {
        if self.try_write(me) {
            Ok(())
        } else if self.is_writer(me) {
            Err(RwError::Deadlock)
        } else {
            self.write_contended(me, deadline)
        }
    }

    /// The waiting part of [`Self::read`], after a failed [`Self::try_read`].
    #[cold]
    pub fn read_contended(&self, deadline: Option<RwDeadline>) -> Result<(), RwError> {
        let mut s = self.spin(|s| self.read_lockable(s) || s & WAITING != 0);
        loop {
            if self.read_lockable(s) {
                // Acquire: as in `try_read`.
                match self.state.compare_exchange_weak(
                    s,
                    s + READ_LOCKED,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return Ok(()),
                    Err(now) => s = now,
                }
                continue;
            }
            if s & MASK == MAX_READERS {
                return Err(RwError::TooManyReaders);
            }
            if s & READERS_WAITING == 0 {
                // Relaxed: a flag for unlockers; the futex compares the word.
                if let Err(now) = self.state.compare_exchange(
                    s,
                    s | READERS_WAITING,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    s = now;
                    continue;
                }
            }
            if sleep(&self.state, s | READERS_WAITING, deadline) == WaitResult::TimedOut {
                // Unlockers wake every reader: none was counted on to wake others.
                return Err(RwError::TimedOut);
            }
            s = self.spin(|s| self.read_lockable(s) || s & WAITING != 0);
        }
    }

    /// The waiting part of [`Self::write`], after a failed [`Self::try_write`].
    #[cold]
    pub fn write_contended(&self, me: i32, deadline: Option<RwDeadline>) -> Result<(), RwError> {
        let mut s = self.spin(|s| s & MASK == 0 || s & WRITERS_WAITING != 0);
        // Once asleep, a writer keeps the bit set when it takes the lock:
        // the wake-up that cleared it may have left other writers asleep.
        let mut others = 0;
        loop {
            if s & MASK == 0 {
                // Acquire: as in `try_write`.
                match self.state.compare_exchange_weak(
                    s,
                    s | WRITE_LOCKED | others,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        self.writer.store(me, Ordering::Relaxed); // Relaxed: see `is_writer`.
                        return Ok(());
                    }
                    Err(now) => s = now,
                }
                continue;
            }
            if s & WRITERS_WAITING == 0 {
                // Relaxed: a flag for unlockers; the futex compares `writer_wake`.
                if let Err(now) = self.state.compare_exchange(
                    s,
                    s | WRITERS_WAITING,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    s = now;
                    continue;
                }
            }
            others = WRITERS_WAITING;
            // Acquire: pairs with the bump in `wake_writer`; a writer that
            // reads the new count sees the state its waker left.
            let seq = self.writer_wake.load(Ordering::Acquire);
            s = self.state.load(Ordering::Relaxed); // Relaxed: ordered by the Acquire above.
            if s & MASK == 0 || s & WRITERS_WAITING == 0 {
                continue;
            }
            if sleep(&self.writer_wake, seq, deadline) == WaitResult::TimedOut {
                self.writer_gave_up();
                return Err(RwError::TimedOut);
            }
            s = self.spin(|s| s & MASK == 0 || s & WRITERS_WAITING != 0);
        }
    }

    /// The state once `done` holds or after [`SPIN_LIMIT`] probes.
    #[inline]
    fn spin(&self, done: impl Fn(u32) -> bool) -> u32 {
        let mut spins = SPIN_LIMIT;
        loop {
            let s = self.state.load(Ordering::Relaxed); // Relaxed: a probe; CASes acquire.
            if done(s) || spins == 0 {
                return s;
            }
            spin_loop();
            spins -= 1;
        }
    }

    /// Releases a read lock.
    ///
    /// # Safety
    /// The calling thread holds a read lock of this lock.
    #[inline]
    pub unsafe fn read_unlock(&self) {
        // Release: our reads happen before the next writer's critical section.
        let s = self.state.fetch_sub(READ_LOCKED, Ordering::Release) - READ_LOCKED;
        if s & MASK == 0 && s & WAITING != 0 {
            self.wake_waiters(s);
        }
    }

    /// Releases the write lock.
    ///
    /// # Safety
    /// The calling thread holds the write lock.
    #[inline]
    pub unsafe fn write_unlock(&self) {
        self.writer.store(0, Ordering::Relaxed); // Relaxed: see `is_writer`.
                                                 // Release: our critical section happens before the next holder's.
        let s = self.state.fetch_sub(WRITE_LOCKED, Ordering::Release) - WRITE_LOCKED;
        if s & WAITING != 0 {
            self.wake_waiters(s);
        }
    }

    /// `pthread_rwlock_unlock` by the calling thread, whose id `me` gives
    /// (asked only of a write-locked lock): the write lock or one read
    /// lock, whichever the lock holds; `NotHeld` where it is free or
    /// another thread's write lock (a best-effort check; glibc makes none).
    ///
    /// # Safety
    /// The calling thread holds the lock, for reading or writing; the
    /// check above cannot see a read lock that is another thread's.
    #[inline]
    pub unsafe fn release(&self, me: impl FnOnce() -> i32) -> Result<(), RwError> {
        // Relaxed: the caller's own acquisition fixed what this reads:
        // write-locked while it writes, some readers while it reads.
        match self.state.load(Ordering::Relaxed) & MASK {
            0 => Err(RwError::NotHeld),
            WRITE_LOCKED if !self.is_writer(me()) => Err(RwError::NotHeld),
            WRITE_LOCKED => {
                // SAFETY: the caller holds the write lock (checked above).
                unsafe { self.write_unlock() };
                Ok(())
            }
            _ => {
                // SAFETY: read-locked, so the caller holds a read lock.
                unsafe { self.read_unlock() };
                Ok(())
            }
        }
    }

    /// Wakes the waiters of the lock just released (`s`: its state then),
    /// in the order of its preference. Competing wakers agree by CAS: the
    /// one that clears a waiting bit wakes its sleepers, and a lock taken
    /// meanwhile leaves the bits to its holder's release.
    #[cold]
    fn wake_waiters(&self, mut s: u32) {
        // Relaxed CASes: waking orders nothing; the futexes do.
        if self.preference() == RwPreference::Reader {
            while s & MASK == 0 {
                if s & READERS_WAITING != 0 {
                    let rest = s & !READERS_WAITING;
                    match self
                        .state
                        .compare_exchange(s, rest, Ordering::Relaxed, Ordering::Relaxed)
                    {
                        Ok(_) => s = rest,
                        Err(now) => {
                            s = now;
                            continue;
                        }
                    }
                    // Woken readers take the lock; the last to leave
                    // wakes the writers.
                    if futex::wake(&self.state, WAKE_ALL, Sharing::Private) > 0 {
                        return;
                    }
                }
                if s != WRITERS_WAITING {
                    return;
                }
                match self
                    .state
                    .compare_exchange(s, 0, Ordering::Relaxed, Ordering::Relaxed)
                {
                    Ok(_) => {
                        self.wake_writer();
                        return;
                    }
                    Err(now) => s = now,
                }
            }
            return;
        }
        // Writers first: the standard library's `wake_writer_or_readers`.
        if s == WRITERS_WAITING {
            match self
                .state
                .compare_exchange(s, 0, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.wake_writer();
                    return;
                }
                Err(now) => s = now,
            }
        }
        if s == WAITING {
            // The woken writer wakes the readers when it releases.
            if self
                .state
                .compare_exchange(s, READERS_WAITING, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
                || self.wake_writer()
            {
                return;
            }
            s = READERS_WAITING;
        }
        if s == READERS_WAITING
            && self
                .state
                .compare_exchange(s, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            futex::wake(&self.state, WAKE_ALL, Sharing::Private);
        }
    }

    /// Wakes one sleeping writer; whether one was asleep to wake.
    #[cold]
    fn wake_writer(&self) -> bool {
        // Release: the state this waker left happens before a writer that
        // reads the new count (the Acquire in `write_contended`).
        self.writer_wake.fetch_add(1, Ordering::Release);
        futex::wake(&self.writer_wake, 1, Sharing::Private) > 0
    }

    /// A timed writer leaves without the lock. It may have been the only
    /// writer behind `WRITERS_WAITING`, which with `WriterNonrecursive`
    /// keeps new readers out, and a reader wake-up may have been left to
    /// it: clear both bits and wake every sleeper to look again (the
    /// others set their bits anew), as glibc's timed-out writer gives up
    /// its claim and wakes the readers it held back.
    #[cold]
    fn writer_gave_up(&self) {
        // Relaxed: clearing hints; the bump below publishes the clear.
        let s = self.state.fetch_and(!WAITING, Ordering::Relaxed);
        if s & WRITERS_WAITING != 0 {
            // Release: a writer that reads the new count sees the cleared bit.
            self.writer_wake.fetch_add(1, Ordering::Release);
            futex::wake(&self.writer_wake, WAKE_ALL, Sharing::Private);
        }
        if s & READERS_WAITING != 0 {
            futex::wake(&self.state, WAKE_ALL, Sharing::Private);
        }
    }
}

/// Sleeps while `*word == expected`, until `deadline` if one is given.
#[inline]
fn sleep(word: &AtomicU32, expected: u32, deadline: Option<RwDeadline>) -> WaitResult {
    match deadline {
        None => futex::wait(word, expected, Sharing::Private),
        Some((clock, at)) => futex::wait_until(word, expected, clock, &at, Sharing::Private),
    }
}

impl Default for RwLock {
    fn default() -> Self {
        Self::new(RwPreference::Reader)
    }
}

/// The write side, as a mutex: what the generic harness and `Timed` use.
/// Its holder is recorded as no thread, so `EDEADLK` checks never match it.
impl RawLock for RwLock {
    const NAME: &'static str = "rwlock";

    #[inline]
    fn lock(&self) {
        if !self.try_write(ANONYMOUS_WRITER) {
            let waited = self.write_contended(ANONYMOUS_WRITER, None);
            debug_assert!(waited.is_ok(), "an untimed wait cannot fail");
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.try_write(ANONYMOUS_WRITER)
    }

    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: the caller holds the lock, i.e. its write side.
        unsafe { self.write_unlock() }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.state.load(Ordering::Relaxed) & MASK != 0 // Relaxed: a snapshot, no data guarded.
    }
}
