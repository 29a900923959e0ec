// SPDX-License-Identifier: GPL-2.0
/*
 * irqlens's checkpoints (the INTSPECT thesis's INTSIGHT, on stock tracepoints): what ran
 * on a CPU and when (hardirqs, NMIs, softirqs, context switches, hrtimer callbacks), what
 * was requested (softirq raises, tasklets, work items, hrtimers armed by watched threads),
 * and who was woken (watched threads and the threads that run bottom halves).
 * Matching and arithmetic happen in user space (crates/analyze), where they are
 * unit-tested. Each capability loads the programs it needs (crates/probe/src/checkpoint.rs).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "irq_vectors.h"
#include "checkpoint.h"
#include "task_cgroup.h"

char LICENSE[] SEC("license") = "GPL";

#define PF_WQ_WORKER 0x00000020

/*
 * Every CPU's record area (record_area.h), `slots_per_cpu` slots each; user space sets
 * the size before loading and maps it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct checkpoint_slot);
	__uint(max_entries, 1);
} events SEC(".maps");

/*
 * What a capability wants, set by user space before loading: the verifier sees them as
 * constants and drops the branches a capability does not take, so each capability gets
 * programs of its own rather than programs that ask at every event.
 */
/* A power of two. */
const volatile __u64 slots_per_cpu = 1024;
/*
 * The watched threads (irqlens's own, or those a user named): their wakeups and the
 * hrtimers they arm are always checkpoints. Those of process `watched_tgid` (0: of any
 * process) whose name begins with the first `watched_comm_len` bytes of `watched_comm`
 * (0: any name; a whole name counts its NUL).
 */
const volatile __u32 watched_tgid;
const volatile char watched_comm[TASK_COMM_LEN];
const volatile __u32 watched_comm_len;
/* Accounting: every wakeup on a traced CPU is a checkpoint, not only the watched ones. */
const volatile bool all_wakeups;
/* Switches and wakeups name the task's cgroup: four pointer loads. */
const volatile bool read_cgroups;
/*
 * bh: a wakeup made by a bottom half on a traced CPU (in a softirq, a kworker or an IRQ
 * thread) is a checkpoint: the thread woken is whom the bottom half worked for.
 */
const volatile bool bottom_half_wakeups;
/*
 * Only the first raise of a softirq until it runs (wakeup's chains start there; a raise
 * of a vector already pending requests nothing new).
 */
const volatile bool first_raise_only;

/* Cleared before detaching, so no half-detached program pair produces fake matches. */
__u32 enabled;
/* Each CPU's positions and flags (`traced` is set before enabling). */
struct area_cursor cursors[MAX_CPUS];

/*
 * Which thread reads each socket (the last one that did): who data queued to it is for.
 * Kept in the socket itself (socket-local storage: a pointer from the sock, no hash
 * lookup), freed with it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u32);
} socket_reader SEC(".maps");
/* Never written: makes the skeleton generate the event's Rust types. */
struct checkpoint_slot slot_layout;

static __always_inline struct area_cursor *cursor_of(__u32 cpu)
{
	return &cursors[cpu & (MAX_CPUS - 1)];
}

/* This CPU's cursor if tracing is on and the CPU is traced, else NULL. */
static __always_inline struct area_cursor *traced_cursor(__u32 *cpu)
{
	struct area_cursor *c;

	if (!enabled)
		return NULL;
	*cpu = bpf_get_smp_processor_id();
	c = cursor_of(*cpu);
	return c->traced ? c : NULL;
}

/* The thread running now (tp_btf runs in its context): its pid without a helper call. */
static __always_inline __u32 current_pid(void)
{
	return bpf_get_current_task_btf()->pid;
}

/*
 * Writes one checkpoint of thread `pid` into the CPU's record area, every field once;
 * `comm` names the task it is about (NULL: none). The time is read first: a program that
 * nests inside this one between the clock read and the claim then comes after it in time
 * as in position.
 */
static __always_inline int record(struct area_cursor *c, __u32 cpu, __u32 pid, __u16 kind,
				  __u16 id, __u32 aux, __u64 ptr, __u64 func, const char *comm)
{
	__u64 time = bpf_ktime_get_ns(), slots = slots_per_cpu, pos;
	struct checkpoint_slot *slot;
	struct checkpoint *e;
	__u32 index;

	if (area_claim(c, slots, &pos))
		return 0;
	index = area_index(cpu, slots, pos);
	slot = bpf_map_lookup_elem(&events, &index);
	if (!slot)
		return 0; /* cannot happen: user space sized the map to every CPU's area */
	e = &slot->event;
	e->time = time;
	e->cpu = cpu;
	e->pid = pid;
	e->kind = kind;
	e->id = id;
	e->aux = aux;
	e->ptr = ptr;
	e->func = func;
	if (comm)
		__builtin_memcpy(e->comm, comm, TASK_COMM_LEN);
	else
		__builtin_memset(e->comm, 0, TASK_COMM_LEN);
	area_commit(&slot->commit, pos);
	return 0;
}

