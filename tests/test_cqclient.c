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

#include <linux/genetlink.h>
#include <linux/netlink.h>

#include "irqpilot/apply.h"
#include "irqpilot/counters.h"
#include "irqpilot/cqclient.h"
#include "irqpilot/policy.h"
#include "uapi/irqpilot_cq.h"
#include "irqpilot/report.h"

/* act words nothing: its results are read as report.c says them */
#define MSG(res) ip_report_apply_line((char[IP_REASON_MAX]){ 0 }, IP_REASON_MAX, &(res))

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
	nv[p->nr_cq].why.code = IP_R_CQ_MODE; /* a rule's attach: the test needs no trial */
	p->nr_cq++;
}

static void test_apply_cq(void **state)
{
	struct fake f = { 0 };
	struct ip_apply_ops ops = { .write = fake_write, .set_affinity = fake_affinity,
				    .set_scheduler = fake_sched, .cq = fake_cq, .ctx = &f };
	struct ip_history h;
	struct ip_originals o;
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
	ip_originals_init(&o);
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
	assert_int_equal(ip_apply(&p, r, &h, &o, &ops, true, &res), 0);
	assert_int_equal(f.nr, 0);
	assert_int_equal(f.nr_aff, 0);
	assert_int_equal(res.r[0].outcome, IP_APPLY_DRY_RUN);
	assert_non_null(strstr(MSG(res.r[0]), "would attach sda (8:0) to irqpilot_cq"));
	ip_apply_results_free(&res);

	assert_int_equal(ip_apply(&p, r, &h, &o, &ops, false, &res), 0);
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
	/* the attach is an original for restore; the detach of sdb is not */
	assert_int_equal(o.nr_cq, 1);
	assert_non_null(ip_originals_cq(&o, "sda"));
	assert_int_equal(ip_originals_cq(&o, "sda")->major, 8);
	assert_non_null(ip_history_cq_find(&h, 900));
	assert_string_equal(cpuset_str(&ip_history_cq_find(&h, 900)->placement), "2");

	/* refused (not a blk-mq disk): failed, logged once, not recorded */
	f.nr = 0;
	f.err = -EOPNOTSUPP;
	p.nr_cq = 1;
	p.cq[0].minor = 32;
	snprintf(p.cq[0].device, sizeof(p.cq[0].device), "sdc");
	p.nr_threads = 0;
	assert_int_equal(ip_apply(&p, r, &h, &o, &ops, false, &res), 0);
	assert_int_equal(res.r[0].outcome, IP_APPLY_FAILED);
	assert_true(p.cq[0].failed);
	assert_non_null(strstr(MSG(res.r[0]), "attach of sdc (8:32) failed"));
	ip_apply_results_free(&res);
	p.cq[0].failed = false;
	assert_int_equal(ip_apply(&p, r, &h, &o, &ops, false, &res), 0);
	/* refused again, reported again: the daemon says it once */
	assert_int_equal(res.r[0].outcome, IP_APPLY_FAILED);
	assert_int_equal(res.r[0].err, -EOPNOTSUPP);
	ip_apply_results_free(&res);
	assert_int_equal(ip_history_commit(&h, &p, 20), 0);
	/* the write-ahead record of the refused attach is withdrawn */
	assert_null(ip_originals_cq(&o, "sdc"));
	/* and the policy never took it as attached */
	assert_null(ip_history_cqdev_find(&h, "sdc"));

	/* the module went away meanwhile */
	p.cq[0].failed = false;
	f.err = -IP_CQ_ABSENT;
	assert_int_equal(ip_apply(&p, r, &h, &o, &ops, false, &res), 0);
	assert_int_equal(res.r[0].outcome, IP_APPLY_VANISHED);
	assert_non_null(strstr(MSG(res.r[0]), "irqpilot_cq is not loaded"));
	ip_apply_results_free(&res);

	/* restore detaches what we attached, and only that */
	f.nr = 0;
	f.err = 0;
	assert_int_equal(ip_apply_restore(r, &o, &ops, &res), 0);
	assert_int_equal(f.nr, 1);
	assert_int_equal(f.calls[0].minor, 0);
	assert_false(f.calls[0].attach);
	assert_int_equal(o.nr_cq, 0);
	ip_apply_results_free(&res);

	ip_plan_free(&p);
	ip_history_free(&h);
	ip_originals_free(&o);
	ip_root_free(r);
	unlink(sub);
	snprintf(sub, sizeof(sub), "%s/proc/900", dir);
	rmdir(sub);
	snprintf(sub, sizeof(sub), "%s/proc", dir);
	rmdir(sub);
	rmdir(dir);
}


/* ---- the wire format, encoded here by hand from the uapi header ---- */

struct wmsg {
	char *buf;
	size_t len, size;
};

