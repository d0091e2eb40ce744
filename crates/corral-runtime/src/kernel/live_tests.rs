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
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = crate_dir.join("bpf/kernel_locks.bpf.c");
    let out = Command::new("sha256sum")
        .arg(&src)
        .output()
        .expect("sha256sum");
    let actual = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        actual,
        BPF_SOURCE_SHA256.trim(),
        "BPF source changed: run scripts/build-bpf.sh"
    );
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
