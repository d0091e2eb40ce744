//! An indexed 4-ary min-heap of timers: every task, core and global timer has
//! one slot that is set, moved or cancelled in place, so the queue never
//! holds stale events and stays as small as the machine.
//!
//! A popped timer stays at the root until the next pop: most events re-arm
//! the timer that fired them (a task's phase ends and the next begins), or
//! arm another (a lock passed to a waiter while its releaser spins on), and
//! either takes the root in place: one sift down instead of a pop's and a
//! push's. Slots past the heap's end read as never due, so every node's
//! children compare as one group of four without bounds checks.

const ARITY: usize = 4;
const _: () = assert!(ARITY == 4, "the sifts compare a group of four unrolled");

/// `pos` of a disarmed timer; also "none" for `Timers::fired`.
const DISARMED: u32 = u32::MAX;

/// A heap entry: the due time (the bits of a non-negative f64, which order
/// like the floats) beside its id, so that sifting compares without a
/// second, dependent load per child.
#[derive(Clone, Copy)]
struct Entry {
    key: u64,
    id: u32,
}

/// What every slot past the heap's end holds: later than any due time
/// (`u64::MAX` is above the bits of every non-negative f64, infinity
/// included), so a node's last, partial group of children compares as a
/// whole one and never wins.
const EMPTY: Entry = Entry {
    key: u64::MAX,
    id: DISARMED,
};

pub(crate) struct Timers {
    /// The heap in `slots[..len]`, [`EMPTY`] from `len` on. `ARITY` slots
    /// more than ids, so the group of children of any node below `len` is
    /// inside it.
    slots: Box<[Entry]>,
    len: usize,
    /// Heap index of each timer id; [`DISARMED`] while it is disarmed.
    pos: Box<[u32]>,
    /// The timer [`Timers::fire_top`] fired last ([`DISARMED`] if none),
    /// still in the heap (as if disarmed) until it is set, cancelled, its
    /// slot is given to another or the next peek removes it. A plain id,
    /// not an `Option`: one compare on every set.
    fired: u32,
}

impl Timers {
    pub(crate) fn new(ids: usize) -> Self {
        assert!(ids < DISARMED as usize, "timer ids fit below the sentinel");
        Timers {
            slots: vec![EMPTY; ids + ARITY].into_boxed_slice(),
            len: 0,
            pos: vec![DISARMED; ids].into_boxed_slice(),
            fired: DISARMED,
        }
    }

    /// Arms (or re-arms) timer `id` for time `at`.
    #[inline(always)]
    pub(crate) fn set(&mut self, id: u32, at: f64) {
        let e = Entry {
            key: at.max(0.0).to_bits(),
            id,
        };
        if self.fired == id {
            self.fired = DISARMED;
        }
        let mut p = self.pos[id as usize];
        if p == DISARMED && self.fired != DISARMED {
            // The fired timer leaves at the next peek anyway: its slot
            // (the root, usually) takes this one, one sift instead of a
            // removal and an insertion.
            p = std::mem::replace(&mut self.pos[self.fired as usize], DISARMED);
            self.fired = DISARMED;
        }
        if p == DISARMED {
            debug_assert!(self.len < self.pos.len());
            self.len += 1;
            self.sift_up(self.len - 1, e);
            return;
        }
        let p = p as usize;
        if e.key < self.slots[p].key {
            self.sift_up(p, e);
        } else {
            self.sift_down(p, e);
        }
    }

    /// Disarms timer `id` (nothing if it is not armed).
    #[inline]
    pub(crate) fn cancel(&mut self, id: u32) {
        if self.fired == id {
            self.fired = DISARMED;
        }
        let p = std::mem::replace(&mut self.pos[id as usize], DISARMED);
        if p == DISARMED {
            return;
        }
        self.len -= 1;
        let last = std::mem::replace(&mut self.slots[self.len], EMPTY);
        if p as usize != self.len {
            self.refill(p as usize, last);
        }
    }

    /// The smallest of the four children of node `i` and its index, or
    /// none when `i` is a leaf. Empty slots never win over a child.
    #[inline(always)]
    fn min_child(&self, i: usize) -> Option<(usize, Entry)> {
        let first = i * ARITY + 1;
        if first >= self.len {
            return None;
        }
        // SAFETY: first < len <= ids and slots holds ids + ARITY entries,
        // so first + ARITY <= slots.len(): the group is in bounds.
        let g = unsafe { &*self.slots.as_ptr().add(first).cast::<[Entry; ARITY]>() };
        let (a, ea) = if g[1].key < g[0].key {
            (1, g[1])
        } else {
            (0, g[0])
        };
        let (c, ec) = if g[3].key < g[2].key {
            (3, g[3])
        } else {
            (2, g[2])
        };
        Some(if ec.key < ea.key {
            (first + c, ec)
        } else {
            (first + a, ea)
        })
    }

    /// Writes `e` at heap index `i` and records where it is.
    #[inline(always)]
    fn put(&mut self, i: usize, e: Entry) {
        debug_assert!(i < self.len && (e.id as usize) < self.pos.len());
        // SAFETY: every caller passes i < len <= slots.len(), and an entry
        // in the heap has an id that `set` indexed `pos` with.
        unsafe {
            *self.slots.get_unchecked_mut(i) = e;
            *self.pos.get_unchecked_mut(e.id as usize) = i as u32;
        }
    }

