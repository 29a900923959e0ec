/* SPDX-License-Identifier: GPL-2.0 */
/* Types shared by checkpoint.bpf.c and user space (the skeleton generates their Rust twins). */
#ifndef IRQLENS_CHECKPOINT_H
#define IRQLENS_CHECKPOINT_H

#include "record_area.h"

#define MAX_CPUS 1024
#define TASK_COMM_LEN 16

/*
 * One checkpoint, in the INTSPECT thesis's sense (§4.1.3): what happened, where, when.
 * User space matches them (bh: requests to invocations; wakeup: interrupts to the tasks
 * they woke); the order is mirrored by EventKind in crates/model/src/event.rs.
 */
enum checkpoint_kind {
	EV_IRQ_ENTRY = 0, /* id = irq line or vector, aux = enum irq_source */
	EV_IRQ_EXIT,
	EV_SOFTIRQ_RAISE, /* id = vector */
	EV_SOFTIRQ_ENTRY,
	EV_SOFTIRQ_EXIT,
	EV_TASKLET_ENTRY, /* ptr = tasklet, func */
	EV_TASKLET_EXIT,
	EV_WORK_QUEUE, /* ptr = work item, func, aux = requested CPU */
	EV_WORK_ACTIVATE,
	EV_WORK_START,
	EV_WORK_END,
	/* pid = prev, aux = next, ptr = next's tgid, comm = next's, func = next's cgroup id */
	EV_SWITCH,
	/*
	 * sched_waking: aux = woken pid, ptr = its tgid, comm = its comm, func = its cgroup
	 * id, id = 1 if watched
	 */
	EV_WAKEUP,
	EV_NMI,		 /* ptr = duration in ns (the tracepoint fires at the end) */
	EV_TIMER_START,	 /* a watched thread armed an hrtimer: ptr = it, func = soft expiry (ns) */
	EV_TIMER_EXPIRE, /* an hrtimer callback begins: ptr = hrtimer, func = the callback */
	EV_TIMER_EXPIRE_EXIT, /* ptr = hrtimer */
	/* data queued to a socket: ptr = sock, aux = the thread that last read from it (0 if none) */
	EV_SOCK_DATA,
};

struct checkpoint {
	__u64 time; /* CLOCK_MONOTONIC ns */
	__u64 ptr;
	__u64 func;
	__u32 cpu;
	__u32 pid; /* current thread */
	__u32 aux;
	__u16 kind;
	__u16 id;
	char comm[TASK_COMM_LEN];
};

/* A slot of a CPU's record area (record_area.h): 64 bytes, one cache line. */
struct checkpoint_slot {
	__u64 commit;
	struct checkpoint event;
};

#endif /* IRQLENS_CHECKPOINT_H */
