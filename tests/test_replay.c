// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The policy over time, on replay series built from the fixture machines
 * (tests/replay/NAME.series) and run through the same engine as the daemon.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "irqpilot/capture.h"
#include "irqpilot/engine.h"
#include "reason-text.h"

#define REPLAY TOP_SRCDIR "/tests/replay/"

struct run {
	int steps;
	int moves[64];      /* moves of the watched IRQ per step, -1 if not decided */
	int to[64];         /* first CPU it was moved to in that step, -1 */
	int managed_explained, managed_kept;
	int writes;         /* results that were not dry-run/skipped */
	int isolated_note;
	char reason[64][IP_REASON_MAX];
	bool irq_seen[64];
	int total_moves;
	/* moves of other IRQs within their domain, to the CPU of a dominant
	 * submitter (dominant-cpu), and the last one's reason */
	int other_dominant;
	char other_reason[IP_REASON_MAX];
};

static int rm_rf(const char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

/* Build the series into a temp dir and replay it through the engine. */
static void replay(const char *series, unsigned watch, const struct ip_policy_config *cfg, struct run *run)
{
	char tmp[] = "/tmp/irqpilot-replay-XXXXXX", cmd[1024], out[128];
	struct ip_engine_opts eo = { .dry_run = true, .simulate = true };
	struct ip_engine *e = NULL;
	struct ip_diag d = { "" };
	char **steps;
	size_t n;

	memset(run, 0, sizeof(*run));
	assert_non_null(mkdtemp(tmp));
	snprintf(out, sizeof(out), "%s/s", tmp);
	snprintf(cmd, sizeof(cmd), "sh '%s/mkseries.sh' '%s/%s' '%s'", REPLAY, REPLAY, series, out);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(ip_replay_steps(out, &steps, &n, &d), 0);
	assert_true(n <= 64);
	run->steps = (int)n;
	for (size_t i = 0; i < n; i++) {
		char path[256];
		struct ip_root *r;
		struct ip_step *st;

		snprintf(path, sizeof(path), "%s/%s", out, steps[i]);
		assert_int_equal(ip_root_open_confined(path, &r), 0);
		if (!e)
			assert_int_equal(ip_engine_new(r, cfg, &eo, &e), 0);
		else
			ip_engine_set_root(e, r);
		if (ip_engine_step(e, &st, &d) < 0)
			fail_msg("step %zu: %s", i, d.msg);
		run->moves[i] = st->decided ? 0 : -1;
		run->to[i] = -1;
		run->irq_seen[i] = ip_snapshot_irq(st->model.cur, watch) != NULL;
		for (int k = 0; st->decided && k < st->plan.nr_moves; k++) {
			run->total_moves++;
			if (st->plan.moves[k].irq != watch && st->plan.moves[k].why.code == IP_R_DOMINANT_CPU) {
				run->other_dominant++;
				snprintf(run->other_reason, IP_REASON_MAX, "%s", REASON(&st->plan.moves[k]));
			}
			if (st->plan.moves[k].irq != watch)
				continue;
			run->moves[i]++;
			run->to[i] = cpuset_first(&st->plan.moves[k].to);
			snprintf(run->reason[i], IP_REASON_MAX, "%s", REASON(&st->plan.moves[k]));
		}
		for (int k = 0; st->decided && k < st->plan.nr_kept; k++) {
			if (st->plan.kept[k].irq == watch && !run->reason[i][0])
				snprintf(run->reason[i], IP_REASON_MAX, "%s", REASON(&st->plan.kept[k]));
			if (!st->plan.kept[k].managed)
				continue;
			run->managed_kept++;
			if (strstr(REASON(&st->plan.kept[k]), "(") && st->plan.kept[k].explained)
				run->managed_explained++;
		}
		for (int k = 0; st->decided && k < st->plan.nr_notes; k++)
			if (strstr(REASON(&st->plan.notes[k]), "isolated"))
				run->isolated_note++;
		for (int k = 0; k < st->results.n; k++)
			if (st->results.r[k].outcome != IP_APPLY_DRY_RUN &&
			    st->results.r[k].outcome != IP_APPLY_SKIPPED)
				run->writes++;
		ip_engine_set_root(e, NULL);
		ip_root_free(r);
	}
	ip_engine_free(e);
	ip_strv_free(steps, n);
	assert_int_equal(rm_rf(tmp), 0);
}

static void test_phone_follows_the_workload(void **state)
{
	struct ip_policy_config cfg;
	struct run run;
	int first = -1, second = -1;

	ip_policy_config_init(&cfg);
	replay("phone-follow.series", 37, &cfg, &run);
	for (int i = 0; i < run.steps; i++) {
		if (run.moves[i] <= 0)
			continue;
		if (first < 0)
			first = i;
		else if (second < 0)
			second = i;
		else
			fail_msg("a third move at step %d: %s", i, run.reason[i]);
	}
	/* fio on CPU 6 from the start: decided at the first step with rates */
	assert_int_equal(first, 1);
	assert_true(run.to[first] == 6 || run.to[first] == 7);
	assert_non_null(strstr(run.reason[first], "performance domain 6-7"));
	/* fio moves to CPU 2 at step 20 with no pause between. The shares are
	 * a window (8 cycles), and moving back within return_window needs 40
	 * pp: 1 - 2 (7/9)^k >= 0.4 is k = 5 cycles (it was 1-2 on snapshots). */
	if (second < 21 || second > 25)
		fail_msg("the vector followed at step %d, not within 21..25", second);
	assert_true(run.to[second] >= 0 && run.to[second] <= 3);
	assert_non_null(strstr(run.reason[second], "efficiency domain 0-3"));
	/* ... and then stays */
	assert_non_null(strstr(run.reason[run.steps - 1], "already handled in efficiency domain 0-3"));
	assert_int_equal(run.writes, 0); /* replays never write */
	ip_policy_config_free(&cfg);
}

static void test_no_ping_pong(void **state)
{
	struct ip_policy_config cfg;
	struct run run;
	int moves = 0;

	ip_policy_config_init(&cfg);
	replay("phone-compete.series", 37, &cfg, &run);
	assert_int_equal(run.steps, 60);
	for (int i = 0; i < run.steps; i++)
		moves += run.moves[i] > 0 ? run.moves[i] : 0;
	assert_true(moves <= 1);
	ip_policy_config_free(&cfg);
}

static void test_isolated_submitters(void **state)
{
	struct ip_policy_config cfg;
	struct run run;
	int moved = 0;

	ip_policy_config_init(&cfg);
	replay("server-isolated.series", 38, &cfg, &run);
	for (int i = 0; i < run.steps; i++) {
		if (run.moves[i] <= 0)
			continue;
		moved++;
		/* a housekeeping CPU of the same LLC (package 1), never 14-15 */
		assert_true(run.to[i] != 14 && run.to[i] != 15);
		assert_true((run.to[i] >= 8 && run.to[i] <= 13) || (run.to[i] >= 24 && run.to[i] <= 30));
		assert_non_null(strstr(run.reason[i], "isolated"));
	}
	assert_int_equal(moved, 1);
	ip_policy_config_free(&cfg);
}

static void test_managed_nvme_kept(void **state)
{
	struct ip_policy_config cfg;
	struct run run;

	ip_policy_config_init(&cfg);
	replay("laptop-nvme.series", 129, &cfg, &run);
	assert_int_equal(run.total_moves, 0);
	/* 12 managed I/O vectors kept at each of the 9 decided steps */
	assert_int_equal(run.managed_kept, 12 * (run.steps - 1));
	/* the long explanation once per vector, not every cycle */
	assert_int_equal(run.managed_explained, 12);
	assert_non_null(strstr(run.reason[1], "managed"));
	assert_int_equal(run.writes, 0);
	ip_policy_config_free(&cfg);
}

static void test_vector_vanishes(void **state)
{
	struct ip_policy_config cfg;
	struct run run;

	ip_policy_config_init(&cfg);
	replay("phone-vanish.series", 37, &cfg, &run);
	assert_true(run.irq_seen[5]);
	for (int i = 6; i < run.steps; i++) {
		assert_false(run.irq_seen[i]);
		assert_true(run.moves[i] <= 0);
		assert_int_equal(run.reason[i][0], '\0');
	}
	ip_policy_config_free(&cfg);
}

/*
 * One watched vector that must move once, at the first step with rates,
 * to a CPU in [lo, hi] with @why in the reason, and then stay; and no
 * other vector may move at all.
 */
static void expect_one_move(const char *series, unsigned watch, int lo, int hi, const char *why,
			    int other_dominant)
{
	struct ip_policy_config cfg;
	struct run run;
	int moved_at = -1;

	ip_policy_config_init(&cfg);
	replay(series, watch, &cfg, &run);
	for (int i = 0; i < run.steps; i++) {
		if (run.moves[i] <= 0)
			continue;
		if (moved_at >= 0)
			fail_msg("%s: IRQ %u moved again at step %d: %s", series, watch, i, run.reason[i]);
		moved_at = i;
	}
	if (moved_at != 1)
		fail_msg("%s: IRQ %u first moved at step %d, expected 1", series, watch, moved_at);
	assert_true(run.to[moved_at] >= lo && run.to[moved_at] <= hi);
	assert_non_null(strstr(run.reason[moved_at], why));
	assert_non_null(strstr(run.reason[run.steps - 1], "already handled in"));
	/* other vectors may only take their own domain's dominant submitter's
	 * CPU, once each, as @other_dominant says */
	if (run.other_dominant != other_dominant)
		fail_msg("%s: %d moves to a dominant submitter's CPU, expected %d (last: %s)", series,
			 run.other_dominant, other_dominant, run.other_reason);
	assert_int_equal(run.total_moves, 1 + other_dominant);
	assert_int_equal(run.writes, 0);
	ip_policy_config_free(&cfg);
}

/* Pixel 6: the vector found through the devicetree follows the big core. */
static void test_pixel6_ufs(void **state)
{
	expect_one_move("pixel6-ufs.series", 231, 6, 7, "performance domain 6-7", 0);
}

/* Exynos eMMC: to the reader's cluster; the empty SD slot's dw-mci stays. */
static void test_exynos850_emmc(void **state)
{
	expect_one_move("exynos850-emmc.series", 48, 4, 7, "domain 4-7", 0);
}

/* RK3399: the eMMC vector goes big; the SD vector is already in its
 * reader's domain, and goes to the reader's own CPU there once. */
static void test_rk3399_mmc(void **state)
{
	expect_one_move("rk3399-mmc.series", 31, 4, 5, "performance domain 4-5", 1);
}

/* SM8550 ESI: only queue 7's vector goes to the X3. */
static void test_sm8550_mcq(void **state)
{
	expect_one_move("sm8550-mcq.series", 267, 7, 7, "performance domain 7", 0);
}

/* MediaTek MCQ: the vector at devicetree position 8 (queue 7) goes. */
static void test_mt6985_mcq(void **state)
{
	expect_one_move("mt6985-mcq.series", 195, 7, 7, "performance domain 7", 0);
}

/* virtio-mmio guest: one domain, nothing to gain by moving to another; the
 * vector goes once to the CPU of the submitter that dominates it. */
static void test_virt_mmio(void **state)
{
	struct ip_policy_config cfg;
	struct run run;
	int at = -1;

	ip_policy_config_init(&cfg);
	replay("virt-mmio.series", 47, &cfg, &run);
	assert_int_equal(run.total_moves, 1);
	for (int i = 0; i < run.steps; i++)
		if (run.moves[i] > 0)
			at = i;
	assert_true(at >= 0);
	assert_non_null(strstr(run.reason[at], "over the window (75% or more dominates)"));
	for (int i = at + 1; i < run.steps; i++)
		assert_non_null(strstr(run.reason[i], "already handled in"));
	assert_true(run.irq_seen[run.steps - 1]);
	ip_policy_config_free(&cfg);
}

/* mpi3mr with 36 HDDs: managed I/O vectors and the admin vector all stay. */
static void test_mpi3mr_36hdd(void **state)
{
	struct ip_policy_config cfg;
	struct run run;

	ip_policy_config_init(&cfg);
	replay("mpi3mr-36hdd.series", 60, &cfg, &run);
	assert_int_equal(run.total_moves, 0);
	assert_non_null(strstr(run.reason[run.steps - 1], "admin vector"));
	/* 16 managed vectors kept at each decided step, explained once each */
	assert_int_equal(run.managed_kept, 16 * (run.steps - 1));
	assert_int_equal(run.managed_explained, 16);
	ip_policy_config_free(&cfg);
}

/*
 * megaraid_sas high-IOPS vectors (not managed) follow the busy device's
 * submitters to node 1, four a cycle; its managed queue vectors, the
 * idle mpt3sas and the NVMe stay.
 */
static void test_high_iops(void **state)
{
	struct ip_policy_config cfg;
	struct run run;

	ip_policy_config_init(&cfg);
	replay("hba-highiops.series", 100, &cfg, &run);
	assert_int_equal(run.moves[1], 1);
	assert_true(run.to[1] >= 8 && run.to[1] <= 15);
	assert_non_null(strstr(run.reason[1], "performance domain 8-15"));
	for (int i = 2; i < run.steps; i++)
		assert_true(run.moves[i] <= 0);
	/* exactly the eight high-IOPS vectors 100-107 */
	assert_int_equal(run.total_moves, 8);
	ip_policy_config_free(&cfg);
}

/* A capture comes in bug reports: a link in a step must resolve inside
 * that step (absolute targets from its top, ".." stopping there), never
 * to the replaying machine's files. */
static void test_link_out_of_step(void **state)
{
	char tmp[] = "/tmp/irqpilot-replay-XXXXXX", p[256], q[256];
	struct ip_root *r = NULL;
	struct stat st;
	char *buf = NULL, **names = NULL;
	size_t len = 0, n = 0;

	(void)state;
	assert_non_null(mkdtemp(tmp));
	snprintf(p, sizeof(p), "%s/outside", tmp);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "echo secret >'%s/outside/interrupts' && mkdir -p '%s/s/0000/proc/irq/5' && "
		 "echo inside >'%s/s/0000/proc/real'", tmp, tmp, tmp);
	assert_int_equal(system(p), 0);
	snprintf(p, sizeof(p), "%s/s/0000/proc/interrupts", tmp);
	assert_int_equal(symlink("../../../outside/interrupts", p), 0);
	snprintf(p, sizeof(p), "%s/s/0000/proc/softirqs", tmp);
	snprintf(q, sizeof(q), "%s/outside/interrupts", tmp);
	assert_int_equal(symlink(q, p), 0);
	snprintf(p, sizeof(p), "%s/s/0000/proc/irq/6", tmp);
	snprintf(q, sizeof(q), "%s/outside", tmp);
	assert_int_equal(symlink(q, p), 0);
	snprintf(p, sizeof(p), "%s/s/0000/proc/alias", tmp);
	assert_int_equal(symlink("/proc/real", p), 0);

	snprintf(p, sizeof(p), "%s/s/0000", tmp);
	assert_int_equal(ip_root_open_confined(p, &r), 0);
	assert_int_equal(ip_root_read(r, "proc/interrupts", &buf, &len), -ENOENT);
	assert_int_equal(ip_root_read(r, "proc/softirqs", &buf, &len), -ENOENT);
	assert_int_equal(ip_root_stat(r, "proc/softirqs", &st), -ENOENT);
	assert_int_equal(ip_root_listdir(r, "proc/irq/6", &names, &n), -ENOENT);
	/* an absolute link is the step's own file */
	assert_int_equal(ip_root_read(r, "proc/alias", &buf, &len), 0);
	assert_string_equal(buf, "inside\n");
	free(buf);
	ip_root_free(r);
	rm_rf(tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_phone_follows_the_workload),
		cmocka_unit_test(test_no_ping_pong),
		cmocka_unit_test(test_isolated_submitters),
		cmocka_unit_test(test_managed_nvme_kept),
		cmocka_unit_test(test_vector_vanishes),
		cmocka_unit_test(test_pixel6_ufs),
		cmocka_unit_test(test_exynos850_emmc),
		cmocka_unit_test(test_rk3399_mmc),
		cmocka_unit_test(test_sm8550_mcq),
		cmocka_unit_test(test_mt6985_mcq),
		cmocka_unit_test(test_virt_mmio),
		cmocka_unit_test(test_mpi3mr_36hdd),
		cmocka_unit_test(test_high_iops),
		cmocka_unit_test(test_link_out_of_step),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
