//! The machine's CPU topology as sysfs describes it: which CPUs are online,
//! which share a last-level cache, and which NUMA node each belongs to.
//! `corral-policy::placement` turns this into the SSC order; this module
//! only reads.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// One online CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CpuTopo {
    /// Logical CPU id.
    pub cpu: u32,
    /// Last-level cache domain: the smallest CPU id sharing this CPU's
    /// highest-level cache (stable across kernels, unlike `id` files).
    pub llc: u32,
    /// NUMA node (0 where the kernel reports none).
    pub node: u32,
}

/// Reads the live machine's topology from `/sys`.
pub fn read_sysfs() -> io::Result<Vec<CpuTopo>> {
    read_from(Path::new("/sys/devices/system"))
}

/// Reads a topology from a sysfs-shaped tree rooted at `root` (the
/// `devices/system` directory), so tests can feed a synthetic one.
pub fn read_from(root: &Path) -> io::Result<Vec<CpuTopo>> {
    let online = fs::read_to_string(root.join("cpu/online"))?;
    let cpus = parse_cpu_list(online.trim()).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("bad cpu/online: {online:?}"),
        )
    })?;
    let nodes = node_of_cpus(root);
    // A CPU named in an LLC's shared list already read needs no reading of
    // its own: one CPU per LLC is read, not each (sysfs opens cost tens of
    // microseconds each, and `corral run` reads this before the program starts).
    let mut known: Vec<(u32, u32)> = Vec::new(); // (cpu, llc)
    let mut topo = Vec::with_capacity(cpus.len());
    for cpu in cpus {
        let llc = match known.iter().find(|(c, _)| *c == cpu) {
            Some(&(_, llc)) => llc,
            None => match llc_of(&root.join(format!("cpu/cpu{cpu}/cache"))) {
                Some((llc, sharing)) => {
                    known.extend(sharing.into_iter().map(|c| (c, llc)));
                    llc
                }
                None => cpu,
            },
        };
        let node = nodes.iter().find(|(c, _)| *c == cpu).map_or(0, |(_, n)| *n);
        topo.push(CpuTopo { cpu, llc, node });
    }
    Ok(topo)
}

/// `topo` as one line, `cpu:llc:node` per CPU, comma-separated: what
/// `corral run` hands its processes in [`crate::config::ENV_TOPOLOGY`].
pub fn encode(topo: &[CpuTopo]) -> String {
    let parts: Vec<String> = topo
        .iter()
        .map(|c| format!("{}:{}:{}", c.cpu, c.llc, c.node))
        .collect();
    parts.join(",")
}

/// The topology [`encode`] wrote; `None` for anything else (then sysfs is
/// read).
pub fn decode(text: &str) -> Option<Vec<CpuTopo>> {
    text.split(',')
        .map(|part| {
            let mut f = part.split(':').map(|n| n.parse::<u32>().ok());
            let cpu = CpuTopo {
                cpu: f.next()??,
                llc: f.next()??,
                node: f.next()??,
            };
            f.next().is_none().then_some(cpu)
        })
        .collect()
}

/// The topology `corral run` passed down, else sysfs's.
fn read_inherited() -> io::Result<Vec<CpuTopo>> {
    std::env::var(crate::config::ENV_TOPOLOGY)
        .ok()
        .and_then(|text| decode(&text))
        .map_or_else(read_sysfs, Ok)
}

/// The SSC order (`corral_policy::placement::Topology::ssc_order`) of this
/// machine's CPUs in `allowed`. The order is the policy's; this only reads
/// the topology (as `corral run` passed it down, else sysfs). Where it
/// cannot be read or describes none of `allowed`, the order is `allowed` as
/// given, and the error says why.
pub fn ssc_order(allowed: &[u32]) -> Result<Vec<u32>, (Vec<u32>, io::Error)> {
    let topo = match read_inherited() {
        Ok(t) => t,
        Err(e) => return Err((allowed.to_vec(), e)),
    };
    ssc_order_of(&topo, allowed).ok_or_else(|| {
        let why = io::Error::new(
            io::ErrorKind::InvalidData,
            "sysfs describes none of the allowed CPUs",
        );
        (allowed.to_vec(), why)
    })
}

/// The SSC order of the CPUs of `topo` that are in `allowed`; `None` when
/// none is.
pub fn ssc_order_of(topo: &[CpuTopo], allowed: &[u32]) -> Option<Vec<u32>> {
    let mine: Vec<&CpuTopo> = topo.iter().filter(|c| allowed.contains(&c.cpu)).collect();
    let ids: Vec<u32> = mine.iter().map(|c| c.cpu).collect();
    let llc: Vec<u32> = mine.iter().map(|c| c.llc).collect();
    let node: Vec<u32> = mine.iter().map(|c| c.node).collect();
    match corral_policy::placement::Topology::from_parts(&ids, &llc, &node) {
        Ok(t) if !t.is_empty() => Some(t.ssc_order()),
        _ => None,
    }
}

