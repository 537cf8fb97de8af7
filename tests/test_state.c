// SPDX-License-Identifier: GPL-2.0-or-later
/* The state file that lets irqpilotd --restore work after kill -9. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "irqpilot/state.h"

static char dir[] = "/tmp/irqpilot-state-XXXXXX";
static char path[128];

static int setup(void **state)
{
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/state", dir);
	return 0;
}

static int teardown(void **state)
{
	unlink(path);
	return rmdir(dir);
}

static void test_round_trip(void **state)
{
	struct ip_history h, back;
	struct ip_diag d = { "" };
	struct ip_irq_hist *e;
	struct ip_cqdev_hist *cq;

	ip_history_init(&h);
	e = ip_history_get(&h, 45);
	e->orig = strdup("0-3");
	h.threads = calloc(1, sizeof(*h.threads));
	h.nr_threads = 1;
	h.threads[0] = (struct ip_thread_orig){ .pid = 812, .irq = 45, .have_affinity = true,
						 .have_sched = true, .policy = 1, .priority = 50 };
	cpuset_parse_list(&h.threads[0].allowed, "0-3,8");
	h.rq = calloc(1, sizeof(*h.rq));
	h.nr_rq = 1;
	snprintf(h.rq[0].device, sizeof(h.rq[0].device), "sda");
	h.rq[0].value = 1;
	cq = ip_history_cqdev_get(&h, "sdb");
	cq->major = 8;
	cq->minor = 16;
	cq->attached_by_us = true;
	assert_int_equal(ip_state_save(&h, path, &d), 0);

	ip_history_init(&back);
	assert_int_equal(ip_state_load(path, &back, &d), 0);
	assert_string_equal(ip_history_find(&back, 45)->orig, "0-3");
	assert_int_equal(back.nr_threads, 1);
	assert_int_equal(back.threads[0].pid, 812);
	assert_true(back.threads[0].have_affinity && back.threads[0].have_sched);
	assert_string_equal(cpuset_str(&back.threads[0].allowed), "0-3,8");
	assert_int_equal(back.threads[0].priority, 50);
	assert_int_equal(back.nr_rq, 1);
	assert_string_equal(back.rq[0].device, "sda");
	assert_non_null(ip_history_cqdev_find(&back, "sdb"));
	assert_true(ip_history_cqdev_find(&back, "sdb")->attached_by_us);
	assert_int_equal(ip_history_cqdev_find(&back, "sdb")->minor, 16);
	ip_history_free(&back);
	ip_history_free(&h);
}

static void test_nothing_left_removes_the_file(void **state)
{
	struct ip_history h;
	struct ip_diag d = { "" };

	ip_history_init(&h);
	assert_int_equal(ip_state_save(&h, path, &d), 0);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(ip_state_load(path, &h, &d), -ENOENT);
}

static void test_garbled_file(void **state)
{
	struct ip_history h;
	struct ip_diag d = { "" };
	FILE *f = fopen(path, "w");

	fputs("# irqpilot state 1\nirq 45 0-3\nirq x y\n", f);
	fclose(f);
	ip_history_init(&h);
	assert_int_equal(ip_state_load(path, &h, &d), -EINVAL);
	assert_non_null(strstr(d.msg, ":3: not a state record"));
	ip_history_free(&h);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_nothing_left_removes_the_file),
		cmocka_unit_test(test_garbled_file),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
