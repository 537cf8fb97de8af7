/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Applying a plan, against a writable temp tree built here, with the
 * scheduler calls (and, for errno cases, the writes) replaced by fakes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "irqpilot/apply.h"
#include "irqpilot/engine.h"
#include "irqpilot/procfs.h"
#include "irqpilot/state.h"
#include "irqpilot/log.h"
#include "irqpilot/macro.h"
#include "irqpilot/report.h"

/* act words nothing: its results are read as report.c says them */
#define MSG(res) ip_report_apply_line((char[IP_REASON_MAX]){ 0 }, IP_REASON_MAX, &(res))

/* ---- the fake system ---- */

struct call {
	char what[16]; /* "write", "affinity", "sched" */
	char path[128];
	char data[64];
	pid_t pid;
	ip_cpuset cpus;
	int policy, priority;
};

struct fake {
	int nr_calls;
	struct call calls[32];
	/* Writes to a path containing inject_path fail with inject_err
	 * (inject_count times, or always if 0). */
	const char *inject_path;
	int inject_err;
	int inject_count;
	int affinity_err, sched_err;
	/* The kernel: after a write to smp_affinity_list, effective_affinity_list
	 * shows its first CPU, except for this IRQ (an IO-APIC line that has
	 * not fired yet, or a chip that chose another CPU). */
	unsigned stale_irq;
};

static void write_file(const char *dir, const char *rel, const char *data, mode_t mode)
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
	assert_int_equal(chmod(path, mode), 0);
}

