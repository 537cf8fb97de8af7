/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_CQCLIENT_H
#define IRQPILOT_CQCLIENT_H

/*
 * The generic netlink client of irqpilot_cq.ko (include/uapi/irqpilot_cq.h):
 * attach and detach disks, list the completion threads, and follow the
 * "events" multicast group. The module is optional: when its family is not
 * registered, ip_cq_open() returns -IP_CQ_ABSENT and the caller goes on
 * without it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "irqpilot/diag.h"

/* Returned (negated) when the irqpilot_cq family is not registered. It is
 * not an errno value, so it cannot be confused with a real failure. */
#define IP_CQ_ABSENT 4096

/* One completion thread, as IPCQ_CMD_LIST reports it. */
struct ip_cq_entry {
	char disk[32];
	unsigned major, minor;
	unsigned hwq, nr_hwq;
	pid_t pid;
	bool have_counts; /* the module shows counts only to CAP_SYS_ADMIN */
	uint64_t completions, wakeups, max_wait_ns, stalls, fallbacks;
	int nr_cpus;	/* entries of cpu_completions */
	uint64_t *cpu_completions; /* by submitting CPU */
};

struct ip_cq_list {
	int n;
	struct ip_cq_entry *e;
};

void ip_cq_list_free(struct ip_cq_list *l);

enum ip_cq_event_kind {
	IP_CQ_EV_UNKNOWN = 0,
	IP_CQ_EV_ATTACH,
	IP_CQ_EV_DETACH,
	IP_CQ_EV_REMOVED,
	IP_CQ_EV_STALL,
};
const char *ip_cq_event_name(enum ip_cq_event_kind k);

struct ip_cq_event {
	enum ip_cq_event_kind kind;
	char disk[32];
	unsigned major, minor;
	int hwq;	  /* stall: the queue, else -1 */
	unsigned nr_hwq;  /* attach */
	uint64_t wait_ns; /* stall: wait of the oldest request */
};

struct ip_cq;
struct ip_root;

/*
 * Whether the module is loaded, from @r's sys/module/irqpilot_cq, which
 * the kernel makes before the module's init registers the family
 * (kernel/module/sysfs.c, mod_sysfs_init()). Ask this before
 * ip_cq_open() on every cycle: resolving a family that is not registered
 * makes the kernel run modprobe for "net-pf-16-proto-16-family-NAME" and
 * wait for it (net/netlink/genetlink.c, ctrl_getfamily()), a process
 * spawned per lookup, which under TCG cost fio 10-14% at a 2 s cycle.
 */
bool ip_cq_loaded(struct ip_root *r);

/* Resolves the family on a new socket. -IP_CQ_ABSENT when the module is
 * not loaded; another negative errno when generic netlink itself fails. */
int ip_cq_open(struct ip_cq **out, struct ip_diag *d);
void ip_cq_close(struct ip_cq *c);

int ip_cq_attach(struct ip_cq *c, unsigned major, unsigned minor, struct ip_diag *d);
/*
 * IP_CQ_ATTACH_OWNED: the module detaches the disk by itself once this
 * client's socket closes, even when the process is killed with -9. Use it
 * only on a client that lives as long as the attachment should.
 */
#define IP_CQ_ATTACH_OWNED 1u
int ip_cq_attach_flags(struct ip_cq *c, unsigned major, unsigned minor, unsigned flags,
		       struct ip_diag *d);
int ip_cq_detach(struct ip_cq *c, unsigned major, unsigned minor, struct ip_diag *d);
/* Every completion thread; @nr_cpus sizes each cpu_completions array
 * (counts of higher CPUs are dropped). */
int ip_cq_list(struct ip_cq *c, int nr_cpus, struct ip_cq_list *out, struct ip_diag *d);

/*
 * One IPCQ_CMD_LIST message into @l: a new entry, or the rest of the last
 * entry's per-CPU counts when the module split a thread over several
 * messages. 0 when taken, 1 when not a LIST message of a thread (skipped),
 * -ENOMEM. Exposed for the tests.
 */
struct nlmsghdr;
int ip_cq_list_parse(const struct nlmsghdr *nlh, int nr_cpus, struct ip_cq_list *l);

/*
 * Events: ip_cq_subscribe() opens a second socket joined to the "events"
 * group and returns its fd (non-blocking) for an event loop; when it is
 * readable, ip_cq_read_events() hands each pending event to @cb.
 */
int ip_cq_subscribe(struct ip_cq *c, struct ip_diag *d);
int ip_cq_event_fd(const struct ip_cq *c);
int ip_cq_read_events(struct ip_cq *c, void (*cb)(void *ctx, const struct ip_cq_event *ev),
		      void *ctx);

/*
 * The request ip_cq_attach/detach/list send, as raw bytes: version 2,
 * MAJOR + MINOR (no name), IPCQ_A_FLAGS for IP_CQ_ATTACH_OWNED. Port and
 * sequence are left 0. Returns its length, 0 if @size < IP_CQ_REQUEST_MAX.
 * Exposed for the tests.
 */
#define IP_CQ_REQUEST_MAX 64
size_t ip_cq_encode_request(void *buf, size_t size, int family, uint8_t cmd, unsigned major,
			    unsigned minor, unsigned flags);

#endif
