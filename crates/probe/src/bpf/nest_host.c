// SPDX-License-Identifier: GPL-2.0
/* Host build of nest.h and record_area.h for the unit tests (no BPF, no root). */
#include <stdint.h>

typedef uint64_t __u64;
typedef uint32_t __u32;
typedef uint16_t __u16;
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#include "nest.h"

void irqlens_nest_enter(struct nest_state *n, unsigned int cls, __u64 now, __u64 seq, __u32 id,
			__u16 source)
{
	nest_enter(n, cls, now, seq, id, source);
}

int irqlens_nest_exit(struct nest_state *n, unsigned int cls, __u64 now, __u64 *duration)
{
	return nest_exit(n, cls, now, duration);
}

#include "record_area.h"

int irqlens_area_claim(struct area_cursor *c, __u64 slots, __u64 *pos)
{
	return area_claim(c, slots, pos);
}

__u32 irqlens_area_index(__u32 cpu, __u64 slots, __u64 pos)
{
	return area_index(cpu, slots, pos);
}

void irqlens_area_commit(__u64 *commit, __u64 pos)
{
	area_commit(commit, pos);
}
