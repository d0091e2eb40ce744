//! What `corral run` tells the preload library, through environment
//! variables: the policy, the lock algorithm and the policy parameters.
//! One parser serves both sides, so the CLI rejects a bad value before the
//! program starts and the library reads exactly what the CLI validated.

use std::fmt;
use std::str::FromStr;

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
/// Vote warm-up after an SSC size change, microseconds; 0 turns it off.
pub const ENV_VOTE_WARMUP_US: &str = "CORRAL_VOTE_WARMUP_US";
/// Largest SSC; 0 = every CPU.
pub const ENV_MAX_SSC: &str = "CORRAL_MAX_SSC";
/// `1`/`0`: paper 2's migrate-back.
pub const ENV_MIGRATE_BACK: &str = "CORRAL_MIGRATE_BACK";
/// Spin probes before a waiter under the SSC policy yields.
pub const ENV_SPIN_BEFORE_PARK: &str = "CORRAL_SPIN_BEFORE_PARK";
/// `park` (default) or `spin`: how a waiter of a spinning algorithm waits
/// when no policy manages it.
pub const ENV_WAIT: &str = "CORRAL_WAIT";
/// Set (any value): every CA round in the decision log also carries the
/// members' similarity matrix (a diagnostic; `threads^2` numbers a round).
pub const ENV_CA_DEBUG: &str = "CORRAL_CA_DEBUG";
/// Path of the JSON-lines decision log (optional).
pub const ENV_EVENTS: &str = "CORRAL_EVENTS";
/// Pid of the `corral run` that started the program: its direct child is
/// the observed root process.
pub const ENV_PARENT_PID: &str = match ENV_PARENT_PID_C.to_str() {
    Ok(name) => name,
    Err(_) => panic!("an ASCII name"),
};
/// Where `libcorral_shim.so` finds the full library (`libcorral_preload.so`)
/// that it loads at a process's first pthread lock call: `corral run` puts
/// the shim in `LD_PRELOAD` and the full library's path here.
pub const ENV_SHIM_TARGET: &str = "CORRAL_SHIM_TARGET";
/// [`ENV_PARENT_PID`] as a C string, for `getenv` where nothing may
/// allocate (the preload reads it at every exec).
pub const ENV_PARENT_PID_C: &core::ffi::CStr = c"CORRAL_PARENT_PID";
/// Contended `pthread_mutex_lock` calls a process makes on glibc's locks
/// before `libcorral_shim.so` loads the full library (unset or 0: at the
/// first interposed call). Read by the shim at exec
/// ([`RuntimeConfig::load_after_contended`]).
pub const ENV_LOAD_AFTER_CONTENDED: &str = "CORRAL_LOAD_AFTER_CONTENDED";
/// The machine's CPU topology as `corral run` read it from sysfs once
/// (`topology::encode`): every process under it starts its monitor
/// without reading sysfs again (a dozen files per CPU).
pub const ENV_TOPOLOGY: &str = "CORRAL_TOPOLOGY";
/// CPUs `corral run` may use, for its processes' waiters (no waiter spins
/// while spinners would take them all); read at load without allocating.
pub const ENV_CPUS_C: &core::ffi::CStr = c"CORRAL_CPUS";

/// The TSC calibration `corral run` made once (32.32 ns per tick, decimal):
/// every process under it takes it instead of spinning 250 us to make its
/// own (`corral_locks::sys::clock::adopt_calibration`).
pub const ENV_TSC_Q32_C: &core::ffi::CStr = c"CORRAL_TSC_Q32";

/// The descriptor (decimal) of the start pipe's read end in the process
/// `corral run` starts without a step between fork and exec: the preload
/// waits at load until corral's watcher, which will kill the process if
/// corral dies, writes to it (and exits if the pipe closes unwritten), so
/// that no moment of the start escapes the watcher.
pub const ENV_START_FD_C: &core::ffi::CStr = c"CORRAL_START_FD";
/// What `/proc/self/fd/N` reads for that descriptor (`pipe:[INODE]`): a
/// process that closed it and reused its number is not taken in.
pub const ENV_START_LINK_C: &core::ffi::CStr = c"CORRAL_START_LINK";

