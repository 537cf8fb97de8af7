// SPDX-License-Identifier: GPL-2.0-or-later
/* derive: rates between two snapshots, and who a line's vector is. No I/O. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "irqpilot/macro.h"
#include "irqpilot/model.h"
#include "irqpilot/procfs.h"
#include "irqpilot/sorted.h"

/*
 * A counter that went down either wrapped at 32 bits (kstat_irqs counts
 * are unsigned int) or belongs to an IRQ that was freed and requested
 * again, as a host reset does under the same number and name: a wrap went
 * from near 2^32 to near 0, forward by less than half the range (serial
 * number arithmetic, RFC 1982). A smaller drop, from 5,000,000 to 300, is
 * a restart from zero; taken for a wrap it was 4e9 interrupts a second.
 */
static uint64_t delta(uint64_t prev, uint64_t cur, bool same_owner)
{
	if (cur >= prev)
		return cur - prev;
	if (same_owner && prev <= UINT32_MAX && prev - cur > UINT32_MAX / 2)
		return cur + (UINT64_C(1) << 32) - prev;
	return cur;
}

static double *zalloc(int n)
{
	return calloc(n > 0 ? n : 1, sizeof(double));
}

/* Line @c's count on its @k-th CPU since @p's (the same line when @same). */
static uint64_t cpu_delta(const struct ip_snapshot *prev, const struct ip_irq *p, const struct ip_irq *c,
			  int k, int *j, bool same)
{
	const struct ip_cpu_count *e = &c->percpu[k];
	uint64_t before = 0;

	/* both by CPU, ascending; a CPU without a count now has none to
	 * give (a count that went down restarts) */
	while (same && *j < p->nr_percpu && p->percpu[*j].cpu < e->cpu)
		(*j)++;
	if (same && *j < p->nr_percpu && p->percpu[*j].cpu == e->cpu && (int)e->cpu < prev->topo.nr_cpus)
		before = p->percpu[*j].count;
	return delta(before, e->count, same);
}

/* The rates of the CPUs tracked line @c fired on, first to last. */
static int derive_irq_cpus(const struct ip_snapshot *prev, const struct ip_irq *p, const struct ip_irq *c,
			   bool same, int nr_cpus, double dt, struct ip_irq_rate *r)
{
	int first = -1, last = -1, j = 0;

	for (int k = 0; k < c->nr_percpu && (int)c->percpu[k].cpu < nr_cpus; k++)
		if (cpu_delta(prev, p, c, k, &j, same)) {
			if (first < 0)
				first = (int)c->percpu[k].cpu;
			last = (int)c->percpu[k].cpu;
		}
	if (first < 0)
		return 0;
	r->percpu = calloc(last - first + 1, sizeof(*r->percpu));
	if (!r->percpu)
		return -ENOMEM;
	r->first = first;
	r->nr = last - first + 1;
	j = 0;
	for (int k = 0; k < c->nr_percpu && (int)c->percpu[k].cpu <= last; k++) {
		uint64_t n = cpu_delta(prev, p, c, k, &j, same);

		if ((int)c->percpu[k].cpu >= first)
			r->percpu[c->percpu[k].cpu - first] = (float)((double)n / dt);
	}
	return 0;
}

