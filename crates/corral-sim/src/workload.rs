//! Workloads: homogeneous closed-loop tasks, each repeating one operation made
//! of non-critical work and critical sections on named locks. Readable from
//! JSON so users can describe their own.

use crate::error::SimError;
use crate::locks::LockAlgo;
use serde::{Deserialize, Serialize};

/// How work and critical-section lengths are drawn around their means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimeDist {
    /// Exactly the mean every time.
    Fixed,
    /// Exponential with that mean (what paper 3's Markov model assumes).
    #[default]
    Exponential,
}

/// A lock the operation uses.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockSpec {
    /// Name steps refer to it by; unique within the workload.
    pub name: String,
    /// The lock algorithm (`ticket`, `mcs`, `mutex`, ...).
    pub algo: LockAlgo,
    /// Kernel spin locks are not preemptible while held or spun on.
    #[serde(default = "yes")]
    pub kernel: bool,
    /// Extra critical-section cycles when the previous holder ran on another
    /// core, by distance class (same LLC, 1, 2, 3 hops): the protected data
    /// moving between caches (paper 3, Sec. 5.2).
    #[serde(default)]
    pub data_miss: [f64; 4],
}

fn yes() -> bool {
    true
}

fn one() -> u32 {
    1
}

/// One step of an operation: `work` cycles outside any lock, then (if `lock`
/// is set) `cs` cycles holding it; the whole step runs `repeat` times.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Non-critical cycles before the lock is tried.
    #[serde(default)]
    pub work: f64,
    /// Name of the lock the critical section holds, if the step has one.
    #[serde(default)]
    pub lock: Option<String>,
    /// Critical-section cycles (with a lock only).
    #[serde(default)]
    pub cs: f64,
    /// How many times the step runs before the next one.
    #[serde(default = "one")]
    pub repeat: u32,
}

/// From `at` (a fraction of the simulated time) on, tasks run `operation`
/// instead: a phase change.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    /// When the phase starts, as a fraction of the simulated time.
    pub at: f64,
    /// The operation tasks repeat from then on.
    pub operation: Vec<Step>,
}

/// A homogeneous closed-loop workload.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Name reported with every point.
    pub name: String,
    /// One line for listings.
    #[serde(default)]
    pub description: String,
    /// Tasks per simulated core (the papers run one per core).
    #[serde(default = "one")]
    pub tasks_per_core: u32,
    /// How work and critical-section lengths are drawn.
    #[serde(default)]
    pub times: TimeDist,
    /// The locks steps may use.
    pub locks: Vec<LockSpec>,
    /// One operation; throughput counts completed operations.
    pub operation: Vec<Step>,
    /// Short-lived tasks: a task exits after this many operations and a fresh
    /// one is forked in its place.
    #[serde(default)]
    pub ops_per_task: Option<u64>,
    /// Cycles a freshly forked task spends before its first operation.
    #[serde(default)]
    pub spawn_cycles: f64,
    /// The program's threads arrive over this many ns from the start: task
    /// `t` of `n` first works `arrival_ns x t / n` without a lock (its
    /// start-up), so progress and the lock-intensive count rise over the
    /// ramp, as a real program's do while it creates its threads.
    #[serde(default)]
    pub arrival_ns: f64,
    /// Later operations, in order of their start.
    #[serde(default)]
    pub phases: Vec<PhaseSpec>,
    /// Planted groups (paper 5's setting): task `t` is in group
    /// `t % groups`, and `{group}` in a step's lock name stands for its
    /// group's number, so each group takes its own locks.
    #[serde(default = "one")]
    pub groups: u32,
}

/// A workload step with its lock resolved to an index.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CompiledStep {
    pub(crate) work: f64,
    /// Index of the step's lock; none when it has no critical section.
    pub(crate) lock: Option<u32>,
    pub(crate) cs: f64,
    pub(crate) repeat: u32,
}

impl Workload {
    /// Reads a workload from JSON text; errors name the offending field.
    pub fn from_json(text: &str) -> Result<Self, SimError> {
        let w: Workload = serde_json::from_str(text).map_err(SimError::WorkloadJson)?;
        w.validate()?;
        Ok(w)
    }

