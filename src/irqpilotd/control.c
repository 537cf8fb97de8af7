// SPDX-License-Identifier: GPL-2.0-or-later
/* The control socket's requests: what irqctl asks, answered from the last
 * cycle's model and plan. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "irqpilot/capture.h"
#include "irqpilot/counters.h"
#include "irqpilot/daemon.h"
#include "irqpilot/idle.h"
#include "irqpilot/macro.h"
#include "irqpilot/report.h"
#include "irqpilot/sample.h"

static const struct ip_step *last_step(struct ip_daemon *d, FILE *out)
{
	const struct ip_step *st = ip_engine_last(d->engine);

	if (!st)
		ip_proto_reply_error(out, EAGAIN, "no sample yet: the first cycle has not run");
	return st;
}

/* The record the last plan gave for @irq (a move, a kept entry, or none) in
 * @why, and its line as report.c words it, in @buf. */
static const char *decision_for(const struct ip_step *st, unsigned irq, char *buf, size_t size,
				const struct ip_why **why)
{
	for (int i = 0; st->decided && i < st->plan.nr_moves; i++)
		if (st->plan.moves[i].irq == irq && !st->plan.moves[i].failed) {
			*why = &st->plan.moves[i].why;
			return ip_report_move_line(buf, size, &st->plan.moves[i]);
		}
	for (int i = 0; st->decided && i < st->plan.nr_kept; i++)
		if (st->plan.kept[i].irq == irq) {
			*why = &st->plan.kept[i].why;
			return ip_report_kept_line(buf, size, &st->plan.kept[i]);
		}
	return NULL;
}

static int busiest_cpu(const struct ip_model *m, int i)
{
	const struct ip_irq_rate *r = &m->irq[i];
	int best = -1;

	for (int k = 0; k < r->nr && r->first + k < m->cur->topo.nr_cpus; k++)
		if (r->percpu[k] > 0 && (best < 0 || r->percpu[k] > r->percpu[best - r->first]))
			best = r->first + k;
	return best;
}

/* ---- status ------------------------------------------------------------ */

/* The last sample's perf counter groups: read (an IPI each) or kept from
 * the read before, the CPU's armed wakeup having seen no bio (counters.h). */
static void status_perf_reads(struct ip_daemon *d, struct ip_json *j)
{
	int read = 0, kept = 0;

	ip_counters_perf_reads(ip_daemon_counters(d), &read, &kept);
	if (read + kept == 0) {
		ip_json_null(j, "perf_groups_read");
		ip_json_null(j, "perf_groups_kept");
		return;
	}
	ip_json_int(j, "perf_groups_read", read);
	ip_json_int(j, "perf_groups_kept", kept);
}

static void do_status(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	const struct ip_step *st = ip_engine_last(d->engine);
	const struct ip_history *h = ip_engine_history(d->engine);
	int steered = 0, managed = 0, devs = st ? st->model.cur->storage.nr_devs : 0;
	const char *src = ip_sampler_submit_source(ip_engine_sampler(d->engine));
	double interval = ip_daemon_interval_s(d);

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
	struct ip_json j;

	(void)req;
	ip_proto_reply_begin(&j, out);
	ip_json_string(&j, "version", PACKAGE_VERSION);
	ip_json_int(&j, "pid", getpid());
	ip_json_string(&j, "root", d->o.root);
	ip_json_string(&j, "config", d->o.config_path);
	ip_json_bool(&j, "dry_run", ip_engine_dry_run(d->engine));
	ip_json_double(&j, "interval_s", interval);
	/* what the daemon waits now: the idle back-off's while no I/O is seen,
	 * the held cycle's while the placement holds under steady I/O */
	ip_json_double(&j, "cycle_interval_s",
		       d->idle ? ip_daemon_idle_full_s(d) : d->holding ? ip_hold_interval_s(interval) : interval);
	ip_json_bool(&j, "idle", d->idle);
	/* what ends the idle wait: the first bio (perf), a change to the
	 * tree's probe files (inotify; "still": nor a full cycle until its
	 * counts are written), or the probe's timer */
	ip_json_string(&j, "idle_wakeup",
		       !d->idle	     ? NULL
		       : d->wake_armed ? "perf"
		       : d->still      ? "still"
		       : d->watch      ? "watch"
				       : "timer");
	/* what a still tree waits for, by name: the sampler's list, not a copy */
	if (d->still) {
		int n;
		const char *const *paths = ip_sampler_activity_paths(&n);

		ip_json_array_begin(&j, "still_until_written");
		for (int i = 0; i < n; i++)
			ip_json_string(&j, NULL, paths[i]);
		ip_json_array_end(&j);
	}
	ip_json_bool(&j, "holding", d->holding);
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
	status_perf_reads(d, &j);
	ip_json_string(&j, "capture", d->cap_dir);
	if (d->cap_dir)
		ip_json_int(&j, "capture_samples_left", d->cap_left);
	ip_json_array_begin(&j, "warnings");
	for (int i = 0; i < devs; i++) {
		char w[640];

		if (ip_blockdev_unsteerable(&st->model.cur->storage.devs[i]))
			ip_json_string(&j, NULL, ip_report_discovery(&st->model.cur->storage.devs[i], w, sizeof(w)));
	}
	ip_json_array_end(&j);
	ip_proto_reply_end(&j);
}

