// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/engine.h"
#include "irqpilot/macro.h"

struct ip_engine {
	struct ip_root *root;
	const struct ip_policy_config *cfg;
	struct ip_engine_opts opts;
	struct ip_apply_ops ops;
	struct ip_sampler *sampler;
	struct ip_history hist;	 /* the policy's memory */
	struct ip_originals orig; /* apply's, for restore and the state file */
	struct ip_snapshot snap[2];
	int cur;          /* index of the newest snapshot in snap[] */
	int nr_snaps;     /* 0, 1 or 2 valid */
	struct ip_step step;
	bool have_step;
	int next_index;
	/* stall events since the last step, one per queue */
	struct ip_cq_stall {
		unsigned major, minor;
		int hwq;
		uint64_t at_ns, wait_ns;
	} *stalls;
	size_t nr_stalls;
	uint64_t pin_sig; /* of the pinned IRQ numbers the sampler tracks */
};

/*
 * A line named by an [irq NAME] rule or pinned with irqctl pin is tracked
 * like a storage vector: without its sampled affinity the policy could not
 * tell that it already sits where it should, and would write it every
 * cycle.
 */
static bool engine_tracks(void *ctx, unsigned irq, const char *actions)
{
	const struct ip_engine *e = ctx;
	const struct ip_irq_hist *h = ip_history_find(&e->hist, irq);

	return (h && h->have_pin) || ip_policy_irq_named(e->cfg, irq, actions);
}

static uint64_t pins_sig(const struct ip_history *h)
{
	uint64_t sig = UINT64_C(14695981039346656037);

	for (size_t i = 0; i < h->nr; i++)
		if (h->irqs[i].have_pin)
			sig = (sig ^ h->irqs[i].irq) * UINT64_C(1099511628211);
	return sig;
}

/*
 * A fixture or replay tree has files but no threads: its PIDs are not this
 * machine's, so thread affinity and priority must never reach the kernel.
 * What they change is written into the tree instead, in the kernel's own
 * format, so that the next sample sees the thread where it was put, as it
 * would on a live machine; files are written into the tree as usual.
 */
static int tree_write(void *ctx, struct ip_root *r, const char *path, const char *data)
{
	return ip_root_write(r, path, data);
}

/* fs/proc/array.c task_cpus_allowed(): "%*pb" of the task's cpus_mask,
 * nr_cpu_ids bits, 32 to a comma-separated group. The tree's own line
 * gives the width; @digits hex digits are written at @out. */
static void format_mask(const ip_cpuset *cpus, size_t digits, char *out)
{
	for (size_t i = digits; i-- > 0;) {
		unsigned nib = 0;

		for (int b = 0; b < 4; b++)
			if (cpuset_valid_cpu((int)(4 * i) + b) && cpuset_test(cpus, (int)(4 * i) + b))
				nib |= 1u << b;
		*out++ = "0123456789abcdef"[nib];
		if (i && i % 8 == 0)
			*out++ = ',';
	}
	*out = '\0';
}

/* Line KEY's value in @text ("KEY:\tVALUE\n"), ending at *@end; NULL if absent. */
static const char *value_of(const char *text, const char *key, const char **end)
{
	size_t klen = strlen(key);

	for (const char *p = text, *e; *p; p = e + (*e == '\n')) {
		e = strchrnul(p, '\n');
		if (strncmp(p, key, klen) == 0 && p[klen] == ':' && p[klen + 1] == '\t') {
			*end = e;
			return p + klen + 2;
		}
	}
	return NULL;
}

/* Line KEY's value in *@text replaced by @val: 1, or 0 if there is no such line. */
static int replace_value(char **text, const char *key, const char *val)
{
	const char *e, *v = value_of(*text, key, &e);
	char *n;

	if (!v)
		return 0;
	n = ip_asprintf("%.*s%s%s", (int)(v - *text), *text, val, e);
	if (!n)
		return -ENOMEM;
	free(*text);
	*text = n;
	return 1;
}

