/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * act: carry out a plan. This is the only place irqpilot writes to the
 * system, and every write goes through struct ip_apply_ops.
 */

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/apply.h"
#include "irqpilot/cqclient.h"
#include "irqpilot/macro.h"

/* ---- the real operations ---- */

static int real_write(void *ctx, struct ip_root *r, const char *path, const char *data)
{
	return ip_root_write(r, path, data);
}

static int real_set_affinity(void *ctx, pid_t pid, const ip_cpuset *cpus)
{
	size_t size = CPU_ALLOC_SIZE(IP_CPU_MAX);
	cpu_set_t *set = CPU_ALLOC(IP_CPU_MAX);
	int ret = 0;

	if (!set)
		return -ENOMEM;
	CPU_ZERO_S(size, set);
	CPUSET_FOREACH(cpu, cpus)
		CPU_SET_S(cpu, size, set);
	if (sched_setaffinity(pid, size, set) < 0)
		ret = -errno;
	CPU_FREE(set);
	return ret;
}

static int real_set_scheduler(void *ctx, pid_t pid, int policy, int priority)
{
	struct sched_param sp = {.sched_priority = priority};

	return sched_setscheduler(pid, policy, &sp) < 0 ? -errno : 0;
}

/* Attaching is rare (a policy decision, a stall): a socket per call keeps
 * the ops free of state. */
static int real_cq(void *ctx, unsigned major, unsigned minor, bool attach)
{
	struct ip_diag d = { "" };
	struct ip_cq *c;
	int ret = ip_cq_open(&c, &d);

	if (ret < 0)
		return ret;
	ret = attach ? ip_cq_attach(c, major, minor, &d) : ip_cq_detach(c, major, minor, &d);
	ip_cq_close(c);
	return ret;
}

void ip_apply_ops_default(struct ip_apply_ops *ops)
{
	ops->write = real_write;
	ops->set_affinity = real_set_affinity;
	ops->set_scheduler = real_set_scheduler;
	ops->cq = real_cq;
	ops->ctx = NULL;
}

/* ---- classification ---- */

const char *ip_apply_outcome_name(enum ip_apply_outcome o)
{
	switch (o) {
	case IP_APPLY_OK:
		return "ok";
	case IP_APPLY_DRY_RUN:
		return "dry-run";
	case IP_APPLY_MANAGED:
		return "managed";
	case IP_APPLY_VANISHED:
		return "vanished";
	case IP_APPLY_RETRY:
		return "retry";
	case IP_APPLY_NO_SPACE:
		return "no-space";
	case IP_APPLY_FAILED:
		return "failed";
	case IP_APPLY_SKIPPED:
		return "skipped";
	}
	return "unknown";
}

enum ip_apply_outcome ip_apply_classify(enum ip_apply_what what, int err)
{
	if (err > 0)
		err = -err;
	if (err == 0)
		return IP_APPLY_OK;
	switch (what) {
	case IP_APPLY_IRQ:
		switch (err) {
		case -EIO:   /* 6.1: irq_can_set_affinity_usr() fails on managed vectors */
		case -EPERM: /* 6.18 */
			return IP_APPLY_MANAGED;
		case -ENOENT:
			return IP_APPLY_VANISHED;
		case -EINVAL:
		case -ERANGE:
			return IP_APPLY_RETRY;
		case -ENOSPC:
			return IP_APPLY_NO_SPACE;
		}
		return IP_APPLY_FAILED;
	case IP_APPLY_THREAD_AFFINITY:
	case IP_APPLY_THREAD_SCHED:
		switch (err) {
		case -ESRCH:
			return IP_APPLY_VANISHED;
		case -EINVAL: /* an offline CPU, or PF_NO_SETAFFINITY */
			return IP_APPLY_RETRY;
		}
		return IP_APPLY_FAILED;
	case IP_APPLY_RQ:
		switch (err) {
		case -ENOENT:
			return IP_APPLY_VANISHED;
		case -EINVAL:
		case -ERANGE:
			return IP_APPLY_RETRY;
		}
		return IP_APPLY_FAILED;
	case IP_APPLY_CQ:
		switch (err) {
		case -IP_CQ_ABSENT: /* the module was unloaded */
		case -ENOENT:	    /* the disk went away */
		case -ENODEV:
			return IP_APPLY_VANISHED;
		}
		/* EINVAL/EOPNOTSUPP: not a whole blk-mq disk; ENOSPC: 64 attached;
		 * EBUSY, EPERM: never better next cycle. */
		return IP_APPLY_FAILED;
	}
	return IP_APPLY_FAILED;
}

