//! Loads the on-CPU table's BPF object (`bpf/oncpu.bpf.c`) in `corral run`
//! and hands the program a read-only descriptor of its map.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

use aya::maps::{HashMap, MapData};
use aya::programs::BtfTracePoint;
use aya::{Btf, Ebpf, EbpfLoader, Endianness};

use super::refusal::{effective_caps, has_bpf_capabilities, ProbeEnv};
use crate::oncpu::ONCPU_BYTES;

/// The object built from `bpf/oncpu.bpf.c` by `scripts/build-bpf.sh`.
pub static ONCPU_OBJECT: &[u8] = aya::include_bytes_aligned!("../../bpf/oncpu.bpf.o");

/// SHA-256 of the C source the committed object was built from.
pub const ONCPU_SOURCE_SHA256: &str = include_str!("../../bpf/oncpu.bpf.c.sha256");

/// Program names in the object and the BTF tracepoints they attach to.
const PROGRAMS: [(&str, &str); 3] = [
    ("oncpu_switch", "sched_switch"),
    ("oncpu_fork", "sched_process_fork"),
    ("oncpu_exit", "sched_process_exit"),
];

/// Why there is no on-CPU table: waiters then spin on a learned budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OnCpuRefusal {
    /// Turned off (`--holder-state budget`).
    Off,
    /// Neither root nor CAP_BPF with CAP_PERFMON.
    NotRoot,
    /// The kernel refused the object, a program, an attachment or the map.
    Refused(String),
}

impl std::fmt::Display for OnCpuRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OnCpuRefusal::Off => write!(f, "turned off"),
            OnCpuRefusal::NotRoot => write!(f, "not root (needs CAP_BPF and CAP_PERFMON)"),
            OnCpuRefusal::Refused(why) => {
                let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
                write!(f, "BPF refused: {why}")
            }
        }
    }
}

impl std::error::Error for OnCpuRefusal {}

/// The loaded table: programs attached while it lives.
pub struct OnCpuTable {
    ebpf: Ebpf,
}

impl std::fmt::Debug for OnCpuTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnCpuTable").finish_non_exhaustive()
    }
}

fn refused(what: &str, e: impl std::fmt::Display) -> OnCpuRefusal {
    OnCpuRefusal::Refused(format!("{what}: {e}"))
}

impl OnCpuTable {
    /// Loads and attaches the object, and tracks this process (whose
    /// children, the programs it starts, are tracked from their fork).
    /// About 80 ms on a 2-CPU VM, most of it parsing the kernel's BTF and
    /// aya's feature probes.
    pub fn open(env: &ProbeEnv) -> Result<Self, OnCpuRefusal> {
        if !effective_caps(&env.status_path).is_some_and(has_bpf_capabilities) {
            return Err(OnCpuRefusal::NotRoot);
        }
        let btf = Btf::parse_file(&env.btf_path, Endianness::default())
            .map_err(|e| refused("kernel BTF", e))?;
        let mut ebpf = EbpfLoader::new()
            .btf(Some(&btf))
            .load(ONCPU_OBJECT)
            .map_err(|e| refused("load", e))?;
        for (program, tracepoint) in PROGRAMS {
            let prog: &mut BtfTracePoint = ebpf
                .program_mut(program)
                .ok_or_else(|| refused(program, "missing from the object"))?
                .try_into()
                .map_err(|e| refused(program, e))?;
            prog.load(tracepoint, &btf)
                .map_err(|e| refused(program, e))?;
            prog.attach().map_err(|e| refused(program, e))?;
        }
        let mut table = OnCpuTable { ebpf };
        table.track(std::process::id())?;
        Ok(table)
    }

    /// Tracks process `tgid` and, from now on, the processes it forks.
    pub fn track(&mut self, tgid: u32) -> Result<(), OnCpuRefusal> {
        let map = self
            .ebpf
            .map_mut("tracked")
            .ok_or_else(|| refused("map", "tracked missing"))?;
        let mut tracked: HashMap<&mut MapData, u32, u8> =
            HashMap::try_from(map).map_err(|e| refused("tracked map", e))?;
        tracked
            .insert(tgid, 1, 0)
            .map_err(|e| refused("tracked map", e))
    }

    /// The table's map descriptor (close-on-exec), borrowed. It is
    /// writable: the kernel maps a BPF map shared only through a writable
    /// descriptor, though a read-only mapping of it can never be made
    /// writable (`bpf_map_mmap` clears `VM_MAYWRITE`). The program's shim
    /// maps its copy read-only and closes it before the program runs.
    pub fn map_fd(&self) -> Result<BorrowedFd<'_>, OnCpuRefusal> {
        match self.ebpf.map("oncpu") {
            Some(aya::maps::Map::Array(data)) => Ok(data.fd().as_fd()),
            Some(_) => Err(refused("map", "oncpu is not an array")),
            None => Err(refused("map", "oncpu missing")),
        }
    }
}

/// Maps the table behind `fd` read-only, for good: what the shim does in
/// the program, here for tests and tools.
pub fn map_read_only(fd: BorrowedFd<'_>) -> std::io::Result<*const u64> {
    // SAFETY: a fresh shared read-only mapping of the map's pages; the
    // kernel checks the size against the map.
    let p = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            ONCPU_BYTES,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(p as *const u64)
}