/* ---- show ------------------------------------------------------------ */

static void do_show(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	const struct ip_step *st = last_step(d, out);
	struct ip_json j;

	if (!st)
		return;
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
		/* the domains, for the share each one submits */
		ip_report_json_cpus(&j, &st->model);
		ip_report_json_devices(&j, &st->model);
		break;
	case IP_OBJ_THREADS:
		ip_json_bool(&j, "cq_loaded", st->model.cur->have_cq);
		ip_report_json_threads(&j, &st->model);
		break;
	default:
		break;
	}
	ip_proto_reply_end(&j);
}

/* ---- explain ----------------------------------------------------------- */

/* What the IRQ is, and where the kernel has it now. */
static void explain_identity(struct ip_json *j, const struct ip_snapshot *s, const struct ip_irq *q,
			     const struct ip_irq_hist *e)
{
	const struct ip_irq_info *info = ip_irq_info(q);

	ip_json_uint(j, "irq", q->irq);
	/* Untracked lines keep only their name: the sampler drops the rest. */
	ip_json_string(j, "name", q->actions);
	ip_json_bool(j, "unnamed_action", q->unnamed_action);
	ip_json_string(j, "chip", info->chip);
	ip_json_string(j, "hwirq", info->hwirq);
	ip_json_string(j, "trigger", info->trigger);
	ip_json_bool(j, "storage", info->nr_devs > 0);
	ip_json_array_begin(j, "devices");
	for (int k = 0; k < info->nr_devs; k++)
		ip_json_string(j, NULL, s->storage.devs[info->devs[k]].name);
	ip_json_array_end(j);
	if (info->have_proc)
		ip_json_cpuset(j, "affinity", &info->affinity);
	else
		ip_json_null(j, "affinity");
	if (info->have_effective)
		ip_json_cpuset(j, "effective", &info->effective);
	else
		ip_json_null(j, "effective");
	if (info->managed != IP_MANAGED_NO || (e && e->managed != IP_MANAGED_NO))
		ip_json_string(j, "managed_reason",
			       ip_managed_why_str(info->managed != IP_MANAGED_NO ? info->managed : e->managed));
}

/* The evidence for where it should be: how often it fires and where, and
 * which domains submit the I/O it completes. */
static void explain_rates(struct ip_json *j, const struct ip_model *m, const struct ip_irq *q)
{
	const struct ip_snapshot *s = m->cur;
	int i = (int)(q - s->irqs), nd = s->topo.nr_domains;
	double *byd = calloc(nd ? nd : 1, sizeof(double)), total = 0;

	if (m->prev) {
		int busy = busiest_cpu(m, i);

		ip_json_double(j, "rate", m->irq[i].total);
		if (busy >= 0) {
			ip_json_int(j, "busiest_cpu", busy);
			ip_json_double(j, "busiest_share",
				       m->irq[i].total > 0 ? ip_irq_rate_on(&m->irq[i], busy) / m->irq[i].total : 0);
		}
	}
	if (byd && ip_report_submit_by_domain(m, q->irq, byd, &total) >= 0 && total > 0) {
		ip_json_double(j, "submit_rate", total);
		ip_json_array_begin(j, "submit_domains");
		for (int k = 0; k < nd; k++) {
			if (byd[k] <= 0)
				continue;
			ip_json_object_begin(j, NULL);
			ip_json_int(j, "domain", k);
			ip_json_string(j, "class", ip_cap_class_name(s->topo.domains[k].cls));
			ip_json_cpuset(j, "cpus", &s->topo.domains[k].cpus);
			ip_json_double(j, "share", byd[k] / total);
			ip_json_object_end(j);
		}
		ip_json_array_end(j);
	} else if (ip_irq_info(q)->nr_devs) {
		ip_json_double(j, "submit_rate", 0);
	}
	free(byd);
}