static char *slurp(const char *dir, const char *rel)
{
	static char buf[256];
	char path[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static int fake_write(void *ctx, struct ip_root *r, const char *path, const char *data)
{
	struct fake *f = ctx;
	struct call *c = &f->calls[f->nr_calls++];
	unsigned irq;
	int ret;

	snprintf(c->what, sizeof(c->what), "write");
	snprintf(c->path, sizeof(c->path), "%s", path);
	snprintf(c->data, sizeof(c->data), "%s", data);
	if (f->inject_path && strstr(path, f->inject_path)) {
		if (f->inject_count > 0 && --f->inject_count == 0)
			f->inject_path = NULL;
		return f->inject_err;
	}
	ret = ip_root_write(r, path, data);
	if (ret == 0 && sscanf(path, "proc/irq/%u/smp_affinity_list", &irq) == 1 &&
	    irq != f->stale_irq) {
		char eff[64], first[16];
		ip_cpuset s;

		snprintf(eff, sizeof(eff), "proc/irq/%u/effective_affinity_list", irq);
		if (ip_root_exists(r, eff) && cpuset_parse_list(&s, data) == 0) {
			snprintf(first, sizeof(first), "%d\n", cpuset_first(&s));
			assert_int_equal(ip_root_write(r, eff, first), 0);
		}
	}
	return ret;
}

static int fake_affinity(void *ctx, pid_t pid, const ip_cpuset *cpus)
{
	struct fake *f = ctx;
	struct call *c = &f->calls[f->nr_calls++];

	snprintf(c->what, sizeof(c->what), "affinity");
	c->pid = pid;
	c->cpus = *cpus;
	return f->affinity_err;
}

static int fake_sched(void *ctx, pid_t pid, int policy, int priority)
{
	struct fake *f = ctx;
	struct call *c = &f->calls[f->nr_calls++];

	snprintf(c->what, sizeof(c->what), "sched");
	c->pid = pid;
	c->policy = policy;
	c->priority = priority;
	return f->sched_err;
}

#define STAT_LINE(pid, comm, start)                                                            \
	#pid " (" comm ") S 2 0 0 0 -1 2129984 0 0 0 0 12 906 0 0 -51 0 1 0 " #start               \
	" 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 7 50 1 0 0 0 0 0 0 0 0 0 0 0\n"
#define STAT_700 STAT_LINE(700, "irq/45-test", 512)

struct env {
	char dir[64];
	struct ip_root *r;
	struct fake fake;
	struct ip_apply_ops ops;
	struct ip_history h;
	struct ip_originals o;
	struct ip_plan p;
	struct ip_apply_results res;
};

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/*
 * proc/irq/{10,45,46,47}: 45 is a GIC line with effective affinity, 10 an
 * IO-APIC line, 46 has no effective_affinity_list (arch without it).
 */
static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	snprintf(e->dir, sizeof(e->dir), "/tmp/irqpilot-apply-XXXXXX");
	assert_non_null(mkdtemp(e->dir));
	write_file(e->dir, "proc/irq/45/smp_affinity_list", "0-7\n", 0644);
	write_file(e->dir, "proc/irq/45/smp_affinity", "ff\n", 0644);
	write_file(e->dir, "proc/irq/45/effective_affinity_list", "0\n", 0644);
	write_file(e->dir, "proc/irq/10/smp_affinity_list", "0-3\n", 0644);
	write_file(e->dir, "proc/irq/10/smp_affinity", "f\n", 0644);
	write_file(e->dir, "proc/irq/10/effective_affinity_list", "0\n", 0644);
	write_file(e->dir, "proc/irq/46/smp_affinity_list", "0-7\n", 0644);
	write_file(e->dir, "proc/irq/46/smp_affinity", "ff\n", 0644);
	write_file(e->dir, "proc/irq/47/smp_affinity_list", "0-7\n", 0644);
	write_file(e->dir, "proc/irq/47/smp_affinity", "ff\n", 0644);
	write_file(e->dir, "proc/irq/47/effective_affinity_list", "1\n", 0644);
	write_file(e->dir, "sys/block/sda/queue/rq_affinity", "1\n", 0644);
	/* IRQ thread 700, as fs/proc/array.c do_task_stat() prints it: who
	 * it is (comm, field 22 start time) is read before the first change */
	write_file(e->dir, "proc/700/stat", STAT_700, 0444);
	assert_int_equal(ip_root_open(e->dir, &e->r), 0);
	e->ops.write = fake_write;
	e->ops.set_affinity = fake_affinity;
	e->ops.set_scheduler = fake_sched;
	e->ops.ctx = &e->fake;
	ip_history_init(&e->h);
	ip_originals_init(&e->o);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	ip_apply_results_free(&e->res);
	ip_plan_free(&e->p);
	ip_history_free(&e->h);
	ip_originals_free(&e->o);
	ip_root_free(e->r);
	nftw(e->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(e);
	return 0;
}

static ip_cpuset L(const char *list)
{
	ip_cpuset s;

	assert_int_equal(cpuset_parse_list(&s, list), 0);
	return s;
}

static struct ip_move *add_move(struct ip_plan *p, unsigned irq, const char *from, const char *to,
				const char *fallback)
{
	struct ip_move *mv;

	p->moves = realloc(p->moves, (p->nr_moves + 1) * sizeof(*p->moves));
	assert_non_null(p->moves);
	mv = &p->moves[p->nr_moves++];
	memset(mv, 0, sizeof(*mv));
	mv->irq = irq;
	mv->from_affinity = L(from);
	mv->from = L(from);
	mv->to = L(to);
	mv->fallback = fallback ? L(fallback) : L("");
	return mv;
}

static struct ip_thread_action *add_thread(struct ip_plan *p, pid_t pid, unsigned irq,
					   const char *from, const char *to, int prio)
{
	struct ip_thread_action *t;

	p->threads = realloc(p->threads, (p->nr_threads + 1) * sizeof(*p->threads));
	assert_non_null(p->threads);
	t = &p->threads[p->nr_threads++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->irq = irq;
	snprintf(t->comm, sizeof(t->comm), "irq/%u-test", irq);
	t->from = L(from);
	t->from_policy = SCHED_OTHER;
	t->from_priority = 0;
	if (to) {
		t->set_affinity = true;
		t->to = L(to);
	}
	if (prio) {
		t->set_sched = true;
		t->policy = SCHED_FIFO;
		t->priority = prio;
	}
	return t;
}

static void add_rq(struct ip_plan *p, const char *dev, int from, int value)
{
	p->rq = realloc(p->rq, (p->nr_rq + 1) * sizeof(*p->rq));
	assert_non_null(p->rq);
	memset(&p->rq[p->nr_rq], 0, sizeof(*p->rq));
	snprintf(p->rq[p->nr_rq].device, sizeof(p->rq->device), "%s", dev);
	p->rq[p->nr_rq].from = from;
	p->rq[p->nr_rq++].value = value;
}

static void assert_set(const ip_cpuset *s, const char *list)
{
	char buf[256];

	cpuset_format_list(s, buf, sizeof(buf));
	assert_string_equal(buf, list);
}

#define assert_contains(hay, needle)                                                              \
	do {                                                                                      \
		const char *h_ = (hay);                                                           \
		if (!h_ || !strstr(h_, (needle)))                                                 \
			fail_msg("\"%s\" does not contain \"%s\"", h_ ? h_ : "(null)", (needle)); \
	} while (0)

/* ---- tests ---- */

static void test_classify(void **state)
{
	assert_int_equal(ip_apply_classify(IP_APPLY_IRQ, 0), IP_APPLY_OK);
	assert_int_equal(ip_apply_classify(IP_APPLY_IRQ, -EIO), IP_APPLY_MANAGED);
	assert_int_equal(ip_apply_classify(IP_APPLY_IRQ, -EPERM), IP_APPLY_MANAGED);
	assert_int_equal(ip_apply_classify(IP_APPLY_IRQ, -ENOENT), IP_APPLY_VANISHED);
	assert_int_equal(ip_apply_classify(IP_APPLY_IRQ, -EINVAL), IP_APPLY_RETRY);
	assert_int_equal(ip_apply_classify(IP_APPLY_IRQ, -ERANGE), IP_APPLY_RETRY);
	assert_int_equal(ip_apply_classify(IP_APPLY_IRQ, -ENOSPC), IP_APPLY_NO_SPACE);
	assert_int_equal(ip_apply_classify(IP_APPLY_IRQ, -EBUSY), IP_APPLY_FAILED);
	assert_int_equal(ip_apply_classify(IP_APPLY_IRQ, EIO), IP_APPLY_MANAGED);
	/* DETACH of a disk the module does not hold; irqpilotd not connected */
	assert_int_equal(ip_apply_classify(IP_APPLY_CQ, -ENOENT), IP_APPLY_VANISHED);
	assert_int_equal(ip_apply_classify(IP_APPLY_CQ, -ENOTCONN), IP_APPLY_RETRY);
	assert_int_equal(ip_apply_classify(IP_APPLY_CQ, -EBUSY), IP_APPLY_FAILED);
	assert_int_equal(ip_apply_classify(IP_APPLY_THREAD_AFFINITY, -ESRCH), IP_APPLY_VANISHED);
	assert_int_equal(ip_apply_classify(IP_APPLY_THREAD_AFFINITY, -EINVAL), IP_APPLY_RETRY);
	assert_int_equal(ip_apply_classify(IP_APPLY_THREAD_SCHED, -EPERM), IP_APPLY_FAILED);
	assert_int_equal(ip_apply_classify(IP_APPLY_RQ, -ENOENT), IP_APPLY_VANISHED);
	assert_int_equal(ip_apply_classify(IP_APPLY_RQ, -EINVAL), IP_APPLY_RETRY);
	assert_int_equal(ip_apply_classify(IP_APPLY_RQ, -EACCES), IP_APPLY_FAILED);
	assert_string_equal(ip_apply_outcome_name(IP_APPLY_MANAGED), "managed");
}

/* The exact files and calls, the read-back, the originals; then restore. */
static void test_apply_and_restore(void **state)
{
	struct env *e = *state;
	const struct ip_irq_hist *he;

	add_move(&e->p, 45, "0-7", "7", "6");
	add_thread(&e->p, 700, 45, "0-7", "7", 60);
	add_rq(&e->p, "sda", 1, 2);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);

	assert_string_equal(slurp(e->dir, "proc/irq/45/smp_affinity_list"), "7");
	assert_string_equal(slurp(e->dir, "sys/block/sda/queue/rq_affinity"), "2");
	assert_int_equal(e->fake.nr_calls, 4);
	assert_string_equal(e->fake.calls[0].what, "write");
	assert_string_equal(e->fake.calls[0].path, "proc/irq/45/smp_affinity_list");
	assert_string_equal(e->fake.calls[1].what, "affinity");
	assert_int_equal(e->fake.calls[1].pid, 700);
	assert_set(&e->fake.calls[1].cpus, "7");
	assert_string_equal(e->fake.calls[2].what, "sched");
	assert_int_equal(e->fake.calls[2].policy, SCHED_FIFO);
	assert_int_equal(e->fake.calls[2].priority, 60);
	assert_string_equal(e->fake.calls[3].path, "sys/block/sda/queue/rq_affinity");

	assert_int_equal(e->res.n, 4);
	for (int i = 0; i < e->res.n; i++)
		assert_int_equal(e->res.r[i].outcome, IP_APPLY_OK);
	assert_string_equal(MSG(e->res.r[0]), "wrote 7 to proc/irq/45/smp_affinity_list");
	assert_true(e->res.r[0].have_effective);
	assert_set(&e->res.r[0].effective, "7");
	assert_false(e->res.r[0].pending);
	assert_false(e->p.moves[0].failed);

	he = ip_history_find(&e->h, 45);
	assert_non_null(he);
	assert_string_equal(ip_originals_irq(&e->o, 45), "0-7");
	assert_true(he->have_effective);
	assert_set(&he->effective, "7");
	assert_int_equal(e->o.nr_threads, 1);
	assert_set(&e->o.threads[0].allowed, "0-7");
	assert_int_equal(e->o.threads[0].policy, SCHED_OTHER);
	assert_int_equal(e->o.nr_rq, 1);
	assert_int_equal(e->o.rq[0].value, 1);

	/* A second change keeps the first original. */
	ip_apply_results_free(&e->res);
	e->p.moves[0].to = L("6");
	e->p.nr_threads = 0;
	e->p.nr_rq = 0;
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_string_equal(slurp(e->dir, "proc/irq/45/smp_affinity_list"), "6");
	assert_string_equal(ip_originals_irq(&e->o, 45), "0-7");

	ip_apply_results_free(&e->res);
	e->fake.nr_calls = 0;
	assert_int_equal(ip_apply_restore(e->r, &e->o, &e->ops, &e->res), 0);
	assert_string_equal(slurp(e->dir, "proc/irq/45/smp_affinity_list"), "0-7");
	assert_string_equal(slurp(e->dir, "sys/block/sda/queue/rq_affinity"), "1");
	assert_int_equal(e->fake.nr_calls, 4);
	assert_string_equal(e->fake.calls[1].what, "affinity");
	assert_set(&e->fake.calls[1].cpus, "0-7");
	assert_string_equal(e->fake.calls[2].what, "sched");
	assert_int_equal(e->fake.calls[2].policy, SCHED_OTHER);
	assert_int_equal(e->fake.calls[2].priority, 0);
	assert_int_equal(e->res.n, 4);
	assert_string_equal(MSG(e->res.r[0]), "restored proc/irq/45/smp_affinity_list to 0-7");
	/* Restored means forgotten: a second restore does nothing. */
	ip_apply_results_free(&e->res);
	e->fake.nr_calls = 0;
	assert_int_equal(ip_apply_restore(e->r, &e->o, &e->ops, &e->res), 0);
	assert_int_equal(e->res.n, 0);
	assert_int_equal(e->fake.nr_calls, 0);
}

static void test_dry_run_writes_nothing(void **state)
{
	struct env *e = *state;

	add_move(&e->p, 45, "0-7", "7", NULL);
	add_thread(&e->p, 700, 45, "0-7", "7", 50);
	add_rq(&e->p, "sda", 1, 2);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, true, &e->res), 0);
	assert_int_equal(e->fake.nr_calls, 0);
	assert_string_equal(slurp(e->dir, "proc/irq/45/smp_affinity_list"), "0-7\n");
	assert_string_equal(slurp(e->dir, "sys/block/sda/queue/rq_affinity"), "1\n");
	assert_int_equal(e->res.n, 4);
	for (int i = 0; i < e->res.n; i++)
		assert_int_equal(e->res.r[i].outcome, IP_APPLY_DRY_RUN);
	assert_string_equal(MSG(e->res.r[0]), "would write 7 to proc/irq/45/smp_affinity_list");
	assert_contains(MSG(e->res.r[1]), "would set the affinity of thread 700");
	assert_string_equal(MSG(e->res.r[3]), "would write 2 to sys/block/sda/queue/rq_affinity");
	assert_int_equal(e->h.nr, 0);
	assert_int_equal(e->o.nr_threads, 0);
	assert_int_equal(e->o.nr_rq, 0);
}

