//! `--pin-cpus`: every column's runs confined to the same CPUs, through
//! util-linux's `taskset -c`, so that glibc and corral meet the same
//! kernel placement. On the 2-CPU development VM, stress-ng --mutex 16 left
//! to the kernel's placement spread 0.75-1.10x of its median under glibc
//! alone; pinned to one CPU, about 2%.

use std::ffi::OsString;

/// A parsed `--pin-cpus` list: CPU numbers, ascending, each once. Parsed
/// here rather than by `topology::parse_cpu_list`, which reads sysfs and
/// only says whether a list is well formed: a user's list is told which
/// item is wrong and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PinCpus(Vec<u32>);

const ALLOWED: &str = "expected CPU numbers as taskset -c takes them, like '0', '0-3' or '0,2,4-7'";

/// The highest CPU number accepted (the kernel's own limit, CONFIG_NR_CPUS,
/// is at most 8192).
const MAX_CPU: u32 = 8191;

/// Parses `--pin-cpus`: numbers and ranges `A-B`, comma-separated.
pub(crate) fn parse_pin_cpus(s: &str) -> Result<PinCpus, String> {
    let number = |t: &str| -> Result<u32, String> {
        let v: u32 = t
            .trim()
            .parse()
            .map_err(|_| format!("'{}' is not a CPU number; {ALLOWED}", t.trim()))?;
        if v > MAX_CPU {
            return Err(format!("CPU {v} is past the kernel's limit of {MAX_CPU}"));
        }
        Ok(v)
    };
    let mut cpus = Vec::new();
    for item in s.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!("an empty item in '{s}'; {ALLOWED}"));
        }
        match item.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(format!("range '{item}' runs backwards; {ALLOWED}"));
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(number(item)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(PinCpus(cpus))
}

impl PinCpus {
    /// The CPU numbers.
    pub(crate) fn cpus(&self) -> &[u32] {
        &self.0
    }

    /// The CPUs of the list that `allowed` lacks: the machine has no such
    /// CPU, or this process may not run there (a cpuset, an affinity mask).
    pub(crate) fn missing_from(&self, allowed: &[u32]) -> Vec<u32> {
        self.0
            .iter()
            .copied()
            .filter(|c| !allowed.contains(c))
            .collect()
    }

    /// The list as taskset takes it, with ranges folded: `0-3,8`.
    pub(crate) fn to_list(&self) -> String {
        corral_runtime::topology::format_cpu_list(&self.0)
    }

    /// `argv` run on these CPUs: `taskset -c LIST` before it.
    pub(crate) fn wrap(&self, argv: Vec<OsString>) -> Vec<OsString> {
        let mut v: Vec<OsString> = vec!["taskset".into(), "-c".into(), self.to_list().into()];
        v.extend(argv);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges_parse_to_sorted_unique_cpus() {
        let p = parse_pin_cpus("4-6, 0,5").unwrap();
        assert_eq!(p.cpus(), &[0, 4, 5, 6]);
        assert_eq!(p.to_list(), "0,4-6");
        assert_eq!(parse_pin_cpus("0").unwrap().to_list(), "0");
    }

    #[test]
    fn bad_lists_say_which_item_and_why() {
        let e = parse_pin_cpus("0,x").unwrap_err();
        assert!(e.contains("'x' is not a CPU number"), "{e}");
        let e = parse_pin_cpus("3-1").unwrap_err();
        assert!(e.contains("range '3-1' runs backwards"), "{e}");
        let e = parse_pin_cpus("0,,1").unwrap_err();
        assert!(e.contains("empty item"), "{e}");
        let e = parse_pin_cpus("9000").unwrap_err();
        assert!(e.contains("past the kernel's limit"), "{e}");
        assert!(parse_pin_cpus("").is_err());
    }

    #[test]
    fn cpus_the_process_may_not_use_are_named() {
        let p = parse_pin_cpus("0-3").unwrap();
        assert_eq!(p.missing_from(&[0, 1]), vec![2, 3]);
        assert!(p.missing_from(&[0, 1, 2, 3, 4]).is_empty());
    }

    #[test]
    fn the_program_runs_under_taskset_with_its_own_arguments_after() {
        let p = parse_pin_cpus("1,0").unwrap();
        let argv = p.wrap(vec!["stress-ng".into(), "--mutex".into(), "4".into()]);
        let argv: Vec<&str> = argv.iter().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(argv, ["taskset", "-c", "0-1", "stress-ng", "--mutex", "4"]);
    }
}
