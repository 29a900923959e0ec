/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU record areas: the programs of a CPU write their records into that CPU's own
 * part of one mmapped array, and user space reads them through the same mapping.
 *
 * Why not a BPF ring buffer: its reserve and submit are helper calls around a lock that
 * every CPU shares, and a reader that sleeps must be woken, which costs an irq_work
 * interrupt on the traced CPU (traced in turn: irqlens measured its own storm). Here a
 * record costs one local atomic add and plain stores, and nothing is ever woken: the
 * reader sees each CPU's fill level in the same memory and drains on its own pace.
 *
 * Programs nest on a CPU (an IRQ's program can interrupt a softirq's between its claim
 * and its commit), so positions are claimed with an atomic add and every claimed slot is
 * committed; a slot is ready when its commit word holds its position + 1, written after
 * the record. The reader stops at the first slot not ready yet and publishes how far it
 * has read in `tail`; the writer drops (and counts) a record rather than overwrite one
 * not read yet.
 *
 * Pure arithmetic on memory, no BPF helpers: the BPF programs and the host unit tests
 * (nest_host.c) compile this same file.
 */
#ifndef IRQLENS_RECORD_AREA_H
#define IRQLENS_RECORD_AREA_H

/*
 * One CPU's positions; writer and reader fields on separate cache lines. Aligned to the
 * line so the pads do what they say, and so the reader's 64-aligned view of the array in
 * .bss (after other globals) is aligned too. A program touches its CPU's writer line
 * only (its flags are there too), and the reader's line only when the area looks full.
 */
struct __attribute__((aligned(64))) area_cursor {
	__u64 head; /* next position to claim (BPF) */
	__u64 lost; /* records dropped because the area was full (BPF) */
	__u64 seen_tail; /* a copy of `tail` from the last time the area looked full (BPF) */
	__u32 traced; /* the CPU's own checkpoints are wanted (set before enabling) */
	__u32 raised; /* softirqs raised and not run yet, one bit per vector (BPF) */
	__u32 serving; /* a softirq is running on the CPU (BPF) */
	__u32 writer_pad32;
	__u64 writer_pad[3];
	__u64 tail; /* every position below was read (user space) */
	__u64 reader_pad[7];
};

/*
 * Slots kept free for programs that nest between another program's fill check and its
 * claim (at most NMI in IRQ in softirq in a thread's context).
 */
#define AREA_NESTING 8

/*
 * Claims the next position of an area of `slots` slots (a power of two). Returns 0 and
 * the position in *pos, or -1 when the area is full (the record is counted lost).
 *
 * The reader's `tail` only grows, so a copy of it is a bound on how full the area is:
 * the writer reads the reader's line (which the reader writes at every drain) only when
 * its copy says the area is full. A nested program may store an older copy over a newer
 * one: that only makes the area look fuller, and the next claim looks again.
 */
static __always_inline int area_claim(struct area_cursor *c, __u64 slots, __u64 *pos)
{
	__u64 head = *(volatile __u64 *)&c->head;

	if (head - *(volatile __u64 *)&c->seen_tail + AREA_NESTING >= slots) {
		__u64 tail = *(volatile __u64 *)&c->tail;

		*(volatile __u64 *)&c->seen_tail = tail;
		if (head - tail + AREA_NESTING >= slots) {
			__sync_fetch_and_add(&c->lost, 1);
			return -1;
		}
	}
	*pos = __sync_fetch_and_add(&c->head, 1);
	return 0;
}

/* Index of a CPU's position in the array of every CPU's slots. */
static __always_inline __u32 area_index(__u32 cpu, __u64 slots, __u64 pos)
{
	return cpu * (__u32)slots + (__u32)(pos & (slots - 1));
}

/* Publishes a slot whose record is written: the reader may take it from now on. */
static __always_inline void area_commit(__u64 *commit, __u64 pos)
{
#if defined(__TARGET_ARCH_x86) || defined(__x86_64__)
	/* x86 keeps stores in order: only the compiler must not move the record's after */
	asm volatile("" ::: "memory");
	*(volatile __u64 *)commit = pos + 1;
#else
	/* elsewhere a fully ordered exchange orders the record before the commit */
	__sync_lock_test_and_set(commit, pos + 1);
#endif
}

#endif /* IRQLENS_RECORD_AREA_H */