/* ---- results ---- */

struct actx {
	struct ip_root *r;
	struct ip_history *h;
	const struct ip_apply_ops *ops;
	bool dry_run;
	struct ip_apply_results *out;
	size_t alloc;
	int err;
	int modes_known; /* -1 unknown, 0 modes mean nothing, 1 they do */
};

void ip_apply_results_free(struct ip_apply_results *res)
{
	free(res->r);
	res->r = NULL;
	res->n = 0;
}

static struct ip_apply_result *add_result(struct actx *a, enum ip_apply_what what)
{
	struct ip_apply_result *res;

	if ((size_t)a->out->n == a->alloc) {
		size_t na = a->alloc ? a->alloc * 2 : 16;
		struct ip_apply_result *nv = realloc(a->out->r, na * sizeof(*nv));

		if (!nv) {
			a->err = -ENOMEM;
			return NULL;
		}
		a->out->r = nv;
		a->alloc = na;
	}
	res = &a->out->r[a->out->n++];
	memset(res, 0, sizeof(*res));
	res->what = what;
	res->log = true;
	return res;
}

static void msgf(struct ip_apply_result *res, const char *fmt, ...) _printf_(2, 3);
static void msgf(struct ip_apply_result *res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(res->msg, sizeof(res->msg), fmt, ap);
	va_end(ap);
}

static const char *fmt_set(char *buf, size_t size, const ip_cpuset *s)
{
	size_t need = cpuset_format_list(s, buf, size);

	if (need >= size && size > 4)
		strcpy(buf + size - 4, "...");
	return buf;
}

/* Sets res->log: an unexpected failure is logged once per object. */
static void log_once(struct actx *a, struct ip_apply_result *res, const char *key)
{
	res->log = a->dry_run ? true : ip_history_log_once(a->h, key);
}

/*
 * Mode 0444 on smp_affinity means managed on 6.18, but only where the tree
 * keeps modes: a tree copied read-only has every file at 0444, and then
 * modes mean nothing.
 */
static bool modes_meaningful(struct actx *a)
{
	char **names = NULL;
	size_t n = 0;

	if (a->modes_known >= 0)
		return a->modes_known;
	a->modes_known = 0;
	if (ip_root_listdir(a->r, "proc/irq", &names, &n) < 0)
		return false;
	for (size_t i = 0; i < n && !a->modes_known; i++) {
		_cleanup_free_ char *path = NULL;
		struct stat st;

		if (names[i][0] < '0' || names[i][0] > '9')
			continue;
		path = ip_asprintf("proc/irq/%s/smp_affinity", names[i]);
		if (path && ip_root_stat(a->r, path, &st) == 0 && (st.st_mode & 0222))
			a->modes_known = 1;
	}
	ip_strv_free(names, n);
	return a->modes_known;
}

static bool read_only_mode(struct actx *a, unsigned irq)
{
	_cleanup_free_ char *path = ip_asprintf("proc/irq/%u/smp_affinity", irq);
	struct stat st;

	if (!path || ip_root_stat(a->r, path, &st) < 0)
		return false;
	return !(st.st_mode & 0222) && modes_meaningful(a);
}

static void mark_managed(struct actx *a, unsigned irq, enum ip_managed_why why)
{
	struct ip_irq_hist *e;

	if (a->dry_run)
		return;
	e = ip_history_get(a->h, irq);
	if (!e)
		a->err = -ENOMEM;
	else
		e->managed = why;
}

/* Where the kernel really put it. EINVAL on read: the arch has no
 * effective affinity; a missing file: neither. */