static void explain_threads(struct ip_json *j, const struct ip_model *m, const struct ip_irq *q)
{
	const struct ip_snapshot *s = m->cur;

	ip_json_array_begin(j, "threads");
	for (int t = 0; t < s->nr_threads; t++) {
		const struct ip_irq_thread *th = &s->threads[t];

		if (th->irq != q->irq)
			continue;
		ip_json_object_begin(j, NULL);
		ip_json_string(j, "comm", th->comm);
		ip_json_int(j, "pid", th->pid);
		ip_json_cpuset(j, "cpus", &th->allowed);
		ip_json_string(j, "policy", ip_report_sched_name((int)th->policy));
		ip_json_uint(j, "priority", th->rt_priority);
		ip_json_double(j, "wakeups_per_irq", m->thread[t].wakeups_per_irq < 0 ? 0 : m->thread[t].wakeups_per_irq);
		ip_json_object_end(j);
	}
	ip_json_array_end(j);
}

/* The plan's record: its code and numbers for scripts, and report.c's
 * line for people, so that irqctl needs no copy of the wording. */
static void explain_decision(struct ip_json *j, const struct ip_step *st, const struct ip_irq *q)
{
	char wbuf[IP_REASON_MAX];
	const struct ip_why *w = NULL;
	const char *why = decision_for(st, q->irq, wbuf, sizeof(wbuf), &w);

	if (why && w) {
		ip_json_object_begin(j, "decision");
		ip_json_string(j, "text", why);
		ip_report_why_json(j, w);
		ip_json_object_end(j);
	} else {
		ip_json_null(j, "decision");
	}
}

static void explain_irq(struct ip_daemon *d, const struct ip_step *st, const struct ip_irq *q, struct ip_json *j)
{
	const struct ip_model *m = &st->model;
	const struct ip_irq_hist *e = ip_history_find(ip_engine_history(d->engine), q->irq);
	double loc;

	ip_json_object_begin(j, NULL);
	explain_identity(j, m->cur, q, e);
	explain_rates(j, m, q);
	loc = ip_report_locality(m, q->irq);
	if (loc >= 0)
		ip_json_double(j, "locality", loc);
	explain_threads(j, m, q);
	/* what irqpilot did to it, from the history */
	if (e && e->last_move_ns) {
		ip_json_double(j, "last_move_ago_s", (double)(st->now_ns - e->last_move_ns) / 1e9);
		ip_json_cpuset(j, "last_move_from", &e->from);
	}
	if (e && e->have_pin)
		ip_json_cpuset(j, "pinned", &e->pin);
	explain_decision(j, st, q);
	ip_json_object_end(j);
}

/* Whether @name is one of the line's action names ("mmc0, sym53c8xx" has two). */
static bool has_action(const char *actions, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = actions; p && *p;) {
		size_t n = strcspn(p, ",");
		size_t m = n;

		while (m && p[m - 1] == ' ')
			m--;
		if (m == len && strncmp(p, name, len) == 0)
			return true;
		p += n;
		while (*p == ',' || *p == ' ')
			p++;
	}
	return false;
}

