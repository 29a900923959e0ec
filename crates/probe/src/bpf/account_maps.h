/* SPDX-License-Identifier: GPL-2.0 */
/* The maps account.bpf.c keeps its totals in, shared with user space (crates/probe/src/account.rs). */
#ifndef IRQLENS_ACCOUNT_MAPS_H
#define IRQLENS_ACCOUNT_MAPS_H

#include "account.h"

/* (thread, source) pairs with their own totals; past it, a source's are FOLDED's. */
#define ACCT_TASK_TIMES 65536
/* Threads with their own units and name; past it, their units are FOLDED's. */
#define ACCT_TASKS 32768
/* Interrupt sources (lines, vectors, softirqs) told apart. */
#define ACCT_SOURCES 4096

struct acct_task_key {
	__u32 tid;
	__u32 source; /* account.h's encoding */
};

struct acct_task_time {
	__u64 charged;
	__u64 for_irqlens;
	__u64 served;
};

struct acct_task_info {
	__u64 units;
	__u64 named;
	struct acct_identity who;
};

/* A socket's last reader. */
struct acct_reader {
	__u32 tid;
	__u32 reserved;
	struct acct_identity who;
};

#endif /* IRQLENS_ACCOUNT_MAPS_H */
