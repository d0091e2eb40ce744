//! Policy names `corral sim --policy` accepts. A baseline is named for the
//! lock the machine has: `ticket` (2012 kernels, paper 3), `qspinlock`
//! (Linux since 4.2), `mcs` (paper 3's cure). A scheduling policy runs over
//! the workload's declared locks (ticket in every preset, for reproducing the
//! papers), or over another lock as `POLICY-LOCK`, e.g. `lca-qspinlock`.

use crate::ca::ContentionAware;
use crate::config::{SimConfig, SimResult};
use crate::engine::simulate;
use crate::error::SimError;
use crate::faithful::Faithful;
use crate::lca::Lca;
use crate::locks::LockAlgo;
use crate::policy::{AllCores, OverLock, SimPolicy};
use crate::workload::Workload;
use corral_policy::ssc::SscParams;

/// Every policy name with what it runs, in listing order.
pub const POLICIES: [(&str, &str); 12] = [
    (
        "ticket",
        "every core, the workload's locks (presets: ticket, 2012 kernels)",
    ),
    ("default", "alias of ticket, for old commands and figures"),
    (
        "qspinlock",
        "every core, spin locks are Linux's qspinlock (4.2+)",
    ),
    ("mcs", "every core, spin locks are MCS (paper 3's cure)"),
    (
        "lca",
        "corral's SSC controller over the workload's locks (ticket)",
    ),
    (
        "lca-qspinlock",
        "lca over qspinlock: the case of today's kernels",
    ),
    ("lca-mcs", "lca over MCS"),
    ("lca-2013", "paper 1's algorithm exactly"),
    ("lca-grow", "diagnostic: lca with growth on load"),
    ("lca-nowarm", "diagnostic: lca without the vote warm-up"),
    ("faithful", "paper 4's FF time quanta"),
    ("ca", "paper 5's clustering, mapping plan and CSF"),
];

/// The names of [`POLICIES`], for messages.
pub const POLICY_NAMES: [&str; 12] = [
    "ticket",
    "default",
    "qspinlock",
    "mcs",
    "lca",
    "lca-qspinlock",
    "lca-mcs",
    "lca-2013",
    "lca-grow",
    "lca-nowarm",
    "faithful",
    "ca",
];

/// Locks a scheduling policy can run over, as the `-LOCK` suffix names them.
pub const OVER_LOCKS: [(&str, LockAlgo); 2] =
    [("qspinlock", LockAlgo::Qspinlock), ("mcs", LockAlgo::Mcs)];

/// Scheduling policies that take a `-LOCK` suffix.
pub const SCHEDULERS: [&str; 6] = [
    "lca",
    "lca-2013",
    "lca-grow",
    "lca-nowarm",
    "faithful",
    "ca",
];

/// `name` split into a scheduling policy (`None`: every core) and the lock
/// replacing the declared spin locks (`None`: as declared).
///
/// # Errors
///
/// [`SimError::UnknownPolicy`] for a name outside this grammar.
pub fn parse_policy(name: &str) -> Result<(Option<&str>, Option<LockAlgo>), SimError> {
    let lock_named = |l: &str| OVER_LOCKS.iter().find(|(n, _)| *n == l).map(|o| o.1);
    match name {
        "ticket" | "default" => return Ok((None, None)),
        _ => {}
    }
    if let Some(lock) = lock_named(name) {
        return Ok((None, Some(lock)));
    }
    if SCHEDULERS.contains(&name) {
        return Ok((Some(name), None));
    }
    // The longest scheduler prefix wins: `lca-2013-mcs` is lca-2013 over MCS.
    let over = SCHEDULERS
        .iter()
        .filter_map(|s| {
            let lock = name.strip_prefix(s)?.strip_prefix('-')?;
            Some((*s, lock_named(lock)?))
        })
        .max_by_key(|(s, _)| s.len());
    over.map(|(s, l)| (Some(s), Some(l)))
        .ok_or_else(|| SimError::UnknownPolicy {
            name: name.to_string(),
            known: &POLICY_NAMES,
        })
}

/// A fresh policy called `name` (see [`parse_policy`]) for a machine of
/// `cores` cores.
///
/// # Errors
///
/// [`SimError::UnknownPolicy`] for a name [`parse_policy`] rejects.
pub fn make_policy(name: &str, cores: u32) -> Result<Box<dyn SimPolicy>, SimError> {
    let (scheduler, lock) = parse_policy(name)?;
    Ok(match scheduler {
        None => over(AllCores::default(), lock),
        Some("lca") => over(Lca::improved(cores), lock),
        Some("lca-nowarm") => over(Lca::with_params(SscParams::kernel_without_warmup()), lock),
        Some("lca-grow") => over(Lca::with_params(SscParams::default()), lock),
        Some("lca-2013") => over(Lca::paper_2013(cores), lock),
        Some("faithful") => over(Faithful::default(), lock),
        Some("ca") => over(ContentionAware::default(), lock),
        Some(other) => unreachable!("parse_policy admitted {other}"),
    })
}

