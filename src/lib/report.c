// SPDX-License-Identifier: GPL-2.0-or-later
/* report: the model as JSON and as text. */
#include <stdlib.h>
#include <string.h>

#include "irqpilot/report.h"

static const char *bus_name(enum ip_bus b)
{
	switch (b) {
	case IP_BUS_PCI:
		return "pci";
	case IP_BUS_PLATFORM:
		return "platform";
	case IP_BUS_VIRTIO_MMIO:
		return "virtio-mmio";
	default:
		return "other";
	}
}

static const char *map_name(enum ip_vec_map m)
{
	switch (m) {
	case IP_VEC_MAP_NAME:
		return "name";
	case IP_VEC_MAP_ORDER:
		return "order";
	default:
		return "all";
	}
}

const char *ip_report_discovery(const struct ip_blockdev *b, char *buf, size_t size)
{
	char tried[160];

	ip_vec_routes_str(b->routes_tried, tried, sizeof(tried));
	if (!ip_blockdev_unsteerable(b)) {
		snprintf(buf, size, "vectors found by %s (tried %s)", ip_vec_route_name(b->route), tried);
		return buf;
	}
	snprintf(buf, size,
		 "%s (%s on %s): no IRQ vector found (tried %s%s%s), so its completions cannot be "
		 "steered; please run 'irqpilotd --capture DIR' and attach DIR to a bug report",
		 b->name, b->driver, b->bus_id, tried, b->route_note[0] ? "; " : "", b->route_note);
	return buf;
}

void ip_report_unsteerable_text(FILE *f, const struct ip_storage *s, const char *indent)
{
	char buf[640];

	for (int i = 0; i < s->nr_devs; i++)
		if (ip_blockdev_unsteerable(&s->devs[i]))
			fprintf(f, "%swarning: %s\n", indent,
				ip_report_discovery(&s->devs[i], buf, sizeof(buf)));
}

static const char *irq_name(const struct ip_model *m, unsigned irq)
{
	const struct ip_irq *i = ip_snapshot_irq(m->cur, irq);

	return i ? i->actions : "?";
}

/* Only non-zero CPUs: a 1,024-CPU machine stays readable. */
static void json_by_cpu(struct ip_json *j, const char *key, const double *v, int n)
{
	char k[16];

	ip_json_object_begin(j, key);
	for (int c = 0; v && c < n; c++) {
		if (v[c] <= 0)
			continue;
		snprintf(k, sizeof(k), "%d", c);
		ip_json_double(j, k, v[c]);
	}
	ip_json_object_end(j);
}

