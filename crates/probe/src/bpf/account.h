/* SPDX-License-Identifier: GPL-2.0 */
/*
 * account's attribution, decided where the events happen: the state machine of
 * crates/analyze/src/account/mod.rs (its module doc has the rule) and of the timeline it
 * rebuilds (crates/analyze/src/timeline.rs), for one CPU, step by step. Whose time an
 * interrupt took (charged: the thread it interrupted), whom it worked for (served: its
 * units, the socket deliveries and wakeups it made, split evenly), the hardirq time
 * handed on to the next run of the softirq vectors it raised, irqlens's own work, and
 * exclusive times (nested contexts cut out).
 *
 * Pure C, no BPF helpers: account.bpf.c runs it in the kernel, and account_host.c
 * compiles the same file for the host, where the tests feed it recorded checkpoints and
 * compare its totals with the Rust ledger's on the same events.
 *
 * Results leave through four functions the includer defines (map updates in BPF, a
 * buffer on the host): acct_charge, acct_serve, acct_orphan, acct_count_unit.
 *
 * What a CPU's state cannot hold is not decided here but bounded and counted, so no time
 * is ever lost: a run that serves more than ACCT_UNITS distinct threads serves the rest
 * as ACCT_FOLDED; a vector with more than ACCT_PARTS hardirq runs handed on to it settles
 * the extra ones at once as orphan time (charged as usual). Both are counted in
 * `inexact`. What only the end of the run decides (hardirq time whose softirq never ran,
 * a wakeup IPI still waiting for its thread) is left in the state for acct_finish, which
 * user space runs on the state it reads back.
 */
#ifndef IRQLENS_ACCOUNT_H
#define IRQLENS_ACCOUNT_H

#define ACCT_COMM_LEN 16
/* Distinct threads one run serves before the rest are folded. */
#define ACCT_UNITS 16
/* Hardirq runs handed on to one softirq vector before the next one settles at once. */
#define ACCT_PARTS 8
/* Softirq vectors (include/linux/interrupt.h's NR_SOFTIRQS), rounded to a power of two. */
#define ACCT_VECTORS 16
/* Interrupt contexts nested on a thread (the timeline's DEPTH). */
#define ACCT_DEPTH 8
/* Events of programs that nested inside another one on the CPU, waiting for it. */
#define ACCT_PENDING 16

/*
 * Loops `i` (an int the caller declares) over [0, n). The BPF side makes it an
 * open-coded iterator (bpf_for), which the verifier checks in a few passes rather than
 * once per iteration and per path.
 */
#ifndef ACCT_FOR
#define ACCT_FOR(i, n) for ((i) = 0; (i) < (n); (i)++)
#endif

/* The thread a served share goes to when a run serves more threads than it can hold. */
#define ACCT_FOLDED 0xffffffffu
/* The idle task: interrupt time on an idle CPU is billed to no process. */
#define ACCT_IDLE 0u

/* irq_vectors.h's SRC_LOCAL_TIMER, and the IPIs a remote wakeup sends. */
#define ACCT_SRC_LOCAL_TIMER 1
#define ACCT_SRC_RESCHEDULE 2
#define ACCT_SRC_CALL_FUNCTION_SINGLE 4

/*
 * An interrupt source in one word (crates/probe/src/account.rs decodes it): the kind in
 * the top two bits, then a hardirq's irq_source (6 bits) and line or vector (24 bits),
 * or a softirq's vector.
 */
#define ACCT_KIND_HARDIRQ 0u
#define ACCT_KIND_SOFTIRQ 1u
#define ACCT_KIND_NMI 2u

static __always_inline __u32 acct_hardirq(__u16 source, __u32 id)
{
	return (ACCT_KIND_HARDIRQ << 30) | ((__u32)(source & 0x3f) << 24) | (id & 0xffffff);
}

static __always_inline __u32 acct_softirq(__u16 vector)
{
	return (ACCT_KIND_SOFTIRQ << 30) | vector;
}

#define ACCT_NMI (ACCT_KIND_NMI << 30)

static __always_inline int acct_is_hardirq_of(__u32 source, __u16 irq_source)
{
	return (source >> 30) == ACCT_KIND_HARDIRQ && ((source >> 24) & 0x3f) == irq_source;
}