static int tree_set_affinity(void *ctx, pid_t pid, const ip_cpuset *cpus)
{
	struct ip_root *r = ctx;
	_cleanup_free_ char *path = ip_asprintf("proc/%d/status", (int)pid);
	_cleanup_free_ char *text = NULL, *mask = NULL;
	char list[IP_CPULIST_MAX];
	const char *m, *me;
	int ret, shown;

	if (!path)
		return -ENOMEM;
	ret = ip_root_read(r, path, &text, NULL);
	if (ret == -ENOENT)
		return -ESRCH; /* as sched_setaffinity() says of a thread gone */
	if (ret < 0)
		return ret;
	m = value_of(text, "Cpus_allowed", &me);
	if (m) {
		size_t digits = 0;

		for (const char *c = m; c < me; c++)
			digits += *c != ',';
		mask = malloc(digits + digits / 8 + 1);
		if (!mask)
			return -ENOMEM;
		format_mask(cpus, digits, mask);
	}
	cpuset_format_list(cpus, list, sizeof(list));
	ret = mask ? replace_value(&text, "Cpus_allowed", mask) : 0;
	if (ret < 0)
		return ret;
	shown = ret;
	ret = replace_value(&text, "Cpus_allowed_list", list);
	if (ret < 0)
		return ret;
	if (!shown && !ret)
		return 0; /* a tree without the lines: nothing shows the mask */
	return ip_root_write(r, path, text);
}

/* fs/proc/array.c do_task_stat(): field 18 is task_prio() (-1 - rt_priority
 * under an RT policy, 20 + nice otherwise), 40 rt_priority, 41 policy. */
static int tree_set_scheduler(void *ctx, pid_t pid, int policy, int priority)
{
	struct ip_root *r = ctx;
	_cleanup_free_ char *path = ip_asprintf("proc/%d/stat", (int)pid);
	_cleanup_free_ char *text = NULL, *out = NULL;
	const char *p;
	char *o;
	long nice = 0;
	int field = 3, ret;

	if (!path)
		return -ENOMEM;
	ret = ip_root_read(r, path, &text, NULL);
	if (ret == -ENOENT)
		return -ESRCH;
	if (ret < 0)
		return ret;
	p = strrchr(text, ')');
	if (!p || p[1] != ' ')
		return -EINVAL; /* not a stat line: left as the tree has it */
	p += 2;
	out = malloc(strlen(text) + 3 * 24 + 1);
	if (!out)
		return -ENOMEM;
	o = mempcpy(out, text, (size_t)(p - text));
	/* every field but the three copied as it is, however many follow */
	for (; *p && *p != '\n'; field++) {
		size_t n = strcspn(p, " \n");

		if (field == 18 || field == 40 || field == 41) {
			const char *q = p + n;

			/* nice (19) follows priority (18): read it ahead */
			if (field == 18 && *q == ' ')
				nice = strtol(q + 1, NULL, 10);
			o += sprintf(o, "%ld", field == 41 ? (long)policy
					     : field == 40 ? (long)priority
					     : policy == SCHED_FIFO || policy == SCHED_RR ? -1L - priority
					     : 20 + nice);
		} else {
			o = mempcpy(o, p, n);
		}
		p += n;
		if (*p == ' ')
			*o++ = *p++;
	}
	if (field <= 41)
		return -EINVAL; /* too short for a policy: left as it is */
	strcpy(o, "\n");
	return ip_root_write(r, path, out);
}

static int tree_cq(void *ctx, unsigned major, unsigned minor, bool attach)
{
	return 0;
}

static void tree_ops(struct ip_root *r, struct ip_apply_ops *ops)
{
	ops->write = tree_write;
	ops->set_affinity = tree_set_affinity;
	ops->set_scheduler = tree_set_scheduler;
	ops->cq = tree_cq;
	ops->ctx = r;
	ops->record = NULL;
	ops->record_ctx = NULL;
}

void ip_engine_ops_for_root(struct ip_root *r, struct ip_apply_ops *ops)
{
	if (ip_root_is_live(r))
		ip_apply_ops_default(ops);
	else
		tree_ops(r, ops);
}

int ip_engine_new(struct ip_root *r, const struct ip_policy_config *cfg, const struct ip_engine_opts *o,
		  struct ip_engine **out)
{
	struct ip_engine *e = calloc(1, sizeof(*e));
	struct ip_sampler_opts so = { 0 };
	int ret;

	if (!e)
		return -ENOMEM;
	e->root = r;
	e->cfg = cfg;
	if (o)
		e->opts = *o;
	if (e->opts.ops)
		e->ops = *e->opts.ops;
	else
		ip_engine_ops_for_root(r, &e->ops);
	so.live_counters = e->opts.live_counters;
	so.overrides = e->opts.overrides;
	so.track = engine_tracks;
	so.track_ctx = e;
	ret = ip_sampler_new(r, &so, &e->sampler);
	if (ret < 0) {
		free(e);
		return ret;
	}
	ip_history_init(&e->hist);
	e->pin_sig = pins_sig(&e->hist);
	ip_originals_init(&e->orig);
	*out = e;
	return 0;
}

