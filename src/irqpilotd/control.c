// SPDX-License-Identifier: GPL-2.0-or-later
/* The control socket's requests: what irqctl asks, answered from the last
 * cycle's model and plan. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "irqpilot/capture.h"
#include "irqpilot/daemon.h"
#include "irqpilot/macro.h"
#include "irqpilot/report.h"

static const char *policy_name(unsigned p)
{
	return p == 1 ? "FIFO" : p == 2 ? "RR" : "OTHER";
}

static const struct ip_step *last_step(struct ip_daemon *d, FILE *out)
{
	const struct ip_step *st = ip_engine_last(d->engine);

	if (!st)
		ip_proto_reply_error(out, EAGAIN, "no sample yet: the first cycle has not run");
	return st;
}

/* The reason the last plan gave for @irq, in @buf: a move, a kept entry, or none. */
static const char *decision_for(const struct ip_step *st, unsigned irq, char *buf, size_t size)
{
	for (int i = 0; st->decided && i < st->plan.nr_moves; i++)
		if (st->plan.moves[i].irq == irq && !st->plan.moves[i].failed)
			return ip_report_move_line(buf, size, &st->plan.moves[i]);
	for (int i = 0; st->decided && i < st->plan.nr_kept; i++)
		if (st->plan.kept[i].irq == irq)
			return ip_report_kept_line(buf, size, &st->plan.kept[i]);
	return NULL;
}

static const char *devices_of(const struct ip_snapshot *s, const struct ip_irq *q, char *buf, size_t size)
{
	const struct ip_irq_info *info = ip_irq_info(q);
	size_t len = 0;

	buf[0] = '\0';
	for (int k = 0; k < info->nr_devs && len < size; k++)
		len += snprintf(buf + len, size - len, "%s%s", k ? "," : "", s->storage.devs[info->devs[k]].name);
	if (!info->nr_devs)
		snprintf(buf, size, "-");
	return buf;
}

static int busiest_cpu(const struct ip_model *m, int i)
{
	int best = -1;

	for (int c = 0; m->irq[i].percpu && c < m->cur->topo.nr_cpus; c++)
		if (m->irq[i].percpu[c] > 0 && (best < 0 || m->irq[i].percpu[c] > m->irq[i].percpu[best]))
			best = c;
	return best;
}

/* ---- status ------------------------------------------------------------ */

