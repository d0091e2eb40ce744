//! Uncontended acquire + release of every algorithm, raw and `Timed`: the
//! instrumentation bar is timed <= 1.15 x raw. Compare ratios within one run.

// criterion_group! generates an undocumented public fn.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, Criterion};

use corral_locks::{with_lock_type, Algorithm, RawLock, Timed};

fn acquire_release<L: RawLock>(lock: &L) {
    lock.lock();
    // SAFETY: locked above on this thread.
    unsafe { lock.unlock() };
}

fn bench_pair<L: RawLock>(c: &mut Criterion, name: &str) {
    let mut group = c.benchmark_group(name);
    let raw = L::default();
    group.bench_function("raw", |b| b.iter(|| acquire_release(black_box(&raw))));
    let timed = Timed::<L>::default();
    group.bench_function("timed", |b| b.iter(|| acquire_release(black_box(&timed))));
    group.finish();
}

fn uncontended(c: &mut Criterion) {
    for alg in Algorithm::ALL {
        with_lock_type!(alg, L => bench_pair::<L>(c, alg.name()));
    }
}

criterion_group!(benches, uncontended);
criterion_main!(benches);
