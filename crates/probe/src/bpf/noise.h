/* SPDX-License-Identifier: GPL-2.0 */
/* Types shared by noise.bpf.c and user space (the skeleton generates their Rust twins). */
#ifndef IRQLENS_NOISE_H
#define IRQLENS_NOISE_H

#include "nest.h"
#include "irq_vectors.h"
#include "record_area.h"

#define MAX_CPUS 1024
#define TASK_COMM_LEN 16

/* One interference on a measured CPU, emitted when it ends. */
struct noise_record {
	__u64 start;	/* CLOCK_MONOTONIC ns at entry */
	__u64 duration; /* interference-free ns (nested contexts subtracted) */
	__u64 seq;	/* value of the CPU's interference counter this entry produced */
	__u64 cgroup;	/* CLASS_THREAD: the thread's cgroup v2 id; 0 otherwise */
	__u32 id;	/* irq line or vector, softirq number, pid */
	__u16 cpu;	/* below MAX_CPUS */
	__u8 class;	/* enum noise_class */
	__u8 source;	/* enum irq_source, for CLASS_IRQ */
	char comm[TASK_COMM_LEN]; /* CLASS_THREAD only */
};

/* A slot of a CPU's record area (record_area.h): 64 bytes, one cache line. */
struct noise_slot {
	__u64 commit;
	struct noise_record record;
};

/* Per measured CPU; padded so CPUs never share a cache line. */
struct cpu_state {
	/* Read by the measurement thread around every clock read. */
	__u64 interference;
	/* Written by user space. */
	__u32 measured;
	__u32 sampling;	    /* inside a runtime window: count and emit */
	__u32 workload_pid; /* the measurement thread: its own switches are no noise */
	/* Per class: whether its open context began while sampling. */
	__u8 began_sampling[NOISE_CLASSES];
	/* Entries per class while sampling (the summary's NMI/IRQ/Softirq/Thread). */
	__u64 entries[NOISE_CLASSES];
	/*
	 * Contexts begun while sampling whose end the kernel never reported: their samples
	 * can only show them as not recorded.
	 */
	__u64 unended;
	struct nest_state nest;
	char thread_comm[TASK_COMM_LEN]; /* of the open thread context */
	__u64 thread_cgroup;		 /* and its cgroup v2 id */
} __attribute__((aligned(64)));

#endif /* IRQLENS_NOISE_H */
