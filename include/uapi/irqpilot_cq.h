/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Generic netlink interface of irqpilot_cq.ko, shared by the module and
 * irqpilotd. Only <linux/types.h>: it must build in user space too.
 */
#ifndef _UAPI_IRQPILOT_CQ_H
#define _UAPI_IRQPILOT_CQ_H

#include <linux/types.h>

#define IPCQ_GENL_NAME		"irqpilot_cq"
/*
 * 2: ATTACH and DETACH take MAJOR + MINOR only (a name is a cross-check),
 * IPCQ_A_FLAGS, per-CPU counts as IPCQ_CPU_A_ENTRY nests, a thread may
 * span several LIST messages. The module refuses requests of another
 * version with EPROTO.
 */
#define IPCQ_GENL_VERSION	2
#define IPCQ_GENL_MCGRP_EVENTS	"events"

/*
 * ATTACH and DETACH name a whole disk by IPCQ_A_MAJOR + IPCQ_A_MINOR; an
 * IPCQ_A_DISK given too must name the same disk. They need CAP_SYS_ADMIN
 * (and CAP_NET_ADMIN) in the initial user namespace, both for the opener
 * of the socket and for the sender. ATTACH takes IPCQ_A_FLAGS.
 *
 * LIST is a dump of the completion threads, ordered by device number and
 * hardware queue. Each message carries DISK, MAJOR, MINOR, HWQ, NR_HWQ
 * and PID, the thread's pid in the caller's pid namespace: none where
 * that namespace does not see the thread (a container's). A caller without CAP_SYS_ADMIN gets only those. Otherwise the
 * first message of a thread also carries its counters and as many of its
 * per-CPU counts as fit; the rest follow in further messages with the
 * same MAJOR, MINOR, HWQ and PID and only IPCQ_A_CPU_COMPLETIONS.
 *
 * IPCQ_CMD_EVENT is only sent, to the "events" multicast group.
 */
enum ipcq_cmd {
	IPCQ_CMD_UNSPEC,
	IPCQ_CMD_ATTACH,
	IPCQ_CMD_DETACH,
	IPCQ_CMD_LIST,
	IPCQ_CMD_EVENT,

	__IPCQ_CMD_MAX,
};

#define IPCQ_CMD_MAX (__IPCQ_CMD_MAX - 1)

enum ipcq_attr {
	IPCQ_A_UNSPEC,
	IPCQ_A_PAD,
	IPCQ_A_DISK,		/* string: disk name */
	IPCQ_A_MAJOR,		/* u32 */
	IPCQ_A_MINOR,		/* u32 */
	IPCQ_A_HWQ,		/* u32: hardware queue index */
	IPCQ_A_NR_HWQ,		/* u32: completion threads of the disk */
	IPCQ_A_PID,		/* u32: pid of the thread, in the caller's pid ns */
	IPCQ_A_COMPLETIONS,	/* u64: requests completed by the thread */
	IPCQ_A_WAKEUPS,		/* u64: times the thread slept and was woken */
	IPCQ_A_MAX_WAIT_NS,	/* u64: longest time a request waited for it */
	IPCQ_A_STALLS,		/* u64: stall guard trips */
	IPCQ_A_FALLBACKS,	/* u64: requests completed on the original path
				 * because the thread was stalled
				 */
	/*
	 * Nested: completions of the thread per submitting CPU, one
	 * IPCQ_CPU_A_ENTRY nest per CPU that has any (enum ipcq_cpu_attr).
	 */
	IPCQ_A_CPU_COMPLETIONS,
	IPCQ_A_EVENT,		/* u32: enum ipcq_event */
	IPCQ_A_WAIT_NS,		/* u64: stall event: wait of the oldest request */
	IPCQ_A_FLAGS,		/* u32: ATTACH: enum ipcq_attach_flags */

	__IPCQ_A_MAX,
};

#define IPCQ_A_MAX (__IPCQ_A_MAX - 1)

/* Inside IPCQ_A_CPU_COMPLETIONS */
enum ipcq_cpu_attr {
	IPCQ_CPU_A_UNSPEC,
	IPCQ_CPU_A_PAD,
	IPCQ_CPU_A_ENTRY,	/* nest: IPCQ_CPU_A_CPU + IPCQ_CPU_A_COUNT */
	IPCQ_CPU_A_CPU,		/* u32: submitting CPU */
	IPCQ_CPU_A_COUNT,	/* u64: requests of that CPU the thread completed */

	__IPCQ_CPU_A_MAX,
};

#define IPCQ_CPU_A_MAX (__IPCQ_CPU_A_MAX - 1)

/* IPCQ_A_FLAGS of ATTACH: bits */
enum ipcq_attach_flags {
	/*
	 * Detach the disk when the socket that attached it is closed, for
	 * whatever reason (a daemon killed with -9 included).
	 */
	IPCQ_ATTACH_F_OWNED = 1U << 0,
};

#define IPCQ_ATTACH_F_ALL	IPCQ_ATTACH_F_OWNED

/* IPCQ_CMD_EVENT carries IPCQ_A_EVENT, IPCQ_A_DISK, MAJOR and MINOR. */
enum ipcq_event {
	IPCQ_EVENT_UNSPEC,
	IPCQ_EVENT_ATTACH,	/* + IPCQ_A_NR_HWQ */
	IPCQ_EVENT_DETACH,
	IPCQ_EVENT_REMOVED,	/* the disk went away; it is detached */
	IPCQ_EVENT_STALL,	/* + IPCQ_A_HWQ, IPCQ_A_WAIT_NS */
};

#endif /* _UAPI_IRQPILOT_CQ_H */
