//! The little CPU-affinity plumbing the benchmarks need.

/// CPUs this process may run on, in id order.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    // SAFETY: CPU_ISSET reads within the set for ids below CPU_SETSIZE.
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
}

/// Pins the calling thread to `cpu`; best effort (a benchmark still runs,
/// unpinned, where the CPU is not allowed).
pub fn pin_current_thread(cpu: usize) {
    // SAFETY: as above, zeroed cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE because it came from allowed_cpus().
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is valid for the size passed; 0 = the calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
}
