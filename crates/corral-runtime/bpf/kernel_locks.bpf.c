// SPDX-License-Identifier: GPL-2.0 OR MIT
//
// corral's kernel-lock source: paper 1's Algorithm 1 (accumulate each task's
// lock-waiting time) and the slice bookkeeping of Algorithm 3 (slice length,
// emitted at every context switch), taken in the kernel from the
// lock:contention_begin/end and sched_switch tracepoints (BTF-typed, so
// field offsets are relocated against the running kernel, CO-RE).
//
// Rebuild with scripts/build-bpf.sh; the object beside this file is committed
// so that building corral needs no clang.

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

// Only the fields read here; CO-RE relocates them by name.
struct task_struct {
	int pid;
	int tgid;
} __attribute__((preserve_access_index));

// lock:contention_begin flags (include/trace/events/lock.h).
#define LCB_F_SPIN (1U << 0)
#define LCB_F_READ (1U << 1)
#define LCB_F_WRITE (1U << 2)
#define LCB_F_RT (1U << 3)
#define LCB_F_PERCPU (1U << 4)
#define LCB_F_MUTEX (1U << 5)

// Kind bits of config.kinds; must match kernel/kinds.rs.
#define KIND_SPIN (1U << 0)
#define KIND_MUTEX (1U << 1)
#define KIND_RWSEM (1U << 2)
#define KIND_RTMUTEX (1U << 3)

#define MAX_TRACKED 8192
#define MAX_TASKS 16384
#define MAX_LOCKS 4096

struct config {
	__u32 kinds;        // KIND_* bits to count
	__u32 follow_forks; // track the child processes of tracked ones
};

// Per task: Algorithm 1's acc_lock_time plus the wait in progress.
struct task_wait {
	__u64 acc_wait_ns;
	__u64 wait_start_ns; // 0 = no wait in progress
	__u64 wait_lock;
	__u32 nr_waits;
	__u32 wait_flags; // contention_begin's flags of the open wait
};

// One finished time slice of a tracked task (layout: kernel/record.rs).
struct slice_record {
	__u32 tid;
	__u32 tgid;
	__u32 cpu;
	__u32 nr_waits;
	__u64 begin_ns;
	__u64 len_ns;
	__u64 wait_ns;
	__u32 flags; // SLICE_*
	__u32 pad;
};

// The task exited at the end of this slice.
#define SLICE_LAST 1U

// Per lock address: paper 2's hotness (waiting time and count).
struct lock_stat {
	__u64 wait_ns;
	__u64 count;
	__u64 flags; // every LCB_F_* seen on it
};

// Per CPU: who was switched in, and when (the slice start).
struct cpu_slot {
	__u32 tid;
	__u32 pad;
	__u64 since_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TRACKED);
	__type(key, __u32); // tgid
	__type(value, __u8);
} tracked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_TASKS);
	__type(key, __u32); // tid
	__type(value, struct task_wait);
} task_waits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, MAX_LOCKS);
	__type(key, __u64); // lock address
	__type(value, struct lock_stat);
} lock_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_slot);
} cpu_slots SEC(".maps");

// Index 0: slices dropped because the ring was full.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} dropped SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} slices SEC(".maps");

static __always_inline int is_tracked(__u32 tgid)
{
	return bpf_map_lookup_elem(&tracked, &tgid) != 0;
}

static __always_inline __u32 kind_of(__u32 flags)
{
	if (flags & LCB_F_MUTEX)
		return KIND_MUTEX;
	if (flags & LCB_F_RT)
		return KIND_RTMUTEX;
	if (flags & LCB_F_SPIN)
		return KIND_SPIN;
	return KIND_RWSEM; // rw_semaphore and percpu_rw_semaphore
}

SEC("tp_btf/contention_begin")
int BPF_PROG(contention_begin, void *lock, unsigned int flags)
{
	// First: the lookups below must not count as waiting.
	__u64 start = bpf_ktime_get_ns();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, zero = 0;
	struct config *cfg;
	struct task_wait *w;

	if (!is_tracked(id >> 32))
		return 0;
	cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg || !(cfg->kinds & kind_of(flags)))
		return 0;
	w = bpf_map_lookup_elem(&task_waits, &tid);
	if (!w) {
		struct task_wait fresh = {};
		bpf_map_update_elem(&task_waits, &tid, &fresh, BPF_NOEXIST);
		w = bpf_map_lookup_elem(&task_waits, &tid);
		if (!w)
			return 0;
	}
	// A wait already open covers this one: a mutex re-entering its slow
	// path after spinning on the owner, or a spin lock taken inside it.
	if (w->wait_start_ns)
		return 0;
	w->wait_start_ns = start;
	w->wait_lock = (__u64)lock;
	w->wait_flags = flags;
	return 0;
}

