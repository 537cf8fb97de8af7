/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Generic netlink interface of irqpilot_cq.ko, shared by the module and
 * irqpilotd. Only <linux/types.h>: it must build in user space too.
 */
#ifndef _UAPI_IRQPILOT_CQ_H
#define _UAPI_IRQPILOT_CQ_H

#include <linux/types.h>

#define IPCQ_GENL_NAME		"irqpilot_cq"
#define IPCQ_GENL_VERSION	1
#define IPCQ_GENL_MCGRP_EVENTS	"events"

/*
 * ATTACH and DETACH name a whole disk by IPCQ_A_DISK ("sda", "nvme0n1"),
 * by IPCQ_A_MAJOR + IPCQ_A_MINOR, or both (then they must agree). They
 * need CAP_NET_ADMIN.
 *
 * LIST is a dump: one IPCQ_CMD_LIST message per completion thread.
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
	IPCQ_A_PID,		/* u32: pid of the completion thread */
	IPCQ_A_COMPLETIONS,	/* u64: requests completed by the thread */
	IPCQ_A_WAKEUPS,		/* u64: times the thread slept and was woken */
	IPCQ_A_MAX_WAIT_NS,	/* u64: longest time a request waited for it */
	IPCQ_A_STALLS,		/* u64: stall guard trips */
	IPCQ_A_FALLBACKS,	/* u64: requests completed on the original path
				 * because the thread was stalled
				 */
	/*
	 * Nested: completions of the thread per submitting CPU. Each inner
	 * attribute is a u64 whose type is the CPU number plus one; CPUs
	 * with no completion are left out. Type 0 is padding: skip it.
	 */
	IPCQ_A_CPU_COMPLETIONS,
	IPCQ_A_EVENT,		/* u32: enum ipcq_event */
	IPCQ_A_WAIT_NS,		/* u64: stall event: wait of the oldest request */

	__IPCQ_A_MAX,
};

#define IPCQ_A_MAX (__IPCQ_A_MAX - 1)

/* IPCQ_CMD_EVENT carries IPCQ_A_EVENT, IPCQ_A_DISK, MAJOR and MINOR. */
enum ipcq_event {
	IPCQ_EVENT_UNSPEC,
	IPCQ_EVENT_ATTACH,	/* + IPCQ_A_NR_HWQ */
	IPCQ_EVENT_DETACH,
	IPCQ_EVENT_REMOVED,	/* the disk went away; it is detached */
	IPCQ_EVENT_STALL,	/* + IPCQ_A_HWQ, IPCQ_A_WAIT_NS */
};

#endif /* _UAPI_IRQPILOT_CQ_H */