static void do_status(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	const struct ip_step *st = ip_engine_last(d->engine);
	const struct ip_history *h = ip_engine_history(d->engine);
	int steered = 0, managed = 0, devs = st ? st->model.cur->storage.nr_devs : 0;
	const char *src = ip_sampler_submit_source(ip_engine_sampler(d->engine));

	for (int i = 0; st && i < st->model.cur->nr_irqs; i++) {
		const struct ip_irq *q = &st->model.cur->irqs[i];
		const struct ip_irq_info *info = ip_irq_info(q);
		const struct ip_irq_hist *e = ip_history_find(h, q->irq);

		if (!info->nr_devs)
			continue;
		if (info->managed != IP_MANAGED_NO || (e && e->managed != IP_MANAGED_NO))
			managed++;
		else if (e && e->placed)
			steered++;
	}
	if (req->json) {
		struct ip_json j;

		ip_proto_reply_begin(&j, out);
		ip_json_string(&j, "version", PACKAGE_VERSION);
		ip_json_int(&j, "pid", getpid());
		ip_json_string(&j, "root", d->o.root);
		ip_json_string(&j, "config", d->o.config_path);
		ip_json_bool(&j, "dry_run", ip_engine_dry_run(d->engine));
		ip_json_double(&j, "interval_s", d->o.interval_s > 0 ? d->o.interval_s : d->cfg.daemon.interval_s);
		ip_json_bool(&j, "idle", d->idle);
		ip_json_uint(&j, "cycles", d->cycles);
		ip_json_int(&j, "devices", devs);
		ip_json_int(&j, "vectors_steered", steered);
		ip_json_int(&j, "vectors_managed", managed);
		ip_json_uint(&j, "moves", d->moves_total);
		ip_json_string(&j, "last_move", d->last_move[0] ? d->last_move : NULL);
		if (d->last_move[0])
			ip_json_uint(&j, "last_move_cycle", d->last_move_cycle);
		else
			ip_json_null(&j, "last_move_cycle");
		ip_json_string(&j, "submit_source", src);
		ip_json_string(&j, "capture", d->cap_dir);
		ip_json_array_begin(&j, "warnings");
		for (int i = 0; i < devs; i++) {
			char w[640];

			if (ip_blockdev_unsteerable(&st->model.cur->storage.devs[i]))
				ip_json_string(&j, NULL,
					       ip_report_discovery(&st->model.cur->storage.devs[i], w, sizeof(w)));
		}
		ip_json_array_end(&j);
		ip_proto_reply_end(&j);
		return;
	}
	{
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		if (!f) {
			ip_proto_reply_error(out, ENOMEM, "out of memory");
			return;
		}
		fprintf(f, "irqpilotd %s (pid %d), root %s%s\n", PACKAGE_VERSION, (int)getpid(), d->o.root,
			ip_engine_dry_run(d->engine) ? ", dry run: nothing is written" : "");
		fprintf(f, "policy file: %s\n", d->o.config_path);
		fprintf(f, "cycles: %u, every %.1f s%s\n", d->cycles,
			d->idle ? IP_IDLE_INTERVAL_S : (d->o.interval_s > 0 ? d->o.interval_s : d->cfg.daemon.interval_s),
			d->idle ? " (no storage I/O)" : "");
		fprintf(f, "devices: %d; vectors steered: %d; managed by the kernel: %d\n", devs, steered, managed);
		if (d->last_move[0])
			fprintf(f, "moves: %u; last: %s, in cycle %u\n", d->moves_total, d->last_move,
				d->last_move_cycle);
		else
			fprintf(f, "moves: %u; last: none\n", d->moves_total);
		fprintf(f, "submissions counted by: %s\n", src);
		if (d->cap_dir)
			fprintf(f, "capturing into %s: %d samples to go\n", d->cap_dir, d->cap_left);
		if (st)
			ip_report_unsteerable_text(f, &st->model.cur->storage, "");
		fclose(f);
		ip_proto_reply_text(out, text);
	}
}

/* ---- show ------------------------------------------------------------ */

/* irqpilot_cq's threads, after the IRQ threads: what each costs per completion. */
static void show_cq_threads(const struct ip_model *m, FILE *f)
{
	const struct ip_snapshot *s = m->cur;

	if (!s->have_cq) {
		fprintf(f, "\ncompletion threads: none (irqpilot_cq is not loaded)\n");
		return;
	}
	fprintf(f, "\n%-7s %-10s %-5s %-12s %-9s %13s %11s %12s\n", "PID", "DEVICE", "QUEUE", "CPUS",
		"SCHED", "COMPLETIONS/s", "WAKEUPS/CPL", "MAX WAIT us");
	if (!s->nr_cq)
		fprintf(f, "(no device attached to irqpilot_cq)\n");
	for (int i = 0; i < s->nr_cq; i++) {
		const struct ip_cq_thread *t = &s->cq[i];
		struct ip_cq_rate r;
		char sched[24], rate[24], per[24];

		ip_model_cq_rate(m, i, &r, NULL);
		snprintf(sched, sizeof(sched), "%s/%u", t->have_sched ? policy_name(t->policy) : "?",
			 t->rt_priority);
		snprintf(rate, sizeof(rate), r.have ? "%.0f" : "-", r.completions);
		if (r.wakeups_per_completion >= 0)
			snprintf(per, sizeof(per), "%.2f", r.wakeups_per_completion);
		else
			snprintf(per, sizeof(per), "-");
		fprintf(f, "%-7d %-10s %-5u %-12s %-9s %13s %11s %12.0f\n", (int)t->pid,
			t->dev >= 0 ? s->storage.devs[t->dev].name : t->disk, t->hwq,
			cpuset_str(&t->allowed), sched, rate, per, t->max_wait_ns / 1000.0);
	}
}

