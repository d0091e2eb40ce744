//! The generated inputs of `corral bench apps`, in a scratch directory that
//! is removed afterwards: a text file for pigz and a git repository for
//! `git grep`. The text is made of a small vocabulary, so it compresses
//! and greps like prose rather than like noise, and is the same every run.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// pigz's input size: 128 of its 32 KiB blocks, work for 64 threads.
const PIGZ_BYTES: u64 = 4 << 20;
/// The repository's directories and files per directory.
const REPO_DIRS: u64 = 64;
const REPO_FILES_PER_DIR: u64 = 32;
/// Lines per repository file (about 2 KB each).
const REPO_LINES: u64 = 30;

/// Keys in RocksDB's database: 200,000 of 100 bytes, about 27 MB, all
/// of it in db_bench's 64 MiB block cache.
pub(crate) const ROCKSDB_KEYS: u64 = 200_000;

/// The scratch directory and what is in it.
pub(crate) struct Fixture {
    root: PathBuf,
    /// RocksDB's database, made at its first use.
    rocksdb: std::sync::OnceLock<PathBuf>,
}

impl Fixture {
    /// Makes a new directory in `base` with pigz's input and the git
    /// repository, each if asked for.
    pub(crate) fn create(base: &Path, pigz_input: bool, repo: bool) -> io::Result<Fixture> {
        // Those of runs killed before they could remove theirs.
        corral_runtime::files::remove_stale_scratch(base, "corral-bench-apps.");
        let root = base.join(format!("corral-bench-apps.{}", std::process::id()));
        // A directory of this pid can only be a dead earlier run's.
        let _ = fs::remove_dir_all(&root);
        fs::create_dir(&root)?;
        let fx = Fixture {
            root,
            rocksdb: std::sync::OnceLock::new(),
        };
        if pigz_input {
            let mut text = Text::new(1);
            let mut out = io::BufWriter::new(fs::File::create(fx.pigz_input())?);
            let mut written = 0;
            while written < PIGZ_BYTES {
                let line = text.line();
                let take = line.len().min((PIGZ_BYTES - written) as usize);
                out.write_all(&line.as_bytes()[..take])?;
                written += take as u64;
            }
            out.flush()?;
        }
        if repo {
            fx.make_repo()?;
        }
        Ok(fx)
    }

    /// pigz's input file.
    pub(crate) fn pigz_input(&self) -> PathBuf {
        self.root.join("pigz-input.txt")
    }

    /// Its size in bytes.
    pub(crate) fn pigz_bytes(&self) -> u64 {
        PIGZ_BYTES
    }

    /// Where stress-ng writes its `--yaml` report.
    pub(crate) fn stress_yaml(&self) -> PathBuf {
        self.root.join("stress-ng.yaml")
    }

    /// The git repository.
    pub(crate) fn repo(&self) -> PathBuf {
        self.root.join("repo")
    }

    /// RocksDB's database, made by `db_bench --benchmarks=fillseq` at the
    /// first call (a failure leaves no database: readrandom then fails and
    /// says why).
    pub(crate) fn rocksdb(&self) -> &Path {
        self.rocksdb.get_or_init(|| {
            let db = self.root.join("rocksdb");
            let made = Command::new("db_bench")
                .arg(format!("--db={}", db.display()))
                .args([
                    "--benchmarks=fillseq",
                    &format!("--num={ROCKSDB_KEYS}"),
                    "--value_size=100",
                    "--compression_type=none",
                    "--threads=1",
                ])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
            if !matches!(made, Ok(s) if s.success()) {
                eprintln!("corral bench apps: db_bench --benchmarks=fillseq failed: {made:?}");
            }
            db
        })
    }

    /// Files in the repository's commit.
    pub(crate) fn repo_files(&self) -> u64 {
        REPO_DIRS * REPO_FILES_PER_DIR
    }

    /// A repository with one commit of generated files, packed as a cloned
    /// repository is. The user's git configuration is kept out of it.
    fn make_repo(&self) -> io::Result<()> {
        let repo = self.repo();
        let mut text = Text::new(2);
        for d in 0..REPO_DIRS {
            let dir = repo.join(format!("d{d:02}"));
            fs::create_dir_all(&dir)?;
            for f in 0..REPO_FILES_PER_DIR {
                let mut out = io::BufWriter::new(fs::File::create(dir.join(format!("f{f:02}.c")))?);
                for _ in 0..REPO_LINES {
                    out.write_all(text.line().as_bytes())?;
                }
                out.flush()?;
            }
        }
        let git = |args: &[&str]| -> io::Result<()> {
            let status = Command::new("git")
                .arg("-C")
                .arg(&repo)
                .args([
                    "-c",
                    "user.name=corral",
                    "-c",
                    "user.email=corral@localhost",
                    "-c",
                    "commit.gpgsign=false",
                ])
                .args(args)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .stdout(std::process::Stdio::null())
                .status()?;
            if status.success() {
                Ok(())
            } else {
                Err(io::Error::other(format!(
                    "making the git fixture: git {} failed ({status})",
                    args.join(" ")
                )))
            }
        };
        git(&["init", "-q"])?;
        git(&["add", "-A"])?;
        git(&["commit", "-q", "-m", "corral bench apps fixture"])?;
        git(&["gc", "-q"])
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// Deterministic prose-like lines from a small vocabulary (xorshift).
struct Text {
    state: u64,
}

const WORDS: [&str; 32] = [
    "the",
    "lock",
    "mutex",
    "thread",
    "wait",
    "queue",
    "core",
    "cache",
    "line",
    "spin",
    "park",
    "wake",
    "owner",
    "holder",
    "ticket",
    "node",
    "of",
    "and",
    "to",
    "a",
    "is",
    "in",
    "that",
    "for",
    "contention",
    "scheduler",
    "release",
    "acquire",
    "critical",
    "section",
    "waiter",
    "handoff",
];

impl Text {
    fn new(seed: u64) -> Self {
        Text {
            state: 0x9E37_79B9_7F4A_7C15 ^ seed,
        }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    /// One line of 6 to 13 words.
    fn line(&mut self) -> String {
        let n = 6 + self.next() % 8;
        let mut line = String::new();
        for i in 0..n {
            if i > 0 {
                line.push(' ');
            }
            line.push_str(WORDS[(self.next() % WORDS.len() as u64) as usize]);
        }
        line.push('\n');
        line
    }
}
