//! Linux futexes: sleep while a 32-bit word holds a value, wake sleepers on
//! it. Every call takes the word as `&AtomicU32`, so the address is live and
//! aligned for the whole call and the calls themselves are safe.

use core::sync::atomic::AtomicU32;

use super::clock::DeadlineClock;

/// Which waiters share a futex word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// Only this process's threads (`FUTEX_PRIVATE_FLAG`: the kernel keys
    /// the word by address alone, which is cheaper).
    Private,
    /// Threads of any process that maps the word.
    Shared,
}

impl Sharing {
    #[inline]
    fn op(self, op: libc::c_int) -> libc::c_int {
        match self {
            Sharing::Private => op | libc::FUTEX_PRIVATE_FLAG,
            Sharing::Shared => op,
        }
    }
}

/// How a wait ended. Every caller re-checks its condition: a wait may end
/// without a wake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitResult {
    /// Woken, or spuriously returned.
    Woken,
    /// The word did not hold the expected value (`EAGAIN`).
    Mismatch,
    /// A signal interrupted the sleep (`EINTR`).
    Interrupted,
    /// The deadline passed (`ETIMEDOUT`).
    TimedOut,
    /// Any other error, as its errno.
    Failed(i32),
}

impl WaitResult {
    #[inline]
    fn of(rc: libc::c_long) -> Self {
        if rc == 0 {
            return Self::Woken;
        }
        match std::io::Error::last_os_error().raw_os_error().unwrap_or(0) {
            libc::EAGAIN => Self::Mismatch,
            libc::EINTR => Self::Interrupted,
            libc::ETIMEDOUT => Self::TimedOut,
            errno => Self::Failed(errno),
        }
    }
}

/// Wakes every waiter when passed to [`wake`].
pub const WAKE_ALL: u32 = i32::MAX as u32;

/// Sleeps while `*word == expected`, without a time limit (`FUTEX_WAIT`).
#[cold]
pub fn wait(word: &AtomicU32, expected: u32, sharing: Sharing) -> WaitResult {
    // SAFETY: FUTEX_WAIT reads the aligned u32 behind `word`, which the
    // borrow keeps live for the call; a null timeout means no limit.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            sharing.op(libc::FUTEX_WAIT),
            expected,
            core::ptr::null::<libc::timespec>(),
        )
    };
    WaitResult::of(rc)
}

/// Sleeps while `*word == expected`, at most `timeout_ns` (`FUTEX_WAIT`,
/// whose timeout is relative, on the monotonic clock).
#[cold]
pub fn wait_for(word: &AtomicU32, expected: u32, timeout_ns: u64, sharing: Sharing) -> WaitResult {
    let timeout = super::clock::timespec_of_ns(timeout_ns);
    // SAFETY: as in `wait`, plus `timeout`, a valid timespec on this stack
    // for the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            sharing.op(libc::FUTEX_WAIT),
            expected,
            &timeout as *const libc::timespec,
        )
    };
    WaitResult::of(rc)
}

/// Sleeps while `*word == expected`, until the absolute `deadline` on
/// `clock` (`FUTEX_WAIT_BITSET`, whose timeout is absolute, unlike
/// `FUTEX_WAIT`'s). A deadline before the epoch has passed.
#[cold]
pub fn wait_until(
    word: &AtomicU32,
    expected: u32,
    clock: DeadlineClock,
    deadline: &libc::timespec,
    sharing: Sharing,
) -> WaitResult {
    let mut op = sharing.op(libc::FUTEX_WAIT_BITSET);
    if clock == DeadlineClock::Realtime {
        op |= libc::FUTEX_CLOCK_REALTIME;
    }
    // The kernel rejects negative times (EINVAL); the epoch has passed too.
    let at = if deadline.tv_sec < 0 {
        libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        }
    } else {
        *deadline
    };
    // SAFETY: as in `wait`, plus `at`, a valid timespec on this stack for
    // the call; the bitset matches every waker (FUTEX_BITSET_MATCH_ANY).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            expected,
            &at as *const libc::timespec,
            core::ptr::null::<u32>(),
            u32::MAX,
        )
    };
    WaitResult::of(rc)
}

/// Wakes at most `n` threads sleeping on `word` ([`WAKE_ALL`] for all);
/// returns how many woke.
#[cold]
pub fn wake(word: &AtomicU32, n: u32, sharing: Sharing) -> u32 {
    wake_addr(word, n, sharing)
}

/// [`wake`] by address, for a releaser that must not touch the lock's
/// memory after the release: the program may free it as soon as the lock is
/// free, and FUTEX_WAKE only hashes the address (a freed one wakes nobody).
#[cold]
// The address goes to the kernel as a key and is never dereferenced.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn wake_addr(word: *const AtomicU32, n: u32, sharing: Sharing) -> u32 {
    let n = n.min(WAKE_ALL);
    // SAFETY: FUTEX_WAKE reads no memory at the address; it is a key.
    let rc = unsafe { libc::syscall(libc::SYS_futex, word, sharing.op(libc::FUTEX_WAKE), n) };
    u32::try_from(rc).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    #[test]
    fn a_wait_on_a_changed_word_returns_at_once() {
        let w = AtomicU32::new(1);
        assert_eq!(wait(&w, 0, Sharing::Private), WaitResult::Mismatch);
    }

    #[test]
    fn a_passed_deadline_times_out_on_both_clocks() {
        let w = AtomicU32::new(0);
        for clock in [DeadlineClock::Realtime, DeadlineClock::Monotonic] {
            let past = libc::timespec {
                tv_sec: -5,
                tv_nsec: 0,
            };
            let r = wait_until(&w, 0, clock, &past, Sharing::Private);
            assert_eq!(r, WaitResult::TimedOut, "{clock:?}");
            let r = wait_until(&w, 0, clock, &clock.now(), Sharing::Shared);
            assert_eq!(r, WaitResult::TimedOut, "{clock:?}");
        }
    }

    #[test]
    fn wake_wakes_a_sleeper() {
        let w = Arc::new(AtomicU32::new(0));
        let sleeper = {
            let w = w.clone();
            std::thread::spawn(move || {
                while w.load(Ordering::Acquire) == 0 {
                    wait(&w, 0, Sharing::Private);
                }
            })
        };
        w.store(1, Ordering::Release);
        while !sleeper.is_finished() {
            wake(&w, WAKE_ALL, Sharing::Private);
            std::thread::yield_now();
        }
        sleeper.join().unwrap();
        assert_eq!(wake(&w, 1, Sharing::Private), 0);
    }
}