/// Runs `workload` on `cfg`'s machine under the policy called `name`, its
/// concrete type known to the engine (so that its per-event calls inline,
/// unlike through [`make_policy`]'s box).
///
/// # Errors
///
/// [`SimError::UnknownPolicy`] for a name [`parse_policy`] rejects, or the
/// run's error (see [`simulate`]).
pub fn simulate_named(
    name: &str,
    cfg: &SimConfig,
    workload: &Workload,
) -> Result<SimResult, SimError> {
    let (scheduler, lock) = parse_policy(name)?;
    let cores = cfg.machine.cores;
    let run = Run {
        cfg,
        workload,
        lock,
    };
    match scheduler {
        None => run.with(AllCores::default()),
        Some("lca") => run.with(Lca::improved(cores)),
        Some("lca-nowarm") => run.with(Lca::with_params(SscParams::kernel_without_warmup())),
        Some("lca-grow") => run.with(Lca::with_params(SscParams::default())),
        Some("lca-2013") => run.with(Lca::paper_2013(cores)),
        Some("faithful") => run.with(Faithful::default()),
        Some("ca") => run.with(ContentionAware::default()),
        Some(other) => unreachable!("parse_policy admitted {other}"),
    }
}

/// One run waiting for its policy.
struct Run<'a> {
    cfg: &'a SimConfig,
    workload: &'a Workload,
    lock: Option<LockAlgo>,
}

impl Run<'_> {
    /// Runs under `policy`, over the named lock if any.
    fn with<P: SimPolicy>(&self, mut policy: P) -> Result<SimResult, SimError> {
        match self.lock {
            Some(lock) => simulate(self.cfg, self.workload, &mut OverLock::new(policy, lock)),
            None => simulate(self.cfg, self.workload, &mut policy),
        }
    }
}

/// `policy`, over `lock` if one is named.
fn over<P: SimPolicy + 'static>(policy: P, lock: Option<LockAlgo>) -> Box<dyn SimPolicy> {
    match lock {
        Some(lock) => Box::new(OverLock::new(policy, lock)),
        None => Box::new(policy),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_names_match_and_all_parse() {
        let listed: Vec<&str> = POLICIES.iter().map(|p| p.0).collect();
        assert_eq!(listed, POLICY_NAMES);
        for name in POLICY_NAMES {
            assert!(make_policy(name, 4).is_ok(), "{name}");
        }
    }

    #[test]
    fn baselines_are_named_for_their_lock() {
        assert_eq!(parse_policy("ticket").unwrap(), (None, None));
        assert_eq!(parse_policy("default").unwrap(), (None, None));
        let q = Some(LockAlgo::Qspinlock);
        assert_eq!(parse_policy("qspinlock").unwrap(), (None, q));
        assert_eq!(parse_policy("mcs").unwrap(), (None, Some(LockAlgo::Mcs)));
    }

    #[test]
    fn scheduling_policies_run_over_a_named_lock() {
        let q = Some(LockAlgo::Qspinlock);
        assert_eq!(parse_policy("lca").unwrap(), (Some("lca"), None));
        assert_eq!(parse_policy("lca-qspinlock").unwrap(), (Some("lca"), q));
        assert_eq!(
            parse_policy("lca-2013-qspinlock").unwrap(),
            (Some("lca-2013"), q)
        );
        let mcs = Some(LockAlgo::Mcs);
        assert_eq!(
            parse_policy("faithful-mcs").unwrap(),
            (Some("faithful"), mcs)
        );
        for bad in [
            "lca-ticket",
            "lca-",
            "qspinlock-lca",
            "lca-qspin",
            "tas",
            "",
        ] {
            assert!(parse_policy(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn over_lock_replaces_spin_locks_only() {
        for (name, want) in [
            ("ticket", LockAlgo::Ticket),
            ("qspinlock", LockAlgo::Qspinlock),
            ("lca-qspinlock", LockAlgo::Qspinlock),
            ("lca-mcs", LockAlgo::Mcs),
            ("lca", LockAlgo::Ticket),
        ] {
            let p = make_policy(name, 8).unwrap();
            assert_eq!(p.lock_algo(LockAlgo::Ticket, true), want, "{name}");
            assert_eq!(
                p.lock_algo(LockAlgo::Mutex, false),
                LockAlgo::Mutex,
                "{name}"
            );
        }
        let p = make_policy("qspinlock", 8).unwrap();
        assert_eq!(p.lock_algo(LockAlgo::Tas, true), LockAlgo::Qspinlock);
    }
}
