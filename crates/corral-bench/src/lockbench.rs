//! Measurements of the lock algorithms behind `corral bench locks`. Every
//! function is generic over the lock type so that each algorithm runs the
//! same loop; the caller dispatches by name.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use corral_locks::wait::{now_ticks, ticks_to_ns};
use corral_locks::RawLock;
use crossbeam_utils::CachePadded;

/// Paper 3, Fig. 10: "acquires the shared lock, updates 4 shared cache
/// lines, and releases the lock".
const SHARED_LINES: usize = 4;

#[repr(align(64))]
struct Line(AtomicU64);

/// Cache lines written inside the critical section. Relaxed atomics keep the
/// writes real (not hoisted out of the loop) without adding fences.
struct SharedData([Line; SHARED_LINES]);

impl SharedData {
    fn new() -> Self {
        SharedData(std::array::from_fn(|_| Line(AtomicU64::new(0))))
    }

    #[inline]
    fn update(&self) {
        for line in &self.0 {
            let v = line.0.load(Ordering::Relaxed);
            line.0.store(v + 1, Ordering::Relaxed);
        }
    }
}

/// Nanoseconds per uncontended acquire+release, one thread, `iters` times.
pub(crate) fn uncontended_ns<L: RawLock>(iters: u64) -> f64 {
    let lock = L::default();
    let start = Instant::now();
    for _ in 0..iters {
        let l = black_box(&lock);
        l.lock();
        // SAFETY: this thread acquired `l` on the line above.
        unsafe { l.unlock() };
    }
    start.elapsed().as_nanos() as f64 / iters as f64
}

/// Nanoseconds per acquire+release of a lock last released by a thread on
/// another CPU: two threads pinned to different CPUs take turns, and only
/// the acquire+release itself is timed.
pub(crate) fn handoff_ns<L: RawLock>(rounds: u64) -> f64 {
    // Padded apart: were `turn` on the lock's line, spinning on it would
    // pull the lock into this core's cache before the timed acquire.
    let lock = CachePadded::new(L::default());
    let turn = CachePadded::new(AtomicU64::new(0));
    let total_ticks = AtomicU64::new(0);
    let cpus = corral_runtime::affinity::allowed_cpus();
    std::thread::scope(|s| {
        for me in 0..2u64 {
            let (lock, turn, total_ticks) = (&*lock, &*turn, &total_ticks);
            let cpu = cpus.get(me as usize % cpus.len().max(1)).copied();
            s.spawn(move || {
                if let Some(cpu) = cpu {
                    let _ = corral_runtime::affinity::set_thread_affinity(0, &[cpu]);
                }
                let mut ticks = 0u64;
                for round in 0..rounds {
                    let mine = round * 2 + me;
                    // Acquire pairs with the other thread's Release below, so
                    // its unlock is complete before we take the lock.
                    while turn.load(Ordering::Acquire) != mine {
                        std::hint::spin_loop();
                    }
                    let t0 = now_ticks();
                    lock.lock();
                    // SAFETY: acquired on the line above by this thread.
                    unsafe { lock.unlock() };
                    ticks += now_ticks() - t0;
                    turn.store(mine + 1, Ordering::Release);
                }
                total_ticks.fetch_add(ticks, Ordering::Relaxed);
            });
        }
    });
    ticks_to_ns(total_ticks.load(Ordering::Relaxed)) as f64 / (2 * rounds) as f64
}

/// Paper 3's microbenchmark at `threads` threads for `duration`: completed
/// critical sections per second, all threads together.
pub(crate) fn throughput<L: RawLock>(threads: u32, duration: Duration) -> f64 {
    let lock = L::default();
    let data = SharedData::new();
    let stop = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let barrier = Barrier::new(threads as usize + 1);
    let elapsed = std::thread::scope(|s| {
        for _ in 0..threads {
            let (lock, data, stop, ops, barrier) = (&lock, &data, &stop, &ops, &barrier);
            s.spawn(move || {
                barrier.wait();
                let mut mine = 0u64;
                loop {
                    lock.lock();
                    // Relaxed: `stop` is a hint; ops counted after it was
                    // seen are discarded below either way.
                    let done = stop.load(Ordering::Relaxed);
                    if !done {
                        data.update();
                    }
                    // SAFETY: acquired above by this thread.
                    unsafe { lock.unlock() };
                    if done {
                        break;
                    }
                    mine += 1;
                }
                ops.fetch_add(mine, Ordering::Relaxed);
            });
        }
        barrier.wait();
        let start = Instant::now();
        std::thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        start.elapsed()
    });
    ops.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microbenchmark_counts_work_for_every_thread_count() {
        use corral_locks::TicketLock;
        assert!(throughput::<TicketLock>(1, Duration::from_millis(5)) > 0.0);
        assert!(throughput::<TicketLock>(3, Duration::from_millis(5)) > 0.0);
    }
}