/* The events the state machine follows (checkpoint.h's kinds that matter to it). */
enum acct_kind {
	ACCT_IRQ_ENTRY = 0, /* id = line or vector, source = enum irq_source */
	ACCT_IRQ_EXIT,
	ACCT_SOFTIRQ_RAISE, /* id = vector */
	ACCT_SOFTIRQ_ENTRY,
	ACCT_SOFTIRQ_EXIT,
	ACCT_SWITCH,	       /* tid = next (checkpoints only: the kernel side follows no switch) */
	ACCT_WAKEUP,	       /* tid = woken */
	ACCT_NMI_END,	       /* ptr = its duration (ns) */
	ACCT_TIMER_EXPIRE,     /* ptr = hrtimer */
	ACCT_TIMER_EXPIRE_EXIT, /* ptr = hrtimer */
	ACCT_SOCK_DATA,	       /* tid = the socket's last reader (0: none yet) */
	ACCT_OTHER,	       /* anything else: only its current thread is followed */
};

/* What is known of a thread: for the names of the totals. */
struct acct_identity {
	__u64 cgroup; /* cgroup v2 id, 0 if unknown */
	__u32 tgid;
	char comm[ACCT_COMM_LEN];
};

struct acct_event {
	__u64 time; /* CLOCK_MONOTONIC ns */
	__u64 ptr;
	__u32 pid; /* the current thread */
	/* the thread it names (switched to, woken, reading; `pid` itself: its own name) */
	__u32 tid;
	__u16 id;
	__u16 source;
	__u8 kind;
	__u8 irqlens;	      /* the thread it names is one of irqlens's */
	__u8 current_irqlens; /* the current thread is one of irqlens's */
	__u8 named;	      /* `who` is known */
	struct acct_identity who;
};

/* A thread a run served, with how many of its units it had. */
struct acct_unit {
	__u32 tid;
	__u32 count;
	__u32 irqlens;
	__u32 named;
	struct acct_identity who;
};

/* the Rust side's AcctEvent (crates/probe/src/account.rs) mirrors its layout */
_Static_assert(sizeof(struct acct_event) == 64, "acct_event is 64 bytes");

/* Interrupt time to settle: its source, and the thread it ran on. */
struct acct_part {
	__u64 ns;
	__u32 source;
	__u32 current;
};

/* One hardirq, softirq or hrtimer callback run being followed. */
struct acct_run {
	__u64 ns;
	__u32 source;
	__u32 current; /* the thread under its latest slice */
	__u8 open;
	__u8 delivery_open; /* the last unit is a delivery whose wakeup may still come */
	__u16 raised;	    /* softirq vectors a hardirq raised, one bit each */
	__u16 distinct;	    /* entries used in units */
	__u16 reserved;
	__u32 units_total; /* units, counting repeats */
	__u32 last;	   /* the thread of the last unit */
	/* distinct threads in the order of their first unit */
	struct acct_unit units[ACCT_UNITS];
};

/* A context on the CPU's stack (the timeline's). */
struct acct_frame {
	__u64 hrtimer; /* a callback's hrtimer */
	__u32 source;  /* encoded: hardirq (with irq_source and id), softirq, or timer */
	__u8 kind;     /* ACCT_FRAME_* */
	__u8 reserved[3];
};

#define ACCT_FRAME_HARDIRQ 0
#define ACCT_FRAME_SOFTIRQ 1
#define ACCT_FRAME_TIMER 2

struct acct_deferred {
	__u32 count;
	__u32 reserved;
	struct acct_part parts[ACCT_PARTS];
};