/* ip_snapshot_free() (sample.c) predates the completion threads. */
static void snapshot_free(struct ip_snapshot *s)
{
	ip_snapshot_free_cq(s);
	ip_snapshot_free(s);
}

static void step_clear(struct ip_engine *e)
{
	if (!e->have_step)
		return;
	ip_model_free(&e->step.model);
	ip_plan_free(&e->step.plan);
	ip_apply_results_free(&e->step.results);
	memset(&e->step, 0, sizeof(e->step));
	e->have_step = false;
}

void ip_engine_free(struct ip_engine *e)
{
	if (!e)
		return;
	step_clear(e);
	for (int i = 0; i < 2; i++)
		snapshot_free(&e->snap[i]);
	ip_history_free(&e->hist);
	ip_originals_free(&e->orig);
	ip_sampler_free(e->sampler);
	free(e->stalls);
	free(e);
}

void ip_engine_set_root(struct ip_engine *e, struct ip_root *r)
{
	e->root = r;
	ip_sampler_set_root(e->sampler, r);
}

void ip_engine_set_config(struct ip_engine *e, const struct ip_policy_config *cfg)
{
	e->cfg = cfg;
	/* its [irq NAME] rules may name other lines */
	ip_sampler_retrack(e->sampler);
}

void ip_engine_set_record(struct ip_engine *e, int (*fn)(void *ctx, const struct ip_originals *o),
			  void *ctx)
{
	e->ops.record = fn;
	e->ops.record_ctx = ctx;
}

void ip_engine_set_live(struct ip_engine *e, struct ip_apply_live *live)
{
	if (!e->opts.ops && ip_root_is_live(e->root))
		e->ops.ctx = live;
}

void ip_engine_set_dry_run(struct ip_engine *e, bool dry_run)
{
	e->opts.dry_run = dry_run;
}

bool ip_engine_dry_run(const struct ip_engine *e)
{
	return e->opts.dry_run;
}

void ip_engine_invalidate(struct ip_engine *e)
{
	ip_sampler_invalidate(e->sampler);
}

struct ip_history *ip_engine_history(struct ip_engine *e)
{
	return &e->hist;
}

struct ip_originals *ip_engine_originals(struct ip_engine *e)
{
	return &e->orig;
}

struct ip_sampler *ip_engine_sampler(struct ip_engine *e)
{
	return e->sampler;
}

const struct ip_apply_ops *ip_engine_ops(const struct ip_engine *e)
{
	return &e->ops;
}

struct ip_root *ip_engine_root(struct ip_engine *e)
{
	return e->root;
}

const struct ip_step *ip_engine_last(const struct ip_engine *e)
{
	return e->have_step ? &e->step : NULL;
}

/*
 * Simulated moves, part one: where the recording still shows a vector
 * where it was before we (virtually) moved it, show it where we put it,
 * with its threads following as the kernel makes them follow.
 */
static void simulate_placement(struct ip_snapshot *s, const struct ip_history *h, ip_cpuset *moved_to,
			       bool *moved)
{
	for (int i = 0; i < s->nr_irqs; i++) {
		struct ip_irq *q = &s->irqs[i];
		const struct ip_irq_hist *e = ip_history_find(h, q->irq);
		ip_cpuset eff;

		moved[i] = false;
		/* a vector no longer tracked has no placement to show */
		if (!q->info || !e || !e->placed || e->managed != IP_MANAGED_NO || cpuset_empty(&e->placement))
			continue;
		if (cpuset_equal(&q->info->affinity, &e->placement))
			continue; /* the recording already shows it there */
		cpuset_zero(&eff);
		cpuset_set(&eff, cpuset_first(&e->placement));
		q->info->affinity = e->placement;
		q->info->effective = eff;
		q->info->have_effective = true;
		moved_to[i] = eff;
		moved[i] = true;
		for (int t = 0; t < s->nr_threads; t++)
			if (s->threads[t].irq == q->irq)
				s->threads[t].allowed = eff;
	}
}

