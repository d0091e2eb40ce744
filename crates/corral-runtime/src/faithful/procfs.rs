//! A program as /proc shows it: the threads of its root process and of
//! every descendant, and each thread's context switches.

use serde::Serialize;

/// One thread of the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Task {
    /// Its process.
    pub pid: i32,
    /// The thread.
    pub tid: i32,
}

/// Every thread of `root` and of its descendants, found through each
/// thread's `children` file (a child is listed by the thread that forked
/// it). Processes that exit meanwhile are skipped.
pub fn tree_tasks(root: i32) -> Vec<Task> {
    let mut tasks = Vec::new();
    let mut pids = vec![root];
    while let Some(pid) = pids.pop() {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for e in dir.flatten() {
            let Some(tid) = e.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            tasks.push(Task { pid, tid });
            let children = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/children"));
            pids.extend(
                children
                    .unwrap_or_default()
                    .split_whitespace()
                    .filter_map(|c| c.parse::<i32>().ok()),
            );
        }
    }
    tasks
}

/// A thread's context switches so far (`/proc/PID/task/TID/status`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CtxSwitches {
    /// The thread gave up its CPU (blocked, slept, yielded).
    pub voluntary: u64,
    /// The scheduler took its CPU away (preempted, slice used up).
    pub involuntary: u64,
}

impl CtxSwitches {
    /// Reads `task`'s counts; `None` once it has exited.
    pub fn of(task: Task) -> Option<Self> {
        let text =
            std::fs::read_to_string(format!("/proc/{}/task/{}/status", task.pid, task.tid)).ok()?;
        Self::parse(&text)
    }

    /// Both counts from a status file's text.
    pub fn parse(status: &str) -> Option<Self> {
        let field = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().parse().ok())
        };
        Some(CtxSwitches {
            voluntary: field("voluntary_ctxt_switches:")?,
            involuntary: field("nonvoluntary_ctxt_switches:")?,
        })
    }

    /// The switches since `before` (0 where a count went back).
    pub fn since(self, before: CtxSwitches) -> CtxSwitches {
        CtxSwitches {
            voluntary: self.voluntary.saturating_sub(before.voluntary),
            involuntary: self.involuntary.saturating_sub(before.involuntary),
        }
    }

    /// The sum of two counts.
    pub fn plus(self, other: CtxSwitches) -> CtxSwitches {
        CtxSwitches {
            voluntary: self.voluntary + other.voluntary,
            involuntary: self.involuntary + other.involuntary,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_this_process_threads_and_their_switches() {
        let me = std::process::id() as i32;
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || rx.recv());
        let tasks = tree_tasks(me);
        assert!(tasks.len() >= 2 && tasks.iter().all(|t| t.pid == me));
        assert!(tasks.iter().all(|&t| CtxSwitches::of(t).is_some()));
        tx.send(()).unwrap();
        t.join().unwrap().unwrap();
        let s = "voluntary_ctxt_switches:\t7\nnonvoluntary_ctxt_switches:\t3\n";
        let c = CtxSwitches::parse(s).unwrap();
        assert_eq!((c.voluntary, c.involuntary), (7, 3));
        assert_eq!(CtxSwitches::parse("Name: x\n"), None);
        assert_eq!(c.since(c.plus(c)), CtxSwitches::default());
    }
}
