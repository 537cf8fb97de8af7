// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * CPU topology: which CPUs exist, how they share caches and clusters, how
 * fast they are relative to each other, and from that the domains that
 * vectors are steered to.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/macro.h"
#include "irqpilot/topology.h"

#define CPU_DIR "sys/devices/system/cpu/"
#define NODE_DIR "sys/devices/system/node"
#define CGROUP_ISOLATED "sys/fs/cgroup/cpuset.cpus.isolated"

/* Synthetic capacities for sources that have no numeric value of their own;
 * only their order matters. */
#define CAP_FULL 1024u
#define CAP_MID 512u
#define CAP_LOW 256u

/*
 * Values within this many percent of a class's fastest member join that
 * class. Turbo Boost Max 3.0 "favoured cores" report a max frequency (and
 * on 6.18 a cpu_capacity) a few percent above their siblings; they are the
 * same kind of core and must not become a class of their own.
 */
#define CAP_BAND_PCT 5u

const char *ip_cap_source_name(enum ip_cap_source s)
{
	switch (s) {
	case IP_CAP_UNIFORM:
		return "uniform";
	case IP_CAP_CPU_CAPACITY:
		return "cpu_capacity";
	case IP_CAP_HYBRID_PMU:
		return "hybrid_pmu";
	case IP_CAP_MAX_FREQ:
		return "max_freq";
	case IP_CAP_CONFIG:
		return "config";
	}
	return "unknown";
}

const char *ip_cap_class_name(enum ip_cap_class c)
{
	switch (c) {
	case IP_CLASS_EFFICIENCY:
		return "efficiency";
	case IP_CLASS_MID:
		return "mid";
	case IP_CLASS_PERFORMANCE:
		return "performance";
	}
	return "unknown";
}

/* 6.1 prints nohz_full as "(null)" when the boot option is not given. */
static int parse_cpulist_text(const char *text, ip_cpuset *s)
{
	const char *p = text;

	while (*p == ' ' || *p == '\t')
		p++;
	if (strncmp(p, "(null)", 6) == 0) {
		for (p += 6; *p; p++)
			if (!isspace((unsigned char)*p))
				return -EINVAL;
		cpuset_zero(s);
		return 0;
	}
	return cpuset_parse_list(s, text);
}

/* cpufreq's related_cpus is "0 1 2 3 \n"; accept a cpulist as well. */
static int parse_spaced_list(const char *text, ip_cpuset *s)
{
	_cleanup_free_ char *buf = malloc(strlen(text) + 1);
	bool sep = false;
	size_t n = 0;

	if (!buf)
		return -ENOMEM;
	for (const char *p = text; *p; p++) {
		if (isspace((unsigned char)*p)) {
			sep = n > 0;
			continue;
		}
		if (sep)
			buf[n++] = ',';
		sep = false;
		buf[n++] = *p;
	}
	buf[n] = '\0';
	return cpuset_parse_list(s, buf);
}

/* @again: read every cycle, through a kept fd; every such list may be
 * missing for good (cpuset.cpus.isolated before 6.7, nohz_full without
 * CONFIG_NO_HZ_FULL), so one found missing is looked for again only at
 * the next full scan or idle probe (ip_root_read_optional()) */
static int read_cpulist_how(struct ip_root *r, const char *path, ip_cpuset *s, bool again)
{
	_cleanup_free_ char *buf = NULL;
	int ret = again ? ip_root_read_optional(r, path, true, &buf, NULL) : ip_root_read(r, path, &buf, NULL);

	if (ret < 0)
		return ret;
	return parse_cpulist_text(buf, s);
}

static int read_cpulist(struct ip_root *r, const char *path, ip_cpuset *s)
{
	return read_cpulist_how(r, path, s, false);
}

/* An optional list: absent leaves @s empty; present but unreadable is an
 * error, because silently losing e.g. the isolated set would put IRQs on
 * CPUs the admin fenced off. */
static int read_optional_list(struct ip_root *r, const char *path, ip_cpuset *s, bool *found, bool again,
			      struct ip_diag *d)
{
	int ret = read_cpulist_how(r, path, s, again);

	if (found)
		*found = ret == 0;
	if (ret == -ENOENT || ret == -ENOTDIR) {
		cpuset_zero(s);
		return 0;
	}
	if (ret == -ERANGE)
		return ip_diag_set(d, -E2BIG,
				   "%s: lists a CPU id >= %d, more than this build supports", path,
				   IP_CPU_MAX);
	if (ret < 0)
		return ip_diag_set(d, ret, "%s: %s", path,
				   ret == -EINVAL ? "not a CPU list" : strerror(-ret));
	return 0;
}

static int read_required_list(struct ip_root *r, const char *path, ip_cpuset *s,
			      struct ip_diag *d)
{
	int ret = read_cpulist(r, path, s);

