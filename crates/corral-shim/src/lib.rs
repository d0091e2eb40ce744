//! `libcorral_shim.so`: what `corral run` preloads into every process. It
//! exports the pthread functions corral interposes, each a single
//! `jmp *slot(%rip)`; a slot first leads to a stub that
//! `dlopen`s the full library (`libcorral_preload.so`, named by
//! `CORRAL_SHIM_TARGET`) and points every slot into it. A process that
//! never calls one of them (a shell, `/bin/true`: most of what a script
//! execs) never loads the full library, and pays at its exec for this
//! library alone: no std, three imported symbols, no constructor work
//! beyond two `getenv`s. The process `corral run` started loads the full
//! library at once (its stats file and report).
//!
//! The shim also holds the 16 bytes of per-thread words every lock attempt
//! reads (static TLS, which only a library loaded at start-up may have):
//! the full library finds them through [`corral_shim_hot_tpoff`], so that
//! it can itself be loaded late.

#![cfg_attr(not(test), no_std)]
// The test build keeps the code but not the constructor that reaches it.
#![cfg_attr(test, allow(dead_code))]

mod entries;
mod load;
mod sys;

pub use entries::*;

#[cfg(all(not(test), target_arch = "x86_64", target_os = "linux"))]
mod tls {
    // 16 zeroed bytes of each thread's static TLS (.tbss is zero-filled for
    // every thread, as the words' initial state wants).
    core::arch::global_asm!(
        ".pushsection .tbss.corral_shim_hot,\"awT\",@nobits",
        // Global but hidden: the accessor may sit in another object file.
        ".globl corral_shim_hot",
        ".hidden corral_shim_hot",
        ".type corral_shim_hot, @tls_object",
        ".size corral_shim_hot, 16",
        ".p2align 3",
        "corral_shim_hot:",
        ".zero 16",
        ".popsection",
    );
}

/// The offset of this library's per-thread lock-attempt words from the
/// thread pointer: the same for every thread (static TLS). The full
/// library asks once, at its load.
#[cfg(all(not(test), target_arch = "x86_64", target_os = "linux"))]
#[no_mangle]
pub extern "C" fn corral_shim_hot_tpoff() -> isize {
    let off: isize;
    // SAFETY: the initial-exec TLS sequence: the GOT slot holds the
    // symbol's offset from the thread pointer; reading it has no effects.
    unsafe {
        core::arch::asm!(
            "mov {off}, qword ptr [rip + corral_shim_hot@GOTTPOFF]",
            off = out(reg) off,
            options(pure, readonly, nostack, preserves_flags),
        );
    }
    off
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    sys::abort()
}

// The constructor: the process `corral run` started loads the full library
// now, so that its stats file exists even if it never locks.
#[cfg(not(test))]
#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = entries::on_load;

#[cfg(test)]
mod tests {
    /// The shim cannot depend on corral-runtime (std): its names are
    /// spelled twice, and must agree.
    #[test]
    fn env_names_match_the_runtime() {
        assert_eq!(
            crate::load::ENV_TARGET.to_str().unwrap(),
            corral_runtime::config::ENV_SHIM_TARGET
        );
        assert_eq!(
            crate::load::ENV_PARENT_PID,
            corral_runtime::config::ENV_PARENT_PID_C
        );
    }

    #[test]
    fn parses_pids() {
        assert_eq!(crate::load::parse_pid(b"123"), Some(123));
        assert_eq!(crate::load::parse_pid(b""), None);
        assert_eq!(crate::load::parse_pid(b"12a"), None);
        assert_eq!(crate::load::parse_pid(b"99999999999"), None);
    }
}
