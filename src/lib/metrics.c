// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's metrics: counters added up from each cycle's model and
 * results, the last cycle's gauges. No text here: report.c renders.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/macro.h"
#include "irqpilot/metrics.h"

void ip_metrics_init(struct ip_metrics *mx)
{
	memset(mx, 0, sizeof(*mx));
}

void ip_metrics_free(struct ip_metrics *mx)
{
	for (size_t i = 0; i < mx->nr_devdom; i++)
		free(mx->devdom[i].domain);
	free(mx->devdom);
	free(mx->cq);
	free(mx->dev);
	for (int d = 0; d < mx->nr_domlist; d++)
		free(mx->domlist[d].text);
	free(mx->domlist);
	ip_metrics_init(mx);
}

void ip_metrics_move(struct ip_metrics *mx, const struct ip_move *m)
{
	if ((unsigned)m->why.code < IP_R_COUNT)
		mx->moves[m->why.code]++;
}

static struct ip_metrics_devdom *devdom_get(struct ip_metrics *mx, const char *dev, const char *dom)
{
	struct ip_metrics_devdom *nv;

	for (size_t i = 0; i < mx->nr_devdom; i++)
		if (!strcmp(mx->devdom[i].device, dev) && !strcmp(mx->devdom[i].domain, dom))
			return &mx->devdom[i];
	nv = realloc(mx->devdom, sizeof(*nv) * (mx->nr_devdom + 1));
	if (!nv)
		return NULL;
	mx->devdom = nv;
	nv = &mx->devdom[mx->nr_devdom];
	memset(nv, 0, sizeof(*nv));
	snprintf(nv->device, sizeof(nv->device), "%s", dev);
	if (!(nv->domain = strdup(dom)))
		return NULL;
	mx->nr_devdom++;
	return nv;
}

static struct ip_metrics_cq *cq_get(struct ip_metrics *mx, const char *disk, unsigned hwq)
{
	struct ip_metrics_cq *nv;

	for (size_t i = 0; i < mx->nr_cq; i++)
		if (!strcmp(mx->cq[i].disk, disk) && mx->cq[i].hwq == hwq)
			return &mx->cq[i];
	nv = realloc(mx->cq, sizeof(*nv) * (mx->nr_cq + 1));
	if (!nv)
		return NULL;
	mx->cq = nv;
	nv = &mx->cq[mx->nr_cq++];
	memset(nv, 0, sizeof(*nv));
	snprintf(nv->disk, sizeof(nv->disk), "%s", disk);
	nv->hwq = hwq;
	return nv;
}

/* What a cumulative count of the module added since the last look: a new
 * thread (another pid) or a count that went down (the module reloaded)
 * started again from zero. */
static uint64_t grew(uint64_t now, uint64_t *seen, bool same)
{
	uint64_t d = same && now >= *seen ? now - *seen : now;

	*seen = now;
	return d;
}

/* Device @i's interrupts (hit) and submissions (sub) this cycle, per
 * domain. @counted (one per line of the snapshot) holds the last device
 * that counted the line. */
static void dev_by_domain(const struct ip_model *m, int i, double *hit, double *sub, int *counted)
{
	const struct ip_snapshot *s = m->cur;
	const struct ip_blockdev *b = &s->storage.devs[i];
	int n = s->topo.nr_cpus, nd = s->topo.nr_domains;
	size_t at = 0;

	for (int d = 0; d < nd; d++)
		hit[d] = sub[d] = 0;
	for (int v = 0; v < b->nr_vectors; v++) {
		const struct ip_irq *q = ip_snapshot_irq_next(s, b->vectors[v].irq, &at);
		const struct ip_irq_rate *r;

		/* a vector listed twice (one per queue on a shared line) counts
		 * once: marked, not looked for among the vectors before it,
		 * which was vectors squared a device each cycle */
		if (!q || counted[q - s->irqs] == i)
			continue;
		counted[q - s->irqs] = i;
		r = &m->irq[q - s->irqs];
		for (int k = 0; k < r->nr && r->first + k < n; k++) {
			int d = s->topo.cpus[r->first + k].domain;

			if (d >= 0 && d < nd)
				hit[d] += r->percpu[k] * m->interval_s;
		}
	}
	for (int c = 0; m->dev[i].submit && c < n; c++) {
		int d = s->topo.cpus[c].domain;

		if (d >= 0 && d < nd)
			sub[d] += m->dev[i].submit[c] * m->interval_s;
	}
}

