//! How often the monitor takes a round: the pace a round asks for, and the
//! rhythm of sleeps that follows from it.

use core::time::Duration;

/// The longest pause between rounds while no thread is placed: contention
/// that starts is seen within it, and from then on every tick.
pub const IDLE_TICK_MAX: Duration = Duration::from_millis(16);

/// The longest pause while nothing is placed and no waits could qualify a
/// thread: a thread whose waits could rings earlier (see
/// [`crate::monitor_thread::after_wait`]). Also every pause while the policy can
/// decide nothing ([`Pace::Dormant`]).
pub const DOZE_MAX: Duration = Duration::from_millis(256);

/// Quiet rounds (nothing placed, no heavy waits) before the monitor dozes:
/// about 200 ms of rounds backing off to [`IDLE_TICK_MAX`].
pub const DOZE_AFTER_QUIET_ROUNDS: u32 = 16;

/// How many ticks apart the rounds are while the program is contended but
/// the search has settled (or no policy searches): classification and a
/// throughput fall are still seen within a few milliseconds, and a program
/// whose threads yield often (each round reads every thread's CPU clock, a
/// system call each, and wakes the monitor) keeps its CPU.
pub const SETTLED_TICKS: u32 = 4;

/// How soon the monitor's next round is needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// No lock-intensive thread, none to place: back off to
    /// [`IDLE_TICK_MAX`] (lock waits or not).
    Idle,
    /// Contended and the SSC search under way (or a thread still to place):
    /// every tick, so that it settles fast.
    Searching,
    /// Threads placed, nothing to search: every [`SETTLED_TICKS`] ticks
    /// (the adaptation check).
    Settled,
    /// The policy can decide nothing, whatever the waits (policy lca with
    /// no core to spare: one CPU; or every thread judged yields as it
    /// locks, so none would be placed): a round every [`DOZE_MAX`] keeps
    /// the stats, and no waiting thread rings. On one CPU every round takes the
    /// program's only CPU for a moment, and rounds every few milliseconds
    /// tipped git grep into waking its threads three to four times as
    /// often (median context switches per run: about 200 under glibc,
    /// 800-900 with the rounds).
    Dormant,
}

impl Pace {
    /// The pace after a round that saw lock waits (`contended`), found
    /// threads on the SSC (`placed`) and a search or placement under way
    /// (`searching`).
    pub fn of(contended: bool, placed: bool, searching: bool) -> Pace {
        if contended && searching {
            Pace::Searching
        } else if placed {
            Pace::Settled
        } else {
            // Waits that qualify nobody (a thread that sleeps seldom, a
            // real-time one) need no frequent rounds: a longer window
            // measures the share as well, and a thread that qualifies
            // brings the rounds back to every tick.
            Pace::Idle
        }
    }

    /// Whether rounds at this pace (with `heavy` waits or not) find
    /// nothing to do: the monitor may back off, and be rung.
    pub fn is_quiet(self, heavy: bool) -> bool {
        match self {
            Pace::Idle => !heavy,
            Pace::Dormant => true,
            Pace::Searching | Pace::Settled => false,
        }
    }
}

/// How the monitor's first sleep ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// After one tick: policy ca records its samples from the first round.
    Tick,
    /// When a waiting thread's waits call for a look (see
    /// [`crate::monitor_thread::after_wait`]), or after [`IDLE_TICK_MAX`]. A
    /// program contended from its start rings within `ONSET_LOOK`; one
    /// whose waits could qualify nobody (git grep's: long but few) takes no
    /// round before then. Ticking from the start, a 16 ms git grep
    /// --threads=4 ran five or six rounds, each preempting one of its
    /// threads: 0.5 ms of its wall time.
    OnCall,
    /// After [`DOZE_MAX`], unrung ([`Pace::Dormant`] from the start).
    Dormant,
}

/// The monitor's sleeps between rounds: how long the next one is, and
/// whether a waiting thread may ring it meanwhile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rhythm {
    /// The next sleep.
    pub sleep: Duration,
    /// Whether a waiting thread may end it early (see
    /// [`crate::monitor_thread::after_wait`]).
    pub listen: bool,
    tick: Duration,
    quiet_rounds: u32,
}

impl Rhythm {
    /// The first sleep, ending as `start` says.
    pub fn new(tick: Duration, start: Start) -> Self {
        let (sleep, listen) = match start {
            Start::Tick => (tick, false),
            Start::OnCall => (IDLE_TICK_MAX.max(tick), true),
            Start::Dormant => (DOZE_MAX.max(tick), false),
        };
        Rhythm {
            sleep,
            listen,
            tick,
            quiet_rounds: 0,
        }
    }

