//! A thread's own descriptor table. corral's monitor opens files inside the
//! program (its decision log, `/proc` files); in the program's table a
//! close-all loop could close one of them and reuse its number, and corral
//! would then write into, or close, the program's file. In a table of its
//! own the monitor's numbers are invisible to the program.

/// Gives the calling thread a descriptor table of its own
/// (`unshare(CLONE_FILES)`) and closes every descriptor in it, so it holds
/// none of the program's files open (a pipe the program closes still ends).
/// On error (a seccomp filter may refuse `unshare`) the table stays shared
/// and the errno is returned.
pub fn take_private() -> Result<(), i32> {
    // SAFETY: unshare only copies this thread's descriptor table.
    if unsafe { libc::unshare(libc::CLONE_FILES) } != 0 {
        return Err(errno());
    }
    // SAFETY: close_range closes descriptors of this thread's private copy
    // only; no memory is passed.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) };
    if rc != 0 {
        close_each_listed();
    }
    Ok(())
}

/// Before Linux 5.9 (no `close_range`): closes the numbers this thread's
/// table holds, one by one (a loop to the descriptor limit could be a
/// million calls).
fn close_each_listed() {
    let open: Vec<i32> = match std::fs::read_dir("/proc/thread-self/fd") {
        Ok(dir) => dir
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect(),
        Err(_) => (0..1024).collect(),
    };
    // The directory's own number is among them, closed already: EBADF.
    for fd in open {
        // SAFETY: called on a private copy of the table only.
        unsafe { libc::close(fd) };
    }
}

fn errno() -> i32 {
    // SAFETY: errno is thread-local and always readable.
    unsafe { *libc::__errno_location() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_before_close_range_closes_every_number_too() {
        let mut pipe = [0; 2];
        // SAFETY: pipe fills the two ints.
        assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
        let [read_end, write_end] = pipe;
        std::thread::spawn(move || {
            // SAFETY: only copies this thread's table.
            assert_eq!(unsafe { libc::unshare(libc::CLONE_FILES) }, 0);
            close_each_listed();
            // SAFETY: F_GETFD only asks.
            assert_eq!(unsafe { libc::fcntl(write_end, libc::F_GETFD) }, -1);
        })
        .join()
        .unwrap();
        // SAFETY: our own descriptors.
        unsafe { libc::close(write_end) };
        // SAFETY: ours.
        unsafe { libc::close(read_end) };
    }

    #[test]
    fn a_private_table_neither_sees_nor_holds_the_processs_descriptors() {
        let mut pipe = [0; 2];
        // SAFETY: pipe fills the two ints.
        assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
        let [read_end, write_end] = pipe;
        let inside = std::thread::spawn(move || {
            take_private().unwrap();
            // SAFETY: F_GETFD only asks whether the number is open here.
            let open_here = unsafe { libc::fcntl(write_end, libc::F_GETFD) } != -1;
            // A file opened here takes the lowest free number: 0.
            let f = std::fs::File::open("/proc/self/comm").unwrap();
            (open_here, std::os::fd::AsRawFd::as_raw_fd(&f))
        })
        .join()
        .unwrap();
        assert_eq!(inside, (false, 0));
        // SAFETY: F_GETFD only asks: the process's table still has it.
        assert_ne!(unsafe { libc::fcntl(write_end, libc::F_GETFD) }, -1);
        // SAFETY: our own descriptors.
        unsafe { libc::close(write_end) };
        // SAFETY: ours.
        unsafe { libc::close(read_end) };
    }
}
