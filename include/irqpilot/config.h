/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_CONFIG_H
#define IRQPILOT_CONFIG_H

/*
 * The policy file, /etc/irqpilot/irqpilot.conf (irqpilot.conf(5)): INI
 * read with inih. Loading never touches a live configuration: the daemon
 * loads into a fresh struct and swaps only when that succeeded, so a bad
 * file on reload keeps the running policy.
 */

#include <stdbool.h>
#include <stdio.h>

#include "irqpilot/diag.h"
#include "irqpilot/policy.h"
#include "irqpilot/topology.h"

#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#define IP_CONFIG_DEFAULT_PATH SYSCONFDIR "/irqpilot/irqpilot.conf"

/* Whether the kernel module runs block completions in per-domain threads. */
enum ip_completion_threads {
	IP_COMPLETION_INHERIT = -1, /* per-device only: use [policy] completion_threads */
	IP_COMPLETION_AUTO = 0,
	IP_COMPLETION_YES,
	IP_COMPLETION_NO,
};

struct ip_daemon_config {
	double interval_s; /* sampling period, 0.1 .. 3600 */
	bool dry_run;
	bool restore_on_exit;
	int log_level; /* syslog priority, LOG_ERR .. LOG_DEBUG */
	bool coexist;  /* start even when irqbalance is active */
	/* Polling-pathology warning: a storage IRQ thread that wakes more
	 * than this many times per interrupt (0 = never warn) ... */
	double top_wakeups_per_irq;
	/* ... or uses more than this percent of a CPU (0 = never warn). */
	double top_thread_cpu;
};

/* [control]: who may change the daemon's state through irqctl. */
#define IP_GROUP_NAME_MAX 33 /* 32 characters, as shadow's useradd allows, and the NUL */
struct ip_control_config {
	char admin_group[IP_GROUP_NAME_MAX]; /* "" = root only */
};

/*
 * What struct ip_rule has no field for. dev_extra[i] belongs to
 * policy.dev_rules[i]; both arrays always have policy.nr_dev_rules entries.
 */
struct ip_dev_extra {
	char *match; /* same glob as the rule, owned */
	enum ip_completion_threads completion_threads;
};

struct ip_config {
	struct ip_daemon_config daemon;
	struct ip_control_config control;
	struct ip_cpu_overrides overrides;
	struct ip_policy_config policy; /* [cpus] banned lands in policy.banned */
	enum ip_completion_threads completion_threads; /* never INHERIT */
	struct ip_dev_extra *dev_extra;
};

/* Built-in defaults: what the daemon runs on without any file. */
void ip_config_init(struct ip_config *c);
void ip_config_free(struct ip_config *c);

/*
 * Both return 0 and replace *out (freeing what it held) with the parsed
 * configuration, or a negative errno with *out untouched and @d holding
 * "NAME:LINE: what is wrong" for the first error (with a count of the
 * others). A missing file is -ENOENT; whether that matters is the
 * caller's business (the default path may be absent, --config may not).
 */
int ip_config_load_file(const char *path, struct ip_config *out, struct ip_diag *d);
int ip_config_load_string(const char *text, const char *name, struct ip_config *out,
			  struct ip_diag *d);

/*
 * Writes the effective configuration as INI that loads back to an equal
 * configuration. Returns 0 or -EIO.
 */
int ip_config_dump(const struct ip_config *c, FILE *f);

/* Deep comparison, for the round-trip test and for logging what a reload
 * changed. */
bool ip_config_equal(const struct ip_config *a, const struct ip_config *b);

/* The completion_threads in force for block device @device: the last
 * matching [device] section that sets it, else the [policy] value. */
enum ip_completion_threads ip_config_completion_threads(const struct ip_config *c,
							 const char *device);

#endif