static void do_explain(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	const struct ip_step *st = last_step(d, out);
	const struct ip_snapshot *s;
	const struct ip_irq *q = NULL;
	int dev = -1;
	struct ip_json j;

	if (!st)
		return;
	s = st->model.cur;
	if (req->target.is_irq) {
		q = ip_snapshot_irq(s, req->target.irq);
		if (!q) {
			ip_proto_reply_error(out, ENOENT, "no IRQ %u in /proc/interrupts", req->target.irq);
			return;
		}
	} else {
		for (int i = 0; dev < 0 && i < s->storage.nr_devs; i++)
			if (strcmp(s->storage.devs[i].name, req->target.name) == 0)
				dev = i;
		/* not a device: one of an IRQ's action names, as for pin (a
		 * shared line's "mmc0, sym53c8xx" could not be named whole) */
		for (int i = 0; dev < 0 && !q && i < s->nr_irqs; i++)
			if (has_action(s->irqs[i].actions, req->target.name))
				q = &s->irqs[i];
		if (dev < 0 && !q) {
			ip_proto_reply_error(out, ENOENT, "no storage device or IRQ named '%s'", req->target.name);
			return;
		}
	}
	ip_proto_reply_begin(&j, out);
	ip_json_array_begin(&j, "devices");
	if (dev >= 0) {
		const struct ip_blockdev *b = &s->storage.devs[dev];
		char disc[640];

		ip_json_object_begin(&j, NULL);
		ip_json_string(&j, "name", b->name);
		ip_json_string(&j, "driver", b->driver);
		ip_json_string(&j, "bus_id", b->bus_id);
		ip_json_int(&j, "rq_affinity", b->rq_affinity);
		ip_json_int(&j, "queues", b->nr_queues);
		ip_json_string(&j, "submit_source", ip_count_source_name(st->model.dev[dev].submit_src));
		ip_json_string(&j, "discovery", ip_report_discovery(b, disc, sizeof(disc)));
		ip_json_bool(&j, "warning", ip_blockdev_unsteerable(b));
		ip_json_array_begin(&j, "irqs");
		for (int v = 0; v < b->nr_vectors; v++) {
			const struct ip_irq *vq = ip_snapshot_irq(s, b->vectors[v].irq);

			if (vq)
				explain_irq(d, st, vq, &j);
		}
		ip_json_array_end(&j);
		ip_json_object_end(&j);
	}
	ip_json_array_end(&j);
	ip_json_array_begin(&j, "irqs");
	if (q)
		explain_irq(d, st, q, &j);
	ip_json_array_end(&j);
	ip_proto_reply_end(&j);
}

/* ---- top --------------------------------------------------------------- */

static void do_top(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	const struct ip_step *st = last_step(d, out);
	const struct ip_model *m;
	const struct ip_snapshot *s;
	struct ip_json j;

	(void)req;
	if (!st)
		return;
	m = &st->model;
	s = m->cur;
	ip_proto_reply_begin(&j, out);
	ip_json_array_begin(&j, "vectors");
	for (int i = 0; i < s->nr_irqs; i++) {
		const struct ip_irq *q = &s->irqs[i];
		const struct ip_irq_info *info = ip_irq_info(q);
		int nd = s->topo.nr_domains, best, cpu = busiest_cpu(m, i);
		double *byd, total, loc = ip_report_locality(m, q->irq), thr_cpu = -1, wpi = -1;

		if (!info->nr_devs)
			continue;
		byd = calloc(nd ? nd : 1, sizeof(double));
		best = byd ? ip_report_submit_by_domain(m, q->irq, byd, &total) : -1;
		free(byd);
		for (int t = 0; t < s->nr_threads; t++)
			if (s->threads[t].irq == q->irq && !s->threads[t].secondary) {
				thr_cpu = m->thread[t].cpu_pct;
				wpi = m->thread[t].wakeups_per_irq;
			}
		ip_json_object_begin(&j, NULL);
		ip_json_uint(&j, "irq", q->irq);
		ip_json_string(&j, "name", q->actions);
		ip_json_double(&j, "rate", m->irq[i].total);
		ip_json_int(&j, "cpu", cpu >= 0 ? cpu : (info->have_effective ? cpuset_first(&info->effective) : -1));
		ip_json_string(&j, "submitter_domain", best >= 0 ? cpuset_str(&s->topo.domains[best].cpus) : NULL);
		ip_json_string(&j, "submitter_class", best >= 0 ? ip_cap_class_name(s->topo.domains[best].cls) : NULL);
		if (loc >= 0)
			ip_json_double(&j, "locality", loc);
		else
			ip_json_null(&j, "locality");
		if (thr_cpu >= 0) {
			ip_json_double(&j, "thread_cpu_pct", thr_cpu);
			ip_json_double(&j, "thread_wakeups_per_irq", wpi);
		}
		ip_json_object_end(&j);
	}
	ip_json_array_end(&j);
	ip_proto_reply_end(&j);
}

/* ---- metrics ----------------------------------------------------------- */

