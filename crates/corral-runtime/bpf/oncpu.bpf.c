// SPDX-License-Identifier: GPL-2.0 OR MIT
//
// corral's on-CPU table: one word per thread of the programs corral runs,
// saying whether the thread is on a CPU now. Written at every context
// switch (sched_switch), read by the program's lock waiters with a plain
// load from a read-only mapping of the array: a waiter spins only while the
// lock's holder runs (issue "waiting that knows whether the holder runs").
// The same run state is readable in /proc/TID/stat by the same user; only
// its freshness is new.
//
// Slot `tid % ONCPU_SLOTS` (a u64: array elements are 8 bytes apart in the
// mapping) holds `tid << 1 | on_cpu`; a reader that finds another tid there
// knows nothing about its thread (a collision, or a thread not switched
// since it was tracked).
//
// BTF tracepoints (CO-RE): their detach is quick, where a classic
// tracepoint's perf event took 0.2 s to release at corral's exit.
//
// Rebuild with scripts/build-bpf.sh; the object beside this file is committed
// so that building corral needs no clang.

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct task_struct {
	int pid;
	int tgid;
} __attribute__((preserve_access_index));

// Must match ONCPU_SLOTS in src/oncpu.rs (a power of two).
#define ONCPU_SLOTS 65536
#define MAX_TRACKED 8192

// Processes whose threads are written: corral's own process and, through
// sched_process_fork, every process it starts and their children.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TRACKED);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32); // tgid
	__type(value, __u8);
} tracked SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, ONCPU_SLOTS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} oncpu SEC(".maps");

static __always_inline void mark(__u32 tid, __u32 tgid, __u32 on_cpu)
{
	__u32 slot = tid & (ONCPU_SLOTS - 1);
	__u64 *word;

	if (tid == 0 || !bpf_map_lookup_elem(&tracked, &tgid))
		return;
	word = bpf_map_lookup_elem(&oncpu, &slot);
	if (word)
		*word = (__u64)tid << 1 | on_cpu;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(oncpu_switch, _Bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	mark(BPF_CORE_READ(prev, pid), BPF_CORE_READ(prev, tgid), 0);
	mark(BPF_CORE_READ(next, pid), BPF_CORE_READ(next, tgid), 1);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(oncpu_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = BPF_CORE_READ(parent, tgid);
	__u32 child_tgid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	// A new thread shares its tgid, already tracked.
	if (child_tgid != parent_tgid && bpf_map_lookup_elem(&tracked, &parent_tgid))
		bpf_map_update_elem(&tracked, &child_tgid, &one, BPF_ANY);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(oncpu_exit, struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid), tgid = BPF_CORE_READ(p, tgid);

	// The leader's exit ends the process: its pid may be reused.
	if (tid == tgid)
		bpf_map_delete_elem(&tracked, &tgid);
	return 0;
}
