/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * decide: place each storage vector in the domain where the I/O it
 * completes is submitted. Pure: everything comes in through the model,
 * the configuration, the history and now_ns; the plan goes out.
 *
 * The measure everything is judged by is locality: the share of a
 * vector's I/O whose interrupt is handled in the domain that submitted
 * it, sum over domains of submit_share(d) * handled_share(d). A vector
 * moves only when that rises by move_threshold, which is what keeps a
 * steady workload from making the vectors wander.
 */

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/macro.h"
#include "irqpilot/policy.h"
#include "irqpilot/sorted.h"

#define NS_PER_S 1000000000.0
/* Pins go first when the move budget is shared out. */
#define GAIN_PIN 1e9
/* ... after moves off CPUs that became isolated or banned. */
#define GAIN_OFF 2e9
#define EPS 1e-9
/* A trial attach must reach this share of the I/O rate before it. */
#define IP_CQ_TRIAL_KEEP 0.95
/* A device whose trial failed is not attached again automatically for this long. */
#define IP_CQ_TRIAL_HOLD_S 600
/* Cycles a trial lasts at least (and dwell_s). */
#define IP_CQ_TRIAL_CYCLES 3
/*
 * The window's default, in cycles. A workload that alternates between two
 * domains every 2 cycles (2 s at interval 1) leaves the EWMA swinging by
 * (1 - b^2) / (1 + b^2) around the middle, b = 1 - 2 / (window + 1): with 8
 * that is 0.23 of locality at most, 0.32 with the jitter of real cycles,
 * below the 0.40 a second move within return_window needs (twice the
 * default threshold). A steady switch of domains is then followed after 4
 * cycles (gain 1 - 2 b^k >= 0.20), 5 within return_window (>= 0.40); a
 * workload that starts after a pause is followed at once, as the window
 * starts with it.
 */
#define IP_WINDOW_DEFAULT 8
/* idle_grace doubles at most this many times (30 s: 4 minutes) for a
 * vector whose returns to the efficiency domain were undone in a row. */
#define IP_IDLE_UNDONE_MAX 3

/* Copies a name (a device, an action list) into a fixed field, cut to
 * fit; returns the length copied. */
static size_t scopy(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return n;
}

/* @v in decimal, in @buf; returns where it starts. */
static const char *fmt_uint(char buf[12], unsigned v)
{
	char *p = buf + 11;

	*p = '\0';
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10));
	return p;
}

static void why_init(struct ip_why *w, enum ip_reason code)
{
	memset(w, 0, sizeof(*w));
	w->code = code;
	w->cpu = -1;
	w->node = -1;
}

/* ---- configuration ---------------------------------------------------- */

void ip_policy_config_init(struct ip_policy_config *c)
{
	memset(c, 0, sizeof(*c));
	c->granularity = IP_GRAN_CPU;
	c->move_threshold = 0.20;
	c->dwell_s = 10;
	c->max_moves = 4;
	c->min_rate = 200;
	c->idle_domain = IP_IDLE_EFFICIENCY;
	c->idle_grace_s = 30;
	c->return_window_s = 60;
	c->window = IP_WINDOW_DEFAULT;
	c->rt_priority = 50;
	c->completion_threads = IP_COMPLETION_AUTO;
	cpuset_zero(&c->banned);
}

static void rules_free(struct ip_rule *r, int n)
{
	for (int i = 0; i < n; i++)
		free(r[i].match);
	free(r);
}

void ip_policy_config_free(struct ip_policy_config *c)
{
	rules_free(c->dev_rules, c->nr_dev_rules);
	rules_free(c->irq_rules, c->nr_irq_rules);
	c->dev_rules = c->irq_rules = NULL;
	c->nr_dev_rules = c->nr_irq_rules = 0;
}

static struct ip_rule *rule_add(struct ip_rule **v, int *n, const char *match)
{
	struct ip_rule *nv, *r;
	char *m = strdup(match);

	if (!m)
		return NULL;
	nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv) {
		free(m);
		return NULL;
	}
	*v = nv;
	r = &nv[(*n)++];
	memset(r, 0, sizeof(*r));
	r->match = m;
	r->rt_priority = -1;
	r->rq_affinity = -1;
	r->completion_threads = IP_COMPLETION_INHERIT;
	return r;
}

struct ip_rule *ip_policy_add_dev_rule(struct ip_policy_config *c, const char *match)
{
	return rule_add(&c->dev_rules, &c->nr_dev_rules, match);
}

struct ip_rule *ip_policy_add_irq_rule(struct ip_policy_config *c, const char *match)
{
	return rule_add(&c->irq_rules, &c->nr_irq_rules, match);
}

/* ---- history ------------------------------------------------------------ */

void ip_history_init(struct ip_history *h)
{
	memset(h, 0, sizeof(*h));
}

void ip_history_free(struct ip_history *h)
{
	for (size_t i = 0; i < h->nr; i++)
		free(h->irqs[i].win);
	free(h->irqs);
	free(h->cq);
	free(h->cqdev);
	memset(h, 0, sizeof(*h));
}

/* Index of @irq, or where it would be inserted (with *found false). */
static size_t hist_pos(const struct ip_history *h, unsigned irq, bool *found)
{
	return IP_SORTED_POS(h->irqs, h->nr, irq, irq, found);
}

const struct ip_irq_hist *ip_history_find(const struct ip_history *h, unsigned irq)
{
	bool found;
	size_t i;

	if (!h)
		return NULL;
	i = hist_pos(h, irq, &found);
	return found ? &h->irqs[i] : NULL;
}

const struct ip_irq_hist *ip_history_find_next(const struct ip_history *h, unsigned irq,
					       size_t *cursor)
{
	bool found;
	size_t i;

	if (!h)
		return NULL;
	i = IP_SORTED_NEXT(h->irqs, h->nr, irq, irq, cursor, &found);
	return found ? &h->irqs[i] : NULL;
}

/* A new record for @irq at @i, where hist_pos() would put it. */
static struct ip_irq_hist *hist_insert(struct ip_history *h, size_t i, unsigned irq)
{
	if (h->nr == h->alloc) {
		size_t na = h->alloc ? h->alloc * 2 : 16;
		struct ip_irq_hist *nv = realloc(h->irqs, na * sizeof(*nv));

		if (!nv)
			return NULL;
		h->irqs = nv;
		h->alloc = na;
	}
	memmove(&h->irqs[i + 1], &h->irqs[i], (h->nr - i) * sizeof(*h->irqs));
	h->nr++;
	memset(&h->irqs[i], 0, sizeof(h->irqs[i]));
	h->irqs[i].irq = irq;
	return &h->irqs[i];
}

struct ip_irq_hist *ip_history_get(struct ip_history *h, unsigned irq)
{
	bool found;
	size_t i = hist_pos(h, irq, &found);

	return found ? &h->irqs[i] : hist_insert(h, i, irq);
}

/* ip_history_get() for IRQs in ascending order (ip_sorted_next()). */
static struct ip_irq_hist *hist_get_next(struct ip_history *h, unsigned irq, size_t *at)
{
	bool found;
	size_t i = IP_SORTED_NEXT(h->irqs, h->nr, irq, irq, at, &found);

	return found ? &h->irqs[i] : hist_insert(h, i, irq);
}

void ip_history_forget(struct ip_history *h, unsigned irq)
{
	bool found;
	size_t i = hist_pos(h, irq, &found);
	struct ip_irq_hist *e;

	if (!found)
		return;
	e = &h->irqs[i];
	free(e->win);
	if (e->have_pin) {
		ip_cpuset pin = e->pin;

		memset(e, 0, sizeof(*e));
		e->irq = irq;
		e->have_pin = true;
		e->pin = pin;
		return;
	}
	memmove(e, e + 1, (h->nr - i - 1) * sizeof(*h->irqs));
	h->nr--;
}

int ip_history_pin(struct ip_history *h, unsigned irq, const ip_cpuset *cpus)
{
	struct ip_irq_hist *e = ip_history_get(h, irq);

	if (!e)
		return -ENOMEM;
	e->have_pin = true;
	e->pin = *cpus;
	return 0;
}

void ip_history_unpin(struct ip_history *h, unsigned irq)
{
	bool found;
	size_t i = hist_pos(h, irq, &found);

	if (found)
		h->irqs[i].have_pin = false;
}

const struct ip_cq_hist *ip_history_cq_find(const struct ip_history *h, pid_t pid)
{
	for (size_t i = 0; h && i < h->nr_cq; i++)
		if (h->cq[i].pid == pid)
			return &h->cq[i];
	return NULL;
}

struct ip_cq_hist *ip_history_cq_get(struct ip_history *h, pid_t pid)
{
	struct ip_cq_hist *nv;

