// SPDX-License-Identifier: GPL-2.0
/* Host build of nest.h for the unit tests of src/analyze (no BPF, no root). */
#include <stdint.h>

typedef uint64_t __u64;
typedef uint32_t __u32;
typedef uint16_t __u16;
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#include "nest.h"

void irqlens_nest_enter(struct nest_state *n, unsigned int cls, __u64 now, __u64 seq,
			__u32 id, __u16 source)
{
	nest_enter(n, cls, now, seq, id, source);
}

int irqlens_nest_exit(struct nest_state *n, unsigned int cls, __u64 now, __u64 *duration)
{
	return nest_exit(n, cls, now, duration);
}