static void show_text(const struct ip_step *st, enum ip_object obj, FILE *f)
{
	const struct ip_model *m = &st->model;
	const struct ip_snapshot *s = m->cur;
	char buf[256];

	switch (obj) {
	case IP_OBJ_IRQS:
		fprintf(f, "%-5s %-24s %-14s %-12s %-9s %10s  %s\n", "IRQ", "NAME", "DEVICES", "AFFINITY",
			"EFFECTIVE", "RATE/s", "MANAGED");
		for (int i = 0; i < s->nr_irqs; i++) {
			const struct ip_irq *q = &s->irqs[i];
			const struct ip_irq_info *info = ip_irq_info(q);

			if (!q->tracked)
				continue;
			fprintf(f, "%-5u %-24.24s %-14.14s %-12s %-9s %10.0f  %s\n", q->irq, q->actions,
				devices_of(s, q, buf, sizeof(buf)), info->have_proc ? cpuset_str(&info->affinity) : "?",
				info->have_effective ? cpuset_str(&info->effective) : "-", m->irq[i].total,
				info->managed != IP_MANAGED_NO ? "yes" : "no");
		}
		break;
	case IP_OBJ_CPUS:
		fprintf(f, "%-4s %-7s %-6s %-11s %-8s %-8s %10s %10s\n", "CPU", "ONLINE", "DOMAIN", "CLASS",
			"CAPACITY", "ISOLATED", "IRQ/s", "BLOCK/s");
		for (int c = 0; c < s->topo.nr_cpus; c++) {
			const struct ip_cpu *cpu = &s->topo.cpus[c];

			if (!cpuset_test(&s->topo.possible, c))
				continue;
			fprintf(f, "%-4d %-7s %-6d %-11s %-8u %-8s %10.0f %10.0f\n", c, cpu->online ? "yes" : "no",
				cpu->domain,
				cpu->domain >= 0 ? ip_cap_class_name(s->topo.domains[cpu->domain].cls) : "-",
				cpu->capacity, cpu->isolated ? "yes" : "no", m->cpu_irq[c], m->cpu_softirq[c]);
		}
		break;
	case IP_OBJ_DOMAINS:
		fprintf(f, "%-3s %-11s %-16s %-8s %s\n", "ID", "CLASS", "CPUS", "CAPACITY", "CAPACITY FROM");
		for (int i = 0; i < s->topo.nr_domains; i++)
			fprintf(f, "%-3d %-11s %-16s %-8u %s\n", i, ip_cap_class_name(s->topo.domains[i].cls),
				cpuset_str(&s->topo.domains[i].cpus), s->topo.domains[i].capacity,
				ip_cap_source_name(s->topo.cap_source));
		break;
	case IP_OBJ_DEVICES:
		fprintf(f, "%-10s %-14s %-14s %-6s %-8s %-3s %12s  %s\n", "DEVICE", "DRIVER", "BUS ID", "QUEUES",
			"VECTORS", "RQA", "SUBMIT/s", "SUBMITTED FROM");
		for (int i = 0; i < s->storage.nr_devs; i++) {
			const struct ip_blockdev *b = &s->storage.devs[i];
			const struct ip_dev_rate *r = &m->dev[i];
			int best = -1;
			double *byd = calloc(s->topo.nr_domains ? s->topo.nr_domains : 1, sizeof(double));

			for (int c = 0; byd && c < s->topo.nr_cpus; c++)
				if (s->topo.cpus[c].domain >= 0)
					byd[s->topo.cpus[c].domain] += r->submit[c];
			for (int k = 0; byd && k < s->topo.nr_domains; k++)
				if (byd[k] > 0 && (best < 0 || byd[k] > byd[best]))
					best = k;
			fprintf(f, "%-10s %-14.14s %-14.14s %-6d %-8d %-3d %12.0f  ", b->name, b->driver, b->bus_id,
				b->nr_queues, b->nr_vectors, b->rq_affinity, r->submit_total);
			if (best >= 0)
				fprintf(f, "%s domain %s (%.0f%%, %s)\n", ip_cap_class_name(s->topo.domains[best].cls),
					cpuset_str(&s->topo.domains[best].cpus), 100 * byd[best] / r->submit_total,
					ip_count_source_name(r->submit_src));
			else
				fprintf(f, "- (%s)\n", ip_count_source_name(r->submit_src));
			free(byd);
		}
		break;
	case IP_OBJ_THREADS:
		fprintf(f, "%-7s %-28s %-5s %-12s %-9s %6s %10s %9s\n", "PID", "COMM", "IRQ", "CPUS", "SCHED",
			"CPU%", "WAKEUPS/s", "PER IRQ");
		for (int i = 0; i < s->nr_threads; i++) {
			const struct ip_irq_thread *t = &s->threads[i];
			const struct ip_thread_rate *r = &m->thread[i];
			char sched[24], per[24];

			snprintf(sched, sizeof(sched), "%s/%u", policy_name(t->policy), t->rt_priority);
			if (r->wakeups_per_irq >= 0)
				snprintf(per, sizeof(per), "%.2f", r->wakeups_per_irq);
			else
				snprintf(per, sizeof(per), "-");
			fprintf(f, "%-7d %-28.28s %-5u %-12s %-9s %6.1f %10.0f %9s\n", (int)t->pid, t->comm, t->irq,
				cpuset_str(&t->allowed), sched, r->cpu_pct, r->wakeups, per);
		}
		show_cq_threads(m, f);
		break;
	default:
		break;
	}
}

