//! Built-in workloads with their parameters and where each comes from.
//!
//! Paper 3 (Boyd-Wickizer et al. 2012), Fig. 3 table, measured on one core:
//!
//! | bench  | op time  | acquires/op | cs (cycles) | % in cs |
//! |--------|----------|-------------|-------------|---------|
//! | FOPS   | 503      | 4           | 92          | 73%     |
//! | MEMPOP | 6,852    | 4           | 121         | 7%      |
//! | PFIND  | 2,099 M  | 70 K        | 350         | 7%      |
//! | EXIM   | 1,156 K  | 58          | 165         | 0.8%    |
//!
//! Critical sections lengthen as their data moves between caches (Sec. 5.2),
//! modelled by `data_miss`, the extra cycles when the previous holder ran on
//! another core (same LLC, 1, 2, 3 hops).
//!
//! Paper 1 (Cui et al. 2013) publishes no per-operation figures; its presets
//! are estimates from the shape of its Fig. 3 (where each default curve peaks
//! and how fast it falls), written beside each.

use crate::locks::LockAlgo;
use crate::workload::{LockSpec, PhaseSpec, Step, TimeDist, Workload};

/// Data-miss cost profile: `remote` cycles at one hop, half of it within an
/// LLC, growing by 10% per further hop.
fn misses(remote: f64) -> [f64; 4] {
    [remote * 0.5, remote, remote * 1.1, remote * 1.2]
}

fn kernel_lock(name: &str, data_miss_remote: f64) -> LockSpec {
    LockSpec {
        name: name.into(),
        algo: LockAlgo::Ticket,
        kernel: true,
        data_miss: misses(data_miss_remote),
    }
}

fn step(work: f64, lock: &str, cs: f64, repeat: u32) -> Step {
    Step {
        work,
        lock: Some(lock.into()),
        cs,
        repeat,
    }
}

fn closed_loop(name: &str, description: &str, lock: LockSpec, op: Vec<Step>) -> Workload {
    Workload {
        name: name.into(),
        description: description.into(),
        tasks_per_core: 1,
        times: TimeDist::Exponential,
        locks: vec![lock],
        operation: op,
        ops_per_task: None,
        spawn_cycles: 0.0,
        arrival_ns: 0.0,
        phases: vec![],
        groups: 1,
    }
}

/// Per-acquisition non-critical work so that the critical section takes
/// `share` of the one-core operation (the table's last column).
fn work_for_share(cs: f64, share: f64) -> f64 {
    cs * (1.0 - share) / share
}

/// Paper 5's setting, as `corral bench ca`'s `groups` worker plants it:
/// `groups` groups of `3 x groups` tasks per core (6 threads per group on
/// 2 cores), each group alternating over its own two spin-then-park locks
/// (corral's default wait; a
/// 32-word update, ~100 cycles, whose lines move when the previous holder
/// ran on another core), with one lock every task takes once per 16
/// operations. Estimates, not measurements.
fn planted_groups(name: &str, groups: u32) -> Workload {
    let user_lock = |name: String| LockSpec {
        name,
        algo: LockAlgo::Adaptive,
        kernel: false,
        data_miss: misses(400.0),
    };
    let mut locks = vec![user_lock("global".into())];
    for g in 0..groups {
        locks.push(user_lock(format!("a{g}")));
        locks.push(user_lock(format!("b{g}")));
    }
    let mut operation = Vec::new();
    for _ in 0..16 {
        operation.push(step(200.0, "a{group}", 100.0, 1));
        operation.push(step(200.0, "b{group}", 100.0, 1));
    }
    operation.push(step(200.0, "global", 50.0, 1));
    Workload {
        name: name.into(),
        description: format!(
            "paper 5's planted groups (corral bench ca): {groups} groups, each task on its group's two locks, one lock shared by all"
        ),
        tasks_per_core: 3 * groups,
        times: TimeDist::Exponential,
        locks,
        operation,
        ops_per_task: None,
        spawn_cycles: 0.0,
        arrival_ns: 0.0,
        phases: vec![],
        groups,
    }
}

/// Names of the built-in workloads, in listing order.
pub const NAMES: [&str; 22] = [
    "fops",
    "mempop",
    "pfind",
    "exim",
    "single-counter",
    "mmapbench",
    "sockbench",
    "postmark-500",
    "postmark-10000",
    "kernbench",
    "parallel-find",
    "parallel-grep",
    "phase-change",
    "markov",
    "arrival-ramp",
    "ca-groups-2",
    "ca-groups-3",
    "ca-groups-4",
    "ca-groups-5",
    "ca-groups-6",
    "ca-groups-7",
    "ca-groups-8",
];

