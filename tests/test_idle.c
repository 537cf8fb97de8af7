// SPDX-License-Identifier: GPL-2.0-or-later
/* When the daemon sleeps without a timer, probes, or cycles (idle.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "irqpilot/idle.h"

static void test_busy_cycles_at_the_interval(void **state)
{
	(void)state;
	/* I/O going on: the wakeup stays disarmed, whatever is open */
	assert_int_equal(ip_idle_wait(false, false, 8), IP_WAIT_INTERVAL);
	assert_int_equal(ip_idle_wait(false, false, 0), IP_WAIT_INTERVAL);
}

static void test_idle_with_perf_sleeps_without_timer(void **state)
{
	(void)state;
	assert_int_equal(ip_idle_wait(true, false, 1), IP_WAIT_EVENT);
	assert_int_equal(ip_idle_wait(true, false, 1024), IP_WAIT_EVENT);
}

static void test_idle_without_perf_backs_off(void **state)
{
	(void)state;
	/* task sampling, --root, --replay, or the wakeup failed to open */
	assert_int_equal(ip_idle_wait(true, false, 0), IP_WAIT_PROBE);
}

static void test_capture_keeps_the_interval(void **state)
{
	(void)state;
	assert_int_equal(ip_idle_wait(true, true, 4), IP_WAIT_INTERVAL);
	assert_int_equal(ip_idle_wait(true, true, 0), IP_WAIT_INTERVAL);
}

static void test_probe(void **state)
{
	const uint64_t s = 1000000;

	(void)state;
	/* same count, last full cycle 5 s ago, back-off 10 s: wait */
	assert_true(ip_idle_probe_quiet(true, 42, 42, 105 * s, 100 * s, 10.0));
	/* a completed I/O since the last probe: cycle now */
	assert_false(ip_idle_probe_quiet(true, 42, 43, 105 * s, 100 * s, 10.0));
	/* the first probe after going idle has no baseline: cycle, so the
	 * baseline is taken together with a full sample */
	assert_false(ip_idle_probe_quiet(false, 0, 42, 105 * s, 100 * s, 10.0));
	/* the back-off's full cycle is due */
	assert_false(ip_idle_probe_quiet(true, 42, 42, 110 * s, 100 * s, 10.0));
	assert_true(ip_idle_probe_quiet(true, 42, 42, 110 * s - 1, 100 * s, 10.0));
	/* a counter that went down (a disk removed) is a change too */
	assert_false(ip_idle_probe_quiet(true, 42, 7, 101 * s, 100 * s, 10.0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy_cycles_at_the_interval),
		cmocka_unit_test(test_idle_with_perf_sleeps_without_timer),
		cmocka_unit_test(test_idle_without_perf_backs_off),
		cmocka_unit_test(test_capture_keeps_the_interval),
		cmocka_unit_test(test_probe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