SEC("tp_btf/contention_end")
int BPF_PROG(contention_end, void *lock, int ret)
{
	// First, as in contention_begin.
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), zero = 0;
	struct task_wait *w = bpf_map_lookup_elem(&task_waits, &tid);
	struct cpu_slot *slot;
	struct lock_stat *ls;
	__u64 from, waited;

	if (!w || !w->wait_start_ns || w->wait_lock != (__u64)lock)
		return 0;
	// A sleeping wait counts only the part inside this slice.
	from = w->wait_start_ns;
	slot = bpf_map_lookup_elem(&cpu_slots, &zero);
	if (slot && slot->tid == tid && slot->since_ns > from)
		from = slot->since_ns;
	w->acc_wait_ns += now - from;
	w->nr_waits += 1;
	waited = now - w->wait_start_ns;
	w->wait_start_ns = 0;

	ls = bpf_map_lookup_elem(&lock_stats, &w->wait_lock);
	if (!ls) {
		struct lock_stat fresh = {};
		bpf_map_update_elem(&lock_stats, &w->wait_lock, &fresh, BPF_NOEXIST);
		ls = bpf_map_lookup_elem(&lock_stats, &w->wait_lock);
		if (!ls)
			return 0;
	}
	__sync_fetch_and_add(&ls->wait_ns, waited);
	__sync_fetch_and_add(&ls->count, 1);
	__sync_fetch_and_or(&ls->flags, (__u64)w->wait_flags);
	return 0;
}

// prev_state of a task's last switch (include/linux/sched.h).
#define TASK_DEAD 0x80

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, _Bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	__u32 zero = 0, prev_tid = BPF_CORE_READ(prev, pid);
	__u32 prev_tgid = BPF_CORE_READ(prev, tgid);
	struct cpu_slot *slot = bpf_map_lookup_elem(&cpu_slots, &zero);
	__u64 now = bpf_ktime_get_ns(), begin;
	struct slice_record *rec;
	struct task_wait *w;

	if (!slot)
		return 0;
	begin = slot->since_ns;
	slot->tid = BPF_CORE_READ(next, pid);
	slot->since_ns = now;
	if (prev_tid == 0 || !is_tracked(prev_tgid))
		return 0;
	// The first switch seen on this CPU has no known start.
	if (begin == 0)
		return 0;

	rec = bpf_ringbuf_reserve(&slices, sizeof(*rec), 0);
	if (!rec) {
		__u64 *n = bpf_map_lookup_elem(&dropped, &zero);
		if (n)
			*n += 1;
		return 0;
	}
	rec->tid = prev_tid;
	rec->tgid = prev_tgid;
	rec->cpu = bpf_get_smp_processor_id();
	rec->begin_ns = begin;
	rec->len_ns = now - begin;
	rec->wait_ns = 0;
	rec->nr_waits = 0;
	rec->flags = (prev_state & TASK_DEAD) ? SLICE_LAST : 0;
	rec->pad = 0;
	w = bpf_map_lookup_elem(&task_waits, &prev_tid);
	if (w) {
		__u64 acc = w->acc_wait_ns;
		// A wait still open (a sleeping lock) counts up to now.
		if (w->wait_start_ns)
			acc += now - (w->wait_start_ns > begin ? w->wait_start_ns : begin);
		rec->wait_ns = acc;
		rec->nr_waits = w->nr_waits;
		w->acc_wait_ns = 0;
		w->nr_waits = 0;
		// Its last slice is recorded: forget the task.
		if (prev_state & TASK_DEAD)
			bpf_map_delete_elem(&task_waits, &prev_tid);
	}
	bpf_ringbuf_submit(rec, 0);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(sched_process_fork, struct task_struct *parent,
	     struct task_struct *child)
{
	__u32 zero = 0, parent_tgid = BPF_CORE_READ(parent, tgid);
	__u32 child_tgid = BPF_CORE_READ(child, tgid);
	struct config *cfg;
	__u8 one = 1;

	// A new thread shares its tgid, already tracked.
	if (child_tgid == parent_tgid || !is_tracked(parent_tgid))
		return 0;
	cfg = bpf_map_lookup_elem(&config, &zero);
	if (cfg && cfg->follow_forks)
		bpf_map_update_elem(&tracked, &child_tgid, &one, BPF_ANY);
	return 0;
}
