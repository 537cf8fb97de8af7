/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_TOPOLOGY_H
#define IRQPILOT_TOPOLOGY_H

#include <stdbool.h>

#include "irqpilot/cpuset.h"
#include "irqpilot/diag.h"
#include "irqpilot/root.h"

/* Where the capacity classes came from: the first source that tells CPUs
 * apart wins (see KERNEL-NOTES: cpu_capacity, hybrid PMUs, max freq). */
enum ip_cap_source {
	IP_CAP_UNIFORM = 0, /* nothing tells CPUs apart: one class */
	IP_CAP_CPU_CAPACITY,
	IP_CAP_HYBRID_PMU,
	IP_CAP_MAX_FREQ,
	IP_CAP_CONFIG,
};
const char *ip_cap_source_name(enum ip_cap_source s);

/* The label of a domain, relative to the other domains of the machine. */
enum ip_cap_class {
	IP_CLASS_EFFICIENCY = 0,
	IP_CLASS_MID,
	IP_CLASS_PERFORMANCE,
};
const char *ip_cap_class_name(enum ip_cap_class c);

struct ip_cpu {
	int id;
	bool present, online, isolated, nohz_full;
	int core;        /* topology/core_id, -1 if unknown */
	int package;     /* topology/physical_package_id, -1 */
	int node;        /* NUMA node from nodeN/cpuM or cpuN/nodeM, 0 if none */
	int cluster;     /* lowest CPU of topology/cluster_cpus_list, -1 */
	int llc;         /* lowest CPU sharing the highest-level cache, -1 */
	int freq_policy; /* N of cpufreq/policyN holding it, -1 */
	unsigned max_freq_khz; /* cpufreq/cpuinfo_max_freq, 0 */
	unsigned capacity;     /* raw value of the chosen source (1024 scale for cpu_capacity) */
	ip_cpuset smt;   /* topology/core_cpus_list (thread_siblings_list), includes itself */
	int domain;      /* index into ip_topology.domains, -1 if offline */
};

/*
 * A domain: online CPUs of one capacity class that share a cluster (or,
 * failing that, an LLC). The unit a vector is steered to.
 */
struct ip_domain {
	int id;
	ip_cpuset cpus;
	unsigned capacity; /* of its CPUs */
	enum ip_cap_class cls;
	int llc, cluster, package, node;
};

/* Overrides from the policy file ([cpus] performance/efficiency). */
struct ip_cpu_overrides {
	bool have_performance, have_efficiency;
	ip_cpuset performance, efficiency;
};

struct ip_topology {
	int nr_cpus; /* highest possible CPU id + 1; cpus[] has this many */
	struct ip_cpu *cpus;
	ip_cpuset possible, present, online, isolated, nohz_full;
	enum ip_cap_source cap_source;
	int nr_domains;
	struct ip_domain *domains; /* sorted by capacity descending, then lowest CPU */
	bool forced_threading;     /* threadirqs on the command line, or PREEMPT_RT */
	/* proc/sys/kernel/osrelease as IP_KERNEL_VERSION(), 0 if unknown: blk-mq's
	 * choice of completion CPU changed with it (6.9, af550e4c9682). */
	unsigned kernel_version;
	/* isolcpus= and nohz_full= of proc/cmdline, which cannot change while
	 * the kernel runs: parsed with the topology, not at every refresh */
	bool cmdline_have_isolcpus, cmdline_have_nohz_full;
	ip_cpuset cmdline_isolcpus, cmdline_nohz_full;
	/* sysfs isolated with isolcpus=: fixed at boot, read with the
	 * topology; isolated adds the cgroup v2 isolated partitions to it */
	ip_cpuset boot_isolated;
	/* Set in a copy made by ip_topology_copy_shared(): cpus and domains
	 * are not its own but counted, and freed with their last user. */
	struct ip_topology_share *share;
};

#define IP_KERNEL_VERSION(a, b, c) (((unsigned)(a) << 16) + ((unsigned)(b) << 8) + (unsigned)(c))

/* "6.1.0-57-amd64\n" -> IP_KERNEL_VERSION(6, 1, 0); 0 for anything that does
 * not start with MAJOR.MINOR (the patch level may be missing: "6.12-rc3"). */
unsigned ip_parse_osrelease(const char *text, size_t len);

/*
 * Reads sys/devices/system/cpu/ (and cpu_core/cpu_atom, cpufreq, the
 * kernel command line, sys/kernel/realtime, proc/sys/kernel/version)
 * under @r and derives the capacity classes and domains. @ov may be
 * NULL. Missing optional files are not errors; a missing or garbled
 * possible/online list is.
 */
int ip_topology_sample(struct ip_root *r, const struct ip_cpu_overrides *ov, struct ip_topology *t,
		       struct ip_diag *d);
/*
 * Read again only the set that changes at run time: the isolated CPUs,
 * t->boot_isolated (sysfs isolated and isolcpus=, as ip_topology_sample()
 * read them) with cgroup v2 cpuset.cpus.isolated, into @t and its cpus[].
 * The boot options' sets (sysfs isolated, nohz_full; drivers/base/cpu.c
 * prints what isolcpus= and nohz_full= set up in kernel/sched/isolation.c)
 * are read with the rest by ip_topology_sample(). Domains do not depend
 * on them. On error @t is left as it was.
 */
int ip_topology_refresh_isolation(struct ip_root *r, struct ip_topology *t, struct ip_diag *d);
/* Whether that set, read again, differs from @t's (@t is not changed). */
int ip_topology_isolation_changed(struct ip_root *r, const struct ip_topology *t, bool *changed,
				  struct ip_diag *d);
/* Recompute classes and domains (e.g. after overrides changed). */
int ip_topology_derive(struct ip_topology *t, const struct ip_cpu_overrides *ov, struct ip_diag *d);
void ip_topology_free(struct ip_topology *t);

/*
 * @dst becomes a copy of @src whose cpus[] and domains[] are shared with
 * the other copies made through @cache while @src reads the same: each
 * snapshot holds a copy, and at 1,024 CPUs one is ~180 KB. A topology that
 * changed (hot-plug, an isolated partition) gets new arrays; the copies
 * that hold the old ones keep them. The copies must not be written to.
 * ip_topology_free() frees a copy; ip_topology_share_drop() the cache's
 * own reference.
 */
int ip_topology_copy_shared(struct ip_topology *dst, const struct ip_topology *src,
			    struct ip_topology_share **cache);
void ip_topology_share_drop(struct ip_topology_share **cache);

/* Domain index of @cpu, or -1. */
int ip_topology_domain_of(const struct ip_topology *t, int cpu);

#endif
