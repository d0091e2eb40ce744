//! An indexed 4-ary min-heap of timers: every task, core and global timer has
//! one slot that is set, moved or cancelled in place, so the queue never
//! holds stale events and stays as small as the machine.
//!
//! A popped timer stays at the root until the next pop: most events re-arm
//! the timer that fired them (a task's phase ends and the next begins), and
//! re-arming it in place is one sift down instead of a pop's and a push's.

const ARITY: usize = 4;
const _: () = assert!(ARITY == 4, "sift_down compares a group of four unrolled");

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

pub(crate) struct Timers {
    /// Never reallocated: reserved for every id at once.
    heap: Vec<Entry>,
    /// Heap index of each timer id; [`DISARMED`] while it is disarmed.
    pos: Vec<u32>,
    /// The timer [`Timers::fire_top`] fired last ([`DISARMED`] if none),
    /// still in the heap (as if disarmed) until it is set, cancelled or the
    /// next peek removes it. A plain id, not an `Option`: one compare on
    /// every set.
    fired: u32,
}

impl Timers {
    pub(crate) fn new(ids: usize) -> Self {
        assert!(ids < DISARMED as usize, "timer ids fit below the sentinel");
        Timers {
            heap: Vec::with_capacity(ids),
            pos: vec![DISARMED; ids],
            fired: DISARMED,
        }
    }

    /// Arms (or re-arms) timer `id` for time `at`.
    #[inline(always)]
    pub(crate) fn set(&mut self, id: u32, at: f64) {
        let key = at.max(0.0).to_bits();
        if self.fired == id {
            self.fired = DISARMED;
        }
        let p = self.pos[id as usize];
        if p == DISARMED {
            debug_assert!(self.heap.len() < self.heap.capacity());
            self.heap.push(Entry { key, id });
            self.sift_up(self.heap.len() - 1, Entry { key, id });
            return;
        }
        let p = p as usize;
        let old = self.heap[p].key;
        if key < old {
            self.sift_up(p, Entry { key, id });
        } else {
            self.sift_down(p, Entry { key, id });
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
        let last = self.heap.pop().expect("armed timer is in the heap");
        if last.id != id {
            self.refill(p as usize, last);
        }
    }

    /// Fills the hole at `i` with `e`, the heap's former last leaf: the hole
    /// sinks to a leaf along the smaller children, then `e` rises from
    /// there (a leaf is usually late, so it rises little and the descent
    /// skips comparing it at every level).
    #[inline]
    fn refill(&mut self, mut i: usize, e: Entry) {
        let n = self.heap.len();
        loop {
            let first = i * ARITY + 1;
            let best = if let Some(g) = self.heap.get(first..first + ARITY) {
                let a = if g[1].key < g[0].key { 1 } else { 0 };
                let c = if g[3].key < g[2].key { 3 } else { 2 };
                first + if g[c].key < g[a].key { c } else { a }
            } else if first < n {
                (first + 1..n).fold(first, |b, c| {
                    if self.heap[c].key < self.heap[b].key {
                        c
                    } else {
                        b
                    }
                })
            } else {
                break;
            };
            let ce = self.heap[best];
            self.heap[i] = ce;
            self.pos[ce.id as usize] = i as u32;
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
        let top = self.heap.first()?;
        Some((f64::from_bits(top.key), top.id))
    }

    /// Disarms the earliest timer (see [`Timers::peek`]); it stays at the
    /// root, where setting it again is one sift down.
    #[inline(always)]
    pub(crate) fn fire_top(&mut self) {
        self.fired = self.heap.first().map_or(DISARMED, |e| e.id);
    }

    /// Places `e` at `i` or above it.
    #[inline]
    fn sift_up(&mut self, mut i: usize, e: Entry) {
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let pe = self.heap[parent];
            if pe.key <= e.key {
                break;
            }
            self.heap[i] = pe;
            self.pos[pe.id as usize] = i as u32;
            i = parent;
        }
        self.heap[i] = e;
        self.pos[e.id as usize] = i as u32;
    }

    /// Places `e` at `i` or below it.
    #[inline]
    fn sift_down(&mut self, mut i: usize, e: Entry) {
        let n = self.heap.len();
        loop {
            let first = i * ARITY + 1;
            // One bounds check per level; a full group is compared unrolled.
            let (best, ce) = if let Some(g) = self.heap.get(first..first + ARITY) {
                let (a, b) = if g[1].key < g[0].key {
                    (1, g[1])
                } else {
                    (0, g[0])
                };
                let (c, d) = if g[3].key < g[2].key {
                    (3, g[3])
                } else {
                    (2, g[2])
                };
                if d.key < b.key {
                    (first + c, d)
                } else {
                    (first + a, b)
                }
            } else if first < n {
                let mut best = first;
                for c in first + 1..n {
                    if self.heap[c].key < self.heap[best].key {
                        best = c;
                    }
                }
                (best, self.heap[best])
            } else {
                break;
            };
            if ce.key >= e.key {
                break;
            }
            self.heap[i] = ce;
            self.pos[ce.id as usize] = i as u32;
            i = best;
        }
        self.heap[i] = e;
        self.pos[e.id as usize] = i as u32;
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
