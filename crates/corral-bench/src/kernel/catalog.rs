//! Which kernel-lock benchmarks there are, apart from how they run, so
//! that the fixture and the workloads can name them without a cycle.

use serde::{Deserialize, Serialize};

/// The benchmarks: paper 1's (Sec. 4.1) and paper 3's (Sec. 3) kernel-lock
/// workloads, sized for a small machine (see the flags for the papers' sizes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Bench {
    /// Paper 1: map one shared file, touch every page, unmap.
    Mmapbench,
    /// Paper 1: create a socket and close it.
    Sockbench,
    /// Paper 3: open and close one shared file.
    Fops,
    /// Paper 3: mmap 64 KB with MAP_POPULATE, munmap.
    Mempop,
    /// Paper 1: postmark-like file server transactions on tmpfs.
    Postmark,
    /// Paper 1 / paper 3: GNU find over a generated tree, one process per search.
    Pfind,
    /// Paper 1: GNU grep over a generated tree, one process per search.
    Pgrep,
}

impl Bench {
    /// Every benchmark, in the order `all` runs them.
    pub(crate) const ALL: [Bench; 7] = [
        Bench::Mmapbench,
        Bench::Sockbench,
        Bench::Fops,
        Bench::Mempop,
        Bench::Postmark,
        Bench::Pfind,
        Bench::Pgrep,
    ];

    /// The name on the command line and in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Bench::Mmapbench => "mmapbench",
            Bench::Sockbench => "sockbench",
            Bench::Fops => "fops",
            Bench::Mempop => "mempop",
            Bench::Postmark => "postmark",
            Bench::Pfind => "pfind",
            Bench::Pgrep => "pgrep",
        }
    }
}