/* Domain @d's CPU list as text, NULL on ENOMEM. */
static const char *domain_list(struct ip_metrics *mx, const struct ip_topology *t, int d)
{
	struct ip_metrics_domlist *e;

	if (d >= mx->nr_domlist) {
		e = realloc(mx->domlist, sizeof(*e) * t->nr_domains);
		if (!e)
			return NULL;
		memset(e + mx->nr_domlist, 0, sizeof(*e) * (t->nr_domains - mx->nr_domlist));
		mx->domlist = e;
		mx->nr_domlist = t->nr_domains;
	}
	e = &mx->domlist[d];
	if (e->text && cpuset_equal(&e->cpus, &t->domains[d].cpus))
		return e->text;
	free(e->text);
	e->cpus = t->domains[d].cpus;
	e->text = strdup(cpuset_str(&e->cpus));
	return e->text;
}

static int update_devices(struct ip_metrics *mx, const struct ip_model *m)
{
	const struct ip_snapshot *s = m->cur;
	int nd = s->topo.nr_domains, ret = 0;
	double *hit = calloc(nd ? nd : 1, sizeof(double)), *sub = calloc(nd ? nd : 1, sizeof(double));
	struct ip_metrics_dev *dev = calloc(s->storage.nr_devs ? s->storage.nr_devs : 1, sizeof(*dev));
	int *counted = malloc(sizeof(*counted) * (s->nr_irqs ? s->nr_irqs : 1));
	size_t nr_dev = 0;

	if (!hit || !sub || !dev || !counted) {
		ret = -ENOMEM;
		goto out;
	}
	for (int k = 0; k < s->nr_irqs; k++)
		counted[k] = -1;
	for (int i = 0; i < s->storage.nr_devs; i++) {
		const char *name = s->storage.devs[i].name;
		double H = 0, S = 0, loc = 0;

		dev_by_domain(m, i, hit, sub, counted);
		for (int d = 0; d < nd; d++) {
			struct ip_metrics_devdom *e;
			const char *dom;

			H += hit[d];
			S += sub[d];
			/* a domain that never saw either stays out, as in show devices */
			if (hit[d] <= 0 && sub[d] <= 0)
				continue;
			dom = domain_list(mx, &s->topo, d);
			if (!dom) {
				ret = -ENOMEM;
				continue;
			}
			e = devdom_get(mx, name, dom);
			if (!e) {
				ret = -ENOMEM;
				continue;
			}
			/* the kernel counts whole interrupts: the rate times its
			 * interval gives the count back up to rounding */
			e->interrupts += (uint64_t)llround(hit[d]);
			e->submissions += sub[d];
		}
		if (H <= 0 || S <= 0)
			continue;
		/* as ip_report_locality() has it for one vector */
		for (int d = 0; d < nd; d++)
			loc += (sub[d] / S) * (hit[d] / H);
		snprintf(dev[nr_dev].device, sizeof(dev[nr_dev].device), "%s", name);
		dev[nr_dev++].locality = MIN(1.0, MAX(0.0, loc));
	}
	free(mx->dev);
	mx->dev = dev;
	mx->nr_dev = nr_dev;
	dev = NULL;
out:
	free(hit);
	free(sub);
	free(dev);
	free(counted);
	return ret;
}

static int update_cq(struct ip_metrics *mx, const struct ip_model *m)
{
	const struct ip_snapshot *s = m->cur;
	int ret = 0;

	mx->cq_loaded = s->have_cq;
	for (size_t i = 0; i < mx->nr_cq; i++)
		mx->cq[i].present = false;
	for (int i = 0; i < s->nr_cq; i++) {
		const struct ip_cq_thread *t = &s->cq[i];
		struct ip_metrics_cq *e = cq_get(mx, t->disk, t->hwq);
		struct ip_cq_rate r = { 0 };
		bool same;

		if (!e) {
			ret = -ENOMEM;
			continue;
		}
		same = e->pid == t->pid;
		e->pid = t->pid;
		e->completions += grew(t->completions, &e->seen_completions, same);
		e->wakeups += grew(t->wakeups, &e->seen_wakeups, same);
		e->stalls += grew(t->stalls, &e->seen_stalls, same);
		e->max_wait_ns = t->max_wait_ns;
		e->present = true;
		if (m->prev)
			ip_model_cq_rate(m, i, &r, NULL);
		e->have_rate = r.have;
		e->rate = r.have ? r.completions : 0;
	}
	return ret;
}

int ip_metrics_update(struct ip_metrics *mx, const struct ip_step *st)
{
	int ret = 0, r;

	mx->cycles++;
	for (int i = 0; i < st->results.n; i++) {
		int e = -st->results.r[i].err;

		if (e > 0 && e < IP_METRICS_ERRNO_MAX)
			mx->apply_errors[e]++;
	}
	if (st->model.prev && (r = update_devices(mx, &st->model)) < 0)
		ret = r;
	if ((r = update_cq(mx, &st->model)) < 0)
		ret = r;
	return ret;
}