/* A checkpoint of a traced CPU about the thread running there. */
static __always_inline int emit(__u16 kind, __u16 id, __u32 aux, __u64 ptr, __u64 func)
{
	struct area_cursor *c;
	__u32 cpu;

	c = traced_cursor(&cpu);
	if (!c)
		return 0;
	return record(c, cpu, current_pid(), kind, id, aux, ptr, func, NULL);
}

SEC("tp_btf/nmi_handler")
int BPF_PROG(irqlens_nmi, void *handler, s64 delta_ns, int handled)
{
	return emit(EV_NMI, 0, 0, delta_ns, 0);
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(irqlens_irq_entry, int irq, struct irqaction *action)
{
	return emit(EV_IRQ_ENTRY, irq, SRC_DEVICE, 0, 0);
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(irqlens_irq_exit, int irq, struct irqaction *action, int ret)
{
	return emit(EV_IRQ_EXIT, irq, SRC_DEVICE, 0, 0);
}

static __always_inline int on_vector_entry(int vector, __u16 source)
{
	return emit(EV_IRQ_ENTRY, vector, source, 0, 0);
}

static __always_inline int on_vector_exit(int vector)
{
	return emit(EV_IRQ_EXIT, vector, 0, 0, 0);
}

ALL_VECTOR_PROBES(irqlens, on_vector_entry, on_vector_exit)

SEC("tp_btf/softirq_raise")
int BPF_PROG(irqlens_softirq_raise, unsigned int vec_nr)
{
	struct area_cursor *c;
	__u32 cpu, bit = 1u << (vec_nr & 31);

	c = traced_cursor(&cpu);
	if (!c)
		return 0;
	if (first_raise_only) {
		/* raises and runs of a CPU's softirqs happen on that CPU, interrupts off */
		if (c->raised & bit)
			return 0;
		c->raised |= bit;
	}
	return record(c, cpu, current_pid(), EV_SOFTIRQ_RAISE, vec_nr, 0, 0, 0, NULL);
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(irqlens_softirq_entry, unsigned int vec_nr)
{
	struct area_cursor *c;
	__u32 cpu;

	c = traced_cursor(&cpu);
	if (!c)
		return 0;
	if (first_raise_only)
		c->raised &= ~(1u << (vec_nr & 31));
	/* softirqs do not nest on a CPU: a flag, not a count, so a lost exit leaves it set
	 * only until the next softirq's exit */
	if (bottom_half_wakeups)
		c->serving = 1;
	return record(c, cpu, current_pid(), EV_SOFTIRQ_ENTRY, vec_nr, 0, 0, 0, NULL);
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(irqlens_softirq_exit, unsigned int vec_nr)
{
	struct area_cursor *c;
	__u32 cpu;

	c = traced_cursor(&cpu);
	if (!c)
		return 0;
	if (bottom_half_wakeups)
		c->serving = 0;
	return record(c, cpu, current_pid(), EV_SOFTIRQ_EXIT, vec_nr, 0, 0, 0, NULL);
}

SEC("tp_btf/tasklet_entry")
int BPF_PROG(irqlens_tasklet_entry, struct tasklet_struct *t, void *func)
{
	return emit(EV_TASKLET_ENTRY, 0, 0, (__u64)t, (__u64)func);
}

SEC("tp_btf/tasklet_exit")
int BPF_PROG(irqlens_tasklet_exit, struct tasklet_struct *t, void *func)
{
	return emit(EV_TASKLET_EXIT, 0, 0, (__u64)t, (__u64)func);
}

/*
 * Work items are matched by their pointer, wherever they run (unbound workqueues run
 * them on any CPU): a work event is emitted from every CPU, the others only from the
 * traced ones. `ptr`/`func` name the item; user space decides what it belongs to.
 */
static __always_inline int emit_work(__u16 kind, struct work_struct *work, __u64 func, __u32 aux)
{
	__u32 cpu;

	if (!enabled)
		return 0;
	cpu = bpf_get_smp_processor_id();
	return record(cursor_of(cpu), cpu, current_pid(), kind, 0, aux, (__u64)work, func, NULL);
}

SEC("tp_btf/workqueue_queue_work")
int BPF_PROG(irqlens_work_queue, int req_cpu, struct pool_workqueue *pwq, struct work_struct *work)
{
	return emit_work(EV_WORK_QUEUE, work, (__u64)work->func, req_cpu);
}

SEC("tp_btf/workqueue_activate_work")
int BPF_PROG(irqlens_work_activate, struct work_struct *work)
{
	return emit_work(EV_WORK_ACTIVATE, work, (__u64)work->func, 0);
}

SEC("tp_btf/workqueue_execute_start")
int BPF_PROG(irqlens_work_start, struct work_struct *work)
{
	return emit_work(EV_WORK_START, work, (__u64)work->func, 0);
}

SEC("tp_btf/workqueue_execute_end")
int BPF_PROG(irqlens_work_end, struct work_struct *work, work_func_t function)
{
	/* the item may be freed by now, and tp_btf cannot read a function-pointer
	 * argument: the end names no function (user space knows it from the start) */
	return emit_work(EV_WORK_END, work, 0, 0);
}

/* The id of `p`'s cgroup if records are to name it, else 0. */
static __always_inline __u64 cgroup_if_read(struct task_struct *p)
{
	return read_cgroups ? task_cgroup_id(p) : 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(irqlens_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct area_cursor *c;
	__u32 cpu;

	c = traced_cursor(&cpu);
	if (!c)
		return 0;
	/* the event's pid is the thread switched out */
	return record(c, cpu, prev->pid, EV_SWITCH, 0, next->pid, next->tgid,
		      cgroup_if_read(next), next->comm);
}

/* Threads that run bottom halves: kworkers, IRQ threads, ksoftirqd. */
static __always_inline bool runs_bottom_halves(struct task_struct *p)
{
	const char *comm = p->comm;

	if (p->flags & PF_WQ_WORKER)
		return true;
	if (comm[0] == 'i' && comm[1] == 'r' && comm[2] == 'q' && comm[3] == '/')
		return true;
	return comm[0] == 'k' && comm[1] == 's' && comm[2] == 'o' && comm[3] == 'f' &&
	       comm[4] == 't' && comm[5] == 'i' && comm[6] == 'r' && comm[7] == 'q';
}

static __always_inline bool is_watched(struct task_struct *p)
{
	if (watched_tgid && p->tgid != watched_tgid)
		return false;
	for (int i = 0; i < TASK_COMM_LEN; i++) {
		if (i >= watched_comm_len)
			break;
		if (p->comm[i] != watched_comm[i])
			return false;
	}
	return true;
}

/*
 * sched_waking, not sched_wakeup: it fires on the waker's CPU, in the waker's context
 * (sched_wakeup may fire later on the wakee's CPU, from an IPI), so the bottom half
 * that did the waking can be told.
 */
SEC("tp_btf/sched_waking")
int BPF_PROG(irqlens_waking, struct task_struct *p)
{
	struct area_cursor *c;
	bool watched, chained;
	__u32 cpu;

	if (!enabled)
		return 0;
	watched = is_watched(p);
	chained = watched || runs_bottom_halves(p);
	/* most wakeups on the machine stop here, before any helper call */
	if (!chained && !all_wakeups && !bottom_half_wakeups)
		return 0;
	cpu = bpf_get_smp_processor_id();
	c = cursor_of(cpu);
	if (!chained && !c->traced)
		return 0;
	if (!chained && !all_wakeups && !c->serving &&
	    !runs_bottom_halves(bpf_get_current_task_btf()))
		return 0;
	return record(c, cpu, current_pid(), EV_WAKEUP, watched, p->pid, p->tgid,
		      cgroup_if_read(p), p->comm);
}

/*
 * hrtimers armed by watched threads (a nanosleep, a timerfd, a poll timeout): the armed
 * expiry is what the wakeup latency of timer mode is measured from.
 */
SEC("tp_btf/hrtimer_start")
int BPF_PROG(irqlens_timer_start, struct hrtimer *timer)
{
	struct task_struct *current;
	__u32 cpu;

	if (!enabled)
		return 0;
	current = bpf_get_current_task_btf();
	if (!is_watched(current))
		return 0;
	cpu = bpf_get_smp_processor_id();
	return record(cursor_of(cpu), cpu, current->pid, EV_TIMER_START, 0, 0, (__u64)timer,
		      timer->_softexpires, NULL);
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(irqlens_timer_expire, struct hrtimer *timer)
{
	return emit(EV_TIMER_EXPIRE, 0, 0, (__u64)timer, (__u64)timer->function);
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(irqlens_timer_expire_exit, struct hrtimer *timer)
{
	return emit(EV_TIMER_EXPIRE_EXIT, 0, 0, (__u64)timer, 0);
}

/*
 * A read from a socket, in the reader's context: remember who reads it. Every socket
 * read on the machine passes here: the map is written only when the reader changes.
 */
SEC("tp_btf/sock_recv_length")
int BPF_PROG(irqlens_sock_recv, struct sock *sk, int ret, int flags)
{
	__u32 reader, *known;

	if (!enabled)
		return 0;
	reader = current_pid();
	known = bpf_sk_storage_get(&socket_reader, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (known && *known != reader)
		*known = reader;
	return 0;
}

/* Data queued to a socket (a UDP datagram, TCP segment...), usually in NET_RX. */
SEC("tp_btf/sk_data_ready")
int BPF_PROG(irqlens_sock_data, const struct sock *sk)
{
	struct area_cursor *c;
	__u32 cpu, *reader;

	c = traced_cursor(&cpu);
	if (!c)
		return 0;
	reader = bpf_sk_storage_get(&socket_reader, (struct sock *)sk, 0, 0);
	return record(c, cpu, current_pid(), EV_SOCK_DATA, 0, reader ? *reader : 0, (__u64)sk, 0,
		      NULL);
}
