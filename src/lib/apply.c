/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * act: carry out a plan. This is the only place irqpilot writes to the
 * system, and every write goes through struct ip_apply_ops.
 */

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/apply.h"
#include "irqpilot/cqclient.h"
#include "irqpilot/macro.h"
#include "irqpilot/procfs.h"
#include "irqpilot/sorted.h"

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

/* Attaching is rare (a policy decision, a stall): without a connection
 * of the caller's, a socket per call keeps the ops free of state. */
static int real_cq(void *ctx, unsigned major, unsigned minor, bool attach)
{
	const struct ip_apply_live *live = ctx;
	struct ip_diag d = { "" };
	struct ip_cq *c;
	int ret;

	if (live && live->cq)
		return attach ? ip_cq_attach_flags(live->cq, major, minor, IP_CQ_ATTACH_OWNED, &d)
			      : ip_cq_detach(live->cq, major, minor, &d);
	/* The daemon between connections (the module loaded after it, a
	 * failed events socket) makes no attach that would outlive it; the
	 * next cycle attaches on the new connection. Detaching needs none. */
	if (live && attach)
		return -ENOTCONN;
	ret = ip_cq_open(&c, &d);
	if (ret < 0)
		return ret;
	/* unowned: an owned attach would end with this socket (apply.h) */
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
	ops->record = NULL;
	ops->record_ctx = NULL;
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

const char *ip_apply_detail_name(enum ip_apply_detail d)
{
	static const char *const names[] = {
		[IP_APPLY_D_NONE] = "none",
		[IP_APPLY_D_UNRECORDED] = "original-unrecorded",
		[IP_APPLY_D_KNOWN_MANAGED] = "known-managed",
		[IP_APPLY_D_MODE_0444] = "mode-0444",
		[IP_APPLY_D_ELSEWHERE] = "effective-elsewhere",
		[IP_APPLY_D_THREAD_GONE] = "thread-gone",
		[IP_APPLY_D_IDENTITY] = "identity-unreadable",
		[IP_APPLY_D_PID_REUSED] = "pid-reused",
		[IP_APPLY_D_FREED] = "freed",
		[IP_APPLY_D_OFFLINE] = "cpus-offline",
	};

	return (unsigned)d < ARRAY_SIZE(names) && names[d] ? names[d] : "unknown";
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
		case -ENOTCONN: /* irqpilotd not connected yet (real_cq) */
			return IP_APPLY_RETRY;
		}
		/* EINVAL/EOPNOTSUPP: not a whole blk-mq disk; ENOSPC: 64 attached;
		 * EBUSY, EPERM: never better next cycle. */
		return IP_APPLY_FAILED;
	}
	return IP_APPLY_FAILED;
}

/* ---- results ---- */

/* ---- originals ---- */

void ip_originals_init(struct ip_originals *o)
{
	memset(o, 0, sizeof(*o));
}

void ip_originals_free(struct ip_originals *o)
{
	for (size_t i = 0; i < o->nr_irqs; i++)
		free(o->irqs[i].list);
	free(o->irqs);
	free(o->threads);
	free(o->rq);
	free(o->cq);
	memset(o, 0, sizeof(*o));
}

size_t ip_originals_count(const struct ip_originals *o)
{
	return o->nr_irqs + o->nr_threads + o->nr_rq + o->nr_cq;
}

bool ip_originals_empty(const struct ip_originals *o)
{
	return ip_originals_count(o) == 0;
}

/* Index of @irq, or where it would be inserted (with *found false). */
static size_t orig_irq_pos(const struct ip_originals *o, unsigned irq, bool *found)
{
	return IP_SORTED_POS(o->irqs, o->nr_irqs, irq, irq, found);
}

const char *ip_originals_irq(const struct ip_originals *o, unsigned irq)
{
	bool found;
	size_t i = orig_irq_pos(o, irq, &found);

	return found ? o->irqs[i].list : NULL;
}

const struct ip_irq_ident *ip_originals_irq_id(const struct ip_originals *o, unsigned irq)
{
	bool found;
	size_t i = orig_irq_pos(o, irq, &found);

	return found ? &o->irqs[i].id : NULL;
}

/* Room for one more record at @i of *@arr (@n of @size, room for *@cap):
 * zeroed, or NULL. The room doubles: grown by one record at a time, a
 * state file's 100000 records were 100000 reallocs, each a copy of the
 * whole array under AddressSanitizer (minutes). */
static void *insert_at(void **arr, size_t *cap, size_t n, size_t size, size_t i)
{
	char *nv = *arr;

	if (n >= *cap) {
		size_t room = n < 8 ? 16 : 2 * n;

		nv = reallocarray(*arr, room, size);
		if (!nv)
			return NULL;
		*arr = nv;
		*cap = room;
	}
	memmove(nv + (i + 1) * size, nv + i * size, (n - i) * size);
	memset(nv + i * size, 0, size);
	return nv + i * size;
}

int ip_originals_add_irq(struct ip_originals *o, unsigned irq, const char *list)
{
	return ip_originals_add_irq_id(o, irq, list, NULL);
}

