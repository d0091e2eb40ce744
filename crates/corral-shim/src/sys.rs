//! The shim's few OS calls: three symbols from libc (each an eager symbol
//! lookup at every exec, so no more), the rest raw system calls.

use core::ffi::{c_char, c_int, c_void, CStr};

#[link(name = "c")]
extern "C" {
    fn getenv(name: *const c_char) -> *const c_char;
    fn dlopen(path: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
}

const RTLD_NOW: c_int = 2;
const RTLD_LOCAL: c_int = 0;
/// glibc's `RTLD_NEXT`: the next object after the caller's.
const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;

const SYS_GETPID: usize = 39;
const SYS_GETPPID: usize = 110;
const SYS_GETTID: usize = 186;
const SYS_FUTEX: usize = 202;
const SYS_KILL: usize = 62;
const SYS_EXIT_GROUP: usize = 231;
const SYS_POLL: usize = 7;
const SYS_IOCTL: usize = 16;
const SYS_MINCORE: usize = 27;
const SYS_MMAP: usize = 9;
const SYS_CLOSE: usize = 3;
const SYS_READLINKAT: usize = 267;
const SYS_FSTAT: usize = 5;
const AT_FDCWD: isize = -100;
const PROT_READ: usize = 1;
const PROT_WRITE: usize = 2;
const MAP_SHARED: usize = 1;
const SIGKILL: usize = 9;
const POLLIN: i16 = 1;
const FIONREAD: usize = 0x541B;
const EINTR: isize = 4;
const FUTEX_WAIT_PRIVATE: usize = 128;
const FUTEX_WAKE_PRIVATE: usize = 129;
const SIGABRT: usize = 6;

/// A system call of up to four arguments.
///
/// # Safety
/// The arguments are valid for system call `nr`.
#[inline]
unsafe fn syscall4(nr: usize, a: usize, b: usize, c: usize, d: usize) -> isize {
    let ret: isize;
    // SAFETY: the x86_64 Linux system call convention; the caller vouches
    // for the arguments. rcx and r11 are clobbered by `syscall`.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") a, in("rsi") b, in("rdx") c, in("r10") d,
            lateout("rcx") _, lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// A system call of six arguments.
///
/// # Safety
/// The arguments are valid for system call `nr`.
#[inline]
unsafe fn syscall6(nr: usize, args: [usize; 6]) -> isize {
    let ret: isize;
    // SAFETY: as in `syscall4`, with r8 and r9 for the last two.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") args[0], in("rsi") args[1], in("rdx") args[2],
            in("r10") args[3], in("r8") args[4], in("r9") args[5],
            lateout("rcx") _, lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// Whether descriptor `fd`'s link in `/proc/self/fd` reads `want`.
/// Written without a panic path (no indexing, no overflow check): the
/// shim links no unwinder.
pub(crate) fn fd_link_is(fd: i32, want: &[u8]) -> bool {
    if fd < 0 {
        return false;
    }
    // "/proc/self/fd/", up to 10 digits, a NUL.
    let mut path = *b"/proc/self/fd/\0\0\0\0\0\0\0\0\0\0\0";
    let mut digits = [0u8; 10];
    let (mut n, mut len) = (fd as u32, 0usize);
    for d in digits.iter_mut() {
        *d = b'0'.wrapping_add((n % 10) as u8);
        len = len.wrapping_add(1);
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let number = digits.iter().take(len).rev();
    for (slot, d) in path.iter_mut().skip(b"/proc/self/fd/".len()).zip(number) {
        *slot = *d;
    }
    let mut buf = [0u8; 64];
    // SAFETY: a NUL-terminated path and a live buffer of its length.
    let got = unsafe {
        syscall4(
            SYS_READLINKAT,
            AT_FDCWD as usize,
            path.as_ptr() as usize,
            buf.as_mut_ptr() as usize,
            buf.len(),
        )
    };
    got >= 0 && got as usize == want.len() && buf.iter().zip(want).all(|(a, b)| a == b)
}

/// Maps `len` bytes of `fd` shared and read-only; null on failure.
pub(crate) fn map_read_only(fd: i32, len: usize) -> *const u64 {
    // SAFETY: a new mapping at an address the kernel picks.
    let p = unsafe { syscall6(SYS_MMAP, [0, len, PROT_READ, MAP_SHARED, fd as usize, 0]) };
    // The kernel returns -errno (-4095..-1) on failure.
    if (-4095..0).contains(&p) {
        core::ptr::null()
    } else {
        p as *const u64
    }
}

/// Maps `len` bytes of `fd` shared and read-write; null on failure.
pub(crate) fn map_read_write(fd: i32, len: usize) -> *mut u8 {
    // SAFETY: a new mapping at an address the kernel picks.
    let p = unsafe {
        syscall6(
            SYS_MMAP,
            [0, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd as usize, 0],
        )
    };
    // The kernel returns -errno (-4095..-1) on failure.
    if (-4095..0).contains(&p) {
        core::ptr::null_mut()
    } else {
        p as *mut u8
    }
}

/// The device, inode and size of what `fd` holds; `None` where it is not
/// open.
pub(crate) fn fstat(fd: i32) -> Option<(u64, u64, usize)> {
    if fd < 0 {
        return None;
    }
    // x86_64's struct stat: 144 bytes; st_dev at 0, st_ino at 8, st_size at 48.
    let mut st = [0u64; 18];
    // SAFETY: a live buffer of struct stat's size.
    let rc = unsafe { syscall4(SYS_FSTAT, fd as usize, st.as_mut_ptr() as usize, 0, 0) };
    if rc != 0 {
        return None;
    }
    let [dev, ino, _, _, _, _, size, ..] = st;
    Some((dev, ino, size as usize))
}

/// Closes `fd`.
pub(crate) fn close(fd: i32) {
    // SAFETY: closes a descriptor this process owns (passed to it to close).
    unsafe { syscall4(SYS_CLOSE, fd as usize, 0, 0, 0) };
}

/// The environment variable `name`, or `None` where it is unset or empty
/// (`dlopen("")` would name the program itself).
pub(crate) fn env(name: &CStr) -> Option<&'static CStr> {
    // SAFETY: a NUL-terminated name; getenv allocates nothing.
    let raw = unsafe { getenv(name.as_ptr()) };
    if raw.is_null() {
        return None;
    }
    // Measured here, not by libc's strlen: one import fewer (volatile, or
    // the compiler calls strlen for the loop).
    let mut len = 0;
    // SAFETY: getenv returned a NUL-terminated string that lives as long
    // as the environment is not modified (the shim reads it at once).
    unsafe {
        while core::ptr::read_volatile(raw.add(len)) != 0 {
            len += 1;
        }
        if len == 0 {
            return None;
        }
        Some(CStr::from_bytes_with_nul_unchecked(
            core::slice::from_raw_parts(raw.cast::<u8>(), len + 1),
        ))
    }
}

/// `dlopen(path, RTLD_NOW | RTLD_LOCAL)`: local, so that the full
/// library's symbols never come before this library's in the program's
/// lookups.
pub(crate) fn open_local(path: &CStr) -> *mut c_void {
    // SAFETY: a NUL-terminated path.
    unsafe { dlopen(path.as_ptr(), RTLD_NOW | RTLD_LOCAL) }
}

/// `name` in the object `handle`, or null.
///
/// # Safety
/// `handle` is a handle from [`open_local`].
pub(crate) unsafe fn symbol(handle: *mut c_void, name: &CStr) -> *const () {
    // SAFETY: the caller's handle; a NUL-terminated name.
    unsafe { dlsym(handle, name.as_ptr()) as *const () }
}

/// `name` in the objects after this one (glibc's, or a library preloaded
/// after corral's), or null.
pub(crate) fn next_symbol(name: &CStr) -> *const () {
    // SAFETY: a NUL-terminated name; RTLD_NEXT is a valid pseudo-handle.
    unsafe { dlsym(RTLD_NEXT, name.as_ptr()) as *const () }
}

pub(crate) fn getpid() -> i32 {
    // SAFETY: no arguments.
    unsafe { syscall4(SYS_GETPID, 0, 0, 0, 0) as i32 }
}

pub(crate) fn getppid() -> i32 {
    // SAFETY: no arguments.
    unsafe { syscall4(SYS_GETPPID, 0, 0, 0, 0) as i32 }
}

/// Waits until `fd` can be read or is closed, without reading it: whether
/// bytes wait in it then.
pub(crate) fn wait_readable(fd: i32) -> bool {
    #[repr(C)]
    struct PollFd {
        fd: i32,
        events: i16,
        revents: i16,
    }
    let mut p = PollFd {
        fd,
        events: POLLIN,
        revents: 0,
    };
    // SAFETY: poll on one live pollfd (struct pollfd's layout), no timeout.
    while unsafe { syscall4(SYS_POLL, (&raw mut p) as usize, 1, -1isize as usize, 0) } == -EINTR {}
    let mut waiting: i32 = 0;
    // SAFETY: FIONREAD writes one int into a live local.
    unsafe {
        syscall4(
            SYS_IOCTL,
            fd as usize,
            FIONREAD,
            (&raw mut waiting) as usize,
            0,
        )
    };
    waiting > 0
}

/// Ends the process as a SIGKILL would have (status 128 + 9).
pub(crate) fn exit_as_killed() -> ! {
    // SAFETY: exit_group takes a status and does not return.
    unsafe {
        syscall4(SYS_EXIT_GROUP, 128 + SIGKILL, 0, 0, 0);
        core::hint::unreachable_unchecked()
    }
}

pub(crate) fn gettid() -> i32 {
    // SAFETY: no arguments.
    unsafe { syscall4(SYS_GETTID, 0, 0, 0, 0) as i32 }
}

/// The page size the shim assumes (x86_64's base page).
pub(crate) const PAGE: usize = 4096;

/// Whether the page holding `addr` is mapped (`mincore` fails with
/// `ENOMEM` on an unmapped one), so that reading it cannot fault.
pub(crate) fn page_is_mapped(addr: usize) -> bool {
    let mut resident = 0u8;
    // SAFETY: a page-aligned address and one page; mincore writes one byte
    // to `resident`, which lives through the call.
    let ret = unsafe {
        syscall4(
            SYS_MINCORE,
            addr & !(PAGE - 1),
            PAGE,
            core::ptr::from_mut(&mut resident) as usize,
            0,
        )
    };
    ret == 0
}

/// Sleeps while `*word == expected` (or until a wake, or a signal).
pub(crate) fn futex_wait(word: &core::sync::atomic::AtomicU32, expected: u32) {
    // SAFETY: a live, aligned u32; no timeout.
    unsafe {
        syscall4(
            SYS_FUTEX,
            word.as_ptr() as usize,
            FUTEX_WAIT_PRIVATE,
            expected as usize,
            0,
        )
    };
}

/// Wakes every thread sleeping on `word`.
pub(crate) fn futex_wake_all(word: &core::sync::atomic::AtomicU32) {
    // SAFETY: a live, aligned u32.
    unsafe {
        syscall4(
            SYS_FUTEX,
            word.as_ptr() as usize,
            FUTEX_WAKE_PRIVATE,
            i32::MAX as usize,
            0,
        )
    };
}

/// Ends the process with SIGABRT (the shim cannot unwind).
#[cfg_attr(test, allow(dead_code))]
pub(crate) fn abort() -> ! {
    // SAFETY: signals this process; SIGABRT's default action ends it, and
    // where the program catches or blocks it, exit_group does.
    unsafe {
        syscall4(SYS_KILL, getpid() as usize, SIGABRT, 0, 0);
        syscall4(SYS_EXIT_GROUP, 134, 0, 0, 0);
        core::hint::unreachable_unchecked()
    }
}