/* One CPU's state; cache-line aligned so no two CPUs share a line. */
struct __attribute__((aligned(64))) acct_cpu {
	/* the timeline */
	__u64 since;   /* start of the open slice */
	__u64 last_ns; /* time of the latest event: never go back */
	__u32 thread;  /* the current thread */
	__u8 started;
	__u8 depth;
	__u8 thread_named;
	__u8 busy; /* a program is in the state machine: nested ones wait in `pending` */
	struct acct_identity thread_who;
	struct acct_frame stack[ACCT_DEPTH];
	/* the runs */
	struct acct_run hardirq;
	struct acct_run softirq;
	struct acct_run callback;
	/* a wakeup IPI that woke nobody here, until the CPU changes thread or takes a hardirq */
	struct acct_part ipi;
	__u8 ipi_open;
	__u8 reserved[7];
	struct acct_deferred deferred[ACCT_VECTORS];
	/* events followed */
	__u64 events;
	/* cases bounded rather than decided exactly (see the top of the file) */
	__u64 inexact;
	/* nested events dropped because `pending` was full */
	__u64 lost;
	__u64 pending_head; /* claimed by nested programs, atomically */
	__u64 pending_tail; /* taken by the program they nested in */
	struct acct_event pending[ACCT_PENDING];
};

/* What the run's state machine needs to know of the whole run. */
struct acct_config {
	/* irqlens's own work is told apart (a wakeup IPI waits for the thread after it) */
	__u32 irqlens_known;
};

struct acct_out;
/* `part` ran on `cpu`, interrupting part->current; `who` names it when known. */
static void acct_charge(struct acct_out *out, __u32 cpu, const struct acct_part *part,
			int for_irqlens, const struct acct_identity *who);
/* `ns` of `source` were done for `tid` (never ACCT_IDLE). */
static void acct_serve(struct acct_out *out, __u32 tid, __u32 source, __u64 ns);
static void acct_orphan(struct acct_out *out, __u32 source, __u64 ns);
/* `unit` was served `unit->count` units. */
static void acct_count_unit(struct acct_out *out, const struct acct_unit *unit);

static __always_inline void acct_run_begin(struct acct_run *run, __u32 source)
{
	run->ns = 0;
	run->source = source;
	run->current = ACCT_IDLE;
	run->open = 1;
	run->delivery_open = 0;
	run->raised = 0;
	run->distinct = 0;
	run->units_total = 0;
	run->last = 0;
}

/* The entry of `tid` among the run's units, or -1. */
static __always_inline int acct_find_unit(const struct acct_run *run, __u32 tid)
{
	int i;

	ACCT_FOR(i, ACCT_UNITS) {
		if (i >= run->distinct)
			break;
		if (run->units[i & (ACCT_UNITS - 1)].tid == tid)
			return i;
	}
	return -1;
}

/* What the event tells of the thread it names, kept with its unit. */
static __always_inline void acct_note_unit(struct acct_unit *u, const struct acct_event *e)
{
	u->irqlens = e->irqlens;
	if (e->named) {
		u->named = 1;
		u->who = e->who;
	}
}

/* One more unit for the thread the event names. */
static __always_inline void acct_add_unit(struct acct_cpu *s, struct acct_run *run,
					  const struct acct_event *e)
{
	int i = acct_find_unit(run, e->tid);
	struct acct_unit *u;

	run->units_total++;
	if (i >= 0) {
		u = &run->units[i & (ACCT_UNITS - 1)];
		u->count++;
		acct_note_unit(u, e);
		run->last = e->tid;
		return;
	}
	if (run->distinct < ACCT_UNITS) {
		u = &run->units[run->distinct & (ACCT_UNITS - 1)];
		run->distinct++;
		u->tid = e->tid;
		u->count = 1;
		u->named = 0;
		acct_note_unit(u, e);
		run->last = e->tid;
		return;
	}
	/* no room: the last entry becomes the fold of itself and every thread after it */
	s->inexact++;
	u = &run->units[ACCT_UNITS - 1];
	if (u->tid != ACCT_FOLDED) {
		u->tid = ACCT_FOLDED;
		u->irqlens = 0;
		u->named = 0;
	}
	u->count++;
	run->last = ACCT_FOLDED;
}

/* A socket delivery for its last reader (0: none yet). */
static __always_inline void acct_deliver(struct acct_cpu *s, struct acct_run *run,
					 const struct acct_event *e)
{
	acct_add_unit(s, run, e);
	run->delivery_open = 1;
}