/* Counts and rates of the kind status and show already give anyone who may
 * connect: no pid, path or setting beyond them. */
char *ip_control_metrics_text(struct ip_daemon *d, size_t *len)
{
	struct timespec ts;
	char *text = NULL;
	FILE *f;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0)
		d->metrics.cpu_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	ip_sampler_scan_counts(ip_engine_sampler(d->engine), &d->metrics.full_scans, &d->metrics.fast_scans);
	ip_sampler_full_scan_cost(ip_engine_sampler(d->engine), &d->metrics.full_scan_cpu_ns,
				  &d->metrics.full_scan_period_ns);
	f = open_memstream(&text, len);
	if (!f)
		return NULL;
	ip_report_metrics_text(f, &d->metrics);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

static void do_metrics(struct ip_daemon *d, FILE *out)
{
	_cleanup_free_ char *text = NULL;
	struct ip_json j;
	size_t len;

	text = ip_control_metrics_text(d, &len);
	if (!text) {
		ip_proto_reply_error(out, ENOMEM, "out of memory");
		return;
	}
	ip_proto_reply_begin(&j, out);
	ip_json_string(&j, "text", text);
	ip_proto_reply_end(&j);
}

/*
 * The directory of absolute @path (its first @len bytes), reached one name
 * at a time from "/" without following a symbolic link: -ELOOP at one.
 * The directory is another user's (node_exporter's is prometheus', inside
 * /var/lib/prometheus, also theirs): they may rename it away and leave a
 * link to /etc in its place between two cycles, and root would then
 * create and rename its file there. A directory they put in its place is
 * harmless; a link is refused.
 */
static int open_dir_nofollow(const char *path, size_t len)
{
	_cleanup_close_ int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char name[NAME_MAX + 1];

	if (fd < 0)
		return -errno;
	for (size_t i = 0; i < len;) {
		size_t n = 0;
		struct stat st;
		int next, err = 0;

		for (; i < len && path[i] == '/'; i++)
			;
		for (; i < len && path[i] != '/'; i++, n++)
			if (n < NAME_MAX)
				name[n] = path[i];
		if (n == 0)
			break;
		if (n > NAME_MAX)
			return -ENAMETOOLONG;
		name[n] = '\0';
		next = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return -errno;
		if (fstat(next, &st) < 0)
			err = -errno;
		else if (!S_ISDIR(st.st_mode))
			err = S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
		if (err) {
			close(next);
			return err;
		}
		close(fd);
		fd = next;
	}
	return TAKE_FD(fd);
}

/* Written beside the file and renamed over it, so that the textfile
 * collector reads the last whole text or the one before, never half of
 * one; the temporary name does not end in .prom, so it is never read. */
static int write_textfile(const char *path, const char *text, size_t len)
{
	const char *slash = strrchr(path, '/');
	_cleanup_free_ char *tmp = ip_asprintf(".%s.tmp", slash + 1);
	_cleanup_close_ int dir = -1;
	int fd, err = 0;

	if (!tmp)
		return -ENOMEM;
	dir = open_dir_nofollow(path, (size_t)(slash - path));
	if (dir < 0)
		return dir;
	/* Root must not write through a link planted under the temporary
	 * name either: it is made anew, O_EXCL. */
	if (unlinkat(dir, tmp, 0) < 0 && errno != ENOENT)
		return -errno;
	fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	/* node_exporter runs as its own user; the text is what any client
	 * of the socket may read */
	if (fchmod(fd, 0644) < 0)
		err = -errno;
	for (size_t off = 0; !err && off < len;) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			err = n < 0 ? -errno : -EIO;
		else
			off += (size_t)n;
	}
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && renameat(dir, tmp, dir, slash + 1) < 0)
		err = -errno;
	if (err)
		unlinkat(dir, tmp, 0);
	return err;
}

static const char *textfile_hint(int err)
{
	if (err == -EROFS || err == -EACCES)
		return " (is its directory in the unit's ReadWritePaths=?)";
	if (err == -ELOOP)
		return " (a directory on its path is a symbolic link, never followed there: give the path it leads to)";
	return "";
}