static void w_begin(struct wmsg *m, uint8_t cmd)
{
	m->size = 1 << 17;
	m->buf = calloc(1, m->size);
	assert_non_null(m->buf);
	m->len = NLMSG_HDRLEN + GENL_HDRLEN;
	((struct genlmsghdr *)(m->buf + NLMSG_HDRLEN))->cmd = cmd;
	((struct genlmsghdr *)(m->buf + NLMSG_HDRLEN))->version = IPCQ_GENL_VERSION;
}

static struct nlmsghdr *w_end(struct wmsg *m)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)m->buf;

	nlh->nlmsg_len = (uint32_t)m->len;
	nlh->nlmsg_type = 0x20;
	nlh->nlmsg_flags = NLM_F_MULTI;
	return nlh;
}

static size_t w_attr(struct wmsg *m, uint16_t type, const void *data, size_t len)
{
	struct nlattr *na = (struct nlattr *)(m->buf + m->len);
	size_t at = m->len;

	assert_true(m->len + NLA_HDRLEN + NLA_ALIGN(len) <= m->size);
	na->nla_type = type;
	na->nla_len = (uint16_t)(NLA_HDRLEN + len);
	if (len)
		memcpy(m->buf + m->len + NLA_HDRLEN, data, len);
	m->len += NLA_HDRLEN + NLA_ALIGN(len);
	return at;
}

static void w_u32(struct wmsg *m, uint16_t type, uint32_t v)
{
	w_attr(m, type, &v, sizeof(v));
}

static void w_u64(struct wmsg *m, uint16_t type, uint64_t v)
{
	w_attr(m, type, &v, sizeof(v));
}

static size_t w_nest(struct wmsg *m, uint16_t type)
{
	return w_attr(m, type | NLA_F_NESTED, NULL, 0);
}

static void w_nest_end(struct wmsg *m, size_t at)
{
	((struct nlattr *)(m->buf + at))->nla_len = (uint16_t)(m->len - at);
}

/* A thread's key, as every LIST message carries it. */
static void w_key(struct wmsg *m, const char *disk, unsigned major, unsigned minor, unsigned hwq,
		  unsigned nr_hwq, unsigned pid)
{
	w_attr(m, IPCQ_A_DISK, disk, strlen(disk) + 1);
	w_u32(m, IPCQ_A_MAJOR, major);
	w_u32(m, IPCQ_A_MINOR, minor);
	w_u32(m, IPCQ_A_HWQ, hwq);
	w_u32(m, IPCQ_A_NR_HWQ, nr_hwq);
	w_u32(m, IPCQ_A_PID, pid);
}

static void w_counters(struct wmsg *m, uint64_t completions)
{
	w_u64(m, IPCQ_A_COMPLETIONS, completions);
	w_u64(m, IPCQ_A_WAKEUPS, completions / 2);
	w_u64(m, IPCQ_A_MAX_WAIT_NS, 250000);
	w_u64(m, IPCQ_A_STALLS, 1);
	w_u64(m, IPCQ_A_FALLBACKS, 7);
}

/* CPUs [from, to) with count cpu + 1 each */
static void w_cpus(struct wmsg *m, unsigned from, unsigned to)
{
	size_t nest = w_nest(m, IPCQ_A_CPU_COMPLETIONS), e;

	for (unsigned cpu = from; cpu < to; cpu++) {
		e = w_nest(m, IPCQ_CPU_A_ENTRY);
		w_u32(m, IPCQ_CPU_A_CPU, cpu);
		w_u64(m, IPCQ_CPU_A_COUNT, (uint64_t)cpu + 1);
		w_nest_end(m, e);
	}
	w_nest_end(m, nest);
}

/*
 * 5000 CPUs do not fit one message (24 bytes each): the module splits a
 * thread's counts over several messages with the same key, the client
 * puts them back together.
 */