static void read_back(struct actx *a, struct ip_move *mv, struct ip_apply_result *res)
{
	_cleanup_free_ char *path = ip_asprintf("proc/irq/%u/effective_affinity_list", mv->irq);
	_cleanup_free_ char *line = NULL;
	struct ip_irq_hist *e;
	char b1[128], b2[128];

	if (!path || ip_root_read_line(a->r, path, &line) < 0)
		return;
	if (cpuset_parse_list(&res->effective, line) < 0 || cpuset_empty(&res->effective))
		return;
	res->have_effective = true;
	e = ip_history_get(a->h, mv->irq);
	if (e) {
		e->have_effective = true;
		e->effective = res->effective;
	}
	if (cpuset_intersects(&res->effective, &res->written))
		return;
	if (mv->ioapic) {
		res->pending = true;
		msgf(res,
		     "IRQ %u set to %s; effective still %s: an IO-APIC line moves at its next interrupt",
		     mv->irq, fmt_set(b1, sizeof(b1), &res->written),
		     fmt_set(b2, sizeof(b2), &res->effective));
	} else {
		msgf(res, "IRQ %u set to %s, but the kernel put it on %s", mv->irq,
		     fmt_set(b1, sizeof(b1), &res->written),
		     fmt_set(b2, sizeof(b2), &res->effective));
	}
}

static int write_irq_list(struct actx *a, unsigned irq, const ip_cpuset *set)
{
	char buf[IP_CPULIST_MAX];
	_cleanup_free_ char *path = ip_asprintf("proc/irq/%u/smp_affinity_list", irq);

	if (!path)
		return -ENOMEM;
	cpuset_format_list(set, buf, sizeof(buf));
	return a->ops->write(a->ops->ctx, a->r, path, buf);
}

static void apply_move(struct actx *a, struct ip_move *mv)
{
	const struct ip_irq_hist *e = ip_history_find(a->h, mv->irq);
	struct ip_apply_result *res = add_result(a, IP_APPLY_IRQ);
	_cleanup_free_ char *path = ip_asprintf("proc/irq/%u/smp_affinity_list", mv->irq);
	_cleanup_free_ char *orig = NULL;
	ip_cpuset try = mv->to;
	int next = -1, err;
	char b1[128], key[32];

	if (!res || !path) {
		a->err = -ENOMEM;
		return;
	}
	res->irq = mv->irq;
	res->written = mv->to;
	if (e && e->managed != IP_MANAGED_NO) {
		res->outcome = IP_APPLY_SKIPPED;
		mv->failed = true;
		msgf(res, "IRQ %u is managed by the kernel; not written", mv->irq);
		return;
	}
	if (read_only_mode(a, mv->irq)) {
		res->outcome = IP_APPLY_MANAGED;
		mv->failed = true;
		mark_managed(a, mv->irq, IP_MANAGED_MODE);
		msgf(res,
		     "IRQ %u is managed by the kernel (smp_affinity is mode 0444); not written",
		     mv->irq);
		return;
	}
	if (a->dry_run) {
		res->outcome = IP_APPLY_DRY_RUN;
		msgf(res, "would write %s to %s", fmt_set(b1, sizeof(b1), &mv->to), path);
		return;
	}
	/* The original, read before the first write, is what restore puts back. */
	if (!(e && e->orig) && ip_root_read_line(a->r, path, &orig) < 0) {
		char buf[IP_CPULIST_MAX];

		cpuset_format_list(&mv->from_affinity, buf, sizeof(buf));
		orig = strdup(buf);
	}
	for (;;) {
		err = write_irq_list(a, mv->irq, &try);
		if (ip_apply_classify(IP_APPLY_IRQ, err) != IP_APPLY_NO_SPACE)
			break;
		/* No vector space on that CPU: the next CPU of the domain. */
		next = cpuset_next(&mv->fallback, next + 1);
		if (next < 0)
			break;
		cpuset_zero(&try);
		cpuset_set(&try, next);
	}
	res->err = err;
	res->written = try;
	res->outcome = ip_apply_classify(IP_APPLY_IRQ, err);
	switch (res->outcome) {
	case IP_APPLY_OK: {
		struct ip_irq_hist *he = ip_history_get(a->h, mv->irq);

		if (!he) {
			a->err = -ENOMEM;
			return;
		}
		if (!he->orig)
			he->orig = TAKE_PTR(orig);
		mv->to = try;
		msgf(res, "wrote %s to %s", fmt_set(b1, sizeof(b1), &try), path);
		read_back(a, mv, res);
		return;
	}
	case IP_APPLY_MANAGED:
		mark_managed(a, mv->irq, err == -EPERM ? IP_MANAGED_EPERM : IP_MANAGED_EIO);
		msgf(res,
		     "IRQ %u is managed by the kernel (write failed with %s); never written again",
		     mv->irq, err == -EPERM ? "EPERM" : "EIO");
		break;
	case IP_APPLY_VANISHED:
		ip_history_drop(a->h, mv->irq);
		msgf(res, "IRQ %u vanished (%s is gone); dropped", mv->irq, path);
		break;
	case IP_APPLY_RETRY:
		msgf(res, "IRQ %u refused %s (%s): a bad or offline CPU; planned again next cycle",
		     mv->irq, fmt_set(b1, sizeof(b1), &try), strerror(-err));
		break;
	case IP_APPLY_NO_SPACE:
		msgf(res, "IRQ %u: no vector space on %s nor on the rest of its domain", mv->irq,
		     fmt_set(b1, sizeof(b1), &mv->to));
		break;
	default:
		snprintf(key, sizeof(key), "irq %u", mv->irq);
		log_once(a, res, key);
		msgf(res, "writing %s to %s failed: %s", fmt_set(b1, sizeof(b1), &try), path,
		     strerror(-err));
		break;
	}
	mv->failed = true;
}

