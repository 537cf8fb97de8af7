// SPDX-License-Identifier: GPL-2.0-or-later
/* The model built from fixture trees and from real captures. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "irqpilot/capture.h"
#include "irqpilot/engine.h"
#include "irqpilot/macro.h"
#include "irqpilot/model.h"
#include "irqpilot/report.h"
#include "irqpilot/sample.h"

#define FIXTURES TOP_SRCDIR "/tests/fixtures/"

static const char *shared_dir(void)
{
	const char *s = getenv("IRQPILOT_SHARED");

	return s ? s : SHARED_DIR;
}

/* Sample @dir once into @snap. */
static void sample_dir(const char *dir, struct ip_snapshot *snap)
{
	struct ip_sampler_opts o = { .live_counters = false };
	struct ip_sampler *s;
	struct ip_root *r;
	struct ip_diag d = { "" };
	int ret;

	assert_int_equal(ip_root_open(dir, &r), 0);
	assert_int_equal(ip_sampler_new(r, &o, &s), 0);
	ret = ip_sampler_sample(s, snap, &d);
	if (ret < 0)
		fail_msg("sampling %s: %s", dir, d.msg);
	ip_sampler_free(s);
	ip_root_free(r);
}

static const struct ip_blockdev *dev(const struct ip_snapshot *s, const char *name, int *idx)
{
	for (int i = 0; i < s->storage.nr_devs; i++)
		if (strcmp(s->storage.devs[i].name, name) == 0) {
			if (idx)
				*idx = i;
			return &s->storage.devs[i];
		}
	fail_msg("no device %s", name);
	return &s->storage.devs[0];
}

static const struct ip_irq_thread *thread_of(const struct ip_snapshot *s, unsigned irq)
{
	static const struct ip_irq_thread none;

	for (int i = 0; i < s->nr_threads; i++)
		if (s->threads[i].irq == irq)
			return &s->threads[i];
	fail_msg("no IRQ thread for IRQ %u", irq);
	return &none;
}

static bool has_thread(const struct ip_snapshot *s, unsigned irq)
{
	for (int i = 0; i < s->nr_threads; i++)
		if (s->threads[i].irq == irq)
			return true;
	return false;
}

static void test_phone(void **state)
{
	struct ip_snapshot s;
	const struct ip_irq *ufs;

	sample_dir(FIXTURES "phone-arm64", &s);
	assert_int_equal(s.topo.nr_domains, 3);
	assert_string_equal(cpuset_str(&s.topo.domains[0].cpus), "6-7");
	assert_int_equal(s.topo.domains[0].cls, IP_CLASS_PERFORMANCE);
	assert_int_equal(s.topo.domains[2].cls, IP_CLASS_EFFICIENCY);
	/* UFS LUNs only: zram, loop and dm are not hardware */
	assert_int_equal(s.storage.nr_devs, 2);
	assert_string_equal(dev(&s, "sda", NULL)->driver, "ufshcd-qcom");
	ufs = ip_snapshot_irq(&s, 37);
	assert_non_null(ufs);
	assert_string_equal(ip_irq_info(ufs)->chip, "GICv3");
	assert_string_equal(ip_irq_info(ufs)->trigger, "Level");
	assert_string_equal(ufs->actions, "ufshcd");
	assert_true(ufs->tracked);
	assert_true(ip_irq_info(ufs)->have_effective);
	assert_string_equal(cpuset_str(&ip_irq_info(ufs)->effective), "0");
	assert_int_equal(ip_irq_info(ufs)->managed, IP_MANAGED_NO);
	/* one vector for every LUN */
	assert_int_equal(ip_irq_info(ufs)->nr_devs, 2);
	assert_true(ip_irq_count_on(ufs, 0) > 0);
	assert_int_equal(ip_irq_count_on(ufs, 6), 0);
	/* untracked IRQs keep no per-CPU counts but add to the CPU load */
	assert_true(s.irq_load[0] >= ip_irq_count_on(ufs, 0));
	ip_snapshot_free(&s);
}

static void test_laptop_managed_nvme(void **state)
{
	struct ip_snapshot s;
	const struct ip_blockdev *b;

	sample_dir(FIXTURES "laptop-hybrid", &s);
	assert_int_equal(s.topo.cap_source, IP_CAP_HYBRID_PMU);
	b = dev(&s, "nvme0n1", NULL);
	assert_int_equal(b->nr_queues, 12);
	for (int v = 0; v < b->nr_vectors; v++) {
		const struct ip_irq *irq = ip_snapshot_irq(&s, b->vectors[v].irq);

		assert_non_null(irq);
		/* git does not keep mode 0444, so either sign is fine */
		if (b->vectors[v].admin)
			assert_int_equal(ip_irq_info(irq)->managed, IP_MANAGED_NO);
		else
			assert_int_not_equal(ip_irq_info(irq)->managed, IP_MANAGED_NO);
	}
	ip_snapshot_free(&s);
}

/* The head's diskstats are its paths' completed I/O (storage.h mpath_head). */
static void test_nvme_mpath_head_ios(void **state)
{
	struct ip_snapshot s;
	int i = -1;

	sample_dir(FIXTURES "nvme-mpath-2ctrl", &s);
	assert_non_null(dev(&s, "nvme0c0n1", &i));
	assert_int_equal(s.dc[i].ios, 1000000);
	assert_non_null(dev(&s, "nvme0c1n1", &i));
	assert_int_equal(s.dc[i].ios, 1000000);
	ip_snapshot_free(&s);
}

static void test_server_threads_and_isolation(void **state)
{
	struct ip_snapshot s;
	const struct ip_irq_thread *t;
	const struct ip_irq *ahci;

	sample_dir(FIXTURES "server-2s", &s);
	assert_true(s.topo.forced_threading);
	assert_string_equal(cpuset_str(&s.topo.isolated), "14-15");
	ahci = ip_snapshot_irq(&s, 38);
	assert_non_null(ahci);
	assert_int_equal(ip_irq_info(ahci)->nr_devs, 2);
	assert_int_equal(ip_irq_info(ahci)->managed, IP_MANAGED_NO);
	t = thread_of(&s, 38);
	assert_non_null(t);
	/* comm may be cut at TASK_COMM_LEN */
	assert_int_equal(strncmp(t->comm, "irq/38-ahci[0000:00:17.0]", strlen(t->comm)), 0);
	assert_true(strlen(t->comm) >= 15);
	assert_int_equal(t->policy, 1);
	assert_int_equal(t->rt_priority, 50);
	/* the HBA's I/O vectors are the kernel's spread; its admin is not */
	assert_int_equal(ip_irq_info(ip_snapshot_irq(&s, 150))->managed, IP_MANAGED_NO);
	assert_int_equal(ip_irq_info(ip_snapshot_irq(&s, 151))->managed, IP_MANAGED_SPREAD);
	assert_non_null(thread_of(&s, 151));
	ip_snapshot_free(&s);
}

static void test_shared_intx_line(void **state)
{
	struct ip_snapshot s;
	const struct ip_irq *l;

	sample_dir(FIXTURES "qemu-intx-shared", &s);
	l = ip_snapshot_irq(&s, 10);
	assert_non_null(l);
	assert_string_equal(l->actions, "mmc0, sym53c8xx");
	assert_int_equal(ip_irq_info(l)->nr_devs, 3); /* mmcblk0, sda, sdb */
	ip_snapshot_free(&s);
}

/* Two steps of the real AHCI capture: 8,000 reads from CPU 3, completed by
 * IRQ 28 on CPU 2 under threadirqs. */
static void test_capture_ahci_rates(void **state)
{
	char d0[512], d1[512];
	struct ip_snapshot s0, s1;
	struct ip_model m;
	struct ip_diag d = { "" };
	double dt, per;
	int i, sda = -1;

	snprintf(d0, sizeof(d0), "%s/captures/qemu-x86-ahci-threadirqs/0000", shared_dir());
	snprintf(d1, sizeof(d1), "%s/captures/qemu-x86-ahci-threadirqs/0001", shared_dir());
	if (access(d0, R_OK) != 0)
		skip();
	sample_dir(d0, &s0);
	sample_dir(d1, &s1);
	assert_int_equal(ip_model_derive(&s0, &s1, &m, &d), 0);
	dt = (62098490523.0 - 36104285213.0) / 1e9;
	assert_true(fabs(m.interval_s - dt) < 1e-9);
	dev(&s1, "sda", &sda);
	per = 8000 / dt;
	assert_int_equal(m.dev[sda].submit_src, IP_SRC_REPLAY);
	assert_true(fabs(m.dev[sda].submit[3] - per) < 1e-6);
	assert_true(m.dev[sda].submit[2] == 0);
	assert_true(fabs(m.dev[sda].complete[2] - per) < 1e-6);
	{
		ip_cpuset busy;

		/* fio on CPU 3 only: the held cycle's wakeup goes on 0-2 */
		ip_model_submit_cpus(&m, &busy);
		assert_string_equal(cpuset_str(&busy), "3");
	}
	for (i = 0; i < s1.nr_irqs && s1.irqs[i].irq != 28; i++)
		;
	assert_true(i < s1.nr_irqs);
	/* a vector's rates are float (model.h): as exact as 6 digits */
	assert_true(fabs(ip_irq_rate_on(&m.irq[i], 2) - per) < per * 1e-6);
	assert_true(fabs(m.cpu_softirq[2] - 8000 / dt) < 1e-6);
	assert_true(m.cpu_softirq[3] == 0);
	/* the thread woke once per interrupt: no polling pathology here */
	for (i = 0; i < s1.nr_threads && s1.threads[i].irq != 28; i++)
		;
	assert_true(i < s1.nr_threads);
	assert_true(fabs(m.thread[i].wakeups_per_irq - 7995.0 / 8000.0) < 1e-6);
	assert_true(fabs(m.thread[i].cpu_pct - 43.0 / 100 / dt * 100) < 1e-6);
	/* steps in the wrong order are refused, not turned into rates */
	ip_model_free(&m);
	assert_int_equal(ip_model_derive(&s1, &s0, &m, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "out of order"));
	ip_snapshot_free(&s0);
	ip_snapshot_free(&s1);
}

/* The CPUs that submitted to any device: a rate above zero on any, none
 * for a device without a source (submit NULL). */
static void test_submit_cpus(void **state)
{
	struct ip_snapshot snap;
	struct ip_dev_rate rates[3];
	double a[6] = { 0, 5, 0, 0, 0, 0 }, b[6] = { 0, 0, 0, 0, 0.25, 0 };
	struct ip_model m;
	ip_cpuset busy;

	(void)state;
	memset(&snap, 0, sizeof(snap));
	memset(rates, 0, sizeof(rates));
	memset(&m, 0, sizeof(m));
	snap.topo.nr_cpus = 6;
	snap.storage.nr_devs = 3;
	rates[0].submit = a;
	rates[1].submit = NULL;
	rates[2].submit = b;
	m.cur = &snap;
	m.dev = rates;
	ip_model_submit_cpus(&m, &busy);
	assert_string_equal(cpuset_str(&busy), "1,4");
	/* the first sample has no rates at all */
	m.dev = NULL;
	ip_model_submit_cpus(&m, &busy);
	assert_true(cpuset_empty(&busy));
}

/* A hand-made sample of @nr_cpus CPUs (at most 2) holding @irqs, for a
 * test to add what it is about: ip_model_derive() also reads each CPU's
 * interrupt load and block softirqs, here none. */
static void irq_sample(struct ip_snapshot *s, int nr_cpus, struct ip_irq *irqs, int nr_irqs)
{
	static uint64_t none[2];

	assert_true(nr_cpus <= (int)ARRAY_SIZE(none));
	memset(s, 0, sizeof(*s));
	s->topo.nr_cpus = nr_cpus;
	s->nr_irqs = nr_irqs;
	s->irqs = irqs;
	s->irq_load = none;
	s->block_softirq = none;
}

/* --oneshot's summary prints the drivers' IRQ names and the IRQ threads'
 * comms on a terminal: a C1 CSI, DEL, a byte that is no UTF-8 and a
 * character cut by the comm's 15 bytes come out as '?', never raw. */