static void do_show(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	const struct ip_step *st = last_step(d, out);
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (!st)
		return;
	if (req->json) {
		struct ip_json j;

		ip_proto_reply_begin(&j, out);
		switch (req->object) {
		case IP_OBJ_IRQS:
			ip_report_json_irqs(&j, &st->model);
			break;
		case IP_OBJ_CPUS:
		case IP_OBJ_DOMAINS:
			ip_report_json_cpus(&j, &st->model);
			break;
		case IP_OBJ_DEVICES:
			ip_report_json_devices(&j, &st->model);
			break;
		case IP_OBJ_THREADS:
			ip_report_json_threads(&j, &st->model);
			break;
		default:
			break;
		}
		ip_proto_reply_end(&j);
		return;
	}
	f = open_memstream(&text, &len);
	if (!f) {
		ip_proto_reply_error(out, ENOMEM, "out of memory");
		return;
	}
	show_text(st, req->object, f);
	fclose(f);
	ip_proto_reply_text(out, text);
}

/* ---- explain ----------------------------------------------------------- */

static void explain_irq(struct ip_daemon *d, const struct ip_step *st, const struct ip_irq *q, FILE *f)
{
	const struct ip_model *m = &st->model;
	const struct ip_snapshot *s = m->cur;
	const struct ip_irq_info *info = ip_irq_info(q);
	const struct ip_irq_hist *e = ip_history_find(ip_engine_history(d->engine), q->irq);
	int i = (int)(q - s->irqs), nd = s->topo.nr_domains;
	double *byd = calloc(nd ? nd : 1, sizeof(double)), total = 0, loc;
	char buf[256], wbuf[IP_REASON_MAX];
	const char *why = decision_for(st, q->irq, wbuf, sizeof(wbuf));

	/* Untracked lines keep only their name: the sampler drops the rest. */
	fprintf(f, "IRQ %u %s", q->irq, q->actions[0] ? q->actions : "(no action)");
	if (info->chip[0])
		fprintf(f, " (%s %s%s%s)", info->chip, info->hwirq, info->trigger[0] ? " " : "", info->trigger);
	fputc('\n', f);
	fprintf(f, "  devices: %s\n", devices_of(s, q, buf, sizeof(buf)));
	fprintf(f, "  affinity %s, effective %s\n", info->have_proc ? cpuset_str(&info->affinity) : "unknown",
		info->have_effective ? cpuset_str(&info->effective) : "unknown");
	if (info->managed != IP_MANAGED_NO || (e && e->managed != IP_MANAGED_NO))
		fprintf(f, "  managed by the kernel: %s\n",
			ip_managed_why_str(info->managed != IP_MANAGED_NO ? info->managed : e->managed));
	if (m->prev) {
		int busy = busiest_cpu(m, i);

		fprintf(f, "  interrupts: %.0f/s", m->irq[i].total);
		if (busy >= 0)
			fprintf(f, ", mostly on CPU %d (%.0f%%)", busy,
				m->irq[i].total > 0 ? 100 * m->irq[i].percpu[busy] / m->irq[i].total : 0);
		fputc('\n', f);
	}
	if (byd && ip_report_submit_by_domain(m, q->irq, byd, &total) >= 0 && total > 0) {
		fprintf(f, "  submissions it completes: %.0f/s\n", total);
		for (int k = 0; k < nd; k++)
			if (byd[k] > 0)
				fprintf(f, "    %s domain %s: %.0f%%\n", ip_cap_class_name(s->topo.domains[k].cls),
					cpuset_str(&s->topo.domains[k].cpus), 100 * byd[k] / total);
	} else if (info->nr_devs) {
		fprintf(f, "  submissions it completes: none seen\n");
	}
	loc = ip_report_locality(m, q->irq);
	if (loc >= 0)
		fprintf(f, "  completion locality: %.0f%% of its I/O is completed in the submitter's domain\n",
			100 * loc);
	for (int t = 0; t < s->nr_threads; t++)
		if (s->threads[t].irq == q->irq)
			fprintf(f, "  thread %s (pid %d): cpus %s, %s/%u, %.1f wakeups per interrupt\n",
				s->threads[t].comm, (int)s->threads[t].pid, cpuset_str(&s->threads[t].allowed),
				policy_name(s->threads[t].policy), s->threads[t].rt_priority,
				m->thread[t].wakeups_per_irq < 0 ? 0 : m->thread[t].wakeups_per_irq);
	if (e && e->last_move_ns)
		fprintf(f, "  last moved by irqpilotd %.1f s ago, from %s\n",
			(double)(st->now_ns - e->last_move_ns) / 1e9, cpuset_str(&e->from));
	if (e && e->have_pin)
		fprintf(f, "  pinned at run time to %s (irqctl unpin %u to release)\n", cpuset_str(&e->pin), q->irq);
	fprintf(f, "  decision: %s\n", why ? why : (info->nr_devs ? "none yet" : "not a storage vector: untouched"));
	free(byd);
}

