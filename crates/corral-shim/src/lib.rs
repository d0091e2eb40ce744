//! `libcorral_shim.so`: what `corral run` preloads into every process. It
//! exports the pthread functions corral interposes, each a single
//! `jmp *slot(%rip)`; a slot first leads to a stub that
//! `dlopen`s the full library (`libcorral_preload.so`, named by
//! `CORRAL_SHIM_TARGET`) and points every slot into it. A process that
//! never calls one of them (a shell, `/bin/true`: most of what a script
//! execs) never loads the full library, and pays at its exec for this
//! library alone: no std, four imported symbols (one the compiler's
//! `memset`), no constructor work beyond a few `getenv`s (and, under
//! `corral run` as root, mapping the on-CPU table). By default (`corral
//! run --load-after-contended`, 1000) a process stays on glibc's mutexes
//! until it has handed a mutex to a waiting thread that many times, so that a short run that barely
//! contends never pays the full library's load; with 0, the process
//! `corral run` started loads it at once (its stats region and report).
//!
//! The full library's thread-local words are initial-exec TLS, so its
//! `dlopen` must find room in glibc's static TLS surplus (then no thread's
//! first access allocates, which would call the program's `malloc` from
//! inside a lock call): `corral run` reserves that room with
//! `GLIBC_TUNABLES=glibc.rtld.optional_static_tls`. Where the room is
//! missing the `dlopen` fails and the process runs on glibc's locks.

#![cfg_attr(not(test), no_std)]
// The test build keeps the code but not the constructor that reaches it.
#![cfg_attr(test, allow(dead_code))]

mod entries;
mod load;
mod oncpu;
mod process;
mod region;
mod sys;

pub use entries::*;
pub use oncpu::corral_shim_oncpu_table;
pub use region::corral_shim_stats_region;

#[cfg(not(test))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    sys::abort()
}

// The constructor: reads the deferred-load count; with none, the process
// `corral run` started loads the full library now, so that its stats region
// exists even if it never locks.
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
            crate::process::ENV_PARENT_PID,
            corral_runtime::config::ENV_PARENT_PID_C
        );
        assert_eq!(
            crate::load::ENV_LOAD_AFTER.to_str().unwrap(),
            corral_runtime::config::ENV_LOAD_AFTER_CONTENDED
        );
        assert_eq!(
            crate::load::ENV_START_FD,
            corral_runtime::config::ENV_START_FD_C
        );
        assert_eq!(
            crate::load::ENV_START_LINK,
            corral_runtime::config::ENV_START_LINK_C
        );
        assert_eq!(
            crate::oncpu::ENV_ONCPU_FD.to_str().unwrap(),
            corral_runtime::oncpu::ENV_ONCPU_FD
        );
        assert_eq!(
            crate::oncpu::ONCPU_BYTES,
            corral_runtime::oncpu::ONCPU_BYTES
        );
    }

    #[test]
    fn reads_descriptor_links() {
        let f = std::fs::File::open("/proc/self/status").unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
        let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap();
        let link = link.to_str().unwrap().as_bytes().to_vec();
        assert!(crate::sys::fd_link_is(fd, &link));
        assert!(!crate::sys::fd_link_is(fd, b"anon_inode:bpf-map"));
        assert!(!crate::sys::fd_link_is(-1, &link));
    }

    #[test]
    fn parses_pids() {
        assert_eq!(crate::process::parse_pid(b"123"), Some(123));
        assert_eq!(crate::process::parse_pid(b""), None);
        assert_eq!(crate::process::parse_pid(b"12a"), None);
        assert_eq!(crate::process::parse_pid(b"99999999999"), None);
    }
}
