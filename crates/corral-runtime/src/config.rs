//! What `corral run` tells the preload library, through environment
//! variables: the policy, the lock algorithm and the policy parameters.
//! One parser serves both sides, so the CLI rejects a bad value before the
//! program starts and the library reads exactly what the CLI validated.

use corral_locks::Algorithm;
use corral_policy::ssc::SscParams;
use serde::Serialize;

/// `none` or `lca`.
pub const ENV_POLICY: &str = "CORRAL_POLICY";
/// A lock algorithm name (`corral_locks::Algorithm`).
pub const ENV_LOCK: &str = "CORRAL_LOCK";
/// CPU time per accounting window, microseconds.
pub const ENV_SLICE_US: &str = "CORRAL_SLICE_US";
/// Monitor period, microseconds.
pub const ENV_TICK_US: &str = "CORRAL_TICK_US";
/// Lock-intensive threshold T.
pub const ENV_THRESHOLD: &str = "CORRAL_THRESHOLD";
/// Confirmations before the bound moves.
pub const ENV_CONFIRMATIONS: &str = "CORRAL_CONFIRMATIONS";
/// Re-search timeout, milliseconds.
pub const ENV_RESEARCH_MS: &str = "CORRAL_RESEARCH_MS";
/// Largest SSC; 0 = every CPU.
pub const ENV_MAX_SSC: &str = "CORRAL_MAX_SSC";
/// `1`/`0`: paper 2's migrate-back.
pub const ENV_MIGRATE_BACK: &str = "CORRAL_MIGRATE_BACK";
/// Spin probes before a waiter under the SSC policy yields.
pub const ENV_SPIN_BEFORE_YIELD: &str = "CORRAL_SPIN_BEFORE_YIELD";
/// Path of the JSON-lines decision log (optional).
pub const ENV_EVENTS: &str = "CORRAL_EVENTS";
/// Pid of the `corral run` that started the program: its direct child is
/// the observed root process.
pub const ENV_PARENT_PID: &str = "CORRAL_PARENT_PID";

/// Default accounting window: 1 ms of thread CPU time, about one scheduler
/// slice (paper 1 measures over scheduler slices, Sec. 3.2; EEVDF's base
/// slice is 0.75 ms). Short windows classify a collapsing program quickly.
pub const DEFAULT_SLICE_US: u64 = 1_000;
/// Default monitor period: 1 ms.
pub const DEFAULT_TICK_US: u64 = 1_000;
/// Default brief spin of a waiter under the SSC policy before it yields: about a
/// microsecond of probes, long enough for a running holder's short critical
/// section, short against a preempted holder's absence (design guide, "User
/// space is not the kernel").
pub const DEFAULT_SPIN_BEFORE_YIELD: u32 = 200;

/// Which policy drives the threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// corral's locks and measurement, no confinement: the control.
    None,
    /// Paper 1's lock-contention-aware SSC.
    Lca,
}

impl Policy {
    /// Parses `none` or `lca`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Policy::None),
            "lca" => Ok(Policy::Lca),
            _ => Err(format!("unknown policy '{s}'; allowed: none, lca")),
        }
    }

    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            Policy::None => "none",
            Policy::Lca => "lca",
        }
    }
}

/// Everything the runtime needs, validated.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RuntimeConfig {
    pub policy: Policy,
    pub lock: Algorithm,
    /// Accounting window in thread CPU nanoseconds.
    pub slice_ns: u64,
    /// Monitor period in nanoseconds.
    pub tick_ns: u64,
    /// Spin probes before a waiter under the SSC policy yields.
    pub spin_before_yield: u32,
    /// The SSC controller's parameters.
    pub ssc: SscParams,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            policy: Policy::Lca,
            lock: Algorithm::Ticket,
            slice_ns: DEFAULT_SLICE_US * 1_000,
            tick_ns: DEFAULT_TICK_US * 1_000,
            spin_before_yield: DEFAULT_SPIN_BEFORE_YIELD,
            ssc: SscParams::user_space(),
        }
    }
}

fn parse_num<T: std::str::FromStr>(name: &str, v: &str, what: &str) -> Result<T, String> {
    v.trim()
        .parse()
        .map_err(|_| format!("{name}: invalid value '{v}': expected {what}"))
}

