/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Hardirq sources shared by the BPF programs: device lines (irq_handler_*) and the x86
 * local APIC vectors (irq_vectors:*_entry/exit), with one macro that attaches a pair of
 * handlers to every vector so each program lists them once.
 */
#ifndef IRQLENS_IRQ_VECTORS_H
#define IRQLENS_IRQ_VECTORS_H

/*
 * What raised an IRQ-class interference. The order is mirrored by IRQ_SOURCE_NAMES in
 * crates/model/src/kernel.rs.
 */
enum irq_source {
	SRC_DEVICE = 0, /* irq_handler_entry: a device IRQ line, id = irq number */
	SRC_LOCAL_TIMER,
	SRC_RESCHEDULE,
	SRC_CALL_FUNCTION,
	SRC_CALL_FUNCTION_SINGLE,
	SRC_IRQ_WORK,
	SRC_X86_PLATFORM_IPI,
	SRC_ERROR_APIC,
	SRC_SPURIOUS_APIC,
	SRC_THERMAL_APIC,
};

/*
 * Entry and exit programs for one local APIC vector, calling ENTRY(vector, source) and
 * EXIT(vector); user space skips the vectors a kernel lacks.
 */
#define VECTOR_PROBES(prefix, name, source, ENTRY, EXIT)              \
	SEC("tp_btf/" #name "_entry")                                 \
	int BPF_PROG(prefix##_##name##_entry, int vector)             \
	{                                                             \
		return ENTRY(vector, source);                         \
	}                                                             \
	SEC("tp_btf/" #name "_exit")                                  \
	int BPF_PROG(prefix##_##name##_exit, int vector)              \
	{                                                             \
		return EXIT(vector);                                  \
	}

#define ALL_VECTOR_PROBES(prefix, ENTRY, EXIT)                                            \
	VECTOR_PROBES(prefix, local_timer, SRC_LOCAL_TIMER, ENTRY, EXIT)                  \
	VECTOR_PROBES(prefix, reschedule, SRC_RESCHEDULE, ENTRY, EXIT)                    \
	VECTOR_PROBES(prefix, call_function, SRC_CALL_FUNCTION, ENTRY, EXIT)              \
	VECTOR_PROBES(prefix, call_function_single, SRC_CALL_FUNCTION_SINGLE, ENTRY, EXIT) \
	VECTOR_PROBES(prefix, irq_work, SRC_IRQ_WORK, ENTRY, EXIT)                        \
	VECTOR_PROBES(prefix, x86_platform_ipi, SRC_X86_PLATFORM_IPI, ENTRY, EXIT)        \
	VECTOR_PROBES(prefix, error_apic, SRC_ERROR_APIC, ENTRY, EXIT)                    \
	VECTOR_PROBES(prefix, spurious_apic, SRC_SPURIOUS_APIC, ENTRY, EXIT)              \
	VECTOR_PROBES(prefix, thermal_apic, SRC_THERMAL_APIC, ENTRY, EXIT)

#endif /* IRQLENS_IRQ_VECTORS_H */