/* The IRQ went away between decide and apply. */
static void test_vanished_irq_dropped(void **state)
{
	struct env *e = *state;
	char path[512];

	ip_history_get(&e->h, 46)->last_move_ns = 1;
	snprintf(path, sizeof(path), "%s/proc/irq/46", e->dir);
	nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	add_move(&e->p, 46, "0-7", "3", NULL);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->res.n, 1);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_VANISHED);
	assert_int_equal(e->res.r[0].err, -ENOENT);
	assert_true(e->p.moves[0].failed);
	assert_null(ip_history_find(&e->h, 46));
	assert_contains(MSG(e->res.r[0]), "IRQ 46 vanished");
}

/* An irqctl pin outlives the line it was written to: the policy's memory
 * of IRQ 46 and its original go, the pin stays (the daemon says once that
 * the pinned IRQ is gone when the line leaves /proc/interrupts). */
static void test_vanished_irq_keeps_pin(void **state)
{
	struct env *e = *state;
	ip_cpuset pin = L("2-3");
	const struct ip_irq_hist *h;
	struct ip_irq_hist *g;
	char path[512];

	assert_int_equal(ip_history_pin(&e->h, 46, &pin), 0);
	g = ip_history_get(&e->h, 46);
	g->placed = true;
	g->placement = L("0-1");
	g->last_move_ns = 1;
	g->managed_explained = true;
	g->win = calloc(4, sizeof(*g->win));
	g->win_nd = 2;
	g->win_n = 1;
	assert_int_equal(ip_originals_add_irq(&e->o, 46, "0-7"), 0);
	snprintf(path, sizeof(path), "%s/proc/irq/46", e->dir);
	nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	add_move(&e->p, 46, "0-7", "2-3", NULL);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->res.n, 1);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_VANISHED);
	assert_true(e->p.moves[0].failed);
	assert_null(ip_originals_irq(&e->o, 46));
	h = ip_history_find(&e->h, 46);
	assert_non_null(h);
	assert_true(h->have_pin);
	assert_set(&h->pin, "2-3");
	/* the rest was the vanished line's */
	assert_false(h->placed);
	assert_int_equal(h->last_move_ns, 0);
	assert_false(h->managed_explained);
	assert_null(h->win);
	assert_int_equal(h->win_n, 0);
	assert_int_equal(e->h.nr, 1);
}

/* EIO/EPERM: managed, recorded, never written again. */
static void test_managed_on_write(void **state)
{
	struct env *e = *state;

	e->fake.inject_path = "irq/47/";
	e->fake.inject_err = -EIO;
	add_move(&e->p, 47, "0-7", "3", "2");
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_MANAGED);
	assert_true(e->p.moves[0].failed);
	assert_int_equal(ip_history_find(&e->h, 47)->managed, IP_MANAGED_EIO);
	assert_null(ip_originals_irq(&e->o, 47));
	assert_string_equal(
		MSG(e->res.r[0]),
		"IRQ 47 is managed by the kernel (write failed with EIO); never written again");
	assert_string_equal(slurp(e->dir, "proc/irq/47/smp_affinity_list"), "0-7\n");

	ip_apply_results_free(&e->res);
	e->fake.nr_calls = 0;
	e->p.moves[0].failed = false;
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->fake.nr_calls, 0);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_SKIPPED);
	assert_true(e->p.moves[0].failed);

	/* EPERM (6.18) is managed too. */
	ip_apply_results_free(&e->res);
	e->fake.inject_path = "irq/45/";
	e->fake.inject_err = -EPERM;
	e->p.moves[0].irq = 45;
	e->p.moves[0].failed = false;
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_MANAGED);
	assert_int_equal(ip_history_find(&e->h, 45)->managed, IP_MANAGED_EPERM);
}

/* Mode 0444 on smp_affinity: managed without a write, where modes mean something. */
static void test_managed_by_mode(void **state)
{
	struct env *e = *state;
	char path[512];

	snprintf(path, sizeof(path), "%s/proc/irq/47/smp_affinity", e->dir);
	assert_int_equal(chmod(path, 0444), 0);
	add_move(&e->p, 47, "0-7", "3", NULL);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->fake.nr_calls, 0);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_MANAGED);
	assert_int_equal(ip_history_find(&e->h, 47)->managed, IP_MANAGED_MODE);
	assert_contains(MSG(e->res.r[0]), "mode 0444");

	/* Every smp_affinity 0444: a read-only copy, modes mean nothing. */
	ip_apply_results_free(&e->res);
	ip_history_forget(&e->h, 47);
	e->p.moves[0].failed = false;
	for (unsigned irq = 10; irq <= 47; irq++) {
		snprintf(path, sizeof(path), "%s/proc/irq/%u/smp_affinity", e->dir, irq);
		chmod(path, 0444);
	}
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_OK);
	assert_string_equal(slurp(e->dir, "proc/irq/47/smp_affinity_list"), "3");
}

/*
 * The modes a real 6.12 kernel shows (Debian 6.12.118+deb13-amd64 under QEMU, nvme with 4 I/O
 * queues; tests/vm/scenarios/managed-nvme-baseline.sh records them in out/irq-modes.txt):
 * kernel/irq/proc.c creates smp_affinity and smp_affinity_list 0444 where
 * irq_can_set_affinity_usr() is false. That is the managed nvme0q1..4, but also IRQ 0 (timer,
 * IRQ_NO_BALANCING) and IRQ 2 (the cascade); the admin queue nvme0q0 and the rest stay 0644. A
 * write to a 0444 one fails with EPERM (eb29369fa543) if tried anyway. So 0444 is not rare
 * there, and modes still mean something: a 0444 vector is left alone without a write, a 0644
 * one next to it is written.
 */
static void test_modes_of_612(void **state)
{
	struct env *e = *state;
	char path[512];
	static const unsigned ro[] = { 0, 2, 29, 30, 31, 32 };

	for (size_t i = 0; i < sizeof(ro) / sizeof(ro[0]); i++) {
		snprintf(path, sizeof(path), "proc/irq/%u/smp_affinity", ro[i]);
		write_file(e->dir, path, "f\n", 0444);
		snprintf(path, sizeof(path), "proc/irq/%u/smp_affinity_list", ro[i]);
		write_file(e->dir, path, "0-3\n", 0444);
	}
	write_file(e->dir, "proc/irq/28/smp_affinity", "f\n", 0644);
	write_file(e->dir, "proc/irq/28/smp_affinity_list", "0-3\n", 0644);
	write_file(e->dir, "proc/irq/28/effective_affinity_list", "0\n", 0644);
	add_move(&e->p, 30, "0-3", "1", NULL);	/* nvme0q2, managed */
	add_move(&e->p, 28, "0-3", "2", NULL);	/* nvme0q0, the admin queue */
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_MANAGED);
	assert_int_equal(ip_history_find(&e->h, 30)->managed, IP_MANAGED_MODE);
	assert_contains(MSG(e->res.r[0]), "mode 0444");
	assert_int_equal(e->res.r[1].outcome, IP_APPLY_OK);
	assert_int_equal(e->fake.nr_calls, 1);
	assert_string_equal(e->fake.calls[0].path, "proc/irq/28/smp_affinity_list");
	assert_string_equal(slurp(e->dir, "proc/irq/28/smp_affinity_list"), "2");
}

static void test_retry_and_no_space(void **state)
{
	struct env *e = *state;

	/* EINVAL: bad or offline CPU, not recorded, planned again. */
	e->fake.inject_path = "irq/45/";
	e->fake.inject_err = -EINVAL;
	add_move(&e->p, 45, "0-7", "7", NULL);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_RETRY);
	assert_true(e->p.moves[0].failed);
	assert_true(!ip_history_find(&e->h, 45) ||
		    ip_history_find(&e->h, 45)->managed == IP_MANAGED_NO);
	assert_contains(MSG(e->res.r[0]), "planned again next cycle");

	ip_apply_results_free(&e->res);
	e->fake.inject_err = -ERANGE;
	e->p.moves[0].failed = false;
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_RETRY);

	/* ENOSPC on 7 and on 4: the next CPU of the domain, 5, takes it. */
	ip_apply_results_free(&e->res);
	e->fake.inject_err = -ENOSPC;
	e->fake.inject_count = 2;
	e->fake.nr_calls = 0;
	e->p.moves[0].failed = false;
	e->p.moves[0].fallback = L("4-6");
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->fake.nr_calls, 3);
	assert_string_equal(e->fake.calls[0].data, "7");
	assert_string_equal(e->fake.calls[1].data, "4");
	assert_string_equal(e->fake.calls[2].data, "5");
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_OK);
	assert_set(&e->p.moves[0].to, "5");
	assert_false(e->p.moves[0].failed);
	assert_string_equal(slurp(e->dir, "proc/irq/45/smp_affinity_list"), "5");

	/* ENOSPC everywhere. */
	ip_apply_results_free(&e->res);
	e->fake.inject_path = "irq/45/";
	e->fake.inject_count = 0;
	e->p.moves[0].to = L("7");
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_NO_SPACE);
	assert_true(e->p.moves[0].failed);
}