void ip_control_metrics_textfile(struct ip_daemon *d)
{
	const char *path = d->cfg.daemon.metrics_textfile;
	_cleanup_free_ char *text = NULL;
	size_t len;
	int ret;

	if (!path[0])
		return;
	text = ip_control_metrics_text(d, &len);
	ret = text ? write_textfile(path, text, len) : -ENOMEM;
	if (ret < 0 && !d->textfile_failed)
		ip_log(&d->log, LOG_ERR, "metrics_textfile %s: %s; the daemon goes on without it%s", path,
		       strerror(-ret), textfile_hint(ret));
	else if (ret == 0 && d->textfile_failed)
		ip_log(&d->log, LOG_NOTICE, "metrics_textfile %s written again", path);
	d->textfile_failed = ret < 0;
}

/* ---- changes ----------------------------------------------------------- */

/* What a change did, as data: a number and a string, either left out. */
static void changed(FILE *out, const char *nkey, unsigned n, const char *skey, const char *sval)
{
	struct ip_json j;

	ip_proto_reply_begin(&j, out);
	if (nkey)
		ip_json_uint(&j, nkey, n);
	if (skey)
		ip_json_string(&j, skey, sval);
	ip_proto_reply_end(&j);
}

/*
 * The IRQs a pin or unpin acts on: the number, or every line with an
 * action name equal to NAME (a driver that names all its vectors alike
 * gets them all). Returns how many, 0 after an error reply.
 */
static int pin_targets(struct ip_daemon *d, const struct ip_request *req, FILE *out, unsigned *irqs, int max)
{
	const struct ip_step *st = ip_engine_last(d->engine);
	const struct ip_snapshot *s = st ? st->model.cur : NULL;
	int n = 0;

	if (req->target.is_irq) {
		const struct ip_irq_hist *e = ip_history_find(ip_engine_history(d->engine), req->target.irq);

		/* the pin of a freed IRQ waits for it, and the note that says
		 * so names irqctl unpin as its end: that needs no line */
		if (s && !ip_snapshot_irq(s, req->target.irq) &&
		    !(req->verb == IP_VERB_UNPIN && e && e->have_pin)) {
			ip_proto_reply_error(out, ENOENT, "no IRQ %u in /proc/interrupts", req->target.irq);
			return 0;
		}
		irqs[0] = req->target.irq;
		return 1;
	}
	if (!s) {
		ip_proto_reply_error(out, EAGAIN, "no sample yet to find IRQs named '%s' in; try again",
				     req->target.name);
		return 0;
	}
	for (int i = 0; i < s->nr_irqs; i++) {
		if (!has_action(s->irqs[i].actions, req->target.name))
			continue;
		if (n == max) {
			ip_proto_reply_error(out, E2BIG, "more than %d IRQs are named '%s'", max,
					     req->target.name);
			return 0;
		}
		irqs[n++] = s->irqs[i].irq;
	}
	if (!n)
		ip_proto_reply_error(out, ENOENT, "no IRQ named '%s' in /proc/interrupts", req->target.name);
	return n;
}

/*
 * An unpinned IRQ that no storage vector or [irq] rule claims goes back
 * to what it had before our first write; the rest the policy places.
 */
void ip_daemon_release(struct ip_daemon *d, unsigned irq, const char *why, ip_cpuset *restored, bool *did)
{
	const struct ip_step *st = ip_engine_last(d->engine);
	const struct ip_irq *q = st ? ip_snapshot_irq(st->model.cur, irq) : NULL;
	struct ip_apply_results res;
	char line[IP_REASON_MAX];

	*did = false;
	if (!q || ip_irq_info(q)->nr_devs > 0 || ip_policy_irq_named(&d->cfg.policy, irq, q->actions))
		return;
	if (ip_engine_restore_irq(d->engine, irq, &res) < 0) {
		ip_log(&d->log, LOG_ERR, "IRQ %u: out of memory restoring its original affinity", irq);
		return;
	}
	for (int i = 0; i < res.n; i++) {
		ip_log(&d->log, res.r[i].outcome == IP_APPLY_OK ? LOG_INFO : LOG_WARNING, "%s: %s", why,
		       ip_report_apply_line(line, sizeof(line), &res.r[i]));
		if (res.r[i].outcome == IP_APPLY_OK) {
			*restored = res.r[i].written;
			*did = true;
		}
	}
	ip_apply_results_free(&res);
}

/* Whether every CPU of @cpus is a possible CPU of the last sample's
 * machine; an error reply if not. A pin or ban on a CPU the machine lacks
 * can never take effect, and an ok reply would say it did. */
