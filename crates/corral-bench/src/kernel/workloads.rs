//! One operation of each kernel-lock benchmark, as real system calls. The
//! locks they stress on Linux 6.x are named per benchmark; which of them a
//! machine actually contends is what `corral run --kernel-locks` measures.

use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::catalog::Bench;
use super::fixture::Fixture;

/// A tiny xorshift generator: postmark's uniform choices, reproducible.
struct Rng(u64);

impl Rng {
    /// A generator for `seed`; never the all-zero state xorshift cannot leave.
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform enough in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Per-worker state of a running benchmark.
pub(crate) struct Worker<'a> {
    /// Which worker: picks its tree and postmark directory.
    index: usize,
    /// What each operation does.
    bench: Bench,
    /// The data it works on.
    fixture: &'a Fixture,
    /// Postmark's choices.
    rng: Rng,
    /// Postmark: this worker's files (by number) that exist now.
    files: Vec<u32>,
    /// Postmark: the number of the next file created.
    next_file: u32,
    /// mmapbench: the shared file and its length.
    shared_map: Option<(File, usize)>,
}

/// `rc` as an `io::Result`, the error naming the call `what`.
fn check(rc: libc::c_int, what: &str) -> io::Result<()> {
    if rc < 0 {
        return Err(io::Error::new(
            io::Error::last_os_error().kind(),
            format!("{what}: {}", io::Error::last_os_error()),
        ));
    }
    Ok(())
}

impl<'a> Worker<'a> {
    /// Worker `index` of `bench`, its setup done (postmark's initial files,
    /// mmapbench's file opened).
    pub(crate) fn new(index: usize, bench: Bench, fixture: &'a Fixture) -> io::Result<Self> {
        let mut w = Worker {
            index,
            bench,
            fixture,
            rng: Rng::new(index as u64 + 1),
            files: Vec::new(),
            next_file: 0,
            shared_map: None,
        };
        match bench {
            Bench::Mmapbench => {
                let file = File::open(fixture.mmap_file())?;
                let len = file.metadata()?.len() as usize;
                w.shared_map = Some((file, len));
            }
            Bench::Postmark => w.create_initial_files()?,
            _ => {}
        }
        Ok(w)
    }

    /// One operation of the benchmark.
    pub(crate) fn op(&mut self) -> io::Result<()> {
        match self.bench {
            Bench::Mmapbench => self.mmapbench(),
            Bench::Sockbench => sockbench(),
            Bench::Fops => fops(&self.fixture.fops_file()),
            Bench::Mempop => mempop(),
            Bench::Postmark => self.postmark_transaction(),
            Bench::Pfind => run_tool(
                Command::new("find")
                    .arg(self.fixture.tree_of(self.index))
                    .args(["-name", NEEDLE]),
            ),
            Bench::Pgrep => run_tool(
                Command::new("grep")
                    .args(["-r", "-F", NEEDLE])
                    .arg(self.fixture.tree_of(self.index)),
            ),
        }
    }