static struct ip_thread_orig *thread_orig(struct actx *a, pid_t pid, unsigned irq)
{
	struct ip_history *h = a->h;
	struct ip_thread_orig *nv;

	for (size_t i = 0; i < h->nr_threads; i++)
		if (h->threads[i].pid == pid)
			return &h->threads[i];
	nv = realloc(h->threads, (h->nr_threads + 1) * sizeof(*nv));
	if (!nv) {
		a->err = -ENOMEM;
		return NULL;
	}
	h->threads = nv;
	memset(&nv[h->nr_threads], 0, sizeof(*nv));
	nv[h->nr_threads].pid = pid;
	nv[h->nr_threads].irq = irq;
	return &nv[h->nr_threads++];
}

static void thread_failure(struct actx *a, struct ip_thread_action *ta, struct ip_apply_result *res,
			   const char *what)
{
	char key[48];

	switch (res->outcome) {
	case IP_APPLY_VANISHED:
		msgf(res, "thread %d %s is gone", ta->pid, ta->comm);
		break;
	case IP_APPLY_RETRY:
		msgf(res, "thread %d %s refused its %s (%s); planned again next cycle", ta->pid,
		     ta->comm, what, strerror(-res->err));
		break;
	default:
		snprintf(key, sizeof(key), "pid %d %s", ta->pid, what);
		log_once(a, res, key);
		msgf(res, "setting the %s of thread %d %s failed: %s", what, ta->pid, ta->comm,
		     strerror(-res->err));
		break;
	}
	ta->failed = true;
}