/* A wakeup: the delivery just before it is the same unit, and names its reader. */
static __always_inline void acct_wake(struct acct_cpu *s, struct acct_run *run,
				      const struct acct_event *e)
{
	int delivered = run->delivery_open;
	int i;

	run->delivery_open = 0;
	if (run->units_total && delivered && run->last == e->tid) {
		/* the delivery's reader woken: the same unit, not one more */
		i = acct_find_unit(run, e->tid);
		if (i >= 0)
			acct_note_unit(&run->units[i & (ACCT_UNITS - 1)], e);
		return;
	}
	if (run->units_total && delivered && run->last == ACCT_IDLE) {
		/* the unknown reader's unit becomes the woken thread's */
		i = acct_find_unit(run, ACCT_IDLE);
		if (i >= 0) {
			struct acct_unit *idle = &run->units[i & (ACCT_UNITS - 1)];

			idle->count--;
			run->units_total--;
			/* its only unit was the last one, so its entry is the last entry */
			if (!idle->count && i == run->distinct - 1)
				run->distinct--;
		}
	}
	acct_add_unit(s, run, e);
}

/* Whether a run is irqlens's own work: it has units, all of irqlens's threads. */
static __always_inline int acct_is_irqlens_work(const struct acct_run *run)
{
	int i;

	if (!run->units_total)
		return 0;
	ACCT_FOR(i, ACCT_UNITS) {
		const struct acct_unit *u = &run->units[i & (ACCT_UNITS - 1)];

		if (i >= run->distinct)
			break;
		if (u->count && !u->irqlens)
			return 0;
	}
	return 1;
}

/* Charges a part to the thread it ran on, naming it if it is the CPU's thread. */
static __always_inline void acct_charge_part(struct acct_cpu *s, __u32 cpu,
					     const struct acct_part *part, int for_irqlens,
					     struct acct_out *out)
{
	const struct acct_identity *who = NULL;

	if (!part->ns)
		return;
	if (s->thread_named && part->current == s->thread)
		who = &s->thread_who;
	acct_charge(out, cpu, part, for_irqlens, who);
}

/* Splits `part` evenly among the run's units; the first takes what does not divide. */
static __always_inline void acct_serve_part(const struct acct_run *run,
					    const struct acct_part *part, struct acct_out *out)
{
	__u64 share, rest;
	int i;

	/* nothing to share (the Rust ledger notes zeros; totals do not) */
	if (!part->ns)
		return;
	if (!run->units_total) {
		acct_orphan(out, part->source, part->ns);
		return;
	}
	share = part->ns / run->units_total;
	rest = part->ns - share * run->units_total;
	ACCT_FOR(i, ACCT_UNITS) {
		const struct acct_unit *u = &run->units[i & (ACCT_UNITS - 1)];
		__u64 ns;

		if (i >= run->distinct)
			break;
		if (!u->count)
			continue;
		ns = share * u->count + rest;
		rest = 0;
		if (u->tid == ACCT_IDLE)
			acct_orphan(out, part->source, ns);
		else
			acct_serve(out, u->tid, part->source, ns);
	}
}

static __always_inline void acct_count_units(const struct acct_run *run, struct acct_out *out)
{
	int i;

	ACCT_FOR(i, ACCT_UNITS) {
		const struct acct_unit *u = &run->units[i & (ACCT_UNITS - 1)];

		if (i >= run->distinct)
			break;
		if (u->count && u->tid != ACCT_IDLE)
			acct_count_unit(out, u);
	}
}

static __always_inline void acct_own_part(const struct acct_run *run, struct acct_part *part)
{
	part->ns = run->ns;
	part->source = run->source;
	part->current = run->current;
}

/*
 * Charges and serves a run that ended, as irqlens's own work if it is, with the hardirq
 * time handed on to it (`deferred`, may be NULL).
 */
static __always_inline void acct_settle(struct acct_cpu *s, __u32 cpu, const struct acct_run *run,
					struct acct_deferred *deferred, struct acct_out *out)
{
	int for_irqlens = acct_is_irqlens_work(run);
	struct acct_part own;
	int i;

	acct_own_part(run, &own);
	acct_charge_part(s, cpu, &own, for_irqlens, out);
	acct_serve_part(run, &own, out);
	if (deferred) {
		ACCT_FOR(i, ACCT_PARTS) {
			const struct acct_part *part = &deferred->parts[i & (ACCT_PARTS - 1)];

			if ((__u32)i >= deferred->count)
				break;
			acct_charge_part(s, cpu, part, for_irqlens, out);
			acct_serve_part(run, part, out);
		}
		deferred->count = 0;
	}
	acct_count_units(run, out);
}

