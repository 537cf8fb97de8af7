// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "irqpilot/macro.h"
#include "irqpilot/topology.h"

#ifndef TOP_SRCDIR
#define TOP_SRCDIR "."
#endif
#ifndef SHARED_DIR
#define SHARED_DIR TOP_SRCDIR "/../shared"
#endif

#define FIXTURES TOP_SRCDIR "/tests/fixtures/"
#define CPU "sys/devices/system/cpu/"
#define CAPTURE SHARED_DIR "/captures/qemu-x86-ahci-threadirqs/0000"

static struct ip_root *open_root(const char *dir)
{
	struct ip_root *r = NULL;

	assert_int_equal(ip_root_open(dir, &r), 0);
	return r;
}

static void sample_ok(const char *dir, const struct ip_cpu_overrides *ov, struct ip_topology *t)
{
	struct ip_root *r = open_root(dir);
	struct ip_diag d = { "" };
	int ret = ip_topology_sample(r, ov, t, &d);

	if (ret < 0)
		fail_msg("sampling %s: %d (%s)", dir, ret, d.msg);
	ip_root_free(r);
}

static void assert_set(const ip_cpuset *s, const char *want)
{
	assert_string_equal(cpuset_str(s), want);
}

static void assert_domain(const struct ip_topology *t, int i, const char *cpus,
			  enum ip_cap_class cls)
{
	assert_true(i < t->nr_domains);
	assert_int_equal(t->domains[i].id, i);
	assert_set(&t->domains[i].cpus, cpus);
	assert_string_equal(ip_cap_class_name(t->domains[i].cls), ip_cap_class_name(cls));
	CPUSET_FOREACH(c, &t->domains[i].cpus)
		assert_int_equal(ip_topology_domain_of(t, c), i);
}

/* ---- temp trees ---- */

