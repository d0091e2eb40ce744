//! `corral bench kernel`, `corral attach` and the kernel-lock refusals, as a
//! user meets them. Live BPF cases run where the machine allows (root,
//! Linux 5.19+); elsewhere they check the refusal line instead.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn corral() -> Command {
    Command::new(env!("CARGO_BIN_EXE_corral"))
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run corral")
}

fn one_line_error(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "succeeded: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line, got {err:?}");
    lines[0].to_string()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn scratch_path(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("corral-kernel-test-{tag}-{}", std::process::id()))
}

fn scratch(tag: &str) -> PathBuf {
    let dir = scratch_path(tag);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

/// `attach` to this test process with `env` set; returns its refusal line.
fn attach_refusal(env: &[(&str, &std::ffi::OsStr)]) -> String {
    let mut cmd = corral();
    cmd.args([
        "attach",
        "--pid",
        &std::process::id().to_string(),
        "--duration-ms",
        "1",
    ]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let line = one_line_error(&run(&mut cmd));
    assert!(line.contains("user-space locks still work"), "{line}");
    line
}

#[test]
fn every_benchmark_runs_a_fixed_number_of_operations() {
    let dir = scratch("bench");
    let out = run(corral()
        .args([
            "bench",
            "kernel",
            "all",
            "--threads",
            "2",
            "--ops-per-worker",
            "3",
            "--json",
        ])
        .args([
            "--mmap-mib=1",
            "--postmark-files=5",
            "--tree-depth=1",
            "--tree-files=2",
            "--dir",
            dir.to_str().unwrap(),
        ]));
    let report = json(&out);
    let results = report["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["bench"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "mmapbench",
            "sockbench",
            "fops",
            "mempop",
            "postmark",
            "pfind",
            "pgrep"
        ]
    );
    for r in results {
        assert_eq!(r["ops"], 6, "{r}");
        assert_eq!(r["ops_per_worker"], serde_json::json!([3, 3]), "{r}");
    }
    // The scratch data is removed afterwards.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn worker_processes_each_report_their_operations() {
    let dir = scratch("procs");
    let out = run(corral()
        .args([
            "bench",
            "kernel",
            "pfind,fops",
            "--threads",
            "3",
            "--processes",
            "--ops-per-worker",
            "2",
            "--json",
        ])
        .args([
            "--tree-depth=1",
            "--tree-files=1",
            "--dir",
            dir.to_str().unwrap(),
        ]));
    for r in json(&out)["results"].as_array().unwrap() {
        assert_eq!(r["processes"], true);
        assert_eq!(r["ops_per_worker"], serde_json::json!([2, 2, 2]), "{r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unknown_benchmark_is_one_line() {
    let line = one_line_error(&run(corral().args(["bench", "kernel", "mmapbench,bogus"])));
    assert!(
        line.contains("bogus") && line.contains("allowed: mmapbench"),
        "{line}"
    );
}

#[test]
fn attach_to_a_missing_process_is_one_line() {
    // Pid numbers stop well below i32::MAX - 1.
    let line = one_line_error(&run(corral().args(["attach", "--pid", "2147483646"])));
    assert!(line.contains("--pid"), "{line}");
}

#[test]
fn refusal_not_root() {
    let mut cmd = if is_root() {
        use std::os::unix::fs::PermissionsExt;
        use std::os::unix::process::CommandExt;
        // A copy nobody can reach, wherever the checkout lives.
        let dir = scratch("nobody");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let exe = dir.join("corral");
        std::fs::copy(env!("CARGO_BIN_EXE_corral"), &exe).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut cmd = Command::new(exe);
        cmd.uid(65534).gid(65534).current_dir("/"); // nobody
        cmd
    } else {
        corral()
    };
    cmd.args([
        "attach",
        "--pid",
        &std::process::id().to_string(),
        "--duration-ms",
        "1",
    ]);
    // A sibling test that forks while the copy above is open for writing
    // holds that descriptor until its child execs: the copy is then "text
    // file busy" for a moment (ETXTBSY), a race of the harness, not corral.
    let out = (0..200)
        .find_map(|_| match cmd.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(10));
                None
            }
            other => Some(other.expect("run corral")),
        })
        .expect("the copy stayed busy for 2 s");
    if is_root() {
        let _ = std::fs::remove_dir_all(scratch_path("nobody"));
    }
    let line = one_line_error(&out);
    assert!(
        line.contains("not root") && line.contains("user-space locks still work"),
        "{line}"
    );
}

#[test]
fn refusal_no_btf() {
    let line = attach_refusal(&[("CORRAL_BTF_PATH", "/nonexistent/vmlinux".as_ref())]);
    assert!(
        line.contains(if is_root() {
            "no kernel BTF at /nonexistent/vmlinux"
        } else {
            "not root"
        }),
        "{line}"
    );
}

#[test]
fn refusal_tracepoints_missing() {
    // A tracefs whose kernel predates lock:contention_* (5.19).
    let fake = scratch("tracefs");
    std::fs::create_dir_all(fake.join("events/sched/sched_switch")).unwrap();
    let line = attach_refusal(&[("CORRAL_TRACEFS", fake.as_os_str())]);
    let _ = std::fs::remove_dir_all(&fake);
    assert!(
        line.contains(if is_root() {
            "tracepoint lock:contention_begin missing"
        } else {
            "not root"
        }),
        "{line}"
    );
}