    /// Fills the hole at `i` with `e`, the heap's former last leaf: the hole
    /// sinks to a leaf along the smaller children, then `e` rises from
    /// there (a leaf is usually late, so it rises little and the descent
    /// skips comparing it at every level).
    #[inline]
    fn refill(&mut self, mut i: usize, e: Entry) {
        while let Some((best, ce)) = self.min_child(i) {
            self.put(i, ce);
            i = best;
        }
        self.sift_up(i, e);
    }

    /// The earliest timer and its time, disarmed.
    #[cfg(test)]
    fn pop(&mut self) -> Option<(f64, u32)> {
        let top = self.peek()?;
        self.fire_top();
        Some(top)
    }

    /// The earliest timer and its time, still armed (the one fired last is
    /// disarmed for good first, unless it was set again).
    #[inline(always)]
    pub(crate) fn peek(&mut self) -> Option<(f64, u32)> {
        if self.fired != DISARMED {
            self.cancel(self.fired);
        }
        let top = self.slots[0];
        (self.len > 0).then(|| (f64::from_bits(top.key), top.id))
    }

    /// Disarms the earliest timer (see [`Timers::peek`]); it stays at the
    /// root, where setting it again is one sift down.
    #[inline(always)]
    pub(crate) fn fire_top(&mut self) {
        self.fired = if self.len > 0 {
            self.slots[0].id
        } else {
            DISARMED
        };
    }

    /// Places `e` at `i` or above it.
    #[inline]
    fn sift_up(&mut self, mut i: usize, e: Entry) {
        while i > 0 {
            let parent = (i - 1) / ARITY;
            // SAFETY: parent < i < len <= slots.len().
            let pe = unsafe { *self.slots.get_unchecked(parent) };
            if pe.key <= e.key {
                break;
            }
            self.put(i, pe);
            i = parent;
        }
        self.put(i, e);
    }

    /// Places `e` at `i` or below it.
    #[inline]
    fn sift_down(&mut self, mut i: usize, e: Entry) {
        while let Some((best, ce)) = self.min_child(i) {
            if ce.key >= e.key {
                break;
            }
            self.put(i, ce);
            i = best;
        }
        self.put(i, e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn pops_in_time_order_after_moves_and_cancels() {
        let mut t = Timers::new(200);
        let mut rng = Rng::seeded(3);
        let mut expected: Vec<Option<f64>> = vec![None; 200];
        for round in 0..2000 {
            let id = rng.below(200);
            if round % 7 == 0 {
                t.cancel(id);
                expected[id as usize] = None;
            } else if round % 5 == 0 {
                // A pop between the moves: the earliest armed one.
                let min = expected
                    .iter()
                    .enumerate()
                    .filter_map(|(i, e)| e.map(|at| (at, i as u32)))
                    .min_by(|a, b| a.0.total_cmp(&b.0));
                assert_eq!(t.pop(), min);
                if let Some((_, i)) = min {
                    expected[i as usize] = None;
                }
            } else {
                let at = rng.unit_open() * 1000.0;
                t.set(id, at);
                expected[id as usize] = Some(at);
            }
        }
        let mut want: Vec<(f64, u32)> = expected
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.map(|at| (at, i as u32)))
            .collect();
        want.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut got = Vec::new();
        while let Some(x) = t.pop() {
            got.push(x);
        }
        assert_eq!(got, want);
    }

    #[test]
    fn a_new_timer_takes_the_fired_ones_slot() {
        let mut t = Timers::new(8);
        for (id, at) in [(0, 1.0), (1, 5.0), (2, 3.0), (3, 4.0), (4, 2.0)] {
            t.set(id, at);
        }
        assert_eq!(t.pop(), Some((1.0, 0)));
        // 5 takes 0's root slot and sinks; 0 is disarmed, not re-armed.
        t.set(5, 4.5);
        assert_eq!(t.len, 5);
        assert_eq!(t.pos[0], DISARMED);
        t.set(0, 3.5); // armed again afterwards: a fresh entry
        let order: Vec<u32> = std::iter::from_fn(|| t.pop().map(|(_, id)| id)).collect();
        assert_eq!(order, [4, 2, 0, 3, 5, 1]);
        assert_eq!(t.len, 0);
        assert!(
            t.slots.iter().all(|e| e.key == u64::MAX),
            "emptied slots read EMPTY"
        );
    }

    #[test]
    fn a_fired_timer_is_gone_unless_set_again() {
        let mut t = Timers::new(4);
        t.set(0, 1.0);
        t.set(1, 2.0);
        t.set(2, 3.0);
        assert_eq!(t.pop(), Some((1.0, 0)));
        t.set(0, 2.5); // re-armed while it fires
        assert_eq!(t.pop(), Some((2.0, 1)));
        t.cancel(1); // cancelling the fired timer is harmless
        t.set(3, 2.7);
        assert_eq!(t.pop(), Some((2.5, 0)));
        t.cancel(2); // cancelled while another fires
        assert_eq!(t.pop(), Some((2.7, 3)));
        assert_eq!(t.pop(), None);
        t.set(3, 4.0); // re-armed after the heap emptied
        assert_eq!(t.pop(), Some((4.0, 3)));
    }
}
