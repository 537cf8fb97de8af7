// SPDX-License-Identifier: GPL-2.0-or-later
/* The metrics: counters that only grow, and their text as the format has it. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/metrics.h"
#include "irqpilot/report.h"

static char *render(const struct ip_metrics *mx)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	ip_report_metrics_text(f, mx);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* The one sample line of @text that starts with @prefix, or NULL. */
static const char *line_of(const char *text, const char *prefix, char *buf, size_t size)
{
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");

		if (strncmp(p, prefix, strlen(prefix)) == 0 && n < size) {
			memcpy(buf, p, n);
			buf[n] = '\0';
			return buf;
		}
		p += n + (p[n] == '\n');
	}
	return NULL;
}

static void test_escape(void **state)
{
	char buf[64];

	(void)state;
	assert_string_equal(ip_report_prom_escape("a\"b\\c\nd", buf, sizeof(buf)), "a\\\"b\\\\c\\nd");
	assert_string_equal(ip_report_prom_escape("sda", buf, sizeof(buf)), "sda");
	/* cut at a whole escape, never half of one */
	assert_string_equal(ip_report_prom_escape("ab\"", buf, 4), "ab");
}

/* A device named with everything a label value must escape stays one
 * sample line with its label intact. */
static void test_hostile_label(void **state)
{
	struct ip_metrics mx;
	struct ip_metrics_dev dev = { .device = "x\"y\\z\nw", .locality = 0.5 };
	char line[256];
	char *text;

	(void)state;
	ip_metrics_init(&mx);
	mx.dev = &dev;
	mx.nr_dev = 1;
	mx.apply_errors[EIO] = 3;
	mx.apply_errors[EPERM] = 1;
	text = render(&mx);
	assert_non_null(line_of(text, "irqpilot_completion_locality_ratio{", line, sizeof(line)));
	assert_string_equal(line, "irqpilot_completion_locality_ratio{device=\"x\\\"y\\\\z\\nw\"} 0.5");
	assert_non_null(line_of(text, "irqpilot_apply_errors_total{errno=\"EIO\"}", line, sizeof(line)));
	assert_string_equal(line, "irqpilot_apply_errors_total{errno=\"EIO\"} 3");
	assert_non_null(line_of(text, "irqpilot_apply_errors_total{errno=\"EPERM\"} 1", line, sizeof(line)));
	/* every family says what it is before its samples */
	assert_non_null(strstr(text, "# HELP irqpilot_moves_total "));
	assert_non_null(strstr(text, "# TYPE irqpilot_moves_total counter\n"));
	assert_non_null(strstr(text, "# TYPE irqpilot_completion_locality_ratio gauge\n"));
	free(text);
}

/* irqpilot_cq's own counts restart with a new thread or a reloaded module;
 * the daemon's do not. */
static void test_cq_counters_only_grow(void **state)
{
	struct ip_cq_thread t = { .disk = "nvme0n1", .hwq = 2, .pid = 100, .completions = 100, .stalls = 1 };
	struct ip_snapshot s = { .have_cq = true, .nr_cq = 1, .cq = &t };
	struct ip_step st = { .model = { .cur = &s } };
	struct ip_metrics mx;
	char line[256];
	char *text;

	(void)state;
	ip_metrics_init(&mx);
	assert_int_equal(ip_metrics_update(&mx, &st), 0);
	t.completions = 150;
	assert_int_equal(ip_metrics_update(&mx, &st), 0);
	assert_int_equal(mx.cq[0].completions, 150);
	/* detached and attached again: another thread, counting from 0 */
	t.pid = 200;
	t.completions = 10;
	t.stalls = 0;
	assert_int_equal(ip_metrics_update(&mx, &st), 0);
	assert_int_equal(mx.cq[0].completions, 160);
	/* the module reloaded under the same pid: its count went down */
	t.completions = 5;
	assert_int_equal(ip_metrics_update(&mx, &st), 0);
	assert_int_equal(mx.cq[0].completions, 165);
	assert_int_equal(mx.cq[0].stalls, 1);
	assert_int_equal(mx.cycles, 4);
	text = render(&mx);
	assert_non_null(line_of(text, "irqpilot_cq_completions_total{", line, sizeof(line)));
	assert_string_equal(line, "irqpilot_cq_completions_total{device=\"nvme0n1\",queue=\"2\"} 165");
	assert_non_null(line_of(text, "irqpilot_cq_loaded 1", line, sizeof(line)));
	/* gone from the module: its counters stay, its gauges go */
	s.nr_cq = 0;
	s.have_cq = false;
	assert_int_equal(ip_metrics_update(&mx, &st), 0);
	free(text);
	text = render(&mx);
	assert_non_null(line_of(text, "irqpilot_cq_completions_total{device=\"nvme0n1\",queue=\"2\"} 165", line,
				sizeof(line)));
	assert_null(line_of(text, "irqpilot_cq_max_wait_seconds{", line, sizeof(line)));
	free(text);
	ip_metrics_free(&mx);
}

/* Two CPUs, each its own domain; one disk on IRQ 37 that submits on CPU 1
 * and completes 3/4 on CPU 1: the counts per domain, and the share. */