#[test]
fn refusal_bpf_refused() {
    let dir = scratch("object");
    let bad = dir.join("bad.bpf.o");
    std::fs::write(&bad, b"\x7fELF not really an object").unwrap();
    let line = attach_refusal(&[("CORRAL_BPF_OBJECT", bad.as_os_str())]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        line.contains(if is_root() { "BPF refused" } else { "not root" }),
        "{line}"
    );
}

#[test]
fn attach_reports_slices_shares_and_read_back_affinity() {
    if !is_root() {
        return; // refusal_not_root covers this machine
    }
    // A long run, killed once attach has seen enough; nothing waits on time.
    // Its data in a scratch directory: killed, it cannot remove its own.
    let dir = scratch("attach");
    let mut bench = corral()
        .args([
            "bench",
            "kernel",
            "fops",
            "--threads",
            "3",
            "--duration-ms",
            "60000",
            "--dir",
        ])
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = run(corral().args([
        "attach",
        "--pid",
        &bench.id().to_string(),
        "--duration-ms",
        "400",
        "--json",
    ]));
    let _ = bench.kill();
    let _ = bench.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && stderr.contains("kernel locks unavailable") {
        return; // a kernel that refuses: the refusal tests cover it
    }
    let report = json(&out);
    assert_eq!(report["kinds"], serde_json::json!(["spin"]));
    assert!(report["slices"].as_u64().unwrap() > 0);
    let threads = report["threads"].as_array().unwrap();
    assert!(threads.iter().all(|t| t["tgid"] == bench.id()));
    for t in threads {
        let share = t["wait_share"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share));
        assert!(!t["slice_shares"].as_array().unwrap().is_empty());
    }
    for a in report["affinity"].as_array().unwrap() {
        if !a["read_back"].as_array().unwrap().is_empty() {
            assert_eq!(a["read_back"], a["requested"], "{a}");
        }
    }
}

#[test]
fn run_puts_kernel_locks_in_the_lock_table_and_report() {
    if !is_root() {
        return; // refusal_not_root covers this machine
    }
    // mempop's threads fault pages into one mm: mmap_lock (an rwsem) is
    // waited on in every run here; a fixed amount of work, nothing timed.
    let dir = scratch("run-locks");
    let report = dir.join("report.json");
    let bench = dir.join("bench");
    std::fs::create_dir_all(&bench).unwrap();
    let out = run(corral()
        .args(["run", "--kernel-locks", "--kernel-lock-kinds", "all"])
        .arg("--report")
        .arg(&report)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_corral"))
        .args([
            "bench",
            "kernel",
            "mempop",
            "--threads",
            "4",
            "--ops-per-worker",
            "200",
            "--dir",
        ])
        .arg(&bench));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    if !out.status.success() && stderr.contains("kernel locks unavailable") {
        return; // a kernel that refuses: the refusal tests cover it
    }
    assert!(out.status.success(), "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("report JSON");
    let kernel: Vec<&serde_json::Value> = doc["locks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["space"] == "kernel")
        .collect();
    assert!(
        kernel
            .iter()
            .any(|l| l["contended"].as_u64() > Some(0) && l["kind"].as_str() != Some("")),
        "no contended kernel lock in {text}"
    );
    for l in &kernel {
        // What the BPF does not keep is null, not zero.
        assert!(l["max_wait_ns"].is_null() && l["waiters"].is_null(), "{l}");
        assert!(l["addr"].as_str().unwrap().starts_with("0xffff"), "{l}");
        if let Some(symbol) = l["symbol"].as_str() {
            assert!(symbol.contains("+0x"), "{l}");
        }
    }
    // The exit table names them as kernel locks.
    assert!(
        stderr.lines().any(|l| l.contains("  kernel ")),
        "no kernel row in {stderr}"
    );
}

/// Makes the child's bpf(2) fail with EPERM, as a container's seccomp
/// profile does.
fn deny_bpf_syscall(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    const LOAD_SYSCALL_NR: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS, offset 0 = nr
    const JUMP_IF_EQUAL: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RETURN: u16 = 0x06; // BPF_RET | BPF_K
    let filter = [
        libc::sock_filter {
            code: LOAD_SYSCALL_NR,
            jt: 0,
            jf: 0,
            k: 0,
        },
        libc::sock_filter {
            code: JUMP_IF_EQUAL,
            jt: 0,
            jf: 1,
            k: libc::SYS_bpf as u32,
        },
        libc::sock_filter {
            code: RETURN,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        },
        libc::sock_filter {
            code: RETURN,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        },
    ];
    // SAFETY: between fork and exec only async-signal-safe prctl calls run;
    // `filter` outlives them (moved into the closure).
    unsafe {
        cmd.pre_exec(move || {
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut _,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const _,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[test]
fn refusal_bpf_refused_by_the_kernel() {
    let mut cmd = corral();
    cmd.args([
        "attach",
        "--pid",
        &std::process::id().to_string(),
        "--duration-ms",
        "1",
    ]);
    deny_bpf_syscall(&mut cmd);
    let line = one_line_error(&run(&mut cmd));
    assert!(
        line.contains(if is_root() { "BPF refused" } else { "not root" }),
        "{line}"
    );
    assert!(line.contains("user-space locks still work"), "{line}");
}