static int derive_irqs(const struct ip_snapshot *prev, const struct ip_snapshot *cur, struct ip_model *m,
		       double dt)
{
	int nr_cpus = cur->topo.nr_cpus;
	size_t at = 0; /* both snapshots list their lines by IRQ */

	m->irq = calloc(cur->nr_irqs ? cur->nr_irqs : 1, sizeof(*m->irq));
	if (!m->irq)
		return -ENOMEM;
	for (int i = 0; prev && dt > 0 && i < cur->nr_irqs; i++) {
		const struct ip_irq *c = &cur->irqs[i];
		bool found;
		size_t pi = IP_SORTED_NEXT(prev->irqs, prev->nr_irqs, irq, c->irq, &at, &found);
		const struct ip_irq *p = found ? &prev->irqs[pi] : NULL;
		/* between full scans both hold the same names (sample.c) */
		bool same = p && (p->actions == c->actions || strcmp(p->actions, c->actions) == 0);
		struct ip_irq_rate *r = &m->irq[i];

		/* A reused number started counting again from zero. */
		r->total = (double)delta(same ? p->total : 0, c->total, same) / dt;
		if (c->tracked && derive_irq_cpus(prev, p, c, same, nr_cpus, dt, r) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* @sum: each count adds up several counters (a CPU's interrupts of all
 * lines), and one of them that restarted takes the sum down by its old
 * count: what the CPU handled this interval is not known, and the whole
 * sum is not it. */
static int percpu_rate(const uint64_t *prev, int prev_n, const uint64_t *cur, int n, double dt, bool sum,
		       double **out)
{
	double *r = zalloc(n);

	if (!r)
		return -ENOMEM;
	*out = r;
	if (!prev || !cur || dt <= 0)
		return 0;
	for (int k = 0; k < n && k < prev_n; k++) {
		uint64_t v = delta(prev[k], cur[k], true);

		r[k] = sum && cur[k] < prev[k] && v == cur[k] ? 0 : (double)v / dt;
	}
	return 0;
}

static int derive_devs(const struct ip_snapshot *prev, const struct ip_snapshot *cur, struct ip_model *m,
		       double dt)
{
	int nr_cpus = cur->topo.nr_cpus, pn = prev ? prev->topo.nr_cpus : 0;

	m->dev = calloc(cur->storage.nr_devs ? cur->storage.nr_devs : 1, sizeof(*m->dev));
	if (!m->dev)
		return -ENOMEM;
	for (int i = 0; i < cur->storage.nr_devs; i++) {
		const struct ip_devcount *c = cur->dc ? &cur->dc[i] : NULL;
		const struct ip_devcount *p = NULL;
		struct ip_dev_rate *r = &m->dev[i];
		int ret;

		for (int j = 0; prev && prev->dc && j < prev->storage.nr_devs; j++)
			if (strcmp(prev->storage.devs[j].name, cur->storage.devs[i].name) == 0)
				p = &prev->dc[j];
		r->submit_src = c ? c->submit_src : IP_SRC_NONE;
		r->complete_src = c ? c->complete_src : IP_SRC_NONE;
		ret = percpu_rate(p ? p->submit : NULL, pn, c ? c->submit : NULL, nr_cpus, dt, false,
				  &r->submit);
		if (ret < 0)
			return ret;
		ret = percpu_rate(p ? p->complete : NULL, pn, c ? c->complete : NULL, nr_cpus, dt, false,
				  &r->complete);
		if (ret < 0)
			return ret;
		for (int k = 0; k < nr_cpus; k++) {
			r->submit_total += r->submit[k];
			r->complete_total += r->complete[k];
		}
		if (p && c && dt > 0)
			r->ios = (double)delta(p->ios, c->ios, true) / dt;
	}
	return 0;
}

/* The sampler lists a snapshot's threads by pid (scan_threads()); one
 * made otherwise, as a test's, is searched in full. */
static bool threads_by_pid(const struct ip_snapshot *s)
{
	for (int i = 1; i < s->nr_threads; i++)
		if (s->threads[i - 1].pid >= s->threads[i].pid)
			return false;
	return true;
}

/*
 * @c's thread in @prev: the same pid and IRQ (a pid reused by another IRQ's
 * thread is not it), the last such where pids repeat. Searched when @sorted:
 * each thread walking all of them was threads squared a cycle.
 */
static const struct ip_irq_thread *prev_thread(const struct ip_snapshot *prev, bool sorted,
					       const struct ip_irq_thread *c)
{
	const struct ip_irq_thread *p = NULL;
	int lo = 0, hi = prev->nr_threads;

	if (!sorted) {
		for (int j = 0; j < prev->nr_threads; j++)
			if (prev->threads[j].pid == c->pid && prev->threads[j].irq == c->irq)
				p = &prev->threads[j];
		return p;
	}
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (prev->threads[mid].pid < c->pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < prev->nr_threads && prev->threads[lo].pid == c->pid && prev->threads[lo].irq == c->irq)
		p = &prev->threads[lo];
	return p;
}

static int derive_threads(const struct ip_snapshot *prev, const struct ip_snapshot *cur, struct ip_model *m,
			  double dt)
{
	long hz = sysconf(_SC_CLK_TCK);
	bool prev_sorted;

	if (hz <= 0)
		hz = 100;
	m->thread = calloc(cur->nr_threads ? cur->nr_threads : 1, sizeof(*m->thread));
	if (!m->thread)
		return -ENOMEM;
	prev_sorted = prev && threads_by_pid(prev);
	for (int i = 0; i < cur->nr_threads; i++) {
		const struct ip_irq_thread *c = &cur->threads[i];
		const struct ip_irq_thread *p = NULL;
		struct ip_thread_rate *r = &m->thread[i];
		const struct ip_irq *q;
		uint64_t wakeups;

		r->wakeups_per_irq = -1;
		if (prev)
			p = prev_thread(prev, prev_sorted, c);
		if (!p || dt <= 0)
			continue;
		r->cpu_pct = 100.0 * (double)delta(p->utime + p->stime, c->utime + c->stime, false) / hz / dt;
		/* Each voluntary switch ends one run of the thread: a wakeup. */
		wakeups = delta(p->vcsw, c->vcsw, false);
		r->wakeups = (double)wakeups / dt;
		q = ip_snapshot_irq(cur, c->irq);
		if (q && m->irq[q - cur->irqs].total > 0)
			r->wakeups_per_irq = r->wakeups / m->irq[q - cur->irqs].total;
	}
	return 0;
}

int ip_model_derive(const struct ip_snapshot *prev, const struct ip_snapshot *cur, struct ip_model *m,
		    struct ip_diag *d)
{
	int nr_cpus = cur->topo.nr_cpus, pn = prev ? prev->topo.nr_cpus : 0;
	double dt = 0;
	int ret;

	memset(m, 0, sizeof(*m));
	/* CPUs came or went between the two (a hot-plug): each line's total
	 * lost or regained those CPUs' counts, which read as a 32-bit wrap
	 * (4e9 a second) or as all a returning CPU ever handled, in one
	 * interval. No rates across it, as after a first sample. */
	if (prev && !cpuset_equal(&prev->counted, &cur->counted)) {
		prev = NULL;
		pn = 0;
	}
	m->cur = cur;
	m->prev = prev;
	if (prev) {
		if (cur->time_ns <= prev->time_ns) {
			ip_model_free(m);
			return ip_diag_set(d, -EINVAL, "samples out of order: %llu ns after %llu ns",
					   (unsigned long long)cur->time_ns,
					   (unsigned long long)prev->time_ns);
		}
		dt = (double)(cur->time_ns - prev->time_ns) / 1e9;
	}
	m->interval_s = dt;
	ret = percpu_rate(prev ? prev->irq_load : NULL, pn, cur->irq_load, nr_cpus, dt, true, &m->cpu_irq);
	if (ret >= 0)
		ret = percpu_rate(prev ? prev->block_softirq : NULL, pn, cur->block_softirq, nr_cpus, dt,
				  false, &m->cpu_softirq);
	if (ret >= 0)
		ret = derive_irqs(prev, cur, m, dt);
	if (ret >= 0)
		ret = derive_devs(prev, cur, m, dt);
	if (ret >= 0)
		ret = derive_threads(prev, cur, m, dt);
	if (ret < 0) {
		ip_model_free(m);
		return ip_diag_set(d, ret, "derive: out of memory");
	}
	return 0;
}

void ip_model_free(struct ip_model *m)
{
	if (!m)
		return;
	/* only tracked lines have per-CPU rates: at 500 IRQs a free(NULL)
	 * for each of the others was 2,000 instructions a cycle */
	if (m->irq && m->cur)
		for (int i = 0; i < m->cur->nr_irqs; i++)
			if (m->irq[i].percpu)
				free(m->irq[i].percpu);
	if (m->dev && m->cur)
		for (int i = 0; i < m->cur->storage.nr_devs; i++) {
			free(m->dev[i].submit);
			free(m->dev[i].complete);
		}
	free(m->irq);
	free(m->dev);
	free(m->thread);
	free(m->cpu_irq);
	free(m->cpu_softirq);
	memset(m, 0, sizeof(*m));
}

void ip_model_submit_cpus(const struct ip_model *m, ip_cpuset *out)
{
	cpuset_zero(out);
	for (int i = 0; m->dev && i < m->cur->storage.nr_devs; i++)
		for (int k = 0; m->dev[i].submit && k < m->cur->topo.nr_cpus; k++)
			if (m->dev[i].submit[k] > 0)
				cpuset_set(out, k);
}

double ip_model_queue_submit(const struct ip_model *m, int dev, int q, double *by_cpu_out)
{
	const struct ip_blockdev *b;
	double sum = 0;
	int nr_cpus;

	if (!m->dev || dev < 0 || dev >= m->cur->storage.nr_devs)
		return 0;
	b = &m->cur->storage.devs[dev];
	nr_cpus = m->cur->topo.nr_cpus;
	for (int k = 0; k < nr_cpus; k++) {
		/* blk-mq sends a CPU's submissions to the queue whose cpu_list
		 * holds it */
		bool in = q < 0 || q >= b->nr_queues || cpuset_test(&b->queues[q].cpus, k);
		double v = in ? m->dev[dev].submit[k] : 0;

		if (by_cpu_out)
			by_cpu_out[k] += v;
		sum += v;
	}
	return sum;
}

/* ---- who a line is ---- */

void ip_irq_ident_set(struct ip_irq_ident *id, const char *chip, const char *hwirq,
		      const char *actions)
{
	memset(id, 0, sizeof(*id));
	id->have_hw = chip && hwirq;
	if (id->have_hw) {
		snprintf(id->chip, sizeof(id->chip), "%s", chip);
		snprintf(id->hwirq, sizeof(id->hwirq), "%s", hwirq);
	}
	id->have_actions = actions != NULL;
	if (actions)
		snprintf(id->actions, sizeof(id->actions), "%s", actions);
}

void ip_irq_ident_of(const struct ip_irq *q, struct ip_irq_ident *id)
{
	ip_irq_ident_set(id, q->info ? q->info->chip : NULL, q->info ? q->info->hwirq : NULL,
			 q->actions ? q->actions : "");
}

/* The hwirq without the flow handler's name show_interrupts() appends on
 * x86 ("524288-edge"): irq_set_irq_type() at a request_irq() may switch a
 * live vector's handler (edge to fasteoi), and it stays the same vector. */
static size_t hwirq_len(const char *hwirq)
{
	return strspn(hwirq, "0123456789");
}

static bool share_an_action(const char *a, const char *b)
{
	char abuf[IP_IDENT_ACTIONS_MAX], bbuf[IP_IDENT_ACTIONS_MAX];
	const char *an[IP_IDENT_ACTIONS_MAX / 2], *bn[IP_IDENT_ACTIONS_MAX / 2];
	int na = ip_split_actions(a, abuf, sizeof(abuf), an, (int)ARRAY_SIZE(an));
	int nb = ip_split_actions(b, bbuf, sizeof(bbuf), bn, (int)ARRAY_SIZE(bn));

	for (int i = 0; i < na; i++)
		for (int k = 0; k < nb; k++)
			if (strcmp(an[i], bn[k]) == 0)
				return true;
	return false;
}

/*
 * Chip and hwirq name the vector in its interrupt domain: another of
 * either at the same number is another vector, whatever its name. The
 * actions (show_interrupts() prints every action's name) name who asked
 * for it, and change while the vector lives: a driver of a shared line
 * (legacy INTx) adds or frees its action beside the others', and a line
 * whose last action was freed shows none yet stays the same vector (a
 * legacy IRQ's descriptor is not freed with it). So they say "another
 * vector" only when both lists have names and none in common; that also
 * tells a reuse where no chip or hwirq is known (an untracked line).
 */
bool ip_irq_ident_reused(const struct ip_irq_ident *was, const struct ip_irq_ident *now)
{
	if (was->have_hw && now->have_hw) {
		size_t n = hwirq_len(was->hwirq);

		if (strcmp(was->chip, now->chip) != 0 || n != hwirq_len(now->hwirq) ||
		    memcmp(was->hwirq, now->hwirq, n) != 0)
			return true;
	}
	if (!was->have_actions || !now->have_actions || !was->actions[0] || !now->actions[0])
		return false;
	return !share_an_action(was->actions, now->actions);
}

const char *ip_irq_ident_str(const struct ip_irq_ident *id, char *buf, size_t size)
{
	const char *actions = id->have_actions && id->actions[0] ? id->actions : "(no action)";

	if (id->have_hw)
		snprintf(buf, size, "%s %s %s", id->chip[0] ? id->chip : "-", id->hwirq, actions);
	else
		snprintf(buf, size, "%s", actions);
	return buf;
}
