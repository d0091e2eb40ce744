//! Live tests: load the real object into the running kernel. Where the
//! machine refuses (not root, old kernel), they check that the refusal is
//! the one-line kind and stop there.

use super::*;

fn open_or_refusal(kinds: LockKinds) -> Option<KernelLockSource> {
    match KernelLockSource::open(
        &ProbeEnv::system(),
        SourceConfig {
            kinds,
            follow_forks: true,
        },
    ) {
        Ok(source) => Some(source),
        Err(refusal) => {
            let line = refusal.to_string();
            assert!(
                !line.contains('\n') && line.contains("still work"),
                "{line}"
            );
            eprintln!("skipping live BPF test: {line}");
            None
        }
    }
}

/// Threads that contend on the mm's `mmap_lock` and page-table locks:
/// mmap, touch, munmap, a fixed number of times.
fn mmap_churn(threads: usize, rounds: usize) -> Vec<u32> {
    let tids = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                // SAFETY: gettid has no preconditions.
                tids.lock().unwrap().push(unsafe { libc::gettid() } as u32);
                for _ in 0..rounds {
                    // SAFETY: a fresh anonymous private mapping, touched
                    // within its length and unmapped once.
                    unsafe {
                        let len = 64 * 1024;
                        let p = libc::mmap(
                            std::ptr::null_mut(),
                            len,
                            libc::PROT_READ | libc::PROT_WRITE,
                            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                            -1,
                            0,
                        );
                        assert_ne!(p, libc::MAP_FAILED);
                        for off in (0..len).step_by(4096) {
                            *(p as *mut u8).add(off) = 1;
                        }
                        libc::munmap(p, len);
                    }
                }
            });
        }
    });
    tids.into_inner().unwrap()
}

#[test]
fn slices_of_tracked_threads_carry_their_lock_waiting() {
    let Some(mut source) = open_or_refusal("all".parse().unwrap()) else {
        return;
    };
    source.track(std::process::id()).unwrap();
    assert!(source.tracked().contains(&std::process::id()));
    let tids = mmap_churn(4, 3_000);
    let mut slices = Vec::new();
    source.drain(&mut slices);
    let ours: Vec<&SliceRecord> = slices.iter().filter(|r| tids.contains(&r.tid)).collect();
    // Each worker is switched out at least once: when it exits.
    for tid in &tids {
        assert!(
            ours.iter().any(|r| r.tid == *tid),
            "no slice for worker {tid}"
        );
    }
    for r in &ours {
        assert_eq!(r.tgid, std::process::id());
        assert!(r.wait_ns <= r.len_ns && r.len_ns > 0);
    }
    let waited: u64 = ours.iter().map(|r| r.wait_ns).sum();
    assert!(
        waited > 0,
        "four threads churning one mm never waited on a lock"
    );
    assert!(!source.lock_hotness().is_empty());
}

#[test]
fn untracked_processes_yield_no_slices() {
    let Some(mut source) = open_or_refusal(LockKinds::SPIN) else {
        return;
    };
    mmap_churn(2, 200);
    let mut slices = Vec::new();
    source.drain(&mut slices);
    assert!(
        slices.iter().all(|r| r.tgid != std::process::id()),
        "slices before track()"
    );
}

#[test]
fn a_corrupt_object_is_refused_by_name() {
    let dir = std::env::temp_dir().join(format!("corral-bad-obj-{}", std::process::id()));
    std::fs::write(&dir, &BPF_OBJECT[..BPF_OBJECT.len() / 3]).unwrap();
    let env = ProbeEnv {
        object_override: Some(dir.clone()),
        ..ProbeEnv::system()
    };
    let result = KernelLockSource::open(&env, SourceConfig::default());
    let _ = std::fs::remove_file(&dir);
    match result {
        Ok(_) => panic!("a truncated object loaded"),
        Err(Refusal::BpfRefused { .. }) => {}
        // Where preflight already refuses, that refusal stands.
        Err(other) => assert!(preflight(&ProbeEnv::system()).is_err(), "{other}"),
    }
}

#[test]
fn the_committed_object_is_current() {
    use std::path::Path;
    use std::process::Command;
    // An eBPF ELF: magic, 64-bit, machine EM_BPF (247).
    assert_eq!(&BPF_OBJECT[..4], b"\x7fELF");
    assert_eq!(u16::from_le_bytes([BPF_OBJECT[18], BPF_OBJECT[19]]), 247);
    assert_eq!(&ONCPU_OBJECT[..4], b"\x7fELF");
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (source, recorded) in [
        ("kernel_locks.bpf.c", BPF_SOURCE_SHA256),
        ("oncpu.bpf.c", ONCPU_SOURCE_SHA256),
    ] {
        let out = Command::new("sha256sum")
            .arg(crate_dir.join("bpf").join(source))
            .output()
            .expect("sha256sum");
        let actual = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        assert_eq!(
            actual,
            recorded.trim(),
            "{source} changed: run scripts/build-bpf.sh"
        );
    }
    // Where clang is present the source must still compile (CI check).
    let has_clang = Command::new("clang")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let has_headers = Path::new("/usr/include/bpf/bpf_helpers.h").exists();
    if has_clang && has_headers {
        let script = crate_dir.join("../../scripts/build-bpf.sh");
        let status = Command::new("bash")
            .arg(script)
            .arg("--check")
            .status()
            .expect("build-bpf.sh");
        assert!(status.success(), "scripts/build-bpf.sh --check failed");
    }
}

/// The on-CPU table as a program reads it: a thread put to sleep reads
/// off its CPU, and a spinning one on it, within a switch of the change.
#[test]
fn the_oncpu_table_agrees_with_the_kernel() {
    use crate::oncpu::{decode, HolderState, ONCPU_SLOTS};
    use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
    let table = match OnCpuTable::open(&ProbeEnv::system()) {
        Ok(t) => t,
        Err(refusal) => {
            let line = refusal.to_string();
            assert!(!line.contains('\n'), "{line}");
            eprintln!("skipping live on-CPU test: {line}");
            return;
        }
    };
    let fd = table.map_fd().expect("a descriptor");
    let base = map_read_only(fd).expect("the map mapped read-only");
    let read = |tid: u32| {
        // SAFETY: ONCPU_SLOTS words mapped above, never unmapped here.
        let word = unsafe { &*(base.add(tid as usize % ONCPU_SLOTS) as *const AtomicU64) };
        decode(word.load(Ordering::Relaxed), tid)
    };
    let wait_for = |tid: u32, want: HolderState| {
        // Up to 2 s: the state changes at the thread's next switch.
        (0..2_000).any(|_| {
            if read(tid) == want {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
            false
        })
    };
    let tid = AtomicU32::new(0);
    let spin = AtomicBool::new(true);
    let sleep = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: gettid has no preconditions.
            tid.store(unsafe { libc::gettid() } as u32, Ordering::SeqCst);
            while spin.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
            sleep.store(true, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(500));
        });
        while tid.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        let t = tid.load(Ordering::SeqCst);
        let running = wait_for(t, HolderState::Running);
        // SAFETY: as in `read`.
        let raw = unsafe { *base.add(t as usize % ONCPU_SLOTS) };
        if !running {
            spin.store(false, Ordering::SeqCst);
        }
        assert!(running, "spinning thread {t} not on CPU: {raw:#x}");
        spin.store(false, Ordering::SeqCst);
        while !sleep.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        assert!(
            wait_for(t, HolderState::OffCpu),
            "sleeping thread on CPU: {:?}",
            read(t)
        );
    });
}