static void test_model_text_names(void **state)
{
	static char name[] = "a\xc2\x9b" "31mX\x7f\xff\"\\ \xc3\xa9";
	struct ip_cpu_count pc[1] = { { 0, 10 } };
	struct ip_irq ia[1] = { { .irq = 38, .tracked = true, .actions = name, .total = 10,
				  .percpu = pc, .nr_percpu = 1 } };
	struct ip_vector vec = { .irq = 38, .queue = -1 };
	struct ip_blockdev bd = { .name = "sda", .driver = "ahci", .bus_id = "0000:00:17.0",
				  .nr_vectors = 1, .vectors = &vec, .numa_node = -1 };
	struct ip_irq_thread th = { .pid = 204, .irq = 38, .comm = "irq/38-a\xc2\x9b" "31mX\x7f\xc3" };
	struct ip_snapshot a, b;
	struct ip_model m;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	irq_sample(&a, 1, ia, 1);
	a.storage.nr_devs = 1;
	a.storage.devs = &bd;
	a.nr_threads = 1;
	a.threads = &th;
	b = a;
	a.time_ns = 1000000000;
	b.time_ns = 2000000000;
	assert_int_equal(ip_model_derive(&a, &b, &m, NULL), 0);
	ip_report_model_text(f, &m, "none");
	fclose(f);
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		if ((*p < 0x20 && *p != '\n') || *p == 0x7f || *p == 0x9b || *p == 0xff ||
		    (*p == 0xc3 && (p[1] & 0xc0) != 0x80))
			fail_msg("byte 0x%02x raw in: %s", *p, text);
	assert_non_null(strstr(text, "vector 38 a?31mX??\"\\ \xc3\xa9"));
	assert_non_null(strstr(text, "204 irq/38-a?31mX?? "));
	free(text);
	ip_model_free(&m);
}

/* A 32-bit counter that wrapped, an IRQ number that was reused, and a CPU
 * whose count is gone (it went offline: the model counts online CPUs). */
static void test_wrap_and_reuse(void **state)
{
	struct ip_snapshot a, b;
	struct ip_model m;
	struct ip_cpu_count pa[2] = { { 0, 0xfffffff0u }, { 1, 100 } }, pb[1] = { { 0, 0x10 } };
	struct ip_cpu_count pc[1] = { { 0, 500 } }, pd[1] = { { 0, 7 } };
	struct ip_irq ia[2] = {
		{ .irq = 40, .tracked = true, .actions = "ahci[0000:00:17.0]", .total = 0xfffffff0u,
		  .percpu = pa, .nr_percpu = 2 },
		{ .irq = 41, .tracked = true, .actions = "eth0", .total = 500, .percpu = pc, .nr_percpu = 1 },
	};
	struct ip_irq ib[2] = {
		{ .irq = 40, .tracked = true, .actions = "ahci[0000:00:17.0]", .total = 0x10, .percpu = pb,
		  .nr_percpu = 1 },
		{ .irq = 41, .tracked = true, .actions = "nvme0q1", .total = 7, .percpu = pd, .nr_percpu = 1 },
	};

	irq_sample(&a, 2, ia, 2);
	b = a;
	b.irqs = ib;
	a.time_ns = 1000000000;
	b.time_ns = 2000000000;
	assert_int_equal(ip_model_derive(&a, &b, &m, NULL), 0);
	assert_true(fabs(m.irq[0].total - 32) < 1e-9);
	assert_true(fabs(ip_irq_rate_on(&m.irq[0], 0) - 32) < 1e-9);
	/* not a wrap of CPU 1's count: it has none now, and the rates span
	 * CPU 0 alone */
	assert_true(ip_irq_rate_on(&m.irq[0], 1) == 0);
	assert_int_equal(m.irq[0].first, 0);
	assert_int_equal(m.irq[0].nr, 1);
	/* a new owner of IRQ 41 started again from zero */
	assert_true(fabs(m.irq[1].total - 7) < 1e-9);
	assert_true(fabs(ip_irq_rate_on(&m.irq[1], 0) - 7) < 1e-9);
	ip_model_free(&m);
}

/*
 * A thread's rates come from the same pid and IRQ in the last sample: in
 * the sampler's pid order (searched) or in any other (walked), the same.
 * A pid that served another IRQ before is a new thread.
 */
static void check_thread_rates(const struct ip_snapshot *a, const struct ip_snapshot *b)
{
	struct ip_model m;

	assert_int_equal(ip_model_derive(a, b, &m, NULL), 0);
	/* pid 300, IRQ 41: 20 wakeups over 2 s for 50 interrupts a second */
	assert_true(fabs(m.thread[1].wakeups - 10) < 1e-9);
	assert_true(fabs(m.thread[1].wakeups_per_irq - 0.2) < 1e-9);
	/* pid 200 was IRQ 40's thread; now it is IRQ 42's: no rates yet */
	assert_true(m.thread[0].wakeups == 0);
	assert_true(m.thread[0].wakeups_per_irq == -1);
	/* pid 400, IRQ 40, new; its line had interrupts */
	assert_true(m.thread[2].wakeups_per_irq == -1);
	ip_model_free(&m);
}

static void test_thread_rates_by_pid(void **state)
{
	struct ip_snapshot a, b;
	struct ip_irq ia[3] = { { .irq = 40, .total = 100 }, { .irq = 41, .total = 100 }, { .irq = 42 } };
	struct ip_irq ib[3] = { { .irq = 40, .total = 300 }, { .irq = 41, .total = 200 }, { .irq = 42 } };
	struct ip_irq_thread ta[3] = { { .pid = 100, .irq = 41, .vcsw = 5 },
				       { .pid = 200, .irq = 40, .vcsw = 9 },
				       { .pid = 300, .irq = 41, .vcsw = 30 } };
	struct ip_irq_thread tb[3] = { { .pid = 200, .irq = 42, .vcsw = 90 },
				       { .pid = 300, .irq = 41, .vcsw = 50 },
				       { .pid = 400, .irq = 40, .vcsw = 1 } };
	struct ip_irq_thread swap;

	irq_sample(&a, 2, ia, 3);
	a.nr_threads = 3;
	b = a;
	b.irqs = ib;
	a.threads = ta;
	b.threads = tb;
	a.time_ns = 1000000000;
	b.time_ns = 3000000000;
	check_thread_rates(&a, &b);
	/* the same threads in another order */
	swap = ta[0];
	ta[0] = ta[2];
	ta[2] = swap;
	check_thread_rates(&a, &b);
}

static int rm_rf(const char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

/* A copy of fixture @name under @tmp (a mkdtemp() template), in @root. */
static void copy_fixture(const char *name, char *tmp, char *root, size_t n)
{
	char cmd[600];

	assert_non_null(mkdtemp(tmp));
	snprintf(root, n, "%s/t", tmp);
	snprintf(cmd, sizeof(cmd), "cp -a '%s%s' '%s'", FIXTURES, name, root);
	assert_int_equal(system(cmd), 0);
}

/* A capture of a fixture replays to the same model. */
static void test_capture_roundtrip(void **state)
{
	char tmp[] = "/tmp/irqpilot-capture-XXXXXX", series[128], step[160], link[256];
	struct ip_sampler_opts o = { .live_counters = false };
	struct ip_snapshot orig, again;
	struct ip_sampler *s;
	struct ip_root *r;
	struct ip_diag d = { "" };
	char **steps;
	size_t n;
	ssize_t k;
	int fd;

	assert_non_null(mkdtemp(tmp));
	snprintf(series, sizeof(series), "%s/series", tmp);
	assert_int_equal(ip_root_open(FIXTURES "server-2s", &r), 0);
	assert_int_equal(ip_sampler_new(r, &o, &s), 0);
	if (ip_capture_run(r, s, series, 2, 0.01, &d) < 0)
		fail_msg("capture: %s", d.msg);
	/* a second capture into it would mix its steps with these */
	assert_int_equal(ip_capture_run(r, s, series, 1, 0.01, &d), -ENOTEMPTY);
	assert_non_null(strstr(d.msg, "is not empty"));
	assert_int_equal(ip_capture_open_below(tmp, series, &fd, &d), -ENOTEMPTY);
	assert_int_equal(fd, -1);
	ip_sampler_free(s);
	ip_root_free(r);

	assert_int_equal(ip_replay_steps(series, &steps, &n, &d), 0);
	assert_int_equal(n, 2);
	assert_string_equal(steps[0], "0000");
	ip_strv_free(steps, n);
	/* links stay links, so the capture reads like the real tree */
	snprintf(step, sizeof(step), "%s/0001/sys/block/sda", series);
	k = readlink(step, link, sizeof(link) - 1);
	assert_true(k > 0);
	link[k] = '\0';
	assert_non_null(strstr(link, "../devices/"));
	snprintf(step, sizeof(step), "%s/0001/irqpilot/time_ns", series);
	assert_int_equal(access(step, R_OK), 0);

	sample_dir(FIXTURES "server-2s", &orig);
	snprintf(step, sizeof(step), "%s/0001", series);
	sample_dir(step, &again);
	assert_int_equal(again.topo.nr_cpus, orig.topo.nr_cpus);
	assert_int_equal(again.topo.nr_domains, orig.topo.nr_domains);
	for (int i = 0; i < orig.topo.nr_domains; i++)
		assert_true(cpuset_equal(&again.topo.domains[i].cpus, &orig.topo.domains[i].cpus));
	assert_true(cpuset_equal(&again.topo.isolated, &orig.topo.isolated));
	assert_int_equal(again.storage.nr_devs, orig.storage.nr_devs);
	for (int i = 0; i < orig.storage.nr_devs; i++) {
		const struct ip_blockdev *x = &orig.storage.devs[i], *y = &again.storage.devs[i];

		assert_string_equal(x->name, y->name);
		assert_string_equal(x->driver, y->driver);
		assert_int_equal(x->nr_queues, y->nr_queues);
		assert_int_equal(x->nr_vectors, y->nr_vectors);
		for (int v = 0; v < x->nr_vectors; v++) {
			assert_int_equal(x->vectors[v].irq, y->vectors[v].irq);
			assert_int_equal(x->vectors[v].queue, y->vectors[v].queue);
			assert_int_equal(ip_irq_info(ip_snapshot_irq(&orig, x->vectors[v].irq))->managed,
					 ip_irq_info(ip_snapshot_irq(&again, y->vectors[v].irq))->managed);
		}
	}
	assert_int_equal(again.nr_irqs, orig.nr_irqs);
	assert_int_equal(again.nr_threads, orig.nr_threads);
	assert_true(again.topo.forced_threading);
	ip_snapshot_free(&orig);
	ip_snapshot_free(&again);
	assert_int_equal(rm_rf(tmp), 0);
}

static void put(const char *dir, const char *rel, const char *text)
{
	char path[512], *p;
	struct stat st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (p = strchr(path + strlen(dir) + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	/*
	 * In place, as the kernel's files change: the sampler keeps the
	 * tracked vectors' files open and a file renamed or unlinked and made
	 * anew would leave it reading the old inode, which real sysfs and
	 * procfs never do. A hard link (fixture files may be hard links of
	 * each other) is broken first, so only this name changes.
	 */
	if (stat(path, &st) == 0 && st.st_nlink > 1)
		unlink(path);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/*
 * The phone's UFS vector (37) at @t seconds: @c37 interrupts by CPU, of
 * which /proc/interrupts shows the online CPUs' (kernel/irq/proc.c
 * show_interrupts(): for_each_online_cpu) and per_cpu_count all eight
 * possible ones. A CPU taken offline keeps its count (kstat_irqs is per
 * CPU and never reset) and shows it again when it comes back.
 */
static void put_hotplug(const char *root, const bool online[8], const unsigned c37[8], int t)
{
	char text[2048], pcc[256], list[32], ns[32];
	size_t n = 0, p = 0, l = 0;

	n += (size_t)snprintf(text + n, sizeof(text) - n, "     ");
	for (int c = 0; c < 8; c++)
		if (online[c])
			n += (size_t)snprintf(text + n, sizeof(text) - n, "      CPU%d", c);
	n += (size_t)snprintf(text + n, sizeof(text) - n, "\n 37:");
	for (int c = 0; c < 8; c++) {
		if (online[c])
			n += (size_t)snprintf(text + n, sizeof(text) - n, " %10u", c37[c]);
		p += (size_t)snprintf(pcc + p, sizeof(pcc) - p, "%s%u", c ? "," : "", c37[c]);
		if (online[c])
			l += (size_t)snprintf(list + l, sizeof(list) - l, "%s%d", l ? "," : "", c);
	}
	snprintf(text + n, sizeof(text) - n, "     GICv3 297 Level     ufshcd\nErr:          0\n");
	snprintf(pcc + p, sizeof(pcc) - p, "\n");
	snprintf(list + l, sizeof(list) - l, "\n");
	snprintf(ns, sizeof(ns), "%d000000000\n", t);
	put(root, "proc/interrupts", text);
	put(root, "sys/kernel/irq/37/per_cpu_count", pcc);
	put(root, "sys/devices/system/cpu/online", list);
	put(root, "irqpilot/time_ns", ns);
}

/* The UFS vector's rate in @st's model. */
static double ufs_rate(const struct ip_step *st)
{
	const struct ip_snapshot *s = st->model.cur;

	for (int i = 0; i < s->nr_irqs; i++)
		if (s->irqs[i].irq == 37)
			return st->model.irq[i].total;
	fail_msg("no IRQ 37");
	return 0;
}


/* A dry-run engine on a copy of the phone fixture, for the tests that
 * change its files between steps. */
struct phone_engine {
	char tmp[64], root[96];
	struct ip_policy_config cfg;
	struct ip_root *r;
	struct ip_engine *e;
};

static void phone_engine_open(struct phone_engine *pe, const char *tmpl)
{
	struct ip_engine_opts eo = { .dry_run = true };

	snprintf(pe->tmp, sizeof(pe->tmp), "%s", tmpl);
	copy_fixture("phone-arm64", pe->tmp, pe->root, sizeof(pe->root));
	ip_policy_config_init(&pe->cfg);
	assert_int_equal(ip_root_open(pe->root, &pe->r), 0);
	assert_int_equal(ip_engine_new(pe->r, &pe->cfg, &eo, &pe->e), 0);
}

static void phone_engine_close(struct phone_engine *pe)
{
	ip_engine_free(pe->e);
	ip_policy_config_free(&pe->cfg);
	ip_root_free(pe->r);
	assert_int_equal(rm_rf(pe->tmp), 0);
}

/*
 * CPU 1 goes offline and comes back while the UFS vector fires 1,000 times a
 * second on CPU 6. Its column leaves /proc/interrupts with the 500,000
 * interrupts it handled before, and comes back with them: the line's
 * total goes down, which read as a 32-bit wrap (4e9 a second), and then up
 * by all of CPU 1's old count in one interval. Neither is an interrupt
 * that happened: the vector's rate stays 1,000 throughout, or is not
 * measured across the change at all.
 */
static void test_hotplug_keeps_rates(void **state)
{
	bool online[8] = { true, true, true, true, true, true, true, true };
	unsigned c37[8] = { 0, 500000, 0, 0, 0, 0, 1000, 0 };
	struct phone_engine pe;
	struct ip_diag d = { "" };

	(void)state;
	phone_engine_open(&pe, "/tmp/irqpilot-hotplug-XXXXXX");
	for (int t = 1; t <= 6; t++) {
		struct ip_step *st;
		double want;

		online[1] = t != 3 && t != 4;
		c37[6] += 1000;
		put_hotplug(pe.root, online, c37, t);
		if (ip_engine_step(pe.e, &st, &d) < 0)
			fail_msg("step %d: %s", t, d.msg);
		if (t == 1)
			continue;
		/* not measured across the change, measured again after it */
		want = t == 3 || t == 5 ? 0 : 1000;
		if (ufs_rate(st) < want - 1 || ufs_rate(st) > want + 1)
			fail_msg("second %d: IRQ 37 at %.0f/s, not %.0f", t, ufs_rate(st), want);
		assert_int_equal(st->decided, want > 0);
	}
	phone_engine_close(&pe);
}

/* The phone's /proc/interrupts (put_hotplug()'s) with a header of the
 * CPUs in @head and line 37 counted on those in @line: what a read torn by
 * a hot-plug gives, when they differ. */
static void torn_text(char *text, size_t size, const bool head[8], const bool line[8],
		      const unsigned c37[8])
{
	size_t n = (size_t)snprintf(text, size, "     ");

	for (int c = 0; c < 8; c++)
		if (head[c])
			n += (size_t)snprintf(text + n, size - n, "      CPU%d", c);
	n += (size_t)snprintf(text + n, size - n, "\n 37:");
	for (int c = 0; c < 8; c++)
		if (line[c])
			n += (size_t)snprintf(text + n, size - n, " %10u", c37[c]);
	snprintf(text + n, size - n, "     GICv3 297 Level     ufshcd\nErr:          0\n");
}

/*
 * One step of @pe whose read of /proc/interrupts is torn: a child writes
 * @torn through a FIFO in its place, having put @online as the online CPUs
 * and @whole as the file once the reader opened it (a CPU went on- or
 * offline while the kernel printed it). Returns the step's result.
 */
static int torn_step(struct phone_engine *pe, const char *torn, const char *online, const char *whole,
		     struct ip_step **st, struct ip_diag *d)
{
	char path[160], next[160];
	int status, ret;
	pid_t child;

	snprintf(path, sizeof(path), "%s/proc/interrupts", pe->root);
	snprintf(next, sizeof(next), "%s/proc/.interrupts.next", pe->root);
	put(pe->root, "proc/.interrupts.next", whole);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0644), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		/* the CPU changed before the line the reader is about to see,
		 * and the file is whole again by the time it could look */
		int fd = open(path, O_WRONLY);
		size_t len = strlen(torn);

		if (fd < 0)
			_exit(1);
		put(pe->root, "sys/devices/system/cpu/online", online);
		if (rename(next, path) < 0 || write(fd, torn, len) != (ssize_t)len)
			_exit(1);
		_exit(close(fd) == 0 ? 0 : 1);
	}
	ret = ip_engine_step(pe->e, st, d);
	/* a sampler that never opened the FIFO left the child waiting */
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, &status, 0), child);
	return ret;
}