static void apply_thread(struct actx *a, struct ip_thread_action *ta)
{
	char b1[128];

	if (ta->set_affinity) {
		struct ip_apply_result *res = add_result(a, IP_APPLY_THREAD_AFFINITY);

		if (!res)
			return;
		res->irq = ta->irq;
		res->pid = ta->pid;
		res->written = ta->to;
		if (a->dry_run) {
			res->outcome = IP_APPLY_DRY_RUN;
			msgf(res, "would set the affinity of thread %d %s to %s", ta->pid, ta->comm,
			     fmt_set(b1, sizeof(b1), &ta->to));
		} else {
			res->err = a->ops->set_affinity(a->ops->ctx, ta->pid, &ta->to);
			res->outcome = ip_apply_classify(IP_APPLY_THREAD_AFFINITY, res->err);
			if (res->outcome == IP_APPLY_OK) {
				struct ip_thread_orig *o = thread_orig(a, ta->pid, ta->irq);

				if (o && !o->have_affinity) {
					o->have_affinity = true;
					o->allowed = ta->from;
				}
				msgf(res, "set the affinity of thread %d %s to %s", ta->pid,
				     ta->comm, fmt_set(b1, sizeof(b1), &ta->to));
			} else {
				thread_failure(a, ta, res, "affinity");
			}
		}
	}
	if (ta->set_sched) {
		struct ip_apply_result *res = add_result(a, IP_APPLY_THREAD_SCHED);

		if (!res)
			return;
		res->irq = ta->irq;
		res->pid = ta->pid;
		res->value = ta->priority;
		if (a->dry_run) {
			res->outcome = IP_APPLY_DRY_RUN;
			msgf(res, "would set thread %d %s to SCHED_FIFO %d", ta->pid, ta->comm,
			     ta->priority);
			return;
		}
		res->err = a->ops->set_scheduler(a->ops->ctx, ta->pid, ta->policy, ta->priority);
		res->outcome = ip_apply_classify(IP_APPLY_THREAD_SCHED, res->err);
		if (res->outcome == IP_APPLY_OK) {
			struct ip_thread_orig *o = thread_orig(a, ta->pid, ta->irq);

			if (o && !o->have_sched) {
				o->have_sched = true;
				o->policy = ta->from_policy;
				o->priority = ta->from_priority;
			}
			msgf(res, "set thread %d %s to SCHED_FIFO %d", ta->pid, ta->comm,
			     ta->priority);
		} else {
			thread_failure(a, ta, res, "priority");
		}
	}
}

static struct ip_rq_orig *rq_orig_find(struct ip_history *h, const char *dev)
{
	for (size_t i = 0; i < h->nr_rq; i++)
		if (strcmp(h->rq[i].device, dev) == 0)
			return &h->rq[i];
	return NULL;
}

static void apply_rq(struct actx *a, struct ip_rq_action *ra)
{
	struct ip_apply_result *res = add_result(a, IP_APPLY_RQ);
	_cleanup_free_ char *path = ip_asprintf("sys/block/%s/queue/rq_affinity", ra->device);
	long long cur = ra->from;
	char val[16], key[64];

	if (!res || !path) {
		a->err = -ENOMEM;
		return;
	}
	snprintf(res->device, sizeof(res->device), "%s", ra->device);
	res->value = ra->value;
	snprintf(val, sizeof(val), "%d", ra->value);
	if (a->dry_run) {
		res->outcome = IP_APPLY_DRY_RUN;
		msgf(res, "would write %s to %s", val, path);
		return;
	}
	if (!rq_orig_find(a->h, ra->device) && ip_root_read_long(a->r, path, &cur) < 0)
		cur = ra->from;
	res->err = a->ops->write(a->ops->ctx, a->r, path, val);
	res->outcome = ip_apply_classify(IP_APPLY_RQ, res->err);
	switch (res->outcome) {
	case IP_APPLY_OK:
		if (!rq_orig_find(a->h, ra->device) && cur >= 0) {
			struct ip_rq_orig *nv =
				realloc(a->h->rq, (a->h->nr_rq + 1) * sizeof(*a->h->rq));

			if (!nv) {
				a->err = -ENOMEM;
				return;
			}
			a->h->rq = nv;
			snprintf(nv[a->h->nr_rq].device, sizeof(nv->device), "%s", ra->device);
			nv[a->h->nr_rq++].value = (int)cur;
		}
		msgf(res, "wrote %s to %s", val, path);
		return;
	case IP_APPLY_VANISHED:
		msgf(res, "device %s vanished (%s is gone)", ra->device, path);
		break;
	case IP_APPLY_RETRY:
		msgf(res, "%s refused %s (%s)", path, val, strerror(-res->err));
		break;
	default:
		snprintf(key, sizeof(key), "rq %s", ra->device);
		log_once(a, res, key);
		msgf(res, "writing %s to %s failed: %s", val, path, strerror(-res->err));
		break;
	}
	ra->failed = true;
}