    /// Checks values serde cannot: names resolve, times are sane.
    pub fn validate(&self) -> Result<(), SimError> {
        if self.tasks_per_core == 0 {
            return Err(SimError::workload("tasks_per_core", "must be at least 1"));
        }
        for (i, l) in self.locks.iter().enumerate() {
            if self.locks[..i].iter().any(|o| o.name == l.name) {
                return Err(SimError::workload(
                    format!("locks[{i}].name"),
                    format!("duplicate lock '{}'", l.name),
                ));
            }
            if l.data_miss.iter().any(|c| !c.is_finite() || *c < 0.0) {
                return Err(SimError::workload(
                    format!("locks[{i}].data_miss"),
                    "cycles must be >= 0",
                ));
            }
        }
        if self.groups == 0 {
            return Err(SimError::workload("groups", "must be at least 1"));
        }
        for (i, p) in self.phases.iter().enumerate() {
            if !(0.0..=1.0).contains(&p.at) {
                return Err(SimError::workload(
                    format!("phases[{i}].at"),
                    "must be a fraction in 0..=1",
                ));
            }
        }
        self.compile_programs()?;
        if self.ops_per_task == Some(0) {
            return Err(SimError::workload("ops_per_task", "must be at least 1"));
        }
        if !self.spawn_cycles.is_finite() || self.spawn_cycles < 0.0 {
            return Err(SimError::workload("spawn_cycles", "must be >= 0"));
        }
        if !self.arrival_ns.is_finite() || self.arrival_ns < 0.0 {
            return Err(SimError::workload("arrival_ns", "must be >= 0"));
        }
        Ok(())
    }

    /// The operation, then each phase's, each compiled once per group:
    /// program `p` of group `g` is at `p * groups + g`.
    pub(crate) fn compile_programs(&self) -> Result<Vec<Vec<CompiledStep>>, SimError> {
        let fields = std::iter::once(("operation".to_string(), &self.operation)).chain(
            (self.phases.iter().enumerate())
                .map(|(i, p)| (format!("phases[{i}].operation"), &p.operation)),
        );
        let mut out = Vec::new();
        for (field, steps) in fields {
            for g in 0..self.groups.max(1) {
                out.push(self.compile_steps(&field, steps, g)?);
            }
        }
        Ok(out)
    }

    fn compile_steps(
        &self,
        field: &str,
        steps: &[Step],
        group: u32,
    ) -> Result<Vec<CompiledStep>, SimError> {
        if steps.is_empty() {
            return Err(SimError::workload(field, "needs at least one step"));
        }
        let mut out = Vec::with_capacity(steps.len());
        for (i, s) in steps.iter().enumerate() {
            if !s.work.is_finite() || s.work < 0.0 {
                return Err(SimError::workload(
                    format!("{field}[{i}].work"),
                    "cycles must be >= 0",
                ));
            }
            if s.repeat == 0 {
                return Err(SimError::workload(
                    format!("{field}[{i}].repeat"),
                    "must be at least 1",
                ));
            }
            let lock = match &s.lock {
                None => {
                    if s.work <= 0.0 {
                        return Err(SimError::workload(
                            format!("{field}[{i}].work"),
                            "a step without a lock needs work > 0",
                        ));
                    }
                    None
                }
                Some(name) => {
                    if !s.cs.is_finite() || s.cs <= 0.0 {
                        return Err(SimError::workload(
                            format!("{field}[{i}].cs"),
                            "cycles must be > 0",
                        ));
                    }
                    let name = name.replace("{group}", &group.to_string());
                    let index = self.locks.iter().position(|l| l.name == name);
                    let index = index.ok_or_else(|| {
                        SimError::workload(
                            format!("{field}[{i}].lock"),
                            format!("unknown lock '{name}'"),
                        )
                    })?;
                    Some(index as u32)
                }
            };
            out.push(CompiledStep {
                work: s.work,
                lock,
                cs: s.cs,
                repeat: s.repeat,
            });
        }
        Ok(out)
    }

    /// Cycles one operation takes alone on one core (handoff to nobody
    /// included), the unit that turns throughput into speedup.
    pub fn single_core_op_cycles(&self, costs: &crate::locks::LockCosts) -> f64 {
        self.operation
            .iter()
            .map(|s| {
                let cs = match &s.lock {
                    Some(name) => {
                        let algo = self.locks.iter().find(|l| &l.name == name).map(|l| l.algo);
                        s.cs + algo.map_or(0.0, |a| costs.handoff(a, 1))
                    }
                    None => 0.0,
                };
                s.repeat as f64 * (s.work + cs)
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"name":"mine","locks":[{"name":"l","algo":"ticket"}],
        "operation":[{"work":1000,"lock":"l","cs":100}]}"#;

    #[test]
    fn reads_a_workload_file() {
        let w = Workload::from_json(GOOD).unwrap();
        assert_eq!(w.name, "mine");
        assert!(w.locks[0].kernel);
        assert_eq!(w.times, TimeDist::Exponential);
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (GOOD.replace("\"cs\":100", "\"cs\":0"), "operation[0].cs"),
            (
                GOOD.replace("\"lock\":\"l\"", "\"lock\":\"m\""),
                "operation[0].lock",
            ),
            (
                GOOD.replace("\"algo\":\"ticket\"", "\"algo\":\"spin\""),
                "unknown variant",
            ),
            (GOOD.replace("\"work\"", "\"wrok\""), "wrok"),
            (GOOD.replace("\"name\":\"mine\",", ""), "name"),
        ];
        for (text, field) in cases {
            let e = Workload::from_json(&text).unwrap_err().to_string();
            assert!(e.contains(field), "{e} does not name {field}");
        }
    }
}