/*
 * CPU 1 goes offline, then comes back, each time while /proc/interrupts is
 * read: the header has one column more than line 37, then one fewer. The
 * first failed the cycle ("IRQ 37 has 7 count columns, header has 8"), the
 * second took a count for the chip's name. Each is read again.
 */
static void test_hotplug_during_read(void **state)
{
	static const bool all[8] = { true, true, true, true, true, true, true, true };
	static const bool no1[8] = { true, false, true, true, true, true, true, true };
	unsigned c37[8] = { 0, 500000, 0, 0, 0, 0, 1000, 0 };
	char torn[1024], whole[1024], ns[32];
	struct phone_engine pe;
	struct ip_diag d = { "" };
	struct ip_step *st;

	(void)state;
	phone_engine_open(&pe, "/tmp/irqpilot-torn-XXXXXX");
	put_hotplug(pe.root, all, c37, 1);
	if (ip_engine_step(pe.e, &st, &d) < 0)
		fail_msg("step 1: %s", d.msg);

	put(pe.root, "irqpilot/time_ns", "2000000000\n");
	torn_text(torn, sizeof(torn), all, no1, c37);
	torn_text(whole, sizeof(whole), no1, no1, c37);
	if (torn_step(&pe, torn, "0,2-7\n", whole, &st, &d) < 0)
		fail_msg("CPU 1 leaving during the read: %s", d.msg);
	assert_int_equal(st->model.cur->nr_irqs, 1);

	snprintf(ns, sizeof(ns), "3000000000\n");
	put(pe.root, "irqpilot/time_ns", ns);
	torn_text(torn, sizeof(torn), no1, all, c37);
	torn_text(whole, sizeof(whole), all, all, c37);
	if (torn_step(&pe, torn, "0-7\n", whole, &st, &d) < 0)
		fail_msg("CPU 1 coming back during the read: %s", d.msg);
	assert_int_equal(st->model.cur->nr_irqs, 1);
	assert_string_equal(ip_irq_info(&st->model.cur->irqs[0])->chip, "GICv3");
	assert_string_equal(st->model.cur->irqs[0].actions, "ufshcd");
	phone_engine_close(&pe);
}

/* The disks /proc/diskstats lists in the server-2s fixture, as its lines
 * (block/genhd.c diskstats_show(): one per disk and partition), with sdb
 * and its partition left out (@with_sdb false) and a loop device after
 * them (@loop). */
static void put_server_disks(const char *root, bool with_sdb, bool loop)
{
	static const char *const names[] = { "sda", "sda1", "sdb", "sdb1", "sdc", "sdc1", "sdd", "sdd1" };
	char text[2048];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!with_sdb && strncmp(names[i], "sdb", 3) == 0)
			continue;
		n += (size_t)snprintf(text + n, sizeof(text) - n, "   8 %7zu %s 1000 0 8000 100 500 0 4000 50 0 150 150\n",
				      16 * (i / 2) + i % 2, names[i]);
	}
	if (loop)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "   7       0 loop0 40 0 320 2 0 0 0 0 0 2 2\n");
	put(root, "proc/diskstats", text);
}

static int sample_once(struct ip_sampler *s, struct ip_snapshot *snap, unsigned long *full)
{
	struct ip_diag d = { "" };
	unsigned long fast;

	ip_snapshot_free(snap);
	if (ip_sampler_sample(s, snap, &d) < 0)
		fail_msg("sampling: %s", d.msg);
	ip_sampler_scan_counts(s, full, &fast);
	return snap->storage.nr_devs;
}

/* sdb's link taken out of sys/block (@in false) or put back, and
 * /proc/diskstats to match: the next sample says so, the one after has
 * the devices scanned again. Returns how many it has. */
static int sdb_moved(struct ip_sampler *s, struct ip_snapshot *snap, const char *tmp, const char *root, bool in)
{
	char cmd[512];
	unsigned long full;
	const char *note;

	if (in)
		snprintf(cmd, sizeof(cmd), "mv %s/sdb.link %s/sys/block/sdb", tmp, root);
	else
		snprintf(cmd, sizeof(cmd), "mv %s/sys/block/sdb %s/sdb.link", root, tmp);
	assert_int_equal(system(cmd), 0);
	put_server_disks(root, in, true);
	(void)sample_once(s, snap, &full);
	note = ip_sampler_take_note(s);
	assert_non_null(note);
	assert_non_null(strstr(note, in ? "disk sdb is new" : "disk sdb is gone"));
	return sample_once(s, snap, &full);
}

/*
 * A SATA disk taken out and put back behind the AHCI host, whose one MSI
 * serves sda too, changes no IRQ: without a uevent (a tree under --root, a
 * monitor that overran) the device list kept sdb gone, or never had it.
 * /proc/diskstats, read every sample, shows the change; a loop device
 * (drivers/block/loop.c: no sys/block/loop0/device) is none of the storage
 * scan's and costs no scan.
 */
static void test_disk_without_uevent(void **state)
{
	char tmp[] = "/tmp/irqpilot-disks-XXXXXX", root[64], cmd[512];
	struct ip_sampler_opts o = { .live_counters = false };
	struct ip_snapshot snap = { 0 };
	struct ip_sampler *s;
	struct ip_root *r;
	unsigned long full, full_before;
	int n0;

	(void)state;
	copy_fixture("server-2s", tmp, root, sizeof(root));
	put_server_disks(root, true, false);
	assert_int_equal(ip_root_open(root, &r), 0);
	assert_int_equal(ip_sampler_new(r, &o, &s), 0);
	for (int i = 0; i < 3; i++)
		n0 = sample_once(s, &snap, &full);
	dev(&snap, "sdb", NULL);
	(void)ip_sampler_take_note(s);

	snprintf(cmd, sizeof(cmd), "mkdir -p %s/sys/devices/virtual/block/loop0 && ln -s ../devices/virtual/block/loop0 %s/sys/block/loop0",
		 root, root);
	assert_int_equal(system(cmd), 0);
	put_server_disks(root, true, true);
	full_before = full;
	assert_int_equal(sample_once(s, &snap, &full), n0);
	assert_int_equal(sample_once(s, &snap, &full), n0);
	assert_int_equal(full, full_before);
	assert_null(ip_sampler_take_note(s));

	assert_int_equal(sdb_moved(s, &snap, tmp, root, false), n0 - 1);
	for (int i = 0; i < snap.storage.nr_devs; i++)
		assert_string_not_equal(snap.storage.devs[i].name, "sdb");

	assert_int_equal(sdb_moved(s, &snap, tmp, root, true), n0);
	dev(&snap, "sdb", NULL);

	ip_snapshot_free(&snap);
	ip_sampler_free(s);
	ip_root_free(r);
	assert_int_equal(rm_rf(tmp), 0);
}

/*
 * The UFS vector freed and requested again under the same number and name
 * within one sample (a host reset that frees its vectors): its counts start
 * again from 0. kernel/irq/irqdesc.c free_desc() removes its
 * /sys/kernel/irq/37 and /proc/irq/37, and a new descriptor makes new ones.
 * The drop from 5,004,000 to 300 was taken for a 32-bit wrap: 4e9
 * interrupts a second, on the vector and on CPU 6.
 */
static void test_reused_vector_rates(void **state)
{
	char cmd[600];
	bool online[8] = { true, true, true, true, true, true, true, true };
	unsigned c37[8] = { 0, 0, 0, 0, 0, 0, 5000000, 0 };
	struct phone_engine pe;
	struct ip_diag d = { "" };

	(void)state;
	phone_engine_open(&pe, "/tmp/irqpilot-reuse-XXXXXX");
	for (int t = 1; t <= 8; t++) {
		struct ip_step *st;
		double want;

		c37[6] += 1000;
		if (t == 5) {
			c37[6] = 300;
			/* free_irq_dir() of lib-daemon.sh, then the new ones */
			snprintf(cmd, sizeof(cmd),
				 "cd '%s' && for d in sys/kernel/irq/37 proc/irq/37; do "
				 "cp -r $d $d.new && find $d -type f -exec truncate -s 0 {} + && "
				 "rm -r $d && mv $d.new $d; done && echo 0-7 >proc/irq/37/smp_affinity_list",
				 pe.root);
			assert_int_equal(system(cmd), 0);
		}
		put_hotplug(pe.root, online, c37, t);
		if (ip_engine_step(pe.e, &st, &d) < 0)
			fail_msg("step %d: %s", t, d.msg);
		if (t == 1)
			continue;
		/* the new vector's 300 at the reset, else 1,000 a second */
		want = t == 5 ? 300 : 1000;
		if (ufs_rate(st) < want - 1 || ufs_rate(st) > want + 1)
			fail_msg("second %d: IRQ 37 at %.0f/s, not %.0f", t, ufs_rate(st), want);
		/* CPU 6's load is IRQ 37's and at most that */
		if (st->model.cpu_irq[6] > 1001)
			fail_msg("second %d: CPU 6 handles %.0f interrupts/s", t, st->model.cpu_irq[6]);
	}
	phone_engine_close(&pe);
}