/// The built-in workload called `name`.
pub fn preset(name: &str) -> Option<Workload> {
    let w = match name {
        // 503 cycles, 4 x 92 in the d_entry lock (73%). Sec. 5.2 reports the
        // section at 450-852 cycles from 2 to 4 cores, but with 73% of the
        // operation serial any such growth makes 2 cores slower than 1,
        // while Fig. 2(a) peaks at 2: no data miss is modelled.
        "fops" => closed_loop(
            "fops",
            "paper 3 FOPS: open/close one file; 4 x 92-cycle d_entry sections per 503-cycle op",
            kernel_lock("d_entry", 0.0),
            vec![step((503.0 - 4.0 * 92.0) / 4.0, "d_entry", 92.0, 4)],
        ),
        // 6,852 cycles, 4 x 121 in anon_vma (7%). Sec. 5.2: 141 -> 350 cycles
        // by 10 cores; a 100-cycle miss (1 hop) puts the peak at 8-9 cores.
        "mempop" => closed_loop(
            "mempop",
            "paper 3 MEMPOP: mmap/munmap; 4 x 121-cycle anon_vma sections per 6,852-cycle op",
            kernel_lock("anon_vma", 100.0),
            vec![step((6852.0 - 4.0 * 121.0) / 4.0, "anon_vma", 121.0, 4)],
        ),
        // The table is inconsistent: 70 K x 350 cycles per 2,099 M-cycle find
        // is 1.2%, its last column says 7%. With Sec. 5.2's growth to 1,100
        // cycles (a 750-cycle miss), 3% puts the peak at 14-15 as measured.
        // One operation is 70 acquisitions, a thousandth of a find, so that
        // throughput is measurable in short runs.
        "pfind" => closed_loop(
            "pfind",
            "paper 3 PFIND: parallel find; 350-cycle address_space sections at 3% (op = 1/1000 find)",
            kernel_lock("address_space", 750.0),
            vec![step(work_for_share(350.0, 0.03), "address_space", 350.0, 70)],
        ),
        // 1,156 K cycles, 58 x 165 in anon_vma (0.8%); a 100-cycle miss.
        "exim" => closed_loop(
            "exim",
            "paper 3 EXIM: mail delivery; 58 x 165-cycle anon_vma sections per 1,156 K-cycle op",
            kernel_lock("anon_vma", 100.0),
            vec![step(1_156_000.0 / 58.0 - 165.0, "anon_vma", 165.0, 58)],
        ),
        _ => return paper1_preset(name),
    };
    Some(w)
}