    /// After a round of `pace` that saw `heavy` waits or not; `may_doze`
    /// (false under policy ca, whose clustering keeps the rounds at
    /// [`IDLE_TICK_MAX`]); `rung`: a waiting thread's ring ended the sleep
    /// before the round.
    ///
    /// An uncontended program costs a round every [`IDLE_TICK_MAX`], then
    /// one every [`DOZE_MAX`], not every tick: each round reads every
    /// thread's CPU clock and wakes the monitor (with many processes of few
    /// threads, stress-ng's, the wake-ups were a fifth of the CPU time).
    /// After a quiet round, dozing or not, a waiting thread whose waits
    /// could qualify it rings (within `ONSET_LOOK`); heavy waits (hand-offs
    /// that could qualify a thread) keep the rounds at [`IDLE_TICK_MAX`].
    /// It dozes only after [`DOZE_AFTER_QUIET_ROUNDS`] quiet rounds: a
    /// program contended from its start (sysbench's threads block behind
    /// its barrier, then all contend) is searched for at once.
    pub fn after_round(&mut self, pace: Pace, heavy: bool, may_doze: bool, rung: bool) {
        let quiet = pace.is_quiet(heavy);
        self.quiet_rounds = if quiet {
            self.quiet_rounds.saturating_add(1)
        } else {
            0
        };
        // After a quiet round a waiting thread may ring, unless this round
        // was its ring and found nothing (the next sleep is then a whole
        // one: a thread whose waits sit near the line rings at most every
        // other round). A ring asks for a decision: none can be made while
        // dormant.
        self.listen = quiet && !rung && pace != Pace::Dormant;
        let idle_max = if may_doze && self.quiet_rounds >= DOZE_AFTER_QUIET_ROUNDS {
            DOZE_MAX
        } else {
            IDLE_TICK_MAX
        };
        let tick = self.tick;
        // A ring that found work backs off from one tick again, as from a
        // start: the sleep it ended may have been a long one.
        let backed_off = if rung && !quiet { tick } else { self.sleep };
        self.sleep = match pace {
            Pace::Searching => tick,
            Pace::Settled => tick * SETTLED_TICKS,
            Pace::Idle => (backed_off * 2).clamp(tick, idle_max.max(tick)),
            Pace::Dormant => DOZE_MAX.max(tick),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: Duration = Duration::from_millis(1);

    #[test]
    fn a_dormant_monitor_sleeps_the_longest_and_is_never_rung() {
        let mut r = Rhythm::new(TICK, Start::Tick);
        // Heavy waits that could qualify a thread: back off, unrung.
        r.after_round(Pace::Idle, true, true, false);
        assert_eq!((r.sleep, r.listen), (2 * TICK, false));
        r.after_round(Pace::Idle, false, true, false);
        assert_eq!((r.sleep, r.listen), (4 * TICK, true));
        // Nothing to decide: the longest sleep at once, heavy waits or not.
        r.after_round(Pace::Dormant, true, true, false);
        assert_eq!((r.sleep, r.listen), (DOZE_MAX, false));
        r.after_round(Pace::Searching, false, true, false);
        assert_eq!((r.sleep, r.listen), (TICK, false));
    }

    #[test]
    fn quiet_rounds_doze_only_where_dozing_is_allowed() {
        let (mut doze, mut stay) = (
            Rhythm::new(TICK, Start::Tick),
            Rhythm::new(TICK, Start::Tick),
        );
        assert_eq!(Rhythm::new(TICK, Start::Dormant).sleep, DOZE_MAX);
        // Past DOZE_AFTER_QUIET_ROUNDS the sleeps go on doubling: 32 ms up
        // to 256 ms.
        for _ in 0..DOZE_AFTER_QUIET_ROUNDS + 4 {
            doze.after_round(Pace::Idle, false, true, false);
            stay.after_round(Pace::Idle, false, false, false);
        }
        assert_eq!(doze.sleep, DOZE_MAX);
        assert_eq!(stay.sleep, IDLE_TICK_MAX);
        // A ring that found nothing: the next sleep is a whole one.
        doze.after_round(Pace::Idle, false, true, true);
        assert!(!doze.listen);
    }

    #[test]
    fn a_monitor_started_on_call_listens_and_a_ring_with_work_backs_off_from_a_tick() {
        let mut r = Rhythm::new(TICK, Start::OnCall);
        assert_eq!((r.sleep, r.listen), (IDLE_TICK_MAX, true));
        // Rung, and the waits were heavy: the rounds come soon again, as
        // they would have from a start that ticked.
        r.after_round(Pace::Idle, true, true, true);
        assert_eq!((r.sleep, r.listen), (2 * TICK, false));
        // Rung for nothing: the long sleep is kept, unrung.
        let mut idle = Rhythm::new(TICK, Start::OnCall);
        idle.after_round(Pace::Idle, false, true, true);
        assert_eq!((idle.sleep, idle.listen), (IDLE_TICK_MAX, false));
        // A thread placed at the rung round: every tick.
        let mut found = Rhythm::new(TICK, Start::OnCall);
        found.after_round(Pace::Searching, true, true, true);
        assert_eq!((found.sleep, found.listen), (TICK, false));
    }
}