/* A garbled /proc/interrupts is a clear error naming the file and line;
 * a vanished /proc/irq/N directory is not an error at all. */
static void test_garbled_and_vanished(void **state)
{
	char tmp[] = "/tmp/irqpilot-garbled-XXXXXX";
	struct ip_sampler_opts o = { .live_counters = false };
	struct ip_snapshot snap;
	struct ip_sampler *s;
	struct ip_root *r;
	struct ip_diag d = { "" };

	assert_non_null(mkdtemp(tmp));
	put(tmp, "sys/devices/system/cpu/possible", "0-1\n");
	put(tmp, "sys/devices/system/cpu/online", "0-1\n");
	put(tmp, "proc/interrupts", "           CPU0       CPU1\n"
				    "  28:         10\n");
	assert_int_equal(ip_root_open(tmp, &r), 0);
	assert_int_equal(ip_sampler_new(r, &o, &s), 0);
	assert_true(ip_sampler_sample(s, &snap, &d) < 0);
	assert_non_null(strstr(d.msg, "proc/interrupts"));
	assert_non_null(strstr(d.msg, "line 2"));

	put(tmp, "proc/interrupts", "           CPU0       CPU1\n"
				    "  28:         10          5   PCI-MSI 98304-edge      ahci[0000:00:06.0]\n");
	ip_sampler_invalidate(s);
	d.msg[0] = '\0';
	if (ip_sampler_sample(s, &snap, &d) < 0)
		fail_msg("%s", d.msg);
	assert_int_equal(snap.nr_irqs, 1);
	assert_int_equal(snap.irq_load[0], 10);
	assert_int_equal(snap.irq_load[1], 5);
	assert_false(ip_irq_info(&snap.irqs[0])->have_proc);
	ip_snapshot_free(&snap);
	ip_sampler_free(s);
	ip_root_free(r);
	assert_int_equal(rm_rf(tmp), 0);
}

/* Sample @s once and return IRQ @irq's line, which must be tracked. */
static const struct ip_irq_info *sample_irq(struct ip_sampler *s, struct ip_snapshot *snap, unsigned irq)
{
	struct ip_diag d = { "" };
	const struct ip_irq *q;

	ip_snapshot_free(snap);
	if (ip_sampler_sample(s, snap, &d) < 0)
		fail_msg("%s", d.msg);
	q = ip_snapshot_irq(snap, irq);
	assert_non_null(q);
	assert_non_null(q->info);
	return q->info;
}

static const char *eff(const struct ip_irq_info *info)
{
	return info->have_effective ? cpuset_str(&info->effective) : "-";
}

static void record_reads(void *ctx, const struct ip_root_event *ev)
{
	int *n = ctx;

	if (ev->kind == IP_ROOT_EV_READ && (strcmp(ev->path, "proc/irq/37/effective_affinity_list") == 0 ||
					    strcmp(ev->path, "proc/irq/37/node") == 0))
		(*n)++;
}

/* proc_pid_status() (fs/proc/array.c) of a kworker that took pid 204 */
static const char kworker_status[] = "Name:\tkworker/2:1\nUmask:\t0000\nState:\tI (idle)\n"
				     "Tgid:\t204\nNgid:\t0\nPid:\t204\nPPid:\t2\n"
				     "Cpus_allowed:\t00000004\nCpus_allowed_list:\t2\n"
				     "voluntary_ctxt_switches:\t3\nnonvoluntary_ctxt_switches:\t0\n";

struct thread_reads {
	int serial, ahci; /* reads of proc/201/ (irq/4-ttyS0), proc/204/ (irq/38-ahci) */
};

static void record_thread_reads(void *ctx, const struct ip_root_event *ev)
{
	struct thread_reads *n = ctx;

	if (ev->kind != IP_ROOT_EV_READ)
		return;
	n->serial += strncmp(ev->path, "proc/201/", 9) == 0;
	n->ahci += strncmp(ev->path, "proc/204/", 9) == 0;
}

/* A copy of server-2s under @tmp (a mkdtemp() template), in @root. */
static void copy_server(char *tmp, char *root, size_t n)
{
	copy_fixture("server-2s", tmp, root, n);
}

/* copy_server() with a command line that names neither threadirqs nor
 * isolated CPUs: forced threading is then known only from the threads the
 * scan finds (irq/4-ttyS0, whose driver asks for none). */
static void copy_server_unforced(char *tmp, char *root, size_t n)
{
	copy_server(tmp, root, n);
	put(root, "proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz-6.1.0-18-amd64 root=/dev/mapper/vg0-root ro quiet\n");
}

/*
 * Under forced threading every IRQ with an action has an irq/N thread, and
 * only the tracked lines' are placed: those alone are kept and read again
 * (status, and stat when the thread may have run: test_sleeping_thread_
 * stat_held; comm only in the scan), so that a cycle's cost follows
 * the tracked vectors and not every IRQ. The others are read by the scan of /proc, which runs
 * again when the tracked set may have changed (a retrack: a reload, a pin).
 * Forced threading, inferred from the scan (no threadirqs on this command
 * line), holds between scans.
 */
static void test_threads_tracked_only(void **state)
{
	char tmp[] = "/tmp/irqpilot-threads-XXXXXX", root[64];
	struct ip_sampler_opts o = { .live_counters = false };
	struct ip_snapshot snap = { 0 };
	struct thread_reads n = { 0 };
	struct ip_diag d = { "" };
	struct ip_sampler *s;
	struct ip_root *r;

	copy_server_unforced(tmp, root, sizeof(root));
	assert_int_equal(ip_root_open(root, &r), 0);
	assert_int_equal(ip_sampler_new(r, &o, &s), 0);
	ip_root_set_recorder(r, record_thread_reads, &n);

	assert_int_equal(ip_sampler_sample(s, &snap, &d), 0);
	assert_true(snap.topo.forced_threading);
	assert_true(has_thread(&snap, 38));
	assert_true(has_thread(&snap, 151));
	assert_false(has_thread(&snap, 4)); /* the serial port's: not storage */
	assert_false(has_thread(&snap, 9));
	assert_true(n.serial > 0);
	for (int i = 0; i < snap.nr_threads; i++)
		assert_true(ip_snapshot_irq(&snap, snap.threads[i].irq)->tracked);

	n = (struct thread_reads){ 0 };
	ip_snapshot_free(&snap);
	assert_int_equal(ip_sampler_sample(s, &snap, &d), 0);
	assert_int_equal(n.serial, 0);
	assert_int_equal(n.ahci, 2); /* stat and status: the name is stat's */
	assert_true(snap.topo.forced_threading);
	assert_true(has_thread(&snap, 38));
	assert_false(has_thread(&snap, 4));

	/* the pid now names another task: stat's name says so, as comm would */
	put(root, "proc/204/comm", "kworker/2:1\n");
	put(root, "proc/204/stat",
	    "204 (kworker/2:1) S 2 0 0 0 -1 69238880 0 0 0 0 0 12 0 0 20 0 1 0 9504 0 0 "
	    "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 2 0 0 0 0 0 0 0 0 0 0 0\n");
	put(root, "proc/204/status", kworker_status);
	ip_snapshot_free(&snap);
	assert_int_equal(ip_sampler_sample(s, &snap, &d), 0);
	assert_false(has_thread(&snap, 38));

	n = (struct thread_reads){ 0 };
	ip_snapshot_free(&snap);
	ip_sampler_retrack(s);
	assert_int_equal(ip_sampler_sample(s, &snap, &d), 0);
	assert_true(n.serial > 0);
	assert_true(snap.topo.forced_threading);
	assert_false(has_thread(&snap, 4));

	ip_root_set_recorder(r, NULL, NULL);
	ip_snapshot_free(&snap);
	ip_sampler_free(s);
	ip_root_free(r);
	assert_int_equal(rm_rf(tmp), 0);
}

/* irq/38-ahci's stat (proc/204/stat of server-2s) with @stime: what the
 * kernel prints after the thread ran */
static void put_ahci_stat(const char *root, unsigned stime)
{
	char line[400];

	snprintf(line, sizeof(line),
		 "204 (irq/38-ahci[000) S 2 0 0 0 -1 2129984 0 0 0 0 0 %u 0 0 -51 0 1 0 504 0 0 "
		 "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 2 50 1 0 0 0 0 0 0 0 0 0 0 0\n",
		 stime);
	put(root, "proc/204/stat", line);
}

static void put_ahci_status(const char *root, const char *name, char state, const char *cpus,
			    unsigned long vcsw, unsigned long nvcsw)
{
	char text[600];

	snprintf(text, sizeof(text),
		 "Name:\t%s\nUmask:\t0022\nState:\t%c (%s)\nTgid:\t204\nNgid:\t0\nPid:\t204\n"
		 "PPid:\t2\nTracerPid:\t0\nCpus_allowed_list:\t%s\nMems_allowed_list:\t0\n"
		 "voluntary_ctxt_switches:\t%lu\nnonvoluntary_ctxt_switches:\t%lu\n",
		 name, state, state == 'R' ? "running" : "sleeping", cpus, vcsw, nvcsw);
	put(root, "proc/204/status", text);
}

/* IRQ 38 fires 89 times on CPU 2: in both files that count it */
static void fire_ahci(const char *root)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "sed -i 's/ 1829311 / 1829400 /' '%s/proc/interrupts'", root);
	assert_int_equal(system(cmd), 0);
	put(root, "sys/kernel/irq/38/per_cpu_count",
	    "0,0,1829400,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,77\n");
}

/* One more sample of @s into @snap, @secs after the last on the tree's
 * clock: irq/38-ahci's stime as it says. */
static uint64_t ahci_stime_after(struct ip_sampler *s, const char *root, unsigned secs,
				 struct ip_snapshot *snap)
{
	static unsigned long now = 1;
	struct ip_diag d = { "" };
	char ns[32];

	now += secs;
	snprintf(ns, sizeof(ns), "%lu000000000\n", now);
	put(root, "irqpilot/time_ns", ns);
	ip_snapshot_free(snap);
	if (ip_sampler_sample(s, snap, &d) < 0)
		fail_msg("sample: %s", d.msg);
	return thread_of(snap, 38)->stime;
}

/*
 * A known IRQ thread's stat is read again only when its status says it may
 * have run since: a switch counted either way, not asleep now or then, its
 * line fired, its affinity or name changed, we wrote it, or a full scan.
 * Otherwise stat would print what it printed: the new figure written to the
 * tree below is seen only once status says the thread ran. Status, read
 * every sample, is always current.
 */
static void test_sleeping_thread_stat_held(void **state)
{
	char tmp[] = "/tmp/irqpilot-held-XXXXXX", root[64];
	struct ip_sampler_opts o = { .live_counters = false };
	struct ip_snapshot snap = { 0 };
	unsigned stime = 48210;
	struct ip_sampler *s;
	struct ip_root *r;

	copy_server_unforced(tmp, root, sizeof(root));
	assert_int_equal(ip_root_open(root, &r), 0);
	assert_int_equal(ip_sampler_new(r, &o, &s), 0);
#define next_stime() ahci_stime_after(s, root, 1, &snap)
	assert_int_equal(next_stime(), stime); /* the scan */
	assert_int_equal(next_stime(), stime); /* read: its state was not known */

#define HELD_THEN_READ(change)                                  \
	do {                                                    \
		put_ahci_stat(root, ++stime);                   \
		assert_int_equal(next_stime(), stime - 1);      \
		change;                                         \
		assert_int_equal(next_stime(), stime);          \
	} while (0)

	HELD_THEN_READ(put_ahci_status(root, "irq/38-ahci[000", 'S', "2", 1702114, 3301));
	HELD_THEN_READ(put_ahci_status(root, "irq/38-ahci[000", 'S', "2", 1702114, 3302));
	HELD_THEN_READ(put_ahci_status(root, "irq/38-ahci[000", 'R', "2", 1702114, 3302));
	/* still running */
	put_ahci_stat(root, ++stime);
	assert_int_equal(next_stime(), stime);
	/* asleep again, and was not at the last read */
	put_ahci_status(root, "irq/38-ahci[000", 'S', "2", 1702114, 3302);
	put_ahci_stat(root, ++stime);
	assert_int_equal(next_stime(), stime);
	HELD_THEN_READ(put_ahci_status(root, "irq/38-ahci[000", 'S', "3", 1702114, 3302));
	assert_true(cpuset_test(&thread_of(&snap, 38)->allowed, 3));
	HELD_THEN_READ(fire_ahci(root));
	HELD_THEN_READ(ip_sampler_forget_thread(s, 204));
	/* the minute's full scan of /proc/interrupts */
	put_ahci_stat(root, ++stime);
	assert_int_equal(ahci_stime_after(s, root, 61, &snap), stime);
	/* a name status escapes, or another task's: always read */
	HELD_THEN_READ(put_ahci_status(root, "irq/38-ahci[00", 'S', "3", 1702114, 3302));
	put_ahci_stat(root, ++stime);
	assert_int_equal(next_stime(), stime);
	assert_int_equal(thread_of(&snap, 38)->vcsw, 1702114);
	assert_int_equal(thread_of(&snap, 38)->nvcsw, 3302);
#undef HELD_THEN_READ
	ip_sampler_free(s);

	/* where every sample is a full scan, every stat is read */
	o.full_scan_always = true;
	assert_int_equal(ip_sampler_new(r, &o, &s), 0);
	assert_int_equal(next_stime(), stime);
	put_ahci_stat(root, ++stime);
	assert_int_equal(next_stime(), stime);
	put_ahci_stat(root, ++stime);
	assert_int_equal(next_stime(), stime);

#undef next_stime
	ip_snapshot_free(&snap);
	ip_sampler_free(s);
	ip_root_free(r);
	assert_int_equal(rm_rf(tmp), 0);
}

