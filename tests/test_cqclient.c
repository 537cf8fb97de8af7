/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * irqpilot_cq on the daemon's side without the module: the replay file
 * that stands in for IPCQ_CMD_LIST, the rates derived from it, attach and
 * detach through fake apply ops, restore, and the client's "not loaded".
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "irqpilot/apply.h"
#include "irqpilot/counters.h"
#include "irqpilot/cqclient.h"
#include "irqpilot/policy.h"

/* ---- a temp tree ---- */

static void put(const char *dir, const char *rel, const char *data)
{
	char path[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (slash = strchr(path + strlen(dir) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(data, f);
	fclose(f);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

/* A snapshot with sda (8:0) and sdb (8:16) on 4 CPUs, as sample.c leaves it
 * before the counters run. */
static void snap_init(struct ip_snapshot *s, struct ip_blockdev *devs)
{
	memset(s, 0, sizeof(*s));
	memset(devs, 0, 2 * sizeof(*devs));
	s->topo.nr_cpus = 4;
	cpuset_parse_list(&s->topo.online, "0-3");
	snprintf(devs[0].name, sizeof(devs[0].name), "sda");
	devs[0].major = 8;
	snprintf(devs[1].name, sizeof(devs[1].name), "sdb");
	devs[1].major = 8;
	devs[1].minor = 16;
	s->storage.nr_devs = 2;
	s->storage.devs = devs;
	s->dc = calloc(2, sizeof(*s->dc));
	assert_non_null(s->dc);
}

static void snap_fini(struct ip_snapshot *s)
{
	ip_snapshot_free_cq(s);
	for (int i = 0; i < s->storage.nr_devs; i++) {
		free(s->dc[i].submit);
		free(s->dc[i].complete);
	}
	free(s->dc);
}

static const char stat_900[] =
	"900 (ipcq/sda:0) S 2 0 0 0 -1 2129984 0 0 0 0 0 17 0 0 -51 0 1 0 1200 0 0 "
	"18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 2 50 1 0 0 0 0 0 0 0 0 0 0 0 0\n";

static void test_replay_file(void **state)
{
	char dir[] = "/tmp/test_cqclient.XXXXXX";
	struct ip_snapshot s, p;
	struct ip_blockdev devs[2], pdevs[2];
	struct ip_counters *c;
	struct ip_root *r;
	struct ip_diag d = { "" };
	struct ip_model m = { 0 };
	struct ip_cq_rate rate;
	double by_cpu[4];

	assert_non_null(mkdtemp(dir));
	/* exactly what "ipcq-ctl list" prints */
	put(dir, "irqpilot/cq",
	    "disk=sda dev=8:0 hwq=0 nr_hwq=1 pid=900 completions=3000 wakeups=1500 "
	    "max_wait_ns=250000 stalls=0 fallbacks=0 cpus=3:2900,1:100\n");
	put(dir, "proc/900/status", "Name:\tipcq/sda:0\nCpus_allowed_list:\t2\n");
	put(dir, "proc/900/stat", stat_900);
	assert_int_equal(ip_root_open(dir, &r), 0);
	assert_int_equal(ip_counters_new(false, &c), 0);

	snap_init(&s, devs);
	assert_int_equal(ip_counters_sample(c, r, &s, &d), 0);
	assert_true(s.have_cq);
	assert_int_equal(s.nr_cq, 1);
	assert_int_equal(s.cq[0].dev, 0);
	assert_int_equal(s.cq[0].pid, 900);
	assert_int_equal(s.cq[0].cpu_completions[3], 2900);
	assert_int_equal(s.cq[0].cpu_completions[1], 100);
	assert_int_equal(s.cq[0].max_wait_ns, 250000);
	assert_true(s.cq[0].have_sched);
	assert_int_equal(s.cq[0].policy, SCHED_FIFO);
	assert_int_equal(s.cq[0].rt_priority, 50);
	assert_int_equal(s.cq[0].last_cpu, 2);
	assert_string_equal(cpuset_str(&s.cq[0].allowed), "2");
	assert_int_equal(ip_snapshot_cq_count(&s, 0), 1);
	assert_int_equal(ip_snapshot_cq_count(&s, 1), 0);
	/* the module's counts are sda's submissions; sdb has none */
	assert_int_equal(s.dc[0].submit_src, IP_SRC_MODULE);
	assert_int_equal(s.dc[0].submit[3], 2900);
	assert_null(s.dc[1].submit);

	/* one second later: 1000 more, all from CPU 3, 250 wakeups */
	put(dir, "irqpilot/cq",
	    "# recorded\n"
	    "disk=sda dev=8:0 hwq=0 nr_hwq=1 pid=900 completions=4000 wakeups=1750 "
	    "max_wait_ns=250000 stalls=0 fallbacks=0 cpus=3:3900,1:100\n");
	snap_init(&p, pdevs);
	assert_int_equal(ip_counters_sample(c, r, &p, &d), 0);
	assert_int_equal(p.dc[0].submit_src, IP_SRC_MODULE);
	assert_int_equal(p.dc[0].submit[3], 3900);
	m.prev = &s;
	m.cur = &p;
	m.interval_s = 2;
	ip_model_cq_rate(&m, 0, &rate, by_cpu);
	assert_true(rate.have);
	assert_true(rate.completions > 499.9 && rate.completions < 500.1);
	assert_true(rate.wakeups_per_completion > 0.249 && rate.wakeups_per_completion < 0.251);
	assert_true(by_cpu[3] > 499.9 && by_cpu[1] == 0);
	/* no previous sample: no rate */
	m.prev = NULL;
	ip_model_cq_rate(&m, 0, &rate, NULL);
	assert_false(rate.have);
	assert_true(rate.wakeups_per_completion < 0);
	snap_fini(&p);

	/* a bad line is an error that names the file and line */
	put(dir, "irqpilot/cq", "disk=sda pid=900\ndisk=sda pid=x\n");
	snap_init(&p, pdevs);
	assert_int_equal(ip_counters_sample(c, r, &p, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "irqpilot/cq:2"));
	assert_int_equal(p.nr_cq, 0);
	assert_false(p.have_cq);
	snap_fini(&p);

	/* no file, not live: no module; sda goes one sample without counts
	 * rather than have a rate taken across two different counters */
	unlink(strcat(strcpy((char[64]){ 0 }, dir), "/irqpilot/cq"));
	snap_init(&p, pdevs);
	assert_int_equal(ip_counters_sample(c, r, &p, &d), 0);
	assert_false(p.have_cq);
	assert_null(p.dc[0].submit);
	assert_int_equal(p.dc[0].submit_src, IP_SRC_NONE);
	snap_fini(&p);

	snap_fini(&s);
	ip_counters_free(c);
	ip_root_free(r);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- apply with fake ops ---- */

struct fake {
	int nr;
	struct {
		unsigned major, minor;
		bool attach;
	} calls[8];
	int err; /* what the next cq call returns */
	int nr_aff;
	pid_t aff_pid;
	ip_cpuset aff;
};

static int fake_write(void *ctx, struct ip_root *r, const char *path, const char *data)
{
	return 0;
}

static int fake_affinity(void *ctx, pid_t pid, const ip_cpuset *cpus)
{
	struct fake *f = ctx;

	f->nr_aff++;
	f->aff_pid = pid;
	f->aff = *cpus;
	return 0;
}

static int fake_sched(void *ctx, pid_t pid, int policy, int priority)
{
	return 0;
}

static int fake_cq(void *ctx, unsigned major, unsigned minor, bool attach)
{
	struct fake *f = ctx;

	assert_true(f->nr < 8);
	f->calls[f->nr].major = major;
	f->calls[f->nr].minor = minor;
	f->calls[f->nr].attach = attach;
	f->nr++;
	return f->err;
}

static void plan_cq(struct ip_plan *p, const char *dev, unsigned minor, bool attach)
{
	struct ip_cq_action *nv = realloc(p->cq, (p->nr_cq + 1) * sizeof(*nv));

	assert_non_null(nv);
	p->cq = nv;
	memset(&nv[p->nr_cq], 0, sizeof(*nv));
	snprintf(nv[p->nr_cq].device, sizeof(nv->device), "%s", dev);
	nv[p->nr_cq].major = 8;
	nv[p->nr_cq].minor = minor;
	nv[p->nr_cq].attach = attach;
	snprintf(nv[p->nr_cq].reason, sizeof(nv->reason), "test");
	p->nr_cq++;
}

static void test_apply_cq(void **state)
{
	struct fake f = { 0 };
	struct ip_apply_ops ops = { .write = fake_write, .set_affinity = fake_affinity,
				    .set_scheduler = fake_sched, .cq = fake_cq, .ctx = &f };
	struct ip_history h;
	struct ip_plan p = { 0 };
	struct ip_apply_results res;
	struct ip_thread_action *ta;
	char dir[] = "/tmp/irqpilot-cq-XXXXXX", sub[64];
	struct ip_root *r;
	FILE *sf;

	/* the completion thread's identity is read from proc/900/stat */
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/proc", dir);
	mkdir(sub, 0755);
	snprintf(sub, sizeof(sub), "%s/proc/900", dir);
	mkdir(sub, 0755);
	snprintf(sub, sizeof(sub), "%s/proc/900/stat", dir);
	sf = fopen(sub, "w");
	assert_non_null(sf);
	fputs("900 (irqpilot_cq/0) S 2 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 -51 0 1 0 777 0 0\n", sf);
	fclose(sf);
	assert_int_equal(ip_root_open(dir, &r), 0);
	ip_history_init(&h);
	plan_cq(&p, "sda", 0, true);
	plan_cq(&p, "sdb", 16, false);
	/* a completion thread placement goes through set_affinity */
	p.threads = calloc(1, sizeof(*p.threads));
	assert_non_null(p.threads);
	p.nr_threads = 1;
	ta = &p.threads[0];
	ta->pid = 900;
	ta->completion = true;
	snprintf(ta->device, sizeof(ta->device), "sda");
	ta->set_affinity = true;
	cpuset_parse_list(&ta->from, "0-3");
	cpuset_parse_list(&ta->to, "2");

	/* dry run: nothing called */
	assert_int_equal(ip_apply(&p, r, &h, &ops, true, &res), 0);
	assert_int_equal(f.nr, 0);
	assert_int_equal(f.nr_aff, 0);
	assert_int_equal(res.r[0].outcome, IP_APPLY_DRY_RUN);
	assert_non_null(strstr(res.r[0].msg, "would attach sda (8:0) to irqpilot_cq"));
	ip_apply_results_free(&res);

	assert_int_equal(ip_apply(&p, r, &h, &ops, false, &res), 0);
	assert_int_equal(f.nr, 2);
	assert_true(f.calls[0].attach);
	assert_int_equal(f.calls[1].minor, 16);
	assert_false(f.calls[1].attach);
	assert_int_equal(f.nr_aff, 1);
	assert_int_equal(f.aff_pid, 900);
	assert_string_equal(cpuset_str(&f.aff), "2");
	assert_int_equal(res.n, 3);
	assert_int_equal(res.r[0].what, IP_APPLY_CQ);
	assert_int_equal(res.r[0].outcome, IP_APPLY_OK);
	assert_string_equal(res.r[0].device, "sda");
	ip_apply_results_free(&res);
	assert_int_equal(ip_history_commit(&h, &p, 10), 0);
	assert_true(ip_history_cqdev_find(&h, "sda")->attached_by_us);
	assert_false(ip_history_cqdev_find(&h, "sdb")->attached_by_us);
	assert_non_null(ip_history_cq_find(&h, 900));
	assert_string_equal(cpuset_str(&ip_history_cq_find(&h, 900)->placement), "2");

	/* refused (not a blk-mq disk): failed, logged once, not recorded */
	f.nr = 0;
	f.err = -EOPNOTSUPP;
	p.nr_cq = 1;
	p.cq[0].minor = 32;
	snprintf(p.cq[0].device, sizeof(p.cq[0].device), "sdc");
	p.nr_threads = 0;
	assert_int_equal(ip_apply(&p, r, &h, &ops, false, &res), 0);
	assert_int_equal(res.r[0].outcome, IP_APPLY_FAILED);
	assert_true(res.r[0].log);
	assert_true(p.cq[0].failed);
	assert_non_null(strstr(res.r[0].msg, "attach of sdc (8:32) failed"));
	ip_apply_results_free(&res);
	p.cq[0].failed = false;
	assert_int_equal(ip_apply(&p, r, &h, &ops, false, &res), 0);
	assert_false(res.r[0].log);
	ip_apply_results_free(&res);
	assert_int_equal(ip_history_commit(&h, &p, 20), 0);
	/* the write-ahead record of the refused attach is withdrawn */
	assert_non_null(ip_history_cqdev_find(&h, "sdc"));
	assert_false(ip_history_cqdev_find(&h, "sdc")->attached_by_us);

	/* the module went away meanwhile */
	p.cq[0].failed = false;
	f.err = -IP_CQ_ABSENT;
	assert_int_equal(ip_apply(&p, r, &h, &ops, false, &res), 0);
	assert_int_equal(res.r[0].outcome, IP_APPLY_VANISHED);
	assert_non_null(strstr(res.r[0].msg, "irqpilot_cq is not loaded"));
	ip_apply_results_free(&res);

	/* restore detaches what we attached, and only that */
	f.nr = 0;
	f.err = 0;
	assert_int_equal(ip_apply_restore(r, &h, &ops, &res), 0);
	assert_int_equal(f.nr, 1);
	assert_int_equal(f.calls[0].minor, 0);
	assert_false(f.calls[0].attach);
	assert_false(ip_history_cqdev_find(&h, "sda")->attached_by_us);
	ip_apply_results_free(&res);

	ip_plan_free(&p);
	ip_history_free(&h);
	ip_root_free(r);
	unlink(sub);
	snprintf(sub, sizeof(sub), "%s/proc/900", dir);
	rmdir(sub);
	snprintf(sub, sizeof(sub), "%s/proc", dir);
	rmdir(sub);
	rmdir(dir);
}

/* Without the module the client says so with its own code, once. */
static void test_client_absent(void **state)
{
	struct ip_diag d = { "" };
	struct ip_cq *c = NULL;
	int ret = ip_cq_open(&c, &d);

	if (ret == 0) {
		struct ip_cq_list l;

		/* the module happens to be loaded here: LIST works for anyone */
		assert_int_equal(ip_cq_list(c, 4, &l, &d), 0);
		ip_cq_list_free(&l);
		ip_cq_close(c);
		skip();
	}
	assert_int_equal(ret, -IP_CQ_ABSENT);
	assert_null(c);
	assert_non_null(strstr(d.msg, "module not loaded"));
	assert_string_equal(ip_cq_event_name(IP_CQ_EV_STALL), "stall");
	assert_int_equal(ip_cq_event_fd(NULL), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_file),
		cmocka_unit_test(test_apply_cq),
		cmocka_unit_test(test_client_absent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
