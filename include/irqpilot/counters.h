/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_COUNTERS_H
#define IRQPILOT_COUNTERS_H

#include <stdbool.h>

#include "irqpilot/diag.h"
#include "irqpilot/model.h"
#include "irqpilot/root.h"

/*
 * Where each device's I/O is submitted and completed, per CPU, as
 * cumulative counts. In order of preference:
 *  - a replay step's irqpilot/submit and irqpilot/complete files;
 *  - perf tracepoint counters (block:block_bio_queue, block:block_rq_complete)
 *    per CPU, filtered to the device, on the live machine;
 *  - /proc task sampling: each device's diskstats I/O apportioned to CPUs by
 *    the I/O bytes of the tasks that last ran there;
 *  - for completions, the device's vectors' interrupts per CPU.
 */
struct ip_counters;

int ip_counters_new(bool live, struct ip_counters **out);
void ip_counters_free(struct ip_counters *c);
const char *ip_counters_describe(const struct ip_counters *c);
/* Fills snap->dc[*].submit/complete (snap->storage and irqs are set).
 * IP_COUNTERS_UNREADABLE: a recorded count did not parse, @d says where;
 * the sample has no submission counts, and is good otherwise. */
#define IP_COUNTERS_UNREADABLE 1
int ip_counters_sample(struct ip_counters *c, struct ip_root *r, struct ip_snapshot *snap,
		       struct ip_diag *d);

/*
 * The idle wakeup (perfwake.h), only while perf counts submissions: one
 * block:block_bio_queue event per online CPU, filtered to the tracked
 * devices, whose fd becomes readable at the first bio after arming.
 * _count() gives how many fds there are (0: none; _why() says why) and
 * *gen, which changes whenever they are reopened (devices, CPUs).
 */
int ip_counters_wake_count(const struct ip_counters *c, unsigned *gen);
int ip_counters_wake_fd(const struct ip_counters *c, int i);
/* Arms the events of the CPUs not in @skip (NULL: all) and disarms the
 * others (the held cycle's wakeup, idle.h). Returns how many are armed, or
 * -errno with none armed. */
int ip_counters_wake_arm_except(struct ip_counters *c, const ip_cpuset *skip);
/* Disarms all; the first error, having tried every one. */
int ip_counters_wake_disarm(struct ip_counters *c);
/* Of the last sample's perf counter groups (one per CPU, for up to 128
 * devices), how many were read and how many kept their last read's counts
 * because the CPU's armed wakeup saw no bio since (counters.c). */
void ip_counters_perf_reads(const struct ip_counters *c, int *read, int *kept);
bool ip_counters_wake_armed(const struct ip_counters *c, int i);
const char *ip_counters_wake_why(const struct ip_counters *c);

#endif
