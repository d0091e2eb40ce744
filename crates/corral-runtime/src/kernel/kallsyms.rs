//! Names kernel lock addresses with `/proc/kallsyms`: a static lock (in the
//! kernel's or a module's data or bss) reads `symbol+0xOFF`; a lock in an
//! allocated object (the direct map, vmalloc) has no symbol.

/// Largest offset into a data symbol still taken as inside it: kallsyms
/// gives no sizes, and past a gap with no symbol (a kernel built without
/// `CONFIG_KALLSYMS_ALL` lists almost no data) a name would be a guess.
const MAX_OBJECT: u64 = 64 * 1024;

/// The kernel's symbols, sorted by address, ready for lookups.
#[derive(Clone, Debug, Default)]
pub struct KernelSymbols {
    /// (address, name if a data or bss object, else `None`): every symbol
    /// bounds the one below it, text included.
    syms: Vec<(u64, Option<String>)>,
}

impl KernelSymbols {
    /// Parses a kallsyms text (`ADDR TYPE NAME [module]` per line).
    pub fn parse(kallsyms: &str) -> Self {
        let mut syms: Vec<(u64, Option<String>)> = kallsyms
            .lines()
            .filter_map(|line| {
                let mut parts = line.split_whitespace();
                let addr = u64::from_str_radix(parts.next()?, 16).ok()?;
                let kind = parts.next()?;
                let name = parts.next()?;
                // `__start_`/`__stop_` mark sections, not objects: a lock
                // named after one would be misnamed.
                let object = matches!(kind, "d" | "D" | "b" | "B")
                    && !name.starts_with("__start_")
                    && !name.starts_with("__stop_");
                Some((addr, object.then(|| name.to_string())))
            })
            .collect();
        // At one address an object's name wins over a marker or alias.
        syms.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.is_some().cmp(&a.1.is_some())));
        syms.dedup_by_key(|s| s.0);
        KernelSymbols { syms }
    }

    /// Reads `/proc/kallsyms` (root sees real addresses; others zeros,
    /// which name nothing). Unreadable: no symbols.
    pub fn read() -> Self {
        Self::parse(&std::fs::read_to_string("/proc/kallsyms").unwrap_or_default())
    }

    /// `symbol+0xOFF` of the data object `addr` lies in: the nearest symbol
    /// at or below it, if that is a data or bss object within
    /// 64 KiB; `None` below every symbol or otherwise.
    pub fn name(&self, addr: u64) -> Option<String> {
        let at = self.syms.partition_point(|(a, _)| *a <= addr);
        let (base, name) = self.syms.get(at.checked_sub(1)?)?;
        let name = name.as_ref()?;
        let off = addr - base;
        (off < MAX_OBJECT).then(|| format!("{name}+{off:#x}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYMS: &str = "\
ffff0000 T text_fn
ffff1000 D files_lock
ffff1100 b stat_lock\t[ext4]
ffff2000 t after_data
ffff3000 D __start_once
ffff5000 B big_table
0000a000 D per_cpu_offset_sym
";

    #[test]
    fn names_the_nearest_lower_data_symbol_with_its_offset() {
        let s = KernelSymbols::parse(SYMS);
        assert_eq!(s.name(0xffff1000).as_deref(), Some("files_lock+0x0"));
        assert_eq!(s.name(0xffff10ff).as_deref(), Some("files_lock+0xff"));
        // A module's symbol (trailing `[module]`) counts too.
        assert_eq!(s.name(0xffff1108).as_deref(), Some("stat_lock+0x8"));
        assert_eq!(s.name(0xffff5000 + 0x40).as_deref(), Some("big_table+0x40"));
    }

    #[test]
    fn names_nothing_it_cannot_know() {
        let s = KernelSymbols::parse(SYMS);
        // Below every symbol (an allocated lock, if symbols were sorted so).
        assert_eq!(s.name(0x1000), None);
        // In text, or bounded by a text symbol above the data one.
        assert_eq!(s.name(0xffff0004), None);
        assert_eq!(s.name(0xffff2010), None);
        // After a section marker only.
        assert_eq!(s.name(0xffff3010), None);
        // Far past the last data symbol (a direct-map address above the
        // per-CPU offsets, or beyond the end of bss).
        assert_eq!(s.name(0xffff5000 + MAX_OBJECT), None);
        assert_eq!(s.name(0x8000_0000), None);
        assert_eq!(KernelSymbols::parse("").name(0xffff1000), None);
    }
}