/* Anything else is reported as failed, the same every cycle it is tried:
 * apply does not decide what is logged; the daemon says it once. */
static void test_other_errors_reported(void **state)
{
	struct env *e = *state;

	e->fake.inject_path = "irq/45/";
	e->fake.inject_err = -EBUSY;
	e->fake.affinity_err = -EINVAL;
	e->fake.sched_err = -EPERM;
	add_move(&e->p, 45, "0-7", "7", NULL);
	add_thread(&e->p, 700, 45, "0-7", "7", 50);
	for (int round = 0; round < 2; round++) {
		ip_apply_results_free(&e->res);
		e->p.moves[0].failed = e->p.threads[0].failed = false;
		assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
		assert_int_equal(e->res.n, 3);
		assert_int_equal(e->res.r[0].outcome, IP_APPLY_FAILED);
		assert_int_equal(e->res.r[0].err, -EBUSY);
		assert_contains(MSG(e->res.r[0]), strerror(EBUSY));
		assert_int_equal(e->res.r[1].outcome, IP_APPLY_RETRY);
		assert_int_equal(e->res.r[2].outcome, IP_APPLY_FAILED);
		assert_int_equal(e->res.r[2].err, -EPERM);
		assert_contains(MSG(e->res.r[2]),
				"setting the priority of thread 700 irq/45-test failed");
		assert_true(e->p.moves[0].failed && e->p.threads[0].failed);
	}
	/* Nothing succeeded, so nothing to restore. */
	assert_int_equal(e->o.nr_threads, 0);
}

/* Read-back: an IO-APIC line that has not fired is pending, not refused;
 * another chip that chose elsewhere is reported; no file, no read-back. */
static void test_read_back(void **state)
{
	struct env *e = *state;
	struct ip_move *mv;

	e->fake.stale_irq = 10;
	mv = add_move(&e->p, 10, "0-3", "2", NULL);
	mv->ioapic = true;
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_OK);
	assert_true(e->res.r[0].pending);
	assert_set(&e->res.r[0].effective, "0");
	assert_contains(MSG(e->res.r[0]), "IO-APIC line moves at its next interrupt");
	assert_false(e->p.moves[0].failed);

	ip_apply_results_free(&e->res);
	e->fake.stale_irq = 47;
	e->p.moves[0].irq = 47;
	e->p.moves[0].ioapic = false;
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_false(e->res.r[0].pending);
	assert_string_equal(MSG(e->res.r[0]), "IRQ 47 set to 2, but the kernel put it on 1");
	assert_set(&ip_history_find(&e->h, 47)->effective, "1");

	ip_apply_results_free(&e->res);
	e->p.moves[0].irq = 46;
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_OK);
	assert_false(e->res.r[0].have_effective);
	/* nothing learnt of it, so the policy's memory holds nothing for it */
	assert_null(ip_history_find(&e->h, 46));
}

/* The policy's plan and history work with apply end to end: a failed
 * move is not committed. */
static void test_failed_move_not_committed(void **state)
{
	struct env *e = *state;

	e->fake.inject_path = "irq/45/";
	e->fake.inject_err = -EINVAL;
	add_move(&e->p, 45, "0-7", "7", NULL);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(ip_history_commit(&e->h, &e->p, 1000), 0);
	assert_true(!ip_history_find(&e->h, 45) || !ip_history_find(&e->h, 45)->last_move_ns);

	ip_apply_results_free(&e->res);
	e->fake.inject_path = NULL;
	e->p.moves[0].failed = false;
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(ip_history_commit(&e->h, &e->p, 2000), 0);
	assert_int_equal(ip_history_find(&e->h, 45)->last_move_ns, 2000);
	assert_set(&ip_history_find(&e->h, 45)->placement, "7");
}

/* Item 8: a pid reused by another process after the IRQ thread exited is
 * left alone, and reported; the thread itself is restored. */
static void test_restore_skips_reused_pid(void **state)
{
	struct env *e = *state;

	add_thread(&e->p, 700, 45, "0-7", "7", 50);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->o.nr_threads, 1);
	assert_string_equal(e->o.threads[0].comm, "irq/45-test");
	assert_int_equal(e->o.threads[0].start, 512);
	ip_apply_results_free(&e->res);
	/* the thread exited; pid 700 is now a shell, with ')' and a space in its name */
	write_file(e->dir, "proc/700/stat", STAT_LINE(700, "my sh) x", 99999), 0444);
	e->fake.nr_calls = 0;
	assert_int_equal(ip_apply_restore(e->r, &e->o, &e->ops, &e->res), 0);
	assert_int_equal(e->fake.nr_calls, 0);
	assert_int_equal(e->res.n, 1);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_VANISHED);
	assert_contains(MSG(e->res.r[0]), "pid 700 is now my sh) x started at 99999, not thread irq/45-test");
	assert_int_equal(e->o.nr_threads, 0);
	ip_apply_results_free(&e->res);

	/* the same thread: both settings are put back */
	write_file(e->dir, "proc/700/stat", STAT_700, 0444);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	ip_apply_results_free(&e->res);
	e->fake.nr_calls = 0;
	assert_int_equal(ip_apply_restore(e->r, &e->o, &e->ops, &e->res), 0);
	assert_int_equal(e->fake.nr_calls, 2);
	assert_string_equal(e->fake.calls[0].what, "affinity");
	assert_set(&e->fake.calls[0].cpus, "0-7");
	assert_string_equal(e->fake.calls[1].what, "sched");
	assert_int_equal(e->fake.calls[1].policy, SCHED_OTHER);
}

/* Item 4: a failed restore keeps its record; a later one drops it. */
static void test_failed_restore_keeps_record(void **state)
{
	struct env *e = *state;

	add_move(&e->p, 45, "0-7", "7", "6");
	add_rq(&e->p, "sda", 1, 2);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	ip_apply_results_free(&e->res);
	e->fake.inject_path = "/";
	e->fake.inject_err = -EROFS;
	assert_int_equal(ip_apply_restore(e->r, &e->o, &e->ops, &e->res), 0);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_FAILED);
	assert_contains(MSG(e->res.r[0]), "the original is kept");
	assert_string_equal(ip_originals_irq(&e->o, 45), "0-7");
	assert_int_equal(e->o.nr_rq, 1);
	assert_string_equal(slurp(e->dir, "proc/irq/45/smp_affinity_list"), "7");
	ip_apply_results_free(&e->res);
	e->fake.inject_path = NULL;
	assert_int_equal(ip_apply_restore(e->r, &e->o, &e->ops, &e->res), 0);
	assert_string_equal(slurp(e->dir, "proc/irq/45/smp_affinity_list"), "0-7");
	assert_string_equal(slurp(e->dir, "sys/block/sda/queue/rq_affinity"), "1");
	assert_null(ip_originals_irq(&e->o, 45));
	assert_int_equal(e->o.nr_rq, 0);
}

/* The module answers ENOENT to a DETACH of a disk it does not hold: one it
 * detached itself when the daemon's socket closed. That record is done; a
 * refused detach (EBUSY) keeps its record for --restore. */
static int fake_cq(void *ctx, unsigned major, unsigned minor, bool attach)
{
	struct fake *f = ctx;

	return attach ? 0 : minor == 0 ? -ENOENT : f->inject_err;
}

static void test_restore_cq_already_detached(void **state)
{
	struct env *e = *state;
	const char *names[] = { "sda", "sdb" };

	for (int i = 0; i < 2; i++)
		assert_int_equal(ip_originals_add_cq(&e->o, names[i], 8, 16 * (unsigned)i), 1);
	e->ops.cq = fake_cq;
	e->fake.inject_err = -EBUSY;
	assert_int_equal(ip_apply_restore(e->r, &e->o, &e->ops, &e->res), 0);
	assert_int_equal(e->res.n, 2);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_VANISHED);
	assert_contains(MSG(e->res.r[0]), "sda was no longer attached");
	assert_null(ip_originals_cq(&e->o, "sda"));
	assert_int_equal(e->res.r[1].outcome, IP_APPLY_FAILED);
	assert_contains(MSG(e->res.r[1]), "kept for --restore");
	assert_non_null(ip_originals_cq(&e->o, "sdb"));
	ip_apply_results_free(&e->res);
	e->fake.inject_err = 0;
	assert_int_equal(ip_apply_restore(e->r, &e->o, &e->ops, &e->res), 0);
	assert_int_equal(e->res.n, 1);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_OK);
	assert_int_equal(e->o.nr_cq, 0);
}