/// The smallest CPU sharing the highest-level data or unified cache, and
/// every CPU sharing it.
fn llc_of(cache_dir: &Path) -> Option<(u32, Vec<u32>)> {
    let mut best: Option<(u32, Vec<u32>)> = None; // (level, sharing CPUs)
    for entry in fs::read_dir(cache_dir).ok()? {
        let dir: PathBuf = entry.ok()?.path();
        if !dir.file_name()?.to_str()?.starts_with("index") {
            continue;
        }
        let kind = fs::read_to_string(dir.join("type")).unwrap_or_default();
        if kind.trim() == "Instruction" {
            continue;
        }
        let level: u32 = fs::read_to_string(dir.join("level"))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        if best.as_ref().is_some_and(|(l, _)| level <= *l) {
            continue;
        }
        let shared = fs::read_to_string(dir.join("shared_cpu_list")).ok()?;
        let sharing = parse_cpu_list(shared.trim())?;
        if !sharing.is_empty() {
            best = Some((level, sharing));
        }
    }
    let (_, sharing) = best?;
    Some((*sharing.iter().min()?, sharing))
}

fn node_of_cpus(root: &Path) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(root.join("node")) else {
        return out;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(id) = name
            .to_str()
            .and_then(|n| n.strip_prefix("node"))
            .and_then(|n| n.parse().ok())
        else {
            continue;
        };
        if let Some(list) = fs::read_to_string(entry.path().join("cpulist"))
            .ok()
            .and_then(|s| parse_cpu_list(s.trim()))
        {
            out.extend(list.into_iter().map(|cpu| (cpu, id)));
        }
    }
    out
}

/// Parses the kernel's CPU list format: `0-3,8,10-11` (empty = none).
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    if s.is_empty() {
        return Some(out);
    }
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if a > b {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// Ascending CPU numbers in the kernel's CPU list format, runs folded
/// into ranges: `0-3,8` ([`parse_cpu_list`]'s inverse).
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_format_as_they_parse() {
        for list in ["0-3,8,10-11", "0", "1,3", ""] {
            assert_eq!(format_cpu_list(&parse_cpu_list(list).unwrap()), list);
        }
    }

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// One cache of a synthetic `cpuN/cache`: `index` at `level`, data or
    /// unified (`kind`), shared by the CPUs `shared` lists.
    fn cache(dir: &Path, index: u32, level: u32, kind: &str, shared: &str) {
        let index = dir.join(format!("index{index}"));
        write(&index.join("level"), &level.to_string());
        write(&index.join("type"), kind);
        write(&index.join("shared_cpu_list"), shared);
    }

    #[test]
    fn synthetic_two_socket_tree() {
        let root = std::env::temp_dir().join(format!("corral-topo-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        write(&root.join("cpu/online"), "0-3\n");
        for cpu in 0..4u32 {
            let dir = root.join(format!("cpu/cpu{cpu}/cache"));
            cache(&dir, 0, 1, "Data", &cpu.to_string());
            // CPUs 0,2 share one LLC and 1,3 another (ids interleave, as on many servers).
            cache(
                &dir,
                1,
                3,
                "Unified",
                if cpu % 2 == 0 { "0,2" } else { "1,3" },
            );
        }
        write(&root.join("node/node0/cpulist"), "0,2");
        write(&root.join("node/node1/cpulist"), "1,3");
        let topo = read_from(&root).unwrap();
        let _ = fs::remove_dir_all(&root);
        let llcs: Vec<u32> = topo.iter().map(|c| c.llc).collect();
        let nodes: Vec<u32> = topo.iter().map(|c| c.node).collect();
        assert_eq!(llcs, vec![0, 1, 0, 1]);
        assert_eq!(nodes, vec![0, 1, 0, 1]);
    }

    #[test]
    fn one_cpu_per_llc_is_read() {
        let root = std::env::temp_dir().join(format!("corral-topo1-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        write(&root.join("cpu/online"), "0-3\n");
        // Only CPUs 0 and 1 have cache directories: their LLCs' shared
        // lists name 2 and 3, which are then never read.
        for cpu in 0..2u32 {
            let dir = root.join(format!("cpu/cpu{cpu}/cache"));
            cache(&dir, 0, 2, "Unified", &cpu.to_string());
            cache(&dir, 3, 3, "Unified", if cpu == 0 { "0,2" } else { "1,3" });
        }
        let topo = read_from(&root).unwrap();
        let _ = fs::remove_dir_all(&root);
        let llcs: Vec<u32> = topo.iter().map(|c| c.llc).collect();
        assert_eq!(llcs, vec![0, 1, 0, 1]);
    }

    #[test]
    fn encoded_topology_decodes_to_itself_and_garbage_to_none() {
        let topo = vec![
            CpuTopo {
                cpu: 0,
                llc: 0,
                node: 0,
            },
            CpuTopo {
                cpu: 5,
                llc: 4,
                node: 1,
            },
        ];
        assert_eq!(encode(&topo), "0:0:0,5:4:1");
        assert_eq!(decode(&encode(&topo)), Some(topo));
        for bad in ["", "0:0", "0:0:0:0", "0:x:0", "0:0:0,"] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn live_machine_has_every_online_cpu() {
        let topo = read_sysfs().expect("sysfs readable");
        assert!(!topo.is_empty());
        assert!(topo.iter().all(|c| c.llc <= c.cpu));
    }
}
