//! Naming the lock profile's addresses after the run: a process address
//! goes to its file and ELF virtual address through the process's
//! `/proc/PID/maps` (copied at its exit), then to a function (and
//! file:line with debug info) with `addr2line`, whose loader falls back to
//! the symbol table, then to the dynamic one.

use std::collections::HashMap;
use std::path::PathBuf;

/// One mapping: `[start, end)` in the process, at `offset` in `path`
/// (`None`: anonymous, such as the zero-filled tail of a file's `.bss`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Mapping {
    start: u64,
    end: u64,
    offset: u64,
    path: Option<PathBuf>,
}

/// Parses `/proc/PID/maps` text; pseudo-files (`[stack]`, ...) are skipped.
fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (range, _perms, offset) = (f.next()?, f.next()?, f.next()?);
            let path = match f.nth(2) {
                Some(p) if p.starts_with('/') => Some(PathBuf::from(p)),
                Some(_) => return None,
                None => None,
            };
            let (start, end) = range.split_once('-')?;
            Some(Mapping {
                start: u64::from_str_radix(start, 16).ok()?,
                end: u64::from_str_radix(end, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
                path,
            })
        })
        .collect()
}

/// A code or data address, named.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Named {
    /// `function+0xOFF`, or `file+0xOFF` where no symbol covers it.
    pub(crate) name: Option<String>,
    /// `file:line`, with debug info.
    pub(crate) location: Option<String>,
    /// The file mapped there.
    pub(crate) object: Option<String>,
    /// Whether a function or symbol covers the address (`name` is then not
    /// a bare file offset).
    pub(crate) symbolic: bool,
}

/// Symbolises addresses of one process.
pub(crate) struct Symbolizer {
    maps: Vec<Mapping>,
    files: HashMap<PathBuf, Option<Loaded>>,
}

/// A file's debug info and symbols, and its load segments
/// `(file offset, size in memory, virtual address)`.
struct Loaded {
    loader: addr2line::Loader,
    segments: Vec<(u64, u64, u64)>,
}

impl Loaded {
    fn open(path: &std::path::Path) -> Option<Self> {
        use object::{Object, ObjectSegment};
        // Only the headers are read here; the loader maps the file itself.
        // Read whole, git's 3.7 MB binary added 2 ms to every `corral run`.
        let data = object::ReadCache::new(std::fs::File::open(path).ok()?);
        let file = object::File::parse(&data).ok()?;
        let segments = file
            .segments()
            .map(|s| (s.file_range().0, s.size(), s.address()))
            .collect();
        let loader = addr2line::Loader::new(path).ok()?;
        Some(Loaded { loader, segments })
    }

    /// The ELF virtual address at `file_offset` (past the file's bytes in
    /// a `.bss`): in the load segment holding that offset in memory.
    fn vaddr_of(&self, file_offset: u64) -> Option<u64> {
        self.segments.iter().find_map(|&(start, size, vaddr)| {
            (start..start + size)
                .contains(&file_offset)
                .then(|| file_offset - start + vaddr)
        })
    }
}

impl Symbolizer {
    /// From the text of the process's `/proc/PID/maps`.
    pub(crate) fn new(maps: &str) -> Self {
        Symbolizer {
            maps: parse_maps(maps),
            files: HashMap::new(),
        }
    }

    /// Names the process address `addr`. `code`: a return address, looked
    /// up one byte back so that a call at a function's end stays in it.
    pub(crate) fn name(&mut self, addr: u64, code: bool) -> Named {
        let probe = if code { addr.saturating_sub(1) } else { addr };
        let Some(i) = self
            .maps
            .iter()
            .position(|m| (m.start..m.end).contains(&probe))
        else {
            return Named::default();
        };
        // An anonymous mapping right after a file's is that file's `.bss`.
        let m = match (&self.maps[i].path, i.checked_sub(1).map(|j| &self.maps[j])) {
            (Some(_), _) => &self.maps[i],
            (None, Some(prev)) if prev.path.is_some() && prev.end == self.maps[i].start => prev,
            (None, _) => return Named::default(),
        };
        let path = m.path.clone().unwrap_or_default();
        let file_offset = probe - m.start + m.offset;
        let short = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Shown as the address itself (a return address, as perf shows one).
        let shown = addr - m.start + m.offset;
        let mut named = Named {
            name: Some(format!("{short}+{shown:#x}")),
            location: None,
            object: Some(path.display().to_string()),
            symbolic: false,
        };
        let loaded = self
            .files
            .entry(path.clone())
            .or_insert_with(|| Loaded::open(&path));
        let Some(loaded) = loaded else { return named };
        let Some(vaddr) = loaded.vaddr_of(file_offset) else {
            return named;
        };
        let loader = &loaded.loader;
        if code {
            if let Ok(mut frames) = loader.find_frames(vaddr) {
                // The outermost frame: the function the address is in,
                // not the last function inlined into it.
                let mut last = None;
                while let Ok(Some(f)) = frames.next() {
                    last = Some(f);
                }
                if let Some(f) = last {
                    if let Some(func) = f.function.as_ref().and_then(|n| n.demangle().ok()) {
                        named.name = Some(func.into_owned());
                        named.symbolic = true;
                    }
                }
            }
            if let Ok(Some(loc)) = loader.find_location(vaddr) {
                if let (Some(file), Some(line)) = (loc.file, loc.line) {
                    named.location = Some(format!("{file}:{line}"));
                }
            }
        }
        if named.location.is_none() {
            if let Some(sym) = loader.find_symbol_info(vaddr) {
                let name = demangled(sym.name());
                named.name = Some(format!("{name}+{:#x}", vaddr - sym.address()));
                named.symbolic = true;
            }
        }
        named
    }
}