static void test_device_counts_and_share(void **state)
{
	struct ip_cpu cpus[2] = { { .id = 0, .domain = 0 }, { .id = 1, .domain = 1 } };
	struct ip_domain doms[2] = { { .id = 0 }, { .id = 1 } };
	struct ip_vector vec = { .irq = 37, .queue = -1 };
	struct ip_blockdev dev = { .name = "sda", .nr_vectors = 1, .vectors = &vec };
	struct ip_irq irq = { .irq = 37, .tracked = true };
	struct ip_snapshot cur = { 0 }, prev = { 0 };
	float irq_pc[2] = { 25, 75 };
	double sub_pc[2] = { 0, 100 };
	struct ip_irq_rate ir = { .total = 100, .first = 0, .nr = 2, .percpu = irq_pc };
	struct ip_dev_rate dr = { .submit = sub_pc, .submit_total = 100 };
	struct ip_step st = { 0 };
	struct ip_metrics mx;

	(void)state;
	cpuset_set(&doms[0].cpus, 0);
	cpuset_set(&doms[1].cpus, 1);
	cur.topo.nr_cpus = 2;
	cur.topo.cpus = cpus;
	cur.topo.nr_domains = 2;
	cur.topo.domains = doms;
	cur.storage.nr_devs = 1;
	cur.storage.devs = &dev;
	cur.nr_irqs = 1;
	cur.irqs = &irq;
	st.model = (struct ip_model){ .cur = &cur, .prev = &prev, .interval_s = 2, .irq = &ir, .dev = &dr };
	ip_metrics_init(&mx);
	assert_int_equal(ip_metrics_update(&mx, &st), 0);
	assert_int_equal(ip_metrics_update(&mx, &st), 0);
	assert_int_equal(mx.nr_devdom, 2);
	for (size_t i = 0; i < mx.nr_devdom; i++) {
		const struct ip_metrics_devdom *e = &mx.devdom[i];

		assert_string_equal(e->device, "sda");
		/* rates times the 2 s interval, over two cycles */
		if (!strcmp(e->domain, "0")) {
			assert_int_equal(e->interrupts, 100);
			assert_true(e->submissions == 0);
		} else {
			assert_string_equal(e->domain, "1");
			assert_int_equal(e->interrupts, 300);
			assert_true(e->submissions == 400);
		}
	}
	assert_int_equal(mx.nr_dev, 1);
	assert_true(mx.dev[0].locality > 0.749 && mx.dev[0].locality < 0.751);
	/* the domains regroup (one of both CPUs): the next cycle's counts go
	 * to that domain's list, not to the list its index had */
	cpus[1].domain = 0;
	cpuset_set(&doms[0].cpus, 1);
	cur.topo.nr_domains = 1;
	assert_int_equal(ip_metrics_update(&mx, &st), 0);
	assert_int_equal(mx.nr_devdom, 3);
	assert_string_equal(mx.devdom[2].domain, "0-1");
	assert_int_equal(mx.devdom[2].interrupts, 200);
	assert_true(mx.devdom[2].submissions == 200);
	assert_int_equal(mx.devdom[0].interrupts + mx.devdom[1].interrupts, 400);
	ip_metrics_free(&mx);
}

/* A line two queues of one disk share (listed once per queue) is counted
 * once for that disk; another disk on the same line counts it too. */
static void test_shared_vector_counted_once_per_disk(void **state)
{
	struct ip_cpu cpus[2] = { { .id = 0, .domain = 0 }, { .id = 1, .domain = 1 } };
	struct ip_domain doms[2] = { { .id = 0 }, { .id = 1 } };
	struct ip_vector va[2] = { { .irq = 37, .queue = 0 }, { .irq = 37, .queue = 1 } };
	struct ip_vector vb = { .irq = 37, .queue = -1 };
	struct ip_blockdev devs[2] = { { .name = "sda", .nr_vectors = 2, .vectors = va },
				       { .name = "sdb", .nr_vectors = 1, .vectors = &vb } };
	struct ip_irq irq = { .irq = 37, .tracked = true };
	struct ip_snapshot cur = { 0 }, prev = { 0 };
	float irq_pc[2] = { 25, 75 };
	struct ip_irq_rate ir = { .total = 100, .first = 0, .nr = 2, .percpu = irq_pc };
	struct ip_dev_rate dr[2] = { { 0 }, { 0 } };
	struct ip_step st = { 0 };
	struct ip_metrics mx;

	(void)state;
	cpuset_set(&doms[0].cpus, 0);
	cpuset_set(&doms[1].cpus, 1);
	cur.topo = (struct ip_topology){ .nr_cpus = 2, .cpus = cpus, .nr_domains = 2, .domains = doms };
	cur.storage.nr_devs = 2;
	cur.storage.devs = devs;
	cur.nr_irqs = 1;
	cur.irqs = &irq;
	st.model = (struct ip_model){ .cur = &cur, .prev = &prev, .interval_s = 2, .irq = &ir, .dev = dr };
	ip_metrics_init(&mx);
	assert_int_equal(ip_metrics_update(&mx, &st), 0);
	assert_int_equal(mx.nr_devdom, 4);
	for (size_t i = 0; i < mx.nr_devdom; i++)
		assert_int_equal(mx.devdom[i].interrupts, strcmp(mx.devdom[i].domain, "0") ? 150 : 50);
	ip_metrics_free(&mx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_hostile_label),
		cmocka_unit_test(test_cq_counters_only_grow),
		cmocka_unit_test(test_device_counts_and_share),
		cmocka_unit_test(test_shared_vector_counted_once_per_disk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