/* Hardirq time that served nobody: charged as usual, orphan. */
static __always_inline void acct_settle_orphan(struct acct_cpu *s, __u32 cpu,
					       const struct acct_part *part, int for_irqlens,
					       struct acct_out *out)
{
	acct_charge_part(s, cpu, part, for_irqlens, out);
	acct_orphan(out, part->source, part->ns);
}

/*
 * A device or IPI hardirq with no unit hands its time to the softirq vectors it raised
 * (the tick's raises are housekeeping). Returns 1 if it did (none to settle).
 */
static __always_inline int acct_hand_on(struct acct_cpu *s, __u32 cpu, struct acct_run *run,
					struct acct_out *out)
{
	struct acct_part share;
	int raised, v;

	if (run->units_total || !run->raised || acct_is_hardirq_of(run->source, ACCT_SRC_LOCAL_TIMER))
		return 0;
	raised = __builtin_popcount(run->raised);
	acct_own_part(run, &share);
	share.ns = run->ns / raised;
	ACCT_FOR(v, ACCT_VECTORS) {
		struct acct_deferred *d = &s->deferred[v & (ACCT_VECTORS - 1)];

		if (!((run->raised >> v) & 1))
			continue;
		if (d->count >= ACCT_PARTS) {
			/* no room to wait: it serves nobody known */
			s->inexact++;
			acct_settle_orphan(s, cpu, &share, 0, out);
			continue;
		}
		d->parts[d->count & (ACCT_PARTS - 1)] = share;
		d->count++;
	}
	return 1;
}

/* A wakeup IPI that woke nobody here: whether it was for irqlens shows in the next thread. */
static __always_inline int acct_may_wake_remotely(const struct acct_run *run)
{
	return (acct_is_hardirq_of(run->source, ACCT_SRC_RESCHEDULE) ||
		acct_is_hardirq_of(run->source, ACCT_SRC_RESCHEDULE + 1) ||
		acct_is_hardirq_of(run->source, ACCT_SRC_CALL_FUNCTION_SINGLE)) &&
	       !run->units_total && !run->raised;
}

/* The innermost run open: wakeups and deliveries belong to it. */
static __always_inline struct acct_run *acct_innermost(struct acct_cpu *s)
{
	if (s->callback.open)
		return &s->callback;
	if (s->hardirq.open)
		return &s->hardirq;
	if (s->softirq.open)
		return &s->softirq;
	return NULL;
}

/* The hardirq or softirq run around an hrtimer callback. */
static __always_inline struct acct_run *acct_enclosing(struct acct_cpu *s)
{
	if (s->hardirq.open)
		return &s->hardirq;
	if (s->softirq.open)
		return &s->softirq;
	return NULL;
}

/*
 * A closed stretch of interrupt time: added to its run, or, with no run followed (an
 * NMI, a run whose entry came before tracing began), charged to the thread and orphan.
 */
static __always_inline void acct_route(struct acct_cpu *s, __u32 cpu, __u8 frame_kind,
				       __u32 source, __u64 ns, struct acct_out *out)
{
	struct acct_run *run = NULL;
	struct acct_part part;

	if (frame_kind == ACCT_FRAME_HARDIRQ)
		run = &s->hardirq;
	else if (frame_kind == ACCT_FRAME_SOFTIRQ)
		run = &s->softirq;
	else if (frame_kind == ACCT_FRAME_TIMER)
		run = &s->callback;
	if (run && run->open) {
		run->ns += ns;
		run->current = s->thread;
		return;
	}
	part.ns = ns;
	part.current = s->thread;
	if (frame_kind == ACCT_FRAME_HARDIRQ || frame_kind == ACCT_FRAME_SOFTIRQ)
		part.source = source;
	else if (frame_kind == ACCT_FRAME_TIMER)
		/* hrtimer callbacks run in the local timer's hardirq (its vector unknown) */
		part.source = acct_hardirq(ACCT_SRC_LOCAL_TIMER, 0);
	else
		part.source = ACCT_NMI;
	acct_charge_part(s, cpu, &part, 0, out);
	acct_orphan(out, part.source, ns);
}

