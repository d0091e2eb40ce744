//! The objects the dynamic linker has loaded, listed from its own records
//! (`dl_iterate_phdr`) rather than from `/proc/self/maps`, whose text the
//! kernel formats one mapping at a time: at a 16 ms git grep's exit that
//! read cost 0.11-0.13 ms, on the path the exit waits on.

use core::ffi::{c_int, c_void, CStr};
use core::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// One loaded segment of an object file, page-aligned as the loader maps
/// it: `[start, end)` in memory holds the file's bytes from `offset` on (a
/// segment's `.bss` lies past its bytes, inside `end`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// First byte in memory.
    pub start: u64,
    /// One past the last byte in memory.
    pub end: u64,
    /// The file offset mapped at `start`.
    pub offset: u64,
    /// `r`, `w`, `x` or `-` each, then `p`: as `/proc/PID/maps` writes them.
    pub perms: [u8; 4],
    /// The file; the program's own is read from `/proc/self/exe`. Objects
    /// with no file (the vDSO) are left out.
    pub path: PathBuf,
}

impl Segment {
    /// The segment as a `/proc/PID/maps` line (no device or inode).
    pub fn maps_line(&self) -> String {
        format!(
            "{:x}-{:x} {} {:08x} 00:00 0 {}\n",
            self.start,
            self.end,
            core::str::from_utf8(&self.perms).unwrap_or("---p"),
            self.offset,
            self.path.display()
        )
    }
}

const PAGE: u64 = 4096;

/// One `PT_LOAD` segment as the loader mapped it (exact, not page-aligned).
#[derive(Clone, Copy, Debug)]
pub struct LoadSegment<'a> {
    /// The object's place in the loader's list: 0 is the program.
    pub object: usize,
    /// The object's name as the loader has it (empty for the program, not
    /// a path for the vDSO).
    pub name: &'a [u8],
    /// Its first byte in memory.
    pub start: u64,
    /// Its size in memory (`.bss` included).
    pub size: u64,
    /// The file offset of its first byte.
    pub offset: u64,
    /// `PF_R`, `PF_W`, `PF_X`.
    pub flags: u32,
}

/// Calls `visit` with every `PT_LOAD` segment of every loaded object, in
/// the loader's order, until it breaks. Allocates nothing: the lock
/// profile's unwinder finds its own code with it inside a waiter.
pub fn walk_load_segments(mut visit: impl FnMut(&LoadSegment<'_>) -> ControlFlow<()>) {
    let mut walk = Walk {
        visit: &mut visit,
        object: 0,
    };
    // SAFETY: `step` matches dl_iterate_phdr's callback type and only reads
    // the info it is given, for the call; `walk` outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(step), (&mut walk as *mut Walk<'_>).cast()) };
}

struct Walk<'v> {
    visit: &'v mut dyn FnMut(&LoadSegment<'_>) -> ControlFlow<()>,
    object: usize,
}

