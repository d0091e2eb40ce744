//! Loads the committed BPF object and reads what it measures.

use aya::maps::{Array, HashMap, MapData, PerCpuArray, RingBuf};
use aya::programs::BtfTracePoint;
use aya::{Btf, Ebpf, EbpfLoader, Endianness};

use super::kinds::LockKinds;
use super::record::{LockStat, SliceRecord};
use super::refusal::{preflight, ProbeEnv, Refusal};

/// The BPF object built from `bpf/kernel_locks.bpf.c` by
/// `scripts/build-bpf.sh` (committed, so building needs no clang).
pub static BPF_OBJECT: &[u8] = aya::include_bytes_aligned!("../../bpf/kernel_locks.bpf.o");

/// SHA-256 of the C source the committed object was built from.
pub const BPF_SOURCE_SHA256: &str = include_str!("../../bpf/kernel_locks.bpf.c.sha256");

/// Program names in the object and the BTF tracepoints they attach to.
const PROGRAMS: [(&str, &str); 4] = [
    ("contention_begin", "contention_begin"),
    ("contention_end", "contention_end"),
    ("sched_switch", "sched_switch"),
    ("sched_process_fork", "sched_process_fork"),
];

/// What the BPF program counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SourceConfig {
    /// Lock kinds whose waiting counts (paper 1: spin locks).
    pub kinds: LockKinds,
    /// Track the child processes of tracked ones (parallel find forks).
    pub follow_forks: bool,
}

impl Default for SourceConfig {
    fn default() -> Self {
        SourceConfig {
            kinds: LockKinds::default(),
            follow_forks: true,
        }
    }
}

/// `struct config` of the BPF source.
#[derive(Clone, Copy)]
#[repr(C)]
struct BpfConfig {
    kinds: u32,
    follow_forks: u32,
}

// SAFETY: two u32 fields, no padding; every bit pattern is valid.
unsafe impl aya::Pod for BpfConfig {}

/// `struct lock_stat` of the BPF source (the map's value).
#[derive(Clone, Copy)]
#[repr(C)]
struct BpfLockStat {
    wait_ns: u64,
    count: u64,
    flags: u64,
}

// SAFETY: three u64 fields, repr(C), no padding.
unsafe impl aya::Pod for BpfLockStat {}

/// The kernel-lock source: per-task slices with their lock waiting
/// (paper 1, Algorithms 1 and 3, measured in the kernel) and per-lock
/// hotness, for the processes it tracks. Dropping it detaches everything.
pub struct KernelLockSource {
    ebpf: Ebpf,
    ring: RingBuf<MapData>,
    config: SourceConfig,
}

impl std::fmt::Debug for KernelLockSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelLockSource")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The error and its causes on one line (aya keeps the errno in `source`).
#[cold]
fn refused(what: &str, e: impl std::fmt::Display + Into<Box<dyn std::error::Error>>) -> Refusal {
    let shown = e.to_string();
    let boxed: Box<dyn std::error::Error> = e.into();
    let mut reason = format!("{what}: {shown}");
    let mut cause = boxed.source();
    while let Some(c) = cause {
        reason.push_str(&format!(": {c}"));
        cause = c.source();
    }
    Refusal::BpfRefused { reason }
}

