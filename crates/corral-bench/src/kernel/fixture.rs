//! The files the benchmarks work on, made once under a scratch directory on
//! tmpfs (paper 1 keeps postmark, find and grep data in tmpfs so that the
//! kernel's locks, not I/O, are measured) and removed afterwards.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::catalog::Bench;

/// Shape of the generated data.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub(crate) struct FixtureShape {
    /// mmapbench's shared file, MiB (paper 1: 500).
    pub(crate) mmap_mib: u64,
    /// Postmark's initial files per worker (paper 1: 500 or 10,000).
    pub(crate) postmark_files: u32,
    /// Find/grep trees: subdirectories per directory.
    pub(crate) tree_fanout: u32,
    /// Find/grep trees: directory levels below each worker's root.
    pub(crate) tree_depth: u32,
    /// Find/grep trees: files per directory.
    pub(crate) files_per_dir: u32,
}

/// The scratch directory and what is in it.
pub(crate) struct Fixture {
    /// The scratch directory; worker processes get it as `--worker-root`.
    pub(crate) root: PathBuf,
    /// Postmark's initial files per worker.
    pub(crate) postmark_files: u32,
    /// Whether this process made it (and so removes it).
    owned: bool,
}

impl Fixture {
    /// A scratch directory under `base` holding what `bench` needs for
    /// `workers` workers.
    pub(crate) fn create(
        base: &Path,
        bench: Bench,
        workers: usize,
        shape: FixtureShape,
    ) -> io::Result<Fixture> {
        let prefix = format!("corral-bench-{}-", bench.name());
        // Those of runs killed before they could remove theirs.
        corral_runtime::files::remove_stale_scratch(base, &prefix);
        let root = base.join(format!("{prefix}{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root)?;
        let fixture = Fixture {
            root,
            postmark_files: shape.postmark_files,
            owned: true,
        };
        match bench {
            Bench::Mmapbench => {
                let f = fs::File::create(fixture.mmap_file())?;
                f.set_len(shape.mmap_mib * 1024 * 1024)?;
            }
            Bench::Fops => {
                fs::File::create(fixture.fops_file())?;
            }
            Bench::Pfind | Bench::Pgrep => {
                for w in 0..workers {
                    make_tree(
                        &fixture.tree_of(w),
                        shape.tree_fanout,
                        shape.tree_depth,
                        shape.files_per_dir,
                    )?;
                }
            }
            Bench::Sockbench | Bench::Mempop | Bench::Postmark => {}
        }
        Ok(fixture)
    }

    /// A fixture another process made (worker processes share it).
    pub(crate) fn existing(root: PathBuf, postmark_files: u32) -> Fixture {
        Fixture {
            root,
            postmark_files,
            owned: false,
        }
    }

    /// mmapbench's shared file.
    pub(crate) fn mmap_file(&self) -> PathBuf {
        self.root.join("mmapbench.dat")
    }

    /// FOPS's shared file.
    pub(crate) fn fops_file(&self) -> PathBuf {
        self.root.join("fops.dat")
    }

    /// The find/grep tree of `worker`.
    pub(crate) fn tree_of(&self, worker: usize) -> PathBuf {
        self.root.join(format!("tree{worker}"))
    }

    /// The postmark directory of `worker`.
    pub(crate) fn postmark_dir(&self, worker: usize) -> PathBuf {
        self.root.join(format!("postmark{worker}"))
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if self.owned {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}

/// A balanced tree (paper 3's PFIND): `fanout` subdirectories per level,
/// `depth` levels, `files` small text files in every directory.
fn make_tree(dir: &Path, fanout: u32, depth: u32, files: u32) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    for f in 0..files {
        let mut file = fs::File::create(dir.join(format!("file{f}.txt")))?;
        for line in 0..32 {
            writeln!(file, "line {line} of file {f}: lorem ipsum dolor sit amet")?;
        }
    }
    if depth > 0 {
        for d in 0..fanout {
            make_tree(&dir.join(format!("d{d}")), fanout, depth - 1, files)?;
        }
    }
    Ok(())
}