#define ACCT_FRAME_THREAD 0xff
#define ACCT_FRAME_NMI 0xfe

/* Closes the open slice at t: its time goes to the innermost context's run. */
static __always_inline void acct_close(struct acct_cpu *s, __u32 cpu, __u64 t, struct acct_out *out)
{
	const struct acct_frame *top;

	if (t <= s->since)
		return;
	if (s->depth) {
		top = &s->stack[(s->depth - 1) & (ACCT_DEPTH - 1)];
		acct_route(s, cpu, top->kind, top->source, t - s->since, out);
	}
	s->since = t;
}

static __always_inline void acct_push(struct acct_cpu *s, __u32 cpu, __u64 t, __u8 kind,
				      __u32 source, __u64 hrtimer, struct acct_out *out)
{
	struct acct_frame *f;
	int i;

	acct_close(s, cpu, t, out);
	if (s->depth == ACCT_DEPTH) {
		/* exits were lost: the outermost, stalest context goes */
		ACCT_FOR(i, ACCT_DEPTH - 1)
			s->stack[i & (ACCT_DEPTH - 1)] = s->stack[(i + 1) & (ACCT_DEPTH - 1)];
		s->depth--;
	}
	f = &s->stack[s->depth & (ACCT_DEPTH - 1)];
	f->kind = kind;
	f->source = source;
	f->hrtimer = hrtimer;
	s->depth++;
}

/*
 * Pops up to the innermost context of `kind` (and, for a callback, of `hrtimer`); an
 * exit whose entry came before tracing began changes nothing.
 */
static __always_inline void acct_pop(struct acct_cpu *s, __u32 cpu, __u64 t, __u8 kind,
				     __u64 hrtimer, struct acct_out *out)
{
	int found = -1, j;

	/* innermost first */
	ACCT_FOR(j, ACCT_DEPTH) {
		int i = s->depth - 1 - j;
		const struct acct_frame *f = &s->stack[i & (ACCT_DEPTH - 1)];

		if (i < 0)
			break;
		if (f->kind == kind && (kind != ACCT_FRAME_TIMER || f->hrtimer == hrtimer)) {
			found = i;
			break;
		}
	}
	if (found < 0)
		return;
	acct_close(s, cpu, t, out);
	s->depth = found;
}

static __always_inline void acct_settle_ipi(struct acct_cpu *s, __u32 cpu, int for_irqlens,
					    struct acct_out *out)
{
	if (!s->ipi_open)
		return;
	s->ipi_open = 0;
	acct_settle_orphan(s, cpu, &s->ipi, for_irqlens, out);
}

static __always_inline void acct_name_thread(struct acct_cpu *s, const struct acct_event *e)
{
	s->thread = e->tid;
	/* the idle task is nobody's: its time is named by no process */
	s->thread_named = e->named && e->tid != ACCT_IDLE;
	if (s->thread_named)
		s->thread_who = e->who;
}

/*
 * Whether the CPU's state names `pid` as its thread already (the idle task needs no
 * name): the kernel side then reads no name for an interrupt on it.
 */
static __always_inline int acct_knows_thread(const struct acct_cpu *s, __u32 pid)
{
	return s->thread == pid && (s->thread_named || pid == ACCT_IDLE);
}

/* The time an event's context began: an NMI's event comes at its end, with its duration. */
static __always_inline __u64 acct_began(const struct acct_cpu *s, const struct acct_event *e,
					__u64 t)
{
	__u64 start;

	if (e->kind != ACCT_NMI_END)
		return t;
	start = t > e->ptr ? t - e->ptr : 0;
	return start > s->since ? start : s->since;
}