impl KernelLockSource {
    /// Checks, loads and attaches: the first failure becomes a [`Refusal`].
    pub fn open(env: &ProbeEnv, config: SourceConfig) -> Result<Self, Refusal> {
        preflight(env)?;
        let btf =
            Btf::parse_file(&env.btf_path, Endianness::default()).map_err(|e| Refusal::NoBtf {
                path: env.btf_path.clone(),
                reason: e.to_string(),
            })?;
        let custom;
        let object: &[u8] = match &env.object_override {
            Some(path) => {
                custom =
                    std::fs::read(path).map_err(|e| refused(&path.display().to_string(), e))?;
                &custom
            }
            None => BPF_OBJECT,
        };
        let mut ebpf = EbpfLoader::new()
            .btf(Some(&btf))
            .load(object)
            .map_err(|e| refused("load", e))?;
        {
            let mut cfg: Array<_, BpfConfig> = Array::try_from(
                ebpf.map_mut("config")
                    .ok_or_else(|| refused("map", "config missing"))?,
            )
            .map_err(|e| refused("config map", e))?;
            let value = BpfConfig {
                kinds: config.kinds.bits(),
                follow_forks: config.follow_forks.into(),
            };
            cfg.set(0, value, 0).map_err(|e| refused("config map", e))?;
        }
        for (program, tracepoint) in PROGRAMS {
            let prog: &mut BtfTracePoint = ebpf
                .program_mut(program)
                .ok_or_else(|| refused("program", format!("{program} missing from the object")))?
                .try_into()
                .map_err(|e| refused(program, e))?;
            prog.load(tracepoint, &btf).map_err(|e| match e {
                aya::programs::ProgramError::Btf(_) => Refusal::TracepointMissing {
                    name: tracepoint.to_string(),
                },
                other => refused(program, other),
            })?;
            prog.attach().map_err(|e| refused(program, e))?;
        }
        let ring = RingBuf::try_from(
            ebpf.take_map("slices")
                .ok_or_else(|| refused("map", "slices missing"))?,
        )
        .map_err(|e| refused("slices map", e))?;
        Ok(KernelLockSource { ebpf, ring, config })
    }

    /// What it counts.
    pub fn config(&self) -> SourceConfig {
        self.config
    }

    fn tracked_map(&mut self) -> HashMap<&mut MapData, u32, u8> {
        // The map exists and has this type: `open` loaded this object.
        HashMap::try_from(self.ebpf.map_mut("tracked").expect("tracked map"))
            .expect("tracked map type")
    }

    /// Starts measuring process `tgid` (all its threads, and with
    /// `follow_forks` the processes it forks from now on).
    pub fn track(&mut self, tgid: u32) -> std::io::Result<()> {
        self.tracked_map()
            .insert(tgid, 1, 0)
            .map_err(std::io::Error::other)
    }

    /// Stops measuring process `tgid`.
    pub fn untrack(&mut self, tgid: u32) {
        let _ = self.tracked_map().remove(&tgid);
    }

    /// Processes tracked now, children added by the kernel included.
    pub fn tracked(&mut self) -> Vec<u32> {
        let mut out: Vec<u32> = self.tracked_map().keys().filter_map(Result::ok).collect();
        out.sort_unstable();
        out
    }

    /// Appends every slice finished since the last call; returns how many.
    pub fn drain(&mut self, out: &mut Vec<SliceRecord>) -> usize {
        let before = out.len();
        while let Some(item) = self.ring.next() {
            if let Some(rec) = SliceRecord::parse(&item) {
                out.push(rec);
            }
        }
        out.len() - before
    }

    /// Per-lock hotness, hottest (most waiting) first.
    pub fn lock_hotness(&self) -> Vec<LockStat> {
        let Some(map) = self.ebpf.map("lock_stats") else {
            return Vec::new();
        };
        let Ok(stats) = HashMap::<_, u64, BpfLockStat>::try_from(map) else {
            return Vec::new();
        };
        let mut out: Vec<LockStat> = stats
            .iter()
            .filter_map(Result::ok)
            .map(|(addr, s)| LockStat {
                addr,
                wait_ns: s.wait_ns,
                count: s.count,
                flags: s.flags as u32,
            })
            .collect();
        out.sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then(a.addr.cmp(&b.addr)));
        out
    }

    /// Slices lost because user space read too slowly (ring full).
    pub fn dropped(&self) -> u64 {
        let Some(map) = self.ebpf.map("dropped") else {
            return 0;
        };
        let Ok(counts) = PerCpuArray::<_, u64>::try_from(map) else {
            return 0;
        };
        counts
            .get(&0, 0)
            .map(|per_cpu| per_cpu.iter().sum())
            .unwrap_or(0)
    }
}