/// dl_iterate_phdr's callback: one object's load segments to the visitor;
/// non-zero stops the walk.
///
/// # Safety
/// `info` points to the loader's record of one object, valid for the call;
/// `data` is the `Walk` passed by [`walk_load_segments`].
unsafe extern "C" fn step(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
    // SAFETY: as the function's contract says.
    let (info, walk) = unsafe { (&*info, &mut *data.cast::<Walk<'_>>()) };
    let name = if info.dlpi_name.is_null() {
        &[][..]
    } else {
        // SAFETY: the loader's NUL-terminated name of the object.
        unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes()
    };
    let phdrs = if info.dlpi_phdr.is_null() {
        &[][..]
    } else {
        // SAFETY: the loader's program headers of the object, `dlpi_phnum` long.
        unsafe { core::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) }
    };
    let object = walk.object;
    walk.object += 1;
    for ph in phdrs.iter().filter(|ph| ph.p_type == libc::PT_LOAD) {
        let segment = LoadSegment {
            object,
            name,
            start: info.dlpi_addr.wrapping_add(ph.p_vaddr),
            size: ph.p_memsz,
            offset: ph.p_offset,
            flags: ph.p_flags,
        };
        if (walk.visit)(&segment).is_break() {
            return 1;
        }
    }
    0
}

/// Every `PT_LOAD` segment of every loaded object with a file, in the
/// loader's order (the program first), each object's in address order,
/// page-aligned as the loader maps them. Where two of an object's
/// segments share a page the later one keeps it, as the later of the
/// loader's fixed mappings does.
pub fn loaded_segments() -> Vec<Segment> {
    let exe = std::fs::read_link("/proc/self/exe").ok();
    let mut segments: Vec<Segment> = Vec::new();
    let mut last_object = None;
    walk_load_segments(|s| {
        let path = match s.name {
            // The program itself is listed first, with an empty name.
            [] if s.object == 0 => match &exe {
                Some(exe) => exe.clone(),
                None => return ControlFlow::Continue(()),
            },
            [b'/', ..] => PathBuf::from(std::ffi::OsStr::from_bytes(s.name)),
            _ => return ControlFlow::Continue(()), // no file: the vDSO
        };
        let flag = |bit, c| if s.flags & bit != 0 { c } else { b'-' };
        let segment = Segment {
            start: s.start & !(PAGE - 1),
            end: s.start.wrapping_add(s.size).wrapping_add(PAGE - 1) & !(PAGE - 1),
            offset: s.offset & !(PAGE - 1),
            perms: [
                flag(libc::PF_R, b'r'),
                flag(libc::PF_W, b'w'),
                flag(libc::PF_X, b'x'),
                b'p',
            ],
            path,
        };
        if last_object == Some(s.object) {
            if let Some(prev) = segments.last_mut() {
                prev.end = prev.end.min(segment.start);
            }
        }
        last_object = Some(s.object);
        segments.push(segment);
        ControlFlow::Continue(())
    });
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/proc/self/maps`' file mappings: (start, end, offset, path).
    fn proc_maps() -> Vec<(u64, u64, u64, String)> {
        std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let path = f.get(5).filter(|p| p.starts_with('/'))?;
                let (s, e) = f[0].split_once('-')?;
                Some((
                    u64::from_str_radix(s, 16).ok()?,
                    u64::from_str_radix(e, 16).ok()?,
                    u64::from_str_radix(f[2], 16).ok()?,
                    path.to_string(),
                ))
            })
            .collect()
    }

    #[test]
    fn every_segment_maps_its_addresses_to_the_offsets_the_kernel_shows() {
        let segments = loaded_segments();
        let kernel = proc_maps();
        assert!(segments.len() >= 4, "{segments:?}");
        let mut checked = 0;
        for s in &segments {
            // Each page of the segment the kernel maps from the same file
            // (pages of its .bss past the file are anonymous there).
            for page in (s.start..s.end).step_by(PAGE as usize) {
                let Some(k) = kernel.iter().find(|k| (k.0..k.1).contains(&page)) else {
                    continue;
                };
                // The loader names the path it opened (/lib/..., a link
                // to /usr/lib/... on Debian), the kernel the file.
                let same = |p: &std::path::Path| std::fs::canonicalize(p).unwrap();
                assert_eq!(same(k.3.as_ref()), same(&s.path), "{page:#x} in {s:?}");
                assert_eq!(
                    page - k.0 + k.2,
                    page - s.start + s.offset,
                    "{page:#x} in {s:?}"
                );
                checked += 1;
            }
        }
        assert!(checked >= segments.len(), "only {checked} pages checked");
    }

    #[test]
    fn the_program_and_libc_are_listed_with_this_function_in_an_executable_segment() {
        let segments = loaded_segments();
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        assert_eq!(segments[0].path, exe);
        let here = loaded_segments as *const () as u64;
        let text = segments
            .iter()
            .find(|s| (s.start..s.end).contains(&here))
            .unwrap();
        assert_eq!((text.perms[2], &text.path), (b'x', &exe));
        assert!(segments
            .iter()
            .any(|s| s.path.to_string_lossy().contains("libc.so")));
        let line = text.maps_line();
        assert!(
            line.ends_with(&format!(" 00:00 0 {}\n", exe.display())),
            "{line}"
        );
    }
}