/*
 * A fixture tree's thread ops (engine.c): nothing reaches this machine's
 * scheduler, and the tree shows what the kernel would, so that the next
 * sample finds the thread where it was put. The texts are as
 * fs/proc/array.c prints them: task_cpus_allowed()'s "%*pb" (nr_cpu_ids
 * bits, 32 to a group: 40 CPUs here) and "%*pbl", do_task_stat()'s fields
 * 18 (task_prio()), 40 and 41.
 */
#define STATUS_700(mask, list)                                                                 \
	"Name:\tirq/45-test\nState:\tS (sleeping)\nPid:\t700\nPPid:\t2\n"                          \
	"Cpus_allowed:\t" mask "\nCpus_allowed_list:\t" list "\nMems_allowed:\t00000001\n"       \
	"Mems_allowed_list:\t0\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t0\n"

static void test_tree_ops_show_thread(void **state)
{
	struct env *e = *state;
	struct ip_apply_ops ops;
	struct ip_pid_status st;
	struct ip_pid_stat ps;
	struct ip_diag d = { "" };
	const char *text;
	ip_cpuset cpus;

	write_file(e->dir, "proc/700/status", STATUS_700("ff,ffffffff", "0-39"), 0444);
	ip_engine_ops_for_root(e->r, &ops);

	assert_int_equal(cpuset_parse_list(&cpus, "5,33"), 0);
	assert_int_equal(ops.set_affinity(ops.ctx, 700, &cpus), 0);
	assert_string_equal(slurp(e->dir, "proc/700/status"), STATUS_700("02,00000020", "5,33"));
	text = slurp(e->dir, "proc/700/status");
	assert_int_equal(ip_parse_pid_status(text, strlen(text), &st, &d), 0);
	assert_true(st.has_cpus_allowed && cpuset_equal(&st.cpus_allowed, &cpus));

	assert_int_equal(ops.set_scheduler(ops.ctx, 700, SCHED_OTHER, 0), 0);
	text = slurp(e->dir, "proc/700/stat");
	assert_int_equal(ip_parse_pid_stat(text, strlen(text), &ps, &d), 0);
	assert_int_equal(ps.policy, SCHED_OTHER);
	assert_int_equal(ps.rt_priority, 0);
	assert_int_equal(ps.priority, 20);
	assert_int_equal(ps.starttime, 512); /* the rest as it was */
	/* back to FIFO 50: the line the tree started with, byte for byte */
	assert_int_equal(ops.set_scheduler(ops.ctx, 700, SCHED_FIFO, 50), 0);
	assert_string_equal(slurp(e->dir, "proc/700/stat"), STAT_700);

	/* a thread gone: what sched_setaffinity() and sched_setscheduler() say */
	assert_int_equal(ops.set_affinity(ops.ctx, 701, &cpus), -ESRCH);
	assert_int_equal(ops.set_scheduler(ops.ctx, 701, SCHED_FIFO, 50), -ESRCH);
}

/* The daemon between connections never attaches unowned: an attach that
 * outlived a kill -9 would be left behind. (No socket is opened.) */
static void test_live_without_connection(void **state)
{
	struct ip_apply_live live = { .cq = NULL };
	struct ip_apply_ops ops;

	ip_apply_ops_default(&ops);
	assert_null(ops.ctx);
	assert_int_equal(ops.cq(&live, 8, 0, true), -ENOTCONN);
}

/* Item 9: when a write happens, its original is already in the state
 * file; when it cannot be recorded, nothing is written. */
struct ahead {
	struct fake *fake;
	struct ip_state *st;
	char path[128];
	int checked;
	int fail;
};

static struct ahead *g_ahead;

static int ahead_record(void *ctx, const struct ip_originals *o)
{
	struct ahead *ah = ctx;

	if (ah->fail)
		return ah->fail;
	return ip_state_record(ah->st, o);
}

static int ahead_write(void *ctx, struct ip_root *r, const char *path, const char *data)
{
	char buf[512] = "";
	FILE *f = fopen(g_ahead->path, "r");

	if (f) {
		buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
		fclose(f);
	}
	if (strstr(path, "irq/45/smp_affinity_list") && strcmp(data, "7") == 0) {
		assert_non_null(strstr(buf, "irq 45 0-7\n"));
		g_ahead->checked++;
	}
	if (strstr(path, "sda/queue/rq_affinity") && strcmp(data, "2") == 0) {
		assert_non_null(strstr(buf, "rq sda 1\n"));
		g_ahead->checked++;
	}
	return fake_write(ctx, r, path, data);
}

static int ahead_affinity(void *ctx, pid_t pid, const ip_cpuset *cpus)
{
	char buf[512] = "";
	FILE *f = fopen(g_ahead->path, "r");

	if (f) {
		buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
		fclose(f);
	}
	assert_non_null(strstr(buf, "thread 700 45 512 irq/45-test affinity 0-7\n"));
	g_ahead->checked++;
	return fake_affinity(ctx, pid, cpus);
}

static int fail_record(void *ctx, const struct ip_originals *o)
{
	(void)ctx;
	(void)o;
	return -ENOSPC;
}

static void test_write_ahead(void **state)
{
	struct env *e = *state;
	struct ahead ah = { .fake = &e->fake };
	struct ip_diag d = { "" };
	char rt[96];

	snprintf(rt, sizeof(rt), "%s/run", e->dir);
	assert_int_equal(mkdir(rt, 0700), 0);
	assert_int_equal(ip_state_open(rt, &ah.st, &d), 0);
	snprintf(ah.path, sizeof(ah.path), "%s/state", rt);
	g_ahead = &ah;
	e->ops.write = ahead_write;
	e->ops.set_affinity = ahead_affinity;
	e->ops.record = ahead_record;
	e->ops.record_ctx = &ah;
	add_move(&e->p, 45, "0-7", "7", "6");
	add_thread(&e->p, 700, 45, "0-7", "7", 0);
	add_rq(&e->p, "sda", 1, 2);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(ah.checked, 3);
	ip_apply_results_free(&e->res);
	ip_apply_restore(e->r, &e->o, &e->ops, &e->res);
	ip_apply_results_free(&e->res);
	assert_int_equal(ip_state_save(ah.st, &e->o, &d), 0);

	/* the disk is full: the original cannot be recorded, so no write */
	ah.fail = -ENOSPC;
	e->fake.nr_calls = 0;
	e->p.moves[0].failed = false;
	e->p.nr_threads = e->p.nr_rq = 0;
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->fake.nr_calls, 0);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_FAILED);
	assert_contains(MSG(e->res.r[0]), "its original could not be recorded first");
	assert_true(e->p.moves[0].failed);
	assert_null(ip_originals_irq(&e->o, 45));
	assert_string_equal(slurp(e->dir, "proc/irq/45/smp_affinity_list"), "0-7");
	ip_state_close(ah.st);
}

/*
 * An smp_affinity_list caught empty mid-rewrite or garbled when the first
 * move reads its original: the sampled affinity is recorded instead, and
 * with none sampled nothing is written. Recorded as read, "irq 45 " or
 * "irq 45 zz" reached the state file, whose reader refuses it: after a
 * crash --restore could not put the vector back.
 */
static void test_original_not_a_cpu_list(void **state)
{
	struct env *e = *state;
	const char *bad[] = { "\n", "zz\n", "0-7 junk\n" };

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		write_file(e->dir, "proc/irq/45/smp_affinity_list", bad[i], 0644);
		ip_originals_free(&e->o);
		ip_originals_init(&e->o);
		ip_apply_results_free(&e->res);
		ip_plan_free(&e->p);
		add_move(&e->p, 45, "0-3", "7", NULL);
		assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
		assert_string_equal(ip_originals_irq(&e->o, 45), "0-3");
		assert_string_equal(slurp(e->dir, "proc/irq/45/smp_affinity_list"), "7");

		/* nothing sampled either: no original, so no write */
		write_file(e->dir, "proc/irq/45/smp_affinity_list", bad[i], 0644);
		ip_originals_free(&e->o);
		ip_originals_init(&e->o);
		ip_apply_results_free(&e->res);
		e->p.moves[0].failed = false;
		cpuset_zero(&e->p.moves[0].from_affinity);
		assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
		assert_null(ip_originals_irq(&e->o, 45));
		assert_int_equal(e->res.r[0].outcome, IP_APPLY_FAILED);
		assert_true(e->p.moves[0].failed);
		assert_string_equal(MSG(e->res.r[0]), "IRQ 45 not written: proc/irq/45/smp_affinity_list "
						      "holds no CPU list, so its original is unknown");
		assert_string_equal(slurp(e->dir, "proc/irq/45/smp_affinity_list"), bad[i]);
	}
}

