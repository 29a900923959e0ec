// SPDX-License-Identifier: GPL-2.0
/*
 * account attributed where the events happen: each traced CPU runs account.h's state
 * machine on its own events, and the totals go straight into maps (per thread and
 * source, per CPU, orphan) that user space reads at each period's end. No event leaves
 * the kernel. Used when account neither records nor compensates (both need every
 * checkpoint: checkpoint.bpf.c).
 *
 * No sched_switch program, the most frequent event of a busy machine: every event carries
 * its current thread, which is all a switch told (account.h heals on a thread change);
 * the thread an interrupt charges is named at the interrupt's entry, once per thread
 * change; a wakeup IPI is irqlens's own work if the CPU's next thread with an event is irqlens's.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "irq_vectors.h"
#include "task_cgroup.h"

/* account.h's loops as open-coded iterators: verified in a few passes */
#define ACCT_FOR(i, n) bpf_for(i, 0, n)
#define ACCT_STEP step
struct acct_cpu;
struct acct_event;
struct acct_config;
struct acct_out;
static int step(struct acct_cpu *s, __u32 cpu, const struct acct_event *e,
		const struct acct_config *config, struct acct_out *out);
#include "account_maps.h"

char LICENSE[] SEC("license") = "GPL";

#define MAX_CPUS 1024
#define AF_UNIX 1

/* Cleared before detaching, so no half-detached program pair makes fake runs. */
__u32 enabled;
__u8 traced_cpu[MAX_CPUS];
/* irqlens's own process: its threads' work is its own (0: not told apart). */
const volatile __u32 irqlens_tgid;
/* Time no map had room for: counted, never dropped silently. */
__u64 unmapped_ns;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct acct_cpu);
} cpu_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ACCT_TASK_TIMES);
	__type(key, struct acct_task_key);
	__type(value, struct acct_task_time);
} task_time SEC(".maps");

/* Per source, the time of threads task_time had no room for (FOLDED's). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ACCT_SOURCES);
	__type(key, __u32);
	__type(value, struct acct_task_time);
} folded_time SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, ACCT_TASKS);
	__type(key, __u32);
	__type(value, struct acct_task_info);
} task_info SEC(".maps");

/*
 * What the CPU's named thread was when it was named: an exec (a new comm) or a move to
 * another cgroup since makes the name stale, and a thread may do either without leaving
 * the CPU (no other thread's event there to make it named again).
 */
struct name_stamp {
	__u64 exec_id;
	__u64 cgroup;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct name_stamp);
} named_stamp SEC(".maps");

/* Per source, on each CPU: time that served nobody known, and all time but irqlens's. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, ACCT_SOURCES);
	__type(key, __u32);
	__type(value, __u64);
} orphan_time SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, ACCT_SOURCES);
	__type(key, __u32);
	__type(value, __u64);
} cpu_time SEC(".maps");

/* Which thread reads each socket (the last one that did): whom data queued to it is for. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct acct_reader);
} socket_reader SEC(".maps");

/* Never written: makes the skeleton generate the maps' Rust types. */
struct acct_task_key task_key_layout;
struct acct_task_time task_time_layout;
struct acct_task_info task_info_layout;

struct acct_out {
	__u32 unused;
};

/*
 * The map updates are global functions: verified once per program, not at every call
 * site of the state machine.
 *
 * Adds to a thread's time for a source; past the map's room, to the folded threads'.
 */
__noinline int add_task_time(__u32 tid, __u32 source, __u64 charged, __u64 for_irqlens,
			     __u64 served)
{
	struct acct_task_key key = { .tid = tid, .source = source };
	struct acct_task_time zero = {}, *time;

	time = bpf_map_lookup_elem(&task_time, &key);
	if (!time) {
		/* fails if another CPU just added it (found below) or the map is full */
		bpf_map_update_elem(&task_time, &key, &zero, BPF_NOEXIST);
		time = bpf_map_lookup_elem(&task_time, &key);
	}
	if (!time) {
		time = bpf_map_lookup_elem(&folded_time, &source);
		if (!time) {
			bpf_map_update_elem(&folded_time, &source, &zero, BPF_NOEXIST);
			time = bpf_map_lookup_elem(&folded_time, &source);
		}
	}
	if (!time) {
		__sync_fetch_and_add(&unmapped_ns, charged + served);
		return 0;
	}
	if (charged)
		__sync_fetch_and_add(&time->charged, charged);
	if (for_irqlens)
		__sync_fetch_and_add(&time->for_irqlens, for_irqlens);
	if (served)
		__sync_fetch_and_add(&time->served, served);
	return 0;
}