static void do_explain(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	const struct ip_step *st = last_step(d, out);
	const struct ip_snapshot *s;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f;
	int found = 0;

	if (!st)
		return;
	s = st->model.cur;
	f = open_memstream(&text, &len);
	if (!f) {
		ip_proto_reply_error(out, ENOMEM, "out of memory");
		return;
	}
	if (req->target.is_irq) {
		const struct ip_irq *q = ip_snapshot_irq(s, req->target.irq);

		if (q) {
			explain_irq(d, st, q, f);
			found = 1;
		}
	} else {
		for (int i = 0; i < s->storage.nr_devs; i++) {
			const struct ip_blockdev *b = &s->storage.devs[i];

			if (strcmp(b->name, req->target.name) != 0)
				continue;
			fprintf(f, "%s: %s on %s, rq_affinity %d, %d hw queue%s, submissions counted by %s\n",
				b->name, b->driver, b->bus_id, b->rq_affinity, b->nr_queues,
				b->nr_queues == 1 ? "" : "s", ip_count_source_name(st->model.dev[i].submit_src));
			{
				char disc[640];

				fprintf(f, "  %s%s\n", ip_blockdev_unsteerable(b) ? "warning: " : "",
					ip_report_discovery(b, disc, sizeof(disc)));
			}
			for (int v = 0; v < b->nr_vectors; v++) {
				const struct ip_irq *q = ip_snapshot_irq(s, b->vectors[v].irq);

				if (q)
					explain_irq(d, st, q, f);
			}
			found = 1;
		}
		/* not a device: an IRQ action name */
		for (int i = 0; !found && i < s->nr_irqs; i++)
			if (strcmp(s->irqs[i].actions, req->target.name) == 0) {
				explain_irq(d, st, &s->irqs[i], f);
				found = 1;
			}
	}
	fclose(f);
	if (!found) {
		if (req->target.is_irq)
			ip_proto_reply_error(out, ENOENT, "no IRQ %u in /proc/interrupts", req->target.irq);
		else
			ip_proto_reply_error(out, ENOENT, "no storage device or IRQ named '%s'", req->target.name);
		return;
	}
	if (req->json) {
		struct ip_json j;

		ip_proto_reply_begin(&j, out);
		ip_json_string(&j, "explanation", text);
		ip_proto_reply_end(&j);
	} else {
		ip_proto_reply_text(out, text);
	}
}

/* ---- top --------------------------------------------------------------- */