/*
 * The daemon's own write to a sleeping thread is read back: irq/38-ahci
 * runs SCHED_OTHER, the policy wants SCHED_FIFO 50 and writes it once (the
 * tree's writer changes stat as the kernel would); the thread sleeps on, so
 * only the engine telling the sampler makes the next cycles see it done
 * rather than write it again each cycle.
 */
static void test_own_thread_write_seen(void **state)
{
	char tmp[] = "/tmp/irqpilot-ownw-XXXXXX", root[64], ns[32];
	struct ip_engine_opts eo = { .dry_run = false };
	struct ip_policy_config cfg;
	struct ip_engine *e;
	struct ip_diag d = { "" };
	struct ip_root *r;
	int sched_writes = 0;

	copy_server_unforced(tmp, root, sizeof(root));
	/* SCHED_OTHER, nice 0: fields 18 (20), 40 (0) and 41 (0) */
	put(root, "proc/204/stat",
	    "204 (irq/38-ahci[000) S 2 0 0 0 -1 2129984 0 0 0 0 0 48210 0 0 20 0 1 0 504 0 0 "
	    "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 2 0 0 0 0 0 0 0 0 0 0 0\n");
	ip_policy_config_init(&cfg);
	assert_int_equal(cfg.rt_priority, 50);
	assert_int_equal(ip_root_open(root, &r), 0);
	assert_int_equal(ip_engine_new(r, &cfg, &eo, &e), 0);
	for (int i = 0; i < 6; i++) {
		struct ip_step *st;

		snprintf(ns, sizeof(ns), "%d000000000\n", i + 1);
		put(root, "irqpilot/time_ns", ns);
		if (ip_engine_step(e, &st, &d) < 0)
			fail_msg("step %d: %s", i, d.msg);
		for (int k = 0; k < st->results.n; k++)
			if (st->results.r[k].what == IP_APPLY_THREAD_SCHED && st->results.r[k].pid == 204) {
				assert_int_equal(st->results.r[k].outcome, IP_APPLY_OK);
				sched_writes++;
			}
	}
	assert_int_equal(sched_writes, 1);
	ip_engine_free(e);
	ip_policy_config_free(&cfg);
	ip_root_free(r);
	assert_int_equal(rm_rf(tmp), 0);
}

/*
 * What /proc/irq/N/ says besides the affinity is read again only when it
 * may have changed: the effective affinity when the affinity did, when we
 * wrote it, while it is outside the affinity, and every 6th sample; the
 * node never, until the caches are dropped. A capture reads everything.
 */
static void test_vector_cache(void **state)
{
	char tmp[] = "/tmp/irqpilot-vcache-XXXXXX", root[64];
	struct ip_sampler_opts o = { .live_counters = false };
	struct ip_snapshot snap = { 0 };
	const struct ip_irq_info *info;
	struct ip_sampler *s;
	struct ip_root *r;
	int reads = 0;

	copy_fixture("phone-arm64", tmp, root, sizeof(root));
	assert_int_equal(ip_root_open(root, &r), 0);
	assert_int_equal(ip_sampler_new(r, &o, &s), 0);

	info = sample_irq(s, &snap, 37);
	assert_string_equal(eff(info), "0");
	assert_int_equal(info->node, 0);
	put(root, "proc/irq/37/effective_affinity_list", "3\n");
	put(root, "proc/irq/37/node", "1\n");
	/* an outside move is seen within six samples */
	for (int i = 1; i < 6; i++)
		assert_string_equal(eff(sample_irq(s, &snap, 37)), "0");
	info = sample_irq(s, &snap, 37);
	assert_string_equal(eff(info), "3");
	assert_int_equal(info->node, 0);

	/* a new affinity: its effective affinity at once */
	put(root, "proc/irq/37/smp_affinity_list", "4-5\n");
	put(root, "proc/irq/37/effective_affinity_list", "4\n");
	info = sample_irq(s, &snap, 37);
	assert_string_equal(cpuset_str(&info->affinity), "4-5");
	assert_string_equal(eff(info), "4");

	/* our own write */
	put(root, "proc/irq/37/effective_affinity_list", "5\n");
	assert_string_equal(eff(sample_irq(s, &snap, 37)), "4");
	ip_sampler_forget_irq(s, 37);
	assert_string_equal(eff(sample_irq(s, &snap, 37)), "5");

	/* outside the affinity: a move not done yet is watched until it is */
	put(root, "proc/irq/37/effective_affinity_list", "0\n");
	ip_sampler_forget_irq(s, 37);
	assert_string_equal(eff(sample_irq(s, &snap, 37)), "0");
	assert_string_equal(eff(sample_irq(s, &snap, 37)), "0");
	put(root, "proc/irq/37/effective_affinity_list", "4\n");
	assert_string_equal(eff(sample_irq(s, &snap, 37)), "4");

	/* hot-plug, a reload or a new root drops it all */
	ip_sampler_invalidate(s);
	assert_int_equal(sample_irq(s, &snap, 37)->node, 1);

	/* a capture holds every file of every step */
	ip_root_set_recorder(r, record_reads, &reads);
	sample_irq(s, &snap, 37);
	sample_irq(s, &snap, 37);
	ip_root_set_recorder(r, NULL, NULL);
	assert_int_equal(reads, 4);

	ip_snapshot_free(&snap);
	ip_sampler_free(s);
	ip_root_free(r);
	assert_int_equal(rm_rf(tmp), 0);
}

/*
 * The per_cpu_count fast path gives the model a full scan gives. server-2s
 * has CPU 31 offline (possible 0-31, online 0-30): its per_cpu_count files
 * carry a count for CPU 31 that /proc/interrupts does not show, and a
 * sampler mapping by column, or summing offline CPUs, would differ.
 */
static void test_fast_path_same_model(void **state)
{
	struct ip_sampler_opts full_o = { .full_scan_always = true }, fast_o = { 0 };
	struct ip_sampler *full, *fast;
	struct ip_root *r;
	struct ip_diag d = { "" };
	unsigned long nfull, nfast;

	(void)state;
	assert_int_equal(ip_root_open(FIXTURES "server-2s", &r), 0);
	assert_int_equal(ip_sampler_new(r, &full_o, &full), 0);
	assert_int_equal(ip_sampler_new(r, &fast_o, &fast), 0);
	for (int step = 0; step < 4; step++) {
		struct ip_snapshot a, b;

		if (ip_sampler_sample(full, &a, &d) < 0 || ip_sampler_sample(fast, &b, &d) < 0)
			fail_msg("sample %d: %s", step, d.msg);
		assert_int_equal(a.nr_irqs, b.nr_irqs);
		assert_int_equal(a.topo.nr_cpus, b.topo.nr_cpus);
		for (int i = 0; i < a.nr_irqs; i++) {
			assert_int_equal(a.irqs[i].irq, b.irqs[i].irq);
			assert_string_equal(a.irqs[i].actions, b.irqs[i].actions);
			assert_int_equal(a.irqs[i].tracked, b.irqs[i].tracked);
			assert_int_equal(a.irqs[i].total, b.irqs[i].total);
			assert_int_equal(a.irqs[i].nr_percpu, b.irqs[i].nr_percpu);
			for (int k = 0; k < a.irqs[i].nr_percpu; k++) {
				assert_int_equal(a.irqs[i].percpu[k].cpu, b.irqs[i].percpu[k].cpu);
				assert_int_equal(a.irqs[i].percpu[k].count, b.irqs[i].percpu[k].count);
			}
			assert_string_equal(ip_irq_info(&a.irqs[i])->chip, ip_irq_info(&b.irqs[i])->chip);
		}
		for (int c = 0; c < a.topo.nr_cpus; c++)
			assert_int_equal(a.irq_load[c], b.irq_load[c]);
		ip_snapshot_free(&a);
		ip_snapshot_free(&b);
	}
	ip_sampler_scan_counts(fast, &nfull, &nfast);
	/* start and the second sample read /proc/interrupts, the rest did not */
	assert_int_equal(nfull, 2);
	assert_int_equal(nfast, 2);
	ip_sampler_free(full);
	ip_sampler_free(fast);
	ip_root_free(r);
}

/* Without /sys/kernel/irq (CONFIG_SPARSE_IRQ=n) every sample is a full one. */
static void test_no_sparse_irq(void **state)
{
	struct ip_sampler_opts o = { 0 };
	struct ip_sampler *s;
	struct ip_root *r;
	struct ip_diag d = { "" };
	unsigned long nfull, nfast;

	(void)state;
	assert_int_equal(ip_root_open(FIXTURES "qemu-intx-shared", &r), 0);
	assert_int_equal(ip_sampler_new(r, &o, &s), 0);
	for (int step = 0; step < 3; step++) {
		struct ip_snapshot a;

		if (ip_sampler_sample(s, &a, &d) < 0)
			fail_msg("sample %d: %s", step, d.msg);
		assert_non_null(ip_snapshot_irq(&a, 10));
		ip_snapshot_free(&a);
	}
	ip_sampler_scan_counts(s, &nfull, &nfast);
	assert_int_equal(nfull, 3);
	assert_int_equal(nfast, 0);
	ip_sampler_free(s);
	ip_root_free(r);
}

/*
 * Isolation changes at run time without a hot-plug: the sampler reads the
 * isolated sets every sample, so the cycle after CPUs 4-7 become a cgroup
 * v2 isolated partition, the snapshot says so. nohz_full is set by the
 * boot option alone (kernel/sched/isolation.c), so it is read with the
 * CPUs, when they come or go, not each sample. The files are as the kernel
 * prints them: "%*pbl\n" of the mask, "\n" when empty
 * (kernel/cgroup/cpuset.c, cpuset_common_seq_show(), FILE_ISOLATED_CPULIST;
 * drivers/base/cpu.c, print_cpus_isolated(), print_cpus_nohz_full()).
 */
