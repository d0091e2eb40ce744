//! `--policy`'s value: a placement policy (none, lca or ca, optionally
//! with csf) and, with `ff`,
//! faithful scheduling beside it. They act on different knobs (affinity;
//! nice and slice), so they compose.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::config::Policy;

/// The policies `corral run` applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PolicySet {
    /// What the preload's monitor does: `none` (measure only), `lca`, `ca`
    /// or `ca,csf`.
    pub placement: Policy,
    /// Paper 4's FF: one nice value and one quantum for every thread.
    pub faithful: bool,
}

impl PolicySet {
    /// The set's name as `--policy` takes it: `lca`, `none`, `ff`, `lca,ff`.
    pub fn name(self) -> String {
        match (self.placement, self.faithful) {
            (p, false) => p.name().to_string(),
            (Policy::None, true) => "ff".to_string(),
            (p, true) => format!("{},ff", p.name()),
        }
    }
}

impl fmt::Display for PolicySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A `--policy` value that names no policy set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPolicySet(pub String);

impl fmt::Display for UnknownPolicySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown policy '{}'; allowed: none, lca, ca, ca,csf, ff, lca,ff, ca,ff",
            self.0
        )
    }
}

impl std::error::Error for UnknownPolicySet {}

impl FromStr for PolicySet {
    type Err = UnknownPolicySet;

    /// Comma-separated names, each once: at most one of `none`, `lca` and
    /// `ca`; `csf` (with `ca` only); and `ff`. `ff` alone measures with
    /// placement `none`.
    fn from_str(s: &str) -> Result<Self, UnknownPolicySet> {
        let bad = || UnknownPolicySet(s.to_owned());
        let mut placement = None;
        let mut faithful = false;
        let mut csf = false;
        for name in s.split(',').map(str::trim) {
            match name {
                "ff" if !faithful => faithful = true,
                "csf" if !csf => csf = true,
                _ if placement.is_none() => placement = Some(name.parse().map_err(|_| bad())?),
                _ => return Err(bad()),
            }
        }
        let placement = match (placement.unwrap_or(Policy::None), csf) {
            (p, false) => p,
            (Policy::Ca, true) => Policy::CaCsf,
            _ => return Err(bad()),
        };
        Ok(PolicySet {
            placement,
            faithful,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_set_and_refuses_the_rest() {
        let p = |s: &str| s.parse::<PolicySet>();
        assert_eq!(
            p("lca").unwrap(),
            PolicySet {
                placement: Policy::Lca,
                faithful: false
            }
        );
        assert_eq!(
            p("ff").unwrap(),
            PolicySet {
                placement: Policy::None,
                faithful: true
            }
        );
        assert_eq!(p("lca,ff").unwrap(), p("ff,lca").unwrap());
        assert_eq!(p("lca,ff").unwrap().name(), "lca,ff");
        assert_eq!(p("ca,csf").unwrap().placement, Policy::CaCsf);
        assert_eq!(p("csf,ff,ca").unwrap().name(), "ca,csf,ff");
        for bad in [
            "", "ff,ff", "lca,none", "fast", "lca,,ff", "csf", "lca,csf", "ca,lca",
        ] {
            let e = p(bad).unwrap_err();
            assert!(e.to_string().contains("lca,ff"), "{bad}: {e}");
        }
    }
}