/// Default accounting window: 1 ms of thread CPU time, about one scheduler
/// slice (paper 1 measures over scheduler slices, Sec. 3.2; EEVDF's base
/// slice is 0.75 ms). Short windows classify a collapsing program quickly.
pub const DEFAULT_SLICE_US: u64 = 1_000;
/// Default monitor period: 1 ms.
pub const DEFAULT_TICK_US: u64 = 1_000;
/// Default brief spin of a waiter before it parks: about a microsecond of
/// probes, long enough for a running holder's short critical section, short
/// against a preempted holder's absence (design guide, "User space is not
/// the kernel").
pub const DEFAULT_SPIN_BEFORE_PARK: u32 = 200;

/// Which policy drives the threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// corral's locks and measurement, no confinement: the control.
    None,
    /// Paper 1's lock-contention-aware SSC.
    Lca,
    /// Paper 5's contention-aware scheduler: threads clustered by the locks
    /// they share, each cluster pinned to CPUs.
    Ca,
    /// [`Policy::Ca`] with Critical-Section-First: a nice bonus by lock
    /// count, and rseq slice extension where the kernel has it.
    CaCsf,
}

impl Policy {
    /// Whether the CA-Scheduler runs (with or without CSF).
    pub fn is_ca(self) -> bool {
        matches!(self, Policy::Ca | Policy::CaCsf)
    }

    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            Policy::None => "none",
            Policy::Lca => "lca",
            Policy::Ca => "ca",
            Policy::CaCsf => "ca,csf",
        }
    }
}

impl FromStr for Policy {
    type Err = UnknownPolicy;

    /// Parses `none`, `lca`, `ca` or `ca,csf`.
    fn from_str(s: &str) -> Result<Self, UnknownPolicy> {
        match s {
            "none" => Ok(Policy::None),
            "lca" => Ok(Policy::Lca),
            "ca" => Ok(Policy::Ca),
            "ca,csf" | "csf,ca" => Ok(Policy::CaCsf),
            _ => Err(UnknownPolicy(s.to_owned())),
        }
    }
}

/// How a waiter of a spinning lock algorithm (every `--lock` but futex and
/// adaptive) waits where no policy manages it (`--policy none`, a forked
/// child, a real-time thread, a rejected configuration).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Waiting {
    /// Spin briefly, then sleep until a release wakes it: never burns a
    /// core behind a holder that is not running. The default.
    Park,
    /// Wait as the algorithm does (a FIFO spin), without bound: for study
    /// and reproduction of collapse only.
    Spin,
}

impl Waiting {
    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            Waiting::Park => "park",
            Waiting::Spin => "spin",
        }
    }
}

impl FromStr for Waiting {
    type Err = UnknownWaiting;

    /// Parses `park` or `spin`.
    fn from_str(s: &str) -> Result<Self, UnknownWaiting> {
        match s {
            "park" => Ok(Waiting::Park),
            "spin" => Ok(Waiting::Spin),
            _ => Err(UnknownWaiting(s.to_owned())),
        }
    }
}

/// A waiting name that is neither `park` nor `spin`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownWaiting(pub String);

impl fmt::Display for UnknownWaiting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown waiting '{}'; allowed: park, spin", self.0)
    }
}

impl std::error::Error for UnknownWaiting {}

/// A policy name that is none of [`Policy`]'s; its message lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPolicy(pub String);

impl fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown policy '{}'; allowed: none, lca, ca, ca,csf",
            self.0
        )
    }
}

impl std::error::Error for UnknownPolicy {}

/// A `CORRAL_*` value the runtime cannot use: which variable, what it held
/// and what it accepts, so that a caller can name its own flag for `key`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable, one of the `ENV_*` names of this module.
    pub key: &'static str,
    /// The value as it was given.
    pub value: String,
    /// What the variable accepts.
    pub expected: Expected,
}

impl ConfigError {
    fn new(key: &'static str, value: &str, expected: Expected) -> Self {
        ConfigError {
            key,
            value: value.to_owned(),
            expected,
        }
    }
}

/// Prints `KEY: invalid value 'VALUE': expected WHAT`.
impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: invalid value '{}': expected {}",
            self.key, self.value, self.expected
        )
    }
}

impl std::error::Error for ConfigError {}

