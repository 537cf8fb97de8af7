// SPDX-License-Identifier: GPL-2.0-or-later
/* report: the model and the plan as JSON, text and journal fields. */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/cqclient.h"
#include "irqpilot/log.h"
#include "irqpilot/macro.h"
#include "irqpilot/report.h"

/*
 * The names in the texts are the kernel's and the drivers' bytes: an
 * IRQ's action name may hold DEL or C1 controls (U+0080..U+009F, CSI
 * among them), bytes that are no UTF-8, or a character cut where the name
 * was copied into a fixed buffer. The texts go to a terminal (stdout,
 * stderr in the foreground) and into the journal's MESSAGE, which
 * journalctl shows only as "[blob data]" unless it is printable UTF-8.
 * Returns the length of the printable character at @p; -its length for
 * a control; 0 for a byte that starts no UTF-8 character.
 */
static int printable_len(const unsigned char *p)
{
	int n = ip_utf8_len(p);

	if (n && (*p < 0x20 || *p == 0x7f || (*p == 0xc2 && p[1] < 0xa0)))
		return -n;
	return n;
}

/* @name as printable_len() has it: a '?' for each byte or control that
 * is not. */
static void put_name(FILE *f, const char *name)
{
	for (const unsigned char *p = (const unsigned char *)name; *p;) {
		int n = printable_len(p);

		if (n > 0)
			fwrite(p, 1, (size_t)n, f);
		else
			fputc('?', f);
		p += n > 0 ? n : n < 0 ? -n : 1;
	}
}

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
	/* a reason the routes know of (a Hyper-V channel, a chained MSI) is no bug */
	if (b->route_known && b->route_note[0])
		snprintf(buf, size, "%s (%s on %s): its completions cannot be steered: %s (tried %s)", b->name,
			 b->driver, b->bus_id, b->route_note, tried);
	else
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

