//! The absolute deadlines of timed waits (`pthread_mutex_timedlock`,
//! `pthread_mutex_clocklock`, `pthread_cond_timedwait`,
//! `pthread_cond_clockwait`): checked as POSIX asks, then compared with
//! their clock.

use core::ffi::c_int;

use corral_locks::sys::clock::DeadlineClock;

/// An absolute time on one of the two clocks POSIX deadlines may use.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline {
    pub(crate) clock: DeadlineClock,
    pub(crate) at: libc::timespec,
}

impl Deadline {
    /// Reads the deadline `abstime` on clock `clock`: `EINVAL` for another
    /// clock (before `abstime` is read) or a nanosecond field outside
    /// `0..1e9`.
    ///
    /// # Safety
    /// `abstime` points to a valid timespec where `clock` is valid.
    pub(crate) unsafe fn read(
        clock: libc::clockid_t,
        abstime: *const libc::timespec,
    ) -> Result<Self, c_int> {
        let clock = DeadlineClock::from_id(clock).ok_or(libc::EINVAL)?;
        // SAFETY: the function's contract.
        let at = unsafe { *abstime };
        if !(0..1_000_000_000).contains(&at.tv_nsec) {
            return Err(libc::EINVAL);
        }
        Ok(Self { clock, at })
    }

    /// The earlier of this deadline and `slice_ns` from now on its clock:
    /// where a long wait stops to look for a cancellation request.
    pub(crate) fn within(&self, slice_ns: u64) -> libc::timespec {
        let soon = after(self.clock.now(), slice_ns);
        if (soon.tv_sec, soon.tv_nsec) < (self.at.tv_sec, self.at.tv_nsec) {
            soon
        } else {
            self.at
        }
    }

    /// The deadline `slice_ns` from now on `clock`.
    pub(crate) fn in_ns(clock: DeadlineClock, slice_ns: u64) -> Self {
        Deadline {
            clock,
            at: after(clock.now(), slice_ns),
        }
    }

    /// Whether the deadline has passed.
    pub(crate) fn passed(&self) -> bool {
        let now = self.clock.now();
        (now.tv_sec, now.tv_nsec) >= (self.at.tv_sec, self.at.tv_nsec)
    }
}

/// `t` plus `ns` nanoseconds, saturating at the largest second.
fn after(t: libc::timespec, ns: u64) -> libc::timespec {
    let total = t.tv_nsec as u64 + ns % 1_000_000_000;
    libc::timespec {
        tv_sec: t
            .tv_sec
            .saturating_add((ns / 1_000_000_000 + total / 1_000_000_000) as libc::time_t),
        tv_nsec: (total % 1_000_000_000) as libc::c_long,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(tv_sec: libc::time_t, tv_nsec: libc::c_long) -> libc::timespec {
        libc::timespec { tv_sec, tv_nsec }
    }

    #[test]
    fn posix_checks_the_clock_and_the_nanoseconds() {
        let ok = at(1, 0);
        // SAFETY: `ok` is a valid timespec.
        let d = unsafe { Deadline::read(libc::CLOCK_MONOTONIC, &ok) }.unwrap();
        assert_eq!(d.clock, DeadlineClock::Monotonic);
        assert!(d.passed());
        // The clock is refused before the deadline is read.
        // SAFETY: a null deadline is never read for an invalid clock.
        let bad_clock =
            unsafe { Deadline::read(libc::CLOCK_PROCESS_CPUTIME_ID, core::ptr::null()) };
        assert_eq!(bad_clock.err(), Some(libc::EINVAL));
        for nsec in [-1, 1_000_000_000] {
            let bad = at(1, nsec);
            // SAFETY: `bad` is a valid timespec.
            let r = unsafe { Deadline::read(libc::CLOCK_REALTIME, &bad) };
            assert_eq!(r.err(), Some(libc::EINVAL));
        }
    }

    #[test]
    fn a_future_deadline_has_not_passed() {
        let mut later = DeadlineClock::Realtime.now();
        later.tv_sec += 60;
        // SAFETY: `later` is a valid timespec.
        let d = unsafe { Deadline::read(libc::CLOCK_REALTIME, &later) }.unwrap();
        assert!(!d.passed());
    }
}
