// SPDX-License-Identifier: GPL-2.0
/*
 * Host build of account.h (no BPF, no root): user space runs it on the CPU states it
 * reads back at the end of a run (acct_finish), and the tests feed it recorded
 * checkpoints. Its results are written to a caller's buffer of settlements.
 */
#include <stddef.h>
#include <stdint.h>

typedef uint64_t __u64;
typedef uint32_t __u32;
typedef uint16_t __u16;
typedef uint8_t __u8;
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#include "account.h"

enum acct_what {
	ACCT_CHARGE = 0,
	ACCT_CHARGE_FOR_IRQLENS,
	ACCT_SERVE,
	ACCT_ORPHAN,
	ACCT_UNITS_SERVED,
};

/* One result of the state machine, as the BPF program adds it to its maps. */
struct acct_settlement {
	__u64 ns; /* ACCT_UNITS_SERVED: the count */
	__u32 what;
	__u32 cpu;
	__u32 tid;
	__u32 source;
	__u32 named;
	__u32 reserved;
	struct acct_identity who;
};

struct acct_out {
	struct acct_settlement *items;
	__u32 capacity;
	__u32 len;
	/* settlements that did not fit: the caller's buffer is too small */
	__u64 overflow;
};

static void put(struct acct_out *out, __u32 what, __u32 cpu, __u32 tid, __u32 source, __u64 ns,
		const struct acct_identity *who)
{
	struct acct_settlement *s;

	if (out->len >= out->capacity) {
		out->overflow++;
		return;
	}
	s = &out->items[out->len++];
	*s = (struct acct_settlement){
		.ns = ns, .what = what, .cpu = cpu, .tid = tid, .source = source, .named = !!who,
	};
	if (who)
		s->who = *who;
}

static void acct_charge(struct acct_out *out, __u32 cpu, const struct acct_part *part,
			int for_irqlens, const struct acct_identity *who)
{
	put(out, for_irqlens ? ACCT_CHARGE_FOR_IRQLENS : ACCT_CHARGE, cpu, part->current,
	    part->source, part->ns, who);
}

static void acct_serve(struct acct_out *out, __u32 tid, __u32 source, __u64 ns)
{
	put(out, ACCT_SERVE, 0, tid, source, ns, NULL);
}

static void acct_orphan(struct acct_out *out, __u32 source, __u64 ns)
{
	put(out, ACCT_ORPHAN, 0, 0, source, ns, NULL);
}

static void acct_count_unit(struct acct_out *out, const struct acct_unit *unit)
{
	put(out, ACCT_UNITS_SERVED, 0, unit->tid, 0, unit->count, unit->named ? &unit->who : NULL);
}

/* Sizes of the shared types, so the Rust twins can check their layout. */
size_t irqlens_acct_sizeof(int which)
{
	switch (which) {
	case 0:
		return sizeof(struct acct_cpu);
	case 1:
		return sizeof(struct acct_event);
	case 2:
		return sizeof(struct acct_settlement);
	case 3:
		return sizeof(struct acct_out);
	default:
		return 0;
	}
}

void irqlens_acct_step(struct acct_cpu *s, __u32 cpu, const struct acct_event *e,
		       const struct acct_config *config, struct acct_out *out)
{
	acct_follow(s, cpu, e, config, out);
}

/* Settles the end of the run, and tells the CPU's counts: events, inexact, lost. */
void irqlens_acct_finish(struct acct_cpu *s, __u32 cpu, struct acct_out *out, __u64 counts[3])
{
	acct_finish(s, cpu, out);
	counts[0] = s->events;
	counts[1] = s->inexact;
	counts[2] = s->lost;
}

int irqlens_acct_knows_thread(const struct acct_cpu *s, __u32 pid)
{
	return acct_knows_thread(s, pid);
}

int irqlens_acct_defer(struct acct_cpu *s, const struct acct_event *e)
{
	return acct_defer(s, e);
}

void irqlens_acct_drain(struct acct_cpu *s, __u32 cpu, const struct acct_config *config,
			struct acct_out *out)
{
	for (int i = 0; i < ACCT_PENDING && acct_take_pending(s, cpu, config, out); i++)
		;
}