static void test_isolation_reread_every_sample(void **state)
{
	char tmp[] = "/tmp/irqpilot-iso-XXXXXX", cmd[600], root[64], cg[96];
	struct ip_sampler_opts o = { .live_counters = false };
	struct ip_snapshot snap = { 0 };
	struct ip_sampler *s;
	struct ip_root *r;
	struct ip_diag d = { "" };

	(void)state;
	copy_fixture("phone-arm64", tmp, root, sizeof(root));
	snprintf(cg, sizeof(cg), "%s/sys/fs/cgroup", root);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", cg);
	assert_int_equal(system(cmd), 0);
	put(root, "sys/fs/cgroup/cpuset.cpus.isolated", "\n");
	assert_int_equal(ip_root_open(root, &r), 0);
	assert_int_equal(ip_sampler_new(r, &o, &s), 0);

	assert_int_equal(ip_sampler_sample(s, &snap, &d), 0);
	assert_true(cpuset_empty(&snap.topo.isolated));
	assert_false(snap.topo.cpus[5].isolated);
	ip_snapshot_free(&snap);

	put(root, "sys/fs/cgroup/cpuset.cpus.isolated", "4-7\n");
	assert_int_equal(ip_sampler_sample(s, &snap, &d), 0);
	assert_string_equal(cpuset_str(&snap.topo.isolated), "4-7");
	assert_true(snap.topo.cpus[5].isolated);
	assert_false(snap.topo.cpus[3].isolated);
	/* the domains stay: isolation does not change what a CPU is */
	assert_true(snap.topo.nr_domains >= 2);
	ip_snapshot_free(&snap);

	/* the partition back to member */
	put(root, "sys/fs/cgroup/cpuset.cpus.isolated", "\n");
	assert_int_equal(ip_sampler_sample(s, &snap, &d), 0);
	assert_true(cpuset_empty(&snap.topo.isolated));
	assert_false(snap.topo.cpus[5].isolated);
	ip_snapshot_free(&snap);
	/* Boot-time sets that changed, as no kernel's do (isolcpus= and
	 * nohz_full= only; drivers/base/cpu.c), wait for the CPUs to: they
	 * are not read each cycle. */
	put(root, "sys/devices/system/cpu/isolated", "7\n");
	put(root, "sys/devices/system/cpu/nohz_full", "6\n");
	assert_int_equal(ip_sampler_sample(s, &snap, &d), 0);
	assert_true(cpuset_empty(&snap.topo.isolated));
	assert_false(snap.topo.cpus[7].isolated);
	assert_true(cpuset_empty(&snap.topo.nohz_full));
	assert_false(snap.topo.cpus[6].nohz_full);
	ip_snapshot_free(&snap);
	put(root, "sys/devices/system/cpu/online", "0-6\n");
	assert_int_equal(ip_sampler_sample(s, &snap, &d), 0);
	assert_string_equal(cpuset_str(&snap.topo.nohz_full), "6");
	assert_true(snap.topo.cpus[6].nohz_full);
	assert_string_equal(cpuset_str(&snap.topo.isolated), "7");
	assert_true(snap.topo.cpus[7].isolated && !snap.topo.cpus[5].isolated);
	ip_snapshot_free(&snap);
	/* a partition adds to the boot-time set, and leaves it when it goes */
	put(root, "sys/fs/cgroup/cpuset.cpus.isolated", "4-5\n");
	assert_int_equal(ip_sampler_sample(s, &snap, &d), 0);
	assert_string_equal(cpuset_str(&snap.topo.isolated), "4-5,7");
	ip_snapshot_free(&snap);
	put(root, "sys/fs/cgroup/cpuset.cpus.isolated", "\n");
	assert_int_equal(ip_sampler_sample(s, &snap, &d), 0);
	assert_string_equal(cpuset_str(&snap.topo.isolated), "7");
	ip_snapshot_free(&snap);
	put(root, "sys/devices/system/cpu/online", "0-7\n");

	/* garbled: the sample fails and says which file, never drops the isolation */
	put(root, "sys/fs/cgroup/cpuset.cpus.isolated", "4-\n");
	assert_true(ip_sampler_sample(s, &snap, &d) < 0);
	assert_non_null(strstr(d.msg, "cpuset.cpus.isolated"));
	ip_snapshot_free(&snap);

	ip_sampler_free(s);
	ip_root_free(r);
	assert_int_equal(rm_rf(tmp), 0);
}

/* A name holding a newline, which any user who may request a GPIO line
 * with edge detection can give (its consumer label): every full scan was
 * refused, and the machine's storage vectors with it. The rest of the
 * name is skipped and told once; the UFS host is still found. */
static void test_newline_in_irq_name(void **state)
{
	char tmp[] = "/tmp/irqpilot-newline-XXXXXX", root[64], *text = NULL, *at;
	struct ip_sampler_opts o = { .live_counters = false };
	struct ip_snapshot snap = { 0 };
	struct ip_sampler *s;
	struct ip_root *r;
	struct ip_diag d = { "" };
	const struct ip_irq *ufs;
	const char *note;
	size_t len;

	(void)state;
	copy_fixture("phone-arm64", tmp, root, sizeof(root));
	assert_int_equal(ip_root_open(root, &r), 0);
	assert_int_equal(ip_root_read(r, "proc/interrupts", &text, &len), 0);
	at = strstr(text, "apps_rsc\n");
	assert_non_null(at);
	{
		char *edited = NULL;

		assert_true(asprintf(&edited, "%.*sapps\nrsc label\n%s", (int)(at - text), text,
				     at + strlen("apps_rsc\n")) > 0);
		put(root, "proc/interrupts", edited);
		free(edited);
	}
	free(text);
	assert_int_equal(ip_sampler_new(r, &o, &s), 0);

	assert_int_equal(ip_sampler_sample(s, &snap, &d), 0);
	assert_string_equal(ip_snapshot_irq(&snap, 20)->actions, "apps");
	ufs = ip_snapshot_irq(&snap, 37);
	assert_non_null(ufs);
	assert_true(ufs->tracked);
	/* the host's two devices, as test_phone finds them */
	assert_int_equal(ip_irq_info(ufs)->nr_devs, 2);
	note = ip_sampler_take_note(s);
	assert_non_null(note);
	assert_non_null(strstr(note, "line(s) from line 5 begin with no label"));
	ip_snapshot_free(&snap);

	ip_sampler_free(s);
	ip_root_free(r);
	assert_int_equal(rm_rf(tmp), 0);
}

/*
 * A consumer label that makes up a whole line: 31 bytes (gpiolib-cdev's
 * GPIO_MAX_NAME_SIZE less its NUL) are enough for "\n37:", eight counts and
 * a chip, hwirq and name. Believing that copy of the UFS host's line read
 * made-up counts and another vector (its original dropped as freed);
 * neither copy is believed now, and it is said. The IRQ comes back when
 * the label goes.
 */
static void test_irq_listed_twice(void **state)
{
	char tmp[] = "/tmp/irqpilot-twice-XXXXXX", root[64], *text = NULL, *edited = NULL, *at;
	struct ip_sampler_opts o = { .live_counters = false };
	struct ip_snapshot snap = { 0 };
	const char *label = "\n37: 9 9 9 9 9 9 9 9 G 1 ufshcd", *note;
	struct ip_sampler *s;
	struct ip_root *r;
	struct ip_diag d = { "" };
	size_t len;

	(void)state;
	assert_int_equal(strlen(label), 31);
	copy_fixture("phone-arm64", tmp, root, sizeof(root));
	assert_int_equal(ip_root_open(root, &r), 0);
	assert_int_equal(ip_root_read(r, "proc/interrupts", &text, &len), 0);
	at = strstr(text, "apps_rsc\n");
	assert_non_null(at);
	assert_true(asprintf(&edited, "%.*sapps%s%s", (int)(at - text), text, label, at + strlen("apps_rsc")) > 0);
	put(root, "proc/interrupts", edited);
	assert_int_equal(ip_sampler_new(r, &o, &s), 0);

	assert_int_equal(ip_sampler_sample(s, &snap, &d), 0);
	assert_null(ip_snapshot_irq(&snap, 37));
	assert_string_equal(ip_snapshot_irq(&snap, 20)->actions, "apps");
	assert_non_null(ip_snapshot_irq(&snap, 45));
	note = ip_sampler_take_note(s);
	assert_non_null(note);
	assert_non_null(strstr(note, "IRQ 37 is listed more than once"));
	ip_snapshot_free(&snap);

	/* the label released: the host's line is believed again */
	put(root, "proc/interrupts", text);
	assert_int_equal(ip_sampler_sample(s, &snap, &d), 0);
	assert_non_null(ip_snapshot_irq(&snap, 37));
	assert_true(ip_snapshot_irq(&snap, 37)->tracked);
	assert_int_equal(ip_irq_info(ip_snapshot_irq(&snap, 37))->nr_devs, 2);
	ip_snapshot_free(&snap);

	free(edited);
	free(text);
	ip_sampler_free(s);
	ip_root_free(r);
	assert_int_equal(rm_rf(tmp), 0);
}

/* ---- kept fds of the tracked vectors' files ------------------------- */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the DIR's own */
}

static void sample_ok(struct ip_sampler *s, struct ip_snapshot *snap)
{
	struct ip_diag d = { "" };

	ip_snapshot_free(snap);
	if (ip_sampler_sample(s, snap, &d) < 0)
		fail_msg("%s", d.msg);
}

static void assert_scans(struct ip_sampler *s, unsigned long full, unsigned long fast)
{
	unsigned long nfull, nfast;

	ip_sampler_scan_counts(s, &nfull, &nfast);
	assert_int_equal(nfull, full);
	assert_int_equal(nfast, fast);
}

/* A sampler over a copy of server-2s, past its two full scans and its
 * first fast sample: the tracked vectors' files are kept open. */
struct warm {
	char tmp[40], root[64];
	struct ip_root *r;
	struct ip_sampler *s;
};

/* @clock: the samples' time from irqpilot/time_ns (1 s), for the long timer */
static void warm_sampler(struct warm *w, struct ip_snapshot *snap, bool clock)
{
	struct ip_sampler_opts o = { .live_counters = false };

	snprintf(w->tmp, sizeof(w->tmp), "/tmp/irqpilot-kept-XXXXXX");
	copy_server(w->tmp, w->root, sizeof(w->root));
	if (clock)
		put(w->root, "irqpilot/time_ns", "1000000000\n");
	assert_int_equal(ip_root_open(w->root, &w->r), 0);
	assert_int_equal(ip_sampler_new(w->r, &o, &w->s), 0);
	for (int i = 0; i < 3; i++)
		sample_ok(w->s, snap);
	assert_scans(w->s, 2, 1);
}

static void cool(struct warm *w, struct ip_snapshot *snap)
{
	ip_snapshot_free(snap);
	ip_sampler_free(w->s);
	ip_root_free(w->r);
	assert_int_equal(rm_rf(w->tmp), 0);
}

/*
 * Between full scans the tracked vectors' files are read through fds kept
 * open: a count the kernel changed is seen the next sample, with no file
 * opened again. put() rewrites in place, as the kernel's files change
 * (real sysfs files are never replaced by rename).
 */
static void test_kept_fds_read_fresh(void **state)
{
	struct ip_snapshot snap = { 0 };
	struct warm w;
	const char *root = w.root;
	int fds = 0;

	(void)state;
	warm_sampler(&w, &snap, false);
	assert_int_equal(ip_irq_count_on(ip_snapshot_irq(&snap, 150), 9), 2001);

	/* step 1 changes the affinity: its effective affinity is read, and
	 * that file kept open too; from then on nothing is opened */
	for (int step = 1; step <= 3; step++) {
		char text[128];

		snprintf(text, sizeof(text), "0,0,0,0,0,0,0,0,0,%d,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,77\n",
			 2001 + step * 1000);
		put(root, "sys/kernel/irq/150/per_cpu_count", text);
		put(root, "proc/irq/150/smp_affinity_list", step % 2 ? "9\n" : "8-9\n");
		sample_ok(w.s, &snap);
		assert_scans(w.s, 2, 1 + step);
		assert_int_equal(ip_irq_count_on(ip_snapshot_irq(&snap, 150), 9), 2001 + step * 1000);
		assert_string_equal(cpuset_str(&ip_snapshot_irq(&snap, 150)->info->affinity),
				    step % 2 ? "9" : "8-9");
		/* CPU 31 is offline: /proc/interrupts does not show it */
		assert_int_equal(ip_snapshot_irq(&snap, 150)->total, 2001 + step * 1000);
		if (step == 1)
			fds = count_fds();
		assert_int_equal(count_fds(), fds);
	}
	cool(&w, &snap);
}

/* /proc/interrupts of @root without IRQ @irq's line. */
static void drop_line(const char *root, unsigned irq)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "cd '%s/proc' && grep -v '^ *%u:' interrupts >interrupts.new && cat interrupts.new >interrupts && rm interrupts.new",
		 root, irq);
	assert_int_equal(system(cmd), 0);
}

/*
 * A freed vector (kernel/irq/irqdesc.c, free_desc(): irq_sysfs_del(),
 * unregister_irq_proc()) is seen the sample its kept fd fails, by a full
 * scan at once; and every full scan opens the files again, so a new vector
 * given the number is never read through the old one's fd.
 *
 * A kept kernfs fd reads -ENODEV once its node is removed; a fixture's
 * regular file stays readable after unlink. So the test empties it in place
 * before removing the directory: nothing is what a kept fd gets here.
 */