static void do_top(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	const struct ip_step *st = last_step(d, out);
	const struct ip_model *m;
	const struct ip_snapshot *s;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	struct ip_json j;
	FILE *f = NULL;

	if (!st)
		return;
	m = &st->model;
	s = m->cur;
	if (req->json) {
		ip_proto_reply_begin(&j, out);
		ip_json_array_begin(&j, "vectors");
	} else {
		f = open_memstream(&text, &len);
		if (!f) {
			ip_proto_reply_error(out, ENOMEM, "out of memory");
			return;
		}
		fprintf(f, "%-5s %-22s %10s %-4s %-18s %9s %8s %8s\n", "IRQ", "NAME", "RATE/s", "CPU",
			"SUBMITTER DOMAIN", "LOCALITY", "THR CPU%", "WAKE/IRQ");
	}
	for (int i = 0; i < s->nr_irqs; i++) {
		const struct ip_irq *q = &s->irqs[i];
		const struct ip_irq_info *info = ip_irq_info(q);
		int nd = s->topo.nr_domains, best, cpu = busiest_cpu(m, i);
		double *byd, total, loc = ip_report_locality(m, q->irq), thr_cpu = -1, wpi = -1;
		char dom[64] = "-", locs[16] = "-", tcpu[16] = "-", wake[16] = "-";

		if (!info->nr_devs)
			continue;
		byd = calloc(nd ? nd : 1, sizeof(double));
		best = byd ? ip_report_submit_by_domain(m, q->irq, byd, &total) : -1;
		if (best >= 0)
			snprintf(dom, sizeof(dom), "%s %s", ip_cap_class_name(s->topo.domains[best].cls),
				 cpuset_str(&s->topo.domains[best].cpus));
		free(byd);
		for (int t = 0; t < s->nr_threads; t++)
			if (s->threads[t].irq == q->irq && !s->threads[t].secondary) {
				thr_cpu = m->thread[t].cpu_pct;
				wpi = m->thread[t].wakeups_per_irq;
			}
		if (loc >= 0)
			snprintf(locs, sizeof(locs), "%.0f%%", 100 * loc);
		if (thr_cpu >= 0)
			snprintf(tcpu, sizeof(tcpu), "%.1f", thr_cpu);
		if (wpi >= 0)
			snprintf(wake, sizeof(wake), "%.2f", wpi);
		if (req->json) {
			ip_json_object_begin(&j, NULL);
			ip_json_uint(&j, "irq", q->irq);
			ip_json_string(&j, "name", q->actions);
			ip_json_double(&j, "rate", m->irq[i].total);
			ip_json_int(&j, "cpu", cpu >= 0 ? cpu : (info->have_effective ? cpuset_first(&info->effective) : -1));
			ip_json_string(&j, "submitter_domain", best >= 0 ? cpuset_str(&s->topo.domains[best].cpus) : NULL);
			if (loc >= 0)
				ip_json_double(&j, "locality", loc);
			else
				ip_json_null(&j, "locality");
			if (thr_cpu >= 0) {
				ip_json_double(&j, "thread_cpu_pct", thr_cpu);
				ip_json_double(&j, "thread_wakeups_per_irq", wpi);
			}
			ip_json_object_end(&j);
		} else {
			int shown = cpu >= 0 ? cpu : (info->have_effective ? cpuset_first(&info->effective) : -1);

			fprintf(f, "%-5u %-22.22s %10.0f %-4d %-18.18s %9s %8s %8s\n", q->irq, q->actions,
				m->irq[i].total, shown, dom, locs, tcpu, wake);
		}
	}
	if (req->json) {
		ip_json_array_end(&j);
		ip_proto_reply_end(&j);
	} else {
		fclose(f);
		ip_proto_reply_text(out, text);
	}
}

/* ---- changes ----------------------------------------------------------- */

static void do_pin(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	const struct ip_step *st = ip_engine_last(d->engine);
	struct ip_history *h = ip_engine_history(d->engine);
	unsigned irq = req->target.irq;

	if (!req->target.is_irq) {
		ip_proto_reply_error(out, EINVAL, "pin takes an IRQ number, not '%s'", req->target.name);
		return;
	}
	if (st && !ip_snapshot_irq(st->model.cur, irq)) {
		ip_proto_reply_error(out, ENOENT, "no IRQ %u in /proc/interrupts", irq);
		return;
	}
	if (req->verb == IP_VERB_PIN) {
		if (ip_history_pin(h, irq, &req->cpus) < 0) {
			ip_proto_reply_error(out, ENOMEM, "out of memory");
			return;
		}
		ip_log(&d->log, LOG_NOTICE, "IRQ %u pinned to %s by irqctl", irq, cpuset_str(&req->cpus));
		ip_daemon_kick(d, 0);
		{
			char msg[IP_CPULIST_MAX + 128];

			snprintf(msg, sizeof(msg), "IRQ %u pinned to %s until unpinned or restart\n", irq,
				 cpuset_str(&req->cpus));
			ip_proto_reply_text(out, msg);
		}
		return;
	}
	{
		const struct ip_irq_hist *e = ip_history_find(h, irq);
		char msg[128];

		if (!e || !e->have_pin) {
			ip_proto_reply_error(out, ENOENT, "IRQ %u is not pinned", irq);
			return;
		}
		ip_history_unpin(h, irq);
		ip_log(&d->log, LOG_NOTICE, "IRQ %u unpinned by irqctl", irq);
		ip_daemon_kick(d, 0);
		snprintf(msg, sizeof(msg), "IRQ %u unpinned: the policy places it again\n", irq);
		ip_proto_reply_text(out, msg);
	}
}