	if (ret == -ERANGE)
		return ip_diag_set(d, -E2BIG,
				   "%s: lists a CPU id >= %d; rebuild with a larger IP_CPU_MAX",
				   path, IP_CPU_MAX);
	if (ret == -ENOTDIR)
		ret = -ENOENT;
	if (ret < 0)
		return ip_diag_set(d, ret, "%s: %s", path,
				   ret == -EINVAL ? "not a CPU list" : strerror(-ret));
	if (cpuset_empty(s))
		return ip_diag_set(d, -EINVAL, "%s: empty CPU list", path);
	return 0;
}

static bool read_int(struct ip_root *r, const char *path, long long *out)
{
	return ip_root_read_long(r, path, out) == 0;
}

/* Lowest CPU of a cpulist file, or -1. */
static int read_first_cpu(struct ip_root *r, const char *path)
{
	ip_cpuset s;

	if (read_cpulist(r, path, &s) < 0)
		return -1;
	return cpuset_first(&s);
}

/*
 * Kernel command line words we care about. Quoting is ignored: none of
 * the parameters read here can contain blanks.
 */
struct cmdline_info {
	bool threadirqs;
	bool have_isolcpus, have_nohz_full;
	ip_cpuset isolcpus, nohz_full;
};

/* isolcpus=[flag,...,]cpulist: the flags (nohz, domain, managed_irq) are
 * words, the CPU list is everything else. */
static void parse_isolcpus(const char *val, ip_cpuset *out, bool *have)
{
	_cleanup_free_ char *copy = strdup(val);
	_cleanup_free_ char *list = calloc(1, strlen(val) + 1);
	char *save = NULL;
	ip_cpuset s;

	if (!copy || !list)
		return;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (isalpha((unsigned char)tok[0]))
			continue;
		if (list[0])
			strcat(list, ",");
		strcat(list, tok);
	}
	if (list[0] && cpuset_parse_list(&s, list) == 0) {
		cpuset_or(out, out, &s);
		*have = true;
	}
}