/* Adds units to a thread and names it (`who` may be NULL). */
__noinline int name_task(__u32 tid, const struct acct_identity *who, __u64 units)
{
	struct acct_task_info *info = bpf_map_lookup_elem(&task_info, &tid), fresh = {};

	if (info) {
		if (units)
			__sync_fetch_and_add(&info->units, units);
		if (who) {
			info->named = 1;
			info->who = *who;
		}
		return 0;
	}
	fresh.units = units;
	if (who) {
		fresh.named = 1;
		fresh.who = *who;
	}
	if (bpf_map_update_elem(&task_info, &tid, &fresh, BPF_NOEXIST) && units) {
		/* no room for the thread: its units are the folded threads' (made at load) */
		tid = ACCT_FOLDED;
		info = bpf_map_lookup_elem(&task_info, &tid);
		if (info)
			__sync_fetch_and_add(&info->units, units);
	}
	return 0;
}

__noinline int add_percpu_time(__u32 orphan, __u32 source, __u64 ns)
{
	void *map = orphan ? (void *)&orphan_time : (void *)&cpu_time;
	__u64 *total = bpf_map_lookup_elem(map, &source);

	if (!total) {
		/* the key is the map's, the values each CPU's: another CPU may add it first */
		bpf_map_update_elem(map, &source, &(__u64){ 0 }, BPF_NOEXIST);
		total = bpf_map_lookup_elem(map, &source);
	}
	if (total)
		*total += ns; /* this CPU's own copy: no other writer */
	else
		__sync_fetch_and_add(&unmapped_ns, ns);
	return 0;
}

static void acct_charge(struct acct_out *out, __u32 cpu, const struct acct_part *part,
			int for_irqlens, const struct acct_identity *who)
{
	add_task_time(part->current, part->source, part->ns, for_irqlens ? part->ns : 0, 0);
	if (!for_irqlens)
		add_percpu_time(0, part->source, part->ns);
	if (who)
		name_task(part->current, who, 0);
}

static void acct_serve(struct acct_out *out, __u32 tid, __u32 source, __u64 ns)
{
	add_task_time(tid, source, 0, 0, ns);
}

static void acct_orphan(struct acct_out *out, __u32 source, __u64 ns)
{
	add_percpu_time(1, source, ns);
}

static void acct_count_unit(struct acct_out *out, const struct acct_unit *unit)
{
	name_task(unit->tid, unit->named ? &unit->who : NULL, unit->count);
}

/*
 * The state machine, once per program: a global function is verified on its own, not
 * again at each call.
 */
__noinline int acct_follow_one(struct acct_cpu *s, const struct acct_event *e)
{
	struct acct_config config = { .irqlens_known = irqlens_tgid != 0 };
	struct acct_out out = {};

	if (!s || !e)
		return 0;
	/* the CPU is only named to the hooks, whose per-CPU maps know it */
	acct_follow(s, 0, e, &config, &out);
	return 0;
}

static int step(struct acct_cpu *s, __u32 cpu, const struct acct_event *e,
		const struct acct_config *config, struct acct_out *out)
{
	return acct_follow_one(s, e);
}

struct drain_ctx {
	struct acct_cpu *s;
	struct acct_config config;
	struct acct_out out;
	__u32 cpu;
};

static int drain_one(__u32 index, struct drain_ctx *ctx)
{
	return !acct_take_pending(ctx->s, ctx->cpu, &ctx->config, &ctx->out);
}

/* The state of the CPU the program runs on, if it is traced. */
static __always_inline struct acct_cpu *traced_state(__u32 *cpu)
{
	__u32 zero = 0;

	if (!enabled)
		return NULL;
	*cpu = bpf_get_smp_processor_id();
	if (!traced_cpu[*cpu & (MAX_CPUS - 1)])
		return NULL;
	return bpf_map_lookup_elem(&cpu_state, &zero);
}

