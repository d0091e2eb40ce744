//! Cost of one slice-end decision of the SSC controller with 1,024 threads
//! registered: a vote on most calls, a determination (Alg. 4) whenever the
//! votes suffice, and the occasional bound move.

use corral_policy::placement::Topology;
use corral_policy::ssc::{
    DecisionKind, SliceDecision, SliceObs, SscController, SscParams, ThreadPolicyState,
};
use corral_policy::{CoreId, Nanos};
use criterion::{black_box, criterion_main, Criterion};

const THREADS: usize = 1_024;
const CORES: u32 = 1_024;
const SLICE: Nanos = 4_000_000;

struct Bench {
    ctl: SscController,
    threads: Vec<ThreadPolicyState>,
    core_of: Vec<CoreId>,
    loads: Vec<u32>,
    now: Nanos,
    next: usize,
}

impl Bench {
    fn new() -> Self {
        let ctl = SscController::new(
            SscParams::default(),
            Topology::uniform(CORES, 8, 4).ssc_order(),
            0,
        );
        let mut bench = Bench {
            ctl,
            threads: Vec::new(),
            core_of: Vec::new(),
            loads: vec![0; CORES as usize],
            now: 0,
            next: 0,
        };
        for i in 0..THREADS {
            let mut thread = bench.ctl.register_thread(7, 0);
            let core = i as CoreId % CORES;
            bench.ctl.begin_slice(&mut thread, 0);
            bench.ctl.on_slice_end(
                &mut thread,
                SliceObs {
                    core,
                    slice_len: SLICE,
                    lock_wait: SLICE,
                    waits: 0,
                    attempts: 0,
                    yields: 0,
                    wall_len: 0,
                    realtime: false,
                },
                0,
            );
            bench.loads[core as usize] += 1;
            bench.threads.push(thread);
            bench.core_of.push(core);
        }
        bench
    }

    /// One thread's lock attempt, slice start and slice end; the contention
    /// peaks at 48 cores so the search keeps moving, settling and restarting.
    #[inline]
    fn step(&mut self) -> SliceDecision {
        let i = self.next;
        self.next = (i + 1) % THREADS;
        let thread = &mut self.threads[i];
        if let Some(target) =
            self.ctl
                .on_lock_attempt(thread, self.core_of[i], &self.loads, self.now)
        {
            self.loads[self.core_of[i] as usize] -= 1;
            self.loads[target as usize] += 1;
            self.core_of[i] = target;
        }
        self.ctl.begin_slice(thread, self.now);
        self.now += 20_000;
        let share = (f64::from(thread.record_bound) / 96.0).min(1.0);
        let obs = SliceObs {
            core: self.core_of[i],
            slice_len: SLICE,
            lock_wait: (share * SLICE as f64) as Nanos,
            waits: 0,
            attempts: 0,
            yields: 0,
            wall_len: 0,
            realtime: false,
        };
        black_box(self.ctl.on_slice_end(thread, obs, self.now))
    }
}

fn slice_end(c: &mut Criterion) {
    let mut bench = Bench::new();
    // What the measured mix contains.
    let (mut votes, mut rounds, mut moves) = (0, 0, 0);
    for _ in 0..100_000 {
        let out = bench.step();
        votes += usize::from(out.voted);
        if let Some(decision) = out.decision {
            rounds += 1;
            moves += usize::from(decision.kind != DecisionKind::Hold);
        }
    }
    println!("per 100,000 slice ends: {votes} votes, {rounds} determinations, {moves} bound moves; bound {}", bench.ctl.bound());
    c.bench_function("slice_end_1024_threads", |b| b.iter(|| bench.step()));
    let mut bench = Bench::new();
    let mut thread = bench.threads[0];
    let obs = SliceObs {
        core: 0,
        slice_len: SLICE,
        lock_wait: SLICE / 3,
        waits: 0,
        attempts: 0,
        yields: 0,
        wall_len: 0,
        realtime: false,
    };
    c.bench_function("slice_end_only", |b| {
        b.iter(|| {
            bench.now += 20_000;
            thread.record_bound = bench.ctl.bound();
            black_box(
                bench
                    .ctl
                    .on_slice_end(black_box(&mut thread), black_box(obs), bench.now),
            )
        })
    });
}

// Private: criterion_group! defines an undocumented `pub fn`.
mod group {
    criterion::criterion_group!(benches, super::slice_end);
}
criterion_main!(group::benches);