/* Follows one event of the CPU (in time order). */
static __always_inline void acct_step(struct acct_cpu *s, __u32 cpu, const struct acct_event *e,
				      const struct acct_config *config, struct acct_out *out)
{
	__u64 t = e->time > s->last_ns ? e->time : s->last_ns;
	struct acct_run *run;
	struct acct_part part;

	s->events++;
	if (!s->started) {
		s->started = 1;
		s->since = t;
		s->thread = e->pid;
		s->thread_named = 0;
	}
	/*
	 * Events carry the current thread: another one means the CPU switched (the kernel
	 * side follows no switch; a checkpoint's may be lost), as if at the event's start.
	 * No switch happens inside a hardirq or a softirq (but on PREEMPT_RT), so frames
	 * still open are stale (their exits lost) and go, as the switch would clear them.
	 */
	if (e->kind != ACCT_SWITCH && e->pid != s->thread) {
		/* a wakeup IPI waiting for its thread: irqlens's own work if it is irqlens's */
		acct_settle_ipi(s, cpu, e->current_irqlens, out);
		acct_close(s, cpu, acct_began(s, e, t), out);
		s->depth = 0;
		s->thread = e->pid;
		s->thread_named = 0;
	}
	/* a switch tells the thread next; a hardirq on the same thread: the IPI woke none here */
	if (e->kind == ACCT_SWITCH)
		acct_settle_ipi(s, cpu, e->irqlens, out);
	else if (e->kind == ACCT_IRQ_ENTRY)
		acct_settle_ipi(s, cpu, 0, out);
	/* an event naming its own thread (an interrupt's entry, in the kernel) names the CPU's */
	if (e->kind != ACCT_SWITCH && e->named && e->tid == s->thread)
		acct_name_thread(s, e);
	s->last_ns = t;

	switch (e->kind) {
	case ACCT_IRQ_ENTRY:
		acct_push(s, cpu, t, ACCT_FRAME_HARDIRQ, acct_hardirq(e->source, e->id), 0, out);
		if (!s->hardirq.open)
			acct_run_begin(&s->hardirq, acct_hardirq(e->source, e->id));
		break;
	case ACCT_IRQ_EXIT:
		acct_pop(s, cpu, t, ACCT_FRAME_HARDIRQ, 0, out);
		run = &s->hardirq;
		if (!run->open)
			break;
		run->open = 0;
		if (acct_hand_on(s, cpu, run, out))
			break;
		if (acct_may_wake_remotely(run) && config->irqlens_known) {
			/* an IPI already waiting is replaced (no other thread came) */
			acct_own_part(run, &s->ipi);
			s->ipi_open = 1;
			break;
		}
		acct_settle(s, cpu, run, NULL, out);
		break;
	case ACCT_SOFTIRQ_ENTRY:
		acct_push(s, cpu, t, ACCT_FRAME_SOFTIRQ, acct_softirq(e->id), 0, out);
		acct_run_begin(&s->softirq, acct_softirq(e->id));
		break;
	case ACCT_SOFTIRQ_EXIT:
		acct_pop(s, cpu, t, ACCT_FRAME_SOFTIRQ, 0, out);
		run = &s->softirq;
		if (!run->open)
			break;
		run->open = 0;
		acct_settle(s, cpu, run, &s->deferred[run->source & (ACCT_VECTORS - 1)], out);
		break;
	case ACCT_TIMER_EXPIRE:
		acct_push(s, cpu, t, ACCT_FRAME_TIMER, 0, e->ptr, out);
		run = acct_enclosing(s);
		if (run)
			acct_run_begin(&s->callback, run->source);
		else
			s->callback.open = 0;
		break;
	case ACCT_TIMER_EXPIRE_EXIT:
		acct_pop(s, cpu, t, ACCT_FRAME_TIMER, e->ptr, out);
		run = &s->callback;
		if (!run->open)
			break;
		run->open = 0;
		if (!run->units_total) {
			/* a callback that woke nobody is part of the run around it */
			struct acct_run *enclosing = acct_enclosing(s);

			if (enclosing)
				enclosing->ns += run->ns;
			break;
		}
		acct_settle(s, cpu, run, NULL, out);
		break;
	case ACCT_SWITCH:
		acct_close(s, cpu, t, out);
		s->depth = 0;
		acct_name_thread(s, e);
		break;
	case ACCT_NMI_END: {
		/* stamped at its end with its duration: carved out of what it interrupted */
		__u64 start = acct_began(s, e, t);

		acct_close(s, cpu, start, out);
		part.ns = t - start;
		part.source = ACCT_NMI;
		part.current = s->thread;
		if (part.ns)
			acct_settle_orphan(s, cpu, &part, 0, out);
		s->since = t;
		break;
	}
	case ACCT_SOFTIRQ_RAISE:
		if (s->hardirq.open)
			s->hardirq.raised |= 1u << (e->id & (ACCT_VECTORS - 1));
		break;
	case ACCT_WAKEUP:
		run = acct_innermost(s);
		if (run)
			acct_wake(s, run, e);
		break;
	case ACCT_SOCK_DATA:
		run = acct_innermost(s);
		if (run)
			acct_deliver(s, run, e);
		break;
	default:
		break;
	}
}