static __always_inline int has_pending(const struct acct_cpu *s)
{
	return s->pending_head != *(volatile __u64 *)&s->pending_tail;
}

/*
 * What is known of task `p`, for the names of the totals; its cgroup id is the caller's
 * read (a walk of its css_set: read once).
 */
static __always_inline void identify_in(struct acct_identity *who, struct task_struct *p,
					__u64 cgroup)
{
	who->tgid = p->tgid;
	who->cgroup = cgroup;
	__builtin_memcpy(who->comm, p->comm, ACCT_COMM_LEN);
}

/* What is known of task `p`. */
static __always_inline void identify(struct acct_identity *who, struct task_struct *p)
{
	identify_in(who, p, task_cgroup_id(p));
}

/*
 * Names the event's (current) thread unless the CPU's state names it already, and it has
 * neither exec'd nor changed cgroup since (the idle task is never named).
 */
static __always_inline void name_current(struct acct_cpu *s, struct acct_event *e)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct name_stamp now, *named;
	__u32 zero = 0;

	if (e->pid == ACCT_IDLE)
		return;
	now.exec_id = task->self_exec_id;
	now.cgroup = task_cgroup_id(task);
	named = bpf_map_lookup_elem(&named_stamp, &zero);
	if (acct_knows_thread(s, e->pid) && named && named->exec_id == now.exec_id &&
	    named->cgroup == now.cgroup)
		return;
	if (named)
		*named = now;
	e->tid = e->pid;
	e->irqlens = e->current_irqlens;
	e->named = 1;
	identify_in(&e->who, task, now.cgroup);
}

static __always_inline int is_irqlens(__u32 tgid)
{
	return irqlens_tgid && tgid == irqlens_tgid;
}

/*
 * Runs the state machine on the event, stamped with the current thread (and, if
 * `names_current` and the CPU's state does not name it yet, its name); one that nests
 * inside another program of the CPU waits for it (acct_defer), and is taken before that
 * program leaves.
 */
static __always_inline int follow(struct acct_cpu *s, __u32 cpu, struct acct_event *e,
				  int names_current)
{
	struct drain_ctx ctx = {
		.s = s, .cpu = cpu, .config = { .irqlens_known = irqlens_tgid != 0 },
	};
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	e->pid = (__u32)pid_tgid;
	e->current_irqlens = is_irqlens(pid_tgid >> 32);
	/* a nested program may see the state mid-step: at worst it reads a name twice */
	if (names_current)
		name_current(s, e);
	if (s->busy) {
		acct_defer(s, e);
		return 0;
	}
	s->busy = 1;
	asm volatile("" ::: "memory");
	if (has_pending(s))
		bpf_loop(ACCT_PENDING, drain_one, &ctx, 0);
	step(s, cpu, e, &ctx.config, &ctx.out);
	if (has_pending(s))
		bpf_loop(ACCT_PENDING, drain_one, &ctx, 0);
	asm volatile("" ::: "memory");
	s->busy = 0;
	/* what nested after the last look waits for the CPU's next event (or the end) */
	return 0;
}

static __always_inline int simple(__u8 kind, __u16 id, __u16 source, __u64 ptr)
{
	struct acct_event e = {
		.time = bpf_ktime_get_ns(), .kind = kind, .id = id, .source = source, .ptr = ptr,
	};
	/* where interrupt time on the current thread begins: the thread it charges */
	int names_current = kind == ACCT_IRQ_ENTRY || kind == ACCT_SOFTIRQ_ENTRY ||
			    kind == ACCT_NMI_END;
	struct acct_cpu *s;
	__u32 cpu;

	s = traced_state(&cpu);
	return s ? follow(s, cpu, &e, names_current) : 0;
}

