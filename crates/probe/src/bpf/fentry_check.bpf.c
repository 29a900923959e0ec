// SPDX-License-Identifier: GPL-2.0
/*
 * Never attached: loading it tells whether this kernel lets irqlens put a probe on a
 * kernel function (fentry). Entropy mixing and the scheduler's runtime accounting, two
 * delay causes of INTSPECT thesis §5.4, have no tracepoint and need one.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

__u64 calls;

SEC("fentry/add_interrupt_randomness")
int BPF_PROG(irqlens_fentry_check, int irq)
{
	__sync_fetch_and_add(&calls, 1);
	return 0;
}
