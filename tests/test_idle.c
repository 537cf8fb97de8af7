// SPDX-License-Identifier: GPL-2.0-or-later
/* When the daemon sleeps without a timer, probes, or cycles (idle.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "irqpilot/idle.h"
#include "irqpilot/policy.h"

static void test_busy_cycles_at_the_interval(void **state)
{
	(void)state;
	/* I/O going on: the wakeup stays disarmed, whatever is open */
	assert_int_equal(ip_idle_wait(false, 0, false, 8, false, 2.0), IP_WAIT_INTERVAL);
	assert_int_equal(ip_idle_wait(false, 0, false, 0, false, 2.0), IP_WAIT_INTERVAL);
}

static void test_idle_with_perf_sleeps_without_timer(void **state)
{
	(void)state;
	assert_int_equal(ip_idle_wait(true, 0, false, 1, false, 2.0), IP_WAIT_EVENT);
	assert_int_equal(ip_idle_wait(true, 0, false, 1024, false, 2.0), IP_WAIT_EVENT);
}

static void test_idle_without_perf_backs_off(void **state)
{
	(void)state;
	/* task sampling, --root, --replay, or the wakeup failed to open */
	assert_int_equal(ip_idle_wait(true, 0, false, 0, false, 2.0), IP_WAIT_PROBE);
}

static void test_idle_on_a_watched_tree_probes_without_timer(void **state)
{
	(void)state;
	/* a --root tree whose probe files are watched: no timer */
	assert_int_equal(ip_idle_wait(true, 0, false, 0, true, 2.0), IP_WAIT_WATCH);
	/* perf wins where both are open; a capture keeps its interval */
	assert_int_equal(ip_idle_wait(true, 0, false, 4, true, 2.0), IP_WAIT_EVENT);
	assert_int_equal(ip_idle_wait(true, 0, true, 0, true, 2.0), IP_WAIT_INTERVAL);
	/* under I/O the watch changes nothing, and does not make a hold:
	 * it cannot tell which CPU submitted */
	assert_int_equal(ip_idle_wait(false, 0, false, 0, true, 2.0), IP_WAIT_INTERVAL);
	assert_int_equal(ip_idle_wait(false, 100, false, 0, true, 2.0), IP_WAIT_INTERVAL);
}

static void test_capture_keeps_the_interval(void **state)
{
	(void)state;
	assert_int_equal(ip_idle_wait(true, 0, true, 4, false, 2.0), IP_WAIT_INTERVAL);
	assert_int_equal(ip_idle_wait(true, 0, true, 0, false, 2.0), IP_WAIT_INTERVAL);
}

static void test_settled_io_holds(void **state)
{
	(void)state;
	/* three settled cycles in a row under I/O, with the wakeup open */
	assert_int_equal(ip_idle_wait(false, IP_HOLD_AFTER_CYCLES - 1, false, 4, false, 2.0), IP_WAIT_INTERVAL);
	assert_int_equal(ip_idle_wait(false, IP_HOLD_AFTER_CYCLES, false, 4, false, 2.0), IP_WAIT_HOLD);
	assert_int_equal(ip_idle_wait(false, 100, false, 4, false, 2.0), IP_WAIT_HOLD);
	/* without the wakeup a longer cycle would be blind to a new submitter */
	assert_int_equal(ip_idle_wait(false, 100, false, 0, false, 2.0), IP_WAIT_INTERVAL);
	/* a capture keeps its interval; idle wins over held */
	assert_int_equal(ip_idle_wait(false, 100, true, 4, false, 2.0), IP_WAIT_INTERVAL);
	assert_int_equal(ip_idle_wait(true, 100, false, 4, false, 2.0), IP_WAIT_EVENT);
	/* an interval as long as the hold has nothing to stretch */
	assert_int_equal(ip_idle_wait(false, 100, false, 4, false, IP_HOLD_MAX_S), IP_WAIT_INTERVAL);
	assert_int_equal(ip_idle_wait(false, 100, false, 4, false, 30.0), IP_WAIT_INTERVAL);
}

static void test_hold_interval(void **state)
{
	(void)state;
	assert_float_equal(ip_hold_interval_s(2.0), 10.0, 1e-9);
	assert_float_equal(ip_hold_interval_s(1.0), 5.0, 1e-9);
	assert_float_equal(ip_hold_interval_s(0.1), 0.5, 1e-9);
	assert_float_equal(ip_hold_interval_s(4.0), IP_HOLD_MAX_S, 1e-9);
	assert_float_equal(ip_hold_interval_s(30.0), 30.0, 1e-9);
}

static void test_plan_settled(void **state)
{
	struct ip_kept kept[2];
	struct ip_move move;
	struct ip_plan p;

	(void)state;
	memset(&p, 0, sizeof(p));
	memset(kept, 0, sizeof(kept));
	memset(&move, 0, sizeof(move));
	assert_true(ip_plan_settled(&p));
	p.kept = kept;
	p.nr_kept = 2;
	kept[0].why.code = IP_R_ALREADY_PLACED;
	kept[1].why.code = IP_R_MANAGED_SPREAD;
	assert_true(ip_plan_settled(&p));
	/* a later sample could turn each of these into a move */
	static const enum ip_reason pending[] = { IP_R_NO_RATES, IP_R_BELOW_THRESHOLD, IP_R_IDLE_GRACE,
						  IP_R_DWELL, IP_R_BUDGET, IP_R_ALTERNATING };
	for (size_t i = 0; i < sizeof(pending) / sizeof(pending[0]); i++) {
		kept[1].why.code = pending[i];
		assert_false(ip_plan_settled(&p));
	}
	kept[1].why.code = IP_R_TRICKLE;
	assert_true(ip_plan_settled(&p));
	/* anything written is not settled */
	p.moves = &move;
	p.nr_moves = 1;
	assert_false(ip_plan_settled(&p));
	p.nr_moves = 0;
	p.nr_threads = 1;
	assert_false(ip_plan_settled(&p));
	p.nr_threads = 0;
	p.nr_rq = 1;
	assert_false(ip_plan_settled(&p));
	p.nr_rq = 0;
	p.nr_cq = 1;
	assert_false(ip_plan_settled(&p));
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
		cmocka_unit_test(test_idle_on_a_watched_tree_probes_without_timer),
		cmocka_unit_test(test_capture_keeps_the_interval),
		cmocka_unit_test(test_settled_io_holds),
		cmocka_unit_test(test_hold_interval),
		cmocka_unit_test(test_plan_settled),
		cmocka_unit_test(test_probe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
