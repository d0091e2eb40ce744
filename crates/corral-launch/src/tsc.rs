//! The TSC calibration `corral run` hands to the program's processes, kept
//! for the rest of the boot in corral's private directory: a run then
//! starts without spinning 250 us to measure it (on a 2-CPU VM,
//! `corral run --quiet -- true` took 3.7 ms more than `true` alone).

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::OnceLock;

use corral_locks::sys::clock;
use corral_runtime::files;

/// The file's name in the private directory.
const FILE: &str = "tsc";

/// Nanoseconds per TSC tick (32.32), measured once per boot.
pub(crate) fn calibration_q32() -> u64 {
    static Q32: OnceLock<u64> = OnceLock::new();
    *Q32.get_or_init(|| {
        let dir = files::private_dir().ok();
        let boot = boot_id();
        let kept = dir
            .as_deref()
            .zip(boot.as_deref())
            .and_then(|(d, b)| read(d, b));
        // adopt_calibration refuses an implausible value; then measure.
        if let Some(q32) = kept.filter(|&q| clock::adopt_calibration(q)) {
            return q32;
        }
        let q32 = clock::calibration_q32();
        if let (Some(d), Some(b)) = (dir, boot) {
            // Halves of writes by CLIs killed before their rename.
            files::remove_stale(&d);
            // A write that fails costs the next run the same spin, no more.
            let _ = write(&d, &b, q32);
        }
        q32
    })
}

/// This boot's identity: the TSC's rate holds for one boot.
fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_owned()).filter(|id| !id.is_empty())
}

/// The kept value, if the file is ours (a plain file of this user, no
/// link followed) and was written in boot `boot`.
fn read(dir: &Path, boot: &str) -> Option<u64> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir.join(FILE))
        .ok()?;
    let md = file.metadata().ok()?;
    if !md.is_file() || md.uid() != files::euid() {
        return None;
    }
    let mut text = String::new();
    file.take(256).read_to_string(&mut text).ok()?;
    parse(&text, boot)
}

/// `<boot id> <q32>` for boot `boot`.
fn parse(text: &str, boot: &str) -> Option<u64> {
    let (id, q32) = text.trim().split_once(' ')?;
    (id == boot).then(|| q32.parse().ok()).flatten()
}

/// Writes the value for boot `boot`: to a new file of this process, then
/// renamed over the old one, so a reader sees one whole line or none.
fn write(dir: &Path, boot: &str, q32: u64) -> std::io::Result<()> {
    let tmp = dir.join(format!("{FILE}.{}", std::process::id()));
    let mut file = files::create_private(&tmp).map_err(std::io::Error::other)?;
    let written = file
        .write_all(format!("{boot} {q32}\n").as_bytes())
        .and_then(|()| std::fs::rename(&tmp, dir.join(FILE)));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_taken_only_from_the_same_boot() {
        assert_eq!(parse("abc-1 1717986918\n", "abc-1"), Some(1717986918));
        assert_eq!(parse("abc-1 1717986918\n", "abc-2"), None);
        assert_eq!(parse("abc-1\n", "abc-1"), None);
        assert_eq!(parse("abc-1 x\n", "abc-1"), None);
    }

    #[test]
    fn written_then_read_and_a_link_is_not_followed() {
        let dir = std::env::temp_dir().join(format!("corral-tsc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write(&dir, "boot-a", 1234567890).unwrap();
        assert_eq!(read(&dir, "boot-a"), Some(1234567890));
        assert_eq!(read(&dir, "boot-b"), None);
        // A link in the file's place is refused, not followed.
        let elsewhere = dir.join("elsewhere");
        std::fs::write(&elsewhere, "boot-a 42\n").unwrap();
        std::fs::remove_file(dir.join(FILE)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.join(FILE)).unwrap();
        assert_eq!(read(&dir, "boot-a"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
