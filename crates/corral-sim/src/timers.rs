//! An indexed 4-ary min-heap of timers: every task, core and global timer has
//! one slot that is set, moved or cancelled in place, so the queue never
//! holds stale events and stays as small as the machine.

const ARITY: usize = 4;

pub(crate) struct Timers {
    heap: Vec<u32>,
    /// Heap index of each timer id; none while it is disarmed.
    pos: Vec<Option<u32>>,
    /// Due time per timer id, as the bits of a non-negative f64 (which order
    /// like the floats).
    due: Vec<u64>,
}

impl Timers {
    pub(crate) fn new(ids: usize) -> Self {
        Timers {
            heap: Vec::with_capacity(ids),
            pos: vec![None; ids],
            due: vec![0; ids],
        }
    }

    /// Arms (or re-arms) timer `id` for time `at`.
    #[inline]
    pub(crate) fn set(&mut self, id: u32, at: f64) {
        let key = at.max(0.0).to_bits();
        let i = id as usize;
        let old = self.due[i];
        self.due[i] = key;
        match self.pos[i] {
            None => {
                self.heap.push(id);
                let at = self.heap.len() - 1;
                self.pos[i] = Some(at as u32);
                self.sift_up(at);
            }
            Some(p) if key < old => self.sift_up(p as usize),
            Some(p) => self.sift_down(p as usize),
        }
    }

    /// Disarms timer `id` (nothing if it is not armed).
    #[inline]
    pub(crate) fn cancel(&mut self, id: u32) {
        let Some(p) = self.pos[id as usize].take() else {
            return;
        };
        let last = self.heap.pop().expect("armed timer is in the heap");
        if last != id {
            let p = p as usize;
            self.heap[p] = last;
            self.pos[last as usize] = Some(p as u32);
            self.sift_down(p);
            let p = self.pos[last as usize].expect("moved timer is armed");
            self.sift_up(p as usize);
        }
    }

    /// The earliest timer and its time, disarmed.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(f64, u32)> {
        let &id = self.heap.first()?;
        let at = f64::from_bits(self.due[id as usize]);
        self.cancel(id);
        Some((at, id))
    }

    #[inline]
    fn sift_up(&mut self, mut i: usize) {
        let id = self.heap[i];
        let key = self.due[id as usize];
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let pid = self.heap[parent];
            if self.due[pid as usize] <= key {
                break;
            }
            self.heap[i] = pid;
            self.pos[pid as usize] = Some(i as u32);
            i = parent;
        }
        self.heap[i] = id;
        self.pos[id as usize] = Some(i as u32);
    }

    #[inline]
    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        let id = self.heap[i];
        let key = self.due[id as usize];
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            let mut best = first;
            let mut best_key = self.due[self.heap[first] as usize];
            for c in first + 1..(first + ARITY).min(n) {
                let k = self.due[self.heap[c] as usize];
                if k < best_key {
                    best = c;
                    best_key = k;
                }
            }
            if best_key >= key {
                break;
            }
            let cid = self.heap[best];
            self.heap[i] = cid;
            self.pos[cid as usize] = Some(i as u32);
            i = best;
        }
        self.heap[i] = id;
        self.pos[id as usize] = Some(i as u32);
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
        let mut expected = vec![None; 200];
        for round in 0..2000 {
            let id = rng.below(200);
            if round % 7 == 0 {
                t.cancel(id);
                expected[id as usize] = None;
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
}