SEC("tp_btf/nmi_handler")
int BPF_PROG(irqlens_acct_nmi, void *handler, s64 delta_ns, int handled)
{
	return simple(ACCT_NMI_END, 0, 0, delta_ns);
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(irqlens_acct_irq_entry, int irq, struct irqaction *action)
{
	return simple(ACCT_IRQ_ENTRY, irq, SRC_DEVICE, 0);
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(irqlens_acct_irq_exit, int irq, struct irqaction *action, int ret)
{
	return simple(ACCT_IRQ_EXIT, irq, 0, 0);
}

static __always_inline int on_vector_entry(int vector, __u16 source)
{
	return simple(ACCT_IRQ_ENTRY, vector, source, 0);
}

static __always_inline int on_vector_exit(int vector)
{
	return simple(ACCT_IRQ_EXIT, vector, 0, 0);
}

ALL_VECTOR_PROBES(irqlens_acct, on_vector_entry, on_vector_exit)

SEC("tp_btf/softirq_raise")
int BPF_PROG(irqlens_acct_softirq_raise, unsigned int vec_nr)
{
	return simple(ACCT_SOFTIRQ_RAISE, vec_nr, 0, 0);
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(irqlens_acct_softirq_entry, unsigned int vec_nr)
{
	return simple(ACCT_SOFTIRQ_ENTRY, vec_nr, 0, 0);
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(irqlens_acct_softirq_exit, unsigned int vec_nr)
{
	return simple(ACCT_SOFTIRQ_EXIT, vec_nr, 0, 0);
}

static __always_inline int follow_wakeup(struct acct_cpu *s, __u32 cpu, struct task_struct *p)
{
	struct acct_event e = {
		.time = bpf_ktime_get_ns(), .kind = ACCT_WAKEUP, .tid = p->pid,
		.irqlens = is_irqlens(p->tgid), .named = 1,
	};

	identify(&e.who, p);
	return follow(s, cpu, &e, 0);
}

/* sched_waking fires on the waker's CPU, in its context: the run that woke is known. */
SEC("tp_btf/sched_waking")
int BPF_PROG(irqlens_acct_waking, struct task_struct *p)
{
	struct acct_cpu *s;
	__u32 cpu;

	s = traced_state(&cpu);
	/* most wakeups are a thread's, outside any run: nothing more to read, not even the clock */
	if (!s || !acct_takes_units(s))
		return 0;
	return follow_wakeup(s, cpu, p);
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(irqlens_acct_timer_expire, struct hrtimer *timer)
{
	return simple(ACCT_TIMER_EXPIRE, 0, 0, (__u64)timer);
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(irqlens_acct_timer_expire_exit, struct hrtimer *timer)
{
	return simple(ACCT_TIMER_EXPIRE_EXIT, 0, 0, (__u64)timer);
}

/* A read from a socket, in the reader's context: remember who reads it. */
SEC("tp_btf/sock_recv_length")
int BPF_PROG(irqlens_acct_sock_recv, struct sock *sk, int ret, int flags)
{
	struct task_struct *task;
	__u64 key = (__u64)sk;
	struct acct_reader *known, reader = {};

	/* local sockets get their data in the sender's context, never in a run */
	if (!enabled || sk->__sk_common.skc_family == AF_UNIX)
		return 0;
	task = bpf_get_current_task_btf();
	known = bpf_map_lookup_elem(&socket_reader, &key);
	/* every socket read on the machine passes here: written only when the reader changes */
	if (known && known->tid == task->pid)
		return 0;
	reader.tid = task->pid;
	identify(&reader.who, task);
	bpf_map_update_elem(&socket_reader, &key, &reader, BPF_ANY);
	return 0;
}

static __always_inline int follow_delivery(struct acct_cpu *s, __u32 cpu, __u64 sk)
{
	struct acct_event e = { .time = bpf_ktime_get_ns(), .kind = ACCT_SOCK_DATA };
	struct acct_reader *reader = bpf_map_lookup_elem(&socket_reader, &sk);

	if (reader) {
		e.tid = reader->tid;
		e.irqlens = is_irqlens(reader->who.tgid);
		e.named = 1;
		e.who = reader->who;
	}
	return follow(s, cpu, &e, 0);
}

/* Data queued to a socket (a UDP datagram, TCP segment...), usually in NET_RX. */
SEC("tp_btf/sk_data_ready")
int BPF_PROG(irqlens_acct_sock_data, const struct sock *sk)
{
	struct acct_cpu *s;
	__u32 cpu;

	s = traced_state(&cpu);
	/* a delivery outside any run (a local socket's, a thread's) takes no unit */
	if (!s || !acct_takes_units(s))
		return 0;
	return follow_delivery(s, cpu, (__u64)sk);
}