/// Paper 1's benchmarks (Sec. 4.2), parameters estimated from its Fig. 3.
fn paper1_preset(name: &str) -> Option<Workload> {
    let w = match name {
        // A spin-lock protected counter in a tight loop: the counter's line
        // moves with every handoff, so one core is best (paper 1, Sec. 4.6:
        // its 2013 scheduler settles on 2 cores and misses that peak).
        "single-counter" => closed_loop(
            "single-counter",
            "paper 1 single counter: a kernel counter under one spin lock in a tight loop",
            kernel_lock("counter", 250.0),
            vec![step(100.0, "counter", 50.0, 1)],
        ),
        // Map 500 MB shared, touch each page, unmap: i_mmap_lock; default peaks
        // near 6 cores (estimate).
        "mmapbench" => closed_loop(
            "mmapbench",
            "paper 1 mmapbench: map/touch/unmap a shared file; i_mmap_lock (estimated: peak ~6 cores)",
            kernel_lock("i_mmap_lock", 250.0),
            vec![step(work_for_share(200.0, 0.12), "i_mmap_lock", 200.0, 4)],
        ),
        // Socket create/close: dcache_lock and inode_lock; peak near 8 cores.
        "sockbench" => closed_loop(
            "sockbench",
            "paper 1 sockbench: socket create/close; dcache_lock (estimated: peak ~8 cores)",
            kernel_lock("dcache_lock", 200.0),
            vec![step(work_for_share(180.0, 0.07), "dcache_lock", 180.0, 3)],
        ),
        // tmpfs transactions on 500 files per thread: files_lock/dcache_lock;
        // peak near 16 cores (its Fig. 4: SSC 17-18 at collapse).
        "postmark-500" => closed_loop(
            "postmark-500",
            "paper 1 parallel postmark, 500 files: files_lock (estimated: peak ~16 cores)",
            kernel_lock("files_lock", 250.0),
            vec![step(work_for_share(250.0, 0.033), "files_lock", 250.0, 6)],
        ),
        // 10000 files: longer per-transaction work, later and gentler peak.
        "postmark-10000" => closed_loop(
            "postmark-10000",
            "paper 1 parallel postmark, 10000 files: files_lock (estimated: peak ~22 cores)",
            kernel_lock("files_lock", 250.0),
            vec![step(work_for_share(250.0, 0.022), "files_lock", 250.0, 6)],
        ),
        // Compiling: light, rare contention; no collapse at 32 cores.
        "kernbench" => closed_loop(
            "kernbench",
            "paper 1 kernbench: kernel compile; rare files_lock use, no collapse (estimated)",
            kernel_lock("files_lock", 200.0),
            vec![step(work_for_share(200.0, 0.002), "files_lock", 200.0, 10)],
        ),
        // Short-lived find processes on the per-dentry lock: peak near 10
        // cores (its Fig. 4: SSC 8 "instead of the optimal value ten").
        "parallel-find" => {
            let mut w = closed_loop(
                "parallel-find",
                "paper 1 parallel find: short-lived find processes; d_lock (estimated: peak ~10 cores)",
                kernel_lock("d_lock", 400.0),
                vec![step(work_for_share(300.0, 0.07), "d_lock", 300.0, 20)],
            );
            w.ops_per_task = Some(25);
            w.spawn_cycles = 250_000.0;
            w
        }
        // grep over small files: files_lock; peak near 12 cores.
        "parallel-grep" => closed_loop(
            "parallel-grep",
            "paper 1 parallel grep: grep small files; files_lock (estimated: peak ~12 cores)",
            kernel_lock("files_lock", 250.0),
            vec![step(work_for_share(250.0, 0.05), "files_lock", 250.0, 8)],
        ),
        // Contended for the first half (like MEMPOP), nearly lock-free after:
        // the policy must notice the change and give the cores back.
        "phase-change" => {
            let mut w = closed_loop(
                "phase-change",
                "MEMPOP-like contention for the first half, then 50x less lock use",
                kernel_lock("anon_vma", 210.0),
                vec![step((6852.0 - 4.0 * 121.0) / 4.0, "anon_vma", 121.0, 4)],
            );
            w.phases = vec![PhaseSpec {
                at: 0.5,
                operation: vec![step(50.0 * 1592.0, "anon_vma", 121.0, 4)],
            }];
            w
        }
        // Paper 3's Fig. 8 microbenchmark: s = 400, a = 12,500 (eq. 1 exact).
        // Issue 51's shape: the program's threads arrive over its first
        // 15 ms, so a baseline taken on the ramp reads low; one lock whose
        // critical section is 5% of a thread's time alone, so the parallel
        // part needs the cores up to about 20.
        "arrival-ramp" => {
            let mut w = closed_loop(
                "arrival-ramp",
                "threads arriving over 15 ms; one lock at 5% of a thread's time (estimated: peak ~20 cores)",
                kernel_lock("lock", 250.0),
                vec![step(work_for_share(250.0, 0.05), "lock", 250.0, 8)],
            );
            w.arrival_ns = 15_000_000.0;
            w
        }
        "markov" => {
            let mut l = kernel_lock("lock", 0.0);
            l.data_miss = [0.0; 4];
            closed_loop(
                "markov",
                "paper 3 Fig. 8 microbenchmark: one ticket lock, s = 400, a = 12,500 cycles",
                l,
                vec![step(12_500.0, "lock", 400.0, 1)],
            )
        }
        _ => {
            let groups = name.strip_prefix("ca-groups-")?.parse().ok();
            planted_groups(name, groups.filter(|g| (2..=8).contains(g))?)
        }
    };
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_preset_exists_and_validates() {
        for name in NAMES {
            let w = preset(name).unwrap_or_else(|| panic!("{name} missing"));
            assert_eq!(w.name, name);
            w.validate().unwrap();
        }
        assert!(preset("nope").is_none());
    }

    #[test]
    fn paper3_presets_keep_the_table_figures() {
        let fops = preset("fops").unwrap();
        let op: f64 = fops
            .operation
            .iter()
            .map(|s| s.repeat as f64 * (s.work + s.cs))
            .sum();
        assert!((op - 503.0).abs() < 1e-9);
        let exim = preset("exim").unwrap();
        let op: f64 = exim
            .operation
            .iter()
            .map(|s| s.repeat as f64 * (s.work + s.cs))
            .sum();
        assert!((op - 1_156_000.0).abs() < 1e-6);
    }
}
