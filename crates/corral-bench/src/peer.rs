//! `--peer NAME=LIB.so`: another lock library, preloaded into the program
//! as `LD_PRELOAD` does it, measured as a column beside glibc and corral in
//! the same rounds. FlexGuard and its sibling locks, built as interpose
//! libraries from their public source, are such libraries; FlexGuard
//! needs root and `TSC_KHZ` in the environment, which the bench passes on.

use std::ffi::OsString;
use std::path::PathBuf;
use std::str::FromStr;

use serde::Serialize;

/// Names a peer may not take: the built-in columns'.
const TAKEN: [&str; 4] = ["glibc", "glibc-again", "default", "corral"];

/// One `--peer`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Peer {
    /// The column's name.
    pub name: String,
    /// The library, as an absolute path.
    pub lib: PathBuf,
}

impl FromStr for Peer {
    type Err = String;

    /// `NAME=LIB.so`: a name of letters, digits, `-` and `_`, and a
    /// library file that exists.
    fn from_str(s: &str) -> Result<Peer, String> {
        let (name, lib) = s.split_once('=').ok_or_else(|| {
            format!(
                "'{s}': expected NAME=LIB.so (e.g. flexguard=/opt/peers/interpose_flexguard.so)"
            )
        })?;
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!(
                "'{name}': a peer's name is letters, digits, '-' and '_'"
            ));
        }
        if TAKEN.contains(&name) || corral_locks::Algorithm::from_str(name).is_ok() {
            return Err(format!(
                "'{name}' names a built-in column: choose another name"
            ));
        }
        let lib = PathBuf::from(lib);
        if !lib.is_file() {
            return Err(format!("{}: no such library file", lib.display()));
        }
        let lib = std::path::absolute(&lib).map_err(|e| format!("{}: {e}", lib.display()))?;
        Ok(Peer {
            name: name.to_owned(),
            lib,
        })
    }
}

impl Peer {
    /// `argv` run under this peer: through `env`, with the peer's library
    /// first in `LD_PRELOAD` (before any the bench itself was given).
    pub fn wrap(&self, argv: Vec<OsString>) -> Vec<OsString> {
        let mut preload = OsString::from("LD_PRELOAD=");
        preload.push(&self.lib);
        if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
            preload.push(":");
            preload.push(old);
        }
        let mut out = vec![OsString::from("env"), preload];
        out.extend(argv);
        out
    }
}

/// Refuses two peers of one name.
pub fn check_unique(peers: &[Peer]) -> Result<(), String> {
    for (i, p) in peers.iter().enumerate() {
        if peers[..i].iter().any(|q| q.name == p.name) {
            return Err(format!("--peer: '{}' is given twice", p.name));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_is_a_name_and_an_existing_library() {
        let p: Peer = "libc=/bin/sh".parse().unwrap();
        assert_eq!(p.name, "libc");
        assert!(p.lib.is_absolute());
        let argv = p.wrap(vec!["prog".into(), "arg".into()]);
        assert_eq!(argv[0], "env");
        assert!(argv[1].to_string_lossy().starts_with("LD_PRELOAD=/bin/sh"));
        assert_eq!(&argv[2..], &["prog", "arg"]);
    }

    #[test]
    fn bad_peers_say_why() {
        let err = |s: &str| s.parse::<Peer>().unwrap_err();
        assert!(err("flexguard").contains("NAME=LIB.so"));
        assert!(err("flex guard=/bin/sh").contains("letters, digits"));
        assert!(err("glibc=/bin/sh").contains("built-in"));
        assert!(err("ticket=/bin/sh").contains("built-in"));
        assert!(err("x=/no/such/lib.so").contains("no such library"));
        let a: Peer = "a=/bin/sh".parse().unwrap();
        assert!(check_unique(&[a.clone(), a]).unwrap_err().contains("twice"));
    }
}
