// SPDX-License-Identifier: GPL-2.0
/*
 * irqlens noise: the osnoise method's tracing half. On each measured CPU, every NMI,
 * hardirq (device lines and local APIC vectors), softirq and foreign thread increments
 * the CPU's interference counter when it begins (the measurement thread reads that
 * counter from mmapped memory around each clock read) and, when it ends, emits one
 * record with its interference-free duration and the counter value it was given.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "noise.h"
#include "task_cgroup.h"

char LICENSE[] SEC("license") = "GPL";

/*
 * Every CPU's record area (record_area.h), `slots_per_cpu` slots each; user space sets
 * the size before loading and maps it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct noise_slot);
	__uint(max_entries, 1);
} records SEC(".maps");

/*
 * Gate for every program: detaching is not atomic, so user space clears it first and
 * no half-detached entry/exit pair produces a fake duration.
 */
__u32 enabled;
/* A power of two, written by user space before enabling. */
__u64 slots_per_cpu;
struct area_cursor cursors[MAX_CPUS];
struct cpu_state cpus[MAX_CPUS];
/* Never written: makes the skeleton generate the record's Rust types. */
struct noise_slot slot_layout;

static __always_inline struct cpu_state *measured_cpu(__u32 *cpu)
{
	struct cpu_state *s;

	if (!enabled)
		return NULL;
	*cpu = bpf_get_smp_processor_id();
	if (*cpu >= MAX_CPUS)
		return NULL;
	s = &cpus[*cpu & (MAX_CPUS - 1)];
	return s->measured ? s : NULL;
}

/*
 * Drops the context of class cls if one is still open: its end was never reported, so it
 * has no record, and it is counted if it began while sampling.
 */
static __always_inline void drop_unended(struct cpu_state *s, unsigned int cls)
{
	struct nest_ctx *c = &s->nest.ctx[cls & (NOISE_CLASSES - 1)];

	if (!c->active)
		return;
	/* atomic: a hardirq can drop its own context inside the softirq program's count */
	if (s->began_sampling[cls & (NOISE_CLASSES - 1)])
		__sync_fetch_and_add(&s->unended, 1);
	c->active = 0;
}

/*
 * The measurement thread runs with a thread context open: the switch back to it never
 * reached the tracepoint. Dropped at the first hardirq that sees it (the tick comes within
 * milliseconds), so the count does not wait for the thread's next switch out. Hardirqs
 * only: they run with IRQs off, so no other check can land between the count and the
 * close and count the same context again.
 */
static __always_inline void drop_missed_switch(struct cpu_state *s)
{
	/* workload_pid is 0, the idle task's pid, until the thread names itself */
	if (s->nest.ctx[CLASS_THREAD].active && s->workload_pid &&
	    (__u32)bpf_get_current_pid_tgid() == s->workload_pid)
		drop_unended(s, CLASS_THREAD);
}

static __always_inline void begin(struct cpu_state *s, unsigned int cls, __u64 now, __u32 id,
				  __u16 source)
{
	__u64 seq = __sync_fetch_and_add(&s->interference, 1) + 1;

	if (s->sampling)
		s->entries[cls & (NOISE_CLASSES - 1)]++;
	/* a context of this class still open lost its end: a new one replaces it */
	drop_unended(s, cls);
	s->began_sampling[cls & (NOISE_CLASSES - 1)] = s->sampling != 0;
	nest_enter(&s->nest, cls, now, seq, id, source);
}

static __always_inline void emit(struct cpu_state *s, __u32 cpu, unsigned int cls, __u64 duration)
{
	struct nest_ctx *c = &s->nest.ctx[cls & (NOISE_CLASSES - 1)];
	struct area_cursor *cursor = &cursors[cpu & (MAX_CPUS - 1)];
	struct noise_slot *slot;
	__u64 slots = slots_per_cpu, pos;
	__u32 index;

	if (area_claim(cursor, slots, &pos))
		return;
	index = area_index(cpu, slots, pos);
	slot = bpf_map_lookup_elem(&records, &index);
	if (!slot)
		return; /* cannot happen: user space sized the map to every CPU's area */
	slot->record.start = c->start;
	slot->record.duration = duration;
	slot->record.seq = c->seq;
	slot->record.cpu = cpu;
	slot->record.class = cls;
	slot->record.source = c->source;
	slot->record.id = c->id;
	if (cls == CLASS_THREAD) {
		__builtin_memcpy(slot->record.comm, s->thread_comm, TASK_COMM_LEN);
		slot->record.cgroup = s->thread_cgroup;
	} else {
		__builtin_memset(slot->record.comm, 0, TASK_COMM_LEN);
		slot->record.cgroup = 0;
	}
	area_commit(&slot->commit, pos);
}