static const char *cq_strerror(int err)
{
	return err == -IP_CQ_ABSENT ? "irqpilot_cq is not loaded" : strerror(-err);
}

static void apply_cq(struct actx *a, struct ip_cq_action *ca)
{
	struct ip_apply_result *res = add_result(a, IP_APPLY_CQ);
	const char *verb = ca->attach ? "attach" : "detach";
	char key[64];

	if (!res)
		return;
	snprintf(res->device, sizeof(res->device), "%s", ca->device);
	res->value = ca->attach;
	if (a->dry_run) {
		res->outcome = IP_APPLY_DRY_RUN;
		msgf(res, "would %s %s (%u:%u) %s irqpilot_cq", verb, ca->device, ca->major,
		     ca->minor, ca->attach ? "to" : "from");
		return;
	}
	res->err = a->ops->cq ? a->ops->cq(a->ops->ctx, ca->major, ca->minor, ca->attach)
			      : -ENOTSUP;
	res->outcome = ip_apply_classify(IP_APPLY_CQ, res->err);
	if (res->outcome == IP_APPLY_OK) {
		msgf(res, "%sed %s (%u:%u) %s irqpilot_cq", verb, ca->device, ca->major, ca->minor,
		     ca->attach ? "to" : "from");
		return;
	}
	/* A refused attach is planned again every cycle: log it once. */
	snprintf(key, sizeof(key), "cq %s %s", verb, ca->device);
	log_once(a, res, key);
	msgf(res, "%s of %s (%u:%u) failed: %s", verb, ca->device, ca->major, ca->minor,
	     cq_strerror(res->err));
	ca->failed = true;
}

int ip_apply(struct ip_plan *p, struct ip_root *r, struct ip_history *h,
	     const struct ip_apply_ops *ops, bool dry_run, struct ip_apply_results *out)
{
	struct actx a = {
		.r = r,
		.h = h,
		.ops = ops,
		.dry_run = dry_run,
		.out = out,
		.modes_known = -1,
	};

	memset(out, 0, sizeof(*out));
	/* IRQs first: writing an IRQ's affinity resets its thread's. */
	for (int i = 0; i < p->nr_moves && !a.err; i++)
		apply_move(&a, &p->moves[i]);
	/* Attach before placing: a new device's threads appear next cycle. */
	for (int i = 0; i < p->nr_cq && !a.err; i++)
		apply_cq(&a, &p->cq[i]);
	for (int i = 0; i < p->nr_threads && !a.err; i++)
		apply_thread(&a, &p->threads[i]);
	for (int i = 0; i < p->nr_rq && !a.err; i++)
		apply_rq(&a, &p->rq[i]);
	if (a.err) {
		ip_apply_results_free(out);
		return a.err;
	}
	return 0;
}

