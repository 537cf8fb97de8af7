/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_PERFWAKE_H
#define IRQPILOT_PERFWAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct perf_event_attr;

/*
 * A perf event whose fd the kernel makes readable (EPOLLIN) at the first
 * event after it is armed, so that a poller needs no timer. perf_poll()
 * reports only its ring buffer's wakeups (an event without one is always
 * EPOLLHUP), so the event gets the smallest buffer, one data page, mapped
 * read-only: the kernel then overwrites it (no tail to keep) and raises a
 * wakeup every wakeup_events = 1 samples. Disarmed
 * (PERF_EVENT_IOC_DISABLE), the event costs nothing per occurrence and
 * wakes no one.
 */
struct ip_perf_wake {
	int fd;
	int cpu; /* as opened (-1: any) */
	void *rb;
	size_t rb_len;
	bool armed;
	uint64_t head_armed; /* the buffer's data_head when last armed */
};

#define IP_PERF_WAKE_INIT { .fd = -1, .cpu = -1 }

/* @attr's type and config (and exclude_* bits) are the caller's; the
 * sampling fields are set here. @filter (a tracepoint's) may be NULL.
 * Returns 0 or -errno; on failure @w is closed. */
int ip_perf_wake_open(struct ip_perf_wake *w, const struct perf_event_attr *attr, pid_t pid, int cpu,
		      const char *filter);
/* Arming starts a fresh round: a wakeup left from before (samples written
 * after the caller's last poll, before it disarmed) is dropped first. */
int ip_perf_wake_arm(struct ip_perf_wake *w, bool on);
/* True while armed with no event since: the kernel has written no sample
 * to the buffer (its data_head, in the mapped header page, is where it was
 * at arming). A memory read, no system call: with a sample period of 1 it
 * says that nothing the event counts has happened on its CPU. */
bool ip_perf_wake_quiet(const struct ip_perf_wake *w);
void ip_perf_wake_close(struct ip_perf_wake *w);

#endif