int ip_originals_add_irq_id(struct ip_originals *o, unsigned irq, const char *list,
			    const struct ip_irq_ident *id)
{
	bool found;
	size_t i = orig_irq_pos(o, irq, &found);
	struct ip_irq_orig *nv;
	char *copy;

	if (found)
		return 0;
	copy = strdup(list);
	nv = copy ? insert_at((void **)&o->irqs, &o->cap_irqs, o->nr_irqs, sizeof(*nv), i) : NULL;
	if (!nv) {
		free(copy);
		return -ENOMEM;
	}
	*nv = (struct ip_irq_orig){ .irq = irq, .list = copy };
	if (id)
		nv->id = *id;
	o->nr_irqs++;
	return 0;
}

void ip_originals_drop_irq(struct ip_originals *o, unsigned irq)
{
	bool found;
	size_t i = orig_irq_pos(o, irq, &found);

	if (!found)
		return;
	free(o->irqs[i].list);
	memmove(&o->irqs[i], &o->irqs[i + 1], (o->nr_irqs - i - 1) * sizeof(*o->irqs));
	o->nr_irqs--;
}

/* Index of the first of @n records of @size at @base that is not below
 * @key in @cmp's order (@n when none), *@found when it equals @key. A
 * state file is read a record at a time: a linear search for each was
 * quadratic, 80000 thread records took 15 s and a 16 MiB file hours. */
static size_t lower_bound(const void *base, size_t n, size_t size, const void *key,
			  int (*cmp)(const void *key, const void *elem), bool *found)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp(key, (const char *)base + mid * size) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < n && cmp(key, (const char *)base + lo * size) == 0;
	return lo;
}


int ip_thread_orig_cmp(const struct ip_thread_orig *a, const struct ip_thread_orig *b)
{
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return strcmp(a->comm, b->comm);
}

static int cmp_thread(const void *key, const void *elem)
{
	return ip_thread_orig_cmp(key, elem);
}

struct ip_thread_orig *ip_originals_thread(struct ip_originals *o, pid_t pid, unsigned irq,
					   const char *comm, uint64_t start)
{
	struct ip_thread_orig key = { .pid = pid, .start = start }, *nv;
	bool found;
	size_t i;

	snprintf(key.comm, sizeof(key.comm), "%s", comm);
	i = lower_bound(o->threads, o->nr_threads, sizeof(key), &key, cmp_thread, &found);
	if (found)
		return &o->threads[i];
	nv = insert_at((void **)&o->threads, &o->cap_threads, o->nr_threads, sizeof(*nv), i);
	if (!nv)
		return NULL;
	o->nr_threads++;
	nv->pid = pid;
	nv->irq = irq;
	nv->start = start;
	memcpy(nv->comm, key.comm, sizeof(nv->comm));
	return nv;
}

/* rq and cq records are kept sorted by device; both begin with it. */
static int cmp_device(const void *key, const void *elem)
{
	return strcmp(key, elem);
}

int ip_originals_add_rq(struct ip_originals *o, const char *device, int value)
{
	struct ip_rq_orig *nv;
	bool found;
	size_t i = lower_bound(o->rq, o->nr_rq, sizeof(*nv), device, cmp_device, &found);

	if (found)
		return 0;
	nv = insert_at((void **)&o->rq, &o->cap_rq, o->nr_rq, sizeof(*nv), i);
	if (!nv)
		return -ENOMEM;
	o->nr_rq++;
	snprintf(nv->device, sizeof(nv->device), "%s", device);
	nv->value = value;
	return 1;
}

bool ip_originals_rq(const struct ip_originals *o, const char *device)
{
	bool found;

	lower_bound(o->rq, o->nr_rq, sizeof(*o->rq), device, cmp_device, &found);
	return found;
}

/* Drops @device's rq_affinity original: the array is sorted by device, so
 * one just added is at its place, not always the last. */
static void drop_rq(struct ip_originals *o, const char *device)
{
	bool found;
	size_t i = lower_bound(o->rq, o->nr_rq, sizeof(*o->rq), device, cmp_device, &found);

	if (!found)
		return;
	memmove(&o->rq[i], &o->rq[i + 1], (o->nr_rq - i - 1) * sizeof(*o->rq));
	o->nr_rq--;
}

const struct ip_cq_orig *ip_originals_cq(const struct ip_originals *o, const char *device)
{
	bool found;
	size_t i = lower_bound(o->cq, o->nr_cq, sizeof(*o->cq), device, cmp_device, &found);

	return found ? &o->cq[i] : NULL;
}

int ip_originals_add_cq(struct ip_originals *o, const char *device, unsigned major, unsigned minor)
{
	struct ip_cq_orig *nv;
	bool found;
	size_t i = lower_bound(o->cq, o->nr_cq, sizeof(*nv), device, cmp_device, &found);

	if (found) {
		o->cq[i].major = major;
		o->cq[i].minor = minor;
		return 0;
	}
	nv = insert_at((void **)&o->cq, &o->cap_cq, o->nr_cq, sizeof(*nv), i);
	if (!nv)
		return -ENOMEM;
	o->nr_cq++;
	snprintf(nv->device, sizeof(nv->device), "%s", device);
	nv->major = major;
	nv->minor = minor;
	return 1;
}

void ip_originals_drop_cq(struct ip_originals *o, const char *device)
{
	size_t k = 0;

	for (size_t i = 0; i < o->nr_cq; i++)
		if (strcmp(o->cq[i].device, device) != 0)
			o->cq[k++] = o->cq[i];
	o->nr_cq = k;
}

/* ---- apply ---- */

