//! Links the unwinder (Rust std's, for backtraces) into the library, so
//! that every process corral is preloaded into maps one library less:
//! loading libgcc_s and running its constructor (cpuid, slow in a VM) was
//! most of what an exec under corral cost over plain (a loop of 1,000
//! `/bin/true`: 1.2-1.4x plain with it, 1.0-1.25x without). std's
//! `-lgcc_s` then finds a linker script naming `libgcc_eh.a`; the
//! library exports only its pthread symbols, so the program's own
//! unwinder is untouched. Where the compiler has no `libgcc_eh.a`, the
//! library links as before.
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_ENV").as_deref() != Ok("gnu") {
        return;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let Ok(out) = Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
    else {
        return;
    };
    let archive = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // A bare name back means the compiler has none.
    if !archive.starts_with('/') || !Path::new(&archive).is_file() {
        return;
    }
    let dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("static-unwinder");
    std::fs::create_dir_all(&dir).expect("OUT_DIR is writable");
    std::fs::write(dir.join("libgcc_s.so"), format!("INPUT({archive})\n"))
        .expect("OUT_DIR is writable");
    println!("cargo:rustc-link-search=native={}", dir.display());
}