static void test_list_parse_split(void **state)
{
	struct ip_cq_list l = { 0 };
	struct wmsg m;
	uint64_t sum = 0;

	/* nvme0n1 hwq 0: counters + CPUs 0-1999, then 2000-3999, then 4000-4999 */
	w_begin(&m, IPCQ_CMD_LIST);
	w_key(&m, "nvme0n1", 259, 0, 0, 2, 900);
	w_counters(&m, 12497500);
	w_cpus(&m, 0, 2000);
	assert_true(m.len > 16384);
	assert_int_equal(ip_cq_list_parse(w_end(&m), 5000, &l), 0);
	free(m.buf);
	for (unsigned part = 1; part < 3; part++) {
		w_begin(&m, IPCQ_CMD_LIST);
		w_key(&m, "nvme0n1", 259, 0, 0, 2, 900);
		w_cpus(&m, part * 2000, part == 2 ? 5000 : 4000);
		assert_int_equal(ip_cq_list_parse(w_end(&m), 5000, &l), 0);
		free(m.buf);
	}
	/* hwq 1: its own entry, CPUs beyond nr_cpus dropped */
	w_begin(&m, IPCQ_CMD_LIST);
	w_key(&m, "nvme0n1", 259, 0, 1, 2, 901);
	w_counters(&m, 10);
	w_cpus(&m, 4998, 5002);
	assert_int_equal(ip_cq_list_parse(w_end(&m), 5000, &l), 0);
	free(m.buf);

	assert_int_equal(l.n, 2);
	assert_string_equal(l.e[0].disk, "nvme0n1");
	assert_int_equal(l.e[0].major, 259);
	assert_int_equal(l.e[0].hwq, 0);
	assert_int_equal(l.e[0].nr_hwq, 2);
	assert_int_equal(l.e[0].pid, 900);
	assert_true(l.e[0].have_counts);
	assert_int_equal(l.e[0].completions, 12497500);
	assert_int_equal(l.e[0].stalls, 1);
	assert_int_equal(l.e[0].fallbacks, 7);
	for (int cpu = 0; cpu < 5000; cpu++)
		sum += l.e[0].cpu_completions[cpu];
	assert_int_equal(sum, 12502500); /* 1 + 2 + ... + 5000 */
	assert_int_equal(l.e[0].cpu_completions[0], 1);
	assert_int_equal(l.e[0].cpu_completions[1999], 2000);
	assert_int_equal(l.e[0].cpu_completions[2000], 2001);
	assert_int_equal(l.e[0].cpu_completions[4999], 5000);
	assert_int_equal(l.e[1].pid, 901);
	assert_int_equal(l.e[1].cpu_completions[4998], 4999);
	assert_int_equal(l.e[1].cpu_completions[4999], 5000);
	ip_cq_list_free(&l);
}

/* What a caller without CAP_SYS_ADMIN gets, and what is not a thread. */
static void test_list_parse_edges(void **state)
{
	struct ip_cq_list l = { 0 };
	struct wmsg m;
	size_t nest, e;

	/* no counts: the thread, marked so, not zeros taken for counts */
	w_begin(&m, IPCQ_CMD_LIST);
	w_key(&m, "sda", 8, 0, 0, 1, 800);
	assert_int_equal(ip_cq_list_parse(w_end(&m), 4, &l), 0);
	free(m.buf);
	/* the same key again without counters: not a continuation of a
	 * count-less entry, a thread of its own (a re-attached disk) */
	w_begin(&m, IPCQ_CMD_LIST);
	w_key(&m, "sda", 8, 0, 0, 1, 800);
	assert_int_equal(ip_cq_list_parse(w_end(&m), 4, &l), 0);
	free(m.buf);
	assert_int_equal(l.n, 2);
	assert_false(l.e[0].have_counts);
	assert_int_equal(l.e[0].pid, 800);

	/* a continuation with another pid is another thread */
	w_begin(&m, IPCQ_CMD_LIST);
	w_key(&m, "sdb", 8, 16, 0, 1, 810);
	w_counters(&m, 5);
	w_cpus(&m, 0, 2);
	assert_int_equal(ip_cq_list_parse(w_end(&m), 4, &l), 0);
	free(m.buf);
	w_begin(&m, IPCQ_CMD_LIST);
	w_key(&m, "sdb", 8, 16, 0, 1, 811);
	w_cpus(&m, 2, 4);
	assert_int_equal(ip_cq_list_parse(w_end(&m), 4, &l), 0);
	free(m.buf);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.e[2].cpu_completions[2], 0);
	assert_false(l.e[3].have_counts);
	assert_int_equal(l.e[3].cpu_completions[3], 4);

	/* a CPU entry without its count, an unknown attribute in the nest:
	 * skipped, the rest kept */
	w_begin(&m, IPCQ_CMD_LIST);
	w_key(&m, "sdc", 8, 32, 0, 1, 820);
	w_counters(&m, 9);
	nest = w_nest(&m, IPCQ_A_CPU_COMPLETIONS);
	e = w_nest(&m, IPCQ_CPU_A_ENTRY);
	w_u32(&m, IPCQ_CPU_A_CPU, 1);
	w_nest_end(&m, e);
	w_u64(&m, IPCQ_CPU_A_COUNT, 99);
	e = w_nest(&m, IPCQ_CPU_A_ENTRY);
	w_u32(&m, IPCQ_CPU_A_CPU, 3);
	w_u64(&m, IPCQ_CPU_A_COUNT, 9);
	w_nest_end(&m, e);
	w_nest_end(&m, nest);
	assert_int_equal(ip_cq_list_parse(w_end(&m), 4, &l), 0);
	free(m.buf);
	assert_int_equal(l.n, 5);
	assert_int_equal(l.e[4].cpu_completions[1], 0);
	assert_int_equal(l.e[4].cpu_completions[3], 9);

	/* an event, or a message without a pid, is no thread */
	w_begin(&m, IPCQ_CMD_EVENT);
	w_key(&m, "sdd", 8, 48, 0, 1, 830);
	assert_int_equal(ip_cq_list_parse(w_end(&m), 4, &l), 1);
	free(m.buf);
	w_begin(&m, IPCQ_CMD_LIST);
	w_u32(&m, IPCQ_A_MAJOR, 8);
	assert_int_equal(ip_cq_list_parse(w_end(&m), 4, &l), 1);
	free(m.buf);
	assert_int_equal(l.n, 5);
	ip_cq_list_free(&l);
}