static __always_inline void end(struct cpu_state *s, __u32 cpu, unsigned int cls, __u64 now)
{
	__u64 duration;

	if (nest_exit(&s->nest, cls, now, &duration) && s->sampling)
		emit(s, cpu, cls, duration);
}

/*
 * The clock, read with no interference beginning around it: softirq programs run with
 * IRQs enabled, and an IRQ landing on the clock read would be charged to both contexts.
 * Retried as osnoise does (osnoise paper §5.5.2), a bounded number of times. A window of
 * a few instructions between this read and the nesting update remains.
 */
static __always_inline __u64 stable_now(struct cpu_state *s)
{
	__u64 seq, now = 0;
	int i;

	for (i = 0; i < 4; i++) {
		seq = *(volatile __u64 *)&s->interference;
		now = bpf_ktime_get_ns();
		if (seq == *(volatile __u64 *)&s->interference)
			break;
	}
	return now;
}

static __always_inline int on_entry(unsigned int cls, __u32 id, __u16 source)
{
	struct cpu_state *s;
	__u32 cpu;

	s = measured_cpu(&cpu);
	if (s) {
		if (cls == CLASS_IRQ)
			drop_missed_switch(s);
		begin(s, cls, stable_now(s), id, source);
	}
	return 0;
}

static __always_inline int on_exit(unsigned int cls)
{
	struct cpu_state *s;
	__u32 cpu;

	s = measured_cpu(&cpu);
	if (s)
		end(s, cpu, cls, stable_now(s));
	return 0;
}

/* There is no NMI entry tracepoint: nmi_handler fires at the end with the duration. */
SEC("tp_btf/nmi_handler")
int BPF_PROG(irqlens_nmi, void *handler, s64 delta_ns, int handled)
{
	struct cpu_state *s;
	__u64 now;
	__u32 cpu;

	s = measured_cpu(&cpu);
	if (!s)
		return 0;
	now = bpf_ktime_get_ns();
	begin(s, CLASS_NMI, now - delta_ns, 0, 0);
	end(s, cpu, CLASS_NMI, now);
	return 0;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(irqlens_irq_entry, int irq, struct irqaction *action)
{
	return on_entry(CLASS_IRQ, irq, SRC_DEVICE);
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(irqlens_irq_exit, int irq, struct irqaction *action, int ret)
{
	return on_exit(CLASS_IRQ);
}

static __always_inline int on_vector_entry(int vector, __u16 source)
{
	return on_entry(CLASS_IRQ, vector, source);
}

static __always_inline int on_vector_exit(int vector)
{
	return on_exit(CLASS_IRQ);
}

ALL_VECTOR_PROBES(irqlens, on_vector_entry, on_vector_exit)

SEC("tp_btf/softirq_entry")
int BPF_PROG(irqlens_softirq_entry, unsigned int vec_nr)
{
	return on_entry(CLASS_SOFTIRQ, vec_nr, 0);
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(irqlens_softirq_exit, unsigned int vec_nr)
{
	return on_exit(CLASS_SOFTIRQ);
}

/* Any thread but the measurement thread is thread noise for as long as it runs. */
SEC("tp_btf/sched_switch")
int BPF_PROG(irqlens_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct cpu_state *s;
	__u64 now;
	__u32 cpu;

	s = measured_cpu(&cpu);
	if (!s)
		return 0;
	now = bpf_ktime_get_ns();
	/*
	 * Some switches never reach the tracepoint (seen on these VMs for the hypervisor
	 * agent's threads). A thread context still open when the measurement thread is
	 * switched out lost its end: its time is unknown, so it is closed with no record and
	 * counted as unended (the sample around it shows as not recorded) rather than left
	 * open to swallow the next thread's record (a hardirq that finds the measurement
	 * thread running drops it sooner: drop_missed_switch). Any other switch ends it,
	 * whoever prev is; its name was taken when it began, for the same reason.
	 */
	if (prev->pid == s->workload_pid)
		drop_unended(s, CLASS_THREAD);
	else
		end(s, cpu, CLASS_THREAD, now);
	if (next->pid != s->workload_pid) {
		__builtin_memcpy(s->thread_comm, next->comm, TASK_COMM_LEN);
		s->thread_cgroup = task_cgroup_id(next);
		begin(s, CLASS_THREAD, now, next->pid, 0);
	}
	return 0;
}
