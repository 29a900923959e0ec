/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Interference-free durations of nested execution contexts (osnoise paper §2.1, rules
 * R1-R7).
 *
 * A CPU runs at most one context of each class at a time, and a context of a higher
 * class only preempts lower ones: NMI > IRQ > softirq > thread. When a context ends, its
 * own (already interference-free) duration is pushed into the start of every active
 * lower context, so each one later reports only its own time. This is osnoise's
 * delta_start bookkeeping.
 *
 * Pure arithmetic, no BPF helpers: the BPF program and the host unit tests
 * (nest_host.c) compile this same file.
 */
#ifndef IRQLENS_NEST_H
#define IRQLENS_NEST_H

enum noise_class {
	CLASS_THREAD = 0,
	CLASS_SOFTIRQ = 1,
	CLASS_IRQ = 2,
	CLASS_NMI = 3,
	NOISE_CLASSES = 4,
};

struct nest_ctx {
	__u64 start;	   /* when the context began */
	__u64 delta_start; /* start pushed forward by the time of nested contexts */
	__u64 seq;	   /* interference number the entry was given */
	__u32 id;	   /* irq line, vector, softirq number or pid */
	__u16 source;	   /* enum irq_source for CLASS_IRQ */
	__u16 active;
};

struct nest_state {
	struct nest_ctx ctx[NOISE_CLASSES];
};

static __always_inline void nest_enter(struct nest_state *n, unsigned int cls, __u64 now, __u64 seq,
				       __u32 id, __u16 source)
{
	struct nest_ctx *c = &n->ctx[cls & (NOISE_CLASSES - 1)];

	c->start = now;
	c->delta_start = now;
	c->seq = seq;
	c->id = id;
	c->source = source;
	c->active = 1;
}

/*
 * Ends the context of class cls at now. Returns 0 if it never began (it started before
 * tracing did), else 1 with its interference-free duration in *duration.
 */
static __always_inline int nest_exit(struct nest_state *n, unsigned int cls, __u64 now,
				     __u64 *duration)
{
	struct nest_ctx *c = &n->ctx[cls & (NOISE_CLASSES - 1)];
	__u64 d;
	int lower;

	if (!c->active)
		return 0;
	c->active = 0;
	d = now > c->delta_start ? now - c->delta_start : 0;
	for (lower = 0; lower < NOISE_CLASSES; lower++) {
		if (lower >= (int)(cls & (NOISE_CLASSES - 1)))
			break;
		if (n->ctx[lower].active)
			n->ctx[lower].delta_start += d;
	}
	*duration = d;
	return 1;
}

#endif /* IRQLENS_NEST_H */