impl RuntimeConfig {
    /// Reads a configuration through `get` (the environment, or a map in
    /// tests); absent keys keep their defaults. The error is one line.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut c = RuntimeConfig::default();
        if let Some(v) = get(ENV_POLICY) {
            c.policy = Policy::parse(&v)?;
        }
        if let Some(v) = get(ENV_LOCK) {
            c.lock = v
                .parse()
                .map_err(|e: corral_locks::UnknownAlgorithm| e.to_string())?;
        }
        if let Some(v) = get(ENV_SLICE_US) {
            let us: u64 = parse_num(ENV_SLICE_US, &v, "microseconds >= 100")?;
            if us < 100 {
                return Err(format!(
                    "{ENV_SLICE_US}: invalid value '{v}': expected microseconds >= 100"
                ));
            }
            c.slice_ns = us * 1_000;
        }
        if let Some(v) = get(ENV_TICK_US) {
            let us: u64 = parse_num(ENV_TICK_US, &v, "microseconds >= 100")?;
            if us < 100 {
                return Err(format!(
                    "{ENV_TICK_US}: invalid value '{v}': expected microseconds >= 100"
                ));
            }
            c.tick_ns = us * 1_000;
        }
        if let Some(v) = get(ENV_THRESHOLD) {
            let t: f64 = parse_num(ENV_THRESHOLD, &v, "a share in (0, 1)")?;
            if !(t > 0.0 && t < 1.0) {
                return Err(format!(
                    "{ENV_THRESHOLD}: invalid value '{v}': expected a share in (0, 1)"
                ));
            }
            c.ssc.detect.qualify_share = t;
            c.ssc.detect.release_share = c.ssc.detect.release_share.min(t / 2.0);
        }
        if let Some(v) = get(ENV_CONFIRMATIONS) {
            let n: u32 = parse_num(ENV_CONFIRMATIONS, &v, "an integer >= 1")?;
            if n == 0 {
                return Err(format!(
                    "{ENV_CONFIRMATIONS}: invalid value '{v}': expected an integer >= 1"
                ));
            }
            c.ssc.confirmations = n;
        }
        if let Some(v) = get(ENV_RESEARCH_MS) {
            let ms: u64 = parse_num(ENV_RESEARCH_MS, &v, "milliseconds >= 1")?;
            if ms == 0 {
                return Err(format!(
                    "{ENV_RESEARCH_MS}: invalid value '{v}': expected milliseconds >= 1"
                ));
            }
            c.ssc.research_interval = ms * 1_000_000;
        }
        if let Some(v) = get(ENV_MAX_SSC) {
            c.ssc.max_bound = parse_num(ENV_MAX_SSC, &v, "a core count (0 = all)")?;
        }
        if let Some(v) = get(ENV_MIGRATE_BACK) {
            c.ssc.migrate_back = match v.as_str() {
                "1" | "true" => true,
                "0" | "false" => false,
                _ => {
                    return Err(format!(
                        "{ENV_MIGRATE_BACK}: invalid value '{v}': expected 0 or 1"
                    ))
                }
            };
        }
        if let Some(v) = get(ENV_SPIN_BEFORE_YIELD) {
            c.spin_before_yield = parse_num(ENV_SPIN_BEFORE_YIELD, &v, "a spin count")?;
        }
        Ok(c)
    }

    /// Reads the process environment.
    pub fn from_env() -> Result<Self, String> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The environment that reproduces this configuration in a child.
    pub fn to_env(&self) -> Vec<(&'static str, String)> {
        vec![
            (ENV_POLICY, self.policy.name().to_string()),
            (ENV_LOCK, self.lock.name().to_string()),
            (ENV_SLICE_US, (self.slice_ns / 1_000).to_string()),
            (ENV_TICK_US, (self.tick_ns / 1_000).to_string()),
            (ENV_THRESHOLD, self.ssc.detect.qualify_share.to_string()),
            (ENV_CONFIRMATIONS, self.ssc.confirmations.to_string()),
            (
                ENV_RESEARCH_MS,
                (self.ssc.research_interval / 1_000_000).to_string(),
            ),
            (ENV_MAX_SSC, self.ssc.max_bound.to_string()),
            (
                ENV_MIGRATE_BACK,
                u8::from(self.ssc.migrate_back).to_string(),
            ),
            (ENV_SPIN_BEFORE_YIELD, self.spin_before_yield.to_string()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(pairs: &[(&str, &str)]) -> Result<RuntimeConfig, String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        RuntimeConfig::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn round_trips_through_the_environment() {
        let mut c = RuntimeConfig {
            policy: Policy::None,
            lock: Algorithm::Mcs,
            ..Default::default()
        };
        c.ssc.confirmations = 3;
        c.ssc.migrate_back = false;
        let env: Vec<(String, String)> = c
            .to_env()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let map: HashMap<String, String> = env.into_iter().collect();
        assert_eq!(
            RuntimeConfig::from_lookup(|k| map.get(k).cloned()).unwrap(),
            c
        );
    }

    #[test]
    fn rejects_bad_values_with_the_variable_named() {
        assert!(parse(&[(ENV_POLICY, "fast")])
            .unwrap_err()
            .contains("none, lca"));
        assert!(parse(&[(ENV_LOCK, "bakery")])
            .unwrap_err()
            .contains("ticket"));
        assert!(parse(&[(ENV_THRESHOLD, "1.5")])
            .unwrap_err()
            .contains(ENV_THRESHOLD));
        assert!(parse(&[(ENV_SLICE_US, "10")])
            .unwrap_err()
            .contains(ENV_SLICE_US));
        assert!(parse(&[(ENV_CONFIRMATIONS, "0")]).is_err());
    }

    #[test]
    fn defaults_keep_the_papers_values_but_no_growth_on_load() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.ssc.detect.qualify_share, 0.10);
        assert_eq!(c.ssc.confirmations, 2);
        assert_eq!(c.ssc.research_interval, 30_000_000_000);
        assert_eq!(c.ssc.grow_runnable_per_core, 0.0);
    }
}