static void test_kept_fds_vanished_vector(void **state)
{
	struct ip_snapshot snap = { 0 };
	struct warm w;
	const char *root = w.root;
	struct ip_sampler *s;
	char cmd[700];

	(void)state;
	warm_sampler(&w, &snap, true);
	s = w.s;
	assert_true(ip_snapshot_irq(&snap, 151)->tracked);

	put(root, "sys/kernel/irq/151/per_cpu_count", "");
	snprintf(cmd, sizeof(cmd), "rm -r '%s/sys/kernel/irq/151' '%s/proc/irq/151'", root, root);
	assert_int_equal(system(cmd), 0);
	drop_line(root, 151);
	sample_ok(s, &snap);
	assert_scans(s, 3, 1);
	assert_null(ip_snapshot_irq(&snap, 151));
	assert_non_null(ip_snapshot_irq(&snap, 150));
	sample_ok(s, &snap);
	assert_scans(s, 3, 2);

	/* IRQ 150 freed and its number given to a new vector between two
	 * samples: new files (a new inode), announced by a uevent */
	snprintf(cmd, sizeof(cmd), "rm '%s/sys/kernel/irq/150/per_cpu_count'", root);
	assert_int_equal(system(cmd), 0);
	put(root, "sys/kernel/irq/150/per_cpu_count",
	    "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,5,0,0\n");
	ip_sampler_invalidate(s);
	sample_ok(s, &snap);
	assert_scans(s, 4, 2);
	sample_ok(s, &snap);
	assert_scans(s, 4, 3);
	assert_int_equal(ip_irq_count_on(ip_snapshot_irq(&snap, 150), 29), 5);
	assert_int_equal(ip_irq_count_on(ip_snapshot_irq(&snap, 150), 9), 0);

	/* the same without a uevent: the long timer's full scan reopens */
	snprintf(cmd, sizeof(cmd), "rm '%s/sys/kernel/irq/150/per_cpu_count'", root);
	assert_int_equal(system(cmd), 0);
	put(root, "sys/kernel/irq/150/per_cpu_count",
	    "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,7,0\n");
	sample_ok(s, &snap);
	assert_scans(s, 4, 4);
	assert_int_equal(ip_irq_count_on(ip_snapshot_irq(&snap, 150), 29), 5); /* the kept fd: old inode */
	put(root, "irqpilot/time_ns", "62000000000\n");
	sample_ok(s, &snap);
	assert_scans(s, 5, 4);
	sample_ok(s, &snap);
	assert_scans(s, 5, 5);
	assert_int_equal(ip_irq_count_on(ip_snapshot_irq(&snap, 150), 30), 7);
	assert_int_equal(ip_irq_count_on(ip_snapshot_irq(&snap, 150), 29), 0);
	cool(&w, &snap);
}

/* The fd this process holds on a file whose path ends in @suffix, or -1. */
static int kept_fd(const char *suffix)
{
	DIR *d = opendir("/proc/self/fd");
	size_t ls = strlen(suffix);
	struct dirent *e;
	int found = -1;

	assert_non_null(d);
	while ((e = readdir(d))) {
		char link[300], target[4096];
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0 || (size_t)n < ls)
			continue;
		target[n] = '\0';
		if (strcmp(target + n - ls, suffix) == 0)
			found = atoi(e->d_name);
	}
	closedir(d);
	return found;
}

static bool track_60;

static bool tracks_60(void *ctx, unsigned irq, const char *actions)
{
	(void)ctx;
	(void)actions;
	return irq == 60 && track_60;
}

/*
 * A full scan keeps the kept fds of what did not change: below a tree it
 * looks each name up and closes only a file whose name leads elsewhere (a
 * file renamed over it), which is then read anew. The idle minute's full
 * scan used to close and open every vector's files. A vector no longer
 * tracked (the rule that named it, here i40e's misc vector, gone) has
 * its fds closed there.
 *
 * O_NONBLOCK, set on the kept per_cpu_count's open file description (a
 * pread of a regular file ignores it), tells the same fd from one opened
 * again.
 */
static void test_kept_fds_full_scan(void **state)
{
	struct ip_sampler_opts o = { .live_counters = false, .track = tracks_60 };
	struct ip_snapshot snap = { 0 };
	char tmp[40] = "/tmp/irqpilot-kept-XXXXXX", root[64], path[128], path2[128];
	struct ip_sampler *s;
	struct ip_root *r;
	int fd, fds;

	(void)state;
	track_60 = true;
	copy_server(tmp, root, sizeof(root));
	put(root, "irqpilot/time_ns", "1000000000\n");
	assert_int_equal(ip_root_open(root, &r), 0);
	assert_int_equal(ip_sampler_new(r, &o, &s), 0);
	for (int i = 0; i < 3; i++)
		sample_ok(s, &snap);
	assert_scans(s, 2, 1);
	assert_true(ip_snapshot_irq(&snap, 60)->tracked);
	assert_true(kept_fd("/proc/irq/60/smp_affinity_list") >= 0);
	fd = kept_fd("/sys/kernel/irq/150/per_cpu_count");
	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
	fds = count_fds();

	put(root, "proc/irq/150/smp_affinity_list.new", "8\n");
	snprintf(path, sizeof(path), "%s/proc/irq/150/smp_affinity_list.new", root);
	snprintf(path2, sizeof(path2), "%s/proc/irq/150/smp_affinity_list", root);
	assert_int_equal(rename(path, path2), 0);
	track_60 = false;
	put(root, "irqpilot/time_ns", "62000000000\n");
	sample_ok(s, &snap);
	assert_scans(s, 3, 1);

	fd = kept_fd("/sys/kernel/irq/150/per_cpu_count");
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK); /* the same fd, not reopened */
	assert_string_equal(cpuset_str(&ip_snapshot_irq(&snap, 150)->info->affinity), "8");
	assert_false(ip_snapshot_irq(&snap, 60)->tracked);
	assert_int_equal(kept_fd("/proc/irq/60/smp_affinity_list"), -1);
	/* 60's three (per_cpu_count, both affinity lists) closed; 150's
	 * renamed list closed and opened again */
	assert_int_equal(count_fds(), fds - 3);

	ip_snapshot_free(&snap);
	ip_sampler_free(s);
	ip_root_free(r);
	assert_int_equal(rm_rf(tmp), 0);
}

/* IRQ 150's CPU 9 count in server-2s' /proc/interrupts (field 11), in place. */
static void set_line_150(const char *root, unsigned cpu9)
{
	char cmd[700];

	snprintf(cmd, sizeof(cmd),
		 "cd '%s/proc' && awk -v n=%u '$1 == \"150:\" { $11 = n } { print }' interrupts >interrupts.new && "
		 "cat interrupts.new >interrupts && rm interrupts.new",
		 root, cpu9);
	assert_int_equal(system(cmd), 0);
}

static void pcc_150(const char *root, unsigned cpu9)
{
	char text[128];

	snprintf(text, sizeof(text), "0,0,0,0,0,0,0,0,0,%u,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,77\n", cpu9);
	put(root, "sys/kernel/irq/150/per_cpu_count", text);
}

static void assert_note(struct ip_sampler *s, const char *what)
{
	const char *n = ip_sampler_take_note(s);

	assert_non_null(n);
	if (!strstr(n, what))
		fail_msg("note \"%s\" does not say \"%s\"", n, what);
}

/*
 * A kept file that reads empty is a fixture caught between the truncate and
 * the write of an in-place rewrite, not a freed vector: no kernel shows an
 * empty per_cpu_count or smp_affinity_list (seq_read_iter() runs the whole
 * show() before it copies anything out, and per_cpu_count_show() and
 * show_irq_affinity() end in "\n"), and a freed vector's kept fd fails
 * (-ENODEV, -EIO). The file is read by name once more; empty there too, the
 * sample keeps what it knew of the vector, says so, and forces no full
 * scan. The counts are read from /proc/interrupts that once, and the rates
 * derived across it are the kernel's.
 */
static void test_kept_fds_empty_read(void **state)
{
	struct ip_snapshot a = { 0 }, b = { 0 };
	struct ip_model m = { 0 };
	struct ip_diag d = { "" };
	struct warm w;
	const char *root = w.root;
	struct ip_sampler *s;
	struct ip_irq *q;

	(void)state;
	warm_sampler(&w, &a, true);
	s = w.s;
	/* a new affinity: its effective affinity is read and kept open too */
	put(root, "proc/irq/150/smp_affinity_list", "9\n");
	sample_ok(s, &a);
	assert_scans(s, 2, 2);
	assert_string_equal(cpuset_str(&ip_snapshot_irq(&a, 150)->info->affinity), "9");
	assert_true(ip_snapshot_irq(&a, 150)->info->have_effective);
	assert_null(ip_sampler_take_note(s));

	/* smp_affinity_list caught empty, twice in a row: the affinity read
	 * last stands, and no full scan follows */
	put(root, "proc/irq/150/smp_affinity_list", "");
	for (int i = 0; i < 2; i++) {
		sample_ok(s, &a);
		assert_scans(s, 2, 3 + i);
		q = ip_snapshot_irq(&a, 150);
		assert_true(q->info->have_proc);
		assert_string_equal(cpuset_str(&q->info->affinity), "9");
		assert_note(s, "smp_affinity_list read empty");
	}
	put(root, "proc/irq/150/smp_affinity_list", "9\n");
	sample_ok(s, &a);
	assert_scans(s, 2, 5);
	assert_string_equal(cpuset_str(&ip_snapshot_irq(&a, 150)->info->affinity), "9");

	/* per_cpu_count caught empty: this sample counts from /proc/interrupts
	 * (the kernel's same kstat_irqs), the vector is the same one, and its
	 * rate is what the kernel counted */
	put(root, "irqpilot/time_ns", "2000000000\n");
	pcc_150(root, 3001);
	set_line_150(root, 3001);
	sample_ok(s, &a);
	assert_scans(s, 2, 6);
	put(root, "irqpilot/time_ns", "3000000000\n");
	put(root, "sys/kernel/irq/150/per_cpu_count", "");
	set_line_150(root, 4001);
	if (ip_sampler_sample(s, &b, &d) < 0)
		fail_msg("%s", d.msg);
	assert_scans(s, 3, 6);
	assert_note(s, "per_cpu_count read empty");
	q = ip_snapshot_irq(&b, 150);
	assert_true(q->tracked);
	assert_int_equal(ip_irq_count_on(q, 9), 4001);
	assert_string_equal(cpuset_str(&q->info->affinity), "9");
	assert_int_equal(ip_model_derive(&a, &b, &m, &d), 0);
	assert_true(fabs(m.irq[q - b.irqs].total - 1000) < 1e-6);
	assert_true(fabs(ip_irq_rate_on(&m.irq[q - b.irqs], 9) - 1000) < 1e-6);
	/* it fired on CPU 9 alone: its rates span that one CPU */
	assert_int_equal(m.irq[q - b.irqs].first, 9);
	assert_int_equal(m.irq[q - b.irqs].nr, 1);
	ip_model_free(&m);

	/* and the next sample is a fast one again, through fds opened anew */
	put(root, "irqpilot/time_ns", "4000000000\n");
	pcc_150(root, 5001);
	set_line_150(root, 5001);
	sample_ok(s, &a);
	assert_scans(s, 3, 7);
	assert_int_equal(ip_irq_count_on(ip_snapshot_irq(&a, 150), 9), 5001);
	assert_null(ip_sampler_take_note(s));
	ip_snapshot_free(&b);
	cool(&w, &a);
}


/* laptop-hybrid's IRQ @irq: CPU 9's count in /proc/interrupts (field 11)
 * and per_cpu_count, in place; @line false: per_cpu_count only. */
static void laptop_count(const char *root, unsigned irq, unsigned cpu9, bool line)
{
	char cmd[700], rel[64], text[64];

	if (line) {
		snprintf(cmd, sizeof(cmd),
			 "cd '%s/proc' && awk -v n=%u '$1 == \"%u:\" { $11 = n } { print }' interrupts >interrupts.new && "
			 "cat interrupts.new >interrupts && rm interrupts.new",
			 root, cpu9, irq);
		assert_int_equal(system(cmd), 0);
	}
	snprintf(rel, sizeof(rel), "sys/kernel/irq/%u/per_cpu_count", irq);
	snprintf(text, sizeof(text), "0,0,0,0,0,0,0,0,0,%u,0,0\n", cpu9);
	put(root, rel, text);
}

static void at_s(const char *root, unsigned sec)
{
	char text[32];

	snprintf(text, sizeof(text), "%u000000000\n", sec);
	put(root, "irqpilot/time_ns", text);
}

/*
 * laptop-hybrid copied to @tmp/t (@setup, a shell command, then run in its
 * proc/ when not NULL), sampled at 1 s and at 2 s: two full scans, after
 * which the full cache says which lines are passive. IRQ 134 (nvme0q10)
 * is managed.
 */
static void laptop_two_scans(const char *tmp, const char *setup, char *root, size_t size,
			     struct ip_root **r, struct ip_sampler **s, struct ip_snapshot *snap)
{
	struct ip_sampler_opts o = { .live_counters = false };
	char cmd[700];

	snprintf(root, size, "%s/t", tmp);
	snprintf(cmd, sizeof(cmd), "cp -a '%s' '%s'", FIXTURES "laptop-hybrid", root);
	if (setup)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " && cd '%s/proc' && %s", root, setup);
	assert_int_equal(system(cmd), 0);
	at_s(root, 1);
	assert_int_equal(ip_root_open(root, r), 0);
	assert_int_equal(ip_sampler_new(*r, &o, s), 0);
	sample_ok(*s, snap);
	assert_int_not_equal(ip_snapshot_irq(snap, 134)->info->managed, IP_MANAGED_NO);
	at_s(root, 2);
	sample_ok(*s, snap);
	assert_scans(*s, 2, 0);
}

/*
 * A managed vector without an IRQ thread (laptop-hybrid's nvme0q10, IRQ
 * 134) is passive: between full scans none of its files is read, and its
 * counts grow at the rate measured between the last two full scans. The
 * admin vector (IRQ 124, not managed) is read every sample.
 */