/// A symbol table's name, demangled where it is mangled (C++ `_Z`, Rust
/// `_R` or legacy `_ZN`). Not otherwise: a C program's `m` or `w` would
/// read as the Itanium codes of `unsigned long` and `wchar_t`.
fn demangled(name: &str) -> std::borrow::Cow<'_, str> {
    if name.starts_with("_Z") || name.starts_with("_R") {
        addr2line::demangle_auto(name.into(), None)
    } else {
        name.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_mangled_names_are_demangled() {
        assert_eq!(demangled("m"), "m");
        assert_eq!(demangled("w"), "w");
        assert_eq!(demangled("pthread_mutex_lock"), "pthread_mutex_lock");
        assert_eq!(demangled("_Z3fooi"), "foo(int)");
    }

    #[test]
    fn maps_lines_parse_and_anonymous_ones_are_skipped() {
        let text = "55d0c0a00000-55d0c0a2c000 r-xp 00002000 08:01 123 /usr/bin/sysbench\n\
                    7ffd1000-7ffd2000 rw-p 00000000 00:00 0 [stack]\n\
                    7f0000000000-7f0000001000 rw-p 00000000 00:00 0\n";
        let maps = parse_maps(text);
        assert_eq!(
            maps,
            vec![
                Mapping {
                    start: 0x55d0c0a00000,
                    end: 0x55d0c0a2c000,
                    offset: 0x2000,
                    path: Some("/usr/bin/sysbench".into())
                },
                Mapping {
                    start: 0x7f0000000000,
                    end: 0x7f0000001000,
                    offset: 0,
                    path: None
                }
            ]
        );
    }

    #[test]
    fn names_a_function_of_this_test_binary_from_its_own_maps() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mut s = Symbolizer::new(&maps);
        let f = parse_maps as *const () as u64;
        let named = s.name(f + 1, true);
        let name = named.name.unwrap();
        assert!(name.contains("parse_maps"), "{name}");
        assert!(named.object.unwrap().contains("corral"));
        assert_eq!(s.name(8, true), Named::default(), "unmapped");
    }

    #[test]
    fn a_stripped_librarys_exported_function_is_named_from_its_dynsym() {
        // Debian's libc has no .symtab (stripped) and no debug info here:
        // only .dynsym can name its exported functions.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mut s = Symbolizer::new(&maps);
        let f = libc::pthread_mutex_trylock as *const () as u64;
        let named = s.name(f + 4, true);
        let object = named.object.unwrap_or_default();
        if !object.contains("libc.so") {
            return; // a static or unusual libc: nothing to check
        }
        let name = named.name.unwrap();
        assert!(
            name.ends_with("pthread_mutex_trylock+0x3"),
            "{name} in {object}"
        );
        assert!(named.symbolic);
    }

    #[test]
    fn the_loaders_list_names_code_and_data_as_the_kernels_maps_do() {
        // Zero-initialised: in the .bss, past the file's bytes.
        static IN_BSS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let kernel_maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mut kernel = Symbolizer::new(&kernel_maps);
        let mut loader = Symbolizer::new(&corral_runtime::lockprof::maps_text());
        let addresses = [
            (parse_maps as *const () as u64 + 1, true),
            (libc::pthread_mutex_trylock as *const () as u64 + 4, true),
            (&IN_BSS as *const _ as u64, false),
        ];
        for (addr, code) in addresses {
            let (k, l) = (kernel.name(addr, code), loader.name(addr, code));
            assert!(k.name.is_some(), "{addr:#x} unnamed by the kernel's maps");
            // The object's path may differ by a link (/lib, /usr/lib).
            assert_eq!(
                (l.name, l.location, l.symbolic),
                (k.name, k.location, k.symbolic)
            );
        }
    }
}
