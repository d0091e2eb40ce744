//! The program `corral bench counter` runs under `corral run`: threads
//! sharing pthread mutexes (called through libc, so the preload library
//! replaces them), with a configurable amount of private work outside the
//! lock. Paper 1's single counter (Sec. 4.2); paper 4's doubly linked list
//! and multiple counters (Sec. 5).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use corral_launch::CliError;
use serde::Serialize;

/// Arguments of the hidden worker subcommand.
#[derive(clap::Args, Clone, Debug)]
pub struct WorkerArgs {
    /// `counter`, `list`, `counters` or `groups` (paper 5's planted groups:
    /// thread t in group t % --groups, two locks per group, one lock every
    /// thread takes every 16th operation).
    #[arg(long, default_value = "counter", value_parser = ["counter", "list", "counters", "groups"])]
    pub(crate) workload: String,
    /// Planted groups of the `groups` workload.
    #[arg(long, default_value_t = 2)]
    pub(crate) groups: u32,
    #[arg(long, default_value_t = 4)]
    pub(crate) threads: u32,
    #[arg(long, default_value_t = 300)]
    pub(crate) duration_ms: u64,
    /// Iterations of private arithmetic between two critical sections.
    #[arg(long, default_value_t = 0)]
    pub(crate) work: u32,
    /// Counters (and locks) of the `counters` workload (paper 4: several).
    #[arg(long, default_value_t = 4)]
    pub(crate) counters: u32,
}

/// What the worker prints: one JSON line.
#[derive(Serialize, serde::Deserialize)]
pub(crate) struct WorkerResult {
    /// Critical sections of all threads together.
    pub(crate) ops: u64,
    /// Wall time from the threads' start to their join.
    pub(crate) seconds: f64,
    /// `groups` workload: every thread's tid and planted group.
    #[serde(default)]
    pub(crate) planted: Vec<(i32, u32)>,
}

/// One planted group's state: two locks, each guarding lines the group's
/// critical sections write; padded so that groups share no cache line.
#[repr(align(128))]
struct Group {
    a: Guarded<[u64; 32]>,
    b: Guarded<[u64; 32]>,
}

/// A pthread mutex and the data it guards.
struct Guarded<T> {
    mutex: UnsafeCell<libc::pthread_mutex_t>,
    data: UnsafeCell<T>,
}

// SAFETY: `data` is only touched between pthread_mutex_lock and unlock of `mutex`.
unsafe impl<T: Send> Sync for Guarded<T> {}

impl<T> Guarded<T> {
    fn new(data: T) -> Self {
        Guarded {
            mutex: UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER),
            data: UnsafeCell::new(data),
        }
    }

    #[inline]
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: a statically initialised mutex that outlives every user;
        // `data` is accessed only while it is held.
        unsafe {
            libc::pthread_mutex_lock(self.mutex.get());
            let r = f(&mut *self.data.get());
            libc::pthread_mutex_unlock(self.mutex.get());
            r
        }
    }
}

/// A doubly linked list in an arena (indices, no allocation per op):
/// paper 4's shared list, where each op moves one node from head to tail.
struct List {
    next: Vec<u32>,
    prev: Vec<u32>,
    head: u32,
    tail: u32,
}

impl List {
    fn new(n: u32) -> Self {
        let next = (1..=n).collect::<Vec<_>>();
        let prev = (0..n).map(|i| i.wrapping_sub(1)).collect::<Vec<_>>();
        List {
            next,
            prev,
            head: 0,
            tail: n - 1,
        }
    }

    /// Unlinks the head and appends it at the tail.
    fn rotate(&mut self) {
        let node = self.head;
        let new_head = self.next[node as usize];
        self.prev[new_head as usize] = u32::MAX;
        self.head = new_head;
        self.next[self.tail as usize] = node;
        self.prev[node as usize] = self.tail;
        self.next[node as usize] = u32::MAX;
        self.tail = node;
    }
}

#[inline]
fn private_work(iterations: u32, seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..iterations {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    std::hint::black_box(x)
}

/// Runs the threads for `--duration-ms` and prints one [`WorkerResult`].
pub(crate) fn run(args: WorkerArgs) -> Result<(), CliError> {
    let counter = Guarded::new(0u64);
    let list = Guarded::new(List::new(64));
    let counters: Vec<Guarded<u64>> = (0..args.counters.max(1)).map(|_| Guarded::new(0)).collect();
    let groups: Vec<Group> = (0..args.groups.max(1))
        .map(|_| Group {
            a: Guarded::new([0; 32]),
            b: Guarded::new([0; 32]),
        })
        .collect();
    let planted = std::sync::Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let total = AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..args.threads.max(1) {
            let (counter, list, counters, stop, total, args) =
                (&counter, &list, &counters, &stop, &total, &args);
            let (groups, planted) = (&groups, &planted);
            s.spawn(move || {
                let g = t % groups.len() as u32;
                if args.workload == "groups" {
                    // SAFETY: gettid has no preconditions.
                    let tid = unsafe { libc::gettid() };
                    planted
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((tid, g));
                }
                let mut ops = 0u64;
                let mut seed = u64::from(t);
                // Relaxed: a stop hint; the scope's join orders the totals.
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        match args.workload.as_str() {
                            "list" => list.with(List::rotate),
                            "groups" => {
                                let grp = &groups[g as usize];
                                let bump = |d: &mut [u64; 32]| d.iter_mut().for_each(|x| *x += 1);
                                grp.a.with(bump);
                                grp.b.with(bump);
                                if ops.is_multiple_of(16) {
                                    counter.with(|c| *c += 1);
                                }
                            }
                            "counters" => counters[(ops as usize + t as usize) % counters.len()]
                                .with(|c| *c += 1),
                            _ => counter.with(|c| *c += 1),
                        }
                        seed = private_work(args.work, seed);
                        ops += 1;
                    }
                }
                total.fetch_add(ops, Ordering::Relaxed); // Relaxed: read after the join.
            });
        }
        std::thread::sleep(Duration::from_millis(args.duration_ms));
        stop.store(true, Ordering::Relaxed); // Relaxed: see above.
    });
    let seconds = start.elapsed().as_secs_f64();
    let result = WorkerResult {
        ops: total.load(Ordering::Relaxed),
        seconds,
        planted: planted.into_inner().unwrap_or_default(),
    };
    println!("{}", serde_json::to_string(&result)?);
    Ok(())
}