    /// Paper 1's mmapbench: map the shared file MAP_SHARED, read the first
    /// byte of every page, unmap (`mmap_lock`, the file's `i_mmap_rwsem`,
    /// page-table spin locks).
    fn mmapbench(&mut self) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let (file, len) = self.shared_map.as_ref().expect("mmapbench file");
        // SAFETY: a read-only shared mapping of an open file of `len` bytes.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                *len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut sum = 0u8;
        for off in (0..*len).step_by(page_size()) {
            // SAFETY: `off` < `len`, inside the live mapping.
            sum = sum.wrapping_add(unsafe { std::ptr::read_volatile((p as *const u8).add(off)) });
        }
        std::hint::black_box(sum);
        // SAFETY: unmaps exactly the mapping made above.
        check(unsafe { libc::munmap(p, *len) }, "munmap")
    }

    /// Uniform in [POSTMARK_MIN_BYTES, POSTMARK_MAX_BYTES).
    fn file_size(&mut self) -> usize {
        POSTMARK_MIN_BYTES
            + self
                .rng
                .below((POSTMARK_MAX_BYTES - POSTMARK_MIN_BYTES) as u64) as usize
    }

    /// Postmark file number `n` of this worker.
    fn postmark_path(&self, n: u32) -> PathBuf {
        self.fixture.postmark_dir(self.index).join(format!("f{n}"))
    }

    /// Creates the next postmark file, of a random size.
    fn write_new_file(&mut self) -> io::Result<()> {
        let n = self.next_file;
        self.next_file += 1;
        let size = self.file_size();
        File::create(self.postmark_path(n))?.write_all(&FILL[..size])?;
        self.files.push(n);
        Ok(())
    }

    /// Postmark's starting set of files.
    fn create_initial_files(&mut self) -> io::Result<()> {
        fs::create_dir_all(self.fixture.postmark_dir(self.index))?;
        for _ in 0..self.fixture.postmark_files {
            self.write_new_file()?;
        }
        Ok(())
    }

    /// Parallel postmark (paper 1, Sec. 4.1): create or delete a file, then
    /// read or append one, chosen uniformly; files 0.5-10 KB on tmpfs,
    /// unbuffered (tmpfs's `stat_lock`, the fd table's `file_lock`, the
    /// directory's `i_rwsem`, dentry locks).
    fn postmark_transaction(&mut self) -> io::Result<()> {
        if self.rng.below(2) == 0 || self.files.is_empty() {
            self.write_new_file()?;
        } else {
            let at = self.rng.below(self.files.len() as u64) as usize;
            let n = self.files.swap_remove(at);
            fs::remove_file(self.postmark_path(n))?;
        }
        if self.files.is_empty() {
            return Ok(());
        }
        let n = self.files[self.rng.below(self.files.len() as u64) as usize];
        if self.rng.below(2) == 0 {
            let mut buf = Vec::with_capacity(POSTMARK_MAX_BYTES);
            File::open(self.postmark_path(n))?.read_to_end(&mut buf)?;
        } else {
            let size = self.file_size();
            OpenOptions::new()
                .append(true)
                .open(self.postmark_path(n))?
                .write_all(&FILL[..size])?;
        }
        Ok(())
    }
}

/// A name no file has: find and grep search the whole tree (paper 1).
const NEEDLE: &str = "corral-needle-not-present";
/// Postmark's smallest file (paper 1: 0.5 KB).
const POSTMARK_MIN_BYTES: usize = 512;
/// Postmark's largest file, exclusive (paper 1: 10 KB).
const POSTMARK_MAX_BYTES: usize = 10 * 1024;
/// What postmark writes.
static FILL: [u8; POSTMARK_MAX_BYTES] = [b'x'; POSTMARK_MAX_BYTES];

/// The MMU page size: mmapbench touches one byte per page.
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// Paper 1's sockbench: create a socket and close it (the fd table's
/// `file_lock`, inode and socket allocation).
fn sockbench() -> io::Result<()> {
    // SAFETY: plain socket(2); the fd is closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
    check(fd, "socket")?;
    // SAFETY: `fd` is ours and open.
    check(unsafe { libc::close(fd) }, "close")
}

/// Paper 3's FOPS: open and close one shared file (the dentry's lockref).
fn fops(path: &Path) -> io::Result<()> {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(io::Error::other)?;
    // SAFETY: `c` is a valid NUL-terminated path; the fd is closed below.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY) };
    check(fd, "open")?;
    // SAFETY: `fd` is ours and open.
    check(unsafe { libc::close(fd) }, "close")
}

/// Paper 3's MEMPOP: mmap 64 KB with MAP_POPULATE, munmap (`mmap_lock`,
/// `anon_vma` and page-table locks).
fn mempop() -> io::Result<()> {
    const LEN: usize = 64 * 1024;
    // SAFETY: a fresh anonymous private mapping, unmapped below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            LEN,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: unmaps exactly the mapping made above.
    check(unsafe { libc::munmap(p, LEN) }, "munmap")
}

/// Parallel find / grep: one short-lived process of the real tool per
/// operation (paper 1: each process calls GNU find / grep repeatedly).
fn run_tool(cmd: &mut Command) -> io::Result<()> {
    let status = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status()?;
    // find exits 0; grep exits 1 when, as intended, nothing matches.
    match status.code() {
        Some(0 | 1) => Ok(()),
        _ => Err(io::Error::other(format!("{cmd:?} failed: {status}"))),
    }
}