struct actx {
	struct ip_root *r;
	struct ip_history *h; /* the policy's: managed, read-backs; NULL on restore */
	struct ip_originals *o;
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

int ip_apply_results_move(struct ip_apply_results *to, struct ip_apply_results *from)
{
	struct ip_apply_result *nv;

	if (!from->n)
		return 0;
	nv = realloc(to->r, (size_t)(to->n + from->n) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	memcpy(nv + to->n, from->r, (size_t)from->n * sizeof(*nv));
	to->r = nv;
	to->n += from->n;
	ip_apply_results_free(from);
	return 0;
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
	return res;
}


/* Write-ahead: the original just added to the history reaches the disk
 * before the write it guards. */
static int record(struct actx *a)
{
	return a->ops->record ? a->ops->record(a->ops->record_ctx, a->o) : 0;
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
	res->detail = IP_APPLY_D_ELSEWHERE;
	res->pending = mv->ioapic;
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

/* A vector the kernel manages is never written: known from an earlier
 * refusal, or from smp_affinity's mode. True when it is one. */
static bool refuse_managed(struct actx *a, struct ip_move *mv, struct ip_apply_result *res)
{
	const struct ip_irq_hist *e = ip_history_find(a->h, mv->irq);

	if (e && e->managed != IP_MANAGED_NO) {
		res->outcome = IP_APPLY_SKIPPED;
		res->detail = IP_APPLY_D_KNOWN_MANAGED;
		mv->failed = true;
		return true;
	}
	if (read_only_mode(a, mv->irq)) {
		res->outcome = IP_APPLY_MANAGED;
		res->detail = IP_APPLY_D_MODE_0444;
		mv->failed = true;
		mark_managed(a, mv->irq, IP_MANAGED_MODE);
		return true;
	}
	return false;
}

/*
 * What restore would write back for @mv, in @buf: the file's text when it
 * is a CPU list, else the affinity sampled this cycle. A read caught
 * mid-rewrite (empty) or a garbled file is no original: the state file's
 * reader refuses such a record ("not a CPU list"), so after a crash the
 * vector would stay where it was moved. -EBADMSG when neither is a list.
 */
static int original_text(struct actx *a, const struct ip_move *mv, const char *path, char *buf,
			 size_t size)
{
	_cleanup_free_ char *orig = NULL;
	ip_cpuset s;

	if (ip_root_read_line(a->r, path, &orig) == 0 && cpuset_parse_list(&s, orig) == 0 &&
	    !cpuset_empty(&s) && strlen(orig) < size) {
		memcpy(buf, orig, strlen(orig) + 1);
		return 0;
	}
	if (cpuset_empty(&mv->from_affinity))
		return -EBADMSG;
	cpuset_format_list(&mv->from_affinity, buf, size);
	return 0;
}

/* The original, read before the first write, is what restore puts back;
 * it is on disk before that write. *added: this call added it. */
static int keep_original(struct actx *a, struct ip_move *mv, struct ip_apply_result *res,
			 const char *path, bool *added)
{
	char buf[IP_CPULIST_MAX];
	int err;

	if (ip_originals_irq(a->o, mv->irq))
		return 0;
	err = original_text(a, mv, path, buf, sizeof(buf));
	if (err < 0)
		goto unrecorded;
	if (ip_originals_add_irq_id(a->o, mv->irq, buf, &mv->ident) < 0) {
		a->err = -ENOMEM;
		return -ENOMEM;
	}
	*added = true;
	err = record(a);
	if (err < 0) {
		ip_originals_drop_irq(a->o, mv->irq);
		goto unrecorded;
	}
	return 0;
unrecorded:
	res->err = err;
	res->outcome = IP_APPLY_FAILED;
	res->detail = IP_APPLY_D_UNRECORDED;
	mv->failed = true;
	return err;
}

/* No vector space on that CPU: the next CPU of the domain, until one
 * takes it or the domain is used up. *try is what was last written. */
static int write_with_fallback(struct actx *a, const struct ip_move *mv, ip_cpuset *try)
{
	int next = -1, err;

	for (;;) {
		err = write_irq_list(a, mv->irq, try);
		if (ip_apply_classify(IP_APPLY_IRQ, err) != IP_APPLY_NO_SPACE)
			break;
		next = cpuset_next(&mv->fallback, next + 1);
		if (next < 0)
			break;
		cpuset_zero(try);
		cpuset_set(try, next);
	}
	return err;
}

/* What a failed write means for the IRQ's state. */
static void write_failed(struct actx *a, struct ip_move *mv, const struct ip_apply_result *res)
{
	if (res->outcome == IP_APPLY_MANAGED) {
		mark_managed(a, mv->irq, res->err == -EPERM ? IP_MANAGED_EPERM : IP_MANAGED_EIO);
	} else if (res->outcome == IP_APPLY_VANISHED) {
		ip_history_forget(a->h, mv->irq);
		ip_originals_drop_irq(a->o, mv->irq);
	}
	mv->failed = true;
}

static void apply_move(struct actx *a, struct ip_move *mv)
{
	struct ip_apply_result *res = add_result(a, IP_APPLY_IRQ);
	_cleanup_free_ char *path = ip_asprintf("proc/irq/%u/smp_affinity_list", mv->irq);
	ip_cpuset try = mv->to;
	bool added = false;
	int err;

	if (!res || !path) {
		a->err = -ENOMEM;
		return;
	}
	res->irq = mv->irq;
	res->planned = res->written = mv->to;
	if (refuse_managed(a, mv, res))
		return;
	if (a->dry_run) {
		res->outcome = IP_APPLY_DRY_RUN;
		return;
	}
	if (keep_original(a, mv, res, path, &added) < 0)
		return;
	err = write_with_fallback(a, mv, &try);
	res->err = err;
	res->written = try;
	res->outcome = ip_apply_classify(IP_APPLY_IRQ, err);
	/* nothing changed: there is no original to keep */
	if (added && res->outcome != IP_APPLY_OK)
		ip_originals_drop_irq(a->o, mv->irq);
	if (res->outcome != IP_APPLY_OK) {
		write_failed(a, mv, res);
		return;
	}
	mv->to = try;
	read_back(a, mv, res);
}

/*
 * A thread is pid + comm + start time: read from proc/PID/stat (comm is
 * between the first '(' and the last ')', start time is field 22).
 * -ESRCH when there is no such process.
 */
static int thread_identity(struct ip_root *r, pid_t pid, char *comm, size_t size, uint64_t *start)
{
	_cleanup_free_ char *text = NULL;
	char path[48];
	struct ip_pid_stat ps;
	size_t len;
	int ret;

	snprintf(path, sizeof(path), "proc/%d/stat", (int)pid);
	ret = ip_root_read_attr(r, path, &text, &len);
	if (ret == -ENOENT)
		return -ESRCH;
	if (ret < 0)
		return ret;
	if (ip_parse_pid_stat(text, len, &ps, NULL) < 0 || ps.pid != pid)
		return -EINVAL;
	snprintf(comm, size, "%s", ps.comm);
	*start = ps.starttime;
	return 0;
}

/* Drops the threads with nothing left to restore. */
static void prune_threads(struct ip_originals *o)
{
	size_t k = 0;

	for (size_t i = 0; i < o->nr_threads; i++)
		if (o->threads[i].have_affinity || o->threads[i].have_sched)
			o->threads[k++] = o->threads[i];
	o->nr_threads = k;
}

/* The original of this very thread; a record for an earlier process with
 * the same pid is stale (that thread exited) and is replaced. */
static struct ip_thread_orig *thread_orig(struct actx *a, pid_t pid, unsigned irq, const char *comm,
					  uint64_t start)
{
	struct ip_originals *o = a->o;
	struct ip_thread_orig *nv;

	for (size_t i = 0; i < o->nr_threads; i++) {
		nv = &o->threads[i];
		if (nv->pid != pid)
			continue;
		if (nv->start == start && strcmp(nv->comm, comm) == 0)
			return nv;
		nv->have_affinity = nv->have_sched = false;
	}
	prune_threads(o);
	nv = ip_originals_thread(o, pid, irq, comm, start);
	if (!nv)
		a->err = -ENOMEM;
	return nv;
}

bool ip_thread_sched_ok(int policy, int priority)
{
	switch (policy) {
	case SCHED_FIFO:
	case SCHED_RR:
		return priority >= 1 && priority <= 99;
	case SCHED_OTHER:
	case SCHED_BATCH:
	case SCHED_IDLE:
		return priority == 0;
	}
	return false; /* SCHED_DEADLINE is not set through sched_setscheduler() */
}

/* Whether restore could put the thread's present setting back: a CPU list
 * sampled, a policy sched_setscheduler() sets. Another one, recorded, is a
 * line the state file's reader refuses. */
static bool thread_restorable(const struct ip_thread_action *ta, bool sched)
{
	return sched ? ip_thread_sched_ok(ta->from_policy, ta->from_priority) : !cpuset_empty(&ta->from);
}

/* Records the original (write-ahead) and makes the change; the original
 * is kept only when the change was made. */
static void thread_change(struct actx *a, struct ip_thread_action *ta, struct ip_apply_result *res,
			  const char *comm, uint64_t start, bool sched)
{
	struct ip_thread_orig *o = thread_orig(a, ta->pid, ta->irq, comm, start);
	bool *have;
	bool added = false;

	if (!o)
		return;
	have = sched ? &o->have_sched : &o->have_affinity;
	if (!*have && !thread_restorable(ta, sched)) {
		res->err = -EBADMSG;
		res->outcome = IP_APPLY_FAILED;
		res->detail = IP_APPLY_D_UNRECORDED;
		prune_threads(a->o);
		return;
	}
	if (!*have) {
		*have = added = true;
		if (sched) {
			o->policy = ta->from_policy;
			o->priority = ta->from_priority;
		} else {
			o->allowed = ta->from;
		}
		res->err = record(a);
		if (res->err < 0) {
			*have = false;
			res->outcome = IP_APPLY_FAILED;
			res->detail = IP_APPLY_D_UNRECORDED;
			return;
		}
	}
	res->err = sched ? a->ops->set_scheduler(a->ops->ctx, ta->pid, ta->policy, ta->priority)
			 : a->ops->set_affinity(a->ops->ctx, ta->pid, &ta->to);
	res->outcome = ip_apply_classify(sched ? IP_APPLY_THREAD_SCHED : IP_APPLY_THREAD_AFFINITY,
					 res->err);
	if (res->outcome != IP_APPLY_OK && added)
		*have = false;
}

/* A result for one of @ta's two changes, or NULL (out of memory). */
static struct ip_apply_result *thread_result(struct actx *a, const struct ip_thread_action *ta,
					     enum ip_apply_what what)
{
	struct ip_apply_result *res = add_result(a, what);

	if (!res)
		return NULL;
	res->irq = ta->irq;
	res->pid = ta->pid;
	snprintf(res->comm, sizeof(res->comm), "%s", ta->comm);
	res->written = ta->to;
	res->policy = ta->policy;
	res->value = ta->priority;
	if (a->dry_run)
		res->outcome = IP_APPLY_DRY_RUN;
	return res;
}

/* The change, once who the thread is was read (@id < 0: it could not be). */
static void thread_apply_one(struct actx *a, struct ip_thread_action *ta, struct ip_apply_result *res,
			     int id, const char *comm, uint64_t start)
{
	if (id < 0) {
		res->err = id;
		res->outcome = ip_apply_classify(res->what, id);
	} else {
		thread_change(a, ta, res, comm, start, res->what == IP_APPLY_THREAD_SCHED);
	}
	if (res->outcome != IP_APPLY_OK)
		ta->failed = true;
}

static void apply_thread(struct actx *a, struct ip_thread_action *ta)
{
	struct ip_apply_result *res;
	char comm[64] = "";
	uint64_t start = 0;
	int id = 0;

	/* who the thread is, read before the first change */
	if (!a->dry_run && (ta->set_affinity || ta->set_sched))
		id = thread_identity(a->r, ta->pid, comm, sizeof(comm), &start);
	if (ta->set_affinity) {
		if (!(res = thread_result(a, ta, IP_APPLY_THREAD_AFFINITY)))
			return;
		if (!a->dry_run)
			thread_apply_one(a, ta, res, id, comm, start);
	}
	if (ta->set_sched) {
		if (!(res = thread_result(a, ta, IP_APPLY_THREAD_SCHED)))
			return;
		if (a->dry_run)
			return;
		thread_apply_one(a, ta, res, id, comm, start);
	}
	prune_threads(a->o);
}

static void apply_rq(struct actx *a, struct ip_rq_action *ra)
{
	struct ip_apply_result *res = add_result(a, IP_APPLY_RQ);
	_cleanup_free_ char *path = ip_asprintf("sys/block/%s/queue/rq_affinity", ra->device);
	long long cur = ra->from;
	bool added = false;
	char val[16];

	if (!res || !path) {
		a->err = -ENOMEM;
		return;
	}
	snprintf(res->device, sizeof(res->device), "%s", ra->device);
	res->value = ra->value;
	snprintf(val, sizeof(val), "%d", ra->value);
	if (a->dry_run) {
		res->outcome = IP_APPLY_DRY_RUN;
		return;
	}
	if (!ip_originals_rq(a->o, ra->device)) {
		if (ip_root_read_long(a->r, path, &cur) < 0 || cur < 0 || cur > 2)
			cur = ra->from;
		/* no value 0-2 read or sampled: restore would have nothing to
		 * put back, so nothing is written (-EBADMSG, as for an IRQ) */
		res->err = cur >= 0 && cur <= 2 ? ip_originals_add_rq(a->o, ra->device, (int)cur) : -EBADMSG;
		if (res->err == -ENOMEM) {
			a->err = -ENOMEM;
			return;
		}
		added = res->err >= 0;
		if (added)
			res->err = record(a);
		if (res->err < 0) {
			if (added)
				drop_rq(a->o, ra->device);
			res->outcome = IP_APPLY_FAILED;
			res->detail = IP_APPLY_D_UNRECORDED;
			ra->failed = true;
			return;
		}
	}
	res->err = a->ops->write(a->ops->ctx, a->r, path, val);
	res->outcome = ip_apply_classify(IP_APPLY_RQ, res->err);
	/* nothing changed: the original we added goes */
	if (added && res->outcome != IP_APPLY_OK)
		drop_rq(a->o, ra->device);
	if (res->outcome != IP_APPLY_OK)
		ra->failed = true;
}

static void apply_cq(struct actx *a, struct ip_cq_action *ca)
{
	struct ip_apply_result *res = add_result(a, IP_APPLY_CQ);
	bool added = false;

	if (!res)
		return;
	snprintf(res->device, sizeof(res->device), "%s", ca->device);
	res->major = ca->major;
	res->minor = ca->minor;
	res->value = ca->attach;
	if (a->dry_run) {
		res->outcome = IP_APPLY_DRY_RUN;
		return;
	}
	/* An attach is recorded before it is made, so --restore detaches a
	 * device attached just before a kill -9. */
	if (ca->attach && !ip_originals_cq(a->o, ca->device)) {
		if (ip_originals_add_cq(a->o, ca->device, ca->major, ca->minor) < 0) {
			a->err = -ENOMEM;
			return;
		}
		added = true;
		res->err = record(a);
		if (res->err < 0) {
			ip_originals_drop_cq(a->o, ca->device);
			res->outcome = IP_APPLY_FAILED;
			res->detail = IP_APPLY_D_UNRECORDED;
			ca->failed = true;
			return;
		}
	}
	res->err = a->ops->cq ? a->ops->cq(a->ops->ctx, ca->major, ca->minor, ca->attach)
			      : -ENOTSUP;
	res->outcome = ip_apply_classify(IP_APPLY_CQ, res->err);
	if (added && res->outcome != IP_APPLY_OK)
		ip_originals_drop_cq(a->o, ca->device);
	/* detached: nothing left to undo (the state file follows at the end
	 * of the cycle, as a detach needs no write-ahead) */
	if (!ca->attach && res->outcome == IP_APPLY_OK)
		ip_originals_drop_cq(a->o, ca->device);
	/* A refused attach is planned again every cycle: the daemon says it once. */
	if (res->outcome != IP_APPLY_OK)
		ca->failed = true;
}

int ip_apply(struct ip_plan *p, struct ip_root *r, struct ip_history *h, struct ip_originals *o,
	     const struct ip_apply_ops *ops, bool dry_run, struct ip_apply_results *out)
{
	struct actx a = {
		.r = r,
		.h = h,
		.o = o,
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

/* @res says @irq's vector was freed: @now NULL when its line and
 * proc/irq/N are gone, else what its number's line shows now. */
static void set_freed(struct ip_apply_result *res, unsigned irq, const struct ip_irq_ident *was,
		      const struct ip_irq_ident *now)
{
	bool restore = res->restore;

	*res = (struct ip_apply_result){ .what = IP_APPLY_IRQ, .irq = irq, .restore = restore,
					 .outcome = IP_APPLY_VANISHED, .err = -ENOENT,
					 .detail = IP_APPLY_D_FREED, .reused = now != NULL };
	if (now) {
		res->was = *was;
		res->now = *now;
	}
}

static int add_freed(struct ip_apply_results *out, unsigned irq, const struct ip_irq_ident *was,
		     const struct ip_irq_ident *now)
{
	struct ip_apply_result *nv = realloc(out->r, (out->n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	out->r = nv;
	nv += out->n++;
	nv->restore = false;
	set_freed(nv, irq, was, now);
	return 0;
}

/*
 * free_desc() (kernel/irq/irqdesc.c) removes a freed vector's /proc/irq/N
 * and its line; its number goes to the next vector allocated, often at
 * once (a driver reloaded, a device reset). The original of the old vector
 * kept past that was written onto the new one at restore, a vector never
 * moved, whatever its driver or the admin had set. So it goes as a write
 * that found the IRQ gone does (write_failed()). Both must be missing: a
 * line left out of a cut /proc/interrupts alone is no freed vector. When
 * the number was given out again before a sample saw it gone, the line is
 * there but shows another vector: the recorded identity tells it.
 */
int ip_apply_drop_freed(struct ip_root *r, const struct ip_snapshot *s, struct ip_history *h,
			struct ip_originals *o, struct ip_apply_results *out)
{
	size_t i = 0;

	while (i < o->nr_irqs) {
		unsigned irq = o->irqs[i].irq;
		const struct ip_irq *q = ip_snapshot_irq(s, irq);
		struct ip_irq_ident now;
		char dir[32];
		int ret;

		snprintf(dir, sizeof(dir), "proc/irq/%u", irq);
		if (q)
			ip_irq_ident_of(q, &now);
		if (q ? !ip_irq_ident_reused(&o->irqs[i].id, &now) : ip_root_exists(r, dir)) {
			i++;
			continue;
		}
		ret = add_freed(out, irq, &o->irqs[i].id, q ? &now : NULL);
		if (ret < 0)
			return ret;
		ip_history_forget(h, irq);
		ip_originals_drop_irq(o, irq); /* the next one moves to i */
	}
	return 0;
}

/* ---- restore ---- */

struct now_ctx {
	const struct ip_originals *o;
	struct ip_irq_ident *now; /* by index into o->irqs */
	bool *seen;		  /* by index: a line showed it already */
};

/* An IRQ shown on two lines, as no kernel shows one, had one made up
 * inside another's name (a GPIO consumer label can hold "\n 37: ..."; see
 * sample.c drop_listed_twice()): which is the kernel's is not known, and
 * a made-up name would have dropped the original as freed. */
static int now_line(void *ctx, const struct ip_irq_line *l)
{
	struct now_ctx *c = ctx;
	bool found;
	size_t i = orig_irq_pos(c->o, l->irq, &found);

	if (!found)
		return 0;
	if (!c->seen[i])
		ip_irq_ident_set(&c->now[i], l->chip, l->hwirq, l->actions);
	else
		memset(&c->now[i], 0, sizeof(c->now[i]));
	c->seen[i] = true;
	return 0;
}

/*
 * What the recorded IRQs' lines show, read afresh: a restore comes at
 * exit, or from --restore after a crash, long after the last sample, and
 * a number may have been given to another vector meanwhile. By index into
 * a->o->irqs; a line not shown (or a file that cannot be read) is not
 * known, and its original is written as it was before identities were
 * kept. NULL when no record has an identity (an older state file) or on
 * ENOMEM (a->err).
 */
static struct ip_irq_ident *lines_now(struct actx *a)
{
	_cleanup_free_ struct ip_irq_header *hdr = NULL;
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ bool *seen = NULL;
	struct now_ctx c = { a->o, NULL, NULL };
	struct ip_diag d = { "" };
	bool any = false;
	size_t len;

	for (size_t i = 0; i < a->o->nr_irqs && !any; i++)
		any = a->o->irqs[i].id.have_hw || a->o->irqs[i].id.have_actions;
	if (!any)
		return NULL;
	c.now = calloc(a->o->nr_irqs, sizeof(*c.now));
	c.seen = seen = calloc(a->o->nr_irqs, sizeof(*seen));
	hdr = malloc(sizeof(*hdr));
	if (!c.now || !seen || !hdr) {
		free(c.now);
		a->err = -ENOMEM;
		return NULL;
	}
	/* a line that does not parse ends the reading; those before it stand */
	if (ip_root_read(a->r, "proc/interrupts", &text, &len) == 0)
		ip_parse_interrupts(text, len, hdr, now_line, &c, &d);
	return c.now;
}

/*
 * A restore that found its file missing (ENOENT, or no proc/PID for a
 * thread) drops the record as gone, unless @dir, which holds every such
 * file, is missing too: /proc or /sys not mounted (a chroot, a rescue
 * shell) or a --root naming the wrong tree say nothing of the IRQ, thread
 * or device, and there every original was dropped and the state file
 * deleted. Then it is a failure, and the record is kept.
 */
static void vanished_unless_unseen(struct actx *a, struct ip_apply_result *res, const char *dir)
{
	if (res->outcome == IP_APPLY_VANISHED && !ip_root_exists(a->r, dir)) {
		res->outcome = IP_APPLY_FAILED;
		res->detail = IP_APPLY_D_NONE;
		res->err = -ENOENT;
	}
}

/*
 * Whether none of @want's CPUs is online now (false when that is not
 * known). The kernel takes such an IRQ affinity without an error
 * (write_irq_affinity(), kernel/irq/proc.c: irq_select_affinity_usr()
 * picks the default one) and refuses a thread's (EINVAL): either way the
 * original is not what the object gets, so it is not written and its
 * record stays for a --restore once one of them is online.
 */
static bool none_online(struct actx *a, const ip_cpuset *want, struct ip_apply_result *res)
{
	_cleanup_free_ char *line = NULL;
	ip_cpuset online;

	if (ip_root_read_line(a->r, "sys/devices/system/cpu/online", &line) < 0 ||
	    cpuset_parse_list(&online, line) < 0 || cpuset_empty(&online) || cpuset_intersects(want, &online))
		return false;
	res->outcome = IP_APPLY_RETRY;
	res->detail = IP_APPLY_D_OFFLINE;
	res->err = -EINVAL;
	return true;
}

static void restore_irqs(struct actx *a)
{
	struct ip_originals *o = a->o;
	_cleanup_free_ struct ip_irq_ident *now = lines_now(a);
	size_t k = 0;

	for (size_t i = 0; i < o->nr_irqs; i++) {
		struct ip_irq_orig *e = &o->irqs[i];
		struct ip_apply_result *res = NULL;
		_cleanup_free_ char *path = NULL;

		if (a->err) {
			o->irqs[k++] = *e; /* not tried: kept */
			continue;
		}
		res = add_result(a, IP_APPLY_IRQ);
		path = ip_asprintf("proc/irq/%u/smp_affinity_list", e->irq);
		if (!res || !path) {
			a->err = -ENOMEM;
			o->irqs[k++] = *e;
			continue;
		}
		res->restore = true;
		if (now && ip_irq_ident_reused(&e->id, &now[i])) {
			/* not this vector's to have: dropped, as by a sample */
			set_freed(res, e->irq, &e->id, &now[i]);
			free(e->list);
			continue;
		}
		res->irq = e->irq;
		cpuset_parse_list(&res->written, e->list);
		res->planned = res->written;
		if (!none_online(a, &res->written, res)) {
			res->err = a->ops->write(a->ops->ctx, a->r, path, e->list);
			res->outcome = ip_apply_classify(IP_APPLY_IRQ, res->err);
			vanished_unless_unseen(a, res, "proc/irq");
		}
		if (res->outcome != IP_APPLY_OK && res->outcome != IP_APPLY_VANISHED)
			o->irqs[k++] = *e;
		else
			free(e->list);
	}
	o->nr_irqs = k;
}

/* The thread recorded, or a result saying why it is skipped. */
static bool same_thread(struct actx *a, const struct ip_thread_orig *o)
{
	struct ip_apply_result *res;
	char comm[64];
	uint64_t start;
	int ret = thread_identity(a->r, o->pid, comm, sizeof(comm), &start);

	if (ret == 0 && o->start == start && strcmp(o->comm, comm) == 0)
		return true;
	res = add_result(a, o->have_affinity ? IP_APPLY_THREAD_AFFINITY : IP_APPLY_THREAD_SCHED);
	if (!res)
		return false;
	res->restore = true;
	res->irq = o->irq;
	res->pid = o->pid;
	snprintf(res->comm, sizeof(res->comm), "%s", o->comm);
	res->err = ret < 0 ? ret : -ESRCH;
	res->outcome = ip_apply_classify(res->what, res->err);
	/* no proc/PID where there is no proc/irq either: /proc is not there */
	if (ret == -ESRCH)
		vanished_unless_unseen(a, res, "proc/irq");
	if (ret == -ESRCH && res->outcome == IP_APPLY_VANISHED) {
		res->detail = IP_APPLY_D_THREAD_GONE;
	} else if (ret < 0) {
		res->detail = IP_APPLY_D_IDENTITY;
	} else {
		res->detail = IP_APPLY_D_PID_REUSED;
		res->start = o->start;
		snprintf(res->now_comm, sizeof(res->now_comm), "%s", comm);
		res->now_start = start;
	}
	return false;
}

static void restore_threads(struct actx *a)
{
	struct ip_originals *orig = a->o;

	for (size_t i = 0; i < orig->nr_threads && !a->err; i++) {
		struct ip_thread_orig *o = &orig->threads[i];
		struct ip_apply_result *res;

		if (!same_thread(a, o)) {
			/* gone, or another process: its record describes nothing */
			if (a->out->n && a->out->r[a->out->n - 1].outcome == IP_APPLY_VANISHED)
				o->have_affinity = o->have_sched = false;
			continue;
		}
		if (o->have_affinity) {
			res = add_result(a, IP_APPLY_THREAD_AFFINITY);
			if (!res)
				return;
			res->restore = true;
			res->irq = o->irq;
			res->pid = o->pid;
			snprintf(res->comm, sizeof(res->comm), "%s", o->comm);
			res->written = o->allowed;
			if (!none_online(a, &o->allowed, res)) {
				res->err = a->ops->set_affinity(a->ops->ctx, o->pid, &o->allowed);
				res->outcome = ip_apply_classify(IP_APPLY_THREAD_AFFINITY, res->err);
			}
			if (res->outcome == IP_APPLY_OK || res->outcome == IP_APPLY_VANISHED)
				o->have_affinity = false;
		}
		if (o->have_sched) {
			res = add_result(a, IP_APPLY_THREAD_SCHED);
			if (!res)
				return;
			res->restore = true;
			res->irq = o->irq;
			res->pid = o->pid;
			snprintf(res->comm, sizeof(res->comm), "%s", o->comm);
			res->policy = o->policy;
			res->value = o->priority;
			res->err = a->ops->set_scheduler(
				a->ops->ctx, o->pid, o->policy,
				o->policy == SCHED_FIFO || o->policy == SCHED_RR ? o->priority : 0);
			res->outcome = ip_apply_classify(IP_APPLY_THREAD_SCHED, res->err);
			if (res->outcome == IP_APPLY_OK || res->outcome == IP_APPLY_VANISHED)
				o->have_sched = false;
		}
	}
	prune_threads(orig);
}

static void restore_cq(struct actx *a)
{
	struct ip_originals *o = a->o;
	size_t k = 0;

	for (size_t i = 0; i < o->nr_cq; i++) {
		struct ip_cq_orig *e = &o->cq[i];
		struct ip_apply_result *res = a->err ? NULL : add_result(a, IP_APPLY_CQ);

		if (!res) {
			o->cq[k++] = *e; /* not tried: kept */
			continue;
		}
		res->restore = true;
		snprintf(res->device, sizeof(res->device), "%s", e->device);
		res->major = e->major;
		res->minor = e->minor;
		res->err = a->ops->cq ? a->ops->cq(a->ops->ctx, e->major, e->minor, false) : -ENOTSUP;
		res->outcome = ip_apply_classify(IP_APPLY_CQ, res->err);
		/* ENOENT is the module's "disk is not attached": it detached an
		 * owned disk when the socket that attached it closed (a daemon
		 * killed with -9), or the disk was removed. Either way there is
		 * nothing left to put back. */
		if (res->outcome != IP_APPLY_OK && res->outcome != IP_APPLY_VANISHED)
			o->cq[k++] = *e;
	}
	o->nr_cq = k;
}

static void restore_rq(struct actx *a)
{
	struct ip_originals *h = a->o;
	size_t k = 0;

	for (size_t i = 0; i < h->nr_rq; i++) {
		struct ip_apply_result *res = a->err ? NULL : add_result(a, IP_APPLY_RQ);
		_cleanup_free_ char *path =
			ip_asprintf("sys/block/%s/queue/rq_affinity", h->rq[i].device);
		char val[16];

		if (!res || !path) {
			a->err = -ENOMEM;
			h->rq[k++] = h->rq[i]; /* not tried: kept */
			continue;
		}
		res->restore = true;
		snprintf(res->device, sizeof(res->device), "%s", h->rq[i].device);
		snprintf(val, sizeof(val), "%d", h->rq[i].value);
		res->value = h->rq[i].value;
		res->err = a->ops->write(a->ops->ctx, a->r, path, val);
		res->outcome = ip_apply_classify(IP_APPLY_RQ, res->err);
		vanished_unless_unseen(a, res, "sys/block");
		if (res->outcome != IP_APPLY_OK && res->outcome != IP_APPLY_VANISHED)
			h->rq[k++] = h->rq[i];
	}
	h->nr_rq = k;
}

int ip_apply_restore(struct ip_root *r, struct ip_originals *o, const struct ip_apply_ops *ops,
		     struct ip_apply_results *out)
{
	struct actx a = {.r = r, .o = o, .ops = ops, .out = out, .modes_known = -1};

	memset(out, 0, sizeof(*out));
	restore_irqs(&a);
	restore_threads(&a);
	restore_cq(&a);
	restore_rq(&a);
	if (a.err) {
		ip_apply_results_free(out);
		return a.err;
	}
	return 0;
}

int ip_apply_restore_irq(struct ip_root *r, struct ip_originals *o, const struct ip_apply_ops *ops,
			 unsigned irq, struct ip_apply_results *out)
{
	bool found;
	size_t i = orig_irq_pos(o, irq, &found);
	/* restore_irqs() over a view of this one record: the same write,
	 * classification and dropping of the record as at exit */
	struct ip_irq_orig copy = found ? o->irqs[i] : (struct ip_irq_orig){ 0 };
	struct ip_originals one = { .irqs = &copy, .nr_irqs = found ? 1 : 0 };
	struct actx a = {.r = r, .o = &one, .ops = ops, .out = out, .modes_known = -1};

	memset(out, 0, sizeof(*out));
	restore_irqs(&a);
	if (found && one.nr_irqs == 0) {
		/* restored or gone: restore_irqs() freed the list it shared */
		o->irqs[i].list = NULL;
		ip_originals_drop_irq(o, irq);
	}
	if (a.err) {
		ip_apply_results_free(out);
		return a.err;
	}
	return 0;
}
