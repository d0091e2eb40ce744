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

use crate::elf;

/// The tunable that sizes the surplus.
const TUNABLE: &str = "glibc.rtld.optional_static_tls";
/// glibc's default value of [`TUNABLE`] (glibc 2.32 and later).
const DEFAULT_OPTIONAL: u64 = 512;

/// The bytes `lib`'s TLS segment needs in the surplus (its size, plus its
/// alignment for the padding glibc may put before it); 0 without one.
pub(crate) fn need_of(lib: &Path) -> std::io::Result<u64> {
    need_in(&elf::head(lib)?).ok_or_else(|| {
        std::io::Error::other(format!(
            "{}: no 64-bit little-endian ELF program headers in its first {} bytes",
            lib.display(),
            elf::HEAD_BYTES
        ))
    })
}

/// [`need_of`] on the bytes of an ELF file.
fn need_in(bytes: &[u8]) -> Option<u64> {
    let segments = elf::segments(bytes)?;
    match segments.iter().find(|s| s.kind == elf::PT_TLS) {
        Some(tls) => tls.mem_size.checked_add(tls.align),
        None => Some(0),
    }
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

    #[test]
    fn the_tls_segment_needs_its_size_and_alignment() {
        use crate::elf::tests::elf_with;
        assert_eq!(need_in(&elf_with(elf::PT_TLS, 4800, 64)), Some(4864));
        assert_eq!(need_in(&elf_with(1, 4800, 64)), Some(0));
        assert_eq!(need_in(b"\x7fELF\x01\x01"), None);
        assert_eq!(need_in(&elf_with(elf::PT_TLS, 4800, 64)[..100]), None);
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