static void read_cmdline(struct ip_root *r, struct cmdline_info *ci)
{
	_cleanup_free_ char *buf = NULL;
	char *save = NULL;

	memset(ci, 0, sizeof(*ci));
	if (ip_root_read(r, "proc/cmdline", &buf, NULL) < 0)
		return;
	for (char *w = strtok_r(buf, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
		if (strcmp(w, "threadirqs") == 0) {
			ci->threadirqs = true;
		} else if (strncmp(w, "isolcpus=", 9) == 0) {
			parse_isolcpus(w + 9, &ci->isolcpus, &ci->have_isolcpus);
		} else if (strncmp(w, "nohz_full=", 10) == 0) {
			ip_cpuset s;

			if (cpuset_parse_list(&s, w + 10) == 0) {
				cpuset_or(&ci->nohz_full, &ci->nohz_full, &s);
				ci->have_nohz_full = true;
			}
		}
	}
}

/* Each part at most 255, as the kernel's own KERNEL_VERSION() clamps. */
static bool version_part(const char **p, const char *end, unsigned *v)
{
	unsigned x = 0;
	const char *s = *p;

	while (*p < end && **p >= '0' && **p <= '9' && *p - s < 6)
		x = x * 10 + (unsigned)(*(*p)++ - '0');
	if (*p == s)
		return false;
	*v = x > 255 ? 255 : x;
	return true;
}

unsigned ip_parse_osrelease(const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	unsigned a, b, c = 0;

	if (!text || !version_part(&p, end, &a) || p >= end || *p++ != '.' || !version_part(&p, end, &b))
		return 0;
	if (p < end && *p == '.') {
		p++;
		if (!version_part(&p, end, &c))
			c = 0;
	}
	return a ? IP_KERNEL_VERSION(a, b, c) : 0;
}

/*
 * The isolated set: the boot-time part (@boot, ip_topology_sample()'s)
 * and cgroup v2 isolated partitions (6.7+), into @iso. Only the cgroup's
 * file changes while the machine runs (kernel/cgroup/cpuset.c), so it is
 * the one small file ip_topology_refresh_isolation() reads each cycle,
 * through a kept fd (ip_root_read_optional()).
 */
static int read_isolated_sets(struct ip_root *r, const ip_cpuset *boot, ip_cpuset *iso, struct ip_diag *d)
{
	ip_cpuset cg;
	int ret = read_optional_list(r, CGROUP_ISOLATED, &cg, NULL, true, d);

	if (ret < 0)
		return ret;
	cpuset_or(iso, boot, &cg);
	return 0;
}

/*
 * What the boot options isolate (t->boot_isolated) and nohz_full, with
 * the command line already parsed into @t. sysfs isolated prints the
 * housekeeping mask isolcpus= set up at boot (drivers/base/cpu.c
 * print_cpus_isolated(): HK_TYPE_DOMAIN, HK_TYPE_DOMAIN_BOOT since cpuset
 * partitions join HK_TYPE_DOMAIN; kernel/sched/isolation.c), and
 * nohz_full tick_nohz_full_mask, set once by nohz_full=: neither changes
 * while the kernel runs, and each was a read every cycle for nothing.
 */
static int read_boot_isolation(struct ip_root *r, struct ip_topology *t, struct ip_diag *d)
{
	bool found;
	int ret;

	ret = read_optional_list(r, CPU_DIR "isolated", &t->boot_isolated, NULL, true, d);
	if (ret < 0)
		return ret;
	/* sysfs lists only domain isolation; isolcpus=managed_irq,N also
	 * says the admin wants interrupts kept off N, so the command line
	 * always adds to it. */
	if (t->cmdline_have_isolcpus)
		cpuset_or(&t->boot_isolated, &t->boot_isolated, &t->cmdline_isolcpus);
	ret = read_optional_list(r, CPU_DIR "nohz_full", &t->nohz_full, &found, true, d);
	if (ret < 0)
		return ret;
	if (!found && t->cmdline_have_nohz_full)
		t->nohz_full = t->cmdline_nohz_full;
	return 0;
}

int ip_topology_refresh_isolation(struct ip_root *r, struct ip_topology *t, struct ip_diag *d)
{
	ip_cpuset iso;
	int ret = read_isolated_sets(r, &t->boot_isolated, &iso, d);

	if (ret < 0)
		return ret; /* @t keeps the set it had */
	t->isolated = iso;
	for (int c = 0; t->cpus && c < t->nr_cpus; c++)
		t->cpus[c].isolated = cpuset_test(&iso, c);
	return 0;
}

int ip_topology_isolation_changed(struct ip_root *r, const struct ip_topology *t, bool *changed,
				  struct ip_diag *d)
{
	ip_cpuset iso;
	int ret = read_isolated_sets(r, &t->boot_isolated, &iso, d);

	if (ret < 0)
		return ret;
	*changed = !cpuset_equal(&iso, &t->isolated);
	return 0;
}

/*
 * PREEMPT_RT forces IRQ threading (force_irqthreads() is true). The RT
 * patch set adds /sys/kernel/realtime ("1"), but mainline, which has
 * carried PREEMPT_RT since 6.12, does not: its kernel/ksysfs.c has no
 * such attribute. What every RT build says is its version string,
 * /proc/sys/kernel/version (uname -v): "#1 SMP PREEMPT_RT <date>", the
 * flag init/Makefile (scripts/mkcompile_h in older kernels) puts after SMP for
 * CONFIG_PREEMPT_RT. Without either, a mainline RT kernel was taken for
 * one whose completions may move until a thread scan said otherwise.
 */
static bool preempt_rt(struct ip_root *r)
{
	_cleanup_free_ char *ver = NULL;
	long long rt;
	size_t n = 0;

	if (read_int(r, "sys/kernel/realtime", &rt))
		return rt == 1;
	if (ip_root_read(r, "proc/sys/kernel/version", &ver, &n) < 0 || !ver)
		return false;
	for (const char *p = ver; (p = strstr(p, "PREEMPT_RT")); p += 10)
		if ((p == ver || p[-1] == ' ') && (p[10] == ' ' || p[10] == '\n' || !p[10]))
			return true;
	return false;
}

static int read_isolation(struct ip_root *r, struct ip_topology *t, struct ip_diag *d)
{
	struct cmdline_info ci;
	int ret;

	read_cmdline(r, &ci);
	t->cmdline_have_isolcpus = ci.have_isolcpus;
	t->cmdline_isolcpus = ci.isolcpus;
	t->cmdline_have_nohz_full = ci.have_nohz_full;
	t->cmdline_nohz_full = ci.nohz_full;
	ret = read_boot_isolation(r, t, d);
	if (ret < 0)
		return ret;
	ret = read_isolated_sets(r, &t->boot_isolated, &t->isolated, d);
	if (ret < 0)
		return ret;
	{
		_cleanup_free_ char *rel = NULL;
		size_t n;

		/* optional: a fixture without it is a kernel of unknown version */
		t->kernel_version = ip_root_read(r, "proc/sys/kernel/osrelease", &rel, &n) < 0
					    ? 0 : ip_parse_osrelease(rel, n);
	}
	t->forced_threading = ci.threadirqs || preempt_rt(r);
	return 0;
}

/*
 * The LLC of @c: the highest cache level of type Unified or Data. Every
 * CPU listed as sharing it learns its LLC at the same time, so on a big
 * machine each LLC's files are read once rather than once per CPU.
 */
static void read_llc(struct ip_root *r, struct ip_topology *t, int c, bool *llc_known)
{
	char dir[96], path[192];
	char **names = NULL;
	size_t n = 0;
	long long best = -1;
	ssize_t best_i = -1;
	ip_cpuset shared;

	snprintf(dir, sizeof(dir), CPU_DIR "cpu%d/cache", c);
	if (ip_root_listdir(r, dir, &names, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *type = NULL;
		long long level;

		if (strncmp(names[i], "index", 5) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/level", dir, names[i]);
		if (!read_int(r, path, &level))
			continue;
		snprintf(path, sizeof(path), "%s/%s/type", dir, names[i]);
		if (ip_root_read_line(r, path, &type) == 0 && strcmp(type, "Unified") != 0 &&
		    strcmp(type, "Data") != 0)
			continue;
		if (level > best) {
			best = level;
			best_i = (ssize_t)i;
		}
	}
	if (best_i >= 0) {
		snprintf(path, sizeof(path), "%s/%s/shared_cpu_list", dir, names[best_i]);
		if (read_cpulist(r, path, &shared) < 0)
			cpuset_zero(&shared);
		cpuset_set(&shared, c);
		CPUSET_FOREACH(x, &shared)
		{
			if (x >= t->nr_cpus || llc_known[x])
				continue;
			t->cpus[x].llc = cpuset_first(&shared);
			llc_known[x] = true;
		}
	}
	ip_strv_free(names, n);
}

static void read_cpu(struct ip_root *r, struct ip_topology *t, int c, bool *llc_known,
		     bool *have_cap, unsigned *raw_cap)
{
	struct ip_cpu *cpu = &t->cpus[c];
	char path[128];
	long long v;
	ip_cpuset s;

	/* Offline CPUs lose topology/ and cache/ on x86; every read below is
	 * allowed to fail. */
	snprintf(path, sizeof(path), CPU_DIR "cpu%d/topology/core_id", c);
	if (read_int(r, path, &v) && v >= 0 && v <= INT32_MAX)
		cpu->core = (int)v;
	snprintf(path, sizeof(path), CPU_DIR "cpu%d/topology/physical_package_id", c);
	if (read_int(r, path, &v) && v >= 0 && v <= INT32_MAX)
		cpu->package = (int)v;
	snprintf(path, sizeof(path), CPU_DIR "cpu%d/topology/cluster_cpus_list", c);
	cpu->cluster = read_first_cpu(r, path);
	snprintf(path, sizeof(path), CPU_DIR "cpu%d/topology/core_cpus_list", c);
	if (read_cpulist(r, path, &s) < 0) {
		snprintf(path, sizeof(path), CPU_DIR "cpu%d/topology/thread_siblings_list", c);
		if (read_cpulist(r, path, &s) < 0)
			cpuset_zero(&s);
	}
	cpuset_set(&s, c);
	cpu->smt = s;

	snprintf(path, sizeof(path), CPU_DIR "cpu%d/cpu_capacity", c);
	if (read_int(r, path, &v) && v >= 0 && v <= UINT32_MAX) {
		have_cap[c] = true;
		raw_cap[c] = (unsigned)v;
	}

	if (cpu->online && !llc_known[c])
		read_llc(r, t, c, llc_known);
}

/* Each cpufreq policy once, rather than each CPU's cpufreq link. */
static void read_cpufreq(struct ip_root *r, struct ip_topology *t)
{
	char **names = NULL;
	size_t n = 0;

	if (ip_root_listdir(r, CPU_DIR "cpufreq", &names, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *rel = NULL;
		char path[160], *end;
		long long khz = 0;
		unsigned long pol;
		ip_cpuset s;

		if (strncmp(names[i], "policy", 6) != 0 || !isdigit((unsigned char)names[i][6]))
			continue;
		pol = strtoul(names[i] + 6, &end, 10);
		if (*end || pol >= (unsigned long)t->nr_cpus)
			continue;
		snprintf(path, sizeof(path), CPU_DIR "cpufreq/%s/related_cpus", names[i]);
		cpuset_zero(&s);
		if (ip_root_read(r, path, &rel, NULL) < 0 || parse_spaced_list(rel, &s) < 0)
			cpuset_zero(&s);
		cpuset_set(&s, (int)pol);
		snprintf(path, sizeof(path), CPU_DIR "cpufreq/%s/cpuinfo_max_freq", names[i]);
		if (!read_int(r, path, &khz) || khz < 0 || khz > UINT32_MAX)
			khz = 0;
		CPUSET_FOREACH(c, &s)
		{
			if (c >= t->nr_cpus)
				break;
			t->cpus[c].freq_policy = (int)pol;
			t->cpus[c].max_freq_khz = (unsigned)khz;
		}
	}
	ip_strv_free(names, n);
}

/*
 * NUMA nodes from node/nodeN/cpulist. Those lists drop offline CPUs on
 * x86, so a present CPU missing from all of them is looked up through its
 * own cpuN/nodeM link. Without a node directory the kernel has no NUMA and
 * every CPU is on node 0.
 */
static void read_nodes(struct ip_root *r, struct ip_topology *t)
{
	_cleanup_free_ bool *known = calloc(t->nr_cpus, sizeof(bool));
	char **names = NULL;
	size_t n = 0;

	if (!known || ip_root_listdir(r, NODE_DIR, &names, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		char path[128], *end;
		unsigned long node;
		ip_cpuset s;

		if (strncmp(names[i], "node", 4) != 0 || !isdigit((unsigned char)names[i][4]))
			continue;
		node = strtoul(names[i] + 4, &end, 10);
		if (*end || node > INT32_MAX)
			continue;
		snprintf(path, sizeof(path), NODE_DIR "/%s/cpulist", names[i]);
		if (read_cpulist(r, path, &s) < 0)
			continue;
		CPUSET_FOREACH(c, &s)
		{
			if (c >= t->nr_cpus)
				break;
			t->cpus[c].node = (int)node;
			known[c] = true;
		}
	}
	ip_strv_free(names, n);

	for (int c = 0; c < t->nr_cpus; c++) {
		char dir[64];

		if (known[c] || !t->cpus[c].present)
			continue;
		snprintf(dir, sizeof(dir), CPU_DIR "cpu%d", c);
		if (ip_root_listdir(r, dir, &names, &n) < 0)
			continue;
		for (size_t i = 0; i < n; i++) {
			char *end;
			unsigned long node;

			if (strncmp(names[i], "node", 4) != 0 ||
			    !isdigit((unsigned char)names[i][4]))
				continue;
			node = strtoul(names[i] + 4, &end, 10);
			if (!*end && node <= INT32_MAX) {
				t->cpus[c].node = (int)node;
				break;
			}
		}
		ip_strv_free(names, n);
	}
}

static int cmp_unsigned_desc(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return (x < y) - (x > y);
}

/*
 * Replace each value by the highest value of its band (see CAP_BAND_PCT).
 * Returns the number of bands among the CPUs that have a value.
 */
static int band_values(const struct ip_topology *t, const bool *have, unsigned *val)
{
	_cleanup_free_ unsigned *sorted = malloc(t->nr_cpus * sizeof(unsigned));
	int n = 0, bands = 0;

	if (!sorted)
		return 1;
	for (int c = 0; c < t->nr_cpus; c++)
		if (have[c] && val[c] > 0)
			sorted[n++] = val[c];
	if (n == 0)
		return 0;
	qsort(sorted, n, sizeof(unsigned), cmp_unsigned_desc);
	for (int i = 0; i < n;) {
		unsigned lead = sorted[i];
		int j = i;

		while (j < n && (unsigned long long)sorted[j] * 100 >=
					(unsigned long long)lead * (100 - CAP_BAND_PCT))
			j++;
		for (int c = 0; c < t->nr_cpus; c++)
			if (have[c] && val[c] <= lead && val[c] >= sorted[j - 1])
				val[c] = lead;
		bands++;
		i = j;
	}
	return bands;
}

/* The first source that tells CPUs apart sets cpu->capacity. */
static void choose_capacity(struct ip_root *r, struct ip_topology *t, bool *have, unsigned *raw)
{
	static const struct {
		const char *path;
		unsigned cap;
	} pmus[] = {
		/* Later entries win, so a CPU listed twice gets the lower class. */
		{ "sys/devices/cpu_core/cpus", CAP_FULL },
		{ "sys/devices/cpu_atom/cpus", CAP_MID },
		{ "sys/devices/cpu_lowpower/cpus", CAP_LOW },
	};
	int kinds = 0;

	if (band_values(t, have, raw) > 1) {
		t->cap_source = IP_CAP_CPU_CAPACITY;
		for (int c = 0; c < t->nr_cpus; c++)
			t->cpus[c].capacity = have[c] ? raw[c] : 0;
		return;
	}

	memset(raw, 0, t->nr_cpus * sizeof(*raw));
	memset(have, 0, t->nr_cpus * sizeof(*have));
	for (size_t i = 0; i < ARRAY_SIZE(pmus); i++) {
		ip_cpuset s;

		if (read_cpulist(r, pmus[i].path, &s) < 0 || cpuset_empty(&s))
			continue;
		kinds++;
		CPUSET_FOREACH(c, &s)
		{
			if (c >= t->nr_cpus)
				break;
			raw[c] = pmus[i].cap;
			have[c] = true;
		}
	}
	if (kinds > 1) {
		t->cap_source = IP_CAP_HYBRID_PMU;
		for (int c = 0; c < t->nr_cpus; c++)
			t->cpus[c].capacity = raw[c];
		return;
	}

	for (int c = 0; c < t->nr_cpus; c++) {
		raw[c] = t->cpus[c].max_freq_khz;
		have[c] = raw[c] > 0;
	}
	if (band_values(t, have, raw) > 1) {
		t->cap_source = IP_CAP_MAX_FREQ;
		for (int c = 0; c < t->nr_cpus; c++)
			t->cpus[c].capacity = raw[c];
		return;
	}

	t->cap_source = IP_CAP_UNIFORM;
	for (int c = 0; c < t->nr_cpus; c++)
		t->cpus[c].capacity = CAP_FULL;
}

static int apply_overrides(struct ip_topology *t, const struct ip_cpu_overrides *ov,
			   struct ip_diag *d)
{
	unsigned rest;

	if (ov->have_performance && ov->have_efficiency &&
	    cpuset_intersects(&ov->performance, &ov->efficiency)) {
		ip_cpuset both;

		cpuset_and(&both, &ov->performance, &ov->efficiency);
		return ip_diag_set(d, -EINVAL,
				   "CPUs %s are listed as both performance and efficiency",
				   cpuset_str(&both));
	}
	if (ov->have_performance && ov->have_efficiency)
		rest = CAP_MID;
	else if (ov->have_performance)
		rest = CAP_LOW;
	else
		rest = CAP_FULL;
	for (int c = 0; c < t->nr_cpus; c++) {
		unsigned cap = rest;

		if (ov->have_performance && cpuset_test(&ov->performance, c))
			cap = CAP_FULL;
		else if (ov->have_efficiency && cpuset_test(&ov->efficiency, c))
			cap = CAP_LOW;
		t->cpus[c].capacity = cap;
	}
	t->cap_source = IP_CAP_CONFIG;
	return 0;
}

enum group_kind { GROUP_CLUSTER, GROUP_LLC, GROUP_PACKAGE, GROUP_NONE };

struct group_key {
	unsigned capacity;
	enum group_kind kind;
	int id;
};

static int cmp_domain(const void *a, const void *b)
{
	const struct ip_domain *x = a, *y = b;

	if (x->capacity != y->capacity)
		return x->capacity < y->capacity ? 1 : -1;
	return cpuset_first(&x->cpus) - cpuset_first(&y->cpus);
}

/* The value all CPUs of @dom share, or -1. */
static int common(const struct ip_topology *t, const ip_cpuset *dom, size_t off)
{
	int v = -2;

	CPUSET_FOREACH(c, dom)
	{
		int x = *(const int *)((const char *)&t->cpus[c] + off);

		if (v == -2)
			v = x;
		else if (v != x)
			return -1;
	}
	return v == -2 ? -1 : v;
}

/* The group an online CPU's domain is keyed by, besides its capacity: its
 * cluster when that holds more than one core, else its LLC, else its package. */
static struct group_key cpu_group_key(const struct ip_topology *t, const struct ip_cpu *cpu,
				      const int *cluster_size)
{
	if (cpu->cluster >= 0 && cpu->cluster < t->nr_cpus &&
	    cluster_size[cpu->cluster] > cpuset_count(&cpu->smt))
		return (struct group_key){ cpu->capacity, GROUP_CLUSTER, cpu->cluster };
	if (cpu->llc >= 0)
		return (struct group_key){ cpu->capacity, GROUP_LLC, cpu->llc };
	if (cpu->package >= 0)
		return (struct group_key){ cpu->capacity, GROUP_PACKAGE, cpu->package };
	return (struct group_key){ cpu->capacity, GROUP_NONE, 0 };
}

/* One domain per distinct key, in the order of their first CPU; returns how many. */
static int group_cpus(const struct ip_topology *t, const int *cluster_size, struct group_key *keys,
		      struct ip_domain *doms)
{
	int nd = 0;

	for (int c = 0; c < t->nr_cpus; c++) {
		const struct ip_cpu *cpu = &t->cpus[c];
		struct group_key k;
		int i;

		if (!cpu->online)
			continue;
		k = cpu_group_key(t, cpu, cluster_size);
		for (i = 0; i < nd; i++)
			if (keys[i].capacity == k.capacity && keys[i].kind == k.kind &&
			    keys[i].id == k.id)
				break;
		if (i == nd) {
			keys[nd] = k;
			doms[nd].capacity = k.capacity;
			cpuset_zero(&doms[nd].cpus);
			nd++;
		}
		cpuset_set(&doms[i].cpus, c);
	}
	return nd;
}

/* Sorted domains get their ids, their capacity class (the highest
 * capacity is performance, the lowest efficiency) and what their CPUs
 * share; each CPU learns its domain. */
static void classify_domains(struct ip_topology *t, struct ip_domain *doms, int nd)
{
	unsigned hi = 0, lo = UINT32_MAX;

	qsort(doms, nd, sizeof(*doms), cmp_domain);
	for (int i = 0; i < nd; i++) {
		hi = MAX(hi, doms[i].capacity);
		lo = MIN(lo, doms[i].capacity);
	}
	for (int i = 0; i < nd; i++) {
		struct ip_domain *dom = &doms[i];

		dom->id = i;
		if (dom->capacity == hi)
			dom->cls = IP_CLASS_PERFORMANCE;
		else if (dom->capacity == lo)
			dom->cls = IP_CLASS_EFFICIENCY;
		else
			dom->cls = IP_CLASS_MID;
		dom->llc = common(t, &dom->cpus, offsetof(struct ip_cpu, llc));
		dom->cluster = common(t, &dom->cpus, offsetof(struct ip_cpu, cluster));
		dom->package = common(t, &dom->cpus, offsetof(struct ip_cpu, package));
		dom->node = common(t, &dom->cpus, offsetof(struct ip_cpu, node));
		CPUSET_FOREACH(c, &dom->cpus)
			t->cpus[c].domain = i;
	}
}

int ip_topology_derive(struct ip_topology *t, const struct ip_cpu_overrides *ov, struct ip_diag *d)
{
	_cleanup_free_ int *cluster_size = NULL;
	_cleanup_free_ struct group_key *keys = NULL;
	struct ip_domain *doms = NULL;
	int nd, ret;

	free(t->domains);
	t->domains = NULL;
	t->nr_domains = 0;
	if (t->nr_cpus <= 0 || !t->cpus)
		return ip_diag_set(d, -EINVAL, "topology has no CPUs");
	for (int c = 0; c < t->nr_cpus; c++)
		t->cpus[c].domain = -1;

	if (ov && (ov->have_performance || ov->have_efficiency)) {
		ret = apply_overrides(t, ov, d);
		if (ret < 0)
			return ret;
	} else if (t->cap_source == IP_CAP_CONFIG) {
		/* The sampled capacities were replaced by the overrides. */
		return ip_diag_set(d, -ESTALE,
				   "CPU overrides were removed; sample the topology again");
	}

	/*
	 * A cluster is worth grouping by only if it holds more than one core:
	 * on x86 cluster_cpus_list is usually just the SMT siblings, which
	 * would split the P-cores of a hybrid part into one domain per core.
	 */
	cluster_size = calloc(t->nr_cpus, sizeof(int));
	keys = calloc(t->nr_cpus, sizeof(*keys));
	doms = calloc(t->nr_cpus, sizeof(*doms));
	if (!cluster_size || !keys || !doms) {
		free(doms);
		return ip_diag_set(d, -ENOMEM, "out of memory deriving CPU domains");
	}
	for (int c = 0; c < t->nr_cpus; c++)
		if (t->cpus[c].online && t->cpus[c].cluster >= 0 && t->cpus[c].cluster < t->nr_cpus)
			cluster_size[t->cpus[c].cluster]++;

	nd = group_cpus(t, cluster_size, keys, doms);
	classify_domains(t, doms, nd);
	if (nd == 0) {
		free(doms);
		doms = NULL;
	} else if (nd < t->nr_cpus) {
		/* sized for one domain a CPU: at 1,024 CPUs 160 KB, kept for
		 * the sampler's whole life, for the few domains there are */
		struct ip_domain *fit = realloc(doms, sizeof(*doms) * nd);

		if (fit)
			doms = fit;
	}
	t->domains = doms;
	t->nr_domains = nd;
	return 0;
}

/* @t is overwritten, not freed: free a previous sample first. It is zeroed
 * on failure, so ip_topology_free() is always safe afterwards. */
int ip_topology_sample(struct ip_root *r, const struct ip_cpu_overrides *ov, struct ip_topology *t,
		       struct ip_diag *d)
{
	_cleanup_free_ bool *llc_known = NULL, *have_cap = NULL;
	_cleanup_free_ unsigned *raw_cap = NULL;
	struct ip_topology n = { 0 };
	int ret, bad;
	ip_cpuset extra;

	memset(t, 0, sizeof(*t));
	ret = read_required_list(r, CPU_DIR "possible", &n.possible, d);
	if (ret < 0)
		return ret;
	ret = read_required_list(r, CPU_DIR "online", &n.online, d);
	if (ret < 0)
		return ret;
	cpuset_andnot(&extra, &n.online, &n.possible);
	bad = cpuset_first(&extra);
	if (bad >= 0)
		return ip_diag_set(d, -EINVAL,
				   CPU_DIR "online: CPU %d is not in " CPU_DIR "possible", bad);
	ret = read_optional_list(r, CPU_DIR "present", &n.present, NULL, false, d);
	if (ret < 0)
		return ret;
	if (cpuset_empty(&n.present))
		n.present = n.possible;
	/* A CPU is online only if present; keep the sets consistent even if
	 * the tree is not. */
	cpuset_or(&n.present, &n.present, &n.online);
	cpuset_and(&n.present, &n.present, &n.possible);

	ret = read_isolation(r, &n, d);
	if (ret < 0)
		return ret;

	n.nr_cpus = cpuset_last(&n.possible) + 1;
	n.cpus = calloc(n.nr_cpus, sizeof(*n.cpus));
	llc_known = calloc(n.nr_cpus, sizeof(bool));
	have_cap = calloc(n.nr_cpus, sizeof(bool));
	raw_cap = calloc(n.nr_cpus, sizeof(unsigned));
	if (!n.cpus || !llc_known || !have_cap || !raw_cap) {
		free(n.cpus);
		return ip_diag_set(d, -ENOMEM, "out of memory sampling %d CPUs", n.nr_cpus);
	}
	for (int c = 0; c < n.nr_cpus; c++) {
		struct ip_cpu *cpu = &n.cpus[c];

		cpu->id = c;
		cpu->present = cpuset_test(&n.present, c);
		cpu->online = cpuset_test(&n.online, c);
		cpu->isolated = cpuset_test(&n.isolated, c);
		cpu->nohz_full = cpuset_test(&n.nohz_full, c);
		cpu->core = cpu->package = cpu->cluster = cpu->llc = cpu->freq_policy = -1;
		cpu->domain = -1;
		cpuset_zero(&cpu->smt);
		cpuset_set(&cpu->smt, c);
	}
	for (int c = 0; c < n.nr_cpus; c++)
		if (n.cpus[c].present)
			read_cpu(r, &n, c, llc_known, have_cap, raw_cap);
	read_cpufreq(r, &n);
	read_nodes(r, &n);
	choose_capacity(r, &n, have_cap, raw_cap);

	ret = ip_topology_derive(&n, ov, d);
	if (ret < 0) {
		ip_topology_free(&n);
		return ret;
	}
	*t = n;
	return 0;
}

struct ip_topology_share {
	unsigned refs;
	int nr_cpus, nr_domains;
	struct ip_cpu *cpus;
	struct ip_domain *domains;
};

static void share_put(struct ip_topology_share *sh)
{
	if (!sh || --sh->refs)
		return;
	free(sh->cpus);
	free(sh->domains);
	free(sh);
}

void ip_topology_share_drop(struct ip_topology_share **cache)
{
	share_put(*cache);
	*cache = NULL;
}

static bool share_matches(const struct ip_topology_share *sh, const struct ip_topology *t)
{
	/* the cache's arrays are memcpy()s of t's, padding and all */
	return sh->nr_cpus == t->nr_cpus && sh->nr_domains == t->nr_domains &&
	       (!t->nr_cpus || memcmp(sh->cpus, t->cpus, sizeof(*t->cpus) * t->nr_cpus) == 0) &&
	       (!t->nr_domains || memcmp(sh->domains, t->domains, sizeof(*t->domains) * t->nr_domains) == 0);
}

int ip_topology_copy_shared(struct ip_topology *dst, const struct ip_topology *src,
			    struct ip_topology_share **cache)
{
	struct ip_topology_share *sh = *cache;

	if (!sh || !share_matches(sh, src)) {
		ip_topology_share_drop(cache);
		sh = calloc(1, sizeof(*sh));
		if (!sh)
			return -ENOMEM;
		sh->refs = 1;
		sh->nr_cpus = src->nr_cpus;
		sh->nr_domains = src->nr_domains;
		if (src->nr_cpus && !(sh->cpus = malloc(sizeof(*sh->cpus) * src->nr_cpus)))
			goto nomem;
		if (src->nr_domains && !(sh->domains = malloc(sizeof(*sh->domains) * src->nr_domains)))
			goto nomem;
		if (src->nr_cpus)
			memcpy(sh->cpus, src->cpus, sizeof(*sh->cpus) * src->nr_cpus);
		if (src->nr_domains)
			memcpy(sh->domains, src->domains, sizeof(*sh->domains) * src->nr_domains);
		*cache = sh;
	}
	*dst = *src;
	dst->cpus = sh->cpus;
	dst->domains = sh->domains;
	dst->share = sh;
	sh->refs++;
	return 0;
nomem:
	share_put(sh);
	return -ENOMEM;
}

void ip_topology_free(struct ip_topology *t)
{
	if (!t)
		return;
	if (t->share) {
		share_put(t->share);
		t->share = NULL;
	} else {
		free(t->cpus);
		free(t->domains);
	}
	t->cpus = NULL;
	t->domains = NULL;
	t->nr_cpus = 0;
	t->nr_domains = 0;
}

int ip_topology_domain_of(const struct ip_topology *t, int cpu)
{
	if (!t || !t->cpus || cpu < 0 || cpu >= t->nr_cpus)
		return -1;
	return t->cpus[cpu].domain;
}