/* Part two: its interrupts, and the completions they carry, fire there. */
static void simulate_rates(struct ip_model *m, const ip_cpuset *moved_to, const bool *moved)
{
	const struct ip_snapshot *s = m->cur;
	int n = s->topo.nr_cpus;

	for (int i = 0; i < s->nr_irqs; i++) {
		const struct ip_irq *q = &s->irqs[i];
		int to = cpuset_first(&moved_to[i]);
		double sum = 0;

		if (!moved[i] || !q->tracked || to < 0 || to >= n)
			continue;
		for (int k = 0; k < m->irq[i].nr; k++)
			sum += m->irq[i].percpu[k];
		/* all of it on @to now: a span of one CPU (none if it did not fire) */
		if (m->irq[i].nr) {
			m->irq[i].first = to;
			m->irq[i].nr = 1;
			m->irq[i].percpu[0] = (float)sum;
		}
		for (int k = 0; k < q->info->nr_devs; k++) {
			int dev = q->info->devs[k];
			struct ip_dev_rate *r = &m->dev[dev];
			double c_sum = 0;

			if (s->storage.devs[dev].nr_vectors != 1)
				continue; /* only a single vector carries them all */
			for (int c = 0; c < n; c++) {
				c_sum += r->complete[c];
				r->complete[c] = 0;
			}
			r->complete[to] = c_sum;
		}
	}
}

/* The sampler trusts what it read of a vector, and of a sleeping IRQ
 * thread, until it changes; our own writes it learns of here. */
static void forget_written(struct ip_engine *e, const struct ip_apply_results *res)
{
	for (int i = 0; i < res->n; i++) {
		const struct ip_apply_result *r = &res->r[i];

		if (r->outcome == IP_APPLY_DRY_RUN || r->outcome == IP_APPLY_SKIPPED)
			continue;
		if (r->what == IP_APPLY_IRQ)
			ip_sampler_forget_irq(e->sampler, r->irq);
		else if (r->what == IP_APPLY_THREAD_AFFINITY || r->what == IP_APPLY_THREAD_SCHED)
			ip_sampler_forget_thread(e->sampler, r->pid);
	}
}

/* What restore put back (or found gone) is no longer where the policy put
 * it: the next decision starts from what is, not from our placement. The
 * policy's memory is the policy's; the engine, which runs both, tells it. */
static void forget_placed(struct ip_engine *e, const struct ip_apply_results *res)
{
	for (int i = 0; i < res->n; i++) {
		const struct ip_apply_result *r = &res->r[i];

		if (r->outcome != IP_APPLY_OK && r->outcome != IP_APPLY_VANISHED)
			continue;
		/* found, so the _get()s allocate nothing */
		if (r->what == IP_APPLY_IRQ && ip_history_find(&e->hist, r->irq))
			ip_history_get(&e->hist, r->irq)->placed = false;
		if (r->what == IP_APPLY_CQ && ip_history_cqdev_find(&e->hist, r->device))
			ip_history_cqdev_get(&e->hist, r->device)->attached_by_us = false;
	}
}

