//! The stats region `corral run` lends the process it starts (see
//! corral-runtime's `stats`): named in [`ENV_STATS_FD`] as `FD:DEV:INO`.
//! The shim maps it on first need (the full library's load asks for it;
//! a message of the shim's own needs it) and closes the descriptor; a
//! process that never needs it (a shell that `exec`s the real program)
//! leaves the descriptor for the image after it. The shim's own messages
//! go into the region's message area, never to the program's descriptor
//! 2, which may be any file of the program's.

use core::ffi::CStr;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU8, AtomicUsize, Ordering};

use crate::sys;

/// Must match corral-runtime's `ENV_STATS_FD_C` (a test checks).
pub(crate) const ENV_STATS_FD: &CStr = c"CORRAL_STATS_FD";

static BASE: AtomicPtr<u8> = AtomicPtr::new(core::ptr::null_mut());
static LEN: AtomicUsize = AtomicUsize::new(0);
/// 0: not tried; 1: being tried or done.
static TRIED: AtomicU8 = AtomicU8::new(0);

/// Bytes of the lock table and the fixed areas (corral-runtime's `abi`,
/// checked by a test): header 64, lock table 1,024 x 128, channel header
/// 64, messages 16 KiB, log 1 MiB, maps 256 KiB.
const FIXED: usize = 64 + 1024 * 128 + 64 + (16 << 10) + (1 << 20) + (256 << 10);
const MESSAGE_BYTES: usize = 16 << 10;

/// Where the channel begins in a region of `len` bytes (corral-runtime's
/// `abi::channel_offset_for_len`, checked by a test).
pub(crate) fn channel_offset_for_len(len: usize) -> usize {
    let threads = (len.saturating_sub(FIXED) / 64).min(1024);
    64usize
        .wrapping_add(threads.wrapping_mul(64))
        .wrapping_add(1024 * 128)
}

/// Maps the region once, if this is the process `corral run` started and
/// the number still holds it; closes the descriptor.
fn adopt() {
    // Relaxed: the CAS elects one caller; a racing caller finds none yet
    // and its line is dropped, as without a region.
    if TRIED
        .compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
        || crate::process::started_by().is_none()
    {
        return;
    }
    let Some((fd, dev, ino)) = sys::env(ENV_STATS_FD).and_then(|v| parse(v.to_bytes())) else {
        return;
    };
    let Some((found_dev, found_ino, size)) = sys::fstat(fd) else {
        return;
    };
    if (found_dev, found_ino) != (dev, ino) || size < FIXED {
        return;
    }
    let base = sys::map_read_write(fd, size);
    sys::close(fd);
    if base.is_null() {
        return;
    }
    // Relaxed: published by BASE's Release.
    LEN.store(size, Ordering::Relaxed);
    // Release: a reader that sees the base sees the length and the mapping.
    BASE.store(base, Ordering::Release);
}

/// `FD:DEV:INO`, each decimal.
fn parse(value: &[u8]) -> Option<(i32, u64, u64)> {
    let mut parts = value.split(|&b| b == b':');
    let fd = crate::process::parse_pid(parts.next()?)?;
    let dev = decimal(parts.next()?)?;
    let ino = decimal(parts.next()?)?;
    match parts.next() {
        None => Some((fd, dev, ino)),
        Some(_) => None,
    }
}

fn decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut n = 0u64;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n
            .wrapping_mul(10)
            .wrapping_add(u64::from(d.wrapping_sub(b'0')));
    }
    Some(n)
}

/// The region, mapped on first call (null where there is none); `len`
/// receives its length. The full library's way to it.
///
/// # Safety
/// `len` is null or points to a writable `usize`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn corral_shim_stats_region(len: *mut usize) -> *mut u8 {
    adopt();
    let base = BASE.load(Ordering::Acquire); // Acquire: pairs with adopt's Release.
    if !len.is_null() {
        // SAFETY: the caller's contract.
        unsafe { *len = LEN.load(Ordering::Relaxed) };
    }
    base
}

/// Says `parts` (one line; a trailing newline is dropped) through the
/// region's message area; dropped where there is no region.
pub(crate) fn say(parts: &[&[u8]]) {
    adopt();
    let base = BASE.load(Ordering::Acquire); // Acquire: pairs with adopt's Release.
    if base.is_null() {
        return;
    }
    let len = LEN.load(Ordering::Relaxed);
    let mut total = 0usize;
    for p in parts {
        total = total.wrapping_add(p.len());
    }
    if let Some(last) = parts.last() {
        if last.last() == Some(&b'\n') {
            total = total.wrapping_sub(1);
        }
    }
    let total = total.min(MESSAGE_BYTES / 4);
    if total == 0 {
        return;
    }
    let need = 4usize.wrapping_add(total.next_multiple_of(4));
    let channel = channel_offset_for_len(len);
    // SAFETY: the channel header lies inside the mapping (len >= FIXED,
    // so channel_offset_for_len(len) + 64 + MESSAGE_BYTES <= len) and is
    // 64-byte aligned; its first two words are the reservation and the
    // count of dropped lines.
    let (reserved, dropped) = unsafe {
        (
            &*(base.add(channel) as *const AtomicU32),
            &*(base.add(channel + 4) as *const AtomicU32),
        )
    };
    // Relaxed: the reservation hands out disjoint spans; the length's
    // Release publishes the bytes.
    let start = reserved.fetch_add(need as u32, Ordering::Relaxed) as usize;
    if start.wrapping_add(need) > MESSAGE_BYTES {
        dropped.fetch_add(1, Ordering::Relaxed); // Relaxed: a count
        return;
    }
    let area = channel.wrapping_add(64);
    let mut at = area.wrapping_add(start).wrapping_add(4);
    let mut left = total;
    for p in parts {
        let n = p.len().min(left);
        // SAFETY: [at, at + n) lies in this writer's reserved span.
        unsafe { core::ptr::copy_nonoverlapping(p.as_ptr(), base.add(at), n) };
        at = at.wrapping_add(n);
        left -= n;
    }
    // SAFETY: the record's length word, 4-aligned, inside the area.
    let word = unsafe { &*(base.add(area.wrapping_add(start)) as *const AtomicU32) };
    // Release: a reader that sees the length sees the bytes.
    word.store(total as u32, Ordering::Release);
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_layout_agrees_with_the_runtime() {
        use corral_runtime::abi;
        assert_eq!(super::FIXED, abi::stats_file_len(0));
        for threads in [1, 4, 1024] {
            let len = abi::stats_file_len(threads);
            assert_eq!(
                super::channel_offset_for_len(len),
                abi::channel_offset_for_len(len)
            );
        }
        assert_eq!(super::MESSAGE_BYTES, abi::MESSAGE_BYTES);
        assert_eq!(
            super::ENV_STATS_FD.to_bytes(),
            corral_runtime::stats::ENV_STATS_FD_C.to_bytes()
        );
    }

    #[test]
    fn parses_the_inherited_name() {
        assert_eq!(super::parse(b"5:64:1234"), Some((5, 64, 1234)));
        for bad in [&b""[..], b"5", b"5:1", b"x:1:2", b"5:1:2:3", b"5::2"] {
            assert_eq!(super::parse(bad), None);
        }
    }
}
