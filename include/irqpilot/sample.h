/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_SAMPLE_H
#define IRQPILOT_SAMPLE_H

#include <stdbool.h>

#include "irqpilot/diag.h"
#include "irqpilot/model.h"
#include "irqpilot/root.h"
#include "irqpilot/topology.h"

/*
 * The sampler reads one snapshot at a time through a root. It caches what
 * rarely changes (topology, the storage scan, which PIDs are IRQ threads)
 * and reads it again only when a cheap signature says it changed (the
 * online CPU list, the set of IRQ numbers and names) or when told to
 * (hot-plug).
 */
struct ip_sampler;

struct ip_sampler_opts {
	struct ip_cpu_overrides overrides;
	/* Whether a line that is not a storage vector is tracked all the
	 * same (named by an [irq NAME] rule or an irqctl pin): its affinity
	 * and per-CPU counts are read every sample, so that the policy can
	 * tell whether it already sits where it should. @actions is the
	 * line's action names as /proc/interrupts gives them. NULL: none. */
	bool (*track)(void *ctx, unsigned irq, const char *actions);
	void *track_ctx;
	/* Live submission counters (perf tracepoints, task sampling) are only
	 * meaningful on the live root; off for fixtures and replays. */
	bool live_counters;
	/* Read /proc/interrupts every sample, never the per-vector
	 * /sys/kernel/irq/N/per_cpu_count fast path (tests compare the two). */
	bool full_scan_always;
};

int ip_sampler_new(struct ip_root *r, const struct ip_sampler_opts *o, struct ip_sampler **out);
void ip_sampler_free(struct ip_sampler *s);
/* Use another root from now on (the next replay step); drops the caches. */
void ip_sampler_set_root(struct ip_sampler *s, struct ip_root *r);
/* Drop the caches so the next sample reads everything again. */
void ip_sampler_invalidate(struct ip_sampler *s);
/* irqpilotd wrote the affinity of @irq: the next sample reads its
 * effective affinity again rather than trust what it read before. */
void ip_sampler_forget_irq(struct ip_sampler *s, unsigned irq);
/* irqpilotd changed thread @pid's affinity or scheduling: the next sample
 * reads its stat again rather than hold it. */
void ip_sampler_forget_thread(struct ip_sampler *s, pid_t pid);
/* What opts.track says has changed (a pin, a reload): the next sample
 * reads all of /proc/interrupts and asks it again for every line. */
void ip_sampler_retrack(struct ip_sampler *s);
/* Describe the submission source in use, e.g. "perf tracepoints". */
const char *ip_sampler_submit_source(const struct ip_sampler *s);
struct ip_counters;
/* The submission counters it samples, for their idle wakeup (counters.h). */
struct ip_counters *ip_sampler_counters(struct ip_sampler *s);

/*
 * Something the operator should hear once (a truncated per_cpu_count that
 * made the sampler fall back to /proc/interrupts); NULL when nothing new.
 * Each note is given out once.
 */
const char *ip_sampler_take_note(struct ip_sampler *s);
/* Samples so far that read all of /proc/interrupts, and that did not. */
void ip_sampler_scan_counts(const struct ip_sampler *s, unsigned long *full, unsigned long *fast);
/* The CPU time the last full scan spent reading /proc/interrupts (0 before
 * the first), and the period it set (ip_full_scan_period_ns()). */
void ip_sampler_full_scan_cost(const struct ip_sampler *s, uint64_t *cpu_ns, uint64_t *period_ns);

/*
 * When nothing else asks for it (start, a uevent, a tracked vector gone),
 * all of /proc/interrupts is read again after this long: 60 s, or, where
 * one read of it took @scan_cpu_ns of CPU time such that 60 s would spend
 * more than 1/IP_FULL_SCAN_SHARE of one CPU on it, so long that it spends
 * that share, at most IP_FULL_SCAN_MAX_NS.
 */
#define IP_FULL_SCAN_SHARE 1000
#define IP_FULL_SCAN_MAX_NS (UINT64_C(600) * 1000000000u)
uint64_t ip_full_scan_period_ns(uint64_t scan_cpu_ns);

int ip_sampler_sample(struct ip_sampler *s, struct ip_snapshot *out, struct ip_diag *d);

/*
 * The idle back-off's probe, between full samples (idle.h): @ios is every
 * disk's completed I/Os in /proc/diskstats, and @cpus_changed whether the
 * CPUs a placement depends on (online, isolated, nohz_full) differ from
 * the last sample's, true also before the first. A few small files, read
 * through kept fds; no snapshot, and the caches stay as they are.
 */
int ip_sampler_probe(struct ip_sampler *s, uint64_t *ios, bool *cpus_changed, struct ip_diag *d);
/* The files the probe reads (and *@n of them), for a watch on a tree that
 * tells when one changes (watch.h) instead of a probe on a timer. */
const char *const *ip_sampler_probe_paths(int *n);
/* The files every full sample reads that a kernel rewrites while storage
 * I/O runs, beyond the probe's: on a tree, none of them written since the
 * last full sample means that one now would read what that one read. */
const char *const *ip_sampler_activity_paths(int *n);

#endif