/*
 * rq originals are kept sorted by device: one added before a failed write
 * sits at its place, not always last. Dropped as "the last entry", sdb's
 * original went when sda's first write was refused, and sdb kept 2 after
 * restore.
 */
static void test_failed_rq_drops_its_own_original(void **state)
{
	struct env *e = *state;

	write_file(e->dir, "sys/block/sdb/queue/rq_affinity", "0\n", 0644);
	add_rq(&e->p, "sdb", 0, 2);
	add_rq(&e->p, "sda", 1, 2);
	e->fake.inject_path = "/sda/";
	e->fake.inject_err = -EINVAL;
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_OK);
	assert_int_equal(e->res.r[1].outcome, IP_APPLY_RETRY);
	assert_int_equal(e->o.nr_rq, 1);
	assert_true(ip_originals_rq(&e->o, "sdb"));
	assert_false(ip_originals_rq(&e->o, "sda"));

	/* the disk is full when sda's original is to be recorded: the same */
	ip_originals_free(&e->o);
	ip_originals_init(&e->o);
	assert_int_equal(ip_originals_add_rq(&e->o, "sdb", 0), 1);
	e->ops.record = fail_record;
	e->p.nr_rq = 1;
	e->p.rq[0] = e->p.rq[1];
	e->p.rq[0].failed = false;
	ip_apply_results_free(&e->res);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->res.r[0].detail, IP_APPLY_D_UNRECORDED);
	assert_int_equal(e->o.nr_rq, 1);
	assert_true(ip_originals_rq(&e->o, "sdb"));

	ip_apply_results_free(&e->res);
	e->fake.inject_path = NULL;
	e->ops.record = NULL;
	assert_int_equal(ip_apply_restore(e->r, &e->o, &e->ops, &e->res), 0);
	assert_string_equal(slurp(e->dir, "sys/block/sdb/queue/rq_affinity"), "0");
}

/*
 * rq_affinity that reads as no value 0-2 (or not at all) when its first
 * write comes, with none sampled either: its original is unknown. Written
 * anyway, the 2 stayed after restore, whatever the device had: the only
 * change irqpilotd made without a record to undo it.
 */
static void test_rq_original_unknown(void **state)
{
	struct env *e = *state;

	write_file(e->dir, "sys/block/sda/queue/rq_affinity", "x\n", 0644);
	add_rq(&e->p, "sda", -1, 2);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->o.nr_rq, 0);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_FAILED);
	assert_int_equal(e->res.r[0].detail, IP_APPLY_D_UNRECORDED);
	assert_true(e->p.rq[0].failed);
	assert_string_equal(MSG(e->res.r[0]), "sys/block/sda/queue/rq_affinity not written: it holds "
					      "no value 0-2, so its original is unknown");
	assert_string_equal(slurp(e->dir, "sys/block/sda/queue/rq_affinity"), "x\n");

	/* sampled before the file went odd: that value is the original */
	ip_apply_results_free(&e->res);
	e->p.rq[0].failed = false;
	e->p.rq[0].from = 1;
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->o.nr_rq, 1);
	assert_int_equal(e->o.rq[0].value, 1);
	assert_string_equal(slurp(e->dir, "sys/block/sda/queue/rq_affinity"), "2");
}

/*
 * A thread's original that restore cannot put back: no CPU list sampled,
 * or a policy sched_setscheduler() cannot set (SCHED_DEADLINE). Recorded
 * anyway, the state file got "affinity " or "sched 6 0", which its reader
 * refuses: the daemon would not start again and --restore set the whole
 * file aside, the thread's and every other original unrestored. Nothing
 * is changed then; what is representable round-trips.
 */
static void test_thread_original_unrestorable(void **state)
{
	struct env *e = *state;
	struct ip_state_bads bad = { 0 };
	struct ip_originals back;
	struct ip_state *st = NULL;
	struct ip_diag d = { "" };
	char rt[96];

	snprintf(rt, sizeof(rt), "%s/run", e->dir);
	assert_int_equal(mkdir(rt, 0700), 0);
	assert_int_equal(ip_state_open(rt, &st, &d), 0);
	e->ops.record = ip_state_record;
	e->ops.record_ctx = st;
	add_thread(&e->p, 700, 45, "", "7", 0);
	add_thread(&e->p, 700, 45, "0-7", NULL, 50)->from_policy = 6;
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->res.n, 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(e->res.r[i].outcome, IP_APPLY_FAILED);
		assert_int_equal(e->res.r[i].detail, IP_APPLY_D_UNRECORDED);
		assert_true(e->p.threads[i].failed);
	}
	assert_string_equal(MSG(e->res.r[0]), "thread 700 irq/45-test not changed: its affinity is "
					      "not known, so restore could not put it back");
	assert_string_equal(MSG(e->res.r[1]), "thread 700 irq/45-test not changed: its priority is "
					      "not known, so restore could not put it back");
	assert_int_equal(e->fake.nr_calls, 0);
	assert_int_equal(e->o.nr_threads, 0);

	/* a known original is recorded, and the file reads back whole */
	e->p.threads[1].from_policy = SCHED_FIFO;
	e->p.threads[1].from_priority = 50;
	e->p.threads[1].failed = false;
	ip_apply_results_free(&e->res);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->res.r[1].outcome, IP_APPLY_OK);
	ip_originals_init(&back);
	assert_int_equal(ip_state_load(st, 32768, &back, &bad, &d), 0);
	assert_int_equal(bad.n, 0);
	assert_int_equal(back.nr_threads, 1);
	assert_true(back.threads[0].have_sched);
	assert_false(back.threads[0].have_affinity);
	ip_originals_free(&back);
	ip_state_bads_free(&bad);
	ip_state_close(st);
}

/*
 * --restore where /proc and /sys are not there: a chroot or rescue shell
 * before they are mounted, or a --root that names the wrong tree. Every
 * file is ENOENT, which meant "the IRQ, thread or device is gone": each
 * original was dropped as vanished, the state file deleted and the exit
 * 0. A missing proc/irq or sys/block says nothing of the objects in it.
 */
static void test_restore_without_proc_keeps_records(void **state)
{
	struct env *e = *state;
	char path[128];

	add_move(&e->p, 45, "0-7", "7", NULL);
	add_thread(&e->p, 700, 45, "0-7", "7", 0);
	add_rq(&e->p, "sda", 1, 2);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	assert_int_equal(e->o.nr_irqs + e->o.nr_threads + e->o.nr_rq, 3);
	ip_apply_results_free(&e->res);
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", e->dir, i ? "sys" : "proc");
		assert_int_equal(nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS), 0);
		assert_int_equal(mkdir(path, 0755), 0); /* the empty mount point */
	}
	e->fake.nr_calls = 0;
	assert_int_equal(ip_apply_restore(e->r, &e->o, &e->ops, &e->res), 0);
	assert_int_equal(e->res.n, 3);
	for (int i = 0; i < e->res.n; i++) {
		assert_int_equal(e->res.r[i].outcome, IP_APPLY_FAILED);
		assert_contains(MSG(e->res.r[i]), "No such file or directory");
	}
	assert_int_equal(e->fake.nr_calls, 2); /* the IRQ and rq writes; not the thread */
	assert_string_equal(ip_originals_irq(&e->o, 45), "0-7");
	assert_int_equal(e->o.nr_threads, 1);
	assert_true(e->o.threads[0].have_affinity);
	assert_int_equal(e->o.nr_rq, 1);
}

/*
 * Restore when none of an original's CPUs is online now. The kernel takes
 * such a list for an IRQ without an error: write_irq_affinity()
 * (kernel/irq/proc.c) has irq_select_affinity_usr() choose the default
 * affinity, and the write returns its count. The original counted as
 * restored and its record went, the IRQ on CPUs it never had. A thread's
 * sched_setaffinity() fails with EINVAL, said as "Invalid argument". Now
 * neither is written, each says which CPUs are offline, the records are
 * kept for a --restore once one is online, and the rest is restored.
 */