/* Requests carry major:minor, version 2, and the owned flag only when asked. */
static void test_encode_request(void **state)
{
	char buf[IP_CQ_REQUEST_MAX] __attribute__((aligned(8)));
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	struct genlmsghdr *gh = (struct genlmsghdr *)(buf + NLMSG_HDRLEN);
	uint32_t seen[IPCQ_A_MAX + 1];
	size_t len, off;

	assert_int_equal(ip_cq_encode_request(buf, 16, 0x20, IPCQ_CMD_ATTACH, 8, 16, 0), 0);
	for (int owned = 0; owned < 2; owned++) {
		len = ip_cq_encode_request(buf, sizeof(buf), 0x20, IPCQ_CMD_ATTACH, 259, 3,
					   owned ? IP_CQ_ATTACH_OWNED : 0);
		assert_int_equal(len, nlh->nlmsg_len);
		assert_int_equal(nlh->nlmsg_type, 0x20);
		assert_true(nlh->nlmsg_flags & NLM_F_ACK);
		assert_int_equal(gh->cmd, IPCQ_CMD_ATTACH);
		assert_int_equal(gh->version, 2);
		memset(seen, 0xff, sizeof(seen));
		for (off = NLMSG_HDRLEN + GENL_HDRLEN; off < len;) {
			struct nlattr *na = (struct nlattr *)(buf + off);

			assert_true(na->nla_type <= IPCQ_A_MAX);
			assert_int_equal(na->nla_len, NLA_HDRLEN + 4);
			memcpy(&seen[na->nla_type], buf + off + NLA_HDRLEN, 4);
			off += NLA_ALIGN(na->nla_len);
		}
		assert_int_equal(off, len);
		assert_int_equal(seen[IPCQ_A_MAJOR], 259);
		assert_int_equal(seen[IPCQ_A_MINOR], 3);
		/* no name: the module reads no file to resolve one */
		assert_int_equal(seen[IPCQ_A_DISK], 0xffffffff);
		assert_int_equal(seen[IPCQ_A_FLAGS], owned ? IPCQ_ATTACH_F_OWNED : 0xffffffff);
	}
	len = ip_cq_encode_request(buf, sizeof(buf), 0x20, IPCQ_CMD_DETACH, 8, 0,
				   IP_CQ_ATTACH_OWNED);
	assert_int_equal(len, NLMSG_HDRLEN + GENL_HDRLEN + 2 * (NLA_HDRLEN + 4));
	len = ip_cq_encode_request(buf, sizeof(buf), 0x20, IPCQ_CMD_LIST, 0, 0, 0);
	assert_int_equal(len, NLMSG_HDRLEN + GENL_HDRLEN);
	assert_true(nlh->nlmsg_flags & NLM_F_DUMP);
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

/*
 * Loaded or not, from the root's sys/module/irqpilot_cq: the kernel makes
 * that directory for every loaded module (kernel/module/sysfs.c,
 * mod_sysfs_init()), with initstate and refcnt among its modinfo_attrs
 * (kernel/module/main.c). The daemon asks it before any netlink lookup,
 * which would make the kernel run modprobe for an absent family.
 */
static void test_module_loaded(void **state)
{
	char dir[] = "/tmp/ipcq-mod-XXXXXX";
	struct ip_root *r;

	(void)state;
	assert_non_null(mkdtemp(dir));
	put(dir, "sys/module/nvme/initstate", "live\n");
	assert_int_equal(ip_root_open(dir, &r), 0);
	assert_false(ip_cq_loaded(r));
	put(dir, "sys/module/irqpilot_cq/initstate", "live\n");
	put(dir, "sys/module/irqpilot_cq/refcnt", "0\n");
	assert_true(ip_cq_loaded(r));
	ip_root_free(r);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_file),
		cmocka_unit_test(test_apply_cq),
		cmocka_unit_test(test_list_parse_split),
		cmocka_unit_test(test_list_parse_edges),
		cmocka_unit_test(test_encode_request),
		cmocka_unit_test(test_client_absent),
		cmocka_unit_test(test_module_loaded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