static bool cpus_on_machine(const struct ip_topology *t, const ip_cpuset *cpus, FILE *out)
{
	char list[IP_CPULIST_MAX];
	ip_cpuset x;

	cpuset_andnot(&x, cpus, &t->possible);
	if (cpuset_empty(&x))
		return true;
	cpuset_format_list(&x, list, sizeof(list));
	ip_proto_reply_error(out, EINVAL, "no CPU %s on this machine (possible: %s)", list,
			     cpuset_str(&t->possible));
	return false;
}

static void do_pin(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	struct ip_history *h = ip_engine_history(d->engine);
	const struct ip_step *st = ip_engine_last(d->engine);
	unsigned irqs[64];
	int n = pin_targets(d, req, out, irqs, (int)ARRAY_SIZE(irqs));
	struct ip_json j;

	if (!n)
		return;
	/* before the first sample the CPUs are unknown: the policy trims the
	 * pin to the usable ones then */
	if (req->verb == IP_VERB_PIN && st && st->model.cur &&
	    !cpus_on_machine(&st->model.cur->topo, &req->cpus, out))
		return;
	if (req->verb == IP_VERB_UNPIN) {
		int pinned = 0;

		for (int i = 0; i < n; i++) {
			const struct ip_irq_hist *e = ip_history_find(h, irqs[i]);

			pinned += e && e->have_pin;
		}
		if (!pinned) {
			if (req->target.is_irq)
				ip_proto_reply_error(out, ENOENT, "IRQ %u is not pinned", irqs[0]);
			else
				ip_proto_reply_error(out, ENOENT, "no IRQ named '%s' is pinned", req->target.name);
			return;
		}
	}
	ip_proto_reply_begin(&j, out);
	ip_json_uint(&j, "irq", irqs[0]);
	if (!req->target.is_irq)
		ip_json_string(&j, "name", req->target.name);
	if (req->verb == IP_VERB_PIN)
		ip_json_string(&j, "cpus", cpuset_str(&req->cpus));
	ip_json_array_begin(&j, "irqs");
	for (int i = 0; i < n; i++) {
		const struct ip_irq_hist *e = ip_history_find(h, irqs[i]);
		ip_cpuset restored;
		bool did;

		if (req->verb == IP_VERB_PIN) {
			if (ip_history_pin(h, irqs[i], &req->cpus) < 0) {
				ip_log(&d->log, LOG_ERR, "IRQ %u: out of memory: not pinned", irqs[i]);
				continue;
			}
			ip_log(&d->log, LOG_NOTICE, "IRQ %u pinned to %s by irqctl", irqs[i], cpuset_str(&req->cpus));
			ip_json_object_begin(&j, NULL);
			ip_json_uint(&j, "irq", irqs[i]);
			ip_json_object_end(&j);
			continue;
		}
		if (!e || !e->have_pin)
			continue;
		ip_history_unpin(h, irqs[i]);
		ip_log(&d->log, LOG_NOTICE, "IRQ %u unpinned by irqctl", irqs[i]);
		ip_daemon_release(d, irqs[i], "unpin", &restored, &did);
		ip_json_object_begin(&j, NULL);
		ip_json_uint(&j, "irq", irqs[i]);
		if (did)
			ip_json_cpuset(&j, "restored", &restored);
		else
			ip_json_null(&j, "restored");
		ip_json_object_end(&j);
	}
	ip_json_array_end(&j);
	ip_proto_reply_end(&j);
	ip_daemon_kick(d, 0);
}

/*
 * irqctl ban / unban: the banned set at run time. Vectors on a newly
 * banned CPU move off in the next cycle (the policy's off-banned). Kept
 * across a reload; a restart goes back to the policy file. Nothing
 * changes on an error.
 */