static void test_restore_original_cpus_offline(void **state)
{
	struct env *e = *state;

	write_file(e->dir, "proc/irq/45/smp_affinity_list", "4-7\n", 0644);
	write_file(e->dir, "sys/devices/system/cpu/online", "0-7\n", 0444);
	add_move(&e->p, 45, "4-7", "1", NULL);
	add_thread(&e->p, 700, 45, "4-7", "1", 0);
	add_rq(&e->p, "sda", 1, 2);
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	ip_apply_results_free(&e->res);

	write_file(e->dir, "sys/devices/system/cpu/online", "0-3\n", 0444);
	e->fake.nr_calls = 0;
	assert_int_equal(ip_apply_restore(e->r, &e->o, &e->ops, &e->res), 0);
	assert_int_equal(e->res.n, 3);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(e->res.r[i].outcome, IP_APPLY_RETRY);
		assert_int_equal(e->res.r[i].detail, IP_APPLY_D_OFFLINE);
	}
	assert_string_equal(MSG(e->res.r[0]), "proc/irq/45/smp_affinity_list not restored to 4-7: none of "
					      "those CPUs is online; the original is kept for irqpilotd --restore");
	assert_string_equal(MSG(e->res.r[1]), "the affinity of thread 700 irq/45-test not restored to 4-7: "
					      "none of those CPUs is online; the original is kept for irqpilotd "
					      "--restore");
	assert_int_equal(e->res.r[2].outcome, IP_APPLY_OK);
	assert_int_equal(e->fake.nr_calls, 1); /* rq_affinity alone */
	assert_string_equal(slurp(e->dir, "proc/irq/45/smp_affinity_list"), "1");
	assert_string_equal(ip_originals_irq(&e->o, 45), "4-7");
	assert_int_equal(e->o.nr_threads, 1);
	assert_int_equal(e->o.nr_rq, 0);

	/* CPU 5 online again: both are put back */
	write_file(e->dir, "sys/devices/system/cpu/online", "0-3,5\n", 0444);
	ip_apply_results_free(&e->res);
	assert_int_equal(ip_apply_restore(e->r, &e->o, &e->ops, &e->res), 0);
	assert_int_equal(e->res.n, 2);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_OK);
	assert_int_equal(e->res.r[1].outcome, IP_APPLY_OK);
	assert_string_equal(slurp(e->dir, "proc/irq/45/smp_affinity_list"), "4-7");
	assert_true(ip_originals_empty(&e->o));
}

/* Every result act can give is worded: a record report.c has no words
 * for would reach the log as an empty line. */
/* ---- a freed number given to another vector ---- */

/* Who IRQ 45 was when moved: a GIC line of ufshcd. */
static struct ip_irq_ident ufs45(void)
{
	struct ip_irq_ident id;

	ip_irq_ident_set(&id, "GICv3", "297", "ufshcd");
	return id;
}

/* The lines a decision and a restore compare a recorded vector with. */
static void test_ident_reused(void **state)
{
	static const struct {
		const char *chip, *hwirq, *actions; /* now; NULL chip: an untracked line */
		bool reused;
	} cases[] = {
		{ "GICv3", "297", "ufshcd", false },
		{ "GICv3", "400", "ufshcd", true },	 /* another hwirq */
		{ "ITS-MSI", "297", "ufshcd", true },	 /* another chip */
		{ "GICv3", "400", "mydev", true },
		{ NULL, NULL, "mydev", true },		 /* no name in common */
		{ NULL, NULL, "ufshcd", false },	 /* nothing else known */
		{ "GICv3", "297", "", false },		 /* its action freed, the line stays */
		{ "GICv3", "297", "mmc0, ufshcd", false }, /* a shared line gained one */
		{ "GICv3", "297", "mmc0", true },	 /* none in common */
	};
	struct ip_irq_ident was = ufs45(), now, older = { 0 }, edge, fasteoi;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		ip_irq_ident_set(&now, cases[i].chip, cases[i].hwirq, cases[i].actions);
		if (ip_irq_ident_reused(&was, &now) != cases[i].reused)
			fail_msg("case %zu: %s %s %s", i, cases[i].chip ? cases[i].chip : "?",
				 cases[i].hwirq ? cases[i].hwirq : "?", cases[i].actions);
		/* a record from an older state file says nothing */
		assert_false(ip_irq_ident_reused(&older, &now));
	}
	/* x86's flow handler name after the hwirq is not the vector */
	ip_irq_ident_set(&edge, "IO-APIC", "9-edge", "acpi");
	ip_irq_ident_set(&fasteoi, "IO-APIC", "9-fasteoi", "acpi");
	assert_false(ip_irq_ident_reused(&edge, &fasteoi));
	ip_irq_ident_set(&fasteoi, "IO-APIC", "19-fasteoi", "acpi");
	assert_true(ip_irq_ident_reused(&edge, &fasteoi));
}

/* The move's line is recorded with its original, as the policy saw it. */
static void test_original_keeps_identity(void **state)
{
	struct env *e = *state;
	struct ip_move *mv = add_move(&e->p, 45, "0-7", "7", NULL);
	const struct ip_irq_ident *id;

	mv->ident = ufs45();
	assert_int_equal(ip_apply(&e->p, e->r, &e->h, &e->o, &e->ops, false, &e->res), 0);
	id = ip_originals_irq_id(&e->o, 45);
	assert_non_null(id);
	assert_true(id->have_hw && id->have_actions);
	assert_string_equal(id->chip, "GICv3");
	assert_string_equal(id->hwirq, "297");
	assert_string_equal(id->actions, "ufshcd");
}

/*
 * IRQ 45 was moved, freed and its number given to another device's vector
 * before a sample saw it gone: line and proc/irq/45 are there. The sample
 * drops the original as it does a freed vector's, and the policy's memory
 * of the old vector; IRQ 47, the same vector still, keeps its own.
 */
static void test_reused_number_dropped_at_sample(void **state)
{
	struct env *e = *state;
	char gic[] = "GICv3", h400[] = "400", h310[] = "310", level[] = "Level";
	struct ip_irq_info i45 = { .chip = gic, .hwirq = h400, .trigger = level };
	struct ip_irq_info i47 = { .chip = gic, .hwirq = h310, .trigger = level };
	struct ip_irq lines[2] = {
		{ .irq = 45, .tracked = true, .actions = "mydev", .info = &i45 },
		{ .irq = 47, .tracked = true, .actions = "ufshcd", .info = &i47 },
	};
	struct ip_snapshot s = { .nr_irqs = 2, .irqs = lines };
	struct ip_irq_ident was = ufs45(), ufs47;

	ip_irq_ident_set(&ufs47, "GICv3", "310", "ufshcd");
	assert_int_equal(ip_originals_add_irq_id(&e->o, 45, "0-7", &was), 0);
	assert_int_equal(ip_originals_add_irq_id(&e->o, 47, "0-7", &ufs47), 0);
	ip_history_get(&e->h, 45)->last_move_ns = 1;
	assert_int_equal(ip_apply_drop_freed(e->r, &s, &e->h, &e->o, &e->res), 0);
	assert_int_equal(e->res.n, 1);
	assert_int_equal(e->res.r[0].irq, 45);
	assert_int_equal(e->res.r[0].outcome, IP_APPLY_VANISHED);
	assert_int_equal(e->res.r[0].detail, IP_APPLY_D_FREED);
	assert_true(e->res.r[0].reused);
	assert_string_equal(MSG(e->res.r[0]),
			    "IRQ 45 was freed (its number names another vector now): its original is "
			    "dropped, not written onto the next IRQ of that number; the line shows "
			    "GICv3 400 mydev, not GICv3 297 ufshcd");
	assert_null(ip_originals_irq(&e->o, 45));
	assert_null(ip_history_find(&e->h, 45));
	assert_string_equal(ip_originals_irq(&e->o, 47), "0-7");
	assert_int_equal(e->fake.nr_calls, 0);
}

/*
 * --restore and the restore at exit read the lines afresh: the number
 * may have been given out again after the last sample, or while no daemon
 * ran. IRQ 45's line is another vector's: its original is not written and
 * goes, saying why. IRQ 47 is its vector still and IRQ 10's record is from
 * an older state file (no identity): both are restored as before.
 */