static void put(const char *root, const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *mktree(void)
{
	char *dir = strdup("/tmp/ip-topo-XXXXXX");

	assert_non_null(dir);
	assert_non_null(mkdtemp(dir));
	return dir;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void rmtree(char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

/* ---- fixtures ---- */

/* proc/sys/kernel/osrelease as the kernel writes it (init/version.c,
 * UTS_RELEASE with a newline): distribution suffixes, -rc, and junk. */
static void test_osrelease(void **state)
{
	static const struct {
		const char *text;
		unsigned version;
	} cases[] = {
		{ "6.1.0-57-amd64\n", IP_KERNEL_VERSION(6, 1, 0) },
		{ "6.1.0-57-rt-amd64\n", IP_KERNEL_VERSION(6, 1, 0) },
		{ "6.12.118+deb13-arm64\n", IP_KERNEL_VERSION(6, 12, 118) },
		{ "5.10.198-android12-9-00085-g226a9632f13d\n", IP_KERNEL_VERSION(5, 10, 198) },
		{ "6.9-rc3\n", IP_KERNEL_VERSION(6, 9, 0) },
		{ "6.8.12", IP_KERNEL_VERSION(6, 8, 12) },
		{ "4.19.999\n", IP_KERNEL_VERSION(4, 19, 255) },
		{ "", 0 }, { "\n", 0 }, { "linux\n", 0 }, { "6\n", 0 }, { "6.\n", 0 },
		{ ".1.0\n", 0 }, { "0.0.0\n", 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		assert_int_equal(ip_parse_osrelease(cases[i].text, strlen(cases[i].text)), cases[i].version);
	assert_int_equal(ip_parse_osrelease(NULL, 0), 0);
	/* not NUL-terminated: the length bounds it */
	assert_int_equal(ip_parse_osrelease("6.1.0", 3), IP_KERNEL_VERSION(6, 1, 0));
}

static void test_phone(void **state)
{
	struct ip_topology t;
	static const int cluster[] = { 0, 0, 0, 0, 4, 4, 6, 6 };
	static const unsigned cap[] = { 261, 261, 261, 261, 871, 871, 1024, 1024 };
	static const unsigned khz[] = { 1803000, 1803000, 1803000, 1803000,
					2253000, 2253000, 2802000, 2802000 };

	sample_ok(FIXTURES "phone-arm64", NULL, &t);
	assert_int_equal(t.nr_cpus, 8);
	assert_set(&t.possible, "0-7");
	assert_set(&t.online, "0-7");
	assert_true(cpuset_empty(&t.isolated));
	assert_true(cpuset_empty(&t.nohz_full));
	assert_string_equal(ip_cap_source_name(t.cap_source), "cpu_capacity");
	assert_false(t.forced_threading);
	for (int c = 0; c < 8; c++) {
		const struct ip_cpu *cpu = &t.cpus[c];

		assert_int_equal(cpu->id, c);
		assert_true(cpu->online);
		assert_int_equal(cpu->cluster, cluster[c]);
		assert_int_equal(cpu->freq_policy, cluster[c]);
		assert_int_equal(cpu->capacity, cap[c]);
		assert_int_equal(cpu->max_freq_khz, khz[c]);
		assert_int_equal(cpu->llc, 0); /* the L3 (index3) spans 0-7 */
		assert_int_equal(cpu->package, 0);
		assert_int_equal(cpu->node, 0);
		assert_int_equal(cpuset_count(&cpu->smt), 1);
		assert_true(cpuset_test(&cpu->smt, c));
	}
	/* One L3 for all, yet three domains: capacity first, then cluster. */
	assert_int_equal(t.nr_domains, 3);
	assert_domain(&t, 0, "6-7", IP_CLASS_PERFORMANCE);
	assert_domain(&t, 1, "4-5", IP_CLASS_MID);
	assert_domain(&t, 2, "0-3", IP_CLASS_EFFICIENCY);
	assert_int_equal(t.domains[0].capacity, 1024);
	assert_int_equal(t.domains[2].capacity, 261);
	assert_int_equal(t.domains[1].cluster, 4);
	assert_int_equal(t.domains[1].llc, 0);
	ip_topology_free(&t);
}

/* Snapshots' copies share the arrays while the topology reads the same,
 * and one that changed (a CPU isolated) gets its own; each copy frees in
 * any order, the cache last or first. */
static void test_copy_shared(void **state)
{
	struct ip_topology t, a, b, c;
	struct ip_topology_share *cache = NULL;

	(void)state;
	sample_ok(FIXTURES "phone-arm64", NULL, &t);
	assert_int_equal(ip_topology_copy_shared(&a, &t, &cache), 0);
	assert_int_equal(ip_topology_copy_shared(&b, &t, &cache), 0);
	assert_ptr_equal(a.cpus, b.cpus);
	assert_ptr_equal(a.domains, b.domains);
	assert_ptr_not_equal(a.cpus, t.cpus);
	assert_int_equal(b.nr_domains, 3);
	assert_domain(&b, 0, "6-7", IP_CLASS_PERFORMANCE);

	t.cpus[5].isolated = true;
	cpuset_set(&t.isolated, 5);
	assert_int_equal(ip_topology_copy_shared(&c, &t, &cache), 0);
	assert_ptr_not_equal(c.cpus, b.cpus);
	assert_true(c.cpus[5].isolated);
	assert_false(b.cpus[5].isolated);
	assert_true(cpuset_test(&c.isolated, 5));
	assert_false(cpuset_test(&b.isolated, 5));

	ip_topology_free(&a);
	assert_null(a.cpus);
	ip_topology_share_drop(&cache);
	assert_null(cache);
	assert_false(b.cpus[5].isolated); /* still b's, after the cache let go */
	ip_topology_free(&b);
	assert_true(c.cpus[5].isolated);
	ip_topology_free(&c);
	ip_topology_free(&t);
}

static void test_phone_overrides(void **state)
{
	struct ip_cpu_overrides ov = { .have_performance = true, .have_efficiency = true };
	struct ip_diag d = { "" };
	struct ip_topology t;

	cpuset_parse_list(&ov.performance, "6-7");
	cpuset_parse_list(&ov.efficiency, "0-5");
	sample_ok(FIXTURES "phone-arm64", &ov, &t);
	assert_string_equal(ip_cap_source_name(t.cap_source), "config");
	/* Two classes; 4-5 becomes efficiency but stays its own cluster. */
	assert_int_equal(t.nr_domains, 3);
	assert_domain(&t, 0, "6-7", IP_CLASS_PERFORMANCE);
	assert_domain(&t, 1, "0-3", IP_CLASS_EFFICIENCY);
	assert_domain(&t, 2, "4-5", IP_CLASS_EFFICIENCY);
	assert_int_equal(t.cpus[4].capacity, t.cpus[0].capacity);

	/* Only a performance list: everything else is efficiency. */
	ov.have_efficiency = false;
	assert_int_equal(ip_topology_derive(&t, &ov, &d), 0);
	assert_int_equal(t.nr_domains, 3);
	assert_domain(&t, 0, "6-7", IP_CLASS_PERFORMANCE);
	assert_domain(&t, 1, "0-3", IP_CLASS_EFFICIENCY);
	assert_domain(&t, 2, "4-5", IP_CLASS_EFFICIENCY);

	/* Only an efficiency list: everything else is performance. */
	ov.have_performance = false;
	ov.have_efficiency = true;
	cpuset_parse_list(&ov.efficiency, "0-3");
	assert_int_equal(ip_topology_derive(&t, &ov, &d), 0);
	assert_int_equal(t.nr_domains, 3);
	assert_domain(&t, 0, "4-5", IP_CLASS_PERFORMANCE);
	assert_domain(&t, 1, "6-7", IP_CLASS_PERFORMANCE);
	assert_domain(&t, 2, "0-3", IP_CLASS_EFFICIENCY);

	/* Three levels: the unnamed CPUs are mid. */
	ov.have_performance = true;
	cpuset_parse_list(&ov.performance, "6-7");
	assert_int_equal(ip_topology_derive(&t, &ov, &d), 0);
	assert_domain(&t, 0, "6-7", IP_CLASS_PERFORMANCE);
	assert_domain(&t, 1, "4-5", IP_CLASS_MID);
	assert_domain(&t, 2, "0-3", IP_CLASS_EFFICIENCY);

	/* A CPU in both lists is a configuration error. */
	cpuset_parse_list(&ov.efficiency, "0-6");
	assert_int_equal(ip_topology_derive(&t, &ov, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "6"));
	assert_int_equal(t.nr_domains, 0);
	assert_int_equal(ip_topology_domain_of(&t, 6), -1);

	/* Dropping the overrides needs a fresh sample: the sampled
	 * capacities were replaced. */
	assert_int_equal(ip_topology_derive(&t, NULL, &d), -ESTALE);
	assert_non_null(strstr(d.msg, "sample"));
	ip_topology_free(&t);

	sample_ok(FIXTURES "phone-arm64", NULL, &t);
	assert_int_equal(t.nr_domains, 3);
	assert_string_equal(ip_cap_source_name(t.cap_source), "cpu_capacity");
	ip_topology_free(&t);
}

static void test_laptop_hybrid(void **state)
{
	struct ip_topology t;

	sample_ok(FIXTURES "laptop-hybrid", NULL, &t);
	assert_int_equal(t.nr_cpus, 12);
	assert_set(&t.online, "0-11");
	assert_true(cpuset_empty(&t.isolated));
	assert_string_equal(ip_cap_source_name(t.cap_source), "hybrid_pmu");
	assert_false(t.forced_threading);
	for (int c = 0; c < 12; c++) {
		const struct ip_cpu *cpu = &t.cpus[c];

		assert_int_equal(cpu->llc, 0);
		assert_int_equal(cpu->package, 0);
		assert_int_equal(cpu->node, 0);
		assert_int_equal(cpu->freq_policy, c);
		assert_int_equal(cpu->max_freq_khz, c < 4 ? 4700000 : 3500000);
		assert_true(cpu->capacity > 0);
		assert_true(c < 4 ? cpu->capacity > t.cpus[4].capacity
				  : cpu->capacity == t.cpus[4].capacity);
	}
	assert_set(&t.cpus[0].smt, "0-1");
	assert_set(&t.cpus[3].smt, "2-3");
	assert_set(&t.cpus[5].smt, "5");
	assert_int_equal(t.cpus[1].cluster, 0);
	assert_int_equal(t.cpus[3].cluster, 2);
	assert_int_equal(t.cpus[7].cluster, 4);
	assert_int_equal(t.cpus[9].cluster, 8);
	assert_int_equal(t.cpus[2].core, 4);

	/* P-cores together (their "cluster" is only the SMT pair), E-cores
	 * by their L2 cluster. */
	assert_int_equal(t.nr_domains, 3);
	assert_domain(&t, 0, "0-3", IP_CLASS_PERFORMANCE);
	assert_domain(&t, 1, "4-7", IP_CLASS_EFFICIENCY);
	assert_domain(&t, 2, "8-11", IP_CLASS_EFFICIENCY);
	assert_int_equal(t.domains[0].cluster, -1);
	assert_int_equal(t.domains[0].llc, 0);
	assert_int_equal(t.domains[2].cluster, 8);
	ip_topology_free(&t);
}

static void test_server_2s(void **state)
{
	struct ip_topology t;

	sample_ok(FIXTURES "server-2s", NULL, &t);
	assert_int_equal(t.nr_cpus, 32);
	assert_set(&t.possible, "0-31");
	assert_set(&t.present, "0-31");
	assert_set(&t.online, "0-30");
	assert_set(&t.isolated, "14-15");
	assert_set(&t.nohz_full, "14-15");
	assert_string_equal(ip_cap_source_name(t.cap_source), "uniform");
	assert_true(t.forced_threading); /* booted with threadirqs */

	assert_true(t.cpus[14].isolated && t.cpus[14].nohz_full);
	assert_false(t.cpus[13].isolated || t.cpus[30].isolated);
	assert_set(&t.cpus[0].smt, "0,16");
	assert_set(&t.cpus[24].smt, "8,24");
	assert_set(&t.cpus[15].smt, "15"); /* its sibling 31 is offline */
	for (int c = 0; c < 31; c++) {
		int pkg = (c % 16) / 8;

		assert_true(t.cpus[c].online);
		assert_int_equal(t.cpus[c].package, pkg);
		assert_int_equal(t.cpus[c].node, pkg);
		assert_int_equal(t.cpus[c].llc, pkg * 8);
		assert_int_equal(t.cpus[c].core, c % 8);
		assert_int_equal(t.cpus[c].cluster, c % 16);
		assert_int_equal(t.cpus[c].max_freq_khz, 3500000);
		assert_int_equal(t.cpus[c].capacity, t.cpus[0].capacity);
	}

	/* Offline: present, no topology, node still known through its link. */
	assert_true(t.cpus[31].present);
	assert_false(t.cpus[31].online);
	assert_int_equal(t.cpus[31].domain, -1);
	assert_int_equal(ip_topology_domain_of(&t, 31), -1);
	assert_int_equal(t.cpus[31].package, -1);
	assert_int_equal(t.cpus[31].llc, -1);
	assert_int_equal(t.cpus[31].node, 1);
	assert_int_equal(t.cpus[31].freq_policy, 31);

	/* Isolated 14-15 stay in their domain; the policy leaves them out. */
	assert_int_equal(t.nr_domains, 2);
	assert_domain(&t, 0, "0-7,16-23", IP_CLASS_PERFORMANCE);
	assert_domain(&t, 1, "8-15,24-30", IP_CLASS_PERFORMANCE);
	assert_int_equal(t.domains[1].llc, 8);
	assert_int_equal(t.domains[1].package, 1);
	assert_int_equal(t.domains[1].node, 1);
	assert_int_equal(t.domains[0].node, 0);
	ip_topology_free(&t);
}

static void test_capture_qemu_x86(void **state)
{
	struct ip_topology t;

	if (access(CAPTURE "/sys/devices/system/cpu/possible", R_OK) != 0) {
		print_message("skipped: capture %s not found\n", CAPTURE);
		skip();
	}
	sample_ok(CAPTURE, NULL, &t);
	assert_int_equal(t.nr_cpus, 4);
	assert_set(&t.online, "0-3");
	/* nohz_full reads "(null)" on 6.1 without the boot option. */
	assert_true(cpuset_empty(&t.nohz_full));
	assert_true(cpuset_empty(&t.isolated));
	assert_string_equal(ip_cap_source_name(t.cap_source), "uniform");
	assert_int_equal(t.cpus[1].llc, 0);
	assert_int_equal(t.cpus[3].llc, 2);
	assert_int_equal(t.cpus[2].package, 1);
	assert_int_equal(t.cpus[3].cluster, 3);
	/* The guest booted with threadirqs, but the capture holds no
	 * proc/cmdline, so nothing tells us. */
	assert_false(t.forced_threading);
	assert_int_equal(t.nr_domains, 2);
	assert_domain(&t, 0, "0-1", IP_CLASS_PERFORMANCE);
	assert_domain(&t, 1, "2-3", IP_CLASS_PERFORMANCE);
	ip_topology_free(&t);
}

struct read_count {
	int cache_files, cache_dirs, cpu_dirs;
};

static void count_reads(void *ctx, const struct ip_root_event *ev)
{
	struct read_count *rc = ctx;

	if (strstr(ev->path, "/cache") && ev->kind == IP_ROOT_EV_DIR)
		rc->cache_dirs++;
	else if (strstr(ev->path, "/cache"))
		rc->cache_files++;
	else if (ev->kind == IP_ROOT_EV_DIR && strncmp(ev->path, CPU "cpu", 26) == 0 &&
		 isdigit((unsigned char)ev->path[26]))
		rc->cpu_dirs++;
}

/* Hotplug re-samples, so a big machine must not read every CPU's cache
 * files when one CPU's shared_cpu_list already names its LLC peers. */
static void test_server_reads_each_llc_once(void **state)
{
	struct ip_root *r = open_root(FIXTURES "server-2s");
	struct read_count rc = { 0 };
	struct ip_diag d = { "" };
	struct ip_topology t;

	ip_root_set_recorder(r, count_reads, &rc);
	assert_int_equal(ip_topology_sample(r, NULL, &t, &d), 0);
	assert_int_equal(rc.cache_dirs, 2); /* cpu0 and cpu8 */
	assert_int_equal(rc.cache_files, 2 * (4 * 2 + 1));
	/* Only offline CPU 31 is missing from the node lists. */
	assert_int_equal(rc.cpu_dirs, 1);
	ip_topology_free(&t);
	ip_root_free(r);
}

/* ---- temp trees: fallbacks and errors ---- */

static int sample_tree(const char *dir, struct ip_topology *t, struct ip_diag *d)
{
	struct ip_root *r = open_root(dir);
	int ret = ip_topology_sample(r, NULL, t, d);

	ip_root_free(r);
	return ret;
}

static void test_cmdline_and_cgroup_isolation(void **state)
{
	char *dir = mktree();
	struct ip_diag d = { "" };
	struct ip_topology t;

	put(dir, CPU "possible", "0-3\n");
	put(dir, CPU "online", "0-3\n");
	put(dir, "proc/cmdline",
	    "BOOT_IMAGE=/vmlinuz ro isolcpus=nohz,domain,managed_irq,1,2 nohz_full=3 threadirqs\n");
	put(dir, "sys/fs/cgroup/cpuset.cpus.isolated", "3\n");
	assert_int_equal(sample_tree(dir, &t, &d), 0);
	assert_set(&t.isolated, "1-3");
	assert_set(&t.nohz_full, "3");
	assert_true(t.forced_threading);
	/* Nothing but the lists: one domain of everything online. */
	assert_string_equal(ip_cap_source_name(t.cap_source), "uniform");
	assert_int_equal(t.nr_domains, 1);
	assert_domain(&t, 0, "0-3", IP_CLASS_PERFORMANCE);
	ip_topology_free(&t);

	/* The sysfs list and the command line add up. */
	put(dir, CPU "isolated", "2\n");
	put(dir, "sys/fs/cgroup/cpuset.cpus.isolated", "\n");
	put(dir, "proc/cmdline", "quiet isolcpus=1,2\n");
	put(dir, "sys/kernel/realtime", "1\n");
	assert_int_equal(sample_tree(dir, &t, &d), 0);
	/* sysfs lists domain isolation only; the command line adds to it
	 * (isolcpus=managed_irq,N never shows up in sysfs) */
	assert_set(&t.isolated, "1-2");
	assert_true(t.forced_threading); /* PREEMPT_RT */
	ip_topology_free(&t);

	put(dir, "sys/kernel/realtime", "0\n");
	put(dir, "proc/cmdline", "quiet nothreadirqs threadirqs=0\n");
	assert_int_equal(sample_tree(dir, &t, &d), 0);
	assert_false(t.forced_threading);
	ip_topology_free(&t);
	rmtree(dir);
}

/*
 * Mainline has had PREEMPT_RT since 6.12, without the RT patch set's
 * /sys/kernel/realtime (kernel/ksysfs.c has no such attribute). uname -v
 * says it: init/Makefile's filechk_uts_version writes "#<n> SMP
 * PREEMPT_RT <timestamp>" (PREEMPT_DYNAMIC or PREEMPT otherwise).
 */
static void test_mainline_preempt_rt(void **state)
{
	char *dir = mktree();
	struct ip_diag d = { "" };
	struct ip_topology t;

	(void)state;
	put(dir, CPU "possible", "0-3\n");
	put(dir, CPU "online", "0-3\n");
	put(dir, "proc/cmdline", "BOOT_IMAGE=/vmlinuz-6.12.8 root=/dev/vda1 ro quiet\n");
	put(dir, "proc/sys/kernel/osrelease", "6.12.8\n");
	put(dir, "proc/sys/kernel/version", "#1 SMP PREEMPT_RT Thu Jan  2 10:11:12 UTC 2025\n");
	assert_int_equal(sample_tree(dir, &t, &d), 0);
	assert_true(t.forced_threading);
	ip_topology_free(&t);

	/* PREEMPT_DYNAMIC, the default of most distributions, is not RT */
	put(dir, "proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC Debian 6.12.8-1 (2025-01-02)\n");
	assert_int_equal(sample_tree(dir, &t, &d), 0);
	assert_false(t.forced_threading);
	ip_topology_free(&t);
	rmtree(dir);
}

static void put_policy(const char *dir, int pol, const char *related, const char *khz)
{
	char path[128];

	snprintf(path, sizeof(path), CPU "cpufreq/policy%d/related_cpus", pol);
	put(dir, path, related);
	snprintf(path, sizeof(path), CPU "cpufreq/policy%d/cpuinfo_max_freq", pol);
	put(dir, path, khz);
}

static void test_max_freq_source(void **state)
{
	char *dir = mktree();
	struct ip_diag d = { "" };
	struct ip_topology t;

	put(dir, CPU "possible", "0-3\n");
	put(dir, CPU "online", "0-3\n");
	for (int c = 0; c < 4; c++) {
		char path[128];

		snprintf(path, sizeof(path), CPU "cpu%d/cache/index2/level", c);
		put(dir, path, "2\n");
		snprintf(path, sizeof(path), CPU "cpu%d/cache/index2/type", c);
		put(dir, path, "Unified\n");
		snprintf(path, sizeof(path), CPU "cpu%d/cache/index2/shared_cpu_list", c);
		put(dir, path, c < 2 ? "0-1\n" : "2-3\n");
		/* An instruction cache at a higher level must not count. */
		snprintf(path, sizeof(path), CPU "cpu%d/cache/index3/level", c);
		put(dir, path, "3\n");
		snprintf(path, sizeof(path), CPU "cpu%d/cache/index3/type", c);
		put(dir, path, "Instruction\n");
		snprintf(path, sizeof(path), CPU "cpu%d/cache/index3/shared_cpu_list", c);
		put(dir, path, "0-3\n");
	}
	put_policy(dir, 0, "0 1 \n", "2000000\n");
	put_policy(dir, 2, "2 3 \n", "3000000\n");
	assert_int_equal(sample_tree(dir, &t, &d), 0);
	assert_string_equal(ip_cap_source_name(t.cap_source), "max_freq");
	assert_int_equal(t.cpus[1].freq_policy, 0);
	assert_int_equal(t.cpus[3].llc, 2);
	assert_int_equal(t.nr_domains, 2);
	assert_domain(&t, 0, "2-3", IP_CLASS_PERFORMANCE);
	assert_domain(&t, 1, "0-1", IP_CLASS_EFFICIENCY);
	assert_int_equal(t.domains[0].capacity, 3000000);
	ip_topology_free(&t);

	/* A favoured core a few percent faster is not another class. */
	put_policy(dir, 0, "0 1 \n", "3000000\n");
	put_policy(dir, 2, "2 3 \n", "3100000\n");
	assert_int_equal(sample_tree(dir, &t, &d), 0);
	assert_string_equal(ip_cap_source_name(t.cap_source), "uniform");
	assert_int_equal(t.nr_domains, 2);
	assert_domain(&t, 0, "0-1", IP_CLASS_PERFORMANCE);
	assert_domain(&t, 1, "2-3", IP_CLASS_PERFORMANCE);
	ip_topology_free(&t);

	/* cpu_capacity comes before frequency, and equal values do not
	 * tell CPUs apart, so the frequencies decide. */
	put_policy(dir, 0, "0 1 \n", "2000000\n");
	for (int c = 0; c < 4; c++) {
		char path[128];

		snprintf(path, sizeof(path), CPU "cpu%d/cpu_capacity", c);
		put(dir, path, "1024\n");
	}
	assert_int_equal(sample_tree(dir, &t, &d), 0);
	assert_string_equal(ip_cap_source_name(t.cap_source), "max_freq");
	ip_topology_free(&t);
	put(dir, CPU "cpu0/cpu_capacity", "512\n");
	put(dir, CPU "cpu1/cpu_capacity", "512\n");
	put_policy(dir, 0, "0 1 \n", "3000000\n");
	put_policy(dir, 2, "2 3 \n", "2000000\n");
	assert_int_equal(sample_tree(dir, &t, &d), 0);
	assert_string_equal(ip_cap_source_name(t.cap_source), "cpu_capacity");
	assert_domain(&t, 0, "2-3", IP_CLASS_PERFORMANCE);
	assert_domain(&t, 1, "0-1", IP_CLASS_EFFICIENCY);
	ip_topology_free(&t);
	rmtree(dir);
}

static void test_lowpower_pmu(void **state)
{
	char *dir = mktree();
	struct ip_diag d = { "" };
	struct ip_topology t;

	put(dir, CPU "possible", "0-5\n");
	put(dir, CPU "online", "0-5\n");
	put(dir, "sys/devices/cpu_core/cpus", "0-1\n");
	put(dir, "sys/devices/cpu_atom/cpus", "2-3\n");
	put(dir, "sys/devices/cpu_lowpower/cpus", "4-5\n");
	assert_int_equal(sample_tree(dir, &t, &d), 0);
	assert_string_equal(ip_cap_source_name(t.cap_source), "hybrid_pmu");
	assert_int_equal(t.nr_domains, 3);
	assert_domain(&t, 0, "0-1", IP_CLASS_PERFORMANCE);
	assert_domain(&t, 1, "2-3", IP_CLASS_MID);
	assert_domain(&t, 2, "4-5", IP_CLASS_EFFICIENCY);
	ip_topology_free(&t);
	rmtree(dir);
}

static void test_errors(void **state)
{
	char *dir = mktree();
	char big[32];
	struct ip_diag d = { "" };
	struct ip_topology t;

	/* No cpu directory at all. */
	assert_int_equal(sample_tree(dir, &t, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "sys/devices/system/cpu/possible"));
	assert_null(t.cpus);
	ip_topology_free(&t);

	put(dir, CPU "possible", "0-3\n");
	assert_int_equal(sample_tree(dir, &t, &d), -ENOENT);
	assert_non_null(strstr(d.msg, "sys/devices/system/cpu/online"));

	put(dir, CPU "online", "0-3x\n");
	d.msg[0] = '\0';
	assert_int_equal(sample_tree(dir, &t, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "sys/devices/system/cpu/online"));

	put(dir, CPU "online", "\n");
	assert_int_equal(sample_tree(dir, &t, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "online"));

	put(dir, CPU "online", "0-4\n");
	assert_int_equal(sample_tree(dir, &t, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "CPU 4"));

	put(dir, CPU "online", "0-3\n");
	put(dir, CPU "possible", "zero\n");
	assert_int_equal(sample_tree(dir, &t, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "sys/devices/system/cpu/possible"));

	/* More possible CPUs than the bitmap holds: refused, not truncated. */
	snprintf(big, sizeof(big), "0-%d\n", IP_CPU_MAX);
	put(dir, CPU "possible", big);
	assert_int_equal(sample_tree(dir, &t, &d), -E2BIG);
	assert_non_null(strstr(d.msg, "possible"));

	/* A garbled isolated list must not silently drop the isolation. */
	put(dir, CPU "possible", "0-3\n");
	put(dir, CPU "isolated", "2-\n");
	assert_int_equal(sample_tree(dir, &t, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "sys/devices/system/cpu/isolated"));
	rmtree(dir);
}

/* The most CPUs the bitmap holds, nearly all possible but absent. */
static void test_sparse_max_cpus(void **state)
{
	char *dir = mktree();
	struct ip_diag d = { "" };
	struct ip_topology t;
	char possible[32];

	snprintf(possible, sizeof(possible), "0-%d\n", IP_CPU_MAX - 1);
	put(dir, CPU "possible", possible);
	put(dir, CPU "present", "0-1\n");
	put(dir, CPU "online", "0-1\n");
	assert_int_equal(sample_tree(dir, &t, &d), 0);
	assert_int_equal(t.nr_cpus, IP_CPU_MAX);
	assert_false(t.cpus[IP_CPU_MAX - 1].present);
	assert_int_equal(ip_topology_domain_of(&t, IP_CPU_MAX - 1), -1);
	assert_int_equal(ip_topology_domain_of(&t, IP_CPU_MAX), -1);
	assert_int_equal(ip_topology_domain_of(&t, -1), -1);
	assert_int_equal(t.nr_domains, 1);
	assert_domain(&t, 0, "0-1", IP_CLASS_PERFORMANCE);
	ip_topology_free(&t);
	rmtree(dir);
}

static void test_names(void **state)
{
	assert_string_equal(ip_cap_source_name(IP_CAP_UNIFORM), "uniform");
	assert_string_equal(ip_cap_source_name(IP_CAP_MAX_FREQ), "max_freq");
	assert_string_equal(ip_cap_source_name((enum ip_cap_source)99), "unknown");
	assert_string_equal(ip_cap_class_name(IP_CLASS_MID), "mid");
	assert_string_equal(ip_cap_class_name((enum ip_cap_class)99), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_phone),
		cmocka_unit_test(test_phone_overrides),
		cmocka_unit_test(test_laptop_hybrid),
		cmocka_unit_test(test_server_2s),
		cmocka_unit_test(test_server_reads_each_llc_once),
		cmocka_unit_test(test_capture_qemu_x86),
		cmocka_unit_test(test_cmdline_and_cgroup_isolation),
		cmocka_unit_test(test_mainline_preempt_rt),
		cmocka_unit_test(test_max_freq_source),
		cmocka_unit_test(test_lowpower_pmu),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_sparse_max_cpus),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_osrelease),
		cmocka_unit_test(test_copy_shared),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
