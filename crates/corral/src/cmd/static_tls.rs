//! Room in glibc's static TLS surplus for the full library, which
//! `libcorral_shim.so` loads late with `dlopen`. The library's
//! thread-locals are initial-exec TLS (its `DF_STATIC_TLS` flag): glibc
//! then places its whole TLS block in every thread's static area at the
//! `dlopen`, and no thread's first access allocates (dynamic TLS is
//! allocated by the program's `malloc`, which may lock a pthread mutex
//! from inside corral's lock call). The surplus glibc reserves for such
//! libraries is `glibc.rtld.optional_static_tls` (512 bytes by default),
//! too small for corral's node pools, so `corral run` raises it.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

/// The tunable that sizes the surplus.
const TUNABLE: &str = "glibc.rtld.optional_static_tls";
/// glibc's default value of [`TUNABLE`] (glibc 2.32 and later).
const DEFAULT_OPTIONAL: u64 = 512;
/// ELF program header type of the TLS segment.
const PT_TLS: u32 = 7;

/// The bytes `lib`'s TLS segment needs in the surplus (its size, plus its
/// alignment for the padding glibc may put before it); 0 without one.
/// Reads the ELF header and program headers only (the library is 15 MB
/// with its debug information; `corral run` must start fast).
pub(crate) fn need_of(lib: &Path) -> std::io::Result<u64> {
    use std::io::Read;
    let mut head = Vec::with_capacity(HEAD_BYTES);
    std::fs::File::open(lib)?
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)?;
    need_in(&head).ok_or_else(|| {
        std::io::Error::other(format!(
            "{}: no 64-bit little-endian ELF program headers in its first {HEAD_BYTES} bytes",
            lib.display()
        ))
    })
}

/// How much of the library [`need_of`] reads: the program headers follow
/// the ELF header at the start of the file (the linker puts them there).
const HEAD_BYTES: usize = 8192;

/// [`need_of`] on the bytes of an ELF file.
fn need_in(elf: &[u8]) -> Option<u64> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(elf.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(elf.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(elf.get(o..o + 8)?.try_into().ok()?));
    // ELFCLASS64, ELFDATA2LSB.
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let phoff = usize::try_from(u64_at(0x20)?).ok()?;
    let phentsize = usize::from(u16_at(0x36)?);
    let phnum = usize::from(u16_at(0x38)?);
    for i in 0..phnum {
        let ph = phoff.checked_add(i.checked_mul(phentsize)?)?;
        if u32_at(ph)? == PT_TLS {
            return u64_at(ph + 0x28)?.checked_add(u64_at(ph + 0x30)?);
        }
    }
    Some(0)
}

/// `GLIBC_TUNABLES` as `existing` has it, with [`TUNABLE`] raised by
/// `need` bytes over its value there (glibc's default if absent): the
/// program keeps the room it had for its own libraries.
pub(crate) fn tunables_with_room(existing: Option<&OsStr>, need: u64) -> OsString {
    let mut kept: Vec<&[u8]> = Vec::new();
    let mut optional = DEFAULT_OPTIONAL;
    for entry in existing
        .map_or(&[][..], OsStr::as_bytes)
        .split(|&b| b == b':')
    {
        match entry
            .strip_prefix(TUNABLE.as_bytes())
            .and_then(|r| r.strip_prefix(b"="))
        {
            Some(value) => {
                optional = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(DEFAULT_OPTIONAL)
            }
            None if !entry.is_empty() => kept.push(entry),
            None => {}
        }
    }
    let ours = format!("{TUNABLE}={}", optional.saturating_add(need));
    kept.push(ours.as_bytes());
    OsString::from_vec(kept.join(&b':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 header with one program header of `p_type`.
    fn elf_with(p_type: u32, memsz: u64, align: u64) -> Vec<u8> {
        let mut e = vec![0u8; 64 + 56];
        e[..6].copy_from_slice(b"\x7fELF\x02\x01");
        e[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        e[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        e[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        e[64..68].copy_from_slice(&p_type.to_le_bytes());
        e[64 + 0x28..64 + 0x30].copy_from_slice(&memsz.to_le_bytes());
        e[64 + 0x30..64 + 0x38].copy_from_slice(&align.to_le_bytes());
        e
    }

    #[test]
    fn the_tls_segment_needs_its_size_and_alignment() {
        assert_eq!(need_in(&elf_with(PT_TLS, 4800, 64)), Some(4864));
        assert_eq!(need_in(&elf_with(1, 4800, 64)), Some(0));
        assert_eq!(need_in(b"\x7fELF\x01\x01"), None);
        assert_eq!(need_in(&elf_with(PT_TLS, 4800, 64)[..100]), None);
    }

    #[test]
    fn the_room_adds_to_the_programs_own_value_and_keeps_other_tunables() {
        assert_eq!(
            tunables_with_room(None, 100),
            OsString::from(format!("{TUNABLE}=612"))
        );
        assert_eq!(
            tunables_with_room(Some(OsStr::new("glibc.malloc.arena_max=2")), 100),
            OsString::from(format!("glibc.malloc.arena_max=2:{TUNABLE}=612"))
        );
        assert_eq!(
            tunables_with_room(
                Some(OsStr::new(&format!("{TUNABLE}=4096:glibc.malloc.check=0"))),
                100
            ),
            OsString::from(format!("glibc.malloc.check=0:{TUNABLE}=4196"))
        );
    }

    #[test]
    fn the_built_preload_has_a_tls_segment() {
        // The library next to this test binary, when it was built (the
        // README's test command builds it first).
        let exe = std::env::current_exe().unwrap();
        let Some(lib) = exe
            .ancestors()
            .nth(2)
            .map(|d| d.join("libcorral_preload.so"))
        else {
            return;
        };
        if lib.is_file() {
            assert!(need_of(&lib).unwrap() > 0, "{}", lib.display());
        }
    }
}
