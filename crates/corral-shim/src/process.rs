//! Which process this is: the one `corral run` started, or another that
//! inherited its environment.

use core::ffi::CStr;

use crate::sys;

/// `corral_runtime::config::ENV_PARENT_PID_C`: set to the pid of `corral
/// run`, the parent of the process it started.
pub(crate) const ENV_PARENT_PID: &CStr = c"CORRAL_PARENT_PID";

/// The pid of `corral run`, if this process is the one it started (its
/// parent's pid is in the environment), not a grandchild that inherited
/// the environment.
pub(crate) fn started_by() -> Option<i32> {
    let parent = sys::env(ENV_PARENT_PID).and_then(|v| parse_pid(v.to_bytes()))?;
    (parent == sys::getppid()).then_some(parent)
}

/// A pid in decimal. The full library's `init::parse_pid` is its twin:
/// the shim links no crate of corral's (no std, four imports).
pub(crate) fn parse_pid(digits: &[u8]) -> Option<i32> {
    if digits.is_empty() || digits.len() > 10 {
        return None;
    }
    let mut pid: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        pid = pid * 10 + i64::from(d - b'0');
    }
    i32::try_from(pid).ok()
}