static void do_ban(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	const struct ip_step *st = ip_engine_last(d->engine);
	const struct ip_topology *t = st && st->model.cur ? &st->model.cur->topo : NULL;
	const ip_cpuset *banned = &d->cfg.policy.banned;
	char list[IP_CPULIST_MAX];
	ip_cpuset x, left, already;
	struct ip_json j;
	bool ban = req->verb == IP_VERB_BAN;

	if (!t) {
		ip_proto_reply_error(out, EAGAIN, "no sample of the CPUs yet; try again after the first cycle");
		return;
	}
	if (!cpus_on_machine(t, &req->cpus, out))
		return;
	if (ban) {
		cpuset_or(&x, banned, &req->cpus);
		cpuset_andnot(&left, &t->online, &x);
		if (cpuset_empty(&left)) {
			cpuset_format_list(&req->cpus, list, sizeof(list));
			ip_proto_reply_error(out, EINVAL,
					     "banning %s would ban every online CPU (online %s, banned %s); nothing changed",
					     list, cpuset_str(&t->online), cpuset_empty(banned) ? "none" : cpuset_str(banned));
			return;
		}
		/* a script banning twice is not refused, as unban's "not banned"
		 * is, but told: the first may have been someone else's */
		cpuset_and(&already, banned, &req->cpus);
		cpuset_or(&d->ban_add, &d->ban_add, &req->cpus);
		cpuset_andnot(&d->ban_del, &d->ban_del, &req->cpus);
	} else {
		cpuset_andnot(&x, &req->cpus, banned);
		if (!cpuset_empty(&x)) {
			cpuset_format_list(&x, list, sizeof(list));
			ip_proto_reply_error(out, ENOENT, "CPU %s is not banned (banned: %s); nothing changed",
					     list, cpuset_empty(banned) ? "none" : cpuset_str(banned));
			return;
		}
		cpuset_or(&d->ban_del, &d->ban_del, &req->cpus);
		cpuset_andnot(&d->ban_add, &d->ban_add, &req->cpus);
	}
	ip_daemon_apply_bans(d);
	cpuset_format_list(&req->cpus, list, sizeof(list));
	ip_log(&d->log, LOG_NOTICE, "CPUs %s %s by irqctl; banned now: %s", list,
	       ban ? "banned" : "unbanned", cpuset_empty(banned) ? "none" : cpuset_str(banned));
	ip_daemon_kick(d, 0);
	ip_proto_reply_begin(&j, out);
	ip_json_string(&j, "cpus", list);
	ip_json_cpuset(&j, "banned", banned);
	if (ban)
		ip_json_cpuset(&j, "already_banned", &already);
	/* said in the reply, so that a script need not guess */
	ip_json_bool(&j, "kept_on_reload", true);
	ip_proto_reply_end(&j);
}

static void do_dry_run(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	struct ip_diag diag = { "" };

	/* a daemon started with --dry-run holds no lock on the IRQs yet */
	if (!req->on && d->irqs_lock_fd < 0 &&
	    ip_daemon_lock_irqs(d->root, d->o.runtime_dir, &d->log, &d->irqs_lock_fd, &diag) < 0) {
		ip_proto_reply_error(out, EBUSY, "%s; still a dry run", diag.msg);
		return;
	}
	ip_engine_set_dry_run(d->engine, req->on);
	ip_log(&d->log, LOG_NOTICE, "dry run %s by irqctl", req->on ? "on" : "off");
	if (!req->on)
		ip_daemon_kick(d, 0);
	{
		struct ip_json j;

		ip_proto_reply_begin(&j, out);
		ip_json_bool(&j, "dry_run", req->on);
		ip_proto_reply_end(&j);
	}
}

static void do_reload(struct ip_daemon *d, FILE *out)
{
	struct ip_diag diag = { "" };

	if (ip_daemon_reload(d, &diag) < 0) {
		ip_log(&d->log, LOG_ERR, "reload rejected, keeping the running policy: %s", diag.msg);
		ip_proto_reply_error(out, EINVAL, "%s (the running policy is kept)", diag.msg);
		return;
	}
	ip_log(&d->log, LOG_NOTICE, "reloaded %s", d->o.config_path);
	changed(out, NULL, 0, "config", d->o.config_path);
}

static void do_capture(struct ip_daemon *d, const struct ip_request *req, FILE *out)
{
	struct ip_sampler_opts so = { 0 };
	struct ip_diag diag = { "" };
	int samples = req->samples ? (int)req->samples : 10, fd, ret;

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
	changed(out, "samples", (unsigned)samples, "capture", req->path);
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
	case IP_VERB_METRICS:
		do_metrics(d, out);
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
	case IP_VERB_BAN:
	case IP_VERB_UNBAN:
		do_ban(d, req, out);
		break;
	default:
		ip_proto_reply_error(out, EINVAL, "unknown request");
		break;
	}
}