/* A vector's rates, which only span the CPUs it fired on (model.h). */
static void json_irq_by_cpu(struct ip_json *j, const char *key, const struct ip_irq_rate *r, int n)
{
	char k[16];

	ip_json_object_begin(j, key);
	for (int i = 0; i < r->nr && r->first + i < n; i++) {
		if (r->percpu[i] <= 0)
			continue;
		snprintf(k, sizeof(k), "%d", r->first + i);
		ip_json_double(j, k, r->percpu[i]);
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
		ip_json_string(j, "numa_note", b->numa_note[0] ? b->numa_note : NULL);
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
		ip_json_bool(j, "unnamed_action", q->unnamed_action);
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
		json_irq_by_cpu(j, "by_cpu", &m->irq[i], s->topo.nr_cpus);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
}

/* The one set of scheduling policy names in replies: as chrt(1) and ps(1) say them. */
const char *ip_report_sched_name(int policy)
{
	return policy == 1 ? "fifo" : policy == 2 ? "rr" : "other";
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
		ip_json_string(j, "policy", ip_report_sched_name((int)t->policy));
		ip_json_uint(j, "priority", t->rt_priority);
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
		ip_json_string(j, "policy", ip_report_sched_name((int)t->policy));
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

static void text_topology(FILE *f, const struct ip_topology *t)
{
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
}

/* A device's hardware: its hw queues and the vectors that complete them. */
static void text_device_layout(FILE *f, const struct ip_snapshot *s, const struct ip_blockdev *b)
{
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

		fprintf(f, "    vector %u ", b->vectors[v].irq);
		put_name(f, !q ? "?" : q->actions[0] || !q->unnamed_action ? q->actions : "(unnamed action)");
		fputs(b->vectors[v].admin ? " (admin)" : "", f);
		if (info->have_proc)
			fprintf(f, " affinity %s", cpuset_str(&info->affinity));
		if (info->have_effective)
			fprintf(f, " effective %s", cpuset_str(&info->effective));
		if (info->managed != IP_MANAGED_NO)
			fprintf(f, " managed (%s)", ip_managed_why_str(info->managed));
		fputc('\n', f);
	}
}

static void text_device(FILE *f, const struct ip_model *m, int i)
{
	const struct ip_snapshot *s = m->cur;
	const struct ip_blockdev *b = &s->storage.devs[i];
	const struct ip_dev_rate *r = &m->dev[i];
	int n = s->topo.nr_cpus;
	char disc[640];

	fprintf(f, "  %s: %s on %s %s, rq_affinity %d, %d hw queue%s\n", b->name, b->driver,
		bus_name(b->bus), b->bus_id, b->rq_affinity, b->nr_queues,
		b->nr_queues == 1 ? "" : "s");
	fprintf(f, "    %s%s\n", ip_blockdev_unsteerable(b) ? "warning: " : "",
		ip_report_discovery(b, disc, sizeof(disc)));
	text_device_layout(f, s, b);
	if (m->prev) {
		fprintf(f, "    submissions from %s:\n", ip_count_source_name(r->submit_src));
		text_rates(f, "  submitted", r->submit, n, r->submit_total);
		fprintf(f, "    completions from %s:\n", ip_count_source_name(r->complete_src));
		text_rates(f, "  completed", r->complete, n, r->complete_total);
	}
}

static void text_irq_threads(FILE *f, const struct ip_model *m)
{
	const struct ip_snapshot *s = m->cur;

	if (!s->nr_threads)
		return;
	fprintf(f, "IRQ threads:\n");
	for (int i = 0; i < s->nr_threads; i++) {
		const struct ip_irq_thread *th = &s->threads[i];

		fprintf(f, "  %d ", th->pid);
		put_name(f, th->comm);
		fprintf(f, " %s/%u cpus %s, %.1f%% cpu, %.0f wakeups/s",
			th->policy == 1 ? "FIFO" : th->policy == 2 ? "RR" : "OTHER", th->rt_priority,
			cpuset_str(&th->allowed), m->thread[i].cpu_pct, m->thread[i].wakeups);
		if (m->thread[i].wakeups_per_irq >= 0)
			fprintf(f, ", %.2f per interrupt", m->thread[i].wakeups_per_irq);
		fputc('\n', f);
	}
}

static void text_cq_threads(FILE *f, const struct ip_model *m)
{
	const struct ip_snapshot *s = m->cur;

	if (!s->nr_cq)
		return;
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

void ip_report_model_text(FILE *f, const struct ip_model *m, const char *submit_source)
{
	const struct ip_snapshot *s = m->cur;
	int n = s->topo.nr_cpus;

	text_topology(f, &s->topo);
	fprintf(f, "Storage devices:%s\n", s->storage.nr_devs ? "" : " none backed by hardware");
	for (int i = 0; i < s->storage.nr_devs; i++)
		text_device(f, m, i);
	if (m->prev) {
		double total = 0;

		for (int c = 0; c < n; c++)
			total += m->cpu_softirq[c];
		text_rates(f, "BLOCK softirqs", m->cpu_softirq, n, total);
		fprintf(f, "Submission source: %s\n", submit_source);
	} else {
		fprintf(f, "Rates: need two samples\n");
	}
	text_irq_threads(f, m);
	text_cq_threads(f, m);
}

/* ---- the plan ------------------------------------------------------- */

/* ---- reasons ----------------------------------------------------------- */

/* The one wording of why a vector is managed, for the plan, JSON and irqctl. */
const char *ip_managed_why_str(enum ip_managed_why w)
{
	switch (w) {
	case IP_MANAGED_NO:
		return "not managed";
	case IP_MANAGED_MODE:
		return "smp_affinity is read-only, mode 0444";
	case IP_MANAGED_EIO:
		return "write failed with EIO";
	case IP_MANAGED_EPERM:
		return "write failed with EPERM";
	case IP_MANAGED_SPREAD:
		return "one vector per hw queue, each on its queue's CPUs";
	}
	return "unknown";
}

/*
 * Each code's stable name (JSON "code", journal IRQPILOT_REASON) and the
 * MESSAGE_ID of its journal entry, once, in enum order. Both are forever:
 * a new code gets a new row with a new ID (systemd-id128 new) and an
 * entry in systemd/irqpilot.catalog, never a reused one; test_catalog
 * checks the three agree, and the count below stops a code that has no
 * row from compiling.
 *
 * Codes the daemon never sends to the journal have NO_ID, and the reason:
 * a kept vector's reason is said only by explain, the plan and the JSON
 * (the daemon journals a kept vector only when it is managed, or when the
 * kernel keeps it elsewhere (refused), and then once: a dwell or a budget
 * said every cycle for every vector would bury the moves), and a detail
 * is said only inside the reason it details, whose entry carries it as
 * IRQPILOT_DETAIL=code with its numbers.
 */
#define NO_ID(why) NULL
static const struct reason_def {
	enum ip_reason reason;
	const char *code;
	const char *message_id;
} reasons[] = {
	{ IP_R_NONE, "none", NO_ID("not a reason") },
	/* a vector kept where it is */
	{ IP_R_BANNED, "banned", NO_ID("kept") },
	{ IP_R_MANAGED_READONLY, "managed-readonly", "cea33619765c4bf7bf59fe51a38e071a" },
	{ IP_R_MANAGED_EIO, "managed-eio", "b3a8efc6387348e6bdec8ec83666603c" },
	{ IP_R_MANAGED_EPERM, "managed-eperm", "b13c73fd55b84d6c813d458755ca426d" },
	{ IP_R_MANAGED_SPREAD, "managed-spread", "020a7587d52f4285a4393ca172f2bad8" },
	{ IP_R_PIN_UNUSABLE, "pin-unusable", NO_ID("kept; the note IP_R_NOTE_PIN_UNUSABLE is logged") },
	{ IP_R_PINNED, "pinned", NO_ID("kept") },
	{ IP_R_NO_RATES, "no-rates", NO_ID("kept; the note first-sample is logged") },
	{ IP_R_ADMIN_VECTOR, "admin-vector", NO_ID("kept") },
	{ IP_R_NO_COUNTS, "no-counts", NO_ID("kept") },
	{ IP_R_NO_SUBMITTERS, "no-submitters", NO_ID("kept") },
	{ IP_R_NO_HOUSEKEEPING, "no-housekeeping", NO_ID("kept") },
	{ IP_R_NO_USABLE_CPU, "no-usable-cpu", NO_ID("kept") },
	{ IP_R_ALREADY_PLACED, "already-placed", NO_ID("kept") },
	{ IP_R_BELOW_THRESHOLD, "below-threshold", NO_ID("kept") },
	{ IP_R_TRICKLE, "trickle", NO_ID("kept") },
	{ IP_R_IDLE_STAY, "idle-stay", NO_ID("kept") },
	{ IP_R_IDLE_EFFICIENT, "idle-efficient", NO_ID("kept") },
	{ IP_R_IDLE_GRACE, "idle-grace", NO_ID("kept") },
	{ IP_R_DWELL, "dwell", NO_ID("kept") },
	{ IP_R_BUDGET, "budget", NO_ID("kept") },
	{ IP_R_ALTERNATING, "alternating", NO_ID("kept") },
	{ IP_R_REFUSED, "refused", NO_ID("kept") },
	/* a vector moved; the ID of the move irqpilotd exists for is the one
	 * every move had before codes had their own (log.h) */
	{ IP_R_PIN, "pin", "4742cb92e9314f23b813036b99b8f734" },
	{ IP_R_SUBMITTERS_ELSEWHERE, "submitters-elsewhere", IP_MESSAGE_MOVE },
	{ IP_R_HOUSEKEEPING, "housekeeping", "71cde77484e645cf9b20ff12c80f4f37" },
	{ IP_R_IDLE_RETURN, "idle-return", "2c3a3a6b0eef4fd98401057575921d90" },
	/* IRQ threads and completion threads */
	{ IP_R_FOLLOWS_MOVE, "follows-move", "00996c32409346b3bec6018f8d99a2b6" },
	{ IP_R_FOLLOWS, "follows", "d8c655c45f11484d9c1fecc4d0be71ff" },
	{ IP_R_VECTOR_MANAGED, "vector-managed", "d451c98c99a142649623e94d37d1f935" },
	{ IP_R_MANAGED_THREAD, "managed-thread", "c0079fa6edd2410c9b99ec4db866bf21" },
	{ IP_R_RT_PRIORITY, "rt-priority", "6e7e65f88eb9409d85cd87fb1163044d" },
	{ IP_R_QUEUE_SUBMITTERS, "queue-submitters", "0ab03cc92fd5405cbf5076b6afb4ae53" },
	/* the ID every stall had before */
	{ IP_R_STALL, "stall", IP_MESSAGE_STALL },
	/* rq_affinity */
	{ IP_R_RQ_RULE, "rq-rule", "560c7513cfc140adb064cd039ff92415" },
	/* irqpilot_cq attach / detach */
	{ IP_R_CQ_MODE, "cq-mode", "a63d4512bf974ce6a4137f3c17f717ed" },
	{ IP_R_CQ_TRIAL_FAILED, "cq-trial-failed", "4d647b8147354e6ca4b9450fe4d95634" },
	{ IP_R_CQ_TRIAL, "cq-trial", "9fd3be7bf74e46969c5d47957aa4055d" },
	{ IP_R_CQ_AUTO_DETACH, "cq-auto-detach", "e09a42dc590d4c8a8ab86ce44754d75a" },
	{ IP_R_CQ_STALLED, "cq-stalled", "9e50d5671f3c4871b7b28cb5003922c3" },
	/* details of cq-trial, cq-auto-detach */
	{ IP_R_CQ_NO_SUBMISSIONS, "cq-no-submissions", NO_ID("detail") },
	{ IP_R_CQ_NO_VECTOR_AWAY, "cq-no-vector-away", NO_ID("detail") },
	{ IP_R_CQ_BLKMQ_COMPLETES, "cq-blkmq-completes", NO_ID("detail") },
	{ IP_R_CQ_NOT_SLOWER, "cq-not-slower", NO_ID("detail") },
	{ IP_R_CQ_NEEDED, "cq-needed", NO_ID("detail") },
	/* notes */
	{ IP_R_NOTE_FIRST_SAMPLE, "first-sample", "a5b5b50753c0478b988fcc8c24ab2323" },
	{ IP_R_NOTE_ALL_ISOLATED, "all-isolated", "ab9b8fe2babc48529d324e6de39fabef" },
	{ IP_R_NOTE_DOMAIN_ISOLATED, "domain-isolated", "08dc48134094421f9b1bbe400cbed70d" },
	{ IP_R_NOTE_PIN_UNUSABLE, "pin-unusable", "76492086598f499286a97aeded0751bc" },
	{ IP_R_NOTE_PIN_GONE, "pin-irq-gone", "e97c4a332dc04d9f93fe8e0ca830283a" },
	{ IP_R_NOTE_CQ_KEPT, "cq-trial-kept", "5d7601383e604beca56e7d31efa3db6c" },
	{ IP_R_NOTE_CQ_HELD, "cq-held", "141233971b1243afb2c8e02f28c98a85" },
	{ IP_R_NOTE_STALL_NO_TARGET, "stall-no-target", "9cd1f16bf9914a8c870199eafe031b53" },
	/* details of cq-held */
	{ IP_R_HOLD_TRIAL, "hold-trial", NO_ID("detail") },
	{ IP_R_HOLD_STALL, "hold-stall", NO_ID("detail") },
	/* a vector moved off a CPU fenced off */
	{ IP_R_OFF_ISOLATED, "off-isolated", "c1019fb70c854db1b2e4bed36b6a4594" },
	{ IP_R_OFF_BANNED, "off-banned", "eafdb9638acd45f09a39a578f26e1696" },
	/* within a domain that spans NUMA nodes */
	{ IP_R_NUMA_NODE, "numa-node", "a2b0cf70a28546f1be6df7eb7d3f6af3" },
	/* within a domain one submitter dominates */
	{ IP_R_DOMINANT_CPU, "dominant-cpu", "2887a9b2744d49baad5b6c3dfa88eb39" },
};
_Static_assert(ARRAY_SIZE(reasons) == IP_R_COUNT,
	       "each enum ip_reason needs its row in reasons[], with its MESSAGE_ID or NO_ID(why)");
#undef NO_ID

const char *ip_reason_code(enum ip_reason r)
{
	return (unsigned)r < IP_R_COUNT && reasons[r].reason == r ? reasons[r].code : "unknown";
}

const char *ip_reason_message_id(enum ip_reason r)
{
	return (unsigned)r < IP_R_COUNT && reasons[r].reason == r ? reasons[r].message_id : NULL;
}

/* A line being built: appends never overrun, a long line is cut. */
struct line {
	char *buf;
	size_t size, len;
};

/*
 * Makes [s, s + len) fit for a terminal and the journal (printable_len());
 * returns its new length. Each byte that is no UTF-8 and each control
 * becomes a '?', never longer than what it replaces; a character that
 * @cut (the line's end) split is dropped, as the cut drops the rest.
 */
static size_t line_clean(char *s, size_t len, bool cut)
{
	size_t i = 0, o = 0;

	while (i < len) {
		const unsigned char *p = (const unsigned char *)s + i;
		int n = printable_len(p);

		if (n == 0) {
			size_t k = 1;

			/* a lead byte whose sequence runs into the cut */
			while (cut && i + k < len && (p[k] & 0xc0) == 0x80)
				k++;
			if (cut && i + k == len && *p >= 0xc2 && *p <= 0xf4)
				break;
			s[o++] = '?';
			i++;
		} else if (n < 0) {
			s[o++] = '?';
			i += (size_t)-n;
		} else {
			memmove(s + o, p, (size_t)n);
			o += (size_t)n;
			i += (size_t)n;
		}
	}
	s[o] = '\0';
	return o;
}

/* "once", "twice", "3 times" (idle_grace doublings, at most a few). */
static const char *times_str(int n)
{
	static const char *const words[] = { "0 times", "once", "twice", "3 times", "4 times" };

	return n >= 0 && n < (int)ARRAY_SIZE(words) ? words[n] : "many times";
}

static void put(struct line *l, const char *fmt, ...) _printf_(2, 3);
static void put(struct line *l, const char *fmt, ...)
{
	va_list ap;
	size_t at = l->len;
	int n;

	if (l->len >= l->size)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, l->size - l->len, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	l->len = MIN(l->len + (size_t)n, l->size - 1);
	l->len = at + line_clean(l->buf + at, l->len - at, (size_t)n > l->len - at);
}

/* A CPU list; lines are read by people, so a long list is cut to "...". */
static const char *set_str(char buf[128], const ip_cpuset *s)
{
	size_t need = cpuset_format_list(s, buf, 128);

	if (need >= 128)
		strcpy(buf + 128 - 4, "...");
	return buf;
}

static const char *share_str(char buf[16], double f)
{
	if (f < 0.005)
		return "none";
	if (f > 0.995)
		return "all";
	snprintf(buf, 16, "%.0f%%", f * 100);
	return buf;
}

static const char *devices_str(char buf[80], const struct ip_why *w)
{
	if (w->devices[0])
		return w->devices;
	snprintf(buf, 80, "IRQ %u", w->irq);
	return buf;
}

/* "rule 'sda'", "irqctl pin", "the policy" */
static const char *src_str(char buf[80], const struct ip_why *w)
{
	switch (w->src) {
	case IP_FROM_RULE:
		snprintf(buf, 80, "rule '%s'", w->rule);
		return buf;
	case IP_FROM_PIN:
		return "irqctl pin";
	case IP_FROM_POLICY:
		break;
	}
	return "the policy";
}

static const char *stuck_str(enum ip_stuck s)
{
	switch (s) {
	case IP_STUCK_MANAGED:
		return "is managed by the kernel";
	case IP_STUCK_REFUSED:
		return "did not move where it was set";
	case IP_STUCK_PIN_IRQCTL:
		return "is pinned by irqctl pin";
	case IP_STUCK_PIN_RULE:
		return "is pinned by a rule";
	case IP_STUCK_SPREAD:
		return "serves submitters in several domains";
	case IP_STUCK_NONE:
		break;
	}
	return "";
}

static const char *stay_str(enum ip_stay s)
{
	switch (s) {
	case IP_STAY_THREADIRQS:
		return "forced IRQ threading keeps completions on the interrupt's CPU";
	case IP_STAY_RQ_AFFINITY0:
		return "rq_affinity 0 keeps completions on the interrupt's CPU";
	case IP_STAY_SHARED_CACHE:
		return "before 6.9, rq_affinity 1 completes on the interrupt's CPU when it shares a cache with the submitter, whatever its capacity";
	case IP_STAY_NONE:
		break;
	}
	return "";
}

static const char *tier_str(enum ip_hk_tier t)
{
	switch (t) {
	case IP_HK_LLC:
		return "same capacity and LLC";
	case IP_HK_PACKAGE:
		return "same capacity and package";
	case IP_HK_CLASS:
		break;
	}
	return "same class";
}

static void why_text(struct line *l, const struct ip_why *w, enum ip_reason code, const char *device);

/* A reason within the reason. One level only: a detail that itself takes a
 * detail (a broken record) is named, not followed, which would never end. */
static void detail_text(struct line *l, const struct ip_why *w, const char *device)
{
	switch (w->detail) {
	case IP_R_MANAGED_THREAD:
	case IP_R_CQ_TRIAL:
	case IP_R_CQ_AUTO_DETACH:
	case IP_R_NOTE_CQ_HELD:
		put(l, "%s", ip_reason_code(w->detail));
		return;
	default:
		why_text(l, w, w->detail, device);
	}
}

/* IP_R_NO_HOUSEKEEPING: where the submitters ran, and why none of their
 * class is usable: offline CPUs said apart from isolated or banned ones. */
static void no_housekeeping_text(struct line *l, char d[80], const struct ip_why *w)
{
	char b1[128], b2[128];
	ip_cpuset rest;

	cpuset_andnot(&rest, &w->set, &w->set2);
	if (cpuset_empty(&w->set2))
		put(l, "the submitters of %s run only on isolated or banned CPUs (%s) and no housekeeping CPU of their class is left",
		    devices_str(d, w), set_str(b1, &w->set));
	else if (cpuset_empty(&rest))
		put(l, "the submitters of %s ran only on CPUs now offline (%s) and no CPU of their class is online and usable",
		    devices_str(d, w), set_str(b1, &w->set2));
	else
		put(l, "the submitters of %s ran on CPUs now offline (%s) or isolated or banned (%s) and no CPU of their class is left",
		    devices_str(d, w), set_str(b1, &w->set2), set_str(b2, &rest));
}

/* Why a vector is not ours to place, or there is nothing to place it by:
 * rules, the kernel, missing evidence. */
static bool why_unplaceable_text(struct line *l, const struct ip_why *w, enum ip_reason code)
{
	char b1[128], d[80], s[80];

	switch (code) {
	case IP_R_NONE:
	case IP_R_COUNT:
		put(l, "no reason");
		break;
	case IP_R_BANNED:
		put(l, "banned by %s, never touched", src_str(s, w));
		break;
	case IP_R_MANAGED_READONLY:
	case IP_R_MANAGED_EIO:
	case IP_R_MANAGED_EPERM:
	case IP_R_MANAGED_SPREAD:
		if (w->explained)
			put(l, "managed by the kernel (%s); %s", ip_managed_why_str(w->managed_why),
			    w->has_thread ? "its IRQ thread is moved instead"
					  : "it has no IRQ thread to move instead");
		else
			put(l, "managed by the kernel");
		break;
	case IP_R_PIN_UNUSABLE:
		put(l, "pin %s (%s) has no usable CPU: all isolated, nohz_full, banned or offline",
		    set_str(b1, &w->set), src_str(s, w));
		break;
	case IP_R_PINNED:
		put(l, "pinned to %s by %s", set_str(b1, &w->set), src_str(s, w));
		break;
	case IP_R_NO_RATES:
		put(l, "no rates yet (first sample)");
		break;
	case IP_R_ADMIN_VECTOR:
		put(l, "admin vector, not on the I/O path");
		break;
	case IP_R_NO_COUNTS:
		put(l, "no submission counts for %s", devices_str(d, w));
		break;
	case IP_R_NO_SUBMITTERS:
		put(l, "no submissions on online CPUs");
		break;
	case IP_R_NO_HOUSEKEEPING:
		no_housekeeping_text(l, d, w);
		break;
	case IP_R_NO_USABLE_CPU:
		put(l, "no usable CPU in the submitter domain");
		break;
	default:
		return false;
	}
	return true;
}

/* Why a placeable vector stays: where it is is good enough, or a limit
 * (threshold, min_rate, idle_domain, dwell, max_moves) holds it. */
static bool why_stays_text(struct line *l, const struct ip_why *w, enum ip_reason code)
{
	char b1[128], b2[128], p1[16], d[80];
	const char *cls = ip_cap_class_name((enum ip_cap_class)w->cls);

	switch (code) {
	case IP_R_ALREADY_PLACED:
		put(l, "already handled in %s domain %s (%s of %s submissions there)", cls,
		    set_str(b1, &w->domain), share_str(p1, w->share), devices_str(d, w));
		break;
	case IP_R_BELOW_THRESHOLD:
		put(l, "gain %.0f pp below threshold %.0f pp", w->gain * 100, w->threshold * 100);
		if (w->returning)
			put(l, " (moving back to %s within return_window %.0f s)", set_str(b1, &w->set),
			    w->limit_s);
		break;
	case IP_R_TRICKLE:
		put(l, "%.0f interrupts/s below min_rate %.0f, not moving towards a higher-capacity domain",
		    w->rate, w->min_rate);
		break;
	case IP_R_IDLE_STAY:
		put(l, "submitters of %s idle; idle_domain = stay", devices_str(d, w));
		break;
	case IP_R_IDLE_EFFICIENT:
		put(l, "submitters of %s idle, already on an efficiency domain", devices_str(d, w));
		break;
	case IP_R_IDLE_GRACE:
		put(l, "submitters of %s idle for %.1f s, back to the efficiency domain after idle_grace %.0f s",
		    devices_str(d, w), w->since_s, w->limit_s);
		if (w->count > 0)
			put(l, " (doubled %s: they came back within return_window of %s)", times_str(w->count),
			    w->count > 1 ? "each of the last returns" : "the last return");
		break;
	case IP_R_DWELL:
		put(l, "in dwell (moved %.1f s ago, dwell %.0f s)", w->since_s, w->limit_s);
		break;
	case IP_R_BUDGET:
		put(l, "move budget exhausted (max_moves %d per cycle)", w->count);
		break;
	case IP_R_ALTERNATING:
		put(l, "its submitters alternate: two moves after them were wanted within return_window; "
		       "it follows them to %s again once they stay there %.0f s (%.1f s so far)",
		    set_str(b1, &w->domain), w->limit_s, w->since_s);
		break;
	case IP_R_REFUSED:
		put(l, "the kernel keeps it on %s though we set its affinity to %s; not written again "
		       "while that stands",
		    set_str(b1, &w->set2), set_str(b2, &w->set));
		break;
	default:
		return false;
	}
	return true;
}

/* Why a vector moves towards its submitters (or a pin), and to which
 * CPUs of their domain. */
static bool why_moves_text(struct line *l, const struct ip_why *w, enum ip_reason code)
{
	char b1[128], b2[128], p1[16], p2[16], d[80], s[80];
	const char *cls = ip_cap_class_name((enum ip_cap_class)w->cls);

	switch (code) {
	case IP_R_PIN:
		put(l, "pinned by %s", src_str(s, w));
		if (w->trimmed)
			put(l, " (pin %s trimmed to %s: the rest is isolated, nohz_full, banned or offline)",
			    set_str(b1, &w->set), set_str(b2, &w->set2));
		break;
	case IP_R_SUBMITTERS_ELSEWHERE:
		put(l, "%s of %s submissions on %s domain %s, %s of its %s there", share_str(p1, w->share),
		    devices_str(d, w), cls, set_str(b1, &w->domain), share_str(p2, w->handled),
		    w->for_thread ? "thread's CPUs are" : "interrupts were handled");
		break;
	case IP_R_HOUSEKEEPING:
		put(l, "%s of %s submissions on isolated CPUs of %s domain %s; housekeeping CPU %d (%s) is the nearest, %s of its interrupts were handled in its domain",
		    share_str(p1, w->share), devices_str(d, w), cls, set_str(b1, &w->domain), w->cpu,
		    tier_str(w->tier), share_str(p2, w->handled));
		break;
	case IP_R_IDLE_RETURN:
		put(l, "submitters of %s idle for %.1f s (idle_grace %.0f s", devices_str(d, w), w->since_s,
		    w->limit_s);
		if (w->count > 0)
			put(l, ", doubled %s", times_str(w->count));
		put(l, "), back to efficiency domain %s", set_str(b1, &w->domain));
		break;
	case IP_R_NUMA_NODE:
		put(l, "%s of %s submissions on %s domain %s, which spans %d NUMA nodes; handled on %s, off the device's node %d",
		    share_str(p1, w->share), devices_str(d, w), cls, set_str(b1, &w->domain), w->nodes,
		    set_str(b2, &w->set), w->node);
		break;
	case IP_R_DOMINANT_CPU:
		put(l, "CPU %d submits %s of %s submissions in %s domain %s over the window (%s or more dominates); handled on %s",
		    w->cpu, share_str(p1, w->share), devices_str(d, w), cls, set_str(b1, &w->domain),
		    share_str(p2, w->threshold), set_str(b2, &w->set));
		break;
	default:
		return false;
	}
	return true;
}

/* A move off CPUs the vector may no longer use: its own words, because it
 * overrides dwell, threshold and budget and names where it goes instead. */
static bool why_off_text(struct line *l, const struct ip_why *w, enum ip_reason code)
{
	char b1[128], b2[128];
	const char *cls = ip_cap_class_name((enum ip_cap_class)w->cls);

	if (code != IP_R_OFF_ISOLATED && code != IP_R_OFF_BANNED)
		return false;
	put(l, "on %s CPU %s, moved off at once (no dwell, threshold or budget)",
	    code == IP_R_OFF_ISOLATED ? "isolated or nohz_full" : "banned", set_str(b1, &w->set));
	if (w->other_domain)
		put(l, "; no usable CPU left in its domain %s (capacity %u), to the nearest by capacity: %s domain %s (capacity %u)",
		    set_str(b2, &w->set2), w->capacity2, cls, set_str(b1, &w->domain), w->capacity);
	else
		put(l, "; to %s of its %s domain %s", w->cpu >= 0 ? "the least loaded usable CPU" : "the usable CPUs",
		    cls, set_str(b1, &w->domain));
	if (w->cpu >= 0)
		put(l, ", CPU %d", w->cpu);
	return true;
}

/* Where an IRQ thread or a completion thread goes, and rq_affinity. */
static bool why_thread_text(struct line *l, const struct ip_why *w, enum ip_reason code, const char *device)
{
	char b1[128], p1[16], s[80];
	const char *cls = ip_cap_class_name((enum ip_cap_class)w->cls);

	switch (code) {
	case IP_R_FOLLOWS_MOVE:
		put(l, "follows vector %u to %s", w->irq, set_str(b1, &w->set));
		break;
	case IP_R_FOLLOWS:
		put(l, "follows vector %u on %s", w->irq, set_str(b1, &w->set));
		break;
	case IP_R_VECTOR_MANAGED:
		put(l, "vector is managed");
		break;
	case IP_R_MANAGED_THREAD:
		put(l, "vector %u is managed; ", w->irq);
		detail_text(l, w, device);
		break;
	case IP_R_RT_PRIORITY:
		put(l, "rt_priority %d from %s", w->prio, src_str(s, w));
		break;
	case IP_R_QUEUE_SUBMITTERS:
		put(l, "%s of queue %u's submissions on %s domain %s", share_str(p1, w->share), w->hwq,
		    cls, set_str(b1, &w->domain));
		break;
	case IP_R_STALL:
		put(l, "queue %u stalled (a request waited %.0f ms for its completion thread on CPU %d, busy with higher-priority work); to the least loaded other CPU of its domain",
		    w->hwq, w->wait_ms, w->cpu);
		break;
	case IP_R_RQ_RULE:
		put(l, "set by %s", src_str(s, w));
		break;
	default:
		return false;
	}
	return true;
}

/* Why a device is attached to irqpilot_cq or detached from it, and why
 * completion_threads = auto wants it (the details of a trial). */
static bool why_cq_text(struct line *l, const struct ip_why *w, enum ip_reason code, const char *device)
{
	char b1[128], b2[128], p1[16], s[80];

	switch (code) {
	case IP_R_CQ_MODE:
		/* the mode is the action's: attach for yes, detach for no */
		put(l, "completion_threads = %s (%s)", w->count == IP_COMPLETION_YES ? "yes" : "no",
		    src_str(s, w));
		break;
	case IP_R_CQ_TRIAL_FAILED:
		put(l, "completion_threads = auto: trial measured %.0f I/Os per second attached against %.0f before; the original path is faster here",
		    w->ios, w->ios_before);
		break;
	case IP_R_CQ_TRIAL:
		put(l, "completion_threads = auto, on trial: ");
		detail_text(l, w, device);
		break;
	case IP_R_CQ_AUTO_DETACH:
		put(l, "completion_threads = auto: ");
		detail_text(l, w, device);
		break;
	case IP_R_CQ_STALLED:
		put(l, "queue %u stalled twice within %.0f s; not attached again for %d s", w->hwq,
		    w->limit_s, w->hold_s);
		break;
	case IP_R_CQ_NO_SUBMISSIONS:
		put(l, "no submissions to judge by");
		break;
	case IP_R_CQ_NO_VECTOR_AWAY:
		put(l, "no storage vector away from the submitters");
		break;
	case IP_R_CQ_BLKMQ_COMPLETES:
		put(l, "vector %u %s, but blk-mq already completes on the submitters (rq_affinity %d)", w->irq,
		    stuck_str(w->stuck), w->count);
		break;
	case IP_R_CQ_NOT_SLOWER:
		put(l, "vector %u %s, but its CPUs %s are no slower than submitter domain %s: a thread would cost more than it saves",
		    w->irq, stuck_str(w->stuck), set_str(b1, &w->set), set_str(b2, &w->domain));
		break;
	case IP_R_CQ_NEEDED:
		put(l, "vector %u %s on %s, %s of submissions are in faster domain %s, and %s", w->irq,
		    stuck_str(w->stuck), set_str(b1, &w->set), share_str(p1, w->share),
		    set_str(b2, &w->domain), stay_str(w->stay));
		break;
	default:
		return false;
	}
	return true;
}

/* Notes (said once, not an action on one object) and why a device is
 * held back from irqpilot_cq (the details of NOTE_CQ_HELD). */
static bool why_note_text(struct line *l, const struct ip_why *w, enum ip_reason code, const char *device)
{
	char b1[128], d[80], s[80];

	switch (code) {
	case IP_R_NOTE_FIRST_SAMPLE:
		put(l, "first sample: no rates yet, only rules are applied");
		break;
	case IP_R_NOTE_ALL_ISOLATED:
		put(l, "every submitter of %s is isolated; using housekeeping CPU %d (%s)", devices_str(d, w),
		    w->cpu, tier_str(w->tier));
		break;
	case IP_R_NOTE_DOMAIN_ISOLATED:
		put(l, "the submitters of %s on domain %s run only on isolated CPUs; using housekeeping CPU %d (%s)",
		    devices_str(d, w), set_str(b1, &w->domain), w->cpu, tier_str(w->tier));
		break;
	case IP_R_NOTE_PIN_UNUSABLE:
		put(l, "pin %s of %s for IRQ %u has no usable CPU (all isolated, nohz_full, banned or offline); ignored",
		    set_str(b1, &w->set), src_str(s, w), w->irq);
		break;
	case IP_R_NOTE_PIN_GONE:
		put(l, "IRQ %u, pinned to %s by irqctl pin, is not in /proc/interrupts (freed or never there); "
		       "the pin waits for an IRQ %u until irqctl unpin %u",
		    w->irq, set_str(b1, &w->set), w->irq, w->irq);
		break;
	case IP_R_NOTE_CQ_KEPT:
		put(l, "%s stays on irqpilot_cq: %.0f I/Os per second attached, %.0f before", device, w->ios,
		    w->ios_before);
		break;
	case IP_R_NOTE_CQ_HELD:
		put(l, "not attaching %s to irqpilot_cq again for now: ", device);
		detail_text(l, w, device);
		break;
	case IP_R_NOTE_STALL_NO_TARGET:
		put(l, "%s queue %u stalled (a request waited %.0f ms for its completion thread on CPU %d); no other CPU in its domain to move it to",
		    device, w->hwq, w->wait_ms, w->cpu);
		break;
	case IP_R_HOLD_TRIAL:
		put(l, "a trial measured %.0f I/Os per second attached against %.0f before (held for %d s)",
		    w->ios, w->ios_before, w->hold_s);
		break;
	case IP_R_HOLD_STALL:
		put(l, "queue %u stalled twice within %.0f s (held for %d s)", w->hwq, w->limit_s,
		    w->hold_s);
		break;
	default:
		return false;
	}
	return true;
}

/* One family of codes per function, each saying whether @code is its own;
 * the enum's order is not relied on, since codes are only ever appended. */
static void why_text(struct line *l, const struct ip_why *w, enum ip_reason code, const char *device)
{
	if (!why_unplaceable_text(l, w, code) && !why_stays_text(l, w, code) &&
	    !why_moves_text(l, w, code) && !why_off_text(l, w, code) &&
	    !why_thread_text(l, w, code, device) && !why_cq_text(l, w, code, device))
		why_note_text(l, w, code, device);
	/* once, on the record's own reason, not again on its detail; NUMA_NODE
	 * names the node in its own words */
	if (w->numa && code == w->code && code != IP_R_NUMA_NODE)
		put(l, "; on the device's NUMA node %d (the domain spans %d nodes)", w->node, w->nodes);
	/* which CPU of the domain, where one submitter dominates it */
	if (w->dominant && code == w->code && code != IP_R_DOMINANT_CPU) {
		char p1[16];

		put(l, "; CPU %d submits %s of the domain's I/O", w->dom_cpu, share_str(p1, w->dom_share));
		put(l, "%s", w->dom_unusable ? ", but is not usable (isolated, banned or off the device's node)"
			     : w->dom_busy ? ", but carries another vector's interrupts already"
					   : ", so to it");
	}
}

const char *ip_report_why(char *buf, size_t size, const struct ip_why *w)
{
	struct line l = { buf, size, 0 };

	if (size)
		buf[0] = '\0';
	why_text(&l, w, w->code, NULL);
	return buf;
}

static const char *sched_label(int policy)
{
	return policy == SCHED_FIFO ? "SCHED_FIFO" : policy == SCHED_RR ? "SCHED_RR" : "SCHED_OTHER";
}

const char *ip_report_move_line(char *buf, size_t size, const struct ip_move *m)
{
	struct line l = { buf, size, 0 };
	char b1[128], b2[128];

	if (size)
		buf[0] = '\0';
	put(&l, "moved %u %s %s → %s: ", m->irq, m->name, set_str(b1, &m->from), set_str(b2, &m->to));
	why_text(&l, &m->why, m->why.code, m->device);
	return buf;
}

const char *ip_report_thread_line(char *buf, size_t size, const struct ip_thread_action *t)
{
	struct line l = { buf, size, 0 };
	char b1[128], b2[128];

	if (size)
		buf[0] = '\0';
	put(&l, "thread %d %s", (int)t->pid, t->comm);
	if (t->set_affinity)
		put(&l, " %s → %s", set_str(b1, &t->from), set_str(b2, &t->to));
	if (t->set_sched)
		put(&l, " %s %d → SCHED_FIFO %d", sched_label(t->from_policy), t->from_priority,
		    t->priority);
	put(&l, ": ");
	why_text(&l, &t->why, t->why.code, t->device);
	return buf;
}

const char *ip_report_kept_line(char *buf, size_t size, const struct ip_kept *k)
{
	struct line l = { buf, size, 0 };

	if (size)
		buf[0] = '\0';
	put(&l, "kept %u %s: ", k->irq, k->name);
	why_text(&l, &k->why, k->why.code, NULL);
	return buf;
}

const char *ip_report_rq_line(char *buf, size_t size, const struct ip_rq_action *r)
{
	struct line l = { buf, size, 0 };

	if (size)
		buf[0] = '\0';
	if (r->from < 0)
		put(&l, "rq_affinity of %s (unreadable) → %d: ", r->device, r->value);
	else
		put(&l, "rq_affinity of %s %d → %d: ", r->device, r->from, r->value);
	why_text(&l, &r->why, r->why.code, NULL);
	return buf;
}

const char *ip_report_cq_line(char *buf, size_t size, const struct ip_cq_action *a)
{
	struct line l = { buf, size, 0 };

	if (size)
		buf[0] = '\0';
	put(&l, "%s %s %s irqpilot_cq: ", a->attach ? "attach" : "detach", a->device,
	    a->attach ? "to" : "from");
	why_text(&l, &a->why, a->why.code, a->device);
	return buf;
}

const char *ip_report_note_line(char *buf, size_t size, const struct ip_note *n)
{
	struct line l = { buf, size, 0 };

	if (size)
		buf[0] = '\0';
	why_text(&l, &n->why, n->why.code, n->device);
	return buf;
}

/*
 * Where the numbers behind a reason go: the JSON object's keys, or the
 * journal entry's IRQPILOT_<KEY> fields. One list of which code rests on
 * which numbers (why_numbers()), so that the two never disagree.
 */
struct why_out {
	void (*num)(struct why_out *o, const char *key, double v);
	void (*integer)(struct why_out *o, const char *key, long long v);
	void (*str)(struct why_out *o, const char *key, const char *v);
	void (*set)(struct why_out *o, const char *key, const ip_cpuset *s);
	void (*flag)(struct why_out *o, const char *key, bool v);
	void *ctx;
};

/* The domain a placement rests on or goes to: its share, class and CPUs. */
static void domain_numbers(struct why_out *o, const struct ip_why *w, enum ip_reason code)
{
	switch (code) {
	case IP_R_ALREADY_PLACED:
	case IP_R_SUBMITTERS_ELSEWHERE:
	case IP_R_HOUSEKEEPING:
	case IP_R_QUEUE_SUBMITTERS:
	case IP_R_MANAGED_THREAD:
		o->num(o, "share", w->share);
		if (code != IP_R_ALREADY_PLACED && code != IP_R_QUEUE_SUBMITTERS)
			o->num(o, "handled", w->handled);
		o->str(o, "class", ip_cap_class_name((enum ip_cap_class)w->cls));
		o->set(o, "domain", &w->domain);
		if (code == IP_R_HOUSEKEEPING)
			o->integer(o, "cpu", w->cpu);
		if (code == IP_R_QUEUE_SUBMITTERS)
			o->integer(o, "queue", w->hwq);
		break;
	case IP_R_NUMA_NODE:
		o->num(o, "share", w->share);
		o->str(o, "class", ip_cap_class_name((enum ip_cap_class)w->cls));
		o->set(o, "domain", &w->domain);
		o->set(o, "handled_on", &w->set);
		o->integer(o, "node", w->node);
		o->integer(o, "nodes", w->nodes);
		break;
	case IP_R_DOMINANT_CPU:
		o->integer(o, "cpu", w->cpu);
		o->num(o, "share", w->share);
		o->num(o, "threshold", w->threshold);
		o->str(o, "class", ip_cap_class_name((enum ip_cap_class)w->cls));
		o->set(o, "domain", &w->domain);
		o->set(o, "handled_on", &w->set);
		break;
	case IP_R_NO_HOUSEKEEPING:
		o->set(o, "submitters", &w->set);
		o->set(o, "offline", &w->set2);
		break;
	case IP_R_OFF_ISOLATED:
	case IP_R_OFF_BANNED:
		o->set(o, "unusable", &w->set);
		o->str(o, "class", ip_cap_class_name((enum ip_cap_class)w->cls));
		o->set(o, "domain", &w->domain);
		o->integer(o, "capacity", w->capacity);
		if (w->cpu >= 0)
			o->integer(o, "cpu", w->cpu);
		o->flag(o, "other_domain", w->other_domain);
		if (w->other_domain) {
			o->set(o, "from_domain", &w->set2);
			o->integer(o, "from_capacity", w->capacity2);
		}
		break;
	default:
		break;
	}
}

/* The setting that held or placed it, and how far it was from it. */
static void limit_numbers(struct why_out *o, const struct ip_why *w, enum ip_reason code)
{
	switch (code) {
	case IP_R_BELOW_THRESHOLD:
		o->num(o, "gain", w->gain);
		o->num(o, "threshold", w->threshold);
		o->flag(o, "returning", w->returning);
		break;
	case IP_R_TRICKLE:
		o->num(o, "rate", w->rate);
		o->num(o, "min_rate", w->min_rate);
		break;
	case IP_R_IDLE_GRACE:
	case IP_R_IDLE_RETURN:
	case IP_R_DWELL:
	case IP_R_ALTERNATING:
		o->num(o, "since", w->since_s);
		o->num(o, "limit", w->limit_s);
		if (code == IP_R_IDLE_RETURN || code == IP_R_ALTERNATING)
			o->set(o, "domain", &w->domain);
		break;
	case IP_R_BUDGET:
		o->integer(o, "max_moves", w->count);
		break;
	case IP_R_REFUSED:
		o->set(o, "affinity", &w->set);
		o->set(o, "effective", &w->set2);
		break;
	case IP_R_NOTE_ALL_ISOLATED:
	case IP_R_NOTE_DOMAIN_ISOLATED:
		o->integer(o, "cpu", w->cpu);
		break;
	case IP_R_RT_PRIORITY:
		o->integer(o, "rt_priority", w->prio);
		break;
	default:
		break;
	}
}

/* Completion threads: a trial's I/O rates, a stall, why auto wants one. */
static void cq_numbers(struct why_out *o, const struct ip_why *w, enum ip_reason code)
{
	switch (code) {
	case IP_R_CQ_TRIAL_FAILED:
	case IP_R_NOTE_CQ_KEPT:
	case IP_R_HOLD_TRIAL:
		o->num(o, "ios", w->ios);
		o->num(o, "ios_before", w->ios_before);
		if (code == IP_R_HOLD_TRIAL)
			o->integer(o, "hold", w->hold_s);
		break;
	case IP_R_STALL:
	case IP_R_NOTE_STALL_NO_TARGET:
		o->integer(o, "queue", w->hwq);
		o->integer(o, "cpu", w->cpu);
		o->num(o, "wait_ms", w->wait_ms);
		break;
	case IP_R_CQ_STALLED:
	case IP_R_HOLD_STALL:
		o->integer(o, "queue", w->hwq);
		o->integer(o, "hold", w->hold_s);
		break;
	/* details, never a record's own code: in the journal only */
	case IP_R_CQ_BLKMQ_COMPLETES:
		o->integer(o, "rq_affinity", w->count);
		break;
	case IP_R_CQ_NOT_SLOWER:
		o->set(o, "domain", &w->domain);
		break;
	case IP_R_CQ_NEEDED:
		o->num(o, "share", w->share);
		o->set(o, "domain", &w->domain);
		break;
	default:
		break;
	}
}

/* The numbers of @code (the record's, or its detail's) from @w. Each code's
 * own numbers are in exactly one of the three lists, so the keys come out
 * in the same order whichever runs first. */
static void why_numbers(struct why_out *o, const struct ip_why *w, enum ip_reason code)
{
	domain_numbers(o, w, code);
	limit_numbers(o, w, code);
	cq_numbers(o, w, code);
	if (w->numa && code == w->code && code != IP_R_NUMA_NODE) {
		o->integer(o, "node", w->node);
		o->integer(o, "nodes", w->nodes);
	}
	if (w->dominant && code == w->code && code != IP_R_DOMINANT_CPU) {
		o->integer(o, "submitter_cpu", w->dom_cpu);
		o->num(o, "submitter_share", w->dom_share);
		o->flag(o, "submitter_unusable", w->dom_unusable);
		o->flag(o, "submitter_busy", w->dom_busy);
	}
	if (w->src == IP_FROM_RULE)
		o->str(o, "rule", w->rule);
	else if (w->src == IP_FROM_PIN)
		o->str(o, "source", "irqctl pin");
}

static void json_num(struct why_out *o, const char *key, double v)
{
	ip_json_double(o->ctx, key, v);
}

static void json_integer(struct why_out *o, const char *key, long long v)
{
	ip_json_int(o->ctx, key, v);
}

static void json_str(struct why_out *o, const char *key, const char *v)
{
	ip_json_string(o->ctx, key, v);
}

static void json_set(struct why_out *o, const char *key, const ip_cpuset *s)
{
	ip_json_cpuset(o->ctx, key, s);
}

static void json_flag(struct why_out *o, const char *key, bool v)
{
	ip_json_bool(o->ctx, key, v);
}

/* The reason as JSON: "code", the words, and the numbers behind them
 * that its code uses (irq and name are the record's, not repeated). */
static void why_json(struct ip_json *j, const struct ip_why *w, const char *text)
{
	struct why_out o = { json_num, json_integer, json_str, json_set, json_flag, j };

	ip_json_string(j, "code", ip_reason_code(w->code));
	ip_json_string(j, "reason", text);
	if (w->detail)
		ip_json_string(j, "detail", ip_reason_code(w->detail));
	why_numbers(&o, w, w->code);
}

void ip_report_why_json(struct ip_json *j, const struct ip_why *w)
{
	char text[IP_REASON_MAX];

	why_json(j, w, ip_report_why(text, sizeof(text), w));
}

/* ---- the plan --------------------------------------------------------- */


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

/* The plan's records, one array per kind. Moves, thread and irqpilot_cq
 * actions that apply marked failed are left out: "results" says why. */
static void plan_json_moves(struct ip_json *j, const struct ip_plan *p)
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
		ip_report_why_json(j, &m->why);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
}

static void plan_json_threads(struct ip_json *j, const struct ip_plan *p)
{
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
		ip_json_string(j, "policy", ip_report_sched_name(t->set_sched ? t->policy : t->from_policy));
		ip_json_int(j, "priority", t->set_sched ? t->priority : t->from_priority);
		ip_report_why_json(j, &t->why);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
}

static void plan_json_kept(struct ip_json *j, const struct ip_plan *p)
{
	ip_json_array_begin(j, "kept");
	for (int i = 0; p && i < p->nr_kept; i++) {
		const struct ip_kept *k = &p->kept[i];

		ip_json_object_begin(j, NULL);
		ip_json_uint(j, "irq", k->irq);
		ip_json_string(j, "name", k->name);
		ip_json_bool(j, "managed", k->managed);
		ip_report_why_json(j, &k->why);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
}

static void plan_json_rq(struct ip_json *j, const struct ip_plan *p)
{
	ip_json_array_begin(j, "rq_affinity");
	for (int i = 0; p && i < p->nr_rq; i++) {
		ip_json_object_begin(j, NULL);
		ip_json_string(j, "device", p->rq[i].device);
		ip_json_int(j, "from", p->rq[i].from);
		ip_json_int(j, "to", p->rq[i].value);
		ip_report_why_json(j, &p->rq[i].why);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
}

/* The irqpilot_cq actions of one direction: "attach" or "detach". */
static void plan_json_cq(struct ip_json *j, const struct ip_plan *p, const char *key, bool attach)
{
	ip_json_array_begin(j, key);
	for (int i = 0; p && i < p->nr_cq; i++) {
		const struct ip_cq_action *a = &p->cq[i];

		if (a->failed || a->attach != attach)
			continue;
		ip_json_object_begin(j, NULL);
		ip_json_string(j, "device", a->device);
		if (a->attach)
			ip_json_bool(j, "trial", a->trial);
		ip_report_why_json(j, &a->why);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
}

static void plan_json_notes(struct ip_json *j, const struct ip_plan *p)
{
	ip_json_array_begin(j, "notes");
	for (int i = 0; p && i < p->nr_notes; i++) {
		char text[IP_REASON_MAX];

		ip_json_object_begin(j, NULL);
		if (p->notes[i].device[0])
			ip_json_string(j, "device", p->notes[i].device);
		why_json(j, &p->notes[i].why, ip_report_note_line(text, sizeof(text), &p->notes[i]));
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
}

/* ---- act's results ------------------------------------------------- */

static const char *cq_strerror(int err)
{
	return err == -IP_CQ_ABSENT ? "irqpilot_cq is not loaded"
	       : err == -ENOTCONN  ? "no connection to irqpilot_cq yet, attached next cycle"
				    : strerror(-err);
}

/* The one wording of a freed vector's dropped original, at a sample and at
 * restore alike. */
static void irq_freed_text(struct line *l, const struct ip_apply_result *r)
{
	/* last and cut short: a shared line's names may be long, and what
	 * happened must not be what the line's length cuts off */
	char was[64], now[64];

	if (!r->reused) {
		put(l, "IRQ %u was freed (its line and proc/irq/%u are gone): its original is "
		       "dropped, not written onto the next IRQ of that number",
		    r->irq, r->irq);
		return;
	}
	put(l, "IRQ %u was freed (its number names another vector now): its original is dropped, "
	       "not written onto the next IRQ of that number; the line shows %s, not %s",
	    r->irq, ip_irq_ident_str(&r->now, now, sizeof(now)),
	    ip_irq_ident_str(&r->was, was, sizeof(was)));
}

static void irq_restore_text(struct line *l, const struct ip_apply_result *r, const char *path,
			     const char *set)
{
	if (r->detail == IP_APPLY_D_FREED)
		irq_freed_text(l, r);
	else if (r->detail == IP_APPLY_D_OFFLINE)
		put(l, "%s not restored to %s: none of those CPUs is online; the original is kept for "
		       "irqpilotd --restore",
		    path, set);
	else if (r->outcome == IP_APPLY_OK)
		put(l, "restored %s to %s", path, set);
	else if (r->outcome == IP_APPLY_VANISHED)
		put(l, "IRQ %u is gone (%s): nothing to restore", r->irq, path);
	else
		put(l, "restoring %s to %s failed: %s; the original is kept", path, set,
		    strerror(-r->err));
}

static void irq_result_text(struct line *l, const struct ip_apply_result *r)
{
	char path[48], b1[128], b2[128];

	snprintf(path, sizeof(path), "proc/irq/%u/smp_affinity_list", r->irq);
	set_str(b1, &r->written);
	if (r->restore) {
		irq_restore_text(l, r, path, b1);
		return;
	}
	switch (r->outcome) {
	case IP_APPLY_OK:
		if (r->detail != IP_APPLY_D_ELSEWHERE)
			put(l, "wrote %s to %s", b1, path);
		else if (r->pending)
			put(l, "IRQ %u set to %s; effective still %s: an IO-APIC line moves at its next interrupt",
			    r->irq, b1, set_str(b2, &r->effective));
		else
			put(l, "IRQ %u set to %s, but the kernel put it on %s", r->irq, b1,
			    set_str(b2, &r->effective));
		break;
	case IP_APPLY_DRY_RUN:
		put(l, "would write %s to %s", b1, path);
		break;
	case IP_APPLY_SKIPPED:
		put(l, "IRQ %u is managed by the kernel; not written", r->irq);
		break;
	case IP_APPLY_MANAGED:
		if (r->detail == IP_APPLY_D_MODE_0444)
			put(l, "IRQ %u is managed by the kernel (smp_affinity is mode 0444); not written",
			    r->irq);
		else
			put(l, "IRQ %u is managed by the kernel (write failed with %s); never written again",
			    r->irq, r->err == -EPERM ? "EPERM" : "EIO");
		break;
	case IP_APPLY_VANISHED:
		if (r->detail == IP_APPLY_D_FREED)
			irq_freed_text(l, r);
		else
			put(l, "IRQ %u vanished (%s is gone); dropped", r->irq, path);
		break;
	case IP_APPLY_RETRY:
		put(l, "IRQ %u refused %s (%s): a bad or offline CPU; planned again next cycle", r->irq,
		    b1, strerror(-r->err));
		break;
	case IP_APPLY_NO_SPACE:
		put(l, "IRQ %u: no vector space on %s nor on the rest of its domain", r->irq,
		    set_str(b2, &r->planned));
		break;
	case IP_APPLY_FAILED:
		/* -EBADMSG: keep_original() found no CPU list to put back */
		if (r->detail == IP_APPLY_D_UNRECORDED && r->err == -EBADMSG)
			put(l, "IRQ %u not written: %s holds no CPU list, so its original is unknown",
			    r->irq, path);
		else if (r->detail == IP_APPLY_D_UNRECORDED)
			put(l, "IRQ %u not written: its original could not be recorded first: %s", r->irq,
			    strerror(-r->err));
		else
			put(l, "writing %s to %s failed: %s", b1, path, strerror(-r->err));
		break;
	}
}

static void thread_restore_text(struct line *l, const struct ip_apply_result *r)
{
	const char *done = r->err ? "restoring" : "restored";
	const char *sep = r->err ? " failed: " : "", *err = r->err ? strerror(-r->err) : "";
	char b1[128];

	if (r->detail == IP_APPLY_D_THREAD_GONE)
		put(l, "thread %d %s is gone: nothing to restore", (int)r->pid, r->comm);
	else if (r->detail == IP_APPLY_D_IDENTITY)
		put(l, "thread %d %s: cannot read who it is (%s); not restored", (int)r->pid, r->comm,
		    strerror(-r->err));
	else if (r->detail == IP_APPLY_D_PID_REUSED)
		put(l, "pid %d is now %s started at %" PRIu64 ", not thread %s started at %" PRIu64
		       ": not restored",
		    (int)r->pid, r->now_comm, r->now_start, r->comm, r->start);
	else if (r->detail == IP_APPLY_D_OFFLINE)
		put(l, "the affinity of thread %d %s not restored to %s: none of those CPUs is online; "
		       "the original is kept for irqpilotd --restore",
		    (int)r->pid, r->comm, set_str(b1, &r->written));
	else if (r->what == IP_APPLY_THREAD_AFFINITY)
		put(l, "%s the affinity of thread %d %s to %s%s%s", done, (int)r->pid, r->comm,
		    set_str(b1, &r->written), sep, err);
	else
		put(l, "%s the policy of thread %d %s to %d, priority %d%s%s", done, (int)r->pid,
		    r->comm, r->policy, r->value, sep, err);
}

static void thread_result_text(struct line *l, const struct ip_apply_result *r)
{
	bool sched = r->what == IP_APPLY_THREAD_SCHED;
	const char *what = sched ? "priority" : "affinity";
	int pid = (int)r->pid;
	char b1[128];

	if (r->restore) {
		thread_restore_text(l, r);
		return;
	}
	set_str(b1, &r->written);
	switch (r->outcome) {
	case IP_APPLY_DRY_RUN:
	case IP_APPLY_OK:
		/* the plan sets SCHED_FIFO only (add_thread() in policy.c) */
		if (sched)
			put(l, "%sset thread %d %s to SCHED_FIFO %d",
			    r->outcome == IP_APPLY_DRY_RUN ? "would " : "", pid, r->comm, r->value);
		else
			put(l, "%sset the affinity of thread %d %s to %s",
			    r->outcome == IP_APPLY_DRY_RUN ? "would " : "", pid, r->comm, b1);
		break;
	case IP_APPLY_VANISHED:
		put(l, "thread %d %s is gone", pid, r->comm);
		break;
	case IP_APPLY_RETRY:
		put(l, "thread %d %s refused its %s (%s); planned again next cycle", pid, r->comm, what,
		    strerror(-r->err));
		break;
	default:
		if (r->detail == IP_APPLY_D_UNRECORDED && r->err == -EBADMSG)
			put(l, "thread %d %s not changed: its %s is not known, so restore could not put it "
			       "back",
			    pid, r->comm, what);
		else if (r->detail == IP_APPLY_D_UNRECORDED)
			put(l, "thread %d %s not changed: its original could not be recorded first: %s",
			    pid, r->comm, strerror(-r->err));
		else
			put(l, "setting the %s of thread %d %s failed: %s", what, pid, r->comm,
			    strerror(-r->err));
		break;
	}
}

static void rq_result_text(struct line *l, const struct ip_apply_result *r)
{
	char path[64];

	snprintf(path, sizeof(path), "sys/block/%s/queue/rq_affinity", r->device);
	if (r->restore && r->outcome == IP_APPLY_VANISHED) {
		put(l, "device %s is gone (%s): nothing to restore", r->device, path);
		return;
	}
	if (r->restore) {
		put(l, "%s %s to %d%s%s", r->err ? "restoring" : "restored", path, r->value,
		    r->err ? " failed: " : "", r->err ? strerror(-r->err) : "");
		return;
	}
	if (r->outcome == IP_APPLY_DRY_RUN)
		put(l, "would write %d to %s", r->value, path);
	else if (r->outcome == IP_APPLY_OK)
		put(l, "wrote %d to %s", r->value, path);
	else if (r->outcome == IP_APPLY_VANISHED)
		put(l, "device %s vanished (%s is gone)", r->device, path);
	else if (r->outcome == IP_APPLY_RETRY)
		put(l, "%s refused %d (%s)", path, r->value, strerror(-r->err));
	else if (r->detail == IP_APPLY_D_UNRECORDED && r->err == -EBADMSG)
		put(l, "%s not written: it holds no value 0-2, so its original is unknown", path);
	else if (r->detail == IP_APPLY_D_UNRECORDED)
		put(l, "%s not written: its original could not be recorded first: %s", path,
		    strerror(-r->err));
	else
		put(l, "writing %d to %s failed: %s", r->value, path, strerror(-r->err));
}

static void cq_result_text(struct line *l, const struct ip_apply_result *r)
{
	const char *verb = r->value ? "attach" : "detach", *to = r->value ? "to" : "from";

	if (r->restore && (r->outcome == IP_APPLY_OK || r->outcome == IP_APPLY_VANISHED)) {
		/* ENOENT: the module detached an owned disk itself, or the disk went */
		if (!r->err)
			put(l, "detached %s from irqpilot_cq", r->device);
		else if (r->err == -ENOENT)
			put(l, "%s was no longer attached to irqpilot_cq (already detached)", r->device);
		else
			put(l, "%s is not attached to irqpilot_cq: %s", r->device, cq_strerror(r->err));
	} else if (r->restore) {
		put(l, "detaching %s from irqpilot_cq failed: %s; kept for --restore", r->device,
		    cq_strerror(r->err));
	} else if (r->outcome == IP_APPLY_DRY_RUN) {
		put(l, "would %s %s (%u:%u) %s irqpilot_cq", verb, r->device, r->major, r->minor, to);
	} else if (r->outcome == IP_APPLY_OK) {
		put(l, "%sed %s (%u:%u) %s irqpilot_cq", verb, r->device, r->major, r->minor, to);
	} else if (r->detail == IP_APPLY_D_UNRECORDED) {
		put(l, "%s not attached: the attach could not be recorded first: %s", r->device,
		    strerror(-r->err));
	} else {
		put(l, "%s of %s (%u:%u) failed: %s", verb, r->device, r->major, r->minor,
		    cq_strerror(r->err));
	}
}

const char *ip_report_apply_line(char *buf, size_t size, const struct ip_apply_result *r)
{
	struct line l = { buf, size, 0 };

	if (size)
		buf[0] = '\0';
	switch (r->what) {
	case IP_APPLY_IRQ:
		irq_result_text(&l, r);
		break;
	case IP_APPLY_THREAD_AFFINITY:
	case IP_APPLY_THREAD_SCHED:
		thread_result_text(&l, r);
		break;
	case IP_APPLY_RQ:
		rq_result_text(&l, r);
		break;
	case IP_APPLY_CQ:
		cq_result_text(&l, r);
		break;
	}
	return buf;
}

static void plan_json_results(struct ip_json *j, const struct ip_apply_results *res)
{
	ip_json_array_begin(j, "results");
	for (int i = 0; res && i < res->n; i++) {
		const struct ip_apply_result *r = &res->r[i];
		char line[IP_REASON_MAX];

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
		if (r->detail != IP_APPLY_D_NONE)
			ip_json_string(j, "detail", ip_apply_detail_name(r->detail));
		ip_json_string(j, "message", ip_report_apply_line(line, sizeof(line), r));
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
}

void ip_report_plan_json(struct ip_json *j, const struct ip_plan *p, const struct ip_apply_results *res)
{
	plan_json_moves(j, p);
	plan_json_threads(j, p);
	plan_json_kept(j, p);
	plan_json_rq(j, p);
	plan_json_cq(j, p, "attach", true);
	plan_json_cq(j, p, "detach", false);
	plan_json_notes(j, p);
	plan_json_results(j, res);
}

void ip_report_plan_text(FILE *f, const struct ip_plan *p, const struct ip_apply_results *res,
			 bool dry_run)
{
	if (!p) {
		fprintf(f, "Plan: none yet (rates need two samples)\n");
		return;
	}
	char line[IP_REASON_MAX];

	fprintf(f, "Plan%s:\n", dry_run ? " (dry run: nothing written)" : "");
	for (int i = 0; i < p->nr_moves; i++)
		if (!p->moves[i].failed)
			fprintf(f, "  %s\n", ip_report_move_line(line, sizeof(line), &p->moves[i]));
	for (int i = 0; i < p->nr_threads; i++)
		if (!p->threads[i].failed)
			fprintf(f, "  %s\n", ip_report_thread_line(line, sizeof(line), &p->threads[i]));
	for (int i = 0; i < p->nr_rq; i++)
		fprintf(f, "  %s\n", ip_report_rq_line(line, sizeof(line), &p->rq[i]));
	for (int i = 0; i < p->nr_cq; i++)
		if (!p->cq[i].failed)
			fprintf(f, "  %s\n", ip_report_cq_line(line, sizeof(line), &p->cq[i]));
	for (int i = 0; i < p->nr_kept; i++)
		fprintf(f, "  %s\n", ip_report_kept_line(line, sizeof(line), &p->kept[i]));
	for (int i = 0; i < p->nr_notes; i++)
		fprintf(f, "  note: %s\n", ip_report_note_line(line, sizeof(line), &p->notes[i]));
	for (int i = 0; res && i < res->n; i++)
		if (res->r[i].outcome != IP_APPLY_OK && res->r[i].outcome != IP_APPLY_DRY_RUN)
			fprintf(f, "  %s\n", ip_report_apply_line(line, sizeof(line), &res->r[i]));
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
	if (i == s->nr_irqs || sub_total <= 0 || !m->irq[i].nr)
		goto none;
	for (int k = 0; k < m->irq[i].nr && m->irq[i].first + k < n; k++) {
		int d = s->topo.cpus[m->irq[i].first + k].domain;

		irq_total += m->irq[i].percpu[k];
		if (d >= 0 && d < nd)
			hit[d] += m->irq[i].percpu[k];
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

/* ---- the journal -------------------------------------------------------- */

/* An empty entry with @message_id (NULL: none). */
static void jf_reset(struct ip_journal *jf, const char *message_id)
{
	jf->message_id = message_id;
	jf->message[0] = '\0';
	jf->nr = 0;
	jf->used = 0;
	jf->fields[0] = NULL;
}

static void jf_init(struct ip_journal *jf, const struct ip_why *w)
{
	jf_reset(jf, ip_reason_message_id(w->code));
}

/* A field whose name is already there is left out: a detail's numbers
 * do not repeat the reason's. */
static bool jf_has(const struct ip_journal *jf, const char *field, size_t keylen)
{
	for (int i = 0; i < jf->nr; i++)
		if (strncmp(jf->fields[i], field, keylen) == 0)
			return true;
	return false;
}

static void jf_add(struct ip_journal *jf, const char *fmt, ...) _printf_(2, 3);
static void jf_add(struct ip_journal *jf, const char *fmt, ...)
{
	size_t room = sizeof(jf->buf) - jf->used;
	char *f = jf->buf + jf->used;
	const char *eq;
	va_list ap;
	int n;

	if (jf->nr >= (int)ARRAY_SIZE(jf->fields) - 1 || room < 2)
		return;
	va_start(ap, fmt);
	n = vsnprintf(f, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room)
		return; /* a field cut short would say something false: leave it out */
	eq = strchr(f, '=');
	if (!eq || jf_has(jf, f, (size_t)(eq - f) + 1))
		return;
	jf->fields[jf->nr++] = f;
	jf->fields[jf->nr] = NULL;
	jf->used += (size_t)n + 1;
}

/* "min_rate" → "IRQPILOT_MIN_RATE=" */
static const char *jf_key(char buf[48], const char *key)
{
	size_t n = snprintf(buf, 48, "IRQPILOT_");

	for (; *key && n < 46; key++)
		buf[n++] = (*key >= 'a' && *key <= 'z') ? (char)(*key - 'a' + 'A') : *key;
	buf[n] = '\0';
	return buf;
}

/* Numbers for people (the catalog's @FIELD@) and scripts alike: whole
 * numbers without decimals, fractions (shares, 0..1) with two. */
static void jo_num(struct why_out *o, const char *key, double v)
{
	char k[48];
	long long r = (long long)(v < 0 ? v - 0.5 : v + 0.5);

	if (v - (double)r < 0.005 && (double)r - v < 0.005)
		jf_add(o->ctx, "%s=%lld", jf_key(k, key), r);
	else if (v < 10 && v > -10)
		jf_add(o->ctx, "%s=%.2f", jf_key(k, key), v);
	else
		jf_add(o->ctx, "%s=%.1f", jf_key(k, key), v);
}

static void jo_integer(struct why_out *o, const char *key, long long v)
{
	char k[48];

	jf_add(o->ctx, "%s=%lld", jf_key(k, key), v);
}

static void jo_str(struct why_out *o, const char *key, const char *v)
{
	char k[48];

	jf_add(o->ctx, "%s=%s", jf_key(k, key), v);
}

static void jo_set(struct why_out *o, const char *key, const ip_cpuset *s)
{
	char k[48];

	jf_add(o->ctx, "%s=%s", jf_key(k, key), cpuset_str(s));
}

static void jo_flag(struct why_out *o, const char *key, bool v)
{
	char k[48];

	jf_add(o->ctx, "%s=%d", jf_key(k, key), v ? 1 : 0);
}

/*
 * The reason's fields: IRQPILOT_REASON=code, IRQPILOT_DETAIL=code, the
 * numbers of both under the JSON's names, and what only the words said:
 * the other vector (IRQPILOT_VECTOR), the CPUs of a pin or a follow
 * (IRQPILOT_CPUS, IRQPILOT_PIN_LEFT), whose submitters (IRQPILOT_SUBMITTERS).
 */
static void jf_why(struct ip_journal *jf, const struct ip_why *w)
{
	struct why_out o = { jo_num, jo_integer, jo_str, jo_set, jo_flag, jf };
	enum ip_reason c[2] = { w->code, w->detail };

	jf_add(jf, "IRQPILOT_REASON=%s", ip_reason_code(w->code));
	if (w->detail)
		jf_add(jf, "IRQPILOT_DETAIL=%s", ip_reason_code(w->detail));
	for (int i = 0; i < 2 && c[i]; i++) {
		why_numbers(&o, w, c[i]);
		switch (c[i]) {
		case IP_R_FOLLOWS_MOVE:
		case IP_R_FOLLOWS:
		case IP_R_NOTE_PIN_UNUSABLE:
		case IP_R_NOTE_PIN_GONE:
			jf_add(jf, "IRQPILOT_VECTOR=%u", w->irq);
			jf_add(jf, "IRQPILOT_CPUS=%s", cpuset_str(&w->set));
			break;
		case IP_R_PIN:
			if (w->trimmed) {
				jf_add(jf, "IRQPILOT_CPUS=%s", cpuset_str(&w->set));
				jf_add(jf, "IRQPILOT_PIN_LEFT=%s", cpuset_str(&w->set2));
			}
			break;
		case IP_R_MANAGED_THREAD:
		case IP_R_CQ_BLKMQ_COMPLETES:
			jf_add(jf, "IRQPILOT_VECTOR=%u", w->irq);
			break;
		case IP_R_CQ_NOT_SLOWER:
		case IP_R_CQ_NEEDED:
			jf_add(jf, "IRQPILOT_VECTOR=%u", w->irq);
			jf_add(jf, "IRQPILOT_CPUS=%s", cpuset_str(&w->set));
			break;
		default:
			break;
		}
	}
	if (w->devices[0])
		jf_add(jf, "IRQPILOT_SUBMITTERS=%s", w->devices);
}

void ip_report_move_journal(struct ip_journal *jf, const struct ip_move *m)
{
	jf_init(jf, &m->why);
	ip_report_move_line(jf->message, sizeof(jf->message), m);
	jf_add(jf, "IRQPILOT_IRQ=%u", m->irq);
	if (m->device[0])
		jf_add(jf, "IRQPILOT_DEVICE=%s", m->device);
	else
		jf_add(jf, "IRQPILOT_DEVICE=IRQ %u", m->irq);
	jf_add(jf, "IRQPILOT_FROM=%s", cpuset_str(&m->from));
	jf_add(jf, "IRQPILOT_TO=%s", cpuset_str(&m->to));
	jf_why(jf, &m->why);
}

void ip_report_thread_journal(struct ip_journal *jf, const struct ip_thread_action *t)
{
	jf_init(jf, &t->why);
	ip_report_thread_line(jf->message, sizeof(jf->message), t);
	jf_add(jf, "IRQPILOT_PID=%d", (int)t->pid);
	if (t->irq)
		jf_add(jf, "IRQPILOT_IRQ=%u", t->irq);
	if (t->completion) {
		jf_add(jf, "IRQPILOT_DEVICE=%s", t->device);
		jf_add(jf, "IRQPILOT_QUEUE=%u", t->hwq);
	}
	if (t->set_affinity) {
		jf_add(jf, "IRQPILOT_FROM=%s", cpuset_str(&t->from));
		jf_add(jf, "IRQPILOT_TO=%s", cpuset_str(&t->to));
	}
	jf_why(jf, &t->why);
}

void ip_report_kept_journal(struct ip_journal *jf, const struct ip_kept *k)
{
	jf_init(jf, &k->why);
	ip_report_kept_line(jf->message, sizeof(jf->message), k);
	jf_add(jf, "IRQPILOT_IRQ=%u", k->irq);
	jf_why(jf, &k->why);
}

void ip_report_rq_journal(struct ip_journal *jf, const struct ip_rq_action *r)
{
	jf_init(jf, &r->why);
	ip_report_rq_line(jf->message, sizeof(jf->message), r);
	jf_add(jf, "IRQPILOT_DEVICE=%s", r->device);
	if (r->from >= 0)
		jf_add(jf, "IRQPILOT_FROM=%d", r->from);
	jf_add(jf, "IRQPILOT_TO=%d", r->value);
	jf_why(jf, &r->why);
}

void ip_report_cq_journal(struct ip_journal *jf, const struct ip_cq_action *a)
{
	jf_init(jf, &a->why);
	ip_report_cq_line(jf->message, sizeof(jf->message), a);
	jf_add(jf, "IRQPILOT_DEVICE=%s", a->device);
	jf_why(jf, &a->why);
}

void ip_report_note_journal(struct ip_journal *jf, const struct ip_note *n)
{
	jf_init(jf, &n->why);
	ip_report_note_line(jf->message, sizeof(jf->message), n);
	if (n->device[0])
		jf_add(jf, "IRQPILOT_DEVICE=%s", n->device);
	jf_why(jf, &n->why);
}

/* "EPERM"; the number where glibc has no name for it */
static const char *errno_label(int e, char *buf, size_t size)
{
	const char *name = strerrorname_np(e);

	if (name)
		return name;
	snprintf(buf, size, "%d", e);
	return buf;
}

void ip_report_apply_journal(struct ip_journal *jf, const struct ip_apply_result *r)
{
	char en[16];

	jf_reset(jf, r->restore ? IP_MESSAGE_RESTORE
		     : r->outcome == IP_APPLY_MANAGED ? IP_MESSAGE_MANAGED : NULL);
	ip_report_apply_line(jf->message, sizeof(jf->message), r);
	if (r->what == IP_APPLY_IRQ || r->pid)
		jf_add(jf, "IRQPILOT_IRQ=%u", r->irq);
	if (r->pid)
		jf_add(jf, "IRQPILOT_PID=%d", (int)r->pid);
	if (r->device[0])
		jf_add(jf, "IRQPILOT_DEVICE=%s", r->device);
	jf_add(jf, "IRQPILOT_ACTION=%s", what_name(r->what));
	jf_add(jf, "IRQPILOT_OUTCOME=%s", ip_apply_outcome_name(r->outcome));
	if (r->detail != IP_APPLY_D_NONE)
		jf_add(jf, "IRQPILOT_OUTCOME_DETAIL=%s", ip_apply_detail_name(r->detail));
	if (r->err)
		jf_add(jf, "IRQPILOT_ERRNO=%s", errno_label(-r->err, en, sizeof(en)));
	if (r->what == IP_APPLY_IRQ || r->what == IP_APPLY_THREAD_AFFINITY)
		jf_add(jf, "IRQPILOT_TO=%s", cpuset_str(&r->written));
}

int ip_report_flush(FILE *f)
{
	if (fflush(f) != 0)
		return errno ? -errno : -EIO;
	return ferror(f) ? -EIO : 0;
}

/* ---- metrics: Prometheus text exposition format 0.0.4 ------------------- */

const char *ip_report_prom_escape(const char *s, char *buf, size_t size)
{
	size_t o = 0;

	if (!size)
		return buf;
	for (; *s; s++) {
		const char *esc = *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : *s == '\n' ? "\\n" : NULL;
		size_t n = esc ? 2 : 1;

		if (o + n >= size)
			break;
		if (esc)
			memcpy(buf + o, esc, 2);
		else
			buf[o] = *s;
		o += n;
	}
	buf[o] = '\0';
	return buf;
}

/* The families in one table, so that a name, its type and its help cannot
 * be written one way in one place and another in the next. */
enum prom_family {
	PF_CYCLES,
	PF_CYCLE_SECONDS,
	PF_CPU_SECONDS,
	PF_SCANS,
	PF_FULL_SCAN_CPU,
	PF_FULL_SCAN_PERIOD,
	PF_MANAGED,
	PF_MOVES,
	PF_APPLY_ERRORS,
	PF_LOCALITY,
	PF_INTERRUPTS,
	PF_SUBMISSIONS,
	PF_CQ_LOADED,
	PF_CQ_COMPLETIONS,
	PF_CQ_RATE,
	PF_CQ_WAKEUPS,
	PF_CQ_STALLS,
	PF_CQ_MAX_WAIT,
	PF_COUNT,
};

static const struct {
	const char *name, *type, *help;
} prom_families[PF_COUNT] = {
	[PF_CYCLES] = { "irqpilot_cycles_total", "counter", "Sampling cycles the daemon completed." },
	[PF_CYCLE_SECONDS] = { "irqpilot_cycle_duration_seconds", "gauge",
			       "How long the last cycle took: sample, derive, decide, act, report." },
	[PF_CPU_SECONDS] = { "irqpilot_cpu_seconds_total", "counter",
			     "User and system CPU time the daemon used." },
	[PF_SCANS] = { "irqpilot_scans_total", "counter",
		       "Samples by kind: full read all of /proc/interrupts, fast only the tracked vectors' counts." },
	[PF_FULL_SCAN_CPU] = { "irqpilot_full_scan_cpu_seconds", "gauge",
			       "CPU time the last full sample spent reading /proc/interrupts." },
	[PF_FULL_SCAN_PERIOD] = { "irqpilot_full_scan_period_seconds", "gauge",
				  "How long after the last full sample the next comes when nothing asks for one sooner." },
	[PF_MANAGED] = { "irqpilot_managed_vectors", "gauge",
			 "Storage vectors whose affinity the kernel manages (never moved)." },
	[PF_MOVES] = { "irqpilot_moves_total", "counter", "Vectors moved, by the reason code of the move." },
	[PF_APPLY_ERRORS] = { "irqpilot_apply_errors_total", "counter",
			      "Writes of affinities, priorities, rq_affinity and irqpilot_cq attaches that failed, by errno." },
	[PF_LOCALITY] = { "irqpilot_completion_locality_ratio", "gauge",
			  "Share of a device's completions whose interrupt fired in the domain of the CPU that submitted the I/O, last cycle." },
	[PF_INTERRUPTS] = { "irqpilot_interrupts_total", "counter",
			    "Interrupts of a device's vectors, by the CPU domain that handled them." },
	[PF_SUBMISSIONS] = { "irqpilot_submissions_total", "counter",
			     "I/O submissions of a device, by the CPU domain that submitted them." },
	[PF_CQ_LOADED] = { "irqpilot_cq_loaded", "gauge", "1 when the irqpilot_cq module answered in the last cycle." },
	[PF_CQ_COMPLETIONS] = { "irqpilot_cq_completions_total", "counter",
				"Completions run by an irqpilot_cq completion thread." },
	[PF_CQ_RATE] = { "irqpilot_cq_completions_per_second", "gauge",
			 "Completions per second of an irqpilot_cq completion thread, last cycle." },
	[PF_CQ_WAKEUPS] = { "irqpilot_cq_wakeups_total", "counter",
			    "Wakeups of an irqpilot_cq completion thread." },
	[PF_CQ_STALLS] = { "irqpilot_cq_stalls_total", "counter",
			   "Stalls irqpilot_cq reported: a request waited too long for its completion thread." },
	[PF_CQ_MAX_WAIT] = { "irqpilot_cq_max_wait_seconds", "gauge",
			     "The longest a request waited for an irqpilot_cq completion thread, as the module reports it." },
};

static void prom_head(FILE *f, enum prom_family pf)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", prom_families[pf].name, prom_families[pf].help,
		prom_families[pf].name, prom_families[pf].type);
}

/* Doubles as Go's ParseFloat reads them; 15 digits keep whole counts
 * exact up to 10^15 and never round a growing counter down. */
static void prom_double(FILE *f, enum prom_family pf, const char *labels, double v)
{
	fprintf(f, "%s%s %.15g\n", prom_families[pf].name, labels, v);
}

static void prom_uint(FILE *f, enum prom_family pf, const char *labels, uint64_t v)
{
	fprintf(f, "%s%s %" PRIu64 "\n", prom_families[pf].name, labels, v);
}

/* {k1="v1",k2="v2"} with the values escaped; @k2 may be NULL. */
static const char *prom_labels(char *buf, size_t size, const char *k1, const char *v1, const char *k2,
			       const char *v2)
{
	char e1[256], e2[IP_CPULIST_MAX * 2];

	ip_report_prom_escape(v1, e1, sizeof(e1));
	if (k2)
		snprintf(buf, size, "{%s=\"%s\",%s=\"%s\"}", k1, e1, k2, ip_report_prom_escape(v2, e2, sizeof(e2)));
	else
		snprintf(buf, size, "{%s=\"%s\"}", k1, e1);
	return buf;
}

/* The daemon's own families: its cycles, their cost and its samples. */
static void prom_daemon(FILE *f, const struct ip_metrics *mx)
{
	prom_head(f, PF_CYCLES);
	prom_uint(f, PF_CYCLES, "", mx->cycles);
	prom_head(f, PF_CYCLE_SECONDS);
	if (mx->have_cycle)
		prom_double(f, PF_CYCLE_SECONDS, "", mx->cycle_s);
	prom_head(f, PF_CPU_SECONDS);
	prom_double(f, PF_CPU_SECONDS, "", mx->cpu_s);
	prom_head(f, PF_SCANS);
	prom_uint(f, PF_SCANS, "{kind=\"full\"}", mx->full_scans);
	prom_uint(f, PF_SCANS, "{kind=\"fast\"}", mx->fast_scans);
	prom_head(f, PF_FULL_SCAN_CPU);
	if (mx->full_scans)
		prom_double(f, PF_FULL_SCAN_CPU, "", (double)mx->full_scan_cpu_ns / 1e9);
	prom_head(f, PF_FULL_SCAN_PERIOD);
	if (mx->full_scans)
		prom_double(f, PF_FULL_SCAN_PERIOD, "", (double)mx->full_scan_period_ns / 1e9);
}

void ip_report_metrics_text(FILE *f, const struct ip_metrics *mx)
{
	char lb[IP_CPULIST_MAX * 2 + 512], q[16], en[16];

	prom_daemon(f, mx);
	prom_head(f, PF_MANAGED);
	prom_uint(f, PF_MANAGED, "", (uint64_t)MAX(mx->managed, 0));

	prom_head(f, PF_MOVES);
	for (int r = 0; r < IP_R_COUNT; r++)
		if (mx->moves[r])
			prom_uint(f, PF_MOVES, prom_labels(lb, sizeof(lb), "reason", ip_reason_code((enum ip_reason)r), NULL, NULL),
				  mx->moves[r]);
	prom_head(f, PF_APPLY_ERRORS);
	for (int e = 1; e < IP_METRICS_ERRNO_MAX; e++)
		if (mx->apply_errors[e])
			prom_uint(f, PF_APPLY_ERRORS,
				  prom_labels(lb, sizeof(lb), "errno", errno_label(e, en, sizeof(en)), NULL, NULL),
				  mx->apply_errors[e]);

	prom_head(f, PF_LOCALITY);
	for (size_t i = 0; i < mx->nr_dev; i++)
		prom_double(f, PF_LOCALITY, prom_labels(lb, sizeof(lb), "device", mx->dev[i].device, NULL, NULL),
			    mx->dev[i].locality);
	prom_head(f, PF_INTERRUPTS);
	for (size_t i = 0; i < mx->nr_devdom; i++)
		prom_uint(f, PF_INTERRUPTS,
			  prom_labels(lb, sizeof(lb), "device", mx->devdom[i].device, "domain", mx->devdom[i].domain),
			  mx->devdom[i].interrupts);
	prom_head(f, PF_SUBMISSIONS);
	for (size_t i = 0; i < mx->nr_devdom; i++)
		prom_double(f, PF_SUBMISSIONS,
			    prom_labels(lb, sizeof(lb), "device", mx->devdom[i].device, "domain", mx->devdom[i].domain),
			    mx->devdom[i].submissions);

	prom_head(f, PF_CQ_LOADED);
	prom_uint(f, PF_CQ_LOADED, "", mx->cq_loaded);
	for (int pf = PF_CQ_COMPLETIONS; pf <= PF_CQ_MAX_WAIT; pf++) {
		prom_head(f, (enum prom_family)pf);
		for (size_t i = 0; i < mx->nr_cq; i++) {
			const struct ip_metrics_cq *c = &mx->cq[i];

			snprintf(q, sizeof(q), "%u", c->hwq);
			prom_labels(lb, sizeof(lb), "device", c->disk, "queue", q);
			switch (pf) {
			case PF_CQ_COMPLETIONS:
				prom_uint(f, pf, lb, c->completions);
				break;
			case PF_CQ_WAKEUPS:
				prom_uint(f, pf, lb, c->wakeups);
				break;
			case PF_CQ_STALLS:
				prom_uint(f, pf, lb, c->stalls);
				break;
			/* gauges only of the threads there now */
			case PF_CQ_RATE:
				if (c->present && c->have_rate)
					prom_double(f, pf, lb, c->rate);
				break;
			case PF_CQ_MAX_WAIT:
				if (c->present)
					prom_double(f, pf, lb, (double)c->max_wait_ns / 1e9);
				break;
			}
		}
	}
}