static void do_dry_run(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	ip_engine_set_dry_run(d->engine, req->on);
	ip_log(&d->log, LOG_NOTICE, "dry run %s by irqctl", req->on ? "on" : "off");
	if (!req->on)
		ip_daemon_kick(d, 0);
	ip_proto_reply_text(out, req->on ? "dry run on: nothing will be written\n"
					 : "dry run off: the plan is applied from the next cycle\n");
}

static void do_reload(struct ip_daemon *d, FILE *out)
{
	struct ip_diag diag = { "" };
	char msg[512];

	if (ip_daemon_reload(d, &diag) < 0) {
		ip_log(&d->log, LOG_ERR, "reload rejected, keeping the running policy: %s", diag.msg);
		ip_proto_reply_error(out, EINVAL, "%s (the running policy is kept)", diag.msg);
		return;
	}
	ip_log(&d->log, LOG_NOTICE, "reloaded %s", d->o.config_path);
	snprintf(msg, sizeof(msg), "reloaded %s\n", d->o.config_path);
	ip_proto_reply_text(out, msg);
}

static void do_capture(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	struct ip_sampler_opts so = { 0 };
	struct ip_diag diag = { "" };
	int samples = req->samples ? (int)req->samples : 10, fd, ret;
	char msg[IP_PROTO_PATH_MAX + 128];

	if (d->cap_dir) {
		ip_proto_reply_error(out, EBUSY, "already capturing into %s", d->cap_dir);
		return;
	}
	/* root writing where a client says: only below the state directory,
	 * and through no link */
	ret = ip_capture_open_below(d->o.state_dir, req->path, &fd, &diag);
	if (ret < 0) {
		ip_log(&d->log, LOG_WARNING, "capture refused: %s", diag.msg);
		ip_proto_reply_error(out, ret, "%s", diag.msg[0] ? diag.msg : strerror(-ret));
		return;
	}
	so.live_counters = ip_root_is_live(d->root);
	so.overrides = d->cfg.overrides;
	if (ip_sampler_new(d->root, &so, &d->cap_sampler) < 0 || !(d->cap_dir = strdup(req->path))) {
		ip_sampler_free(d->cap_sampler);
		d->cap_sampler = NULL;
		close(fd);
		ip_proto_reply_error(out, ENOMEM, "out of memory");
		return;
	}
	d->cap_fd = fd;
	d->cap_left = samples;
	d->cap_step = 0;
	ip_daemon_kick(d, 0);
	ip_log(&d->log, LOG_NOTICE, "capturing %d samples into %s", samples, req->path);
	snprintf(msg, sizeof(msg), "capturing %d samples into %s, one per cycle\n", samples, req->path);
	ip_proto_reply_text(out, msg);
}

void ip_control_handle(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	switch (req->verb) {
	case IP_VERB_STATUS:
		do_status(d, req, out);
		break;
	case IP_VERB_SHOW:
		do_show(d, req, out);
		break;
	case IP_VERB_EXPLAIN:
		do_explain(d, req, out);
		break;
	case IP_VERB_TOP:
		do_top(d, req, out);
		break;
	case IP_VERB_PIN:
	case IP_VERB_UNPIN:
		do_pin(d, req, out);
		break;
	case IP_VERB_DRY_RUN:
		do_dry_run(d, req, out);
		break;
	case IP_VERB_RELOAD:
		do_reload(d, out);
		break;
	case IP_VERB_CAPTURE:
		do_capture(d, req, out);
		break;
	default:
		ip_proto_reply_error(out, EINVAL, "unknown request");
		break;
	}
}