/// What a configuration variable accepts; its `Display` completes
/// "expected ...".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expected {
    /// A [`Policy`] name.
    Policy,
    /// A [`Waiting`] name.
    Waiting,
    /// A lock algorithm name ([`Algorithm::ALL`]).
    LockAlgorithm,
    /// A whole number of `unit`s, at least `min`.
    Duration {
        /// The variable's unit.
        unit: TimeUnit,
        /// The shortest accepted.
        min: u64,
    },
    /// At most `max` `unit`s: more overflows the 64-bit nanosecond count
    /// the runtime keeps.
    DurationFits {
        /// The variable's unit.
        unit: TimeUnit,
        /// The largest value whose nanoseconds fit in a `u64`.
        max: u64,
    },
    /// A share strictly between 0 and 1.
    Share,
    /// An integer of at least 1.
    AtLeastOne,
    /// A core count, 0 meaning every CPU.
    CoreCount,
    /// `0` or `1` (also `false` or `true`).
    ZeroOrOne,
    /// A spin count (32 bits).
    SpinCount,
    /// A count of contended hand-offs (32 bits), 0 for none.
    CallCount,
}

/// The unit of a duration variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    /// `*_US` variables.
    Micros,
    /// `*_MS` variables.
    Millis,
}

impl TimeUnit {
    /// Nanoseconds in one unit.
    pub fn nanos(self) -> u64 {
        match self {
            TimeUnit::Micros => 1_000,
            TimeUnit::Millis => 1_000_000,
        }
    }

    /// The unit's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Micros => "microseconds",
            TimeUnit::Millis => "milliseconds",
        }
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expected::Policy => f.write_str("one of none, lca, ca, ca,csf"),
            Expected::LockAlgorithm => {
                f.write_str("one of ")?;
                for (i, alg) in Algorithm::ALL.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{alg}")?;
                }
                Ok(())
            }
            Expected::Duration { unit, min } => write!(f, "{} >= {min}", unit.name()),
            Expected::DurationFits { unit, max } => write!(
                f,
                "{} <= {max} (larger overflows 64-bit nanoseconds)",
                unit.name()
            ),
            Expected::Share => f.write_str("a share in (0, 1)"),
            Expected::AtLeastOne => f.write_str("an integer >= 1"),
            Expected::CoreCount => f.write_str("a core count (0 = all)"),
            Expected::ZeroOrOne => f.write_str("0 or 1"),
            Expected::SpinCount => f.write_str("a spin count"),
            Expected::CallCount => f.write_str("a count of contended hand-offs (0 for none)"),
            Expected::Waiting => f.write_str("park or spin"),
        }
    }
}

/// Everything the runtime needs, validated.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RuntimeConfig {
    /// Which policy drives the threads.
    pub policy: Policy,
    /// The lock algorithm that replaces pthread mutexes and spin locks.
    pub lock: Algorithm,
    /// Accounting window in thread CPU nanoseconds.
    pub slice_ns: u64,
    /// Monitor period in nanoseconds.
    pub tick_ns: u64,
    /// Spin probes before a waiter parks.
    pub spin_before_park: u32,
    /// How an unmanaged waiter of a spinning algorithm waits.
    pub waiting: Waiting,
    /// The SSC controller's parameters.
    pub ssc: SscParams,
    /// Contended hand-offs (unlocks of a mutex a thread sleeps on) a
    /// process makes on glibc's locks before corral's library loads in it;
    /// 0: it loads at the first interposed call. Applies under a parking
    /// algorithm only, whose mutex words are glibc's: see
    /// [`RuntimeConfig::load_after`].
    pub load_after_contended: u32,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            policy: Policy::Lca,
            // The futex mutex: a waiter sleeps in the kernel's queue, so a
            // holder that yields or sleeps costs no waiter a core (`corral
            // bench apps`: sysbench threads 0.55-0.95x glibc, the ticket
            // lock 0.18-0.88x; sysbench mutex 1.16-2.13x against
            // 1.02-1.77x). The FIFO spin locks stay for study (`--lock`).
            lock: Algorithm::Futex,
            slice_ns: DEFAULT_SLICE_US * 1_000,
            tick_ns: DEFAULT_TICK_US * 1_000,
            spin_before_park: DEFAULT_SPIN_BEFORE_PARK,
            waiting: Waiting::Park,
            ssc: SscParams::user_space(),
            load_after_contended: corral_policy::engage::LOAD_AFTER_CONTENDED,
        }
    }
}

fn parse_num<T: FromStr>(key: &'static str, v: &str, expected: Expected) -> Result<T, ConfigError> {
    v.trim()
        .parse()
        .map_err(|_| ConfigError::new(key, v, expected))
}

