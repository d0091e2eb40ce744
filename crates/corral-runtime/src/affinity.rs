//! CPU affinity of threads: the only lever corral pulls on a real machine
//! (paper 1's `sched_migrate_task`, done from user space).

use std::io;

/// A set of logical CPU ids, kept sorted and without duplicates.
pub type CpuList = Vec<u32>;

fn empty_set() -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    unsafe { std::mem::zeroed() }
}

fn to_set(cpus: &[u32]) -> io::Result<libc::cpu_set_t> {
    let mut set = empty_set();
    for &cpu in cpus {
        if cpu as usize >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cpu {cpu} beyond CPU_SETSIZE"),
            ));
        }
        // SAFETY: `cpu` < CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    }
    Ok(set)
}

fn from_set(set: &libc::cpu_set_t) -> CpuList {
    (0..libc::CPU_SETSIZE as u32)
        // SAFETY: every id probed is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c as usize, set) })
        .collect()
}

/// The CPUs thread `tid` may run on (`tid` 0 = the calling thread), read
/// back from the kernel with sched_getaffinity.
pub fn get_thread_affinity(tid: i32) -> io::Result<CpuList> {
    let mut set = empty_set();
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_getaffinity(tid, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(from_set(&set))
}

/// Confines thread `tid` (0 = the calling thread) to `cpus`.
pub fn set_thread_affinity(tid: i32, cpus: &[u32]) -> io::Result<()> {
    if cpus.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty CPU set"));
    }
    let set = to_set(cpus)?;
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&set), &set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The CPUs the calling thread may use now (empty if the kernel refuses).
pub fn allowed_cpus() -> CpuList {
    get_thread_affinity(0).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_then_read_back_on_a_scratch_thread() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        let first = cpus[0];
        let seen = std::thread::spawn(move || {
            set_thread_affinity(0, &[first]).unwrap();
            get_thread_affinity(0).unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(seen, vec![first]);
    }

    #[test]
    fn refuses_empty_and_out_of_range_sets() {
        assert!(set_thread_affinity(0, &[]).is_err());
        assert!(set_thread_affinity(0, &[1 << 20]).is_err());
    }
}