void ip_report_json_cpus(struct ip_json *j, const struct ip_model *m)
{
	const struct ip_topology *t = &m->cur->topo;

	ip_json_object_begin(j, "cpus");
	ip_json_int(j, "nr_cpus", t->nr_cpus);
	ip_json_cpuset(j, "possible", &t->possible);
	ip_json_cpuset(j, "online", &t->online);
	ip_json_cpuset(j, "isolated", &t->isolated);
	ip_json_cpuset(j, "nohz_full", &t->nohz_full);
	ip_json_string(j, "capacity_source", ip_cap_source_name(t->cap_source));
	ip_json_bool(j, "forced_threading", t->forced_threading);
	ip_json_array_begin(j, "cpu");
	for (int c = 0; c < t->nr_cpus; c++) {
		const struct ip_cpu *cpu = &t->cpus[c];

		if (!cpuset_test(&t->possible, c))
			continue;
		ip_json_object_begin(j, NULL);
		ip_json_int(j, "cpu", c);
		ip_json_bool(j, "online", cpu->online);
		ip_json_bool(j, "isolated", cpu->isolated);
		ip_json_int(j, "domain", cpu->domain);
		ip_json_uint(j, "capacity", cpu->capacity);
		ip_json_cpuset(j, "smt", &cpu->smt);
		ip_json_int(j, "cluster", cpu->cluster);
		ip_json_int(j, "llc", cpu->llc);
		ip_json_int(j, "package", cpu->package);
		ip_json_int(j, "node", cpu->node);
		ip_json_int(j, "freq_policy", cpu->freq_policy);
		ip_json_double(j, "irq_rate", m->cpu_irq[c]);
		ip_json_double(j, "block_softirq_rate", m->cpu_softirq[c]);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
	ip_json_object_end(j);

	ip_json_array_begin(j, "domains");
	for (int i = 0; i < t->nr_domains; i++) {
		const struct ip_domain *dm = &t->domains[i];

		ip_json_object_begin(j, NULL);
		ip_json_int(j, "id", dm->id);
		ip_json_string(j, "class", ip_cap_class_name(dm->cls));
		ip_json_cpuset(j, "cpus", &dm->cpus);
		ip_json_uint(j, "capacity", dm->capacity);
		ip_json_int(j, "llc", dm->llc);
		ip_json_int(j, "cluster", dm->cluster);
		ip_json_int(j, "package", dm->package);
		ip_json_int(j, "node", dm->node);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
}

void ip_report_json_devices(struct ip_json *j, const struct ip_model *m)
{
	const struct ip_storage *s = &m->cur->storage;
	int n = m->cur->topo.nr_cpus;

	ip_json_array_begin(j, "devices");
	for (int i = 0; i < s->nr_devs; i++) {
		const struct ip_blockdev *b = &s->devs[i];
		const struct ip_dev_rate *r = &m->dev[i];

		ip_json_object_begin(j, NULL);
		ip_json_string(j, "name", b->name);
		ip_json_uint(j, "major", b->major);
		ip_json_uint(j, "minor", b->minor);
		ip_json_string(j, "driver", b->driver);
		ip_json_string(j, "bus", bus_name(b->bus));
		ip_json_string(j, "bus_id", b->bus_id);
		ip_json_int(j, "rq_affinity", b->rq_affinity);
		ip_json_bool(j, "rotational", b->rotational);
		ip_json_int(j, "numa_node", b->numa_node);
		ip_json_string(j, "route", ip_vec_route_name(b->route));
		ip_json_array_begin(j, "routes_tried");
		for (int k = 1; k < IP_ROUTE_COUNT; k++)
			if (b->routes_tried & (1u << k))
				ip_json_string(j, NULL, ip_vec_route_name((enum ip_vec_route)k));
		ip_json_array_end(j);
		ip_json_string(j, "route_note", b->route_note[0] ? b->route_note : NULL);
		if (ip_blockdev_unsteerable(b)) {
			char w[640];

			ip_json_string(j, "warning", ip_report_discovery(b, w, sizeof(w)));
		} else {
			ip_json_null(j, "warning");
		}
		ip_json_array_begin(j, "queues");
		for (int q = 0; q < b->nr_queues; q++) {
			const struct ip_hwqueue *hq = &b->queues[q];

			ip_json_object_begin(j, NULL);
			ip_json_int(j, "index", hq->index);
			ip_json_cpuset(j, "cpus", &hq->cpus);
			if (hq->vector >= 0 && hq->vector < b->nr_vectors)
				ip_json_uint(j, "irq", b->vectors[hq->vector].irq);
			else
				ip_json_null(j, "irq");
			ip_json_object_end(j);
		}
		ip_json_array_end(j);
		ip_json_array_begin(j, "vectors");
		for (int v = 0; v < b->nr_vectors; v++) {
			ip_json_object_begin(j, NULL);
			ip_json_uint(j, "irq", b->vectors[v].irq);
			ip_json_string(j, "name", irq_name(m, b->vectors[v].irq));
			ip_json_int(j, "queue", b->vectors[v].queue);
			ip_json_bool(j, "admin", b->vectors[v].admin);
			ip_json_string(j, "map", map_name(b->vectors[v].map));
			ip_json_string(j, "route", ip_vec_route_name(b->vectors[v].route));
			if (b->vectors[v].dt_index >= 0)
				ip_json_int(j, "dt_index", b->vectors[v].dt_index);
			else
				ip_json_null(j, "dt_index");
			ip_json_object_end(j);
		}
		ip_json_array_end(j);
		ip_json_object_begin(j, "submit");
		ip_json_string(j, "source", ip_count_source_name(r->submit_src));
		ip_json_double(j, "total", r->submit_total);
		json_by_cpu(j, "by_cpu", r->submit, n);
		ip_json_object_end(j);
		ip_json_object_begin(j, "complete");
		ip_json_string(j, "source", ip_count_source_name(r->complete_src));
		ip_json_double(j, "total", r->complete_total);
		json_by_cpu(j, "by_cpu", r->complete, n);
		ip_json_object_end(j);
		ip_json_double(j, "ios_rate", r->ios);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
}

void ip_report_json_irqs(struct ip_json *j, const struct ip_model *m)
{
	const struct ip_snapshot *s = m->cur;

	ip_json_int(j, "nr_irqs", s->nr_irqs);
	ip_json_array_begin(j, "irqs");
	for (int i = 0; i < s->nr_irqs; i++) {
		const struct ip_irq *q = &s->irqs[i];
		const struct ip_irq_info *info = ip_irq_info(q);

		if (!q->tracked)
			continue;
		ip_json_object_begin(j, NULL);
		ip_json_uint(j, "irq", q->irq);
		ip_json_string(j, "name", q->actions);
		ip_json_string(j, "chip", info->chip);
		ip_json_string(j, "hwirq", info->hwirq);
		if (info->have_proc)
			ip_json_cpuset(j, "affinity", &info->affinity);
		else
			ip_json_null(j, "affinity");
		if (info->have_effective)
			ip_json_cpuset(j, "effective", &info->effective);
		else
			ip_json_null(j, "effective");
		ip_json_int(j, "node", info->node);
		ip_json_bool(j, "managed", info->managed != IP_MANAGED_NO);
		if (info->managed != IP_MANAGED_NO)
			ip_json_string(j, "managed_reason", ip_managed_why_str(info->managed));
		ip_json_array_begin(j, "devices");
		for (int k = 0; k < info->nr_devs; k++)
			ip_json_string(j, NULL, s->storage.devs[info->devs[k]].name);
		ip_json_array_end(j);
		ip_json_double(j, "rate", m->irq[i].total);
		json_by_cpu(j, "by_cpu", m->irq[i].percpu, s->topo.nr_cpus);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
}

void ip_report_json_cq(struct ip_json *j, const struct ip_model *m)
{
	const struct ip_snapshot *s = m->cur;

	ip_json_array_begin(j, "completion_threads");
	for (int i = 0; i < s->nr_cq; i++) {
		const struct ip_cq_thread *t = &s->cq[i];
		struct ip_cq_rate r;

		ip_model_cq_rate(m, i, &r, NULL);
		ip_json_object_begin(j, NULL);
		ip_json_string(j, "device", t->dev >= 0 ? s->storage.devs[t->dev].name : t->disk);
		ip_json_uint(j, "queue", t->hwq);
		ip_json_int(j, "pid", t->pid);
		ip_json_cpuset(j, "cpus", &t->allowed);
		if (r.have)
			ip_json_double(j, "completions_per_s", r.completions);
		else
			ip_json_null(j, "completions_per_s");
		if (r.wakeups_per_completion >= 0)
			ip_json_double(j, "wakeups_per_completion", r.wakeups_per_completion);
		else
			ip_json_null(j, "wakeups_per_completion");
		ip_json_double(j, "max_wait_us", t->max_wait_ns / 1000.0);
		ip_json_uint(j, "stalls", t->stalls);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
}

void ip_report_json_threads(struct ip_json *j, const struct ip_model *m)
{
	const struct ip_snapshot *s = m->cur;

	ip_json_array_begin(j, "irq_threads");
	for (int i = 0; i < s->nr_threads; i++) {
		const struct ip_irq_thread *t = &s->threads[i];
		const struct ip_thread_rate *r = &m->thread[i];

		ip_json_object_begin(j, NULL);
		ip_json_int(j, "pid", t->pid);
		ip_json_string(j, "comm", t->comm);
		ip_json_uint(j, "irq", t->irq);
		ip_json_cpuset(j, "allowed", &t->allowed);
		ip_json_string(j, "policy", t->policy == 1 ? "fifo" : t->policy == 2 ? "rr" : "other");
		ip_json_uint(j, "priority", t->rt_priority);
		ip_json_int(j, "last_cpu", t->last_cpu);
		ip_json_double(j, "cpu_pct", r->cpu_pct);
		ip_json_double(j, "wakeups_per_s", r->wakeups);
		if (r->wakeups_per_irq >= 0)
			ip_json_double(j, "wakeups_per_irq", r->wakeups_per_irq);
		else
			ip_json_null(j, "wakeups_per_irq");
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
	ip_report_json_cq(j, m);
}

void ip_report_model_json(struct ip_json *j, const char *key, const struct ip_model *m,
			  const char *submit_source)
{
	ip_json_object_begin(j, key);
	ip_json_uint(j, "time_ns", m->cur->time_ns);
	ip_json_double(j, "interval_s", m->interval_s);
	ip_json_string(j, "submit_source", submit_source);
	ip_report_json_cpus(j, m);
	ip_report_json_devices(j, m);
	ip_report_json_irqs(j, m);
	ip_report_json_threads(j, m);
	ip_json_object_end(j);
}

/* ---- text ------------------------------------------------------------ */

static void text_rates(FILE *f, const char *label, const double *v, int n, double total)
{
	bool any = false;

	fprintf(f, "    %s %.0f/s", label, total);
	for (int c = 0; v && c < n; c++) {
		if (v[c] < 0.5)
			continue;
		fprintf(f, "%s cpu%d %.0f (%.0f%%)", any ? "," : ":", c, v[c],
			total > 0 ? 100.0 * v[c] / total : 0);
		any = true;
	}
	fputc('\n', f);
}

void ip_report_model_text(FILE *f, const struct ip_model *m, const char *submit_source)
{
	const struct ip_snapshot *s = m->cur;
	const struct ip_topology *t = &s->topo;
	int n = t->nr_cpus;

	fprintf(f, "CPUs: %d possible, online %s", cpuset_count(&t->possible), cpuset_str(&t->online));
	if (!cpuset_empty(&t->isolated))
		fprintf(f, ", isolated %s", cpuset_str(&t->isolated));
	if (!cpuset_empty(&t->nohz_full))
		fprintf(f, ", nohz_full %s", cpuset_str(&t->nohz_full));
	fprintf(f, "; capacity from %s%s\n", ip_cap_source_name(t->cap_source),
		t->forced_threading ? "; forced IRQ threading" : "");
	fprintf(f, "Domains:\n");
	for (int i = 0; i < t->nr_domains; i++)
		fprintf(f, "  %d %-11s cpus %-12s capacity %u\n", t->domains[i].id,
			ip_cap_class_name(t->domains[i].cls), cpuset_str(&t->domains[i].cpus),
			t->domains[i].capacity);

	fprintf(f, "Storage devices:%s\n", s->storage.nr_devs ? "" : " none backed by hardware");
	for (int i = 0; i < s->storage.nr_devs; i++) {
		const struct ip_blockdev *b = &s->storage.devs[i];
		const struct ip_dev_rate *r = &m->dev[i];

		fprintf(f, "  %s: %s on %s %s, rq_affinity %d, %d hw queue%s\n", b->name, b->driver,
			bus_name(b->bus), b->bus_id, b->rq_affinity, b->nr_queues,
			b->nr_queues == 1 ? "" : "s");
		{
			char disc[640];

			fprintf(f, "    %s%s\n", ip_blockdev_unsteerable(b) ? "warning: " : "",
				ip_report_discovery(b, disc, sizeof(disc)));
		}
		for (int q = 0; q < b->nr_queues; q++) {
			const struct ip_hwqueue *hq = &b->queues[q];

			fprintf(f, "    queue %d cpus %s", hq->index, cpuset_str(&hq->cpus));
			if (hq->vector >= 0 && hq->vector < b->nr_vectors)
				fprintf(f, " -> irq %u", b->vectors[hq->vector].irq);
			fputc('\n', f);
		}
		for (int v = 0; v < b->nr_vectors; v++) {
			const struct ip_irq *q = ip_snapshot_irq(s, b->vectors[v].irq);
			const struct ip_irq_info *info = q ? ip_irq_info(q) : &ip_irq_info_none;

			fprintf(f, "    vector %u %s%s", b->vectors[v].irq, q ? q->actions : "?",
				b->vectors[v].admin ? " (admin)" : "");
			if (info->have_proc)
				fprintf(f, " affinity %s", cpuset_str(&info->affinity));
			if (info->have_effective)
				fprintf(f, " effective %s", cpuset_str(&info->effective));
			if (info->managed != IP_MANAGED_NO)
				fprintf(f, " managed (%s)", ip_managed_why_str(info->managed));
			fputc('\n', f);
		}
		if (m->prev) {
			fprintf(f, "    submissions from %s:\n", ip_count_source_name(r->submit_src));
			text_rates(f, "  submitted", r->submit, n, r->submit_total);
			fprintf(f, "    completions from %s:\n", ip_count_source_name(r->complete_src));
			text_rates(f, "  completed", r->complete, n, r->complete_total);
		}
	}
	if (m->prev) {
		double total = 0;

		for (int c = 0; c < n; c++)
			total += m->cpu_softirq[c];
		text_rates(f, "BLOCK softirqs", m->cpu_softirq, n, total);
		fprintf(f, "Submission source: %s\n", submit_source);
	} else {
		fprintf(f, "Rates: need two samples\n");
	}
	if (s->nr_threads) {
		fprintf(f, "IRQ threads:\n");
		for (int i = 0; i < s->nr_threads; i++) {
			const struct ip_irq_thread *th = &s->threads[i];

			fprintf(f, "  %d %s %s/%u cpus %s, %.1f%% cpu, %.0f wakeups/s", th->pid, th->comm,
				th->policy == 1 ? "FIFO" : th->policy == 2 ? "RR" : "OTHER", th->rt_priority,
				cpuset_str(&th->allowed), m->thread[i].cpu_pct, m->thread[i].wakeups);
			if (m->thread[i].wakeups_per_irq >= 0)
				fprintf(f, ", %.2f per interrupt", m->thread[i].wakeups_per_irq);
			fputc('\n', f);
		}
	}
	if (s->nr_cq) {
		fprintf(f, "Completion threads (irqpilot_cq):\n");
		for (int i = 0; i < s->nr_cq; i++) {
			const struct ip_cq_thread *ct = &s->cq[i];
			struct ip_cq_rate r;

			ip_model_cq_rate(m, i, &r, NULL);
			fprintf(f, "  %d %s queue %u cpus %s", ct->pid,
				ct->dev >= 0 ? s->storage.devs[ct->dev].name : ct->disk, ct->hwq,
				cpuset_str(&ct->allowed));
			if (r.have)
				fprintf(f, ", %.0f completions/s", r.completions);
			if (r.wakeups_per_completion >= 0)
				fprintf(f, ", %.2f wakeups per completion", r.wakeups_per_completion);
			fprintf(f, ", max wait %.0f us\n", ct->max_wait_ns / 1000.0);
		}
	}
}

/* ---- the plan ------------------------------------------------------- */

static const char *sched_name(int policy)
{
	return policy == 1 ? "fifo" : policy == 2 ? "rr" : "other";
}

static const char *what_name(enum ip_apply_what w)
{
	switch (w) {
	case IP_APPLY_IRQ:
		return "irq";
	case IP_APPLY_THREAD_AFFINITY:
		return "thread_affinity";
	case IP_APPLY_THREAD_SCHED:
		return "thread_sched";
	case IP_APPLY_RQ:
		return "rq_affinity";
	case IP_APPLY_CQ:
		return "completion_threads";
	}
	return "?";
}

void ip_report_plan_json(struct ip_json *j, const struct ip_plan *p, const struct ip_apply_results *res)
{
	ip_json_array_begin(j, "moves");
	for (int i = 0; p && i < p->nr_moves; i++) {
		const struct ip_move *m = &p->moves[i];

		if (m->failed)
			continue;
		ip_json_object_begin(j, NULL);
		ip_json_uint(j, "irq", m->irq);
		ip_json_string(j, "name", m->name);
		ip_json_string(j, "device", m->device);
		ip_json_cpuset(j, "from", &m->from);
		ip_json_cpuset(j, "to", &m->to);
		ip_json_string(j, "reason", m->reason);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
	ip_json_array_begin(j, "threads");
	for (int i = 0; p && i < p->nr_threads; i++) {
		const struct ip_thread_action *t = &p->threads[i];

		if (t->failed)
			continue;
		ip_json_object_begin(j, NULL);
		ip_json_int(j, "pid", t->pid);
		ip_json_string(j, "comm", t->comm);
		ip_json_uint(j, "irq", t->irq);
		if (t->completion) {
			ip_json_string(j, "device", t->device);
			ip_json_uint(j, "queue", t->hwq);
		}
		if (t->set_affinity)
			ip_json_cpuset(j, "to", &t->to);
		else
			ip_json_null(j, "to");
		ip_json_string(j, "policy", sched_name(t->set_sched ? t->policy : t->from_policy));
		ip_json_int(j, "priority", t->set_sched ? t->priority : t->from_priority);
		ip_json_string(j, "reason", t->reason);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
	ip_json_array_begin(j, "kept");
	for (int i = 0; p && i < p->nr_kept; i++) {
		const struct ip_kept *k = &p->kept[i];

		ip_json_object_begin(j, NULL);
		ip_json_uint(j, "irq", k->irq);
		ip_json_string(j, "name", k->name);
		ip_json_bool(j, "managed", k->managed);
		ip_json_string(j, "reason", k->reason);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
	ip_json_array_begin(j, "rq_affinity");
	for (int i = 0; p && i < p->nr_rq; i++) {
		ip_json_object_begin(j, NULL);
		ip_json_string(j, "device", p->rq[i].device);
		ip_json_int(j, "from", p->rq[i].from);
		ip_json_int(j, "to", p->rq[i].value);
		ip_json_string(j, "reason", p->rq[i].reason);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
	for (int pass = 0; pass < 2; pass++) {
		ip_json_array_begin(j, pass ? "detach" : "attach");
		for (int i = 0; p && i < p->nr_cq; i++) {
			const struct ip_cq_action *a = &p->cq[i];

			if (a->failed || a->attach != !pass)
				continue;
			ip_json_object_begin(j, NULL);
			ip_json_string(j, "device", a->device);
			if (a->attach)
				ip_json_bool(j, "trial", a->trial);
			ip_json_string(j, "reason", a->reason);
			ip_json_object_end(j);
		}
		ip_json_array_end(j);
	}
	ip_json_array_begin(j, "notes");
	for (int i = 0; p && i < p->nr_notes; i++)
		ip_json_string(j, NULL, p->notes[i]);
	ip_json_array_end(j);
	ip_json_array_begin(j, "results");
	for (int i = 0; res && i < res->n; i++) {
		const struct ip_apply_result *r = &res->r[i];

		ip_json_object_begin(j, NULL);
		ip_json_string(j, "what", what_name(r->what));
		ip_json_string(j, "outcome", ip_apply_outcome_name(r->outcome));
		ip_json_uint(j, "irq", r->irq);
		if (r->pid)
			ip_json_int(j, "pid", r->pid);
		if (r->device[0])
			ip_json_string(j, "device", r->device);
		ip_json_int(j, "errno", -r->err);
		if (r->have_effective)
			ip_json_cpuset(j, "effective", &r->effective);
		ip_json_string(j, "message", r->msg);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
}

void ip_report_plan_text(FILE *f, const struct ip_plan *p, const struct ip_apply_results *res,
			 bool dry_run)
{
	if (!p) {
		fprintf(f, "Plan: none yet (rates need two samples)\n");
		return;
	}
	fprintf(f, "Plan%s:\n", dry_run ? " (dry run: nothing written)" : "");
	for (int i = 0; i < p->nr_moves; i++)
		if (!p->moves[i].failed)
			fprintf(f, "  %s\n", p->moves[i].reason);
	for (int i = 0; i < p->nr_threads; i++)
		if (!p->threads[i].failed)
			fprintf(f, "  %s\n", p->threads[i].reason);
	for (int i = 0; i < p->nr_rq; i++)
		fprintf(f, "  %s\n", p->rq[i].reason);
	for (int i = 0; i < p->nr_cq; i++)
		if (!p->cq[i].failed)
			fprintf(f, "  %s\n", p->cq[i].reason);
	for (int i = 0; i < p->nr_kept; i++)
		fprintf(f, "  %s\n", p->kept[i].reason);
	for (int i = 0; i < p->nr_notes; i++)
		fprintf(f, "  note: %s\n", p->notes[i]);
	for (int i = 0; res && i < res->n; i++)
		if (res->r[i].outcome != IP_APPLY_OK && res->r[i].outcome != IP_APPLY_DRY_RUN)
			fprintf(f, "  %s\n", res->r[i].msg);
}

int ip_report_submit_by_domain(const struct ip_model *m, unsigned irq, double *by_domain, double *total)
{
	const struct ip_snapshot *s = m->cur;
	const struct ip_irq *q = ip_snapshot_irq(s, irq);
	int n = s->topo.nr_cpus, best = -1;
	double *by_cpu;

	*total = 0;
	for (int d = 0; d < s->topo.nr_domains; d++)
		by_domain[d] = 0;
	if (!q || !m->prev)
		return -1;
	by_cpu = calloc(n ? n : 1, sizeof(double));
	if (!by_cpu)
		return -1;
	for (int k = 0; k < ip_irq_info(q)->nr_devs; k++) {
		int dev = ip_irq_info(q)->devs[k];
		const struct ip_blockdev *b = &s->storage.devs[dev];
		int queue = -1;

		for (int v = 0; v < b->nr_vectors; v++)
			if (b->vectors[v].irq == irq)
				queue = b->vectors[v].queue;
		ip_model_queue_submit(m, dev, queue, by_cpu);
	}
	for (int c = 0; c < n; c++) {
		int d = s->topo.cpus[c].domain;

		*total += by_cpu[c];
		if (d >= 0 && d < s->topo.nr_domains)
			by_domain[d] += by_cpu[c];
	}
	free(by_cpu);
	for (int d = 0; d < s->topo.nr_domains; d++)
		if (by_domain[d] > 0 && (best < 0 || by_domain[d] > by_domain[best]))
			best = d;
	return best;
}

double ip_report_locality(const struct ip_model *m, unsigned irq)
{
	const struct ip_snapshot *s = m->cur;
	int i, nd = s->topo.nr_domains, n = s->topo.nr_cpus;
	double sub_total, irq_total = 0, loc = 0;
	double *sub = calloc(nd ? nd : 1, sizeof(double)), *hit = calloc(nd ? nd : 1, sizeof(double));

	if (!sub || !hit)
		goto none;
	ip_report_submit_by_domain(m, irq, sub, &sub_total);
	for (i = 0; i < s->nr_irqs && s->irqs[i].irq != irq; i++)
		;
	if (i == s->nr_irqs || sub_total <= 0 || !m->irq[i].percpu)
		goto none;
	for (int c = 0; c < n; c++) {
		int d = s->topo.cpus[c].domain;

		irq_total += m->irq[i].percpu[c];
		if (d >= 0 && d < nd)
			hit[d] += m->irq[i].percpu[c];
	}
	if (irq_total <= 0)
		goto none;
	/* the share of submissions whose interrupt fired in their domain */
	for (int d = 0; d < nd; d++)
		loc += (sub[d] / sub_total) * (hit[d] / irq_total);
	free(sub);
	free(hit);
	return loc;
none:
	free(sub);
	free(hit);
	return -1;
}
