/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_METRICS_H
#define IRQPILOT_METRICS_H

/*
 * What irqctl metrics and [daemon] metrics_textfile export: counters the
 * daemon accumulates from every cycle over its whole life, and the last
 * cycle's gauges. The daemon owns one struct ip_metrics; report.c renders
 * it (ip_report_metrics_text). Counters only ever grow: a series whose
 * device, domain or queue goes away keeps its last value, so a scrape
 * never sees one go down while the daemon runs.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "irqpilot/engine.h"
#include "irqpilot/policy.h"

/* errnos counted one by one; a larger one (none exists) is not counted */
#define IP_METRICS_ERRNO_MAX 256

/* One device in one domain (a domain is named by its CPU list, which
 * stays the same when a hot-plug renumbers the domains). */
struct ip_metrics_devdom {
	char device[32];
	char *domain;
	uint64_t interrupts;	/* of the device's vectors, handled in the domain */
	double submissions;	/* of the device's I/O, from the domain's CPUs (may be apportioned) */
};

/* The last cycle's share of a device's completions in its submitters'
 * domain. */
struct ip_metrics_dev {
	char device[32];
	double locality; /* 0..1 */
};

/* An irqpilot_cq completion thread, by disk and hardware queue. */
struct ip_metrics_cq {
	char disk[32];
	unsigned hwq;
	/* the module's cumulative counts at the last look, per thread */
	pid_t pid;
	uint64_t seen_completions, seen_wakeups, seen_stalls;
	/* the daemon's counters, which outlive a detach and a reload of the module */
	uint64_t completions, wakeups, stalls;
	bool present;		/* in the last cycle */
	bool have_rate;
	double rate;		/* completions per second, last cycle */
	uint64_t max_wait_ns;	/* the module's longest wait */
};

/* A domain's CPU list as text, the key of its devdom entries. */
struct ip_metrics_domlist {
	ip_cpuset cpus;
	char *text;
};

struct ip_metrics {
	/* counters */
	uint64_t cycles;
	uint64_t moves[IP_R_COUNT];	/* by reason code */
	uint64_t apply_errors[IP_METRICS_ERRNO_MAX]; /* by errno */
	size_t nr_devdom;
	struct ip_metrics_devdom *devdom;
	size_t nr_cq;
	struct ip_metrics_cq *cq;
	/* gauges of the last cycle */
	size_t nr_dev;
	struct ip_metrics_dev *dev;
	int managed;		/* storage vectors the kernel manages */
	bool have_cycle;
	double cycle_s;		/* how long the last cycle took */
	bool cq_loaded;
	/* filled in just before rendering */
	double cpu_s;		/* the daemon's user + system CPU time */
	unsigned long full_scans, fast_scans; /* samples that read all of /proc/interrupts, and not */
	uint64_t full_scan_cpu_ns, full_scan_period_ns; /* ip_sampler_full_scan_cost() */
	/* each domain's list, by domain index, formatted again only when its
	 * CPUs change: once a cycle it was a small machine's cycle 2.5% */
	int nr_domlist;
	struct ip_metrics_domlist *domlist;
};

void ip_metrics_init(struct ip_metrics *mx);
void ip_metrics_free(struct ip_metrics *mx);
/*
 * Adds what the cycle @st saw: interrupts and submissions per device and
 * domain, apply errors, the completion threads' counts; and replaces the
 * gauges. Moves are counted where they are reported (ip_metrics_move), so
 * that they agree with the status's count. Returns 0 or -ENOMEM (the
 * counters are then short by what could not be kept, never wrong).
 */
int ip_metrics_update(struct ip_metrics *mx, const struct ip_step *st);
void ip_metrics_move(struct ip_metrics *mx, const struct ip_move *m);

#endif
