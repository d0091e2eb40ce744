//! Why a simulation, a sweep or a workload was refused.

use crate::config::MAX_CORES;
use std::fmt;

/// An input the simulator cannot run. Each message names the offending field
/// or value, so a driver can print it as it is.
#[derive(Debug)]
pub enum SimError {
    /// The workload's JSON text does not parse or does not fit the schema
    /// (unknown field, unknown lock algorithm, missing name, ...).
    WorkloadJson(serde_json::Error),
    /// A workload value the schema accepts but the simulator cannot run.
    Workload {
        /// Path of the field, e.g. `operation[0].cs` or `locks[1].name`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The machine has no cores, or more than [`MAX_CORES`].
    Cores(u32),
    /// Simulated seconds that are not a positive finite number.
    Seconds(f64),
    /// Cores times tasks per core is too many tasks to simulate.
    TooManyTasks,
    /// A policy name [`crate::make_policy`] does not know.
    UnknownPolicy {
        /// The name asked for.
        name: String,
        /// The names it knows, for the message.
        known: &'static [&'static str],
    },
}

impl SimError {
    /// A bad workload value at `field`.
    pub(crate) fn workload(field: impl Into<String>, reason: impl Into<String>) -> Self {
        SimError::Workload {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::WorkloadJson(e) => write!(f, "{e}"),
            SimError::Workload { field, reason } => write!(f, "{field}: {reason}"),
            SimError::Cores(n) => write!(f, "cores: must be in 1..={MAX_CORES}, not {n}"),
            SimError::Seconds(_) => f.write_str("seconds: must be > 0"),
            SimError::TooManyTasks => f.write_str("tasks: too many tasks to simulate"),
            SimError::UnknownPolicy { name, known } => {
                write!(f, "unknown policy '{name}'; known: {}", known.join(", "))
            }
        }
    }
}

impl std::error::Error for SimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SimError::WorkloadJson(e) => Some(e),
            _ => None,
        }
    }
}