	for (size_t i = 0; i < h->nr_cq; i++)
		if (h->cq[i].pid == pid)
			return &h->cq[i];
	nv = realloc(h->cq, (h->nr_cq + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	h->cq = nv;
	memset(&nv[h->nr_cq], 0, sizeof(*nv));
	nv[h->nr_cq].pid = pid;
	return &nv[h->nr_cq++];
}

const struct ip_cqdev_hist *ip_history_cqdev_find(const struct ip_history *h, const char *device)
{
	for (size_t i = 0; h && i < h->nr_cqdev; i++)
		if (strcmp(h->cqdev[i].device, device) == 0)
			return &h->cqdev[i];
	return NULL;
}

struct ip_cqdev_hist *ip_history_cqdev_get(struct ip_history *h, const char *device)
{
	struct ip_cqdev_hist *nv;

	for (size_t i = 0; i < h->nr_cqdev; i++)
		if (strcmp(h->cqdev[i].device, device) == 0)
			return &h->cqdev[i];
	nv = realloc(h->cqdev, (h->nr_cqdev + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	h->cqdev = nv;
	memset(&nv[h->nr_cqdev], 0, sizeof(*nv));
	scopy(nv[h->nr_cqdev].device, sizeof(nv->device), device);
	return &nv[h->nr_cqdev++];
}

static int record_stall(struct ip_history *h, const char *device, uint64_t now)
{
	struct ip_cqdev_hist *e = ip_history_cqdev_get(h, device);

	if (!e)
		return -ENOMEM;
	e->last_stall_ns = now;
	return 0;
}

static int window_store(struct ip_irq_hist *e, const struct ip_vec_state *st)
{
	size_t len = 2 * (size_t)st->nd + (size_t)st->nc;

	if (e->win_nd != st->nd || e->win_nc != st->nc || !e->win) {
		double *nv = realloc(e->win, len * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		e->win = nv;
		e->win_nd = st->nd;
		e->win_nc = st->nc;
	}
	memcpy(e->win, st->win, len * sizeof(*e->win));
	e->win_n = st->n;
	e->win_hd = true;
	return 0;
}

/* A follow within return_window of an idle return undid it (the
 * return_window that decided it comes with the move). */
static void commit_idle_undone(struct ip_irq_hist *e, const struct ip_move *mv, uint64_t now)
{
	if (e->idle_return_ns && now >= e->idle_return_ns &&
	    (now - e->idle_return_ns) / NS_PER_S < mv->return_window_s)
		e->idle_undone = e->idle_undone < IP_IDLE_UNDONE_MAX ? e->idle_undone + 1 : IP_IDLE_UNDONE_MAX;
	else
		e->idle_undone = 0;
	e->idle_return_ns = 0;
}

static int commit_moves(struct ip_history *h, const struct ip_plan *p, uint64_t now)
{
	for (int i = 0; i < p->nr_moves; i++) {
		const struct ip_move *mv = &p->moves[i];
		struct ip_irq_hist *e;

		if (mv->failed)
			continue;
		e = ip_history_get(h, mv->irq);
		if (!e)
			return -ENOMEM;
		e->from = mv->from;
		e->last_move_ns = now;
		if (mv->follows) {
			/* the one before as it was made, this one as early as
			 * it was asked for (vector_asked()) */
			e->prev_follow_ns = e->follow_made_ns;
			e->last_follow_ns = e->asked_ns && e->asked_ns < now ? e->asked_ns : now;
			e->follow_made_ns = now;
			e->prev_dom_ns = e->last_dom_ns = 0;
			commit_idle_undone(e, mv, now);
		} else if (mv->why.code == IP_R_IDLE_RETURN) {
			e->prev_follow_ns = e->last_follow_ns = e->follow_made_ns = 0;
			e->prev_dom_ns = e->last_dom_ns = 0;
			e->idle_return_ns = now;
		} else if (mv->why.code == IP_R_DOMINANT_CPU) {
			e->prev_dom_ns = e->last_dom_ns;
			e->last_dom_ns = now;
		}
		e->placed = true;
		e->placement = mv->to;
	}
	return 0;
}

/* so that a managed vector is explained once, not every cycle */
static int commit_managed_explained(struct ip_history *h, const struct ip_plan *p)
{
	for (int i = 0; i < p->nr_kept; i++) {
		const struct ip_kept *k = &p->kept[i];
		struct ip_irq_hist *e;

		if (!k->managed || !k->explained)
			continue;
		e = ip_history_get(h, k->irq);
		if (!e)
			return -ENOMEM;
		e->managed_explained = true;
	}
	return 0;
}

/* A managed vector's IRQ thread moved after its submitters: a move of the
 * vector's for dwell and the alternation guard (thread_held()), once per
 * vector however many threads it has. */
static int commit_managed_thread(struct ip_history *h, const struct ip_thread_action *ta, uint64_t now)
{
	struct ip_irq_hist *e;

	if (ta->completion || !ta->set_affinity || ta->failed || ta->why.code != IP_R_MANAGED_THREAD)
		return 0;
	e = ip_history_get(h, ta->irq);
	if (!e)
		return -ENOMEM;
	if (e->follow_made_ns == now)
		return 0;
	e->last_move_ns = now;
	e->prev_follow_ns = e->follow_made_ns;
	e->last_follow_ns = e->follow_made_ns = now;
	return 0;
}

static int commit_threads(struct ip_history *h, const struct ip_plan *p, uint64_t now)
{
	for (int i = 0; i < p->nr_threads; i++) {
		const struct ip_thread_action *ta = &p->threads[i];
		struct ip_cq_hist *e;

		if (commit_managed_thread(h, ta, now) < 0)
			return -ENOMEM;

		/* a stall counts whether or not the move away from it worked */
		if (ta->completion && ta->why.code == IP_R_STALL &&
		    record_stall(h, ta->device, now) < 0)
			return -ENOMEM;
		if (!ta->completion || !ta->set_affinity || ta->failed)
			continue;
		e = ip_history_cq_get(h, ta->pid);
		if (!e)
			return -ENOMEM;
		e->last_move_ns = now;
		e->placement = ta->to;
	}
	for (int i = 0; i < p->nr_notes; i++)
		if (p->notes[i].why.code == IP_R_NOTE_STALL_NO_TARGET &&
		    record_stall(h, p->notes[i].device, now) < 0)
			return -ENOMEM;
	return 0;
}

static int commit_cq_stall_hold(struct ip_history *h, const struct ip_cq_action *a, uint64_t now)
{
	/* held back even if the detach failed: auto must not retry */
	struct ip_cqdev_hist *e = ip_history_cqdev_get(h, a->device);

	if (!e)
		return -ENOMEM;
	e->last_stall_ns = now;
	e->hold_until_ns = now + IP_CQ_STALL_HOLD_S * (uint64_t)NS_PER_S;
	why_init(&e->hold, IP_R_HOLD_STALL);
	e->hold.hwq = a->why.hwq;
	e->hold.limit_s = IP_CQ_STALL_WINDOW_S;
	e->hold.hold_s = IP_CQ_STALL_HOLD_S;
	return 0;
}

static int commit_cq_actions(struct ip_history *h, const struct ip_plan *p, uint64_t now)
{
	for (int i = 0; i < p->nr_cq; i++) {
		const struct ip_cq_action *a = &p->cq[i];
		struct ip_cqdev_hist *e;

		if (a->why.code == IP_R_CQ_STALLED && commit_cq_stall_hold(h, a, now) < 0)
			return -ENOMEM;
		if (a->failed)
			continue;
		e = ip_history_cqdev_get(h, a->device);
		if (!e)
			return -ENOMEM;
		e->major = a->major;
		e->minor = a->minor;
		e->attached_by_us = a->attach;
		if (a->attach) {
			e->attached_ns = now;
			e->trial = a->trial;
			e->trial_sum = 0;
			e->trial_n = 0;
		}
	}
	return 0;
}

/* A failed trial holds the module back and drops the reference it was
 * judged against; otherwise the observation feeds the trial or the reference. */
static void commit_cq_obs_one(struct ip_cqdev_hist *e, const struct ip_cq_obs *o, uint64_t now)
{
	if (o->verdict) {
		e->trial = false;
		if (o->verdict < 0) {
			e->hold_until_ns = now + (uint64_t)(IP_CQ_TRIAL_HOLD_S * NS_PER_S);
			why_init(&e->hold, IP_R_HOLD_TRIAL);
			e->hold.ios = e->trial_n ? e->trial_sum / e->trial_n : 0;
			e->hold.ios_before = e->ios_before;
			e->hold.hold_s = IP_CQ_TRIAL_HOLD_S;
			/* the next trial gets a reference of its own */
			e->ios_before = 0;
			e->before_n = 0;
		}
	} else if (o->attached && e->trial) {
		e->trial_sum += o->ios;
		e->trial_n++;
	} else if (!o->attached && o->ios > 0) {
		/* the reference the next trial is judged against */
		e->ios_before = e->ios_before > 0 ? (e->ios_before + o->ios) / 2 : o->ios;
		if (e->before_n < IP_CQ_TRIAL_CYCLES)
			e->before_n++;
	}
}

static int commit_cq_obs(struct ip_history *h, const struct ip_plan *p, uint64_t now)
{
	for (int i = 0; i < p->nr_cq_obs; i++) {
		const struct ip_cq_obs *o = &p->cq_obs[i];
		struct ip_cqdev_hist *e = ip_history_cqdev_get(h, o->device);

		if (!e)
			return -ENOMEM;
		commit_cq_obs_one(e, o, now);
	}
	return 0;
}

/* The states come in IRQ order (the candidates'), as the history is kept. */
static int commit_states(struct ip_history *h, const struct ip_plan *p, uint64_t now)
{
	size_t at = 0;

	for (int i = 0; i < p->nr_states; i++) {
		const struct ip_vec_state *st = &p->states[i];
		bool found;
		size_t j;

		if (st->idle || st->win) {
			struct ip_irq_hist *e = hist_get_next(h, st->irq, &at);

			if (!e)
				return -ENOMEM;
			if (st->idle && !e->idle_since_ns)
				e->idle_since_ns = now;
			if (st->win && window_store(e, st) < 0)
				return -ENOMEM;
			j = (size_t)(e - h->irqs);
		} else {
			j = IP_SORTED_NEXT(h->irqs, h->nr, irq, st->irq, &at, &found);
			if (!found)
				continue;
		}
		if (!st->idle)
			h->irqs[j].idle_since_ns = 0;
		h->irqs[j].want_since_ns = st->want_since_ns;
		h->irqs[j].rate_w = st->rate_w;
		h->irqs[j].have_rate_w = st->have_rate_w;
		h->irqs[j].asked_ns = st->asked_ns;
		h->irqs[j].asked_last_ns = st->asked_last_ns;
		h->irqs[j].dom_cpu = st->dom_cpu;
		h->irqs[j].dom_since_ns = st->dom_since_ns;
	}
	return 0;
}

/* A vector we moved is handled in its new domain from now on: the
 * handled half of its window starts there, not from the samples of a
 * placement that is gone (nor from the cycle that straddles the move,
 * which would make the new place look half as good as it is). */
static void restart_moved_windows(struct ip_history *h, const struct ip_plan *p)
{
	for (int i = 0; i < p->nr_moves; i++) {
		const struct ip_move *mv = &p->moves[i];
		bool found;
		size_t j = hist_pos(h, mv->irq, &found);
		struct ip_irq_hist *e = found ? &h->irqs[j] : NULL;

		if (!e || mv->failed)
			continue;
		e->win_hd = e->win && mv->domain >= 0 && mv->domain < e->win_nd;
		for (int d = 0; e->win_hd && d < e->win_nd; d++)
			e->win[e->win_nd + d] = d == mv->domain;
	}
}

int ip_history_commit(struct ip_history *h, const struct ip_plan *p, uint64_t now_ns)
{
	/* 0 means "never" in the history, so a clock at 0 counts as 1 ns. */
	uint64_t now = now_ns ? now_ns : 1;

	/* the order matters: the window restart below sees the states' windows */
	if (commit_moves(h, p, now) < 0 || commit_managed_explained(h, p) < 0 ||
	    commit_threads(h, p, now) < 0 || commit_cq_actions(h, p, now) < 0 ||
	    commit_cq_obs(h, p, now) < 0 || commit_states(h, p, now) < 0)
		return -ENOMEM;
	restart_moved_windows(h, p);
	return 0;
}

/* ---- plan --------------------------------------------------------------- */

void ip_plan_free(struct ip_plan *p)
{
	free(p->moves);
	free(p->threads);
	free(p->kept);
	free(p->rq);
	free(p->notes);
	for (int i = 0; i < p->nr_states; i++)
		free(p->states[i].win);
	free(p->states);
	free(p->cq);
	free(p->cq_obs);
	memset(p, 0, sizeof(*p));
}

struct grow {
	size_t moves, threads, kept, rq, notes, states, cq, cq_obs;
};

static void *grow(void *v, int *n, size_t *alloc, size_t size, int *err)
{
	if ((size_t)*n == *alloc) {
		size_t na = *alloc ? *alloc * 2 : 8;
		void *nv = realloc(v, na * size);

		if (!nv) {
			*err = -ENOMEM;
			return v;
		}
		v = nv;
		*alloc = na;
	}
	return v;
}

/* Room for @want more records at once, where they are known to come. */
static void *reserve(void *v, int n, size_t *alloc, size_t want, size_t size, int *err)
{
	void *nv;

	if ((size_t)n + want <= *alloc)
		return v;
	nv = realloc(v, ((size_t)n + want) * size);
	if (!nv) {
		*err = -ENOMEM;
		return v;
	}
	*alloc = (size_t)n + want;
	return nv;
}

/* ---- decide --------------------------------------------------------------- */

enum cand_kind {
	CAND_NONE = 0, /* nothing to do with the vector itself */
	CAND_KEEP,
	CAND_MOVE,
};

/* What the rules say about one IRQ line. */
struct resolved {
	bool named; /* an irq rule matched it */
	const struct ip_rule *ban;
	bool have_pin;
	ip_cpuset pin;
	const struct ip_rule *pin_rule; /* NULL: irqctl pin */
	int rt_priority;  /* -1 = policy default */
	const struct ip_rule *rt_rule;
};

struct cand {
	int idx; /* into cur->irqs */
	enum cand_kind kind;
	bool managed, explain, storage, banned, named, pinned;
	bool off;	  /* leaving an isolated/banned CPU: no dwell, no budget */
	double gain;
	double rate;	  /* interrupts/s */
	double judged;	  /* what min_rate judges: the lower of rate and its window's */
	int td;		  /* target domain, -1 */
	ip_cpuset target; /* set to choose from (single) or to write */
	ip_cpuset wide;	  /* target before the NUMA preference, if one narrowed it */
	bool single;	  /* choose one CPU of target */
	int fixed_cpu;	  /* housekeeping CPU already chosen, -1 */
	int busiest;	  /* busiest submitter, -1 */
	int dom_cpu;	  /* submitter that dominates the target domain, -1 */
	double dom_share; /* its share of the domain's submissions */
	ip_cpuset from;	  /* where its interrupts were handled */
	bool dwell_applies;
	bool follows; /* the move is after its submitters, into another domain */
	int state; /* index into the plan's states, -1 */
	struct ip_why why;
	/* The placement an IRQ thread of a managed vector should get. */
	bool thread_direct;
	ip_cpuset thread_target;
	bool thread_single;
	int thread_busiest;
	int thread_dom_cpu; /* as dom_cpu, of this sample: the thread moves only
			     * with its domain, which the threshold guards */
	struct ip_why thread_why;
	/* Final placement of the vector for its threads to follow. */
	bool moved;
	ip_cpuset placed;
};

/* A kernel-managed storage vector without an IRQ thread: kept, and
 * nothing else to decide (keep_threadless()). */
struct threadless {
	int idx; /* into cur->irqs */
	enum ip_managed_why mw;
	bool explain;
};

/* A snapshot's IRQ threads by IRQ, in their order within one IRQ. */
struct thr_key {
	unsigned irq;
	int i; /* index into s->threads */
};

struct ctx {
	const struct ip_model *m;
	const struct ip_snapshot *s;
	const struct ip_topology *t;
	const struct ip_policy_config *cfg;
	const struct ip_history *h;
	uint64_t now;
	struct ip_plan *p;
	struct grow g;
	int err;
	ip_cpuset eligible; /* online, not isolated, nohz_full or banned */
	double *load;	    /* nr_cpus: interrupts + BLOCK softirqs per second */
	double *vload;	    /* nr_cpus: tracked lines' interrupts per second */
	double *sub;	    /* nr_cpus scratch: submissions per second */
	double *sh;	    /* nr_domains scratch: submission shares */
	double *hd;	    /* nr_domains scratch: handled shares */
	double *csh;	    /* nr_cpus scratch: each CPU's share of the submissions */
	const struct ip_irq_hist **hist; /* nr_irqs: each line's history, or NULL */
	struct thr_key *thr;		 /* s->nr_threads: see thread_range() */
	struct threadless *keep;	 /* in line order */
	int nr_keep;
	/* the last kept record emit_threadless() wrote in full, or -1 */
	int tl_kept;
	const struct threadless *tl_of;
	bool have_rates;
};

/* Where a setting of @rule (NULL: the policy) came from, into @w. */
static void why_src(struct ip_why *w, const struct ip_rule *rule, enum ip_reason_src none)
{
	w->src = rule ? IP_FROM_RULE : none;
	if (rule)
		scopy(w->rule, sizeof(w->rule), rule->match);
}

static struct ip_note *add_note(struct ctx *c, const char *device, const struct ip_why *w)
{
	struct ip_note *n;

	c->p->notes =
		grow(c->p->notes, &c->p->nr_notes, &c->g.notes, sizeof(*c->p->notes), &c->err);
	if (c->err)
		return NULL;
	n = &c->p->notes[c->p->nr_notes++];
	memset(n, 0, sizeof(*n));
	scopy(n->device, sizeof(n->device), device ? device : "");
	n->why = *w;
	return n;
}

static const char *irq_name(const struct ip_irq *q)
{
	if (q->actions && *q->actions)
		return q->actions;
	return q->unnamed_action ? "(unnamed action)" : "(no action)";
}

/* A new kept record of @q, its why for the caller to write; NULL on ENOMEM. */
static struct ip_kept *new_kept(struct ctx *c, const struct ip_irq *q, bool managed, bool explained)
{
	struct ip_kept *k;

	c->p->kept = grow(c->p->kept, &c->p->nr_kept, &c->g.kept, sizeof(*c->p->kept), &c->err);
	if (c->err)
		return NULL;
	k = &c->p->kept[c->p->nr_kept++];
	memset(k, 0, offsetof(struct ip_kept, why));
	k->irq = q->irq;
	scopy(k->name, sizeof(k->name), irq_name(q));
	k->managed = managed;
	k->explained = explained;
	return k;
}

static void add_kept(struct ctx *c, const struct ip_irq *q, bool managed, bool explained,
		     const struct ip_why *why)
{
	struct ip_kept *k = new_kept(c, q, managed, explained);

	if (k)
		k->why = *why;
}

/* Returns the state's index, or -1 on ENOMEM. */
static int add_state(struct ctx *c, unsigned irq, bool idle)
{
	struct ip_vec_state *st;

	c->p->states =
		grow(c->p->states, &c->p->nr_states, &c->g.states, sizeof(*c->p->states), &c->err);
	if (c->err)
		return -1;
	st = &c->p->states[c->p->nr_states];
	memset(st, 0, sizeof(*st));
	st->irq = irq;
	st->idle = idle;
	return c->p->nr_states++;
}

static int cpu_domain(const struct ctx *c, int cpu)
{
	if (cpu < 0 || cpu >= c->t->nr_cpus)
		return -1;
	return c->t->cpus[cpu].domain < c->t->nr_domains ? c->t->cpus[cpu].domain : -1;
}

static void domain_eligible(const struct ctx *c, int d, ip_cpuset *out)
{
	cpuset_and(out, &c->t->domains[d].cpus, &c->eligible);
}

/* "sda", or "mmcblk0+sda" for a line several devices share; "" for a
 * line without a device (report says "IRQ N"). */
static void line_devices(const struct ctx *c, const struct ip_irq *q, char *buf, size_t size)
{
	const struct ip_irq_info *info = ip_irq_info(q);
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < info->nr_devs && i < (int)ARRAY_SIZE(info->devs); i++) {
		int d = info->devs[i];

		if (d < 0 || d >= c->s->storage.nr_devs)
			continue;
		if (len && len + 1 < size)
			buf[len++] = '+';
		len += scopy(buf + len, size - len, c->s->storage.devs[d].name);
	}
}

/* ---- rules ---- */

static bool irq_rule_matches(const struct ip_rule *r, unsigned irq, const char *actions)
{
	char num[12], buf[256];
	const char *p, *np = fmt_uint(num, irq); /* for globs such as "45" or "4*" */
	if (fnmatch(r->match, np, 0) == 0)
		return true;
	if (!actions)
		return false;
	/* Each action name on its own: "mmc0, sym53c8xx" matches "mmc*". */
	p = actions;
	while (*p) {
		size_t n = strcspn(p, ",");

		while (n && p[n - 1] == ' ')
			n--;
		if (n < sizeof(buf)) {
			memcpy(buf, p, n);
			buf[n] = '\0';
			if (fnmatch(r->match, buf, 0) == 0)
				return true;
		}
		p += strcspn(p, ",");
		while (*p == ',' || *p == ' ')
			p++;
	}
	return false;
}

bool ip_policy_irq_named(const struct ip_policy_config *cfg, unsigned irq, const char *actions)
{
	for (int k = 0; cfg && k < cfg->nr_irq_rules; k++)
		if (irq_rule_matches(&cfg->irq_rules[k], irq, actions))
			return true;
	return false;
}

/*
 * Later rules override earlier ones, field by field; IRQ rules override
 * device rules, and a runtime pin overrides both.
 */
static void resolve_rules(const struct ctx *c, const struct ip_irq *q, const struct ip_irq_hist *e,
			  struct resolved *r)
{
	const struct ip_policy_config *cfg = c->cfg;

	const struct ip_irq_info *info = ip_irq_info(q);

	memset(r, 0, sizeof(*r));
	r->rt_priority = -1;
	for (int i = 0; i < info->nr_devs && i < (int)ARRAY_SIZE(info->devs); i++) {
		int d = info->devs[i];

		if (d < 0 || d >= c->s->storage.nr_devs)
			continue;
		for (int k = 0; k < cfg->nr_dev_rules; k++) {
			const struct ip_rule *ru = &cfg->dev_rules[k];

			if (fnmatch(ru->match, c->s->storage.devs[d].name, 0) != 0)
				continue;
			if (ru->ban)
				r->ban = ru;
			if (ru->have_pin) {
				r->have_pin = true;
				r->pin = ru->pin;
				r->pin_rule = ru;
			}
			if (ru->rt_priority >= 0) {
				r->rt_priority = ru->rt_priority;
				r->rt_rule = ru;
			}
		}
	}
	for (int k = 0; k < cfg->nr_irq_rules; k++) {
		const struct ip_rule *ru = &cfg->irq_rules[k];

		if (!irq_rule_matches(ru, q->irq, q->actions))
			continue;
		r->named = true;
		if (ru->ban)
			r->ban = ru;
		if (ru->have_pin) {
			r->have_pin = true;
			r->pin = ru->pin;
			r->pin_rule = ru;
		}
		if (ru->rt_priority >= 0) {
			r->rt_priority = ru->rt_priority;
			r->rt_rule = ru;
		}
	}
	if (e && e->have_pin) {
		r->have_pin = true;
		r->pin = e->pin;
		r->pin_rule = NULL;
	}
}

/* ---- measures ---- */

/* By IRQ, then by place in the snapshot: a line's threads are emitted in
 * the order the snapshot lists them, as when every thread was walked. */
static int cmp_thr_key(const void *a, const void *b)
{
	const struct thr_key *x = a, *y = b;

	if (x->irq != y->irq)
		return x->irq < y->irq ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * The IRQ threads of @irq: *@n of them, from the returned key on. One
 * search where each line walked every thread, three times: tracked vectors
 * x threads a cycle, and threadirqs gives every vector a thread.
 */
static const struct thr_key *thread_range(const struct ctx *c, unsigned irq, int *n)
{
	bool found;
	size_t i = IP_SORTED_POS(c->thr, c->s->nr_threads, irq, irq, &found), j = i;

	while (j < (size_t)c->s->nr_threads && c->thr[j].irq == irq)
		j++;
	*n = (int)(j - i);
	return &c->thr[i];
}

/* The line's vector in device @d (struct ip_irq_info), else @v: a line
 * with more devices than info holds. */
static int line_vector(const struct ip_irq_info *info, int d, int v)
{
	for (int i = 0; i < info->nr_devs && i < (int)ARRAY_SIZE(info->devs); i++)
		if (info->devs[i] == d)
			return info->vecs[i];
	return v;
}

/*
 * Which hw queues vector @vi of device @d serves (storage.h): theirs, or
 * NULL if it serves all of them, or none. *@admin: whether it is the admin
 * vector.
 */
static const struct ip_vec_serves *vector_queue_cpus(const struct ctx *c, int d, int vi, bool *admin)
{
	const struct ip_blockdev *b = &c->s->storage.devs[d];
	const struct ip_vec_serves *v;

	*admin = false;
	if (vi < 0 || vi >= b->nr_vectors)
		return NULL;
	*admin = b->vectors[vi].admin;
	v = &b->vectors[vi].serves;
	/*
	 * A vector that serves every queue completes all of the device's I/O,
	 * also that of CPUs no cpu_list names: with isolcpus=3, 6.1 lists a
	 * single queue as "0, 1, 2", yet CPU 3's I/O goes through it.
	 */
	return v->nr > 0 && v->nr < b->nr_queues ? v : NULL;
}

/*
 * The CPU after @cpu whose submissions count for a vector: the next of its
 * queues' CPUs (@qv), else simply the next; -1 after the last. Walked, not
 * each CPU tested: a queue has 4 of 256 CPUs, spread over both SMT halves.
 * In CPU order either way, so that the sum is the same to the last bit.
 */
static int next_submitter(const struct ip_vec_serves *qv, int cpu)
{
	if (!qv)
		return cpu + 1;
	return cpu < qv->hi ? cpuset_next(&qv->cpus, cpu + 1) : -1;
}

/*
 * Submissions per second, per CPU (into @sub, nr_cpus, unless NULL), of
 * the I/O whose completions @q interrupts for: every device on the line,
 * restricted to the CPUs of the queues the vector serves. Returns false
 * when no device has counts. A kept managed vector wants the total alone:
 * clearing and filling @sub was a fifth of its cost, at 64 CPUs, for each
 * of 128 NVMe queues a cycle.
 */
static bool vector_submits(struct ctx *c, int qi, double *sub, double *total, bool *admin_only)
{
	const struct ip_irq *q = &c->s->irqs[qi];
	const struct ip_irq_info *info = ip_irq_info(q);
	bool have = false;
	int nr_admin = 0, nr = 0;

	*total = 0;
	if (sub)
		memset(sub, 0, c->t->nr_cpus * sizeof(*sub));
	for (int i = 0; i < info->nr_devs && i < (int)ARRAY_SIZE(info->devs); i++) {
		int d = info->devs[i];
		const struct ip_dev_rate *dr;
		const struct ip_vec_serves *qv;
		bool admin;

		if (d < 0 || d >= c->s->storage.nr_devs)
			continue;
		nr++;
		qv = vector_queue_cpus(c, d, info->vecs[i], &admin);
		if (admin) {
			nr_admin++;
			continue;
		}
		dr = c->m->dev ? &c->m->dev[d] : NULL;
		if (!dr || !dr->submit)
			continue;
		have = true;
		for (int cpu = qv ? qv->lo : 0; cpu >= 0 && cpu < c->t->nr_cpus;
		     cpu = next_submitter(qv, cpu)) {
			if (dr->submit[cpu] > 0) {
				if (sub)
					sub[cpu] += dr->submit[cpu];
				*total += dr->submit[cpu];
			}
		}
	}
	*admin_only = nr > 0 && nr_admin == nr;
	return have;
}

/* Shares of the handled interrupts per domain, from a set (even split). */
static void handled_from_set(struct ctx *c, const ip_cpuset *set, ip_cpuset *from)
{
	ip_cpuset on;
	int n;

	for (int d = 0; d < c->t->nr_domains; d++)
		c->hd[d] = 0;
	cpuset_and(&on, set, &c->t->online);
	if (cpuset_empty(&on))
		on = c->t->online;
	n = cpuset_count(&on);
	CPUSET_FOREACH(cpu, &on) {
		int d = cpu_domain(c, cpu);

		if (d >= 0)
			c->hd[d] += 1.0 / n;
	}
	if (from)
		*from = on;
}

static const ip_cpuset *irq_placement(const struct ip_irq *q)
{
	const struct ip_irq_info *info = ip_irq_info(q);

	return info->have_effective && !cpuset_empty(&info->effective) ? &info->effective : &info->affinity;
}

/* Where the vector's interrupts were handled: its per-CPU rates, or its
 * effective affinity when it had none. */
static void handled_by_vector(struct ctx *c, int qi, ip_cpuset *from)
{
	const struct ip_irq *q = &c->s->irqs[qi];
	const struct ip_irq_rate *ir = c->m->irq ? &c->m->irq[qi] : NULL;

	if (!ir || !ir->nr || ir->total <= 0) {
		handled_from_set(c, irq_placement(q), from);
		return;
	}
	for (int d = 0; d < c->t->nr_domains; d++)
		c->hd[d] = 0;
	cpuset_zero(from);
	for (int k = 0; k < ir->nr && ir->first + k < c->t->nr_cpus; k++) {
		int cpu = ir->first + k, d = cpu_domain(c, cpu);

		if (ir->percpu[k] <= 0)
			continue;
		cpuset_set(from, cpu);
		if (d >= 0)
			c->hd[d] += ir->percpu[k] / ir->total;
	}
}

static int dominant_domain(const struct ctx *c, const double *v)
{
	int best = -1;

	for (int d = 0; d < c->t->nr_domains; d++)
		if (best < 0 || v[d] > v[best] + EPS)
			best = d;
	return best;
}

static bool is_isolated(const struct ctx *c, int cpu)
{
	return cpuset_test(&c->t->isolated, cpu) || cpuset_test(&c->t->nohz_full, cpu) ||
	       (cpu < c->t->nr_cpus && (c->t->cpus[cpu].isolated || c->t->cpus[cpu].nohz_full));
}

/* @base[@cpu] without vector @qi's own interrupts, which leave with it. */
static double load_without(const struct ctx *c, const double *base, int cpu, int qi)
{
	double l = base[cpu];

	if (qi >= 0 && c->m->irq)
		l -= ip_irq_rate_on(&c->m->irq[qi], cpu);
	return l;
}

/* The CPU of @set with the least of @base, ties to the one nearest @near. */
static int least_of(const struct ctx *c, const double *base, const ip_cpuset *set, int near, int qi)
{
	int best = -1;
	double bl = 0;

	CPUSET_FOREACH(cpu, set) {
		double l = load_without(c, base, cpu, qi);

		if (best < 0 || l < bl - EPS ||
		    (fabs(l - bl) <= EPS && near >= 0 && abs(cpu - near) < abs(best - near))) {
			best = cpu;
			bl = l;
		}
	}
	return best;
}

static int least_loaded(const struct ctx *c, const ip_cpuset *set, int near, int qi)
{
	return least_of(c, c->load, set, near, qi);
}

/*
 * Whether the dominant submitter's CPU @cpu has room for vector @qi (rate
 * @rate): among @set it carries the fewest interrupts of other tracked
 * lines, or more than the fewest by less than the vector's own. One
 * single-threaded submitter to several disks then gets one of their
 * vectors, and the rest go to other CPUs as before, instead of all of them
 * piling onto the CPU it runs on. Only tracked lines count: the submitter's
 * CPU also carries its own timer, RCU and scheduler softirqs and the BLOCK
 * softirqs of its I/O, and a vector slowed by a little CPU (54/s in the
 * x86 little-big guest) has fewer interrupts than those, so counting them
 * refused the submitter's CPU to the very vector it waits for.
 */
static bool dominant_has_room(const struct ctx *c, const ip_cpuset *set, int cpu, int qi, double rate)
{
	int least = least_of(c, c->vload, set, -1, qi);
	double over;

	if (least < 0)
		return false;
	over = load_without(c, c->vload, cpu, qi) - load_without(c, c->vload, least, qi);
	return over <= EPS || over + EPS < rate;
}

/* One CPU of @set: least loaded, avoiding the busiest submitter's core. */
static int choose_cpu(const struct ctx *c, const ip_cpuset *set, int busiest, int qi)
{
	ip_cpuset a;

	if (busiest >= 0 && busiest < c->t->nr_cpus) {
		ip_cpuset smt = c->t->cpus[busiest].smt;

		cpuset_set(&smt, busiest);
		cpuset_andnot(&a, set, &smt);
		if (!cpuset_empty(&a))
			return least_loaded(c, &a, -1, qi);
		a = *set;
		cpuset_clear(&a, busiest);
		if (!cpuset_empty(&a))
			return least_loaded(c, &a, -1, qi);
	}
	return least_loaded(c, set, -1, qi);
}

/*
 * The nearest housekeeping CPU to an isolated submitter: same capacity and
 * LLC, then same package, then any CPU of the same class.
 */
static int housekeeping_cpu(const struct ctx *c, int b, int qi, ip_cpuset *tier,
			    enum ip_hk_tier *how)
{
	const struct ip_cpu *bc = &c->t->cpus[b];
	int bd = cpu_domain(c, b);

	for (int pass = 0; pass < 3; pass++) {
		cpuset_zero(tier);
		CPUSET_FOREACH(cpu, &c->eligible) {
			const struct ip_cpu *cc;
			int cd;

			if (cpu >= c->t->nr_cpus)
				break;
			cc = &c->t->cpus[cpu];
			cd = cpu_domain(c, cpu);
			if (pass == 0 && cc->capacity == bc->capacity && bc->llc >= 0 &&
			    cc->llc == bc->llc)
				cpuset_set(tier, cpu);
			else if (pass == 1 && cc->capacity == bc->capacity && bc->package >= 0 &&
				 cc->package == bc->package)
				cpuset_set(tier, cpu);
			else if (pass == 2 && cd >= 0 &&
				 (bd >= 0 ? c->t->domains[cd].cls == c->t->domains[bd].cls
					  : cc->capacity == bc->capacity))
				cpuset_set(tier, cpu);
		}
		if (!cpuset_empty(tier)) {
			*how = (enum ip_hk_tier)pass;
			return least_loaded(c, tier, b, qi);
		}
	}
	return -1;
}

static void span_domains(const struct ctx *c, const ip_cpuset *set, ip_cpuset *out)
{
	cpuset_zero(out);
	CPUSET_FOREACH(cpu, set) {
		int d = cpu_domain(c, cpu);

		if (d >= 0)
			cpuset_or(out, out, &c->t->domains[d].cpus);
	}
}

/* The reason about vector @qi, in slot @w of its candidate. */
static struct ip_why *why_about(struct ctx *c, int qi, const char *devs, struct ip_why *w,
				enum ip_reason code)
{
	why_init(w, code);
	w->irq = c->s->irqs[qi].irq;
	scopy(w->devices, sizeof(w->devices), devs);
	return w;
}

static struct ip_why *vector_why(struct ctx *c, int qi, const char *devs, struct cand *cd,
				 enum ip_reason code)
{
	return why_about(c, qi, devs, &cd->why, code);
}

/* The reason about the IRQ thread of (managed) vector @qi. */
static struct ip_why *thread_why(struct ctx *c, int qi, const char *devs, struct cand *cd,
				 enum ip_reason code)
{
	struct ip_why *w = why_about(c, qi, devs, &cd->thread_why, code);

	w->for_thread = true;
	return w;
}

/* c->csh: each CPU's share of this cycle's submissions (c->sub). */
static void cpu_shares(struct ctx *c)
{
	double total = 0;

	for (int cpu = 0; cpu < c->t->nr_cpus; cpu++)
		total += c->sub[cpu] > 0 ? c->sub[cpu] : 0;
	for (int cpu = 0; cpu < c->t->nr_cpus; cpu++)
		c->csh[cpu] = total > 0 && c->sub[cpu] > 0 ? c->sub[cpu] / total : 0;
}

/* The per-CPU half of the window, @w (nr_cpus values): c->csh averaged
 * with @old (NULL: this sample starts it) by @a, and back into c->csh. */
static void cpu_window(struct ctx *c, const double *old, double a, double *w)
{
	for (int cpu = 0; cpu < c->t->nr_cpus; cpu++) {
		w[cpu] = old ? a * c->csh[cpu] + (1 - a) * old[cpu] : c->csh[cpu];
		c->csh[cpu] = w[cpu];
	}
}

/*
 * The weight of this sample in a window. A sample weighs by the time it
 * covers, not one cycle each: a starved daemon's samples come irregularly
 * (0.3 s, then 1.7 s), and counting each as a cycle let a few short ones
 * inside one phase of an alternating load swing the average past a second
 * move's threshold. Weighed by time, the average follows the load as a
 * continuous EWMA of time constant (window + 1) / 2 cycles does, however
 * it is sampled.
 */
static double window_weight(const struct ctx *c)
{
	int win = c->cfg->window > 0 ? c->cfg->window : 1;
	double k = c->cfg->interval_s > 0 && c->m->interval_s > 0 ? c->m->interval_s / c->cfg->interval_s : 1;

	return 1 - pow(1 - 2.0 / (win + 1), k);
}

/*
 * The window: the shares of this cycle (c->sh, c->hd, c->csh) become their EWMA
 * over the vector's last cycles, which the rest of the decision judges by
 * and which the plan's state carries into the history. The first sample
 * (of the daemon, or after a cycle without submissions) starts it: there
 * is no earlier workload to weigh against. The handled half starts again
 * after a move of ours, as it describes a placement that is gone.
 */
static void window_apply(struct ctx *c, const struct ip_irq_hist *e, struct cand *cd)
{
	int nd = c->t->nr_domains, nc = c->t->nr_cpus, win = c->cfg->window > 0 ? c->cfg->window : 1;
	/* A pause of two cycles or more ends the window (one empty cycle can be
	 * a starved submitter, not a new workload). */
	bool paused = e && e->idle_since_ns && c->now >= e->idle_since_ns &&
		      (c->now - e->idle_since_ns) / NS_PER_S >= 1.5 * c->m->interval_s;
	bool have = e && e->win && e->win_n > 0 && e->win_nd == nd && !paused;
	double a = window_weight(c), *w;
	struct ip_vec_state *st;

	cpu_shares(c); /* without a window, this sample's */
	if (cd->state < 0 || nd <= 0)
		return;
	w = malloc((2 * (size_t)nd + (size_t)nc) * sizeof(*w));
	if (!w) {
		c->err = -ENOMEM;
		return;
	}
	for (int d = 0; d < nd; d++) {
		w[d] = have ? a * c->sh[d] + (1 - a) * e->win[d] : c->sh[d];
		w[nd + d] = have && e->win_hd ? a * c->hd[d] + (1 - a) * e->win[nd + d] : c->hd[d];
		c->sh[d] = w[d];
		c->hd[d] = w[nd + d];
	}
	cpu_window(c, have && e->win_nc == nc ? e->win + 2 * nd : NULL, a, w + 2 * nd);
	st = &c->p->states[cd->state];
	free(st->win);
	st->win = w;
	st->nd = nd;
	st->nc = nc;
	st->n = have && e->win_n < win ? e->win_n + 1 : have ? win : 1;
}

/*
 * Where the submitters of a vector (or of a managed vector's thread) send
 * it: the stages that vector_placement() and thread_placement() share.
 */
struct sub_place {
	int D;		   /* domain of most submissions */
	int TD;		   /* target domain: D, or that of the housekeeping CPU */
	int busiest;	   /* busiest submitter CPU, -1 */
	int hk;		   /* housekeeping CPU standing in for isolated submitters, -1 */
	enum ip_hk_tier how;
	bool all_iso;	   /* every submitter is isolated */
	bool substituted;  /* TD was chosen by housekeeping_cpu() */
	ip_cpuset elig;	   /* usable CPUs of TD */
	double now_loc;	   /* share of submissions in TD */
	int cur_dom;	   /* domain that handles most interrupts now, -1 */
};

/* c->sh: each domain's share of the submissions; returns their total. */
static double submitter_shares(struct ctx *c, bool *all_iso)
{
	const struct ip_topology *t = c->t;
	double total = 0;

	*all_iso = true;
	for (int d = 0; d < t->nr_domains; d++)
		c->sh[d] = 0;
	for (int cpu = 0; cpu < t->nr_cpus; cpu++) {
		int d = cpu_domain(c, cpu);

		if (c->sub[cpu] <= 0 || d < 0)
			continue;
		c->sh[d] += c->sub[cpu];
		total += c->sub[cpu];
		if (!is_isolated(c, cpu))
			*all_iso = false;
	}
	if (total > 0)
		for (int d = 0; d < t->nr_domains; d++)
			c->sh[d] /= total;
	return total;
}

/*
 * The target domain: that of most submissions, or, where its submitters are
 * all isolated or it has no usable CPU, that of the nearest housekeeping
 * CPU, which takes over the domain's share. False when there is none.
 */
static bool submitter_domain(struct ctx *c, int qi, struct sub_place *pl)
{
	const struct ip_topology *t = c->t;
	ip_cpuset tier;

	pl->busiest = -1;
	pl->hk = -1;
	pl->how = IP_HK_LLC;
	pl->substituted = false;
	pl->D = dominant_domain(c, c->sh);
	for (int cpu = 0; cpu < t->nr_cpus; cpu++)
		if (cpu_domain(c, cpu) == pl->D && (pl->busiest < 0 || c->sub[cpu] > c->sub[pl->busiest]))
			pl->busiest = cpu;
	if (pl->all_iso)
		for (int cpu = 0; cpu < t->nr_cpus; cpu++)
			if (pl->busiest < 0 || c->sub[cpu] > c->sub[pl->busiest])
				pl->busiest = cpu;
	domain_eligible(c, pl->D, &pl->elig);
	pl->TD = pl->D;
	if (!pl->all_iso && !cpuset_empty(&pl->elig))
		return true;
	pl->hk = housekeeping_cpu(c, pl->busiest, qi, &tier, &pl->how);
	if (pl->hk < 0)
		return false;
	pl->TD = cpu_domain(c, pl->hk);
	pl->substituted = true;
	if (pl->TD != pl->D) {
		c->sh[pl->TD] += c->sh[pl->D];
		c->sh[pl->D] = 0;
	}
	domain_eligible(c, pl->TD, &pl->elig);
	return true;
}

/* No CPU of the submitters' class is usable: which CPUs submitted (set),
 * and which of them are offline now (set2), for the reason to say which
 * it is; a CPU taken offline is not one an admin isolated or banned. */
static void no_housekeeping(struct ctx *c, struct ip_why *w)
{
	for (int cpu = 0; cpu < c->t->nr_cpus; cpu++) {
		if (c->sub[cpu] <= 0)
			continue;
		cpuset_set(&w->set, cpu);
		if (!cpuset_test(&c->t->online, cpu) || !c->t->cpus[cpu].online)
			cpuset_set(&w->set2, cpu);
	}
}

static void note_housekeeping(struct ctx *c, int qi, const char *devs, const struct sub_place *pl)
{
	const struct ip_topology *t = c->t;
	struct ip_why n;

	why_init(&n, pl->all_iso ? IP_R_NOTE_ALL_ISOLATED : IP_R_NOTE_DOMAIN_ISOLATED);
	scopy(n.devices, sizeof(n.devices), devs);
	n.irq = c->s->irqs[qi].irq;
	n.cpu = pl->hk;
	n.tier = pl->how;
	n.domain = t->domains[pl->D].cpus;
	n.cls = t->domains[pl->D].cls;
	add_note(c, NULL, &n);
}

/* The gain in locality of a move to TD, judged against the handled shares in c->hd. */
static void submitter_gain(struct ctx *c, struct cand *cd, struct sub_place *pl)
{
	double cur = 0;

	for (int d = 0; d < c->t->nr_domains; d++)
		cur += c->sh[d] * c->hd[d];
	pl->now_loc = c->sh[pl->TD];
	cd->gain = pl->now_loc - cur;
	cd->td = pl->TD;
	cd->busiest = pl->busiest;
	pl->cur_dom = dominant_domain(c, c->hd);
}

/*
 * The CPU of domain @d whose share of the domain's submissions (c->csh:
 * over the window for a vector) is IP_DOMINANT_SHARE or more, or -1.
 * Measured in the QEMU oracle (bench/README.md, x86 6.1, threadirqs, one
 * AHCI vector): with one submitter its own CPU gave 2,548 IOPS, the other
 * CPU of its domain 2,028; with two balanced ones, the two CPUs were within
 * 7%. So the submitter's CPU is worth taking only when it submits nearly
 * everything; the bound's own reasons are in policy.h.
 */
static int dominant_cpu(const struct ctx *c, int d, double *share)
{
	double sum = 0;
	int best = -1;

	*share = 0;
	if (d < 0 || d >= c->t->nr_domains)
		return -1;
	CPUSET_FOREACH(cpu, &c->t->domains[d].cpus) {
		if (cpu >= c->t->nr_cpus)
			break;
		sum += c->csh[cpu];
		if (best < 0 || c->csh[cpu] > c->csh[best])
			best = cpu;
	}
	if (best < 0 || sum <= EPS)
		return -1;
	*share = c->csh[best] / sum;
	return *share + EPS >= IP_DOMINANT_SHARE ? best : -1;
}

static bool below_threshold(const struct cand *cd, double thr)
{
	return cd->gain + EPS < thr || cd->gain <= EPS;
}

/* Kept below the threshold: already where its submitters are, or not enough gain. */
static enum ip_reason keep_code(const struct ctx *c, const struct sub_place *pl)
{
	return pl->cur_dom == pl->TD && c->hd[pl->TD] > 0.995 ? IP_R_ALREADY_PLACED
							     : IP_R_BELOW_THRESHOLD;
}

static void keep_detail(const struct ctx *c, const struct cand *cd, const struct sub_place *pl,
			double thr, struct ip_why *w)
{
	if (w->code == IP_R_ALREADY_PLACED) {
		w->cls = c->t->domains[pl->TD].cls;
		w->domain = c->t->domains[pl->TD].cpus;
		w->share = pl->now_loc;
	} else {
		w->gain = cd->gain;
		w->threshold = thr;
	}
}

static enum ip_reason move_code(const struct sub_place *pl)
{
	return pl->substituted ? IP_R_HOUSEKEEPING : IP_R_SUBMITTERS_ELSEWHERE;
}

static void move_detail(const struct ctx *c, const struct sub_place *pl, struct ip_why *w)
{
	const struct ip_topology *t = c->t;

	if (pl->substituted) {
		w->cls = t->domains[pl->D].cls;
		w->domain = t->domains[pl->D].cpus;
		w->cpu = pl->hk;
		w->tier = pl->how;
	} else {
		w->cls = t->domains[pl->TD].cls;
		w->domain = t->domains[pl->TD].cpus;
	}
	w->share = pl->now_loc;
	w->handled = c->hd[pl->TD];
}

/* Whether a move made at @last_move_ns (0: none) is less than @limit_s old. */
static bool moved_within(const struct ctx *c, uint64_t last_move_ns, double limit_s)
{
	return last_move_ns && c->now >= last_move_ns && (c->now - last_move_ns) / NS_PER_S < limit_s;
}

/*
 * return_window, or the span of the window if that is longer (0: none).
 * The window follows a steady change some 4 cycles late; at interval 30,
 * 2 minutes, and a load alternating every 60 s was followed at each turn
 * a turn late, never in the right domain: 54 moves an hour, since
 * return_window (60 s) was 2 cycles and neither its doubled threshold
 * nor the alternation guard came into play. Counted against the window's
 * span (window * interval, 240 s), 2 moves.
 */
static double return_window(const struct ctx *c)
{
	double cycle = c->cfg->interval_s > 0 ? c->cfg->interval_s : c->m->interval_s;
	double span = (c->cfg->window > 0 ? c->cfg->window : 1) * cycle;

	if (c->cfg->return_window_s <= 0)
		return 0;
	return span > c->cfg->return_window_s ? span : c->cfg->return_window_s;
}

/* Hysteresis: a vector that moved within return_window needs twice the
 * threshold to move again. Moving back is what an alternating workload
 * asks for most, but an onward move so soon is as much a sign of a
 * workload the window has not settled on. */
static bool moved_recently(const struct ctx *c, const struct ip_irq_hist *e,
			   const struct sub_place *pl)
{
	return e && moved_within(c, e->last_move_ns, return_window(c)) &&
	       !(pl->cur_dom >= 0 && pl->cur_dom == pl->TD);
}

/* Whether @elig lies in a domain the vector was moved away from. */
static bool returns_to(const struct ctx *c, const struct ip_irq_hist *e, const ip_cpuset *elig)
{
	ip_cpuset span;

	cpuset_zero(&span);
	if (e)
		span_domains(c, &e->from, &span);
	return cpuset_intersects(&span, elig);
}

/*
 * The alternation guard. The window holds a load that alternates faster
 * than about 4 cycles; slower, each switch passes even the doubled
 * threshold and the vector followed every one, some 4 cycles late: in the
 * wrong domain most of each phase (phases of 5 cycles, dwell 2 s: 8 moves
 * in 40 cycles). So a vector whose last two moves after its submitters
 * into another domain came within return_window of each other follows
 * them a third time only once that move has been wanted return_window
 * without a break; a steady change is still followed, that much later.
 * False: not held (a move may go ahead); *since_s: how long it was wanted.
 */
static bool alternating(struct ctx *c, const struct ip_irq_hist *e, int state, double *since_s)
{
	double win = return_window(c);
	uint64_t since;

	*since_s = 0;
	if (!e || !e->prev_follow_ns || e->last_follow_ns < e->prev_follow_ns ||
	    (e->last_follow_ns - e->prev_follow_ns) / NS_PER_S >= win)
		return false;
	since = e->want_since_ns && e->want_since_ns <= c->now ? e->want_since_ns : c->now;
	*since_s = (c->now - since) / NS_PER_S;
	/* kept while dwell or the budget still hold the move */
	if (state >= 0)
		c->p->states[state].want_since_ns = since;
	return *since_s < win;
}

/*
 * Whether a move after the submitters into another domain is wanted this
 * cycle (at move_threshold, whatever holds it), into the plan's state: the
 * time it was first asked for since the last move, kept while the asks
 * come within return_window of each other. A load that alternates every
 * 2 or 3 cycles, which the window is to hold, still swings the average to
 * 62% or 68% in the domain of its latest phase (window 8): a gain of 24
 * or 36 pp, below twice the threshold, so return_window held each move
 * back, and the next swing made it once return_window had passed: a move
 * every 62 s (10 in 600 s), each too late for the alternation guard,
 * which counted the moves from when they were made. Counted from when
 * they were first asked for (3 s after the move before), the second
 * makes the guard hold the third.
 */
static void vector_asked(struct ctx *c, const struct ip_irq_hist *e, const struct cand *cd,
			 const struct sub_place *pl)
{
	struct ip_vec_state *st;
	bool lapsed;

	if (cd->state < 0)
		return;
	st = &c->p->states[cd->state];
	lapsed = !e || !e->asked_ns || e->asked_last_ns > c->now || e->asked_ns > c->now ||
		 (c->now - e->asked_last_ns) / NS_PER_S >= return_window(c);
	st->asked_ns = lapsed ? 0 : e->asked_ns;
	st->asked_last_ns = lapsed ? 0 : e->asked_last_ns;
	if (pl->cur_dom == pl->TD || below_threshold(cd, c->cfg->move_threshold))
		return;
	if (!st->asked_ns)
		st->asked_ns = c->now;
	st->asked_last_ns = c->now;
}

/* A trickle is not worth waking a domain of more capacity for. */
static bool trickle_up(const struct ctx *c, const struct cand *cd, const struct sub_place *pl)
{
	const struct ip_domain *dom = c->t->domains;

	return cd->judged < c->cfg->min_rate && pl->cur_dom >= 0 &&
	       dom[pl->TD].capacity > dom[pl->cur_dom].capacity;
}

static bool is_ioapic(const struct ip_irq *q);

/*
 * The kernel took our write to vector @q's affinity (it still reads as we
 * left it) but handles the vector elsewhere, and the move wanted now is
 * into the domain we put it in: the same write again. It was written
 * twice more, and the two moves within return_window then read as
 * submitters that alternate. An IO-APIC line is not refused: it moves at
 * its next interrupt.
 */
static bool kernel_refused(const struct ctx *c, const struct ip_irq *q, const struct ip_irq_hist *e, int TD)
{
	const struct ip_irq_info *info = ip_irq_info(q);

	return e && e->placed && info->have_proc && info->have_effective && !cpuset_empty(&info->effective) &&
	       cpuset_equal(&info->affinity, &e->placement) &&
	       !cpuset_intersects(&info->effective, &info->affinity) && !is_ioapic(q) &&
	       cpuset_subset(&e->placement, &c->t->domains[TD].cpus);
}

/*
 * The submitter placement of vector @qi, judged against the handled
 * shares already in c->hd and the vector's window. Fills the candidate's
 * target and reason; kind is MOVE when locality would rise by the
 * threshold.
 */
static void vector_placement(struct ctx *c, int qi, const char *devs, struct cand *cd,
			     const struct ip_irq_hist *e)
{
	const struct ip_policy_config *cfg = c->cfg;
	struct sub_place pl;
	struct ip_why *w;
	bool recent, returning;
	double thr, wanted;

	if (submitter_shares(c, &pl.all_iso) <= 0) {
		cd->kind = CAND_KEEP;
		vector_why(c, qi, devs, cd, IP_R_NO_SUBMITTERS);
		return;
	}
	window_apply(c, e, cd);
	if (c->err)
		return;
	cd->kind = CAND_KEEP;
	if (!submitter_domain(c, qi, &pl)) {
		no_housekeeping(c, vector_why(c, qi, devs, cd, IP_R_NO_HOUSEKEEPING));
		return;
	}
	if (pl.substituted)
		note_housekeeping(c, qi, devs, &pl);
	if (pl.TD < 0) {
		vector_why(c, qi, devs, cd, IP_R_NO_USABLE_CPU);
		return;
	}
	submitter_gain(c, cd, &pl);
	if (!pl.substituted)
		cd->dom_cpu = dominant_cpu(c, pl.TD, &cd->dom_share);
	cd->single = cfg->granularity == IP_GRAN_CPU;
	cd->fixed_cpu = cd->single ? pl.hk : -1;
	cd->target = pl.elig;
	vector_asked(c, e, cd, &pl);
	recent = moved_recently(c, e, &pl);
	returning = recent && returns_to(c, e, &pl.elig);
	thr = cfg->move_threshold;
	if (recent)
		thr *= 2;
	if (below_threshold(cd, thr)) {
		w = vector_why(c, qi, devs, cd, keep_code(c, &pl));
		keep_detail(c, cd, &pl, thr, w);
		if (returning && w->code == IP_R_BELOW_THRESHOLD) {
			w->returning = true;
			w->set = pl.elig;
			w->limit_s = return_window(c);
		}
		return;
	}
	if (trickle_up(c, cd, &pl)) {
		w = vector_why(c, qi, devs, cd, IP_R_TRICKLE);
		w->rate = cd->judged;
		w->min_rate = cfg->min_rate;
		return;
	}
	if (kernel_refused(c, &c->s->irqs[qi], e, pl.TD)) {
		w = vector_why(c, qi, devs, cd, IP_R_REFUSED);
		w->set = ip_irq_info(&c->s->irqs[qi])->affinity;
		w->set2 = ip_irq_info(&c->s->irqs[qi])->effective;
		return;
	}
	cd->follows = pl.cur_dom != pl.TD;
	if (cd->follows && alternating(c, e, cd->state, &wanted)) {
		w = vector_why(c, qi, devs, cd, IP_R_ALTERNATING);
		w->since_s = wanted;
		w->limit_s = return_window(c);
		w->domain = c->t->domains[pl.TD].cpus;
		return;
	}
	cd->kind = CAND_MOVE;
	cd->dwell_applies = true;
	move_detail(c, &pl, vector_why(c, qi, devs, cd, move_code(&pl)));
}

/*
 * The placement of a managed vector's IRQ thread by the vector's
 * submitters, judged against where the thread may run (c->hd). Unlike a
 * vector it has no window, no hysteresis and no trickle rule: only the
 * thread_* fields, kind and thread_why of @cd say the result.
 */
static void thread_placement(struct ctx *c, int qi, const char *devs, struct cand *cd)
{
	struct sub_place pl;
	struct ip_why *w;

	cd->kind = CAND_KEEP;
	if (submitter_shares(c, &pl.all_iso) <= 0) {
		thread_why(c, qi, devs, cd, IP_R_NO_SUBMITTERS);
		return;
	}
	if (!submitter_domain(c, qi, &pl)) {
		no_housekeeping(c, thread_why(c, qi, devs, cd, IP_R_NO_HOUSEKEEPING));
		return;
	}
	if (pl.TD < 0) {
		thread_why(c, qi, devs, cd, IP_R_NO_USABLE_CPU);
		return;
	}
	submitter_gain(c, cd, &pl);
	cd->thread_single = c->cfg->granularity == IP_GRAN_CPU;
	if (pl.hk >= 0 && cd->thread_single) {
		cpuset_zero(&cd->thread_target);
		cpuset_set(&cd->thread_target, pl.hk);
	} else {
		cd->thread_target = pl.elig;
	}
	cd->thread_busiest = pl.busiest;
	if (below_threshold(cd, c->cfg->move_threshold)) {
		w = thread_why(c, qi, devs, cd, keep_code(c, &pl));
		keep_detail(c, cd, &pl, c->cfg->move_threshold, w);
		return;
	}
	cd->kind = CAND_MOVE;
	cd->dwell_applies = true;
	move_detail(c, &pl, thread_why(c, qi, devs, cd, move_code(&pl)));
}

/* Whether the vector's interrupts (c->hd) are handled mostly in a domain of
 * more capacity than the least of the usable ones. */
static bool above_min_capacity(const struct ctx *c)
{
	int cur = dominant_domain(c, c->hd);
	bool any = false;
	unsigned mincap = 0;

	for (int d = 0; d < c->t->nr_domains; d++) {
		ip_cpuset el;

		domain_eligible(c, d, &el);
		if (!cpuset_empty(&el) && (!any || c->t->domains[d].capacity < mincap)) {
			mincap = c->t->domains[d].capacity;
			any = true;
		}
	}
	return any && cur >= 0 && c->t->domains[cur].capacity > mincap;
}

/*
 * idle_grace, doubled for each return to the efficiency domain in a row
 * that the submitters undid within return_window. A job that bursts from
 * a big CPU for 40 s every 80 s (a checkpoint, a log flush; trickle or
 * nothing between) had its vector sent back to the efficiency domain 30 s
 * into each pause and after the burst again 10 s later: 90 moves an hour,
 * 116 for 31 s phases, for pauses that ended before the return paid. The
 * burst is still followed at once; only the return waits longer.
 */
static double idle_grace(const struct ctx *c, const struct ip_irq_hist *e)
{
	int n = e && return_window(c) > 0 ? e->idle_undone : 0;

	return c->cfg->idle_grace_s * (double)(1u << (n < IP_IDLE_UNDONE_MAX ? n : IP_IDLE_UNDONE_MAX));
}

/* Submitters idle: back to the efficiency domain after the grace time. */
static void idle_placement(struct ctx *c, int qi, const char *devs, struct cand *cd,
			   const struct ip_irq_hist *e)
{
	const struct ip_policy_config *cfg = c->cfg;
	const struct ip_topology *t = c->t;
	uint64_t since = e && e->idle_since_ns ? e->idle_since_ns : c->now;
	double idle_for = c->now > since ? (c->now - since) / NS_PER_S : 0;
	unsigned mincap = 0;
	bool have_min = false;
	int cur_dom, cpu, TD;
	ip_cpuset pool;
	struct ip_why *w;

	cd->kind = CAND_KEEP;
	if (cfg->idle_domain == IP_IDLE_STAY) {
		vector_why(c, qi, devs, cd, IP_R_IDLE_STAY);
		return;
	}
	for (int d = 0; d < t->nr_domains; d++) {
		ip_cpuset el;

		domain_eligible(c, d, &el);
		if (cpuset_empty(&el))
			continue;
		if (!have_min || t->domains[d].capacity < mincap)
			mincap = t->domains[d].capacity;
		have_min = true;
	}
	cur_dom = dominant_domain(c, c->hd);
	if (!have_min || (cur_dom >= 0 && t->domains[cur_dom].capacity <= mincap)) {
		vector_why(c, qi, devs, cd, IP_R_IDLE_EFFICIENT);
		return;
	}
	if (idle_for < idle_grace(c, e)) {
		w = vector_why(c, qi, devs, cd, IP_R_IDLE_GRACE);
		w->since_s = idle_for;
		w->limit_s = idle_grace(c, e);
		w->count = e && return_window(c) > 0 ? e->idle_undone : 0;
		return;
	}
	cpuset_zero(&pool);
	for (int d = 0; d < t->nr_domains; d++) {
		ip_cpuset el;

		if (t->domains[d].capacity != mincap)
			continue;
		domain_eligible(c, d, &el);
		cpuset_or(&pool, &pool, &el);
	}
	cpu = least_loaded(c, &pool, -1, qi);
	TD = cpu_domain(c, cpu);
	if (TD < 0)
		return;
	cd->kind = CAND_MOVE;
	cd->dwell_applies = true;
	cd->gain = 0;
	cd->td = TD;
	domain_eligible(c, TD, &cd->target);
	cd->single = cfg->granularity == IP_GRAN_CPU;
	cd->fixed_cpu = -1;
	cd->busiest = -1;
	w = vector_why(c, qi, devs, cd, IP_R_IDLE_RETURN);
	w->since_s = idle_for;
	w->limit_s = idle_grace(c, e);
	w->count = e && return_window(c) > 0 ? e->idle_undone : 0;
	w->domain = t->domains[TD].cpus;
	w->cls = t->domains[TD].cls;
}

static bool is_ioapic(const struct ip_irq *q)
{
	return strstr(ip_irq_info(q)->chip, "IO-APIC") != NULL;
}

static void cand_init(struct ctx *c, int qi, struct cand *cd)
{
	memset(cd, 0, sizeof(*cd));
	cd->idx = qi;
	cd->td = -1;
	cd->fixed_cpu = -1;
	cd->busiest = -1;
	cd->dom_cpu = -1;
	cd->thread_busiest = -1;
	cd->thread_dom_cpu = -1;
	cd->state = -1;
	cd->storage = ip_irq_info(&c->s->irqs[qi])->nr_devs > 0;
	cd->rate = c->m->irq ? c->m->irq[qi].total : 0;
	cd->judged = cd->rate;
}

static int irq_threads(const struct ctx *c, unsigned irq)
{
	int n;

	thread_range(c, irq, &n);
	return n;
}

/* Why a managed vector is kept, into @w; told at length once (@explain). */
static void managed_reason(struct ctx *c, int qi, const char *devs, struct ip_why *w,
			   enum ip_managed_why mw, bool explain, bool has_thread)
{
	static const enum ip_reason codes[] = {
		[IP_MANAGED_MODE] = IP_R_MANAGED_READONLY,
		[IP_MANAGED_EIO] = IP_R_MANAGED_EIO,
		[IP_MANAGED_EPERM] = IP_R_MANAGED_EPERM,
		[IP_MANAGED_SPREAD] = IP_R_MANAGED_SPREAD,
	};

	why_about(c, qi, devs, w,
		  (unsigned)mw < ARRAY_SIZE(codes) && codes[mw] ? codes[mw] : IP_R_MANAGED_READONLY);
	w->managed_why = mw;
	w->explained = explain;
	w->has_thread = has_thread;
}

/* Kept: the kernel manages the vector. */
static void keep_managed(struct ctx *c, int qi, const char *devs, struct cand *cd,
			 enum ip_managed_why mw)
{
	cd->kind = CAND_KEEP;
	managed_reason(c, qi, devs, &cd->why, mw, cd->explain, irq_threads(c, c->s->irqs[qi].irq) > 0);
}

/* A pin none of whose CPUs is usable: noted, and the vector kept. */
static void pin_unusable(struct ctx *c, int qi, const char *devs, struct cand *cd,
			 const struct resolved *r)
{
	struct ip_why n, *w;

	why_init(&n, IP_R_NOTE_PIN_UNUSABLE);
	n.irq = c->s->irqs[qi].irq;
	n.set = r->pin;
	why_src(&n, r->pin_rule, IP_FROM_PIN);
	add_note(c, NULL, &n);
	if (cd->managed)
		return;
	cd->kind = CAND_KEEP;
	w = vector_why(c, qi, devs, cd, IP_R_PIN_UNUSABLE);
	w->set = r->pin;
	why_src(w, r->pin_rule, IP_FROM_PIN);
}

/* A pin (rule or irqctl) decides alone, trimmed to the usable CPUs; a
 * managed vector's pin goes to its thread. */
static void pin_placement(struct ctx *c, int qi, const char *devs, struct cand *cd,
			  const struct resolved *r)
{
	const struct ip_irq_info *info = ip_irq_info(&c->s->irqs[qi]);
	ip_cpuset trimmed;
	struct ip_why *w;

	cd->pinned = true;
	cpuset_and(&trimmed, &r->pin, &c->eligible);
	if (cpuset_empty(&trimmed)) {
		pin_unusable(c, qi, devs, cd, r);
		return;
	}
	if (cd->managed) {
		cd->thread_direct = true;
		cd->thread_target = trimmed;
		w = thread_why(c, qi, devs, cd, IP_R_PIN);
		w->set = r->pin;
		w->set2 = trimmed;
		why_src(w, r->pin_rule, IP_FROM_PIN);
		return;
	}
	if (cpuset_equal(&info->affinity, &trimmed)) {
		cd->kind = CAND_KEEP;
		w = vector_why(c, qi, devs, cd, IP_R_PINNED);
		w->set = trimmed;
		why_src(w, r->pin_rule, IP_FROM_PIN);
		return;
	}
	cd->kind = CAND_MOVE;
	cd->gain = GAIN_PIN;
	cd->target = trimmed;
	handled_by_vector(c, qi, &cd->from);
	w = vector_why(c, qi, devs, cd, IP_R_PIN);
	w->set = r->pin;
	w->set2 = trimmed;
	w->trimmed = !cpuset_equal(&trimmed, &r->pin);
	why_src(w, r->pin_rule, IP_FROM_PIN);
}

/*
 * Whether the vector's submissions can be judged: rates, not the admin
 * vector, counts. If not, the reason; else IP_R_NONE and *total, its
 * submissions per second (by CPU in @sub, unless NULL).
 */
static enum ip_reason submissions_unknown(struct ctx *c, int qi, double *sub, double *total)
{
	bool admin_only = false, have_counts;

	if (!c->have_rates)
		return IP_R_NO_RATES;
	have_counts = vector_submits(c, qi, sub, total, &admin_only);
	if (admin_only)
		return IP_R_ADMIN_VECTOR;
	return have_counts ? IP_R_NONE : IP_R_NO_COUNTS;
}

/* submissions_unknown()'s answer; if not known, a non-managed vector is
 * kept with the reason (a managed one has its own). */
static bool submissions_known(struct ctx *c, int qi, const char *devs, struct cand *cd,
			      double *total)
{
	enum ip_reason why = submissions_unknown(c, qi, c->sub, total);

	if (why == IP_R_NONE)
		return true;
	if (!cd->managed) {
		cd->kind = CAND_KEEP;
		vector_why(c, qi, devs, cd, why);
	}
	return false;
}

/*
 * A managed vector's IRQ thread followed its submitters every cycle they
 * changed domain: no window, dwell or hysteresis (two NVMe submitter
 * domains in turns of 1 s: 600 thread moves in 600 s; of 5 s, 120). It
 * now stays dwell after a move, and once two moves came within
 * return_window, until a third has been wanted that long without a break,
 * as a vector does (alternating()): 2 moves. Held as a completion thread
 * is, the vector's own record being the managed one; never on a CPU
 * fenced off since (isolated, nohz_full, banned), which it leaves at once.
 */
static bool thread_held(struct ctx *c, const struct cand *cd, const struct ip_irq_hist *e,
			const struct ip_irq_thread *th)
{
	ip_cpuset on;
	double wanted;
	bool alt = alternating(c, e, cd->state, &wanted);

	cpuset_and(&on, &th->allowed, &c->t->online);
	if (!cpuset_subset(&on, &c->eligible))
		return false;
	return alt || (e && moved_within(c, e->last_move_ns, c->cfg->dwell_s));
}

/* A managed vector stays; its IRQ thread follows the submitters, judged by
 * where it may run as a vector is by where it fired. */
static void managed_thread_placement(struct ctx *c, int qi, const char *devs, struct cand *cd,
				     double total)
{
	const struct ip_irq_thread *th;
	const struct thr_key *k;
	struct cand tmp;
	int n;

	k = thread_range(c, c->s->irqs[qi].irq, &n);
	if (!n || total <= 0)
		return;
	th = &c->s->threads[k->i];
	handled_from_set(c, &th->allowed, NULL);
	tmp = *cd;
	thread_placement(c, qi, devs, &tmp);
	if (tmp.kind != CAND_MOVE || thread_held(c, cd, c->hist[qi], th))
		return;
	cd->thread_direct = true;
	cd->thread_target = tmp.thread_target;
	cd->thread_single = tmp.thread_single;
	cd->thread_busiest = tmp.thread_busiest;
	/* one sample's shares: the thread moves only with its domain, which the
	 * threshold guards, and stays on its CPU while that is in the target */
	cpu_shares(c);
	if (tmp.thread_single && tmp.thread_why.code == IP_R_SUBMITTERS_ELSEWHERE)
		cd->thread_dom_cpu = dominant_cpu(c, tmp.td, &tmp.thread_why.dom_share);
	tmp.thread_why.dominant = cd->thread_dom_cpu >= 0;
	tmp.thread_why.dom_cpu = cd->thread_dom_cpu;
	/* the thread's own placement, told as that of a managed vector's thread */
	cd->thread_why = tmp.thread_why;
	cd->thread_why.detail = tmp.thread_why.code;
	cd->thread_why.code = IP_R_MANAGED_THREAD;
}

/* A storage vector the policy may move: by its submitters, or back to the
 * idle domain when it has none (or only a trickle on a fast core). */
static void storage_placement(struct ctx *c, int qi, const char *devs, struct cand *cd,
			      const struct ip_irq_hist *e, double total, bool quiet)
{
	handled_by_vector(c, qi, &cd->from);
	if (total <= 0) {
		idle_placement(c, qi, devs, cd, e);
	} else if (quiet && above_min_capacity(c)) {
		/* Trickle on a fast core: following its submitters is fine where
		 * that costs less (min_rate keeps it from going up); otherwise it
		 * counts as idle and goes back to the idle domain after the grace. */
		struct cand before = *cd;

		vector_placement(c, qi, devs, cd, e);
		if (cd->kind != CAND_MOVE && !c->err) {
			*cd = before;
			handled_by_vector(c, qi, &cd->from);
			idle_placement(c, qi, devs, cd, e);
		}
	} else {
		vector_placement(c, qi, devs, cd, e);
	}
	/* Per-queue completion threads (irqpilot_cq) are placed by their own
	 * queue's submitters, and the device attached or not, in emit_cq(). */
}

/*
 * The rate min_rate judges: the lower of this sample's and its average
 * over the window (as window_weight() weighs a sample), which starts again
 * after a cycle without submissions. Trickle (150 I/O/s from a big CPU)
 * with one cycle of 210 every 40 s came as a burst after a pause (trickle
 * counts as idle) and took the vector up at once, and idle_grace brought
 * it back: 30 moves in 1200 s. A burst after a pause still counts at once;
 * a falling rate too, for the lower of the two.
 */
static double judged_rate(const struct ctx *c, const struct ip_irq_hist *e, double total, double rate,
			  double *rate_w)
{
	*rate_w = rate;
	if (total > 0 && e && e->have_rate_w) {
		double a = window_weight(c);

		*rate_w = a * rate + (1 - a) * e->rate_w;
	}
	return *rate_w < rate ? *rate_w : rate;
}

/* Trickle counts as idle: a vector kept on a fast core by a few I/Os a
 * second wakes that core for nothing. @rate: its interrupts per second. */
static bool trickle(const struct ctx *c, double total, double rate)
{
	return total <= 0 || rate < c->cfg->min_rate;
}

/* Managed by the kernel, as the sample says or as a write found it. */
static enum ip_managed_why line_managed(const struct ip_irq_info *info, const struct ip_irq_hist *e)
{
	if (info->managed != IP_MANAGED_NO)
		return info->managed;
	return e ? e->managed : IP_MANAGED_NO;
}

/*
 * Pass 1: what each vector should do, before budget and dwell. False, and
 * @cd untouched, for a line that is no candidate (most lines of a
 * machine): clearing a candidate's 1.5 KB of CPU sets for each was a
 * sixth of the decision.
 */
static bool evaluate_placement(struct ctx *c, int qi, struct cand *cd)
{
	const struct ip_irq *q = &c->s->irqs[qi];
	const struct ip_irq_info *info = ip_irq_info(q);
	const struct ip_irq_hist *e = c->hist[qi];
	struct resolved r;
	enum ip_managed_why mw = line_managed(info, e);
	bool storage = info->nr_devs > 0;
	char devs[64];
	struct ip_why *w;
	bool quiet;
	double total, rate_w;

	resolve_rules(c, q, e, &r);
	if (!storage && !r.named && !(e && e->have_pin))
		return false;
	/* A line whose /proc/irq/N is gone is being freed: free_desc()
	 * (kernel/irq/irqdesc.c) unregisters /proc/irq/N before the descriptor
	 * leaves /proc/interrupts. A write would fail with ENOENT and drop a
	 * pin whose IRQ is merely gone (the pin-irq-gone note says that once
	 * the line goes too). */
	if (!storage && !info->have_proc)
		return false;
	cand_init(c, qi, cd);
	cd->named = true;
	line_devices(c, q, devs, sizeof(devs));
	if (r.ban) {
		cd->banned = true;
		cd->kind = CAND_KEEP;
		w = vector_why(c, qi, devs, cd, IP_R_BANNED);
		why_src(w, r.ban, IP_FROM_RULE);
		return true;
	}
	cd->managed = mw != IP_MANAGED_NO;
	cd->explain = cd->managed && !(e && e->managed_explained);
	if (cd->managed)
		keep_managed(c, qi, devs, cd, mw);
	if (r.have_pin) {
		pin_placement(c, qi, devs, cd, &r);
		return true;
	}
	if (!cd->storage)
		return true; /* named only for its thread's priority */
	if (!submissions_known(c, qi, devs, cd, &total))
		return true;
	cd->judged = judged_rate(c, e, total, cd->rate, &rate_w);
	quiet = trickle(c, total, cd->judged);
	cd->state = add_state(c, q->irq, quiet);
	if (c->err)
		return true;
	/* the window's average starts again after a cycle without submissions */
	c->p->states[cd->state].rate_w = rate_w;
	c->p->states[cd->state].have_rate_w = total > 0;
	if (cd->managed)
		managed_thread_placement(c, qi, devs, cd, total);
	else
		storage_placement(c, qi, devs, cd, e, total, quiet);
	return true;
}

/*
 * The domain nearest to @from by capacity that has a usable CPU: the
 * least difference of capacity, then the same package, then the lower
 * capacity (the cheaper of two equally near), then topology order.
 */
static int nearest_domain(const struct ctx *c, int from)
{
	const struct ip_domain *f = &c->t->domains[from];
	int best = -1;
	unsigned bdiff = 0;

	for (int d = 0; d < c->t->nr_domains; d++) {
		const struct ip_domain *x = &c->t->domains[d];
		unsigned diff = x->capacity > f->capacity ? x->capacity - f->capacity
							  : f->capacity - x->capacity;
		ip_cpuset el;

		domain_eligible(c, d, &el);
		if (d == from || cpuset_empty(&el))
			continue;
		if (best >= 0) {
			const struct ip_domain *b = &c->t->domains[best];
			bool same = f->package >= 0 && x->package == f->package;
			bool bsame = f->package >= 0 && b->package == f->package;

			if (diff > bdiff || (diff == bdiff && (bsame && !same)) ||
			    (diff == bdiff && same == bsame && x->capacity >= b->capacity))
				continue;
		}
		best = d;
		bdiff = diff;
	}
	return best;
}

/*
 * The online CPUs of vector @qi's placement that are no longer usable. The
 * effective CPU is where it fires now; but when the affinity is still the
 * one we wrote (a whole domain with granularity = domain), each of its CPUs
 * is ours too: the kernel may pick any of them for the effective CPU at
 * its next migration (hot-plug, a vector matrix running short), so a CPU
 * fenced off since must leave the mask as it would leave a pin. An
 * affinity we never wrote (the kernel's default, all CPUs) is left to the
 * policy's pace: moving each of those at once would bypass max_moves for
 * every vector on the machine.
 */
static void fenced_cpus(const struct ctx *c, int qi, ip_cpuset *bad)
{
	const struct ip_irq_info *info = ip_irq_info(&c->s->irqs[qi]);
	const struct ip_irq_hist *e = c->hist[qi];

	cpuset_and(bad, irq_placement(&c->s->irqs[qi]), &c->t->online);
	if (e && e->placed && cpuset_equal(&info->affinity, &e->placement)) {
		ip_cpuset aff;

		cpuset_and(&aff, &info->affinity, &c->t->online);
		cpuset_or(bad, bad, &aff);
	}
	cpuset_andnot(bad, bad, &c->eligible);
}

/*
 * A vector on a CPU that is now isolated, nohz_full or banned leaves it
 * this cycle, whatever dwell, threshold and window say: an admin who
 * fences CPUs off at run time (a cgroup v2 isolated partition, irqctl ban)
 * wants them quiet now. Where it goes (as issue 14 asks): the least loaded
 * usable CPU of its own domain (nearest first on a tie), else of the domain
 * nearest by capacity, so that the step is the smallest that leaves; the
 * policy's own move of this cycle, if any, waits for the dwell after it.
 * Kernel-managed vectors are never written; pins are already trimmed to
 * usable CPUs; ban rules leave the vector alone.
 */
static void move_off(struct ctx *c, int qi, struct cand *cd)
{
	const struct ip_irq *q = &c->s->irqs[qi];
	ip_cpuset bad, iso, el;
	int from = -1, D, TD;
	bool isolated = false;
	char devs[64];
	struct ip_why *w;

	if (!cd->storage || cd->managed || cd->banned || cd->pinned || c->err)
		return;
	fenced_cpus(c, qi, &bad);
	if (cpuset_empty(&bad))
		return;
	cpuset_zero(&iso);
	CPUSET_FOREACH(cpu, &bad) {
		if (is_isolated(c, cpu)) {
			cpuset_set(&iso, cpu);
			isolated = true;
		}
		if (from < 0)
			from = cpu;
	}
	if (isolated)
		from = cpuset_first(&iso);
	line_devices(c, q, devs, sizeof(devs));
	D = cpu_domain(c, from);
	TD = D;
	if (D >= 0)
		domain_eligible(c, D, &el);
	if (D < 0 || cpuset_empty(&el)) {
		TD = D >= 0 ? nearest_domain(c, D) : -1;
		if (TD < 0) {
			/* Without a usable CPU there is nowhere to go: keep, and say so. */
			cd->kind = CAND_KEEP;
			vector_why(c, qi, devs, cd, IP_R_NO_USABLE_CPU);
			return;
		}
		domain_eligible(c, TD, &el);
	}
	cd->kind = CAND_MOVE;
	cd->off = true;
	cd->dwell_applies = false;
	cd->gain = GAIN_OFF;
	cd->td = TD;
	cd->target = el;
	cd->single = c->cfg->granularity == IP_GRAN_CPU;
	cd->fixed_cpu = cd->single ? least_loaded(c, &el, from, qi) : -1;
	cd->busiest = -1;
	if (!cpuset_intersects(&bad, irq_placement(q)))
		/* fenced in the mask only: say "4-5 → 4", not "4 → 4" */
		cpuset_and(&cd->from, &ip_irq_info(q)->affinity, &c->t->online);
	else if (cpuset_empty(&cd->from))
		handled_by_vector(c, qi, &cd->from);
	w = vector_why(c, qi, devs, cd, isolated ? IP_R_OFF_ISOLATED : IP_R_OFF_BANNED);
	w->set = isolated ? iso : bad;
	w->domain = c->t->domains[TD].cpus;
	w->cls = c->t->domains[TD].cls;
	w->cpu = cd->fixed_cpu;
	w->capacity = c->t->domains[TD].capacity;
	w->other_domain = TD != D;
	if (D >= 0) {
		w->set2 = c->t->domains[D].cpus;
		w->capacity2 = c->t->domains[D].capacity;
	}
}

/*
 * The NUMA node of the devices on line @qi, or -1: a device without one
 * (numa_node -1, or a machine without NUMA) says nothing, and devices on
 * two nodes sharing a line leave no side to prefer. @local gets the CPUs
 * the kernel calls local to them (local_cpulist), empty if none told.
 */
static int line_node(const struct ctx *c, int qi, ip_cpuset *local)
{
	const struct ip_irq_info *info = ip_irq_info(&c->s->irqs[qi]);
	int node = -1;

	cpuset_zero(local);
	for (int i = 0; i < info->nr_devs; i++) {
		const struct ip_blockdev *b;

		if (info->devs[i] < 0 || info->devs[i] >= c->s->storage.nr_devs)
			continue;
		b = &c->s->storage.devs[info->devs[i]];
		if (b->numa_node < 0)
			continue;
		if (node >= 0 && b->numa_node != node)
			return -1;
		node = b->numa_node;
		if (cpuset_empty(local))
			*local = b->local_cpus;
		else if (!cpuset_empty(&b->local_cpus))
			cpuset_and(local, local, &b->local_cpus);
	}
	return node;
}

/*
 * When the usable CPUs of @set (a target domain) span NUMA nodes, keep
 * those of the device's node: its DMA buffers, completion queues and
 * request memory are allocated there, so a far node pays a remote access
 * on every completion. The device's local_cpulist says which CPUs those
 * are; a garbled or missing one falls back to the topology's node of each
 * CPU. Only ever narrows @set, so an isolated or banned CPU never comes
 * in; when none of the domain's CPUs are on the node @set is kept.
 * Returns the node, or -1 when @set was left as it was; *nodes is the
 * number of nodes @set spans.
 */
static int numa_prefer(const struct ctx *c, int qi, ip_cpuset *set, int *nodes)
{
	ip_cpuset local, near;
	int node = line_node(c, qi, &local), seen[8], nseen = 0;

	*nodes = 0;
	if (node < 0)
		return -1;
	cpuset_zero(&near);
	CPUSET_FOREACH(cpu, set) {
		int n;
		bool known = false;

		if (cpu >= c->t->nr_cpus)
			break;
		n = c->t->cpus[cpu].node;
		for (int i = 0; i < nseen && !known; i++)
			known = seen[i] == n;
		if (!known && nseen < (int)ARRAY_SIZE(seen))
			seen[nseen++] = n;
		if (cpuset_empty(&local) ? n == node : cpuset_test(&local, cpu))
			cpuset_set(&near, cpu);
	}
	*nodes = nseen;
	if (nseen < 2 || cpuset_empty(&near) || cpuset_equal(&near, set))
		return -1;
	*set = near;
	return node;
}

/* The NUMA preference, on a move's target or a managed vector's thread's:
 * not on pins (the admin chose) nor on a CPU already chosen (a housekeeping
 * CPU nearest its isolated submitter, the nearest CPU off an isolated one). */
static void numa_narrow(struct ctx *c, int qi, struct cand *cd)
{
	int node, nodes;

	if (cd->pinned)
		return;
	if (cd->kind == CAND_MOVE && cd->td >= 0 && cd->fixed_cpu < 0) {
		ip_cpuset wide = cd->target;

		node = numa_prefer(c, qi, &cd->target, &nodes);
		if (node >= 0) {
			cd->wide = wide;
			cd->why.numa = true;
			cd->why.node = node;
			cd->why.nodes = nodes;
		}
	}
	if (cd->thread_direct) {
		node = numa_prefer(c, qi, &cd->thread_target, &nodes);
		if (node >= 0) {
			cd->thread_why.numa = true;
			cd->thread_why.node = node;
			cd->thread_why.nodes = nodes;
		}
	}
}

/*
 * A vector already in its submitters' domain but handled only on CPUs off
 * its device's node (the kernel's first choice, before any move of ours,
 * is often CPU 0) moves to that node's CPUs of the domain: the domain
 * alone would never move it, being already placed. Once on the node it
 * stays, so this cannot swing; dwell and max_moves hold as for any move.
 */
static void numa_rehome(struct ctx *c, int qi, struct cand *cd)
{
	ip_cpuset elig, near;
	int node, nodes;
	struct ip_why *w;
	double share = cd->why.share;
	char devs[64];

	if (cd->kind != CAND_KEEP || cd->why.code != IP_R_ALREADY_PLACED || !cd->storage ||
	    cd->managed || cd->pinned || cd->banned || cd->td < 0 || cpuset_empty(&cd->from))
		return;
	domain_eligible(c, cd->td, &elig);
	near = elig;
	node = numa_prefer(c, qi, &near, &nodes);
	if (node < 0 || cpuset_intersects(&cd->from, &near))
		return;
	cd->kind = CAND_MOVE;
	cd->dwell_applies = true;
	cd->gain = 0;
	cd->target = near;
	cd->wide = elig;
	cd->single = c->cfg->granularity == IP_GRAN_CPU;
	cd->fixed_cpu = -1;
	scopy(devs, sizeof(devs), cd->why.devices);
	w = vector_why(c, qi, devs, cd, IP_R_NUMA_NODE);
	w->share = share;
	w->cls = c->t->domains[cd->td].cls;
	w->domain = c->t->domains[cd->td].cpus;
	w->set = cd->from;
	w->numa = true;
	w->node = node;
	w->nodes = nodes;
}

/*
 * Cycles the window must hold before a CPU's dominance moves a vector
 * within its domain. The window starts with its first sample, so a job that
 * starts a moment before its peer (seen in the oracle: fio's two jobs on
 * CPUs 2 and 3, one second apart under TCG) would dominate it alone; after
 * the first sample at 1 and then 1/2, the share is 1/2 + b^k / 2 (b = 7/9),
 * below IP_DOMINANT_SHARE from k = 3 on: the first sample and three more
 * (or the whole window, if shorter: window = 1 decides on each sample).
 */
#define IP_DOMINANT_MIN_CYCLES 4

/*
 * The alternation guard inside a domain. A submitter thread that the
 * scheduler moves between two CPUs of a domain at random (one fio job on
 * the mid pair 4-5, a new CPU each second) makes one of them reach
 * IP_DOMINANT_SHARE of the window every 20 to 40 s by chance, and the
 * vector followed each: 115 moves an hour, for no gain the next run of
 * the dice did not take back. So, as for moves into another domain
 * (alternating()), a vector whose last two moves to a dominant CPU came
 * within return_window of each other moves to one a third time only
 * once that CPU has dominated return_window without a break. Records in
 * the plan's state which CPU dominates and since when; true: held.
 */
static bool dominance_held(struct ctx *c, const struct ip_irq_hist *e, const struct cand *cd)
{
	struct ip_vec_state *st;
	double win = return_window(c);

	if (cd->state < 0)
		return false;
	st = &c->p->states[cd->state];
	st->dom_cpu = cd->dom_cpu;
	st->dom_since_ns = 0;
	if (cd->dom_cpu < 0)
		return false;
	st->dom_since_ns = e && e->dom_since_ns && e->dom_cpu == cd->dom_cpu && e->dom_since_ns <= c->now
				   ? e->dom_since_ns
				   : c->now;
	if (!e || !e->prev_dom_ns || e->last_dom_ns < e->prev_dom_ns ||
	    (e->last_dom_ns - e->prev_dom_ns) / NS_PER_S >= win)
		return false;
	return (c->now - st->dom_since_ns) / NS_PER_S < win;
}

/*
 * A vector already in its submitters' domain, handled off the CPU of the
 * submitter that dominates the domain, moves to that CPU (issue 14, "which
 * CPU of the domain": under threadirqs the completion then runs where the
 * submitter waits for it). Not on noise: dominance is judged on the
 * window's shares and needs IP_DOMINANT_SHARE, so a load that alternates
 * between two CPUs faster than the window moves nothing, and moving again
 * needs another CPU to dominate; dwell and max_moves hold as for any move.
 * A dominant submitter on an isolated, banned or far-node CPU moves nothing.
 */
static void dominant_rehome(struct ctx *c, int qi, struct cand *cd)
{
	const ip_cpuset *cur = irq_placement(&c->s->irqs[qi]);
	ip_cpuset elig, near;
	int cpu = cd->dom_cpu, nodes;
	char devs[64];
	struct ip_why *w;

	if (dominance_held(c, c->hist[qi], cd))
		return;
	if (cd->kind != CAND_KEEP || cd->why.code != IP_R_ALREADY_PLACED || !cd->single ||
	    cd->managed || cd->pinned || cd->banned || cd->td < 0 || cpu < 0 || cd->state < 0 ||
	    c->p->states[cd->state].n < MIN(IP_DOMINANT_MIN_CYCLES, c->cfg->window))
		return;
	domain_eligible(c, cd->td, &elig);
	near = elig;
	(void)numa_prefer(c, qi, &near, &nodes);
	if (!cpuset_test(&near, cpu) || (cpuset_count(cur) == 1 && cpuset_test(cur, cpu)) ||
	    !dominant_has_room(c, &elig, cpu, qi, cd->rate))
		return;
	cd->kind = CAND_MOVE;
	cd->dwell_applies = true;
	cd->gain = 0;
	cd->target = elig;
	cd->fixed_cpu = cpu;
	scopy(devs, sizeof(devs), cd->why.devices);
	w = vector_why(c, qi, devs, cd, IP_R_DOMINANT_CPU);
	w->cpu = cpu;
	w->share = cd->dom_share;
	w->threshold = IP_DOMINANT_SHARE;
	w->cls = c->t->domains[cd->td].cls;
	w->domain = c->t->domains[cd->td].cpus;
	w->set = *cur;
}

/* False for a line that is no candidate (then @cd is untouched). */
static bool evaluate(struct ctx *c, int qi, struct cand *cd)
{
	if (!evaluate_placement(c, qi, cd))
		return false;
	numa_rehome(c, qi, cd);
	dominant_rehome(c, qi, cd);
	move_off(c, qi, cd);
	numa_narrow(c, qi, cd);
	return true;
}

/* A candidate's place in the order of pass 2: by gain, highest first, then
 * by line; ci (its index in cands) makes the order total, as qsort()'s
 * merge sort kept equal ones before. */
struct gain_key {
	double gain;
	int idx, ci;
};

static inline bool gain_before(const struct gain_key *a, const struct gain_key *b)
{
	if (a->gain > b->gain)
		return true;
	if (a->gain < b->gain)
		return false;
	return a->idx != b->idx ? a->idx < b->idx : a->ci < b->ci;
}

/*
 * @k sorted into the order of pass 2, @tmp as large: merged bottom-up with
 * the comparison inline. Through qsort() the candidates were 2 KB apart
 * and every comparison a call: a tenth of a steady cycle at 131 vectors.
 * A settled plan's candidates are in order already: one walk.
 */
static void sort_gain_keys(struct gain_key *k, struct gain_key *tmp, int n)
{
	struct gain_key *src = k, *dst = tmp, *t;
	int i = 1;

	while (i < n && !gain_before(&k[i], &k[i - 1]))
		i++;
	if (i >= n)
		return;
	for (int w = 1; w < n; w *= 2) {
		for (int lo = 0; lo < n; lo += 2 * w) {
			int mid = MIN(lo + w, n), hi = MIN(lo + 2 * w, n), a = lo, b = mid, o = lo;

			while (a < mid && b < hi)
				dst[o++] = gain_before(&src[b], &src[a]) ? src[b++] : src[a++];
			while (a < mid)
				dst[o++] = src[a++];
			while (b < hi)
				dst[o++] = src[b++];
		}
		t = src;
		src = dst;
		dst = t;
	}
	if (src != k)
		memcpy(k, src, sizeof(*k) * n);
}

/* The candidates in the order of pass 2, into @by_gain (nr of them). */
static int order_by_gain(struct cand *cands, int nr, struct cand **by_gain)
{
	struct gain_key *k = malloc(sizeof(*k) * 2 * nr);

	if (!k)
		return -ENOMEM;
	for (int i = 0; i < nr; i++)
		k[i] = (struct gain_key){ cands[i].gain, cands[i].idx, i };
	sort_gain_keys(k, k + nr, nr);
	for (int i = 0; i < nr; i++)
		by_gain[i] = &cands[k[i].ci];
	free(k);
	return 0;
}

/*
 * The CPU of the target a move takes: that of a submitter dominating the
 * domain if it is usable (in the target), else the least loaded one off
 * the busiest submitter's core. The record says which, and why.
 */
static int move_cpu(struct ctx *c, struct cand *cd)
{
	if (cd->dom_cpu >= 0) {
		cd->why.dominant = true;
		cd->why.dom_cpu = cd->dom_cpu;
		cd->why.dom_share = cd->dom_share;
		if (!cpuset_test(&cd->target, cd->dom_cpu))
			cd->why.dom_unusable = true;
		else if (dominant_has_room(c, &cd->target, cd->dom_cpu, cd->idx, cd->rate))
			return cd->dom_cpu;
		else
			cd->why.dom_busy = true;
	}
	return choose_cpu(c, &cd->target, cd->busiest, cd->idx);
}

static void emit_move(struct ctx *c, struct cand *cd)
{
	const struct ip_irq *q = &c->s->irqs[cd->idx];
	struct ip_move *mv;
	char devs[64];
	ip_cpuset to = cd->target, fallback;
	const struct ip_irq_rate *own = c->m->irq ? &c->m->irq[cd->idx] : NULL;

	cpuset_zero(&fallback);
	if (cd->single) {
		int cpu = cd->fixed_cpu >= 0 ? cd->fixed_cpu : move_cpu(c, cd);

		if (cpu < 0)
			return;
		cpuset_zero(&to);
		cpuset_set(&to, cpu);
		cpuset_andnot(&fallback, &cd->target, &to);
		/* no room left on the device's node: the rest of the domain */
		if (cpuset_empty(&fallback) && cd->why.numa)
			cpuset_andnot(&fallback, &cd->wide, &to);
	}
	c->p->moves =
		grow(c->p->moves, &c->p->nr_moves, &c->g.moves, sizeof(*c->p->moves), &c->err);
	if (c->err)
		return;
	mv = &c->p->moves[c->p->nr_moves++];
	memset(mv, 0, sizeof(*mv));
	mv->irq = q->irq;
	scopy(mv->name, sizeof(mv->name), irq_name(q));
	ip_irq_ident_of(q, &mv->ident);
	line_devices(c, q, devs, sizeof(devs));
	scopy(mv->device, sizeof(mv->device), devs);
	mv->from = cpuset_empty(&cd->from) ? *irq_placement(q) : cd->from;
	mv->from_affinity = ip_irq_info(q)->affinity;
	mv->to = to;
	mv->fallback = fallback;
	mv->ioapic = is_ioapic(q);
	mv->domain = cpu_domain(c, cpuset_first(&to));
	mv->follows = cd->follows;
	mv->return_window_s = return_window(c);
	mv->why = cd->why;
	/* made: the guard's count starts again from this move */
	if (cd->state >= 0) {
		c->p->states[cd->state].want_since_ns = 0;
		c->p->states[cd->state].asked_ns = c->p->states[cd->state].asked_last_ns = 0;
	}
	/* Later choices this cycle see the interrupts where they will be. */
	if (cd->rate > 0) {
		int n = cpuset_count(&to);

		CPUSET_FOREACH(cpu, &to)
			if (cpu < c->t->nr_cpus) {
				c->load[cpu] += cd->rate / n;
				c->vload[cpu] += cd->rate / n;
			}
		for (int k = 0; own && k < own->nr && own->first + k < c->t->nr_cpus; k++) {
			c->load[own->first + k] -= own->percpu[k];
			c->vload[own->first + k] -= own->percpu[k];
		}
	}
	cd->moved = true;
	cd->placed = to;
}

static void add_thread(struct ctx *c, const struct ip_irq_thread *th, const ip_cpuset *to, int prio,
		       const struct ip_why *why)
{
	struct ip_thread_action *ta;

	c->p->threads = grow(c->p->threads, &c->p->nr_threads, &c->g.threads,
			     sizeof(*c->p->threads), &c->err);
	if (c->err)
		return;
	ta = &c->p->threads[c->p->nr_threads++];
	memset(ta, 0, sizeof(*ta));
	ta->pid = th->pid;
	scopy(ta->comm, sizeof(ta->comm), th->comm);
	ta->irq = th->irq;
	ta->from = th->allowed;
	ta->from_policy = th->policy;
	ta->from_priority = th->rt_priority;
	if (to) {
		ta->set_affinity = true;
		ta->to = *to;
	}
	if (prio > 0) {
		ta->set_sched = true;
		ta->policy = SCHED_FIFO;
		ta->priority = prio;
	}
	ta->why = *why;
}

/* A managed vector's thread's CPU, as move_cpu() chooses a vector's. */
static int thread_cpu(struct ctx *c, struct cand *cd)
{
	if (cd->thread_dom_cpu >= 0) {
		if (cpuset_test(&cd->thread_target, cd->thread_dom_cpu))
			return cd->thread_dom_cpu;
		cd->thread_why.dom_unusable = true;
	}
	return choose_cpu(c, &cd->thread_target, cd->thread_busiest, -1);
}

/*
 * IRQ threads follow their vector: the kernel copies the effective
 * affinity onto the thread after every change, but user-set thread
 * affinity is lost then, so this is checked every cycle.
 */
static void emit_threads(struct ctx *c, struct cand *cd)
{
	const struct ip_irq *q = &c->s->irqs[cd->idx];
	const struct ip_irq_hist *e = c->hist[cd->idx];
	const struct thr_key *k;
	struct resolved r;
	int prio, n;

	if (cd->banned)
		return;
	resolve_rules(c, q, e, &r);
	prio = r.rt_priority >= 0 ? r.rt_priority : c->cfg->rt_priority;
	k = thread_range(c, q->irq, &n);
	for (int j = 0; j < n; j++) {
		const struct ip_irq_thread *th = &c->s->threads[k[j].i];
		ip_cpuset want, want_on, have_on;
		bool aff = false, sched = false;
		int tp = prio;
		struct ip_why why;

		if (th->secondary && tp > 1)
			tp--; /* the kernel runs secondary handlers one below */
		if (cd->moved) {
			want = cd->placed;
			why_init(&why, IP_R_FOLLOWS_MOVE);
			why.irq = q->irq;
			why.set = want;
		} else if (cd->managed) {
			if (!cd->thread_direct)
				want = th->allowed;
			else if (cd->thread_single) {
				/* Stay on a single CPU already in the target. */
				if (cpuset_count(&th->allowed) == 1 &&
				    cpuset_subset(&th->allowed, &cd->thread_target))
					want = th->allowed;
				else {
					cpuset_zero(&want);
					cpuset_set(&want, thread_cpu(c, cd));
				}
			} else
				want = cd->thread_target;
			if (cd->thread_direct)
				why = cd->thread_why;
			else
				why_init(&why, IP_R_VECTOR_MANAGED);
			why.irq = q->irq;
		} else {
			want = *irq_placement(q);
			why_init(&why, IP_R_FOLLOWS);
			why.irq = q->irq;
			why.set = want;
		}
		cpuset_and(&want_on, &want, &c->t->online);
		cpuset_and(&have_on, &th->allowed, &c->t->online);
		aff = !cpuset_empty(&want_on) && !cpuset_equal(&want_on, &have_on);
		sched = tp > 0 && (th->policy != SCHED_FIFO || (int)th->rt_priority != tp);
		if (sched && !aff) {
			why_init(&why, IP_R_RT_PRIORITY);
			why.irq = q->irq;
			why.prio = tp;
			why_src(&why, r.rt_priority >= 0 ? r.rt_rule : NULL, IP_FROM_POLICY);
		}
		if (aff || sched)
			add_thread(c, th, aff ? &want_on : NULL, sched ? tp : 0, &why);
	}
}

static void emit_rq(struct ctx *c)
{
	for (int d = 0; d < c->s->storage.nr_devs; d++) {
		const struct ip_blockdev *dev = &c->s->storage.devs[d];
		const struct ip_rule *rule = NULL;
		struct ip_rq_action *ra;

		for (int k = 0; k < c->cfg->nr_dev_rules; k++) {
			const struct ip_rule *ru = &c->cfg->dev_rules[k];

			if (ru->rq_affinity >= 0 && fnmatch(ru->match, dev->name, 0) == 0)
				rule = ru;
		}
		if (!rule || rule->rq_affinity == dev->rq_affinity)
			continue;
		c->p->rq = grow(c->p->rq, &c->p->nr_rq, &c->g.rq, sizeof(*c->p->rq), &c->err);
		if (c->err)
			return;
		ra = &c->p->rq[c->p->nr_rq++];
		memset(ra, 0, sizeof(*ra));
		scopy(ra->device, sizeof(ra->device), dev->name);
		ra->from = dev->rq_affinity;
		ra->value = rule->rq_affinity;
		why_init(&ra->why, IP_R_RQ_RULE);
		why_src(&ra->why, rule, IP_FROM_RULE);
	}
}

/* ---- per-queue completion threads (irqpilot_cq) ---- */

enum ip_completion_threads ip_policy_completion_threads(const struct ip_policy_config *c,
							 const char *device,
							 const struct ip_rule **src)
{
	enum ip_completion_threads mode = c->completion_threads;
	const struct ip_rule *from = NULL;

	for (int k = 0; k < c->nr_dev_rules; k++) {
		const struct ip_rule *ru = &c->dev_rules[k];

		if (ru->completion_threads != IP_COMPLETION_INHERIT &&
		    fnmatch(ru->match, device, 0) == 0) {
			mode = ru->completion_threads;
			from = ru;
		}
	}
	if (src)
		*src = from;
	return mode;
}

static struct ip_cq_action *add_cq(struct ctx *c, const struct ip_blockdev *b, bool attach,
				   const struct ip_why *why)
{
	struct ip_cq_action *a;

	c->p->cq = grow(c->p->cq, &c->p->nr_cq, &c->g.cq, sizeof(*c->p->cq), &c->err);
	if (c->err)
		return NULL;
	a = &c->p->cq[c->p->nr_cq++];
	memset(a, 0, sizeof(*a));
	scopy(a->device, sizeof(a->device), b->name);
	a->major = b->major;
	a->minor = b->minor;
	a->attach = attach;
	a->why = *why;
	return a;
}

/* Shares of c->sub per domain into c->sh; returns the total. */
static double submit_shares(struct ctx *c)
{
	double total = 0;

	for (int d = 0; d < c->t->nr_domains; d++)
		c->sh[d] = 0;
	for (int cpu = 0; cpu < c->t->nr_cpus; cpu++) {
		int d = cpu_domain(c, cpu);

		if (c->sub[cpu] <= 0 || d < 0)
			continue;
		c->sh[d] += c->sub[cpu];
		total += c->sub[cpu];
	}
	for (int d = 0; total > 0 && d < c->t->nr_domains; d++)
		c->sh[d] /= total;
	return total;
}

static unsigned min_capacity(const struct ctx *c, const ip_cpuset *set)
{
	unsigned cap = 0;
	bool any = false;

	CPUSET_FOREACH(cpu, set) {
		int d = cpu_domain(c, cpu);

		if (d >= 0 && (!any || c->t->domains[d].capacity < cap)) {
			cap = c->t->domains[d].capacity;
			any = true;
		}
	}
	return cap;
}

/*
 * Whether completion threads should take device @d's completions. They
 * pay only where completion work cannot reach the submitters by itself
 * and would otherwise run on a slower CPU:
 *  - a vector that cannot follow: one vector with submitters in several
 *    domains, or a vector that is managed, refused its affinity (the read
 *    back shows it elsewhere) or pinned, away from its submitters;
 *  - completions that stay with the interrupt: forced IRQ threading
 *    (threadirqs, PREEMPT_RT: blk-mq never sends them to the submitter),
 *    or rq_affinity 0;
 *  - the interrupt's CPUs have less capacity than the submitters' domain.
 *    On CPUs of equal capacity the thread's extra wakeup cost more than
 *    it saved (kmod/README: -20..-37% under TCG), so it is not attached;
 * Even then it is a trial (cq_trial()): with a single vector, that vector's
 * CPU still takes every interrupt (and, threaded, runs its handler), and
 * whether moving only the completion work off it pays depends on the
 * machine: on how heavy the completion work is against the interrupt. AHCI
 * on a throttled vCPU under TCG lost 20-45% (and the trial detaches it);
 * a device with costly completions can gain. Only a measurement tells.
 */
/*
 * Whether blk-mq completes on the interrupt's CPUs @handled although the
 * submitters are in domain @D, with rq_affinity 1: blk_mq_complete_need_ipi()
 * (block/blk-mq.c) sends no IPI when the two CPUs share a cache; since 6.9
 * (af550e4c9682) only when their capacities are equal too. Measured on an
 * arm64 guest, little CPU 0 and big CPU 3 under one cache
 * (tests/vm/scenarios/rq-affinity-capacity.sh): 6.1 completed 100% on CPU 0,
 * 6.12 100% on CPU 3. An unknown kernel version is taken as a current one.
 */
static bool completes_on_shared_cache(const struct ctx *c, const ip_cpuset *handled, int D)
{
	int llc = c->t->domains[D].llc;

	if (!c->t->kernel_version || c->t->kernel_version >= IP_KERNEL_VERSION(6, 9, 0) || llc < 0 ||
	    cpuset_empty(handled))
		return false;
	for (int cpu = 0; cpu < c->t->nr_cpus; cpu++)
		if (cpuset_test(handled, cpu) && c->t->cpus[cpu].llc != llc)
			return false;
	return true;
}

static bool cq_auto_need(struct ctx *c, int d, struct ip_why *why)
{
	const struct ip_blockdev *b = &c->s->storage.devs[d];
	const struct ip_dev_rate *dr = c->m->dev ? &c->m->dev[d] : NULL;
	size_t at = 0;

	why_init(why, IP_R_CQ_NO_VECTOR_AWAY);
	if (!dr || !dr->submit || dr->submit_total <= 0) {
		why_init(why, IP_R_CQ_NO_SUBMISSIONS);
		return false;
	}
	for (int v = 0; v < b->nr_vectors; v++) {
		const struct ip_irq *q = ip_snapshot_irq_next(c->s, b->vectors[v].irq, &at);
		const struct ip_irq_hist *e;
		struct resolved r;
		const struct ip_vec_serves *qv;
		ip_cpuset handled;
		bool admin, refused, managed;
		double total, away = 0, loc = 0;
		int nd = 0, D, qi;
		enum ip_stuck stuck = IP_STUCK_NONE;
		enum ip_stay stay = IP_STAY_NONE;

		if (!q || b->vectors[v].admin)
			continue;
		qi = (int)(q - c->s->irqs);
		e = c->hist[qi];
		qv = vector_queue_cpus(c, d, line_vector(ip_irq_info(q), d, v), &admin);
		for (int cpu = 0; cpu < c->t->nr_cpus; cpu++)
			c->sub[cpu] = (!qv || cpuset_test(&qv->cpus, cpu)) ? dr->submit[cpu] : 0;
		total = submit_shares(c);
		if (total <= 0)
			continue;
		handled_by_vector(c, qi, &handled);
		for (int k = 0; k < c->t->nr_domains; k++) {
			loc += c->sh[k] * c->hd[k];
			nd += c->sh[k] >= c->cfg->move_threshold;
		}
		away = 1 - loc;
		D = dominant_domain(c, c->sh);
		resolve_rules(c, q, e, &r);
		managed = ip_irq_info(q)->managed != IP_MANAGED_NO || (e && e->managed != IP_MANAGED_NO);
		refused = e && e->placed && e->have_effective &&
			  !cpuset_intersects(&e->effective, &e->placement) && !is_ioapic(q);
		if (managed)
			stuck = IP_STUCK_MANAGED;
		else if (refused)
			stuck = IP_STUCK_REFUSED;
		else if (r.have_pin)
			stuck = r.pin_rule ? IP_STUCK_PIN_RULE : IP_STUCK_PIN_IRQCTL;
		else if (nd >= 2)
			stuck = IP_STUCK_SPREAD;
		if (!stuck || away + EPS < c->cfg->move_threshold || D < 0)
			continue;
		if (c->t->forced_threading)
			stay = IP_STAY_THREADIRQS;
		else if (b->rq_affinity == 0)
			stay = IP_STAY_RQ_AFFINITY0;
		else if (b->rq_affinity == 1 && completes_on_shared_cache(c, &handled, D))
			stay = IP_STAY_SHARED_CACHE;
		if (!stay)
			why_init(why, IP_R_CQ_BLKMQ_COMPLETES);
		else if (min_capacity(c, &handled) >= c->t->domains[D].capacity)
			why_init(why, IP_R_CQ_NOT_SLOWER);
		else
			why_init(why, IP_R_CQ_NEEDED);
		why->irq = q->irq;
		why->stuck = stuck;
		why->stay = stay;
		why->count = b->rq_affinity;
		why->set = handled;
		why->domain = c->t->domains[D].cpus;
		why->cls = c->t->domains[D].cls;
		why->share = away;
		if (why->code == IP_R_CQ_NEEDED)
			return true;
	}
	return false;
}

static int dev_rt_priority(const struct ctx *c, const char *dev, const struct ip_rule **src)
{
	int prio = c->cfg->rt_priority;

	*src = NULL;
	for (int k = 0; k < c->cfg->nr_dev_rules; k++) {
		const struct ip_rule *ru = &c->cfg->dev_rules[k];

		if (ru->rt_priority >= 0 && fnmatch(ru->match, dev, 0) == 0) {
			prio = ru->rt_priority;
			*src = ru;
		}
	}
	return prio;
}

/* Completion thread @t as the IRQ thread record add_thread() takes. */
static void cq_thread_record(const struct ip_cq_thread *t, const struct ip_blockdev *b,
			     struct ip_irq_thread *th)
{
	char num[12];

	memset(th, 0, sizeof(*th));
	th->pid = t->pid;
	/* the module's name for it (kmod: "ipcq/%s:%u") */
	scopy(th->comm, sizeof(th->comm), "ipcq/");
	scopy(th->comm + 5, sizeof(th->comm) - 5, t->disk[0] ? t->disk : b->name);
	scopy(th->comm + strlen(th->comm), sizeof(th->comm) - strlen(th->comm), ":");
	scopy(th->comm + strlen(th->comm), sizeof(th->comm) - strlen(th->comm), fmt_uint(num, t->hwq));
	th->allowed = t->allowed;
	th->policy = t->policy;
	th->rt_priority = t->rt_priority;
}

static void mark_completion(struct ctx *c, const struct ip_blockdev *b, unsigned hwq)
{
	struct ip_thread_action *ta = &c->p->threads[c->p->nr_threads - 1];

	ta->completion = true;
	scopy(ta->device, sizeof(ta->device), b->name);
	ta->hwq = hwq;
}

/*
 * A stall: a request waited past the module's stall_ms for thread @i, so
 * something of higher priority held its CPU. It moves to the least loaded
 * other usable CPU of that CPU's domain (the dwell then keeps it there);
 * a second stall within IP_CQ_STALL_WINDOW_S detaches the device instead
 * (stalled_again()).
 */
static void place_stalled(struct ctx *c, int i)
{
	const struct ip_cq_thread *t = &c->s->cq[i];
	const struct ip_blockdev *b = &c->s->storage.devs[t->dev];
	int busy = cpuset_count(&t->allowed) == 1 ? cpuset_first(&t->allowed) : t->last_cpu;
	int dom = cpu_domain(c, busy), to = -1;
	struct ip_irq_thread th;
	struct ip_why why;
	ip_cpuset set;

	why_init(&why, IP_R_STALL);
	why.hwq = t->hwq;
	why.cpu = busy;
	why.wait_ms = t->stall_wait_ns / 1e6;
	if (dom >= 0) {
		domain_eligible(c, dom, &set);
		cpuset_clear(&set, busy);
		to = cpuset_empty(&set) ? -1 : least_loaded(c, &set, -1, -1);
	}
	if (to < 0) {
		why.code = IP_R_NOTE_STALL_NO_TARGET;
		add_note(c, b->name, &why);
		return;
	}
	cq_thread_record(t, b, &th);
	cpuset_zero(&set);
	cpuset_set(&set, to);
	add_thread(c, &th, &set, 0, &why);
	if (!c->err)
		mark_completion(c, b, t->hwq);
}

/* The stalled thread of device @d whose stall is the second within the
 * window, or NULL. */
static const struct ip_cq_thread *stalled_again(const struct ctx *c, int d,
						const struct ip_cqdev_hist *e)
{
	for (int i = 0; e && e->last_stall_ns && i < c->s->nr_cq; i++) {
		const struct ip_cq_thread *t = &c->s->cq[i];

		if (t->dev == d && t->stalled_ns && t->stalled_ns >= e->last_stall_ns &&
		    t->stalled_ns - e->last_stall_ns < IP_CQ_STALL_WINDOW_S * (uint64_t)NS_PER_S)
			return t;
	}
	return NULL;
}

/* The thread of one hw queue goes to the domain submitting to that queue. */
static void place_cq_thread(struct ctx *c, int i)
{
	const struct ip_cq_thread *t = &c->s->cq[i];
	const struct ip_blockdev *b = &c->s->storage.devs[t->dev];
	const struct ip_cq_hist *e = ip_history_cq_find(c->h, t->pid);
	struct ip_irq_thread th;
	struct ip_cq_rate rate = { 0 };
	ip_cpuset want, elig, have_on;
	const struct ip_rule *src;
	struct ip_why why;
	double total, cur = 0, gain;
	int D, busiest = -1, prio = dev_rt_priority(c, b->name, &src);
	bool aff = false, sched;

	cq_thread_record(t, b, &th);
	why_init(&why, IP_R_RT_PRIORITY);
	why.prio = prio;
	why_src(&why, src, IP_FROM_POLICY);

	if (c->m->prev)
		ip_model_cq_rate(c->m, i, &rate, c->sub);
	if (!rate.have || rate.submit_total <= 0) {
		/* New thread: the device's submitters on the queue's CPUs. */
		const struct ip_dev_rate *dr = c->m->dev ? &c->m->dev[t->dev] : NULL;
		const ip_cpuset *qc = NULL;

		for (int k = 0; k < b->nr_queues; k++)
			if (b->queues[k].index == (int)t->hwq)
				qc = &b->queues[k].cpus;
		for (int cpu = 0; cpu < c->t->nr_cpus; cpu++)
			c->sub[cpu] = dr && dr->submit && (!qc || cpuset_test(qc, cpu)) ?
					      dr->submit[cpu] : 0;
	}
	total = submit_shares(c);
	D = total > 0 ? dominant_domain(c, c->sh) : -1;
	if (D >= 0)
		domain_eligible(c, D, &elig);
	if (D >= 0 && !cpuset_empty(&elig)) {
		for (int cpu = 0; cpu < c->t->nr_cpus; cpu++)
			if (cpu_domain(c, cpu) == D && (busiest < 0 || c->sub[cpu] > c->sub[busiest]))
				busiest = cpu;
		handled_from_set(c, &t->allowed, NULL);
		for (int k = 0; k < c->t->nr_domains; k++)
			cur += c->sh[k] * c->hd[k];
		gain = c->sh[D] - cur;
		if (cpuset_subset(&t->allowed, &elig) &&
		    (c->cfg->granularity == IP_GRAN_DOMAIN || cpuset_count(&t->allowed) == 1)) {
			aff = false; /* already there */
		} else if (e && moved_within(c, e->last_move_ns, c->cfg->dwell_s)) {
			aff = false;
		} else if (gain + EPS >= c->cfg->move_threshold && gain > EPS) {
			if (c->cfg->granularity == IP_GRAN_CPU) {
				cpuset_zero(&want);
				cpuset_set(&want, choose_cpu(c, &elig, busiest, -1));
			} else {
				want = elig;
			}
			cpuset_and(&have_on, &t->allowed, &c->t->online);
			aff = !cpuset_equal(&want, &have_on);
			why_init(&why, IP_R_QUEUE_SUBMITTERS);
			why.share = c->sh[D];
			why.hwq = t->hwq;
			why.cls = c->t->domains[D].cls;
			why.domain = c->t->domains[D].cpus;
		}
	}
	sched = prio > 0 && t->have_sched &&
		(t->policy != SCHED_FIFO || (int)t->rt_priority != prio);
	if (!aff && !sched)
		return;
	add_thread(c, &th, aff ? &want : NULL, sched ? prio : 0, &why);
	if (!c->err)
		mark_completion(c, b, t->hwq);
}

/*
 * Whether the threads pay off is measured, not assumed: an automatic
 * attach is a trial over at least dwell_s and IP_CQ_TRIAL_CYCLES cycles,
 * against the device's I/O rate before it. Returns true when the device
 * is dealt with for this cycle (observed only, or judged).
 */
static bool cq_trial(struct ctx *c, int d, const struct ip_blockdev *b,
		     const struct ip_cqdev_hist *e, bool attached)
{
	const struct ip_dev_rate *dr = c->m->dev ? &c->m->dev[d] : NULL;
	struct ip_cq_obs *o;
	struct ip_why why;
	double since, avg;

	c->p->cq_obs = grow(c->p->cq_obs, &c->p->nr_cq_obs, &c->g.cq_obs, sizeof(*c->p->cq_obs),
			    &c->err);
	if (c->err)
		return true;
	o = &c->p->cq_obs[c->p->nr_cq_obs++];
	memset(o, 0, sizeof(*o));
	scopy(o->device, sizeof(o->device), b->name);
	o->ios = dr ? dr->ios : 0;
	o->attached = attached;
	if (!attached || !e || !e->trial || !e->attached_by_us)
		return false;
	since = c->now >= e->attached_ns ? (c->now - e->attached_ns) / NS_PER_S : 0;
	if (since < c->cfg->dwell_s || e->trial_n < IP_CQ_TRIAL_CYCLES)
		return true;
	avg = e->trial_sum / e->trial_n;
	if (e->ios_before <= 0 || avg >= IP_CQ_TRIAL_KEEP * e->ios_before) {
		o->verdict = 1;
		why_init(&why, IP_R_NOTE_CQ_KEPT);
		why.ios = avg;
		why.ios_before = e->ios_before;
		add_note(c, b->name, &why);
		return true;
	}
	o->verdict = -1;
	why_init(&why, IP_R_CQ_TRIAL_FAILED);
	why.ios = avg;
	why.ios_before = e->ios_before;
	add_cq(c, b, false, &why);
	return true;
}

/* Whatever the mode: a domain where a completion thread stalled again
 * cannot host the threads. */
static void cq_detach_stalled(struct ctx *c, const struct ip_blockdev *b,
			      const struct ip_cq_thread *again)
{
	struct ip_why act;

	why_init(&act, IP_R_CQ_STALLED);
	act.hwq = again->hwq;
	act.cpu = again->last_cpu;
	act.wait_ms = again->stall_wait_ns / 1e6;
	act.limit_s = IP_CQ_STALL_WINDOW_S;
	act.hold_s = IP_CQ_STALL_HOLD_S;
	add_cq(c, b, false, &act);
}

/* auto wants the threads: attached as a trial, unless held back after a
 * failed one or not yet measured without them. */
static void cq_auto_attach(struct ctx *c, const struct ip_blockdev *b,
			   const struct ip_cqdev_hist *e, const struct ip_why *why)
{
	struct ip_why act;

	if (e && e->hold_until_ns > c->now) {
		/* no countdown: the same note is logged once */
		act = e->hold;
		act.detail = e->hold.code;
		act.code = IP_R_NOTE_CQ_HELD;
		add_note(c, b->name, &act);
		return;
	}
	/* A trial judged against one noisy cycle errs both ways:
	 * measure the device unattached for as long as the trial. */
	if (!e || e->before_n < IP_CQ_TRIAL_CYCLES)
		return;
	act = *why;
	act.detail = why->code;
	act.code = IP_R_CQ_TRIAL;
	if (!c->err) {
		struct ip_cq_action *a = add_cq(c, b, true, &act);

		if (a)
			a->trial = true;
	}
}

/* auto no longer wants the threads it attached: detached after the dwell. */
static void cq_auto_detach(struct ctx *c, const struct ip_blockdev *b,
			   const struct ip_cqdev_hist *e, const struct ip_why *why)
{
	double since = c->now >= e->attached_ns ? (c->now - e->attached_ns) / NS_PER_S : 0;
	struct ip_why act = *why;

	act.detail = why->code;
	act.code = IP_R_CQ_AUTO_DETACH;
	if (since >= c->cfg->dwell_s)
		add_cq(c, b, false, &act);
}

/* completion_threads = auto: a running trial is judged first, then need. */
static void cq_auto(struct ctx *c, int d, const struct ip_blockdev *b,
		    const struct ip_cqdev_hist *e, bool attached)
{
	struct ip_why why;
	bool need;

	if (!c->have_rates)
		return;
	if (cq_trial(c, d, b, e, attached))
		return;
	need = cq_auto_need(c, d, &why);
	if (need && !attached)
		cq_auto_attach(c, b, e, &why);
	else if (!need && attached && e && e->attached_by_us && why.code != IP_R_CQ_NO_SUBMISSIONS)
		cq_auto_detach(c, b, e, &why);
}

/* Whether device @d gets irqpilot_cq attached or detached this cycle. */
static void emit_cq_device(struct ctx *c, int d)
{
	const struct ip_blockdev *b = &c->s->storage.devs[d];
	const struct ip_cqdev_hist *e = ip_history_cqdev_find(c->h, b->name);
	const struct ip_rule *src;
	enum ip_completion_threads mode = ip_policy_completion_threads(c->cfg, b->name, &src);
	bool attached = ip_snapshot_cq_count(c->s, d) > 0;
	const struct ip_cq_thread *again = stalled_again(c, d, e);
	struct ip_why act;

	if (again) {
		cq_detach_stalled(c, b, again);
		return;
	}
	why_init(&act, IP_R_CQ_MODE);
	act.count = (int)mode;
	why_src(&act, src, IP_FROM_POLICY);
	if (mode == IP_COMPLETION_NO) {
		if (attached)
			add_cq(c, b, false, &act);
		return;
	}
	if (mode == IP_COMPLETION_YES) {
		if (!attached)
			add_cq(c, b, true, &act);
		return;
	}
	cq_auto(c, d, b, e, attached);
}

/* Whether the plan detaches @device's completion threads (then they need no place). */
static bool cq_detaching(const struct ctx *c, const char *device)
{
	for (int k = 0; k < c->p->nr_cq; k++)
		if (!c->p->cq[k].attach && strcmp(c->p->cq[k].device, device) == 0)
			return true;
	return false;
}

static void place_cq_threads(struct ctx *c)
{
	for (int i = 0; i < c->s->nr_cq && !c->err; i++) {
		const struct ip_cq_thread *t = &c->s->cq[i];

		if (t->dev < 0 || cq_detaching(c, c->s->storage.devs[t->dev].name))
			continue;
		if (t->stalled_ns)
			place_stalled(c, i);
		else
			place_cq_thread(c, i);
	}
}

static void emit_cq(struct ctx *c)
{
	if (!c->s->have_cq)
		return;
	for (int d = 0; d < c->s->storage.nr_devs && !c->err; d++)
		emit_cq_device(c, d);
	place_cq_threads(c);
}

/* Each line's history, or NULL, asked once per line rather than once per question. */
static void line_histories(struct ctx *c)
{
	size_t at = 0; /* both are sorted by IRQ: walked side by side */

	for (int i = 0; c->h && i < c->s->nr_irqs; i++) {
		bool found;
		size_t k = IP_SORTED_NEXT(c->h->irqs, c->h->nr, irq, c->s->irqs[i].irq, &at, &found);

		c->hist[i] = found ? &c->h->irqs[k] : NULL;
	}
}

static int ctx_alloc(struct ctx *c)
{
	const struct ip_model *m = c->m;

	c->load = calloc(c->t->nr_cpus, sizeof(double));
	c->vload = calloc(c->t->nr_cpus, sizeof(double));
	c->sub = calloc(c->t->nr_cpus, sizeof(double));
	c->sh = calloc(c->t->nr_domains + 1, sizeof(double));
	c->hd = calloc(c->t->nr_domains + 1, sizeof(double));
	c->csh = calloc(c->t->nr_cpus, sizeof(double));
	c->hist = calloc(c->s->nr_irqs + 1, sizeof(*c->hist));
	c->thr = malloc((c->s->nr_threads + 1) * sizeof(*c->thr));
	if (!c->load || !c->vload || !c->sub || !c->sh || !c->hd || !c->csh || !c->hist ||
	    !c->thr)
		return -ENOMEM;
	for (int i = 0; i < c->s->nr_threads; i++)
		c->thr[i] = (struct thr_key){ c->s->threads[i].irq, i };
	ip_sort(c->thr, c->s->nr_threads, sizeof(*c->thr), cmp_thr_key);
	line_histories(c);
	for (int cpu = 0; cpu < c->t->nr_cpus; cpu++)
		c->load[cpu] = (m->cpu_irq ? m->cpu_irq[cpu] : 0) +
			       (m->cpu_softirq ? m->cpu_softirq[cpu] : 0);
	/* Only tracked lines have per-CPU rates; the rest is c->load's. */
	for (int i = 0; m->irq && i < m->cur->nr_irqs; i++)
		for (int k = 0; k < m->irq[i].nr && m->irq[i].first + k < c->t->nr_cpus; k++)
			c->vload[m->irq[i].first + k] += m->irq[i].percpu[k];
	return 0;
}

/* Online, not isolated, nohz_full or banned: by the topology's sets and
 * by each CPU's own flags, which either source may carry. */
static void eligible_cpus(struct ctx *c)
{
	const struct ip_topology *t = c->t;

	cpuset_andnot(&c->eligible, &t->online, &t->isolated);
	cpuset_andnot(&c->eligible, &c->eligible, &t->nohz_full);
	cpuset_andnot(&c->eligible, &c->eligible, &c->cfg->banned);
	for (int cpu = 0; cpu < t->nr_cpus; cpu++)
		if (t->cpus[cpu].isolated || t->cpus[cpu].nohz_full || !t->cpus[cpu].online)
			cpuset_clear(&c->eligible, cpu);
}

/*
 * A kernel-managed storage vector without an IRQ thread, pin or ban: the
 * decision is evaluate_placement()'s kept record (keep_managed()) and, its
 * submissions known, its state, and nothing else of it can move. Both are
 * made here without a candidate, which cost them as much again (a
 * candidate's 2 KB, the NUMA, dominance and move-off passes, the thread
 * passes): at 64 CPUs x 2 NVMe drives they are 128 of 131 vectors. The
 * kept record waits in c->keep for emit_vectors(), which gives it the
 * place the candidate had. False: a line for evaluate().
 */
static bool keep_threadless(struct ctx *c, int qi)
{
	const struct ip_irq *q = &c->s->irqs[qi];
	const struct ip_irq_info *info = ip_irq_info(q);
	const struct ip_irq_hist *e = c->hist[qi];
	enum ip_managed_why mw = line_managed(info, e);
	struct resolved r;
	double total;

	if (mw == IP_MANAGED_NO || info->nr_devs <= 0 || (e && e->have_pin) ||
	    irq_threads(c, q->irq) > 0)
		return false;
	resolve_rules(c, q, e, &r);
	if (r.ban || r.have_pin)
		return false;
	c->keep[c->nr_keep++] = (struct threadless){ qi, mw, !(e && e->managed_explained) };
	/* as evaluate_placement() gives it, cand_init()'s rate */
	if (submissions_unknown(c, qi, NULL, &total) == IP_R_NONE)
		add_state(c, q->irq, trickle(c, total, c->m->irq ? c->m->irq[qi].total : 0));
	return true;
}

/* Candidates are few (storage vectors and named ones) on a machine
 * of thousands of IRQs, and a candidate carries several CPU sets:
 * keep only those, not one slot per IRQ line. */
static struct cand *collect_candidates(struct ctx *c, int *nr)
{
	struct cand *cands = NULL;
	int cap = 0;

	/* A candidate is almost always a tracked line, and one is some 1.5 KB
	 * (its CPU sets): sized to them, not grown by doubling, which at 1,024
	 * CPUs held 384 slots for 131 vectors at the realloc. */
	for (int i = 0; i < c->s->nr_irqs; i++)
		cap += c->s->irqs[i].tracked;
	if (cap && (!(cands = malloc(sizeof(*cands) * cap)) ||
		    !(c->keep = malloc(sizeof(*c->keep) * cap)))) {
		c->err = -ENOMEM;
		return cands;
	}
	/* A line evaluated has a state at most: room for those of the tracked
	 * ones at once, where doubling from 8 reallocated five times a cycle
	 * at 131 vectors, as much as 5,000 instructions when they moved. */
	c->p->states = reserve(c->p->states, c->p->nr_states, &c->g.states, cap, sizeof(*c->p->states),
			       &c->err);
	*nr = 0;
	for (int i = 0; i < c->s->nr_irqs && !c->err; i++) {
		struct cand spare, *cd;

		/* A line without info was not tracked when sampled, so it has
		 * no storage device and no /proc/irq/N read: evaluate_placement()
		 * turns it down whatever its rules. Asked anyway, the untracked
		 * lines were most of a steady cycle's policy work at 500 IRQs. */
		if (!c->s->irqs[i].info)
			continue;
		/* c->keep, sized to the tracked lines as cands is, has room */
		if (c->s->irqs[i].tracked && keep_threadless(c, i))
			continue;
		/* evaluated in place: a copy of each cost as much as clearing
		 * it; chosen only here, for the lines that get this far */
		cd = *nr < cap ? &cands[*nr] : &spare;
		if (!evaluate(c, i, cd))
			continue;
		if (cd == &spare) {
			int ncap = cap ? cap + cap / 2 + 1 : 16;
			struct cand *n = realloc(cands, sizeof(*n) * ncap);

			if (!n) {
				c->err = -ENOMEM;
				return cands;
			}
			cands = n;
			cap = ncap;
			cands[*nr] = spare;
		}
		(*nr)++;
	}
	return cands;
}

/* A pin by number whose IRQ is gone has nothing to place: said once
 * (the log keeps notes once), where a write would fail every cycle. */
static void note_gone_pins(struct ctx *c)
{
	for (size_t i = 0; c->h && i < c->h->nr && !c->err; i++) {
		const struct ip_irq_hist *e = &c->h->irqs[i];
		struct ip_why w;

		if (!e->have_pin || ip_snapshot_irq(c->s, e->irq))
			continue;
		why_init(&w, IP_R_NOTE_PIN_GONE);
		w.irq = e->irq;
		w.set = e->pin;
		add_note(c, NULL, &w);
	}
}

/*
 * Kept for the dwell: the vector moved less than dwell_s ago. Not when
 * every CPU we placed it on has gone offline since: the kernel moved it
 * itself (irq_migrate_all_off_this_cpu(), kernel/irq/cpuhotplug.c, breaks
 * an affinity with no online CPU left to all online CPUs, the vector to
 * CPU 0), and the placement the dwell holds is gone. A submitter on CPU 7
 * that went offline 3 s after the vector followed it, moving to CPU 6,
 * had its completions on little CPU 0 for the rest of the dwell: 7 cycles
 * (dwell 10 s) instead of the next one.
 */
static bool dwell_keeps(struct ctx *c, const struct cand *cd, const struct ip_irq *q)
{
	const struct ip_irq_hist *e = c->hist[cd->idx];
	bool in_dwell = cd->dwell_applies && e && moved_within(c, e->last_move_ns, c->cfg->dwell_s) &&
			!(e->placed && !cpuset_intersects(&e->placement, &c->t->online));
	struct ip_why why;

	if (!in_dwell)
		return false;
	why_init(&why, IP_R_DWELL);
	why.irq = q->irq;
	scopy(why.devices, sizeof(why.devices), cd->why.devices);
	why.since_s = (c->now - e->last_move_ns) / NS_PER_S;
	why.limit_s = c->cfg->dwell_s;
	add_kept(c, q, false, true, &why);
	return true;
}

/* Kept for the budget: max_moves vectors moved already this cycle. */
static bool budget_keeps(struct ctx *c, const struct cand *cd, const struct ip_irq *q, int moves)
{
	struct ip_why why;

	if (moves < c->cfg->max_moves)
		return false;
	why_init(&why, IP_R_BUDGET);
	why.irq = q->irq;
	scopy(why.devices, sizeof(why.devices), cd->why.devices);
	why.count = c->cfg->max_moves;
	add_kept(c, q, false, true, &why);
	return true;
}

/* Whether threadless vectors @a and @b are kept for the same reason: the
 * same managed why and first telling, and the same devices. */
static bool threadless_alike(const struct ctx *c, const struct threadless *a,
			     const struct threadless *b)
{
	const struct ip_irq_info *x = ip_irq_info(&c->s->irqs[a->idx]);
	const struct ip_irq_info *y = ip_irq_info(&c->s->irqs[b->idx]);

	return a->mw == b->mw && a->explain == b->explain && x->nr_devs == y->nr_devs &&
	       memcmp(x->devs, y->devs, sizeof(x->devs[0]) * MIN((size_t)x->nr_devs, ARRAY_SIZE(x->devs))) == 0;
}

/*
 * The kept record of a threadless managed vector, as keep_managed() and
 * emit_vectors() make a candidate's. A device's vectors come one after
 * another and differ in their number alone: the why of the one before
 * is copied, where writing each afresh (the 712-byte why cleared, the
 * devices named) was a sixth of a 64-CPU cycle's policy with 2 NVMe drives.
 */
static void emit_threadless(struct ctx *c, const struct threadless *t)
{
	const struct ip_irq *q = &c->s->irqs[t->idx];
	bool alike = c->tl_kept >= 0 && c->tl_kept == c->p->nr_kept - 1 && threadless_alike(c, c->tl_of, t);
	struct ip_kept *k = new_kept(c, q, true, t->explain);

	if (!k)
		return;
	if (alike) {
		k->why = c->p->kept[c->tl_kept].why;
		k->why.irq = q->irq;
	} else {
		/* written in place, the devices last: why_about() clears the why */
		managed_reason(c, t->idx, "", &k->why, t->mw, t->explain, false);
		line_devices(c, q, k->why.devices, sizeof(k->why.devices));
	}
	c->tl_kept = c->p->nr_kept - 1;
	c->tl_of = t;
}

/* Whether c->keep's @t goes before candidate @cd in pass 2: a kept
 * candidate's gain is 0, and gain_before() orders the rest by line. */
static bool threadless_before(const struct threadless *t, const struct cand *cd)
{
	if (0 > cd->gain)
		return true;
	if (0 < cd->gain)
		return false;
	return t->idx < cd->idx;
}

/* Pass 2: the candidates, by gain, kept or moved within dwell and budget. */
static void emit_vectors(struct ctx *c, struct cand **by_gain, int nr)
{
	int moves = 0, t = 0;

	/* At most one kept record a vector: room for them all, where
	 * doubling from 8 copied those of 131 vectors (2 KB each) five times. */
	c->p->kept = reserve(c->p->kept, c->p->nr_kept, &c->g.kept, (size_t)nr + c->nr_keep,
			     sizeof(*c->p->kept), &c->err);

	for (int i = 0; i < nr && !c->err; i++) {
		struct cand *cd = by_gain[i];
		const struct ip_irq *q = &c->s->irqs[cd->idx];

		for (; t < c->nr_keep && !c->err && threadless_before(&c->keep[t], cd); t++)
			emit_threadless(c, &c->keep[t]);
		if (cd->kind == CAND_KEEP) {
			add_kept(c, q, cd->managed, !cd->managed || cd->explain, &cd->why);
			continue;
		}
		if (cd->kind != CAND_MOVE)
			continue;
		/* off: no dwell, no budget: the CPU is not the policy's to use */
		if (!cd->off && (dwell_keeps(c, cd, q) || budget_keeps(c, cd, q, moves)))
			continue;
		emit_move(c, cd);
		if (cd->moved)
			moves++;
	}
	for (; t < c->nr_keep && !c->err; t++)
		emit_threadless(c, &c->keep[t]);
}

int ip_policy_decide(const struct ip_model *m, const struct ip_policy_config *cfg,
		     const struct ip_history *h, uint64_t now_ns, struct ip_plan *out)
{
	struct ctx c = {0};
	struct cand *cands = NULL, **by_gain = NULL;
	int nr = 0;

	memset(out, 0, sizeof(*out));
	if (!m || !m->cur || !cfg)
		return -EINVAL;
	c.m = m;
	c.s = m->cur;
	c.t = &m->cur->topo;
	c.cfg = cfg;
	c.h = h;
	c.now = now_ns;
	c.p = out;
	c.have_rates = m->prev && m->interval_s > 0;
	c.tl_kept = -1;
	if (c.t->nr_cpus <= 0)
		return 0;

	c.err = ctx_alloc(&c);
	if (c.err)
		goto out;
	eligible_cpus(&c);
	if (!c.have_rates) {
		struct ip_why w;

		why_init(&w, IP_R_NOTE_FIRST_SAMPLE);
		add_note(&c, NULL, &w);
	}
	cands = collect_candidates(&c, &nr);
	if (c.err)
		goto out;
	note_gone_pins(&c);
	if (nr && (!(by_gain = malloc(sizeof(*by_gain) * nr)) ||
		   order_by_gain(cands, nr, by_gain) < 0)) {
		c.err = -ENOMEM;
		goto out;
	}
	emit_vectors(&c, by_gain, nr);
	for (int i = 0; i < nr && !c.err; i++)
		emit_threads(&c, by_gain[i]);
	if (!c.err)
		emit_rq(&c);
	if (!c.err)
		emit_cq(&c);
out:
	free(c.load);
	free(c.vload);
	free(c.sub);
	free(c.sh);
	free(c.hd);
	free(c.csh);
	free(c.hist);
	free(c.thr);
	free(c.keep);
	free(by_gain);
	free(cands);
	if (c.err) {
		ip_plan_free(out);
		return c.err;
	}
	return 0;
}