/// A duration variable of at least `min` `unit`s, as nanoseconds. Checked:
/// a value whose nanoseconds overflow is refused, not wrapped.
fn parse_duration_ns(
    key: &'static str,
    v: &str,
    unit: TimeUnit,
    min: u64,
) -> Result<u64, ConfigError> {
    let expected = Expected::Duration { unit, min };
    let n: u64 = parse_num(key, v, expected)?;
    if n < min {
        return Err(ConfigError::new(key, v, expected));
    }
    n.checked_mul(unit.nanos()).ok_or_else(|| {
        let max = u64::MAX / unit.nanos();
        ConfigError::new(key, v, Expected::DurationFits { unit, max })
    })
}

impl RuntimeConfig {
    /// The contended hand-offs before the load that this configuration's
    /// processes are given: [`RuntimeConfig::load_after_contended`] under a
    /// parking algorithm, 0 under another (whose mutexes glibc must not
    /// lock first).
    #[must_use]
    pub fn load_after(&self) -> u32 {
        corral_policy::engage::load_after(self.load_after_contended, self.lock.is_parking())
    }

    /// Reads a configuration through `get` (the environment, or a map in
    /// tests); absent keys keep their defaults. The error names the
    /// variable, its value and what it accepts.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut c = RuntimeConfig::default();
        if let Some(v) = get(ENV_POLICY) {
            c.policy = v
                .parse()
                .map_err(|_: UnknownPolicy| ConfigError::new(ENV_POLICY, &v, Expected::Policy))?;
        }
        if let Some(v) = get(ENV_LOCK) {
            c.lock = v.parse().map_err(|_: corral_locks::UnknownAlgorithm| {
                ConfigError::new(ENV_LOCK, &v, Expected::LockAlgorithm)
            })?;
        }
        if let Some(v) = get(ENV_SLICE_US) {
            c.slice_ns = parse_duration_ns(ENV_SLICE_US, &v, TimeUnit::Micros, 100)?;
        }
        if let Some(v) = get(ENV_TICK_US) {
            c.tick_ns = parse_duration_ns(ENV_TICK_US, &v, TimeUnit::Micros, 100)?;
        }
        if let Some(v) = get(ENV_THRESHOLD) {
            let t: f64 = parse_num(ENV_THRESHOLD, &v, Expected::Share)?;
            if !(t > 0.0 && t < 1.0) {
                return Err(ConfigError::new(ENV_THRESHOLD, &v, Expected::Share));
            }
            c.ssc.detect.qualify_share = t;
            c.ssc.detect.release_share = c.ssc.detect.release_share.min(t / 2.0);
        }
        if let Some(v) = get(ENV_CONFIRMATIONS) {
            let n: u32 = parse_num(ENV_CONFIRMATIONS, &v, Expected::AtLeastOne)?;
            if n == 0 {
                return Err(ConfigError::new(
                    ENV_CONFIRMATIONS,
                    &v,
                    Expected::AtLeastOne,
                ));
            }
            c.ssc.confirmations = n;
        }
        if let Some(v) = get(ENV_RESEARCH_MS) {
            c.ssc.research_interval = parse_duration_ns(ENV_RESEARCH_MS, &v, TimeUnit::Millis, 1)?;
        }
        if let Some(v) = get(ENV_VOTE_WARMUP_US) {
            c.ssc.vote_warmup = parse_duration_ns(ENV_VOTE_WARMUP_US, &v, TimeUnit::Micros, 0)?;
        }
        if let Some(v) = get(ENV_MAX_SSC) {
            c.ssc.max_bound = parse_num(ENV_MAX_SSC, &v, Expected::CoreCount)?;
        }
        if let Some(v) = get(ENV_MIGRATE_BACK) {
            c.ssc.migrate_back = match v.as_str() {
                "1" | "true" => true,
                "0" | "false" => false,
                _ => return Err(ConfigError::new(ENV_MIGRATE_BACK, &v, Expected::ZeroOrOne)),
            };
        }
        if let Some(v) = get(ENV_SPIN_BEFORE_PARK) {
            c.spin_before_park = parse_num(ENV_SPIN_BEFORE_PARK, &v, Expected::SpinCount)?;
        }
        if let Some(v) = get(ENV_LOAD_AFTER_CONTENDED) {
            c.load_after_contended = parse_num(ENV_LOAD_AFTER_CONTENDED, &v, Expected::CallCount)?;
        }
        if let Some(v) = get(ENV_WAIT) {
            c.waiting = v
                .parse()
                .map_err(|_: UnknownWaiting| ConfigError::new(ENV_WAIT, &v, Expected::Waiting))?;
        }
        Ok(c)
    }

    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
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
            (
                ENV_VOTE_WARMUP_US,
                (self.ssc.vote_warmup / 1_000).to_string(),
            ),
            (ENV_MAX_SSC, self.ssc.max_bound.to_string()),
            (
                ENV_MIGRATE_BACK,
                u8::from(self.ssc.migrate_back).to_string(),
            ),
            (ENV_SPIN_BEFORE_PARK, self.spin_before_park.to_string()),
            (ENV_WAIT, self.waiting.name().to_string()),
            (ENV_LOAD_AFTER_CONTENDED, self.load_after().to_string()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(pairs: &[(&str, &str)]) -> Result<RuntimeConfig, ConfigError> {
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
            // What an MCS configuration's processes are given: the load
            // at once (its mutexes are not glibc's).
            load_after_contended: 0,
            ..Default::default()
        };
        c.ssc.confirmations = 3;
        c.ssc.migrate_back = false;
        c.ssc.vote_warmup = 1_250_000;
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
    fn only_a_parking_lock_passes_a_deferred_load_on() {
        let futex = RuntimeConfig::default();
        assert_eq!(
            futex.load_after(),
            corral_policy::engage::LOAD_AFTER_CONTENDED
        );
        let env = |c: &RuntimeConfig| {
            c.to_env()
                .into_iter()
                .find(|(k, _)| *k == ENV_LOAD_AFTER_CONTENDED)
                .map(|(_, v)| v)
        };
        assert_eq!(env(&futex).as_deref(), Some("1000"));
        let ticket = RuntimeConfig {
            lock: Algorithm::Ticket,
            ..Default::default()
        };
        assert_eq!(ticket.load_after(), 0);
        assert_eq!(env(&ticket).as_deref(), Some("0"));
    }

    #[test]
    fn rejects_bad_values_with_the_variable_named() {
        let policy = parse(&[(ENV_POLICY, "fast")]).unwrap_err();
        assert_eq!(policy.key, ENV_POLICY);
        assert_eq!(policy.expected, Expected::Policy);
        assert!(policy.to_string().contains("none, lca"));
        let lock = parse(&[(ENV_LOCK, "bakery")]).unwrap_err();
        assert_eq!((lock.key, lock.value.as_str()), (ENV_LOCK, "bakery"));
        assert!(lock.to_string().contains("ticket"));
        assert_eq!(
            parse(&[(ENV_THRESHOLD, "1.5")]).unwrap_err().to_string(),
            "CORRAL_THRESHOLD: invalid value '1.5': expected a share in (0, 1)"
        );
        assert_eq!(
            parse(&[(ENV_SLICE_US, "10")]).unwrap_err(),
            ConfigError {
                key: ENV_SLICE_US,
                value: "10".into(),
                expected: Expected::Duration {
                    unit: TimeUnit::Micros,
                    min: 100
                },
            }
        );
        assert_eq!(
            parse(&[(ENV_CONFIRMATIONS, "0")]).unwrap_err().key,
            ENV_CONFIRMATIONS
        );
    }

    #[test]
    fn durations_whose_nanoseconds_overflow_are_refused() {
        // Unchecked, `us * 1_000` wraps (release) or panics (debug).
        let max_us = u64::MAX / 1_000;
        for key in [ENV_SLICE_US, ENV_TICK_US] {
            assert!(parse(&[(key, &max_us.to_string())]).is_ok());
            let e = parse(&[(key, &(max_us + 1).to_string())]).unwrap_err();
            assert_eq!(e.key, key);
            assert_eq!(
                e.expected,
                Expected::DurationFits {
                    unit: TimeUnit::Micros,
                    max: max_us
                }
            );
        }
        let e = parse(&[(ENV_RESEARCH_MS, &u64::MAX.to_string())]).unwrap_err();
        assert_eq!(e.key, ENV_RESEARCH_MS);
        assert!(
            e.to_string().contains("milliseconds <= 18446744073709"),
            "{e}"
        );
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
