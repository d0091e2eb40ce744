use super::*;
use crate::abi::lock_kind;
use crate::stats::StatsMap;

fn scratch_map() -> (std::os::fd::OwnedFd, StatsMap) {
    let fd = StatsMap::new_region(4).unwrap();
    let map = StatsMap::publish(std::os::fd::AsFd::as_fd(&fd), 1).unwrap();
    (fd, map)
}

/// One test: the table is process-wide, so its cases run in order.
#[test]
fn counts_waits_per_lock_and_keeps_every_contention_when_the_table_is_full() {
    let (fd, mut map) = scratch_map();
    attach(&mut map);
    assert!(is_on());
    let reader = StatsMap::open(std::os::fd::AsFd::as_fd(&fd)).unwrap();

    // Two locks, four threads: each thread waits 10 or 11 ticks per
    // acquisition. 0x2040 is exclusive (its holders update its record, as
    // a held mutex's are); 0x1000 is read-locked (updates race: atomics).
    static HELD: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let handles: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..1_000u64 {
                    if i % 4 == 0 {
                        begin(0x1000, lock_kind::RW_READ).unwrap().end(10 + i % 2);
                        continue;
                    }
                    let kind = if t == 0 {
                        lock_kind::RW_WRITE
                    } else {
                        lock_kind::MUTEX
                    };
                    let pending = begin(0x2040, kind).unwrap();
                    let _held = HELD.lock().unwrap();
                    pending.end(10 + i % 2);
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    let snap = reader.snapshot();
    assert!(snap.lock_profile);
    assert_eq!(snap.locks.len(), 2);
    let top = &snap.locks[0];
    assert_eq!(top.addr, Some(0x2040), "most waiting first");
    assert_eq!(top.contended, 3_000);
    assert_eq!(top.kind, "mutex+rwlock:W");
    assert_eq!(snap.locks[1].contended, 1_000);
    assert_eq!(top.waiters, 4);
    // The test executable is "this library": the first frame outside it is
    // the C library's thread start.
    let (lo, hi) = caller::own_range().unwrap();
    let first = top.callers[0].addr as usize;
    assert!(
        first != UNKNOWN_CALLER as usize && !(lo..hi).contains(&first),
        "{first:#x}"
    );
    // Samples: each thread's first, then one in SAMPLE_EVERY.
    let samples: u32 = snap
        .locks
        .iter()
        .flat_map(|l| &l.callers)
        .map(|c| c.samples)
        .sum();
    assert!(samples >= 4_000 / SAMPLE_EVERY, "{samples}");

    // More locks than slots: the rest count in the overflow slot.
    for a in 0..2 * LOCK_SLOTS {
        begin(0x10_0000 + 64 * a, lock_kind::MUTEX).unwrap().end(1);
    }
    let snap = reader.snapshot();
    let total: u64 = snap.locks.iter().map(|l| l.contended).sum();
    assert_eq!(total, 4_000 + 2 * LOCK_SLOTS as u64);
    assert!(
        snap.locks.iter().any(|l| l.addr.is_none()),
        "an overflow slot"
    );

    detach();
    assert!(begin(0x1000, lock_kind::MUTEX).is_none());
    drop(map);
}

#[test]
fn a_fifth_caller_counts_as_other() {
    let r = Box::leak(Box::new(LockRecord::new()));
    for c in [8u64, 16, 8, 24, 32, 40, 48] {
        count_caller(r, c);
    }
    let table = core::slice::from_ref(&*r);
    r.contended.store(1, Ordering::Relaxed);
    let snap = snapshot::locks(table, 1 << 32);
    assert_eq!(snap[0].callers.len(), LOCK_CALLERS);
    assert_eq!(
        snap[0].callers[0],
        snapshot::CallerSample {
            addr: 8,
            samples: 2
        }
    );
    assert_eq!(snap[0].other_samples, 2);
}
