//! What corral reads of an ELF file: its program headers, from the first
//! bytes of the file only (the preload library is 15 MB with its debug
//! information, and `corral run` must start fast).

use std::io::Read;
use std::path::Path;

/// Program header type of the dynamic loader's path.
pub(crate) const PT_INTERP: u32 = 3;
/// Program header type of the TLS segment.
pub(crate) const PT_TLS: u32 = 7;

/// How much of a file is read: the program headers follow the ELF header
/// at the start of the file (the linker puts them there).
pub(crate) const HEAD_BYTES: usize = 8192;

/// One program header, the fields corral uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub(crate) kind: u32,
    pub(crate) mem_size: u64,
    pub(crate) align: u64,
}

/// The first [`HEAD_BYTES`] of `path`.
pub(crate) fn head(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(HEAD_BYTES);
    std::fs::File::open(path)?
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)?;
    Ok(head)
}

/// The program headers of a 64-bit little-endian ELF file's first bytes;
/// `None` for anything else, or where they lie past `elf`'s end.
pub(crate) fn segments(elf: &[u8]) -> Option<Vec<Segment>> {
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
    (0..phnum)
        .map(|i| {
            let ph = phoff.checked_add(i.checked_mul(phentsize)?)?;
            Some(Segment {
                kind: u32_at(ph)?,
                mem_size: u64_at(ph + 0x28)?,
                align: u64_at(ph + 0x30)?,
            })
        })
        .collect()
}

/// Whether `program` starts through the dynamic loader, so that a library
/// in `LD_PRELOAD` loads into it: an ELF file with an interpreter, or a
/// script (`#!`) whose interpreter is such a file. False for a static
/// program and for anything unreadable.
pub fn loads_preloads(program: &Path) -> bool {
    let Ok(bytes) = head(program) else {
        return false;
    };
    if let Some(script) = bytes.strip_prefix(b"#!") {
        let line = script.split(|&b| b == b'\n').next().unwrap_or_default();
        let interpreter = line
            .split(|b| b.is_ascii_whitespace())
            .find(|w| !w.is_empty());
        return interpreter.is_some_and(|i| {
            use std::os::unix::ffi::OsStrExt;
            has_interpreter(&head(Path::new(std::ffi::OsStr::from_bytes(i))).unwrap_or_default())
        });
    }
    has_interpreter(&bytes)
}

fn has_interpreter(elf: &[u8]) -> bool {
    segments(elf).is_some_and(|s| s.iter().any(|s| s.kind == PT_INTERP))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal ELF64 header with one program header of `kind`.
    pub(crate) fn elf_with(kind: u32, mem_size: u64, align: u64) -> Vec<u8> {
        let mut e = vec![0u8; 64 + 56];
        e[..6].copy_from_slice(b"\x7fELF\x02\x01");
        e[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        e[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        e[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        e[64..68].copy_from_slice(&kind.to_le_bytes());
        e[64 + 0x28..64 + 0x30].copy_from_slice(&mem_size.to_le_bytes());
        e[64 + 0x30..64 + 0x38].copy_from_slice(&align.to_le_bytes());
        e
    }

    #[test]
    fn program_headers_parse_and_truncation_is_refused() {
        let seg = Segment {
            kind: PT_TLS,
            mem_size: 4800,
            align: 64,
        };
        assert_eq!(segments(&elf_with(PT_TLS, 4800, 64)), Some(vec![seg]));
        assert_eq!(segments(b"\x7fELF\x01\x01"), None);
        assert_eq!(segments(&elf_with(PT_TLS, 4800, 64)[..100]), None);
    }

    #[test]
    fn only_programs_with_an_interpreter_load_preloads() {
        let dir = std::env::temp_dir().join(format!("corral-elf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, bytes: &[u8]| {
            let p = dir.join(name);
            std::fs::write(&p, bytes).unwrap();
            p
        };
        let dynamic = write("dynamic", &elf_with(PT_INTERP, 28, 1));
        let fixed = write("static", &elf_with(PT_TLS, 64, 8));
        let script = |to: &Path| format!("#!{} -e\necho\n", to.display()).into_bytes();
        assert!(loads_preloads(&dynamic));
        assert!(!loads_preloads(&fixed));
        assert!(loads_preloads(&write("a.sh", &script(&dynamic))));
        assert!(!loads_preloads(&write("b.sh", &script(&fixed))));
        assert!(!loads_preloads(&dir.join("missing")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