int ip_apply_restore(struct ip_root *r, struct ip_history *h, const struct ip_apply_ops *ops,
		     struct ip_apply_results *out)
{
	struct actx a = {.r = r, .h = h, .ops = ops, .out = out, .modes_known = -1};
	char b1[128];

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < h->nr && !a.err; i++) {
		struct ip_irq_hist *e = &h->irqs[i];
		struct ip_apply_result *res;
		_cleanup_free_ char *path = NULL;

		if (!e->orig)
			continue;
		res = add_result(&a, IP_APPLY_IRQ);
		path = ip_asprintf("proc/irq/%u/smp_affinity_list", e->irq);
		if (!res || !path) {
			a.err = -ENOMEM;
			break;
		}
		res->irq = e->irq;
		cpuset_parse_list(&res->written, e->orig);
		res->err = ops->write(ops->ctx, r, path, e->orig);
		res->outcome = ip_apply_classify(IP_APPLY_IRQ, res->err);
		if (res->outcome == IP_APPLY_OK)
			msgf(res, "restored %s to %s", path, e->orig);
		else
			msgf(res, "restoring %s to %s failed: %s", path, e->orig,
			     strerror(-res->err));
		free(e->orig);
		e->orig = NULL;
		e->placed = false;
	}
	for (size_t i = 0; i < h->nr_threads && !a.err; i++) {
		struct ip_thread_orig *o = &h->threads[i];
		struct ip_apply_result *res;

		if (o->have_affinity) {
			res = add_result(&a, IP_APPLY_THREAD_AFFINITY);
			if (!res)
				break;
			res->irq = o->irq;
			res->pid = o->pid;
			res->written = o->allowed;
			res->err = ops->set_affinity(ops->ctx, o->pid, &o->allowed);
			res->outcome = ip_apply_classify(IP_APPLY_THREAD_AFFINITY, res->err);
			msgf(res, "%s the affinity of thread %d to %s%s%s",
			     res->err ? "restoring" : "restored", o->pid,
			     fmt_set(b1, sizeof(b1), &o->allowed), res->err ? " failed: " : "",
			     res->err ? strerror(-res->err) : "");
		}
		if (o->have_sched) {
			res = add_result(&a, IP_APPLY_THREAD_SCHED);
			if (!res)
				break;
			res->irq = o->irq;
			res->pid = o->pid;
			res->value = o->priority;
			res->err = ops->set_scheduler(
				ops->ctx, o->pid, o->policy,
				o->policy == SCHED_FIFO || o->policy == SCHED_RR ? o->priority : 0);
			res->outcome = ip_apply_classify(IP_APPLY_THREAD_SCHED, res->err);
			msgf(res, "%s the policy of thread %d to %d, priority %d%s%s",
			     res->err ? "restoring" : "restored", o->pid, o->policy, o->priority,
			     res->err ? " failed: " : "", res->err ? strerror(-res->err) : "");
		}
	}
	for (size_t i = 0; i < h->nr_cqdev && !a.err; i++) {
		struct ip_cqdev_hist *e = &h->cqdev[i];
		struct ip_apply_result *res;

		if (!e->attached_by_us)
			continue;
		res = add_result(&a, IP_APPLY_CQ);
		if (!res)
			break;
		snprintf(res->device, sizeof(res->device), "%s", e->device);
		res->err = ops->cq ? ops->cq(ops->ctx, e->major, e->minor, false) : -ENOTSUP;
		res->outcome = ip_apply_classify(IP_APPLY_CQ, res->err);
		if (res->outcome == IP_APPLY_OK || res->outcome == IP_APPLY_VANISHED)
			msgf(res, "detached %s from irqpilot_cq%s", e->device,
			     res->err ? " (already gone)" : "");
		else
			msgf(res, "detaching %s from irqpilot_cq failed: %s", e->device,
			     cq_strerror(res->err));
		e->attached_by_us = false;
	}
	for (size_t i = 0; i < h->nr_rq && !a.err; i++) {
		struct ip_apply_result *res = add_result(&a, IP_APPLY_RQ);
		_cleanup_free_ char *path =
			ip_asprintf("sys/block/%s/queue/rq_affinity", h->rq[i].device);
		char val[16];

		if (!res || !path) {
			a.err = -ENOMEM;
			break;
		}
		snprintf(res->device, sizeof(res->device), "%s", h->rq[i].device);
		snprintf(val, sizeof(val), "%d", h->rq[i].value);
		res->value = h->rq[i].value;
		res->err = ops->write(ops->ctx, r, path, val);
		res->outcome = ip_apply_classify(IP_APPLY_RQ, res->err);
		msgf(res, "%s %s to %s%s%s", res->err ? "restoring" : "restored", path, val,
		     res->err ? " failed: " : "", res->err ? strerror(-res->err) : "");
	}
	free(h->threads);
	h->threads = NULL;
	h->nr_threads = 0;
	free(h->rq);
	h->rq = NULL;
	h->nr_rq = 0;
	if (a.err) {
		ip_apply_results_free(out);
		return a.err;
	}
	return 0;
}
