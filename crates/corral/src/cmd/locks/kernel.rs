//! Kernel locks as rows of the lock profile: the kernel session's hot locks
//! (read and named by corral-runtime), formatted like user-space locks.

use corral_runtime::kernel::HotLock;

use super::{LockReport, LockSpace};

/// The kernel session's locks (`KernelReport::hot_locks`) as rows, in their
/// order. What the BPF does not keep (longest wait, waiters, callers) stays
/// unknown, not zero.
pub(crate) fn kernel_lock_reports(hot_locks: &[HotLock]) -> Vec<LockReport> {
    hot_locks
        .iter()
        .map(|l| LockReport {
            space: LockSpace::Kernel,
            addr: Some(l.addr.clone()),
            symbol: l.symbol.clone(),
            kind: l.kind.to_string(),
            contended: l.count,
            wait_ns: l.wait_ns,
            max_wait_ns: None,
            avg_wait_ns: l.wait_ns.checked_div(l.count).unwrap_or(0),
            waiters: None,
            callers: Vec::new(),
            other_samples: 0,
            waits: None,
        })
        .collect()
}

/// User and kernel locks in one list, most total wait first (ties keep
/// user locks first, each side in its own order).
pub(crate) fn merge(user: Vec<LockReport>, kernel: Vec<LockReport>) -> Vec<LockReport> {
    let mut all = user;
    all.extend(kernel);
    all.sort_by_key(|l| std::cmp::Reverse(l.wait_ns));
    all
}

#[cfg(test)]
mod tests {
    use super::super::lock_table;
    use super::*;

    fn hot(addr: &str, symbol: Option<&str>, kind: &'static str, wait_ns: u64) -> HotLock {
        HotLock {
            addr: addr.into(),
            symbol: symbol.map(Into::into),
            kind,
            wait_ns,
            count: 4,
        }
    }

    fn user(wait_ns: u64) -> LockReport {
        LockReport {
            space: LockSpace::User,
            addr: Some("0x5555".into()),
            symbol: Some("big_lock+0x0".into()),
            kind: "mutex".into(),
            contended: 3,
            wait_ns,
            max_wait_ns: Some(wait_ns),
            avg_wait_ns: wait_ns / 3,
            waiters: Some(2),
            callers: Vec::new(),
            other_samples: 0,
            waits: None,
        }
    }

    #[test]
    fn kernel_rows_are_named_kernel_and_leave_unknowns_unknown() {
        let kernel = kernel_lock_reports(&[
            hot("0xffff888100a2b3c0", None, "rwsem:W", 40_000),
            hot(
                "0xffffffff830f3100",
                Some("files_lock+0x40"),
                "spinlock",
                8_000,
            ),
        ]);
        let all = merge(vec![user(20_000)], kernel);
        let t = lock_table(&all, 10);
        let lines: Vec<&str> = t.lines().collect();
        // Most waiting first, across both; an allocated lock by address.
        assert!(
            lines[1].contains("rwsem:W  kernel 0xffff888100a2b3c0"),
            "{}",
            lines[1]
        );
        assert!(lines[1].ends_with(" -"), "{}", lines[1]);
        assert!(lines[2].contains("mutex  big_lock+0x0"), "{}", lines[2]);
        assert!(
            lines[3].contains("spinlock  kernel files_lock+0x40"),
            "{}",
            lines[3]
        );
        // Contended, total, max (not kept), avg, waiters (not kept).
        let cells: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(
            &cells[..8],
            ["4", "8.00", "us", "-", "2.00", "us", "-", "spinlock"],
            "{}",
            lines[3]
        );
        let json = serde_json::to_value(&all[0]).unwrap();
        assert_eq!(json["space"], "kernel");
        assert!(json["max_wait_ns"].is_null() && json["waiters"].is_null());
        assert_eq!(json["contended"], 4);
    }
}