static void test_restore_refuses_reused_vector(void **state)
{
	struct env *e = *state;
	struct ip_irq_ident was = ufs45(), ufs47;

	write_file(e->dir, "proc/interrupts",
		   "           CPU0       CPU1\n"
		   " 10:          5          0   IO-APIC   10-fasteoi   mydev\n"
		   " 45:          5          0     GICv3 400 Level     mydev\n"
		   " 47:          7          0     GICv3 310 Level     ufshcd\n",
		   0444);
	ip_irq_ident_set(&ufs47, "GICv3", "310", "ufshcd");
	assert_int_equal(ip_originals_add_irq_id(&e->o, 45, "0-7", &was), 0);
	assert_int_equal(ip_originals_add_irq_id(&e->o, 47, "0-3", &ufs47), 0);
	assert_int_equal(ip_originals_add_irq(&e->o, 10, "0"), 0);
	assert_int_equal(ip_apply_restore(e->r, &e->o, &e->ops, &e->res), 0);
	assert_int_equal(e->fake.nr_calls, 2);
	assert_string_equal(e->fake.calls[0].path, "proc/irq/10/smp_affinity_list");
	assert_string_equal(e->fake.calls[1].path, "proc/irq/47/smp_affinity_list");
	assert_string_equal(slurp(e->dir, "proc/irq/45/smp_affinity_list"), "0-7\n");
	assert_int_equal(e->res.n, 3);
	assert_int_equal(e->res.r[1].irq, 45);
	assert_true(e->res.r[1].restore);
	assert_int_equal(e->res.r[1].outcome, IP_APPLY_VANISHED);
	assert_int_equal(e->res.r[1].detail, IP_APPLY_D_FREED);
	assert_contains(MSG(e->res.r[1]), "IRQ 45 was freed (its number names another vector now): "
					  "its original is dropped, not written onto the next IRQ");
	assert_contains(MSG(e->res.r[1]), "GICv3 400 mydev, not GICv3 297 ufshcd");
	assert_true(ip_originals_empty(&e->o));
}

/*
 * IRQ 45's number is on two lines: the kernel's (its vector still) and
 * one made up inside a GPIO consumer label ("\n45: 9 9 GICv3 400 mydev"),
 * after it or before it. Which is the kernel's cannot be told; taking
 * the made-up one dropped the original as a freed vector's. It is
 * restored, as a record without an identity is.
 */
static void test_restore_line_listed_twice(void **state)
{
	static const char *const files[] = {
		"           CPU0       CPU1\n"
		" 45:          5          0     GICv3 297 Level     ufshcd\n"
		"200:          0          0  pinctrl  12 Edge      cd\n"
		"45: 9 9 GICv3 400 mydev\n",
		"           CPU0       CPU1\n"
		" 20:          0          0  pinctrl  12 Edge      cd\n"
		"45: 9 9 GICv3 400 mydev\n"
		" 45:          5          0     GICv3 297 Level     ufshcd\n",
	};
	struct env *e = *state;

	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		struct ip_irq_ident was = ufs45();

		write_file(e->dir, "proc/interrupts", files[i], 0444);
		assert_int_equal(ip_originals_add_irq_id(&e->o, 45, "0-7", &was), 0);
		e->fake.nr_calls = 0;
		ip_apply_results_free(&e->res);
		assert_int_equal(ip_apply_restore(e->r, &e->o, &e->ops, &e->res), 0);
		assert_int_equal(e->fake.nr_calls, 1);
		assert_string_equal(e->fake.calls[0].path, "proc/irq/45/smp_affinity_list");
		assert_int_equal(e->res.n, 1);
		assert_int_equal(e->res.r[0].outcome, IP_APPLY_OK);
		assert_true(ip_originals_empty(&e->o));
	}
}

static void test_every_result_has_words(void **state)
{
	(void)state;
	for (int what = IP_APPLY_IRQ; what <= IP_APPLY_CQ; what++)
		for (int o = IP_APPLY_OK; o <= IP_APPLY_SKIPPED; o++)
			for (int d = IP_APPLY_D_NONE; d <= IP_APPLY_D_PID_REUSED; d++)
				for (int restore = 0; restore < 2; restore++) {
					struct ip_apply_result r = {
						.what = what, .outcome = o, .detail = d,
						.restore = restore, .irq = 45, .pid = 700,
						.comm = "irq/45-ufshcd", .device = "sda",
						.err = o == IP_APPLY_OK ? 0 : -EIO, .value = 1,
					};
					const char *line = MSG(r);

					assert_true(strlen(line) > 10);
					assert_null(strstr(line, "(null)"));
					assert_string_not_equal(ip_apply_detail_name(d), "unknown");
				}
	struct ip_apply_result rq = { .what = IP_APPLY_RQ, .restore = true, .device = "sda", .value = 1 };

	assert_string_equal(MSG(rq), "restored sys/block/sda/queue/rq_affinity to 1");
	rq.err = -EACCES;
	rq.outcome = IP_APPLY_FAILED;
	assert_string_equal(MSG(rq), "restoring sys/block/sda/queue/rq_affinity to 1 failed: Permission denied");
	/* gone: its record is dropped, as an IRQ's or a thread's; not "failed" */
	rq.err = -ENOENT;
	rq.outcome = IP_APPLY_VANISHED;
	assert_string_equal(MSG(rq), "device sda is gone (sys/block/sda/queue/rq_affinity): nothing to restore");
}

static bool has_field(const struct ip_journal *jf, const char *f)
{
	for (int i = 0; i < jf->nr; i++)
		if (strcmp(jf->fields[i], f) == 0)
			return true;
	return false;
}

/* A result as the journal gets it: the words, and fields a script can match. */
static void test_result_journal(void **state)
{
	struct ip_journal *jf = malloc(sizeof(*jf));
	struct ip_apply_result r = { .what = IP_APPLY_IRQ, .outcome = IP_APPLY_MANAGED, .irq = 47,
				     .err = -EPERM };

	(void)state;
	assert_non_null(jf);
	cpuset_set(&r.written, 2);
	ip_report_apply_journal(jf, &r);
	assert_string_equal(jf->message,
			    "IRQ 47 is managed by the kernel (write failed with EPERM); never written again");
	assert_string_equal(jf->message_id, IP_MESSAGE_MANAGED);
	assert_true(has_field(jf, "IRQPILOT_IRQ=47"));
	assert_true(has_field(jf, "IRQPILOT_ACTION=irq"));
	assert_true(has_field(jf, "IRQPILOT_OUTCOME=managed"));
	assert_true(has_field(jf, "IRQPILOT_ERRNO=EPERM"));
	assert_true(has_field(jf, "IRQPILOT_TO=2"));
	assert_int_equal(jf->nr, 5);

	struct ip_apply_result t = { .what = IP_APPLY_THREAD_SCHED, .outcome = IP_APPLY_VANISHED,
				     .detail = IP_APPLY_D_PID_REUSED, .restore = true, .irq = 45,
				     .pid = 700, .comm = "irq/45-test", .start = 5, .now_comm = "sh",
				     .now_start = 9, .err = -ESRCH };

	ip_report_apply_journal(jf, &t);
	assert_string_equal(jf->message, "pid 700 is now sh started at 9, not thread irq/45-test started at 5: not restored");
	assert_string_equal(jf->message_id, IP_MESSAGE_RESTORE);
	assert_true(has_field(jf, "IRQPILOT_PID=700"));
	assert_true(has_field(jf, "IRQPILOT_IRQ=45"));
	assert_true(has_field(jf, "IRQPILOT_ACTION=thread_sched"));
	assert_true(has_field(jf, "IRQPILOT_OUTCOME_DETAIL=pid-reused"));
	assert_true(has_field(jf, "IRQPILOT_ERRNO=ESRCH"));
	free(jf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_every_result_has_words),
		cmocka_unit_test(test_result_journal),
		cmocka_unit_test_setup_teardown(test_apply_and_restore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run_writes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vanished_irq_dropped, setup, teardown),
		cmocka_unit_test(test_ident_reused),
		cmocka_unit_test_setup_teardown(test_original_keeps_identity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reused_number_dropped_at_sample, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_line_listed_twice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_refuses_reused_vector, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vanished_irq_keeps_pin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_managed_on_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_managed_by_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_modes_of_612, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retry_and_no_space, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_errors_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_move_not_committed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_skips_reused_pid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_restore_keeps_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_ahead, setup, teardown),
		cmocka_unit_test_setup_teardown(test_original_not_a_cpu_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_rq_drops_its_own_original, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rq_original_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_thread_original_unrestorable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_without_proc_keeps_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_original_cpus_offline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_cq_already_detached, setup, teardown),
		cmocka_unit_test(test_live_without_connection),
		cmocka_unit_test_setup_teardown(test_tree_ops_show_thread, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