static void test_passive_vector_held(void **state)
{
	char tmp[40] = "/tmp/irqpilot-passive-XXXXXX", root[64];
	struct ip_snapshot snap = { 0 };
	struct ip_sampler *s;
	struct ip_root *r;

	(void)state;
	assert_non_null(mkdtemp(tmp));
	laptop_two_scans(tmp, NULL, root, sizeof(root), &r, &s, &snap);
	for (int t = 0; t < snap.nr_threads; t++)
		assert_int_not_equal(snap.threads[t].irq, 134);

	/* fast: 134 is held (no rate yet), 124 read */
	at_s(root, 3);
	laptop_count(root, 134, 99999, false);
	put(root, "proc/irq/134/smp_affinity_list", "3\n");
	laptop_count(root, 124, 777, false);
	sample_ok(s, &snap);
	assert_scans(s, 2, 1);
	assert_int_equal(ip_irq_count_on(ip_snapshot_irq(&snap, 134), 9), 12310);
	assert_int_equal(ip_snapshot_irq(&snap, 134)->total, 12310);
	assert_string_equal(cpuset_str(&ip_snapshot_irq(&snap, 134)->info->affinity), "9");
	assert_int_equal(ip_irq_count_on(ip_snapshot_irq(&snap, 124), 9), 777);

	/* the long timer's full scan reads it: 6,000 in 60 s */
	at_s(root, 62);
	laptop_count(root, 134, 18310, true);
	put(root, "proc/irq/134/smp_affinity_list", "9\n");
	sample_ok(s, &snap);
	assert_scans(s, 3, 1);
	assert_int_equal(ip_irq_count_on(ip_snapshot_irq(&snap, 134), 9), 18310);

	/* and holds it at 100 a second, whatever the file says */
	at_s(root, 72);
	laptop_count(root, 134, 5, false);
	sample_ok(s, &snap);
	assert_scans(s, 3, 2);
	assert_int_equal(ip_irq_count_on(ip_snapshot_irq(&snap, 134), 9), 19310);
	assert_int_equal(ip_snapshot_irq(&snap, 134)->total, 19310);
	assert_int_equal(ip_irq_count_on(ip_snapshot_irq(&snap, 134), 8), 0);

	ip_snapshot_free(&snap);
	ip_sampler_free(s);
	ip_root_free(r);
	assert_int_equal(rm_rf(tmp), 0);
}

/*
 * With an IRQ thread (threadirqs) the same managed vector is not passive:
 * its thread is placed by its counts, so per_cpu_count is read every
 * sample. Its /proc/irq/N/ is not: user space cannot move a managed
 * vector, so what the files said at the full scan holds until the next.
 */
static void test_managed_thread_dir_kept(void **state)
{
	char tmp[40] = "/tmp/irqpilot-mthread-XXXXXX", root[64];
	struct ip_snapshot snap = { 0 };
	struct ip_sampler *s;
	struct ip_root *r;
	bool threaded = false;

	(void)state;
	assert_non_null(mkdtemp(tmp));
	laptop_two_scans(tmp,
			 "cp -a 204 205 && "
			 "sed -i 's/^204 (irq\\/140-iwlwifi)/205 (irq\\/134-nvme0q10)/' 205/stat && "
			 "sed -i 's/irq\\/140-iwlwifi/irq\\/134-nvme0q10/' 205/status 205/comm",
			 root, sizeof(root), &r, &s, &snap);
	for (int t = 0; t < snap.nr_threads; t++)
		threaded |= snap.threads[t].irq == 134 && snap.threads[t].pid == 205;
	assert_true(threaded);

	/* fast: its counts are read, its affinity file is not */
	at_s(root, 3);
	laptop_count(root, 134, 99999, false);
	put(root, "proc/irq/134/smp_affinity_list", "3\n");
	sample_ok(s, &snap);
	assert_scans(s, 2, 1);
	assert_int_equal(ip_irq_count_on(ip_snapshot_irq(&snap, 134), 9), 99999);
	assert_string_equal(cpuset_str(&ip_snapshot_irq(&snap, 134)->info->affinity), "9");

	/* the long timer's full scan reads it all again */
	at_s(root, 62);
	laptop_count(root, 134, 100100, true);
	sample_ok(s, &snap);
	assert_scans(s, 3, 1);
	assert_string_equal(cpuset_str(&ip_snapshot_irq(&snap, 134)->info->affinity), "3");

	ip_snapshot_free(&snap);
	ip_sampler_free(s);
	ip_root_free(r);
	assert_int_equal(rm_rf(tmp), 0);
}

/*
 * The kept fds are a quarter of RLIMIT_NOFILE at most; the files past that
 * are read by name and give the same snapshot. None is left after free.
 */
static int kept_fds(const char *root, bool capped, int *before_out)
{
	struct ip_sampler_opts full_o = { .full_scan_always = true }, o = { .live_counters = false };
	struct ip_snapshot a = { 0 }, b = { 0 };
	struct ip_sampler *s, *full;
	struct rlimit old, low;
	struct ip_root *r;
	int before, during, after;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 40;
	assert_int_equal(ip_root_open(root, &r), 0);
	before = count_fds();
	if (capped)
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	assert_int_equal(ip_sampler_new(r, &o, &s), 0);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(ip_sampler_new(r, &full_o, &full), 0);
	for (int i = 0; i < 8; i++) {
		sample_ok(s, &a);
		sample_ok(full, &b);
		assert_int_equal(a.nr_irqs, b.nr_irqs);
		for (int k = 0; k < a.nr_irqs; k++) {
			assert_int_equal(a.irqs[k].total, b.irqs[k].total);
			if (a.irqs[k].info)
				assert_string_equal(cpuset_str(&a.irqs[k].info->affinity),
						    cpuset_str(&b.irqs[k].info->affinity));
		}
	}
	assert_scans(s, 2, 6);
	ip_sampler_free(full);
	during = count_fds();
	ip_snapshot_free(&a);
	ip_snapshot_free(&b);
	ip_sampler_free(s);
	/* the files read every cycle by name stay with the root
	 * (ip_root_read_again()) until it is freed */
	after = count_fds();
	ip_root_free(r);
	assert_int_equal(count_fds(), before - 1); /* and the root's own */
	*before_out = before;
	return during - after;
}

static void test_kept_fds_bounded(void **state)
{
	char tmp[] = "/tmp/irqpilot-bound-XXXXXX", root[64];
	int before, capped, uncapped;

	(void)state;
	copy_server(tmp, root, sizeof(root));
	uncapped = kept_fds(root, false, &before);
	capped = kept_fds(root, true, &before);
	/* 40 / 4 */
	assert_int_equal(capped, 10);
	assert_true(uncapped > capped);
	assert_int_equal(rm_rf(tmp), 0);
}

/*
 * The long timer's full scan: 60 s where a scan is cheap (every fixture,
 * and machines up to hundreds of CPUs); where one costs more than 60 ms of
 * CPU, spaced to a thousandth of one CPU, at most 10 minutes apart.
 */
static void test_full_scan_period(void **state)
{
	const uint64_t ms = 1000000, s = 1000 * ms;

	(void)state;
	assert_int_equal(ip_full_scan_period_ns(0), 60 * s);
	assert_int_equal(ip_full_scan_period_ns(1 * ms), 60 * s);
	assert_int_equal(ip_full_scan_period_ns(60 * ms), 60 * s);
	/* the bench's 1,024 CPUs x 8,000 IRQs: 205 ms a scan */
	assert_int_equal(ip_full_scan_period_ns(205 * ms), 205 * s);
	assert_int_equal(ip_full_scan_period_ns(600 * ms), 600 * s);
	assert_int_equal(ip_full_scan_period_ns(5 * s), IP_FULL_SCAN_MAX_NS);
	assert_int_equal(ip_full_scan_period_ns(UINT64_MAX / 2), IP_FULL_SCAN_MAX_NS);
}

/*
 * The long timer on a 10 s interval: the full scan comes a period after
 * the last, even when the sample that ends it was woken a few ms earlier
 * in its interval than that one (then it was 60 s or 70 s by a hair);
 * a sample a whole second short of the period is still a fast one. The
 * scan's CPU time is kept for the metrics.
 */
static void test_full_scan_on_time(void **state)
{
	struct ip_snapshot snap = { 0 };
	uint64_t cpu_ns = 1, period_ns = 0;
	struct warm w;

	(void)state;
	warm_sampler(&w, &snap, true);
	ip_sampler_full_scan_cost(w.s, &cpu_ns, &period_ns);
	assert_true(cpu_ns > 0);
	assert_int_equal(period_ns, UINT64_C(60000000000));
	/* 1.000 s then: 10.0 s ... 50.0 s later, fast */
	for (int k = 1; k <= 5; k++) {
		char ns[32];

		snprintf(ns, sizeof(ns), "%d000000000\n", 1 + 10 * k);
		put(w.root, "irqpilot/time_ns", ns);
		sample_ok(w.s, &snap);
		assert_scans(w.s, 2, 1 + k);
	}
	/* woken 3 ms sooner in its interval: 59.997 s after the scan */
	put(w.root, "irqpilot/time_ns", "60997000000\n");
	sample_ok(w.s, &snap);
	assert_scans(w.s, 3, 6);
	/* the next period, a second short: still fast; then on time */
	put(w.root, "irqpilot/time_ns", "119997000000\n");
	sample_ok(w.s, &snap);
	assert_scans(w.s, 3, 7);
	put(w.root, "irqpilot/time_ns", "120996000000\n");
	sample_ok(w.s, &snap);
	assert_scans(w.s, 4, 7);
	cool(&w, &snap);
}

/*
 * The cursor lookups (a device's vectors against the snapshot's lines, the
 * lines against the policy's history) answer as the searches do, in any
 * order: ascending, repeated, backwards, missing, past the last, far ahead.
 */
static void test_cursor_lookups_any_order(void **state)
{
	static const unsigned have[] = { 3, 5, 9, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 200, 201 };
	static const unsigned ask[] = { 3, 5, 5, 9, 4, 200, 31, 2, 40, 39, 41, 201, 202, 0, 3,
					36, 30, 37, 38, 39, 40, 1000, 9, 200 };
	struct ip_irq irqs[ARRAY_SIZE(have)];
	struct ip_snapshot snap = { .irqs = irqs, .nr_irqs = (int)ARRAY_SIZE(have) };
	struct ip_history h;
	size_t at = 0, hat = 0;

	(void)state;
	memset(irqs, 0, sizeof(irqs));
	ip_history_init(&h);
	for (size_t i = 0; i < ARRAY_SIZE(have); i++) {
		irqs[i].irq = have[i];
		/* the history holds every other one */
		if (i % 2)
			assert_non_null(ip_history_get(&h, have[i]));
	}
	for (size_t i = 0; i < ARRAY_SIZE(ask); i++) {
		assert_ptr_equal(ip_snapshot_irq_next(&snap, ask[i], &at), ip_snapshot_irq(&snap, ask[i]));
		assert_ptr_equal(ip_history_find_next(&h, ask[i], &hat), ip_history_find(&h, ask[i]));
	}
	assert_null(ip_history_find_next(NULL, 3, &hat));
	ip_history_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_phone),
		cmocka_unit_test(test_newline_in_irq_name),
		cmocka_unit_test(test_irq_listed_twice),
		cmocka_unit_test(test_laptop_managed_nvme),
		cmocka_unit_test(test_nvme_mpath_head_ios),
		cmocka_unit_test(test_server_threads_and_isolation),
		cmocka_unit_test(test_shared_intx_line),
		cmocka_unit_test(test_capture_ahci_rates),
		cmocka_unit_test(test_submit_cpus),
		cmocka_unit_test(test_wrap_and_reuse),
		cmocka_unit_test(test_thread_rates_by_pid),
		cmocka_unit_test(test_capture_roundtrip),
		cmocka_unit_test(test_garbled_and_vanished),
		cmocka_unit_test(test_vector_cache),
		cmocka_unit_test(test_threads_tracked_only),
		cmocka_unit_test(test_sleeping_thread_stat_held),
		cmocka_unit_test(test_own_thread_write_seen),
		cmocka_unit_test(test_fast_path_same_model),
		cmocka_unit_test(test_no_sparse_irq),
		cmocka_unit_test(test_isolation_reread_every_sample),
		cmocka_unit_test(test_kept_fds_read_fresh),
		cmocka_unit_test(test_kept_fds_vanished_vector),
		cmocka_unit_test(test_kept_fds_full_scan),
		cmocka_unit_test(test_kept_fds_empty_read),
		cmocka_unit_test(test_kept_fds_bounded),
		cmocka_unit_test(test_passive_vector_held),
		cmocka_unit_test(test_managed_thread_dir_kept),
		cmocka_unit_test(test_full_scan_period),
		cmocka_unit_test(test_full_scan_on_time),
		cmocka_unit_test(test_cursor_lookups_any_order),
		cmocka_unit_test(test_model_text_names),
		cmocka_unit_test(test_hotplug_keeps_rates),
		cmocka_unit_test(test_hotplug_during_read),
		cmocka_unit_test(test_disk_without_uevent),
		cmocka_unit_test(test_reused_vector_rates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