/*
 * Whether a wakeup or a delivery can change anything: only a run open on the CPU (or
 * events waiting that may open one) takes units. Elsewhere (a thread waking another, a
 * write to a local socket) the event would only tell the current thread, which the CPU's
 * next interrupt tells as well: the kernel side skips it before reading anything more.
 */
static __always_inline int acct_takes_units(const struct acct_cpu *s)
{
	return s->busy || s->pending_head != s->pending_tail || s->hardirq.open ||
	       s->softirq.open || s->callback.open;
}

/* Follows one event, skipping the wakeups and deliveries that take no unit. */
static __always_inline void acct_follow(struct acct_cpu *s, __u32 cpu, const struct acct_event *e,
					const struct acct_config *config, struct acct_out *out)
{
	if ((e->kind == ACCT_WAKEUP || e->kind == ACCT_SOCK_DATA) && !acct_takes_units(s))
		return;
	acct_step(s, cpu, e, config, out);
}

/*
 * The end of the run: hardirq time handed on to softirq runs that never came is orphan
 * time; a wakeup IPI still waiting for its thread woke nobody known.
 */
static __always_inline void acct_finish(struct acct_cpu *s, __u32 cpu, struct acct_out *out)
{
	int v, i;

	ACCT_FOR(v, ACCT_VECTORS) {
		struct acct_deferred *d = &s->deferred[v & (ACCT_VECTORS - 1)];

		ACCT_FOR(i, ACCT_PARTS) {
			if ((__u32)i >= d->count)
				break;
			acct_settle_orphan(s, cpu, &d->parts[i & (ACCT_PARTS - 1)], 0, out);
		}
		d->count = 0;
	}
	acct_settle_ipi(s, cpu, 0, out);
}

/*
 * Nested programs: an event that arrives while another program of the CPU is in the
 * state machine (a hardirq's inside a softirq's) waits in `pending`, and the program it
 * interrupted takes it before leaving. Only nested programs push (each finishes before
 * the one it interrupted resumes), so the atomic claim is all the ordering needed.
 * Returns 0, or -1 if the queue was full (the event is counted lost).
 */
static __always_inline int acct_defer(struct acct_cpu *s, const struct acct_event *e)
{
	__u64 tail = *(volatile __u64 *)&s->pending_tail;
	__u64 head = *(volatile __u64 *)&s->pending_head;
	__u64 pos;

	if (head - tail >= ACCT_PENDING) {
		__sync_fetch_and_add(&s->lost, 1);
		return -1;
	}
	pos = __sync_fetch_and_add(&s->pending_head, 1);
	s->pending[pos & (ACCT_PENDING - 1)] = *e;
	return 0;
}

/*
 * How the pending events are followed: acct_step itself, or a function of the includer
 * that calls it (the BPF side's, verified once per program rather than per call).
 */
#ifndef ACCT_STEP
#define ACCT_STEP acct_follow
#endif

/*
 * Follows the oldest event a nested program left; 0 if there was none. The caller loops
 * (a bounded loop on the host, bpf_loop in the kernel) to take them all, in order.
 */
static __always_inline int acct_take_pending(struct acct_cpu *s, __u32 cpu,
					     const struct acct_config *config, struct acct_out *out)
{
	__u64 tail = s->pending_tail;

	if (tail == *(volatile __u64 *)&s->pending_head)
		return 0;
	ACCT_STEP(s, cpu, &s->pending[tail & (ACCT_PENDING - 1)], config, out);
	s->pending_tail = tail + 1;
	return 1;
}

#endif /* IRQLENS_ACCOUNT_H */