int ip_engine_stall(struct ip_engine *e, unsigned major, unsigned minor, int hwq, uint64_t at_ns,
		    uint64_t wait_ns)
{
	struct ip_cq_stall *nv;

	for (size_t i = 0; i < e->nr_stalls; i++)
		if (e->stalls[i].major == major && e->stalls[i].minor == minor &&
		    e->stalls[i].hwq == hwq) {
			e->stalls[i].at_ns = at_ns;
			e->stalls[i].wait_ns = wait_ns;
			return 0;
		}
	nv = realloc(e->stalls, (e->nr_stalls + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	e->stalls = nv;
	nv[e->nr_stalls++] = (struct ip_cq_stall){ major, minor, hwq, at_ns, wait_ns };
	return 0;
}

/* The stalls reported since the last step go into @s, for the policy. A
 * stall of a queue whose thread is gone has nothing left to act on. */
static void take_stalls(struct ip_engine *e, struct ip_snapshot *s)
{
	for (size_t k = 0; k < e->nr_stalls; k++)
		for (int i = 0; i < s->nr_cq; i++)
			if (s->cq[i].major == e->stalls[k].major && s->cq[i].minor == e->stalls[k].minor &&
			    (int)s->cq[i].hwq == e->stalls[k].hwq) {
				s->cq[i].stalled_ns = e->stalls[k].at_ns ? e->stalls[k].at_ns : 1;
				s->cq[i].stall_wait_ns = e->stalls[k].wait_ns;
			}
	e->nr_stalls = 0;
}

/* The step's plan carried out, its results after those already in
 * st->results (the originals dropped before the policy). */
static int act(struct ip_engine *e, struct ip_step *st)
{
	struct ip_apply_results applied;
	int ret;

	if (e->opts.simulate) {
		/* nothing is written; the history takes the plan as done */
		ret = ip_apply(&st->plan, e->root, &e->hist, &e->orig, &e->ops, true, &st->results);
		return ret < 0 ? ret : ip_history_commit(&e->hist, &st->plan, st->now_ns);
	}
	ret = ip_apply(&st->plan, e->root, &e->hist, &e->orig, &e->ops, e->opts.dry_run, &applied);
	if (ret < 0)
		return ret;
	forget_written(e, &applied);
	ret = ip_apply_results_move(&st->results, &applied);
	ip_apply_results_free(&applied);
	if (ret >= 0 && !e->opts.dry_run)
		ret = ip_history_commit(&e->hist, &st->plan, st->now_ns);
	return ret;
}

int ip_engine_step(struct ip_engine *e, struct ip_step **out, struct ip_diag *d)
{
	int next = e->nr_snaps ? 1 - e->cur : 0;
	struct ip_snapshot *cur = &e->snap[next];
	const struct ip_snapshot *prev = e->nr_snaps ? &e->snap[e->cur] : NULL;
	_cleanup_free_ ip_cpuset *moved_to = NULL;
	_cleanup_free_ bool *moved = NULL;
	struct ip_step *st = &e->step;
	int ret;

	step_clear(e);
	snapshot_free(cur);
	/* irqctl pin and unpin change the history between steps */
	if (pins_sig(&e->hist) != e->pin_sig) {
		e->pin_sig = pins_sig(&e->hist);
		ip_sampler_retrack(e->sampler);
	}
	ret = ip_sampler_sample(e->sampler, cur, d);
	if (ret < 0)
		return ret;
	take_stalls(e, cur);
	if (e->opts.simulate && cur->nr_irqs) {
		moved_to = calloc(cur->nr_irqs, sizeof(*moved_to));
		moved = calloc(cur->nr_irqs, sizeof(*moved));
		if (!moved_to || !moved) {
			snapshot_free(cur);
			return -ENOMEM;
		}
		simulate_placement(cur, &e->hist, moved_to, moved);
	}
	ret = ip_model_derive(prev, cur, &st->model, d);
	if (ret < 0) {
		snapshot_free(cur);
		return ret;
	}
	/* The sample is good: it becomes the newest. */
	e->cur = next;
	if (e->nr_snaps < 2)
		e->nr_snaps++;
	e->have_step = true;
	st->index = e->next_index++;
	st->now_ns = cur->time_ns;
	if (moved)
		simulate_rates(&st->model, moved_to, moved);
	/* Before the policy: a number that names another vector now must
	 * lend it neither the old vector's history nor its original (apply
	 * would keep that one, not record the new vector's own). */
	if (!e->opts.simulate) {
		ret = ip_apply_drop_freed(e->root, cur, &e->hist, &e->orig, &st->results);
		if (ret < 0)
			return ip_diag_set(d, ret, "apply: %s", strerror(-ret));
	}
	if (!st->model.prev)
		return *out = st, 0; /* no rates yet (or across a hot-plug): nothing to decide on */

	ret = ip_policy_decide(&st->model, e->cfg, &e->hist, st->now_ns, &st->plan);
	if (ret < 0)
		return ip_diag_set(d, ret, "policy: %s", strerror(-ret));
	st->decided = true;
	ret = act(e, st);
	if (ret < 0)
		return ip_diag_set(d, ret, "apply: %s", strerror(-ret));
	*out = st;
	return 0;
}

int ip_engine_restore_irq(struct ip_engine *e, unsigned irq, struct ip_apply_results *res)
{
	int ret;

	if (e->opts.simulate) {
		memset(res, 0, sizeof(*res));
		return 0;
	}
	ret = ip_apply_restore_irq(e->root, &e->orig, &e->ops, irq, res);
	if (ret >= 0)
		forget_written(e, res);
	return ret;
}

int ip_engine_restore(struct ip_engine *e, struct ip_apply_results *res)
{
	int ret;

	/* Not skipped in a dry run: what an earlier run or the time before
	 * "dry-run on" changed is still changed. */
	if (e->opts.simulate) {
		memset(res, 0, sizeof(*res));
		return 0;
	}
	ret = ip_apply_restore(e->root, &e->orig, &e->ops, res);
	if (ret >= 0) {
		forget_written(e, res);
		forget_placed(e, res);
	}
	return ret;
}
