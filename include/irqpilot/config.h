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

#define IP_CONF_PATH_MAX 256 /* a path setting, including the NUL */
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
	/* node_exporter's textfile collector: where each cycle's metrics are
	 * written (atomically, by a rename); "" = nowhere. Absolute. */
	char metrics_textfile[IP_CONF_PATH_MAX];
};

/* [control]: who may change the daemon's state through irqctl. */
#define IP_GROUP_NAME_MAX 33 /* 32 characters, as shadow's useradd allows, and the NUL */
struct ip_control_config {
	char admin_group[IP_GROUP_NAME_MAX]; /* "" = root only */
};

struct ip_config {
	struct ip_daemon_config daemon;
	struct ip_control_config control;
	struct ip_cpu_overrides overrides;
	/* [cpus] banned lands in policy.banned; [device] and [irq] sections are
	 * policy.dev_rules and irq_rules. policy.interval_s is the one field
	 * no key writes: irqpilotd sets it, from [daemon] interval or from
	 * --interval. */
	struct ip_policy_config policy;
};

/* ---- the keys ---------------------------------------------------------
 *
 * One table says, for each key of each kind of section, how it is parsed,
 * where it is stored (offsetof), its range and default and what it means:
 * parsing, ip_config_dump(), ip_config_equal() and the test that
 * irqpilot.conf(5) documents every key all walk it, so a key cannot be
 * added to one and forgotten in another.
 */
enum ip_config_section {
	IP_SECT_NONE = 0, /* before the first header */
	IP_SECT_DAEMON,
	IP_SECT_CONTROL,
	IP_SECT_CPUS,
	IP_SECT_POLICY,
	IP_SECT_DEVICE,
	IP_SECT_IRQ,
	IP_SECT_MAX,
};
#define IP_SECT_BIT(s) (1u << (s))

/* "daemon", "device", ...; "" for IP_SECT_NONE. */
const char *ip_config_section_name(enum ip_config_section s);

enum ip_config_type {
	IP_CONF_BOOL,	/* bool: yes/no, true/false, on/off, 1/0 */
	IP_CONF_NUMBER, /* double: a plain decimal from min to max, stored / scale */
	IP_CONF_INT,	/* int: a whole number from min to max */
	IP_CONF_ENUM,	/* int-sized enum: one of choices' names */
	IP_CONF_CPUS,	/* ip_cpuset: a CPU list */
	IP_CONF_GROUP,	/* char[IP_GROUP_NAME_MAX]: a group name */
	IP_CONF_PATH,	/* char[IP_CONF_PATH_MAX]: an absolute file path */
};

/* One enum setting's names, in the order parse errors list them. */
struct ip_config_enum {
	const char *const *names;
	const int *values; /* NULL: the values are 0, 1, ... */
	size_t n;
};

/* Which struct a key's offset is into. */
enum ip_config_base {
	IP_CONF_BASE_CONFIG, /* struct ip_config */
	IP_CONF_BASE_RULE,   /* struct ip_rule of the section's rule */
};

struct ip_config_parser;

struct ip_config_key {
	unsigned sections; /* IP_SECT_BIT()s where the key may be written */
	const char *key;
	enum ip_config_type type;
	double min, max; /* NUMBER, INT: as written */
	double scale;	 /* NUMBER: 100 stores a percentage as a fraction; 0 = 1 */
	const char *note; /* appended to a range error */
	const struct ip_config_enum *choices; /* ENUM */
	bool allow_empty;		      /* CPUS: "" is the empty set */
	/* As written; ip_config_init() applies it. NULL: none, which is
	 * all-zero (admin_group: root only), unset (rule keys) or detected
	 * (performance, efficiency). */
	const char *def;
	enum ip_config_base base;
	size_t offset;
	bool has_flag; /* CPUS: a bool at flag_offset says whether it is set */
	size_t flag_offset;
	/* Dumped only when set: a flag, a non-empty group, a true bool, an
	 * int or enum other than -1 (the rules' "unset"). */
	bool optional;
	/* Refuses a well-formed value that conflicts with another key (perr)
	 * before it is stored. */
	bool (*check)(struct ip_config_parser *p, const struct ip_config_key *k, const void *val);
	const char *doc;
};

const struct ip_config_key *ip_config_keys(size_t *n);

/* Built-in defaults: what the daemon runs on without any file. */
void ip_config_init(struct ip_config *c);
void ip_config_free(struct ip_config *c);

/*
 * Returns 0 and replaces *out (freeing what it held) with the parsed
 * configuration, or a negative errno with *out untouched and @d holding
 * "NAME:LINE: what is wrong" for the first error (with a count of the
 * others).
 */
int ip_config_load_string(const char *text, const char *name, struct ip_config *out,
			  struct ip_diag *d);

/*
 * The same for a file. A missing file is an error only when the user named
 * it (@explicit: --config, --check-config FILE); the default path may be
 * absent, and then *out becomes the built-in defaults and the return is
 * IP_CONFIG_ABSENT (with @d saying so), for callers that tell the user.
 */
#define IP_CONFIG_ABSENT 1
int ip_config_load_file(const char *path, bool explicit, struct ip_config *out,
			struct ip_diag *d);

/*
 * Writes the effective configuration as INI that loads back to an equal
 * configuration. Returns 0 or -EIO.
 */
int ip_config_dump(const struct ip_config *c, FILE *f);

/* Deep comparison, for the round-trip test and for logging what a reload
 * changed. */
bool ip_config_equal(const struct ip_config *a, const struct ip_config *b);

#endif
