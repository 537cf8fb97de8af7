// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon: an sd-event loop that runs a cycle on a timer, answers the
 * control socket, reloads on SIGHUP, reacts to hot-plug, and restores on
 * SIGTERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "irqpilot/capture.h"
#include "irqpilot/counters.h"
#include "irqpilot/daemon.h"
#include "irqpilot/idle.h"
#include "irqpilot/macro.h"
#include "irqpilot/report.h"
#include "irqpilot/state.h"
#include "irqpilot/watch.h"

#define USEC_PER_SEC 1000000ULL

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

double ip_daemon_interval_s(const struct ip_daemon *d)
{
	return d->o.interval_s > 0 ? d->o.interval_s : d->cfg.daemon.interval_s;
}

double ip_daemon_idle_full_s(const struct ip_daemon *d)
{
	return MAX(IP_IDLE_FULL_S, ip_daemon_interval_s(d));
}

void ip_daemon_kick(struct ip_daemon *d, uint64_t delay_us)
{
	uint64_t now, when;

	if (!d->timer)
		return;
	if (sd_event_now(d->ev, CLOCK_MONOTONIC, &now) < 0)
		return;
	when = now + delay_us;
	/* only ever bring the next cycle forward */
	{
		uint64_t cur;

		if (sd_event_source_get_time(d->timer, &cur) >= 0 &&
		    sd_event_source_get_enabled(d->timer, NULL) > 0 && cur <= when)
			return;
	}
	sd_event_source_set_time(d->timer, when);
	sd_event_source_set_enabled(d->timer, SD_EVENT_ONESHOT);
}

/* ---- reporting a cycle ---------------------------------------------- */

/*
 * Entries about no object (a note of the whole machine) cannot be pruned
 * by existence; they are few (one per distinct text), and past this many
 * the oldest goes, which at worst says an old note once more.
 */
#define SAID_UNBOUND_MAX 256

static void said_free(struct ip_said *e)
{
	free(e->key);
	free(e->what);
}

static void said_remove(struct ip_daemon *d, size_t i)
{
	said_free(&d->said[i]);
	memmove(&d->said[i], &d->said[i + 1], (d->nr_said - i - 1) * sizeof(*d->said));
	d->nr_said--;
}

/*
 * The daemon's one "log once": true when @what was not yet said about
 * @key (and records it). @obj, @irq, @pid and @device name the object the
 * entry dies with (struct ip_said). Out of memory: true, better said twice
 * than never.
 */
static bool said(struct ip_daemon *d, enum ip_said_obj obj, unsigned irq, pid_t pid,
		 const char *device, const char *key, const char *what)
{
	struct ip_said *nv;
	char *w;
	size_t unbound = 0;

	for (size_t i = 0; i < d->nr_said; i++) {
		struct ip_said *e = &d->said[i];

		unbound += e->obj == IP_SAID_NONE;
		if (strcmp(e->key, key) != 0)
			continue;
		if (strcmp(e->what, what) == 0)
			return false;
		w = strdup(what);
		if (w) {
			free(e->what);
			e->what = w;
		}
		return true;
	}
	if (obj == IP_SAID_NONE && unbound >= SAID_UNBOUND_MAX)
		for (size_t i = 0; i < d->nr_said; i++)
			if (d->said[i].obj == IP_SAID_NONE) {
				said_remove(d, i);
				break;
			}
	nv = realloc(d->said, (d->nr_said + 1) * sizeof(*nv));
	if (!nv)
		return true;
	d->said = nv;
	nv = &nv[d->nr_said];
	memset(nv, 0, sizeof(*nv));
	nv->obj = obj;
	nv->irq = irq;
	nv->pid = pid;
	snprintf(nv->device, sizeof(nv->device), "%s", device ? device : "");
	nv->key = strdup(key);
	nv->what = strdup(what);
	if (!nv->key || !nv->what) {
		said_free(nv);
		return true;
	}
	d->nr_said++;
	return true;
}

static bool snapshot_has_pid(const struct ip_snapshot *s, pid_t pid)
{
	for (int i = 0; i < s->nr_threads; i++)
		if (s->threads[i].pid == pid)
			return true;
	for (int i = 0; i < s->nr_cq; i++)
		if (s->cq[i].pid == pid)
			return true;
	return false;
}

static bool snapshot_has_dev(const struct ip_snapshot *s, const char *name)
{
	for (int i = 0; i < s->storage.nr_devs; i++)
		if (strcmp(s->storage.devs[i].name, name) == 0)
			return true;
	return false;
}

/* What was said about an IRQ, thread or disk that is gone goes with it:
 * a later object of that number or name is another one. */
static void said_prune(struct ip_daemon *d, const struct ip_snapshot *s)
{
	for (size_t i = d->nr_said; i-- > 0;) {
		const struct ip_said *e = &d->said[i];
		bool gone = (e->obj == IP_SAID_IRQ && !ip_snapshot_irq(s, e->irq)) ||
			    (e->obj == IP_SAID_PID && !snapshot_has_pid(s, e->pid)) ||
			    (e->obj == IP_SAID_DEV && !snapshot_has_dev(s, e->device));

		if (gone)
			said_remove(d, i);
	}
}

/* A failure apply reports as IP_APPLY_FAILED is planned again every cycle:
 * it is said once per object and error. */
static bool result_said(struct ip_daemon *d, const struct ip_apply_result *r)
{
	char key[96], what[32];

	snprintf(key, sizeof(key), "apply %d irq %u pid %d dev %s", r->what, r->irq, (int)r->pid,
		 r->device);
	snprintf(what, sizeof(what), "%d", r->err);
	if (r->what == IP_APPLY_RQ || r->what == IP_APPLY_CQ)
		return said(d, IP_SAID_DEV, 0, 0, r->device, key, what);
	if (r->what == IP_APPLY_IRQ)
		return said(d, IP_SAID_IRQ, r->irq, 0, NULL, key, what);
	return said(d, IP_SAID_PID, 0, r->pid, NULL, key, what);
}

/*
 * A move written is said and counted each time: the same target again means
 * someone else (irqbalance, an admin) moved the vector in between, and that
 * write is news. Said only once per IRQ and target, as before, it went
 * unlogged and uncounted ("moves: 1" after two writes of 6 around an
 * admin's 0-3). A dry run's move, planned again every cycle because
 * nothing is written, is said once per IRQ and target, and not counted.
 */
static void report_moves(struct ip_daemon *d, const struct ip_plan *p, bool dry, struct ip_journal *jf)
{
	for (int i = 0; i < p->nr_moves; i++) {
		const struct ip_move *m = &p->moves[i];
		char key[32];

		snprintf(key, sizeof(key), "irq %u", m->irq);
		if (m->failed || (!said(d, IP_SAID_IRQ, m->irq, 0, NULL, key, cpuset_str(&m->to)) && dry))
			continue;
		ip_report_move_journal(jf, m);
		/* a dry run's move did not happen: not the catalog's event */
		ip_log_id(&d->log, LOG_INFO, dry ? NULL : jf->message_id, jf->fields, "%s%s",
			  dry ? "dry run: would have " : "", jf->message);
		if (!dry) {
			d->moves_total++;
			ip_metrics_move(&d->metrics, m);
			d->last_move_cycle = d->cycles;
			snprintf(d->last_move, sizeof(d->last_move), "%u %s → %s", m->irq, m->name,
				 cpuset_str(&m->to));
		}
	}
}

static void report_threads(struct ip_daemon *d, const struct ip_plan *p, bool dry, struct ip_journal *jf)
{
	for (int i = 0; i < p->nr_threads; i++) {
		const struct ip_thread_action *t = &p->threads[i];
		char key[32], what[IP_CPULIST_MAX + 16];

		/* a priority change is a target of its own */
		snprintf(key, sizeof(key), "pid %d", (int)t->pid);
		snprintf(what, sizeof(what), "%s prio %d", cpuset_str(&t->to),
			 t->set_sched ? t->priority : 0);
		if (t->failed || !said(d, IP_SAID_PID, 0, t->pid, NULL, key, what))
			continue;
		ip_report_thread_journal(jf, t);
		ip_log_id(&d->log, LOG_INFO, dry ? NULL : jf->message_id, jf->fields, "%s%s",
			  dry ? "dry run: " : "", jf->message);
	}
}

/* per-disk settings: rq_affinity and completion threads */
static void report_disk_settings(struct ip_daemon *d, const struct ip_plan *p, bool dry,
				 struct ip_journal *jf)
{
	for (int i = 0; i < p->nr_rq; i++) {
		if (p->rq[i].failed)
			continue;
		ip_report_rq_journal(jf, &p->rq[i]);
		ip_log_id(&d->log, LOG_INFO, dry ? NULL : jf->message_id, jf->fields, "%s%s",
			  dry ? "dry run: would set " : "", jf->message);
	}
	for (int i = 0; i < p->nr_cq; i++) {
		const struct ip_cq_action *a = &p->cq[i];

		if (a->failed)
			continue;
		ip_report_cq_journal(jf, a);
		ip_log_id(&d->log, LOG_INFO, dry ? NULL : jf->message_id, jf->fields, "%s%s",
			  dry ? "dry run: would " : "", jf->message);
	}
}

/*
 * A vector the kernel took a write for but keeps elsewhere (the policy's
 * "refused": effective_affinity_list outside what was written, e.g. x86
 * with no vector space left on the CPUs asked for) is not written again
 * while that stands. Only explain said so: the log's last word was the
 * move, and the interrupts stayed where they were (the phone fixture with
 * a kernel keeping UFS vector 37 on CPU 0: "moved 37 ufshcd 0 -> 6", then
 * nothing). Said once for each affinity and effective affinity.
 */
static void report_kept(struct ip_daemon *d, const struct ip_kept *k, struct ip_journal *jf)
{
	char what[2 * IP_CPULIST_MAX + 2], key[32];

	if (k->managed && k->explained) {
		ip_report_kept_journal(jf, k);
		ip_log_id(&d->log, LOG_NOTICE, jf->message_id, jf->fields, "%s", jf->message);
		return;
	}
	if (k->why.code != IP_R_REFUSED)
		return;
	snprintf(key, sizeof(key), "refused %u", k->irq);
	snprintf(what, sizeof(what), "%s %s", cpuset_str(&k->why.set), cpuset_str(&k->why.set2));
	if (!said(d, IP_SAID_IRQ, k->irq, 0, NULL, key, what))
		return;
	ip_report_kept_journal(jf, k);
	ip_log_id(&d->log, LOG_NOTICE, jf->message_id, jf->fields, "%s", jf->message);
}

static void report_kept_and_notes(struct ip_daemon *d, const struct ip_plan *p, struct ip_journal *jf)
{
	for (int i = 0; i < p->nr_kept; i++)
		report_kept(d, &p->kept[i], jf);
	for (int i = 0; i < p->nr_notes; i++) {
		const struct ip_note *n = &p->notes[i];

		ip_report_note_journal(jf, n);
		if (said(d, n->device[0] ? IP_SAID_DEV : IP_SAID_NONE, 0, 0, n->device, jf->message, ""))
			ip_log_id(&d->log, LOG_NOTICE, jf->message_id, jf->fields, "%s", jf->message);
	}
}

/* a disk no route found a vector for: said once, with what to send */
static void report_unsteerable(struct ip_daemon *d, const struct ip_snapshot *s)
{
	for (int i = 0; i < s->storage.nr_devs; i++) {
		const struct ip_blockdev *b = &s->storage.devs[i];
		char w[640];

		if (ip_blockdev_unsteerable(b) &&
		    said(d, IP_SAID_DEV, 0, 0, b->name, ip_report_discovery(b, w, sizeof(w)), ""))
			ip_log(&d->log, LOG_WARNING, "%s", w);
	}
}

static void report_apply_results(struct ip_daemon *d, const struct ip_step *st, struct ip_journal *jf)
{
	for (int i = 0; i < st->results.n; i++) {
		const struct ip_apply_result *r = &st->results.r[i];
		unsigned suppressed;
		char key[64];

		if (r->outcome == IP_APPLY_OK || r->outcome == IP_APPLY_DRY_RUN ||
		    r->outcome == IP_APPLY_SKIPPED ||
		    (r->outcome == IP_APPLY_FAILED && !result_said(d, r)))
			continue;
		/* Not a second "log once": what may repeat (a CPU refused, no
		 * vector space, a vanished object: each can change cycle by
		 * cycle) is not deduplicated but limited to 3 a minute. */
		snprintf(key, sizeof(key), "apply %d %u %d", r->what, r->irq, (int)r->pid);
		if (!ip_log_ratelimit(&d->log, key, st->now_ns, 3, &suppressed))
			continue;
		ip_report_apply_journal(jf, r);
		/* a freed vector is the kernel's doing, not a failure */
		ip_log_id(&d->log,
			  r->outcome == IP_APPLY_MANAGED || r->detail == IP_APPLY_D_FREED ? LOG_NOTICE
											 : LOG_WARNING,
			  jf->message_id, jf->fields, "%s%s", jf->message,
			  suppressed ? " (earlier messages suppressed)" : "");
	}
}

/* The polling pathology: a storage IRQ thread that wakes many times
 * per interrupt, or eats a CPU. */
static void report_busy_irq_threads(struct ip_daemon *d, const struct ip_step *st)
{
	for (int i = 0; st->model.prev && i < st->model.cur->nr_threads; i++) {
		const struct ip_irq_thread *t = &st->model.cur->threads[i];
		const struct ip_thread_rate *r = &st->model.thread[i];
		const struct ip_irq *q = ip_snapshot_irq(st->model.cur, t->irq);
		unsigned suppressed;
		char key[64];

		if (!q || !ip_irq_info(q)->nr_devs)
			continue;
		if (r->wakeups_per_irq <= d->cfg.daemon.top_wakeups_per_irq &&
		    r->cpu_pct <= d->cfg.daemon.top_thread_cpu)
			continue;
		snprintf(key, sizeof(key), "thread %d", (int)t->pid);
		if (!ip_log_ratelimit(&d->log, key, st->now_ns, 1, &suppressed))
			continue;
		/* Many wakeups per interrupt is the polling pathology; CPU use
		 * alone is the handler's (or, under threadirqs, the completions')
		 * work landing on one CPU. Say which. */
		ip_log(&d->log, LOG_WARNING,
		       "IRQ thread %s (pid %d) woke %.1f times per interrupt and used %.0f%% of a CPU: %s%s",
		       t->comm, (int)t->pid, r->wakeups_per_irq < 0 ? 0 : r->wakeups_per_irq, r->cpu_pct,
		       r->wakeups_per_irq > d->cfg.daemon.top_wakeups_per_irq
			       ? "it polls rather than waits for its interrupt"
			       : "its interrupt's work is a large load on the CPU it runs on",
		       suppressed ? " (repeats suppressed)" : "");
	}
}

static void report_cycle(struct ip_daemon *d, const struct ip_step *st)
{
	const struct ip_plan *p = &st->plan;
	bool dry = ip_engine_dry_run(d->engine);
	/* one entry's text and fields; large (two CPU lists), so not on the stack */
	struct ip_journal *jf = malloc(sizeof(*jf));
	const char *note = ip_sampler_take_note(ip_engine_sampler(d->engine));

	said_prune(d, st->model.cur);
	if (note)
		ip_log(&d->log, LOG_NOTICE, "sampler: %s", note);
	if (!jf) {
		ip_log(&d->log, LOG_ERR, "out of memory: this cycle's decisions are not logged");
		return;
	}
	if (st->decided) {
		report_moves(d, p, dry, jf);
		report_threads(d, p, dry, jf);
		report_disk_settings(d, p, dry, jf);
		report_kept_and_notes(d, p, jf);
	}
	report_apply_results(d, st, jf);
	free(jf);
	report_unsteerable(d, st->model.cur);
	report_busy_irq_threads(d, st);
}

static void count_vectors(struct ip_daemon *d, const struct ip_step *st, int *steered, int *managed)
{
	const struct ip_history *h = ip_engine_history(d->engine);
	const struct ip_snapshot *s = st->model.cur;
	size_t at = 0;

	*steered = *managed = 0;
	for (int i = 0; i < s->nr_irqs; i++) {
		const struct ip_irq_info *info = ip_irq_info(&s->irqs[i]);
		const struct ip_irq_hist *e;

		if (!info->nr_devs)
			continue;
		e = ip_history_find_next(h, s->irqs[i].irq, &at);
		if (info->managed != IP_MANAGED_NO || (e && e->managed != IP_MANAGED_NO))
			(*managed)++;
		else if (e && e->placed)
			(*steered)++;
	}
}

static void notify_status(struct ip_daemon *d, const struct ip_step *st, int steered, int managed)
{
	char status[sizeof(d->status)];

	snprintf(status, sizeof(status), "STATUS=%d devices, %d vectors steered, %d managed%s; last move: %s",
		 st->model.cur->storage.nr_devs, steered, managed,
		 ip_engine_dry_run(d->engine) ? " (dry run)" : "", d->last_move[0] ? d->last_move : "none");
	if (!d->ready) {
		d->ready = true;
		sd_notifyf(0, "READY=1\n%s", status);
	} else if (strcmp(status, d->status) != 0) {
		sd_notify(0, status);
	}
	memcpy(d->status, status, sizeof(status));
}

/* The cycle in the counters (their one owner is d->metrics), then in the
 * textfile, if one is set. */
static void cycle_metrics(struct ip_daemon *d, const struct ip_step *st, uint64_t start_ns, int managed)
{
	if (ip_metrics_update(&d->metrics, st) < 0)
		ip_log(&d->log, LOG_ERR, "out of memory: this cycle's metrics are incomplete");
	d->metrics.managed = managed;
	d->metrics.cycle_s = (double)(mono_ns() - start_ns) / 1e9;
	d->metrics.have_cycle = true;
	ip_control_metrics_textfile(d);
}

static bool storage_active(const struct ip_step *st)
{
	if (!st->model.prev)
		return true;
	for (int i = 0; i < st->model.cur->storage.nr_devs; i++)
		if (st->model.dev[i].ios > 0 || st->model.dev[i].submit_total > 0)
			return true;
	return false;
}

static void capture_step(struct ip_daemon *d)
{
	struct ip_snapshot snap;
	struct ip_diag diag = { "" };
	int ret;

	if (!d->cap_dir)
		return;
	ret = ip_capture_step(d->root, d->cap_sampler, d->cap_fd, d->cap_dir, d->cap_step, &snap, &diag);
	if (ret < 0) {
		ip_log(&d->log, LOG_ERR, "capture into %s stopped: %s", d->cap_dir, diag.msg);
		d->cap_left = 0;
	} else {
		ip_snapshot_free_cq(&snap);
		ip_snapshot_free(&snap);
		d->cap_step++;
		d->cap_left--;
	}
	if (d->cap_left <= 0) {
		if (ret >= 0)
			ip_log(&d->log, LOG_NOTICE, "capture of %d samples into %s finished", d->cap_step,
			       d->cap_dir);
		free(d->cap_dir);
		d->cap_dir = NULL;
		close(d->cap_fd);
		d->cap_fd = -1;
		ip_sampler_free(d->cap_sampler);
		d->cap_sampler = NULL;
	}
}

/* Drops and restores reach the file here; new originals reach it before
 * their write (ip_state_record). Nothing is written when nothing changed. */
static void save_state(struct ip_daemon *d)
{
	struct ip_diag diag = { "" };
	unsigned suppressed;
	int ret;

	if (!d->state)
		return;
	ret = ip_state_save(d->state, ip_engine_originals(d->engine), &diag);
	if (ret > 0)
		ip_log(&d->log, LOG_WARNING, "%s", diag.msg);
	else if (ret < 0 && ip_log_ratelimit(&d->log, "state", mono_ns(), 1, &suppressed))
		ip_log(&d->log, LOG_WARNING, "cannot record original settings for --restore: %s", diag.msg);
}

/* ---- irqpilot_cq: the module's events --------------------------------- */

static void cq_disconnect(struct ip_daemon *d)
{
	d->cq_src = sd_event_source_disable_unref(d->cq_src);
	ip_cq_close(d->live.cq);
	d->live.cq = NULL;
}

/*
 * A stall: a request waited past the module's stall_ms for its completion
 * thread. What to do about it is the policy's to decide (move the thread,
 * or detach the device after a second stall) and apply's to write, like
 * any other decision: the stall becomes an input of the next cycle, which
 * is brought forward so that it comes at once.
 */
static void cq_stall(struct ip_daemon *d, const struct ip_cq_event *ev)
{
	char f_dev[64], f_q[32];
	const char *fields[] = { f_dev, f_q, NULL };

	if (ip_engine_stall(d->engine, ev->major, ev->minor, ev->hwq, mono_ns(), ev->wait_ns) < 0) {
		snprintf(f_dev, sizeof(f_dev), "IRQPILOT_DEVICE=%s", ev->disk);
		snprintf(f_q, sizeof(f_q), "IRQPILOT_QUEUE=%d", ev->hwq);
		ip_log_id(&d->log, LOG_WARNING, IP_MESSAGE_STALL, fields,
			  "%s queue %d stalled, but out of memory to act on it", ev->disk, ev->hwq);
		return;
	}
	ip_daemon_kick(d, 200000);
}

static void cq_event(void *userdata, const struct ip_cq_event *ev)
{
	struct ip_daemon *d = userdata;
	char f_dev[64];
	const char *fields[] = { f_dev, NULL };

	snprintf(f_dev, sizeof(f_dev), "IRQPILOT_DEVICE=%s", ev->disk);
	switch (ev->kind) {
	case IP_CQ_EV_STALL:
		cq_stall(d, ev);
		return;
	case IP_CQ_EV_REMOVED:
		ip_log_fields(&d->log, LOG_NOTICE, fields,
			      "irqpilot_cq: %s went away and was detached", ev->disk);
		break;
	default:
		ip_log_fields(&d->log, LOG_DEBUG, fields, "irqpilot_cq: %s %s", ev->disk,
			      ip_cq_event_name(ev->kind));
		break;
	}
	ip_daemon_kick(d, 200000);
}

static int on_cq(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct ip_daemon *d = userdata;
	int ret = ip_cq_read_events(d->live.cq, cq_event, d);

	if (ret < 0) {
		/* closing the socket makes the module detach the disks attached
		 * on it (owned); the next cycle's plan attaches them again */
		ip_log(&d->log, LOG_WARNING,
		       "irqpilot_cq: events: %s; reconnecting next cycle (the disks irqpilotd attached are detached meanwhile)",
		       strerror(-ret));
		cq_disconnect(d);
	}
	return 0;
}

/* The module may come and go: look for it every cycle while it is away. */
static void cq_connect(struct ip_daemon *d, const struct ip_step *st)
{
	struct ip_diag diag = { "" };
	int ret;

	if (!ip_root_is_live(d->root))
		return;
	if (d->live.cq && st && !st->model.cur->have_cq) {
		ip_log(&d->log, LOG_NOTICE, "irqpilot_cq was unloaded: completion threads gone");
		cq_disconnect(d);
		d->cq_absent_logged = true;
	}
	if (d->live.cq)
		return;
	ret = ip_cq_loaded(d->root) ? ip_cq_open(&d->live.cq, &diag) : -IP_CQ_ABSENT;
	if (ret == -IP_CQ_ABSENT) {
		if (!d->cq_absent_logged)
			ip_log(&d->log, LOG_NOTICE,
			       "irqpilot_cq is not loaded: completion threads are not used (load irqpilot_cq.ko to have them)");
		d->cq_absent_logged = true;
		return;
	}
	if (ret >= 0)
		ret = ip_cq_subscribe(d->live.cq, &diag);
	if (ret >= 0)
		ret = sd_event_add_io(d->ev, &d->cq_src, ip_cq_event_fd(d->live.cq), EPOLLIN, on_cq, d);
	if (ret < 0) {
		unsigned suppressed;

		if (ip_log_ratelimit(&d->log, "cq", mono_ns(), 1, &suppressed))
			ip_log(&d->log, LOG_WARNING, "irqpilot_cq: %s",
			       diag.msg[0] ? diag.msg : strerror(-ret));
		cq_disconnect(d);
		return;
	}
	ip_log(&d->log, LOG_INFO, "irqpilot_cq is loaded: completion threads available, following its events");
	d->cq_absent_logged = false;
}

/*
 * The idle back-off (idle.h), where no perf wakeup is open: between full
 * cycles every IP_IDLE_FULL_S, a probe at the configured interval reads
 * /proc/diskstats (every disk's completed I/Os, also polled ones that raise
 * no interrupt) and the online, isolated and nohz_full CPU lists; a change
 * in either starts a full cycle at once. A burst after idle waits at most
 * one interval for the cycle that places it (the issue measured 13 s), and
 * a CPU fenced off at idle is left the next interval. True when the full
 * cycle can wait; false also when a file cannot be read.
 */
static bool idle_probe_quiet(struct ip_daemon *d, uint64_t usec)
{
	struct ip_diag diag = { "" };
	uint64_t ios = 0;
	bool quiet, cpus_changed;

	/* When the full cycle is due the probe would read its files only to
	 * run it, and the cycle reads them again (and leaves the baseline). */
	if (usec >= d->last_step_usec + (uint64_t)(IP_IDLE_FULL_S * USEC_PER_SEC))
		return false;
	if (ip_sampler_probe(ip_engine_sampler(d->engine), &ios, &cpus_changed, &diag) < 0) {
		d->probe_valid = false;
		return false;
	}
	quiet = !cpus_changed && ip_idle_probe_quiet(d->probe_valid, d->probe_ios, ios, usec,
						     d->last_step_usec, IP_IDLE_FULL_S);
	if (cpus_changed)
		ip_log(&d->log, LOG_DEBUG, "idle: the online or isolated CPUs changed: a cycle now");
	d->probe_ios = ios;
	d->probe_valid = true;
	return quiet;
}

/* ---- the perf wakeup: no timer while idle ---------------------------- */

struct ip_counters *ip_daemon_counters(struct ip_daemon *d)
{
	return ip_sampler_counters(ip_engine_sampler(d->engine));
}

static void wake_sources_free(struct ip_daemon *d)
{
	for (int i = 0; i < d->nr_wake_src; i++)
		sd_event_source_disable_unref(d->wake_src[i]);
	free(d->wake_src);
	d->wake_src = NULL;
	d->nr_wake_src = 0;
}

static void wake_disarm(struct ip_daemon *d)
{
	if (!d->wake_armed)
		return;
	for (int i = 0; i < d->nr_wake_src; i++)
		sd_event_source_set_enabled(d->wake_src[i], SD_EVENT_OFF);
	(void)ip_counters_wake_disarm(ip_daemon_counters(d));
	d->wake_armed = false;
}

static int on_wake(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct ip_daemon *d = userdata;

	(void)s;
	(void)fd;
	(void)revents;
	/* disarmed at once: the cycles that follow run on the timer, and a
	 * wakeup per bio would cost more than the cycle */
	wake_disarm(d);
	if (d->holding) {
		/* a CPU that submitted nothing before: back to the interval
		 * until the placement has held again */
		ip_log(&d->log, LOG_DEBUG, "storage I/O from a new CPU: a cycle now");
		d->settled_cycles = 0;
		d->holding = false;
	} else {
		ip_log(&d->log, LOG_DEBUG, "storage I/O started: a cycle now");
	}
	ip_daemon_kick(d, 0);
	return 0;
}

/* The event sources follow the counters' fds, which perf reopens when the
 * devices or CPUs change. Returns how many are usable (0: back off). */
static int wake_sync(struct ip_daemon *d)
{
	struct ip_counters *c = ip_daemon_counters(d);
	unsigned gen;
	int n = ip_counters_wake_count(c, &gen);

	if (n == d->nr_wake_src && gen == d->wake_gen)
		return n;
	wake_disarm(d);
	wake_sources_free(d);
	d->wake_gen = gen;
	if (n <= 0)
		return 0;
	d->wake_src = calloc(n, sizeof(*d->wake_src));
	for (int i = 0; d->wake_src && i < n; i++) {
		int ret = sd_event_add_io(d->ev, &d->wake_src[i], ip_counters_wake_fd(c, i), EPOLLIN, on_wake, d);

		if (ret >= 0)
			ret = sd_event_source_set_enabled(d->wake_src[i], SD_EVENT_OFF);
		d->nr_wake_src = i + 1;
		if (ret < 0) {
			ip_log(&d->log, LOG_WARNING, "idle wakeup: event source: %s; backing off on a timer instead",
			       strerror(-ret));
			wake_sources_free(d);
			return 0;
		}
	}
	if (!d->wake_src)
		return 0;
	return n;
}

/* True when armed (on every CPU but @skip's, NULL: all): the timer can
 * stop, or stretch to the hold's period. */
static bool wake_arm(struct ip_daemon *d, const ip_cpuset *skip)
{
	struct ip_counters *c = ip_daemon_counters(d);
	int ret = ip_counters_wake_arm_except(c, skip);

	if (ret < 0) {
		unsigned suppressed;

		if (ip_log_ratelimit(&d->log, "wake", mono_ns(), 1, &suppressed))
			ip_log(&d->log, LOG_WARNING, "idle wakeup: arming the perf events: %s; backing off on a timer instead",
			       strerror(-ret));
		return false;
	}
	/* a disarmed event keeps its source off: a wakeup it raised before it
	 * was disarmed must not count as I/O from elsewhere */
	for (int i = 0; i < d->nr_wake_src; i++)
		sd_event_source_set_enabled(d->wake_src[i],
					    ip_counters_wake_armed(c, i) ? SD_EVENT_ON : SD_EVENT_OFF);
	d->wake_armed = true;
	return true;
}

/* ---- the watched tree: no timer while idle on a --root tree ----------- */

static void act_close(struct ip_daemon *d)
{
	d->act_src = sd_event_source_disable_unref(d->act_src);
	ip_watch_free(d->act);
	d->act = NULL;
	d->still = false;
}

/* A still tree's watch that broke: the full cycle a minute, as without one. */
static void act_failed(struct ip_daemon *d, int ret, const struct ip_diag *diag)
{
	ip_log(&d->log, LOG_WARNING, "idle: watching the tree's counts: %s; a full cycle every %.0f s",
	       diag->msg[0] ? diag->msg : strerror(-ret), ip_daemon_idle_full_s(d));
	act_close(d);
}

/* The still tree is a state of the watched one: without the probe's watch
 * the daemon probes on its timer, and the full cycle a minute stays. */
static void watch_close(struct ip_daemon *d)
{
	act_close(d);
	d->watch_src = sd_event_source_disable_unref(d->watch_src);
	ip_watch_free(d->watch);
	d->watch = NULL;
}

/* Reads the watch's queue: true when a probe file changed. A watch that
 * cannot be read or made again is dropped, and the probe runs on the
 * timer from then on. */
static bool watch_changed(struct ip_daemon *d)
{
	struct ip_diag diag = { "" };
	int ret;

	if (!d->watch)
		return false;
	ret = ip_watch_changed(d->watch, &diag);
	if (ret >= 0)
		return ret > 0;
	ip_log(&d->log, LOG_WARNING, "idle: watching the tree's files: %s; probing every %.1f s instead",
	       diag.msg[0] ? diag.msg : strerror(-ret), ip_daemon_interval_s(d));
	watch_close(d);
	return true;
}

static int on_watch(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct ip_daemon *d = userdata;
	uint64_t now, due;

	(void)fd;
	(void)revents;
	if (!watch_changed(d))
		return 0; /* a neighbour of the files: keep waiting */
	/* a watch that failed is gone, @s with it: only the probe is left */
	if (d->watch)
		sd_event_source_set_enabled(s, SD_EVENT_OFF);
	/* at most one probe an interval, as on the timer: a tree rewritten
	 * every 0.1 s without I/O costs no more than the timer's probes */
	due = d->last_look_usec + (uint64_t)(ip_daemon_interval_s(d) * USEC_PER_SEC);
	if (sd_event_now(d->ev, CLOCK_MONOTONIC, &now) < 0)
		now = due;
	ip_daemon_kick(d, due > now ? due - now : 0);
	return 0;
}

/* ---- the still tree: no full cycle while nothing is written ----------- */

static int64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* "/proc/interrupts, /proc/softirqs or /irqpilot/submit", below the root:
 * the files whose write ends the still state, as the sampler lists them. */
static const char *activity_files(char *buf, size_t size)
{
	int n;
	const char *const *paths = ip_sampler_activity_paths(&n);

	return ip_join(buf, size, paths, n > 0 ? (size_t)n : 0, ", ", " or ", "/");
}

/*
 * The minute's full cycle is for what only it reads; on a tree, files no
 * one wrote since the last one began read as they did then. Returns
 * @due_s, the wait for it, when one was written, or -1 when none was:
 * then the still tree's watch waits for the first write, with no timer.
 * The watch is made before the look, so that a write lands in one or the
 * other.
 */
static double still_wait(struct ip_daemon *d, double due_s)
{
	struct ip_diag diag = { "" };
	const char *const *paths;
	int n, ret;

	if (!d->act)
		return due_s;
	ret = ip_watch_resume(d->act, &diag);
	if (ret < 0) {
		act_failed(d, ret, &diag);
		return due_s;
	}
	paths = ip_sampler_activity_paths(&n);
	/* a realtime clock set back since the cycle began says nothing of
	 * what the ctimes mean: as if written */
	if (real_ns() < d->last_step_real_ns || ip_watch_written_since(d->root, paths, n, d->last_step_real_ns)) {
		ip_watch_pause(d->act);
		return due_s;
	}
	if (!d->still) {
		char files[256];

		ip_log(&d->log, LOG_DEBUG, "idle: nothing in the tree written since the last full cycle: none until %s is",
		       activity_files(files, sizeof(files)));
	}
	d->still = true;
	sd_event_source_set_enabled(d->act_src, SD_EVENT_ON);
	return -1;
}

/* Out of the still state, before any cycle or probe reads the tree. */
static void still_end(struct ip_daemon *d)
{
	if (!d->act)
		return;
	sd_event_source_set_enabled(d->act_src, SD_EVENT_OFF);
	ip_watch_pause(d->act);
	d->still = false;
}

/* A write to a still tree: the full cycle a minute after the last one
 * began, as it would have run had the tree been written all along. */
static int on_act(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct ip_daemon *d = userdata;
	struct ip_diag diag = { "" };
	uint64_t now, due;
	int ret;

	(void)s;
	(void)fd;
	(void)revents;
	ret = ip_watch_changed(d->act, &diag);
	if (ret == 0)
		return 0; /* a neighbour of the files: still */
	if (ret < 0)
		act_failed(d, ret, &diag);
	else
		still_end(d);
	due = d->last_step_usec + (uint64_t)(ip_daemon_idle_full_s(d) * USEC_PER_SEC);
	if (sd_event_now(d->ev, CLOCK_MONOTONIC, &now) < 0)
		now = due;
	ip_daemon_kick(d, due > now ? due - now : 0);
	return 0;
}

/* A watch of @paths with its event source, made off: the caller turns it
 * on when it waits on it. Undone on failure. */
static int watch_add(struct ip_daemon *d, const char *const *paths, int n, struct ip_watch **w,
		     sd_event_source **src, sd_event_io_handler_t handler, struct ip_diag *diag)
{
	int ret = ip_watch_open(d->root, paths, n, w, diag);

	if (ret >= 0)
		ret = sd_event_add_io(d->ev, src, ip_watch_fd(*w), EPOLLIN, handler, d);
	if (ret >= 0)
		ret = sd_event_source_set_enabled(*src, SD_EVENT_OFF);
	if (ret >= 0)
		return 0;
	*src = sd_event_source_disable_unref(*src);
	ip_watch_free(*w);
	*w = NULL;
	return ret;
}

/* The still tree's watch, made and paused at once: it runs only while the
 * tree is still. Without it the full cycle a minute stays. */
static void act_open(struct ip_daemon *d)
{
	struct ip_diag diag = { "" };
	const char *const *paths;
	int n, ret;

	paths = ip_sampler_activity_paths(&n);
	ret = watch_add(d, paths, n, &d->act, &d->act_src, on_act, &diag);
	if (ret >= 0) {
		ip_watch_pause(d->act);
		return;
	}
	ip_log(&d->log, LOG_INFO, "idle: the tree's counts cannot be watched (%s): a full cycle every %.0f s",
	       diag.msg[0] ? diag.msg : strerror(-ret), ip_daemon_idle_full_s(d));
	act_close(d);
}

/* On a --root tree whose probe files can be watched (watch.h); elsewhere
 * the reason is said once, and the probe stays on the timer. */
static void watch_open(struct ip_daemon *d)
{
	struct ip_diag diag = { "" };
	const char *const *paths;
	int n, ret;

	paths = ip_sampler_probe_paths(&n);
	ret = watch_add(d, paths, n, &d->watch, &d->watch_src, on_watch, &diag);
	if (ret >= 0) {
		act_open(d);
		return;
	}
	if (!ip_root_is_live(d->root))
		ip_log(&d->log, LOG_INFO, "idle: the tree's files cannot be watched (%s): probing them on a timer",
		       diag.msg[0] ? diag.msg : strerror(-ret));
	watch_close(d);
}

/*
 * The probe's timer is the watch now; the full cycle a minute stays, for
 * what only it reads (a tree that is written but not its /proc/diskstats
 * still gets one), while the tree is written (still_wait()). The watch
 * was paused while the daemon sampled on its timer (ip_watch_pause()):
 * made again now, it holds no change made since this cycle's reads, so
 * the first wait is one probe's interval, @probe_s, which is also the
 * timer's when the watch cannot be made. -1: no timer.
 */
static double wait_on_watch(struct ip_daemon *d, double probe_s)
{
	struct ip_diag diag = { "" };
	int ret = ip_watch_resume(d->watch, &diag);

	if (ret < 0) {
		ip_log(&d->log, LOG_WARNING, "idle: watching the tree's files: %s; probing every %.1f s instead",
		       diag.msg[0] ? diag.msg : strerror(-ret), probe_s);
		watch_close(d);
		return probe_s;
	}
	sd_event_source_set_enabled(d->watch_src, SD_EVENT_ON);
	return ret > 0 ? probe_s : still_wait(d, ip_daemon_idle_full_s(d));
}

/* Says once how the daemon waits when it goes idle, or stops. */
static void log_idle_change(struct ip_daemon *d, enum ip_wait wait, double next_s)
{
	char files[256];

	if (wait == IP_WAIT_EVENT)
		ip_log(&d->log, LOG_DEBUG, "no storage I/O: no timer, the first bio wakes irqpilotd (perf, %d CPUs)",
		       d->nr_wake_src);
	else if (wait == IP_WAIT_WATCH && d->act)
		ip_log(&d->log, LOG_DEBUG,
		       "no storage I/O: a change to the tree's /proc/diskstats or CPU lists wakes irqpilotd (inotify); a full cycle every %.0f s while its %s is written",
		       ip_daemon_idle_full_s(d), activity_files(files, sizeof(files)));
	else if (wait == IP_WAIT_WATCH)
		ip_log(&d->log, LOG_DEBUG,
		       "no storage I/O: a change to the tree's /proc/diskstats or CPU lists wakes irqpilotd (inotify); a full cycle every %.0f s",
		       ip_daemon_idle_full_s(d));
	else if (d->idle)
		ip_log(&d->log, LOG_DEBUG,
		       "no storage I/O: a full cycle every %.0f s, /proc/diskstats and the CPU lists every %.1f s (no perf wakeup: %s)",
		       ip_daemon_idle_full_s(d), next_s, ip_counters_wake_why(ip_daemon_counters(d)) ?: "not opened");
	else
		ip_log(&d->log, LOG_DEBUG, "storage I/O again: sampling every %.1f s", next_s);
}

/*
 * How to wait after a good cycle (idle.h): seconds to the next one, or -1
 * for no timer (idle, the perf wakeup armed or the tree watched).
 */
static double after_cycle(struct ip_daemon *d, const struct ip_step *st)
{
	bool was_idle = d->idle;
	enum ip_wait wait;
	double next_s = ip_daemon_interval_s(d);

	/* Back off only after a few quiet cycles in a row, so a pause
	 * of one interval does not cost the next ten seconds; any I/O
	 * brings the short interval back at once. */
	d->quiet_cycles = storage_active(st) ? 0 : d->quiet_cycles + 1;
	d->idle = d->quiet_cycles >= IP_IDLE_AFTER_CYCLES;
	/* the cycle read /proc/diskstats whole, as the probe does: the first
	 * probe compares with it, not with nothing (which ran a full cycle
	 * each time the daemon went idle) */
	d->probe_valid = d->idle && st->model.cur->have_all_ios;
	d->probe_ios = st->model.cur->all_ios;
	if (st->decided && st->model.prev && d->quiet_cycles == 0 && ip_plan_settled(&st->plan))
		d->settled_cycles++;
	else
		d->settled_cycles = 0;
	wait = ip_idle_wait(d->idle, d->settled_cycles, d->cap_dir != NULL, wake_sync(d), d->watch != NULL, next_s);
	if (d->idle != was_idle)
		log_idle_change(d, wait, next_s);
	if (wait == IP_WAIT_EVENT && wake_arm(d, NULL)) {
		d->holding = false;
		return -1;
	}
	if (wait == IP_WAIT_WATCH) {
		d->holding = false;
		wake_disarm(d);
		return wait_on_watch(d, next_s);
	}
	/* sampling on the timer: the tree's writes are no one's news */
	if (d->watch)
		ip_watch_pause(d->watch);
	if (wait == IP_WAIT_HOLD) {
		double hold_s = ip_hold_interval_s(next_s);
		ip_cpuset busy;

		/* where the I/O comes from now wakes no one; anywhere else does */
		ip_model_submit_cpus(&st->model, &busy);
		if (wake_arm(d, &busy)) {
			if (!d->holding)
				ip_log(&d->log, LOG_DEBUG,
				       "placement held for %u cycles: a cycle every %.1f s, a bio from a CPU other than %s wakes irqpilotd",
				       d->settled_cycles, hold_s, cpuset_str(&busy));
			d->holding = true;
			return hold_s;
		}
	}
	if (d->holding)
		ip_log(&d->log, LOG_DEBUG, "placement no longer settled: sampling every %.1f s", next_s);
	d->holding = false;
	wake_disarm(d);
	return next_s;
}

/* What a good cycle says of itself: log, capture, state, status, metrics. */
static void report_good_cycle(struct ip_daemon *d, const struct ip_step *st, uint64_t start_ns)
{
	int steered, managed;

	d->cycles++;
	cq_connect(d, st);
	report_cycle(d, st);
	capture_step(d);
	save_state(d);
	count_vectors(d, st, &steered, &managed);
	notify_status(d, st, steered, managed);
	cycle_metrics(d, st, start_ns, managed);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct ip_daemon *d = userdata;
	struct ip_diag diag = { "" };
	struct ip_step *st;
	uint64_t start_ns = mono_ns();
	enum ip_wait wait;
	double next_s;
	int ret;

	/* Run while armed, the timer was kicked (a uevent, a client): a full
	 * cycle, at the interval until the next quiet ones. A held placement
	 * stays armed through its cycle: after_cycle() changes only the CPUs
	 * whose part changed, where disarming and arming all of them cost two
	 * ioctls and two epoll_ctls a CPU every held cycle. A bio from a CPU
	 * that submitted nothing still wakes it, now or after the cycle. */
	if (!d->holding)
		wake_disarm(d);
	/* what changed before the reads below is in them: a watch event
	 * queued from here on is news to the next wait */
	if (d->watch) {
		sd_event_source_set_enabled(d->watch_src, SD_EVENT_OFF);
		(void)watch_changed(d);
	}
	if (d->still)
		still_end(d);
	d->last_look_usec = usec;
	wait = ip_idle_wait(d->idle, 0, d->cap_dir != NULL, d->nr_wake_src, d->watch != NULL, ip_daemon_interval_s(d));
	if ((wait == IP_WAIT_PROBE || wait == IP_WAIT_WATCH) && idle_probe_quiet(d, usec)) {
		next_s = ip_daemon_interval_s(d);
		if (wait == IP_WAIT_WATCH) {
			/* back to the watch, and the full cycle where it was */
			sd_event_source_set_enabled(d->watch_src, SD_EVENT_ON);
			next_s = still_wait(d, ip_daemon_idle_full_s(d) -
						       (double)(usec - d->last_step_usec) / USEC_PER_SEC);
			if (next_s < 0) {
				sd_event_source_set_enabled(s, SD_EVENT_OFF);
				return 0;
			}
		}
		goto rearm;
	}
	d->last_step_usec = usec;
	d->last_step_real_ns = real_ns();
	ret = ip_engine_step(d->engine, &st, &diag);
	if (ret < 0) {
		unsigned suppressed;

		/* A garbled or vanished file costs this cycle, not the daemon. */
		if (ip_log_ratelimit(&d->log, "cycle", mono_ns(), 3, &suppressed))
			ip_log(&d->log, LOG_ERR, "cycle failed: %s", diag.msg[0] ? diag.msg : strerror(-ret));
		next_s = ip_daemon_interval_s(d);
		d->settled_cycles = 0;
		d->holding = false;
		wake_disarm(d);
	} else {
		report_good_cycle(d, st, start_ns);
		next_s = after_cycle(d, st);
		if (next_s < 0) {
			/* nothing due: ip_daemon_kick() or a wakeup enables it */
			sd_event_source_set_enabled(s, SD_EVENT_OFF);
			return 0;
		}
	}
rearm:
	{
		uint64_t next = usec + (uint64_t)(next_s * USEC_PER_SEC);
		uint64_t end = mono_ns() / 1000;

		/* A cycle that overran its interval (a starved CPU, TCG) starts the cadence again
		 * from its end: scheduled from the missed due time the timer would be due at once,
		 * cycles would run back to back, and a client would wait through several of them
		 * for a status (seen in the VM under load: no answer within irqctl's 5 s for 120 s). */
		if (next <= end)
			next = end + (uint64_t)(next_s * USEC_PER_SEC);
		sd_event_source_set_time(s, next);
	}
	sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	return 0;
}

/* ---- signals, reload, hot-plug --------------------------------------- */

/* [control] admin_group names a group of this machine; the policy file
 * parser cannot know which exist, so an unknown one is refused here, the
 * file (@path) named as in the parser's errors: a reload's error is seen
 * only in irqctl's reply and the log, with nothing else to say which file. */
int ip_daemon_admin_group(const struct ip_config *c, const char *path, gid_t *gid, struct ip_diag *diag)
{
	const char *name = c->control.admin_group;
	struct group *g;

	*gid = IP_PROTO_NO_GROUP;
	if (!name[0])
		return 0;
	errno = 0;
	g = getgrnam(name);
	if (!g)
		return ip_diag_set(diag, errno ? -errno : -ENOENT, "%s: [control] admin_group: %s%s",
				   path, name,
				   errno ? ": group lookup failed" : " is not a group of this machine");
	*gid = g->gr_gid;
	return 0;
}

/* The banned set a policy file's @conf makes with irqctl's bans and
 * unbans, which outlive a reload. */
static void banned_with_irqctl(const struct ip_daemon *d, const ip_cpuset *conf, ip_cpuset *out)
{
	cpuset_or(out, conf, &d->ban_add);
	cpuset_andnot(out, out, &d->ban_del);
}

void ip_daemon_apply_bans(struct ip_daemon *d)
{
	banned_with_irqctl(d, &d->conf_banned, &d->cfg.policy.banned);
}

/*
 * The IRQs we moved that the new policy no longer claims (an [irq] rule
 * gone from the file) go back, as an irqctl unpin's do: left where the old
 * rule put them, they stayed there until the daemon stopped while irqctl
 * explain called them untouched. An irqctl pin still holds its IRQ.
 */
static void release_unclaimed(struct ip_daemon *d)
{
	const struct ip_originals *o = ip_engine_originals(d->engine);
	_cleanup_free_ unsigned *irqs = malloc(sizeof(*irqs) * (o->nr_irqs ? o->nr_irqs : 1));
	size_t n = o->nr_irqs;

	if (!irqs) {
		ip_log(&d->log, LOG_ERR, "reload: out of memory: the IRQs no rule claims now stay put");
		return;
	}
	/* restoring one drops its original: walk a copy */
	for (size_t i = 0; i < n; i++)
		irqs[i] = o->irqs[i].irq;
	for (size_t i = 0; i < n; i++) {
		const struct ip_irq_hist *e = ip_history_find(ip_engine_history(d->engine), irqs[i]);
		ip_cpuset restored;
		bool did;

		if (!(e && e->have_pin))
			ip_daemon_release(d, irqs[i], "reload", &restored, &did);
	}
}

static void regroup_clients(struct ip_daemon *d);

/* irqctl ban refuses to ban every online CPU; a file whose [cpus] banned
 * did so (with irqctl's bans) was taken, and the policy, finding no CPU
 * to use, left each vector where it was, on banned CPUs too, unsaid. The
 * last sample's online CPUs judge it; before the first, nothing does. */
static int check_banned(struct ip_daemon *d, const struct ip_config *next, struct ip_diag *diag)
{
	const struct ip_step *st = ip_engine_last(d->engine);
	ip_cpuset banned, left;

	if (!st || !st->model.cur)
		return 0;
	banned_with_irqctl(d, &next->policy.banned, &banned);
	cpuset_andnot(&left, &st->model.cur->topo.online, &banned);
	if (!cpuset_empty(&left))
		return 0;
	return ip_diag_set(diag, -EINVAL, "%s: [cpus] banned = %s%s%s bans every online CPU (online %s)",
			   d->o.config_path, cpuset_str(&next->policy.banned),
			   cpuset_empty(&d->ban_add) ? "" : " with irqctl's ban of ",
			   cpuset_empty(&d->ban_add) ? "" : cpuset_str(&d->ban_add),
			   cpuset_str(&st->model.cur->topo.online));
}

int ip_daemon_reload(struct ip_daemon *d, struct ip_diag *diag)
{
	struct ip_config next;
	gid_t admin_gid;
	int ret, loaded;

	ip_config_init(&next);
	ret = loaded = ip_config_load_file(d->o.config_path, d->o.config_explicit, &next, diag);
	/* A missing default file means the built-in policy at start; at a
	 * reload it is more often a file deleted or moved aside by hand, and
	 * the built-in one dropped its [cpus] banned in silence. */
	if (ret == IP_CONFIG_ABSENT && d->config_from_file)
		ret = ip_diag_set(diag, -ENOENT,
				  "%s is gone (the running policy was read from it): put it back, or restart "
				  "irqpilotd to run on the built-in policy",
				  d->o.config_path);
	if (ret >= 0)
		ret = ip_daemon_admin_group(&next, d->o.config_path, &admin_gid, diag);
	if (ret >= 0)
		ret = check_banned(d, &next, diag);
	if (ret < 0) {
		ip_config_free(&next);
		return ret;
	}
	ip_config_free(&d->cfg);
	d->cfg = next;
	d->config_from_file = loaded != IP_CONFIG_ABSENT;
	if (admin_gid != d->admin_gid) {
		d->admin_gid = admin_gid;
		regroup_clients(d);
	}
	d->cfg.policy.interval_s = ip_daemon_interval_s(d);
	/* irqctl ban / unban outlive a reload: a container runtime that banned
	 * its CPUs must not see them used again because the admin edited the file */
	d->conf_banned = d->cfg.policy.banned;
	ip_daemon_apply_bans(d);
	ip_engine_set_config(d->engine, &d->cfg.policy);
	release_unclaimed(d);
	/* dry_run = yes is obeyed whatever the command line: once irqctl
	 * dry-run off had made a --dry-run daemon write, a reload into it left
	 * the daemon writing. A --dry-run daemon otherwise keeps its state. */
	if (!d->o.dry_run || d->cfg.daemon.dry_run)
		ip_engine_set_dry_run(d->engine, d->cfg.daemon.dry_run);
	d->log.level = d->cfg.daemon.log_level;
	/* a new metrics_textfile's first failure is news */
	d->textfile_failed = false;
	/* [cpus] may have changed the capacity classes */
	ip_engine_invalidate(d->engine);
	ip_daemon_kick(d, 0);
	return 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct ip_daemon *d = userdata;
	struct ip_diag diag = { "" };

	sd_notify(0, "RELOADING=1");
	if (ip_daemon_reload(d, &diag) < 0)
		ip_log(&d->log, LOG_ERR, "reload rejected, keeping the running policy: %s", diag.msg);
	else
		ip_log(&d->log, LOG_NOTICE, "reloaded %s", d->o.config_path);
	sd_notify(0, "READY=1");
	return 0;
}

static int on_sigterm(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct ip_daemon *d = userdata;

	sd_notify(0, "STOPPING=1");
	ip_log(&d->log, LOG_INFO, "stopping on %s", si->ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
	return sd_event_exit(d->ev, IP_EXIT_OK);
}

static int on_uevent(sd_device_monitor *m, sd_device *dev, void *userdata)
{
	struct ip_daemon *d = userdata;
	const char *subsystem = NULL, *sysname = NULL;

	(void)sd_device_get_subsystem(dev, &subsystem);
	(void)sd_device_get_sysname(dev, &sysname);
	ip_log(&d->log, LOG_DEBUG, "hot-plug: %s %s, sampling again", subsystem ? subsystem : "?",
	       sysname ? sysname : "?");
	ip_engine_invalidate(d->engine);
	/* a burst of uevents makes one new sample */
	ip_daemon_kick(d, 200000);
	return 0;
}

static int start_monitor(struct ip_daemon *d)
{
	static const char *const subsystems[] = { "block", "pci", "cpu" };
	int ret = sd_device_monitor_new(&d->monitor);

	if (ret < 0)
		return ret;
	for (size_t i = 0; i < ARRAY_SIZE(subsystems); i++) {
		ret = sd_device_monitor_filter_add_match_subsystem_devtype(d->monitor, subsystems[i], NULL);
		if (ret < 0)
			return ret;
	}
	ret = sd_device_monitor_attach_event(d->monitor, d->ev);
	if (ret < 0)
		return ret;
	return sd_device_monitor_start(d->monitor, on_uevent, d);
}

/* ---- the control socket ------------------------------------------------ */

struct ip_client {
	struct ip_daemon *d;
	int fd;
	sd_event_source *io, *timeout;
	struct ip_peer peer; /* who connected, taken at accept() */
	uint64_t last_usec;  /* accepted or last answered, CLOCK_MONOTONIC */
	struct ip_client *next;
};

static uint64_t now_usec(struct ip_daemon *d)
{
	uint64_t now = 0;

	(void)sd_event_now(d->ev, CLOCK_MONOTONIC, &now);
	return now;
}

static void client_unlink(struct ip_client *c)
{
	for (struct ip_client **p = &c->d->clients; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			return;
		}
}

static void client_free(struct ip_client *c)
{
	client_unlink(c);
	sd_event_source_disable_unref(c->io);
	sd_event_source_disable_unref(c->timeout);
	close(c->fd);
	c->d->nr_clients--;
	free(c);
}

static bool table_full(const struct ip_daemon *d)
{
	return d->nr_clients >= IP_MAX_CLIENTS;
}

/* Root's connections wait the whole timeout; anyone else's is cut sooner
 * once the table is full, so a reader holding slots gives them back. */
static uint64_t idle_timeout_usec(const struct ip_client *c)
{
	if (table_full(c->d) && !ip_proto_peer_is_root(&c->peer))
		return IP_CLIENT_TIMEOUT_FULL_S * USEC_PER_SEC;
	return IP_CLIENT_TIMEOUT_S * USEC_PER_SEC;
}

static void client_touch(struct ip_client *c)
{
	c->last_usec = now_usec(c->d);
	sd_event_source_set_time(c->timeout, c->last_usec + idle_timeout_usec(c));
}

/* The table just filled: every reader's deadline moves up to the short one. */
static void shorten_idle_readers(struct ip_daemon *d)
{
	uint64_t now = now_usec(d);

	for (struct ip_client *c = d->clients; c; c = c->next) {
		uint64_t due = 0, soon = now + idle_timeout_usec(c);

		if (sd_event_source_get_time(c->timeout, &due) >= 0 && due > soon)
			sd_event_source_set_time(c->timeout, soon);
	}
}

static int clients_of_uid(const struct ip_daemon *d, uid_t uid)
{
	int n = 0;

	for (const struct ip_client *c = d->clients; c; c = c->next)
		n += c->peer.uid == uid;
	return n;
}

/* Requests are answered as they arrive, so every client in the table is
 * idle: the one that has waited longest without being root goes. */
static struct ip_client *oldest_idle_reader(struct ip_daemon *d)
{
	struct ip_client *best = NULL;

	for (struct ip_client *c = d->clients; c; c = c->next)
		if (!ip_proto_peer_is_root(&c->peer) && (!best || c->last_usec < best->last_usec))
			best = c;
	return best;
}

static void reply(struct ip_client *c, const char *buf, size_t len)
{
	struct ip_diag diag = { "" };

	if (ip_proto_send_reply(c->fd, buf, len, &diag) < 0)
		ip_log(&c->d->log, LOG_DEBUG, "control: reply not sent: %s", diag.msg);
}

/* The connections open across a reload that names another admin group:
 * each was judged by the old one, and one that keeps asking stays for
 * good, so a member the reload meant to shut out could go on writing. */
static void regroup_clients(struct ip_daemon *d)
{
	for (struct ip_client *c = d->clients; c; c = c->next) {
		struct ip_diag diag = { "" };

		if (ip_proto_peer_regroup(c->fd, d->admin_gid, &c->peer, &diag) < 0)
			ip_log(&d->log, LOG_WARNING, "control: pid %d uid %u is no longer taken for the admin group: %s",
			       (int)c->peer.pid, (unsigned)c->peer.uid, diag.msg);
	}
}

/* Decoded, from whom: the answer, or why not. */
static void answer(struct ip_client *c, const struct ip_request *req, FILE *f)
{
	struct ip_daemon *d = c->d;
	struct ip_diag diag = { "" };

	if (ip_proto_check_access(req, &c->peer, d->cfg.control.admin_group, &diag) < 0) {
		if (ip_proto_is_mutating(req))
			ip_log(&d->log, LOG_NOTICE, "control: refused pid %d uid %u: %s", (int)c->peer.pid,
			       (unsigned)c->peer.uid, diag.msg);
		ip_proto_reply_error(f, EPERM, "%s", diag.msg);
		return;
	}
	ip_control_handle(d, req, f);
}

static int on_client(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct ip_client *c = userdata;
	char buf[IP_PROTO_REQ_MAX];
	struct ip_diag diag = { "" };
	struct ip_request req;
	char *out = NULL;
	size_t outlen = 0;
	FILE *f;
	ssize_t n;

	n = ip_proto_recv_request(fd, buf, &diag);
	/* recv() says 0 for the end and for an empty SEQPACKET message
	 * alike: only a peer that hung up has ended; from one still there it
	 * was a request, refused below as empty like any other bad one */
	if (n == -EAGAIN || n == -EINTR || (n == 0 && (revents & (EPOLLHUP | EPOLLRDHUP)))) {
		if (n == 0)
			client_free(c);
		return 0;
	}
	f = open_memstream(&out, &outlen);
	if (!f) {
		client_free(c);
		return 0;
	}
	if (n < 0) {
		/* oversized or broken: say so, then cut the client off */
		ip_proto_reply_error(f, (int)-n, "%s", diag.msg[0] ? diag.msg : strerror((int)-n));
		fclose(f);
		reply(c, out, outlen);
		free(out);
		client_free(c);
		return 0;
	}
	if (ip_proto_decode(buf, (size_t)n, &req, &diag) < 0) {
		ip_proto_reply_error(f, EINVAL, "%s", diag.msg);
		fclose(f);
		reply(c, out, outlen);
		free(out);
		client_free(c);
		return 0;
	}
	answer(c, &req, f);
	fclose(f);
	reply(c, out, outlen);
	free(out);
	/* a client that keeps asking stays; an idle one is cut off later */
	client_touch(c);
	return 0;
}

static int on_client_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	client_free(userdata);
	return 0;
}

/* An error reply to a connection not taken into the table, then closed. */
static void refuse_connection(int cfd, int err, const char *msg)
{
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	char c;

	if (f) {
		ip_proto_reply_error(f, err, "%s", msg);
		if (fclose(f) == 0)
			(void)ip_proto_send_reply(cfd, out, len, NULL);
	}
	/* a request left unread makes the close a reset, which the client
	 * is told ahead of the reply (an older irqctl took it for no answer);
	 * one sent after this read still does */
	(void)recv(cfd, &c, 1, MSG_DONTWAIT);
	close(cfd);
}

/* Logged once a minute; the client is told each time, and @cfd closed. */
static void refuse_client(struct ip_daemon *d, int cfd, const char *key, const char *why, int limit,
			  const struct ip_peer *p)
{
	char msg[160];
	unsigned suppressed;

	if (ip_log_ratelimit(&d->log, key, mono_ns(), 1, &suppressed))
		ip_log(&d->log, LOG_WARNING, "control: refusing a connection from uid %u (pid %d): %s %d",
		       (unsigned)p->uid, (int)p->pid, why, limit);
	snprintf(msg, sizeof(msg), "irqpilotd refused the connection: %s %d; try again later", why, limit);
	refuse_connection(cfd, EUSERS, msg);
}

/* Whether @p may take a slot, making one for root when the table is full;
 * if not, its connection @cfd is refused. */
static bool admit(struct ip_daemon *d, const struct ip_peer *p, int cfd)
{
	struct ip_client *victim;

	if (!ip_proto_peer_is_root(p) && clients_of_uid(d, p->uid) >= IP_MAX_CLIENTS_PER_UID) {
		refuse_client(d, cfd, "clients-uid", "connections per uid are limited to", IP_MAX_CLIENTS_PER_UID,
			      p);
		return false;
	}
	if (!table_full(d))
		return true;
	victim = ip_proto_peer_is_root(p) ? oldest_idle_reader(d) : NULL;
	if (!victim) {
		refuse_client(d, cfd, "clients", "the connection table is full:", IP_MAX_CLIENTS, p);
		return false;
	}
	ip_log(&d->log, LOG_INFO, "control: %d clients connected: closed the oldest idle one (uid %u) for root",
	       d->nr_clients, (unsigned)victim->peer.uid);
	client_free(victim);
	return true;
}

static void client_append(struct ip_daemon *d, struct ip_client *c)
{
	struct ip_client **p = &d->clients;

	while (*p)
		p = &(*p)->next;
	*p = c;
	d->nr_clients++;
}

static int on_accept_resume(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct ip_daemon *d = userdata;

	d->accept_pause = sd_event_source_disable_unref(d->accept_pause);
	(void)sd_event_source_set_enabled(d->listen_src, SD_EVENT_ON);
	return 0;
}

/*
 * accept4() failed for want of an fd (or memory): the connection stays
 * queued and the socket readable, and the loop called on_accept() again at
 * once, a whole CPU for as long as one was queued, each client waiting out
 * its timeout unanswered. The spare fd makes room to take it and say why;
 * without one the socket is left unwatched for a second.
 */
static void accept_failed(struct ip_daemon *d, int lfd, int err)
{
	unsigned suppressed;
	int cfd = -1;

	if (ip_log_ratelimit(&d->log, "accept", mono_ns(), 1, &suppressed))
		ip_log(&d->log, LOG_ERR, "control: cannot take a connection: %s; refusing clients until one is free",
		       strerror(err));
	if (d->spare_fd >= 0 && (err == EMFILE || err == ENFILE)) {
		close(d->spare_fd);
		cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd >= 0)
			refuse_connection(cfd, err, "irqpilotd has no file descriptor left for a connection; try again later");
		d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	if (cfd >= 0 || d->accept_pause)
		return;
	if (sd_event_add_time_relative(d->ev, &d->accept_pause, CLOCK_MONOTONIC, USEC_PER_SEC, 0,
				       on_accept_resume, d) >= 0)
		(void)sd_event_source_set_enabled(d->listen_src, SD_EVENT_OFF);
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct ip_daemon *d = userdata;
	struct ip_diag diag = { "" };
	struct ip_client *c;
	struct ip_peer peer;
	unsigned suppressed;
	int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (cfd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			accept_failed(d, fd, errno);
		return 0;
	}
	if (ip_proto_peer_identify(d->sysroot, cfd, d->admin_gid, &peer, &diag) < 0) {
		/* a pidfd it could not have (EMFILE) is said each time */
		if (ip_log_ratelimit(&d->log, "identify", mono_ns(), 1, &suppressed))
			ip_log(&d->log, LOG_WARNING, "control: cannot tell who connected: %s", diag.msg);
		refuse_connection(cfd, EIO, "irqpilotd cannot tell who connected; try again later");
		return 0;
	}
	if (!admit(d, &peer, cfd))
		return 0;
	if (!(c = calloc(1, sizeof(*c)))) {
		close(cfd);
		return 0;
	}
	c->d = d;
	c->fd = cfd;
	c->peer = peer;
	client_append(d, c);
	/* EPOLLRDHUP: a peer's shutdown(SHUT_WR) is the end, not an empty request */
	if (sd_event_add_io(d->ev, &c->io, cfd, EPOLLIN | EPOLLRDHUP, on_client, c) < 0 ||
	    sd_event_add_time_relative(d->ev, &c->timeout, CLOCK_MONOTONIC, IP_CLIENT_TIMEOUT_S * USEC_PER_SEC,
				       0, on_client_timeout, c) < 0) {
		client_free(c);
		return 0;
	}
	client_touch(c);
	if (table_full(d))
		shorten_idle_readers(d);
	return 0;
}

static int open_control(struct ip_daemon *d, struct ip_diag *diag)
{
	int n = sd_listen_fds(true);

	if (n > 1)
		return ip_diag_set(diag, -EINVAL, "socket activation passed %d sockets; expected one", n);
	if (n == 1) {
		d->listen_fd = SD_LISTEN_FDS_START;
		d->socket_activated = true;
		if (fcntl(d->listen_fd, F_SETFL, O_NONBLOCK) < 0)
			return ip_diag_set(diag, -errno, "socket activation: %s", strerror(errno));
	} else {
		int ret = ip_proto_listen(ip_state_dirfd(d->state), d->socket_path, 0660, &d->listen_fd, diag);

		if (ret < 0)
			return ret;
	}
	d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return sd_event_add_io(d->ev, &d->listen_src, d->listen_fd, EPOLLIN, on_accept, d);
}

/* ---- refusing to start ------------------------------------------------- */

static int mkdir_p(const char *dir, mode_t mode)
{
	_cleanup_free_ char *p = strdup(dir);

	if (!p)
		return -ENOMEM;
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Who holds the lock open at @fd, for a refusal to name: the pid its
 * holder wrote there, up to the newline, in @buf; "?" when there is none
 * yet (a holder between its flock() and its write). */
static const char *lock_holder(int fd, char *buf, size_t size)
{
	ssize_t k = pread(fd, buf, size - 1, 0);

	buf[k > 0 ? k : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf[0] ? buf : "?";
}

/* @dir made and checked into *@st, its lock taken (our pid in it) in
 * *@lock_fd and, unless @r's IRQs are never written (a --dry-run daemon),
 * their lock in *@irqs_fd: what the daemon, and --oneshot while it runs,
 * own. */
static int own_dir(const char *dir, struct ip_root *r, struct ip_log *log, struct ip_state **st, int *lock_fd,
		   int *irqs_fd, struct ip_diag *diag)
{
	char pid[32];
	int ret = mkdir_p(dir, 0755);

	if (ret < 0)
		return ip_diag_set(diag, ret, "%s: %s", dir, strerror(-ret));
	/* The lock is truncated and written, so the directory's owner and
	 * mode are checked first, and the lock is opened in the directory
	 * checked, O_NOFOLLOW: else whoever may write there has a link
	 * planted under its name truncate any file, before the refusal. */
	ret = ip_state_open(dir, st, diag);
	if (ret < 0)
		return ret;
	*lock_fd = openat(ip_state_dirfd(*st), "irqpilotd.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (*lock_fd < 0)
		return ip_diag_set(diag, -errno, "%s/irqpilotd.lock: %s", dir, strerror(errno));
	/* Readable by others (made 0644 before, or by hand with umask 022),
	 * any user could open and flock it: the service then refused to
	 * start and its --restore to run. Only root needs to open it. */
	(void)fchmod(*lock_fd, 0600);
	if (flock(*lock_fd, LOCK_EX | LOCK_NB) < 0) {
		char other[32];

		return ip_diag_set(diag, -EBUSY, "another irqpilotd is running (pid %s holds %s/irqpilotd.lock)",
				   lock_holder(*lock_fd, other, sizeof(other)), dir);
	}
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(*lock_fd, 0) < 0 || pwrite(*lock_fd, pid, strlen(pid), 0) < 0)
		return ip_diag_set(diag, -errno, "%s/irqpilotd.lock: %s", dir, strerror(errno));
	return irqs_fd ? ip_daemon_lock_irqs(r, dir, log, irqs_fd, diag) : 0;
}

/* A daemon of --dry-run writes nothing, whatever a reload says: it leaves
 * the IRQs' lock to one that does (a config's dry_run may be turned off). */
static int take_lock(struct ip_daemon *d, struct ip_diag *diag)
{
	return own_dir(d->o.runtime_dir, d->root, &d->log, &d->state, &d->lock_fd,
		       d->o.dry_run ? NULL : &d->irqs_lock_fd, diag);
}

/*
 * The runtime directory's lock keeps out a second daemon of that
 * directory only. One given another --runtime-dir (tried by hand beside
 * the service) moved the same IRQs, each recorded the other's moves as
 * its originals, and whichever stopped last wrote the other's placement
 * back, for good.
 */
int ip_daemon_lock_irqs(struct ip_root *r, const char *runtime_dir, struct ip_log *log, int *fd,
			struct ip_diag *diag)
{
	int ret = ip_root_lock_irqs(r, fd);

	if (ret == -EWOULDBLOCK)
		return ip_diag_set(diag, -EBUSY,
				   "another irqpilotd changes the IRQs under %s (a daemon whose runtime "
				   "directory is not %s, or an irqpilotd --oneshot or --restore): each would "
				   "take the other's moves for originals",
				   ip_root_dir(r), runtime_dir);
	if (ret < 0)
		return ip_diag_set(diag, ret, "%s/proc/irq: cannot lock: %s", ip_root_dir(r), strerror(-ret));
	if (ret > 0 && log)
		ip_log(log, LOG_WARNING, "%s/proc/irq is locked by another user's process, not an irqpilotd "
					 "that changes these IRQs: going on without the lock", ip_root_dir(r));
	else if (ret > 0)
		fprintf(stderr,
			"irqpilotd: warning: %s/proc/irq is locked by another user's process, not an "
			"irqpilotd that changes these IRQs: going on without the lock\n",
			ip_root_dir(r));
	return 0;
}

static bool have_cap(int cap)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long eff;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			return (eff >> cap) & 1;
	return false;
}

/* Only what writing needs: a dry run needs nothing, a tree needs nothing. */
static int check_privileges(struct ip_daemon *d, struct ip_diag *diag)
{
	if (ip_engine_dry_run(d->engine) || !ip_root_is_live(d->root))
		return 0;
	if (!have_cap(CAP_SYS_NICE))
		return ip_diag_set(diag, -EPERM,
				   "missing CAP_SYS_NICE, needed to set IRQ thread affinity and priority "
				   "(or run with --dry-run)");
	if (access("/proc/irq/default_smp_affinity", W_OK) < 0 && !have_cap(CAP_DAC_OVERRIDE))
		return ip_diag_set(diag, -EPERM,
				   "cannot write /proc/irq: run as root or with CAP_DAC_OVERRIDE "
				   "(or run with --dry-run)");
	return 0;
}

/* irqbalance moves every IRQ by load; left alone it moves our vectors back. */
static int check_irqbalance(struct ip_daemon *d, struct ip_diag *diag)
{
	char **names = NULL;
	size_t n = 0;
	long found = 0;

	if (ip_root_listdir(d->root, "proc", &names, &n) < 0)
		return 0;
	for (size_t i = 0; i < n && !found; i++) {
		_cleanup_free_ char *path = NULL, *comm = NULL;
		char *end;
		long pid = strtol(names[i], &end, 10);

		if (*end || pid <= 0)
			continue;
		path = ip_asprintf("proc/%ld/comm", pid);
		if (path && ip_root_read_line(d->root, path, &comm) == 0 && strcmp(comm, "irqbalance") == 0)
			found = pid;
	}
	ip_strv_free(names, n);
	if (!found)
		return 0;
	if (d->cfg.daemon.coexist) {
		ip_log(&d->log, LOG_NOTICE,
		       "irqbalance (pid %ld) is running; coexist = yes, so starting anyway: give it "
		       "--policyscript=" PKGLIBEXECDIR "/irqbalance-ban-storage to keep it off storage vectors",
		       found);
		return 0;
	}
	return ip_diag_set(diag, -EBUSY,
			   "irqbalance (pid %ld) is running and would move storage vectors back: stop it, "
			   "or set [daemon] coexist = yes and run it with --policyscript=" PKGLIBEXECDIR
			   "/irqbalance-ban-storage",
			   found);
}

/* ---- setup and teardown ------------------------------------------------ */

/* The socket goes by the runtime directory checked at start, not by its
 * path: whoever may write the path's parent can have swapped the directory
 * for a link by now, and RUNTIME_DIR/control name another file. Only a
 * socket is removed. */
static void unlink_socket(struct ip_daemon *d)
{
	struct stat st;
	int dirfd = d->state ? ip_state_dirfd(d->state) : -1;

	if (dirfd >= 0 && fstatat(dirfd, "control", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode))
		unlinkat(dirfd, "control", 0);
}

static void daemon_free(struct ip_daemon *d)
{
	sd_event_source_disable_unref(d->timer);
	sd_event_source_disable_unref(d->listen_src);
	sd_event_source_disable_unref(d->accept_pause);
	if (d->spare_fd >= 0)
		close(d->spare_fd);
	wake_sources_free(d);
	watch_close(d);
	cq_disconnect(d);
	sd_device_monitor_unref(d->monitor);
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		if (!d->socket_activated)
			unlink_socket(d);
	}
	ip_engine_free(d->engine);
	ip_sampler_free(d->cap_sampler);
	free(d->cap_dir);
	if (d->cap_fd >= 0)
		close(d->cap_fd);
	while (d->clients)
		client_free(d->clients);
	ip_config_free(&d->cfg);
	ip_root_free(d->root);
	ip_root_free(d->sysroot);
	sd_event_unref(d->ev);
	if (d->lock_fd >= 0)
		close(d->lock_fd);
	if (d->irqs_lock_fd >= 0)
		close(d->irqs_lock_fd);
	for (size_t i = 0; i < d->nr_said; i++)
		said_free(&d->said[i]);
	free(d->said);
	ip_metrics_free(&d->metrics);
	free(d->socket_path);
	free(d->lock_path);
	free(d->state_path);
	ip_state_close(d->state);
}

/*
 * A --dry-run daemon holds no lock on the IRQs, yet restores at stop the
 * originals it found in the state file: beside a daemon of another
 * runtime directory it wrote them under that one, which took them for its
 * moves' originals. It takes the lock now, or leaves them in the file.
 */
static bool restore_may_write(struct ip_daemon *d)
{
	struct ip_diag diag = { "" };

	if (d->irqs_lock_fd >= 0 || ip_originals_empty(ip_engine_originals(d->engine)) ||
	    ip_daemon_lock_irqs(d->root, d->o.runtime_dir, &d->log, &d->irqs_lock_fd, &diag) >= 0)
		return true;
	ip_log_id(&d->log, LOG_ERR, IP_MESSAGE_RESTORE, NULL,
		  "not restoring: %s; the originals stay in %s for irqpilotd --restore", diag.msg,
		  d->state_path);
	return false;
}

/* Whatever was changed is put back, whatever the dry-run setting is now;
 * what could not be restored stays in the state file for --restore. */
static void restore_on_exit(struct ip_daemon *d)
{
	struct ip_apply_results res;
	char line[IP_REASON_MAX];
	struct ip_journal *jf;
	int failed = 0;

	if (!d->cfg.daemon.restore_on_exit) {
		const struct ip_originals *o = ip_engine_originals(d->engine);
		size_t n = o ? ip_originals_count(o) : 0;

		/* asked for, but the admin who reads the log at stop is told
		 * where the settings went and how to get them back */
		if (n)
			ip_log_id(&d->log, LOG_NOTICE, IP_MESSAGE_RESTORE, NULL,
				  "restore_on_exit = no: the original of %zu setting(s) this run changed "
				  "stays in %s; irqpilotd --restore puts them back",
				  n, d->state_path);
		return;
	}
	if (!restore_may_write(d))
		return;
	if (ip_engine_restore(d->engine, &res) < 0) {
		ip_log(&d->log, LOG_ERR, "restore failed: out of memory; the originals stay in %s",
		       d->state_path);
		return;
	}
	/* large (two CPU lists), so not on the stack; without it, the text alone */
	jf = malloc(sizeof(*jf));
	for (int i = 0; i < res.n; i++) {
		bool bad = res.r[i].err && res.r[i].outcome != IP_APPLY_VANISHED;
		/* a freed vector is the kernel's doing, as in a cycle */
		int prio = bad ? LOG_ERR
			   : res.r[i].detail == IP_APPLY_D_FREED ? LOG_NOTICE
			   : res.r[i].err ? LOG_WARNING : LOG_INFO;

		failed += bad;
		if (jf) {
			ip_report_apply_journal(jf, &res.r[i]);
			ip_log_id(&d->log, prio, jf->message_id, jf->fields, "%s", jf->message);
		} else {
			ip_log_id(&d->log, prio, IP_MESSAGE_RESTORE, NULL, "%s",
				  ip_report_apply_line(line, sizeof(line), &res.r[i]));
		}
	}
	free(jf);
	ip_apply_results_free(&res);
	save_state(d);
	if (failed)
		ip_log_id(&d->log, LOG_ERR, IP_MESSAGE_RESTORE, NULL,
			  "%d setting(s) not restored; they stay in %s for irqpilotd --restore",
		       failed, d->state_path);
}

/*
 * A state file of another boot (ip_state_load() -ESTALE): its settings went
 * with that boot, and its records are not this one's originals. It is
 * kept aside, never deleted, and the state file goes: 0 with *@aside set,
 * or an error in @d.
 */
static int set_aside_other_boot(struct ip_state *st, char **aside, struct ip_diag *d)
{
	struct ip_originals none;
	int ret = ip_state_set_aside(st, aside, d);

	ip_originals_init(&none);
	if (ret >= 0)
		ret = ip_state_save(st, &none, d);
	return ret < 0 ? ret : 0;
}

/* ip_state_load() of the originals of @r's boot and root. */
static int load_of(struct ip_state *st, struct ip_root *r, struct ip_originals *o, struct ip_state_bads *bad,
		   struct ip_diag *diag)
{
	ip_state_boot_of(st, r);
	if (ip_state_set_root(st, ip_root_dir(r)) < 0)
		return ip_diag_set(diag, -ENOMEM, "out of memory");
	return ip_state_load(st, ip_state_pid_max(r), o, bad, diag);
}

/*
 * The originals an earlier run left in @st into @o, for the daemon and
 * --oneshot alike (@log: the daemon's, or one on stderr). A file of another
 * boot is set aside and said (its settings went with that boot); one of
 * another root is refused (-EXDEV: its records are that tree's); a record
 * that does not parse refuses (-EBUSY), each said, and the file is left as
 * it is for --restore: its originals would be lost.
 */
static int load_originals(struct ip_state *st, struct ip_root *r, struct ip_originals *o, struct ip_log *log,
			  struct ip_diag *diag)
{
	_cleanup_free_ char *aside = NULL;
	struct ip_state_bads bad = { 0 };
	const char *path = ip_state_path(st);
	int ret = load_of(st, r, o, &bad, diag);

	if (ret == -ESTALE) {
		ip_log(log, LOG_NOTICE, "%s", diag->msg);
		ret = set_aside_other_boot(st, &aside, diag);
		if (ret == 0) {
			ip_log(log, LOG_NOTICE, "kept it aside as %s; nothing of it is restored", aside);
			ret = -ENOENT;
		}
	}
	if (ret == -ENOENT) {
		diag->msg[0] = '\0';
		ret = 0;
	} else if (ret == 0 && bad.n) {
		for (size_t i = 0; i < bad.kept; i++)
			ip_log(log, LOG_ERR, "%s:%d: %s: %s", path, bad.v[i].lineno, bad.v[i].why, bad.v[i].text);
		if (bad.n > bad.kept)
			ip_log(log, LOG_ERR, "%s: %zu more invalid lines not listed", path, bad.n - bad.kept);
		ret = ip_diag_set(diag, -EBUSY, "%s:%d: %s%s: the originals it records would be lost; run "
					       "irqpilotd --restore first", path, bad.v[0].lineno, bad.v[0].why,
				  bad.n > 1 ? " (and more)" : "");
	}
	ip_state_bads_free(&bad);
	return ret;
}

/* Originals left by an earlier run become this run's, restored at stop. */
static int load_state(struct ip_daemon *d, struct ip_diag *diag)
{
	/* the directory, checked, is open since take_lock() */
	int ret = load_originals(d->state, d->root, ip_engine_originals(d->engine), &d->log, diag);

	if (ret < 0)
		return ret;
	/* an empty file (or one of comments) records nothing to restore */
	if (!ip_originals_empty(ip_engine_originals(d->engine)))
		ip_log(&d->log, LOG_NOTICE, "found originals from an earlier run in %s; they will be restored",
		       d->state_path);
	ip_engine_set_record(d->engine, ip_state_record, d->state);
	return 0;
}

void ip_daemon_owned_free(struct ip_owned *o)
{
	ip_state_close(o->state);
	if (o->irqs_fd >= 0)
		close(o->irqs_fd);
	if (o->lock_fd >= 0)
		close(o->lock_fd);
	*o = (struct ip_owned){ .lock_fd = -1, .irqs_fd = -1 };
}

int ip_daemon_own(const char *runtime_dir, struct ip_root *r, struct ip_engine *e, struct ip_owned *o,
		  struct ip_diag *diag)
{
	struct ip_log log;
	int ret;

	/* a command's words, on stderr only */
	ip_log_init(&log, true, LOG_INFO);
	log.to_journal = false;
	*o = (struct ip_owned){ .lock_fd = -1, .irqs_fd = -1 };
	ret = own_dir(runtime_dir, r, NULL, &o->state, &o->lock_fd, &o->irqs_fd, diag);
	if (ret >= 0)
		ret = load_originals(o->state, r, ip_engine_originals(e), &log, diag);
	if (ret < 0) {
		ip_daemon_owned_free(o);
		return ret;
	}
	ip_engine_set_record(e, ip_state_record, o->state);
	return 0;
}

/* A config the daemon cannot use is a usage error: nothing is set up yet. */
static int load_config(struct ip_daemon *d, struct ip_diag *diag)
{
	int ret = ip_config_load_file(d->o.config_path, d->o.config_explicit, &d->cfg, diag);

	if (ret < 0) {
		fprintf(stderr, "irqpilotd: %s\n", diag->msg);
		return ret;
	}
	d->config_from_file = ret != IP_CONFIG_ABSENT;
	d->log.level = d->cfg.daemon.log_level;
	ret = ip_daemon_admin_group(&d->cfg, d->o.config_path, &d->admin_gid, diag);
	if (ret < 0)
		fprintf(stderr, "irqpilotd: %s\n", diag->msg);
	return ret;
}

/* The sampler keeps up to a quarter of RLIMIT_NOFILE's soft limit in fds
 * (sample.c), read when it is made. systemd's soft 1,024 is for programs
 * that use select(); irqpilotd does not (sd-event is epoll), so it takes the
 * hard limit, as systemd.exec(5) LimitNOFILE= advises. */
static void raise_nofile(struct ip_daemon *d)
{
	struct rlimit rl;
	rlim_t soft;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	soft = rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max;
	if (soft < rl.rlim_max && setrlimit(RLIMIT_NOFILE, &rl) < 0)
		rl.rlim_cur = soft;
	ip_log(&d->log, LOG_DEBUG, "RLIMIT_NOFILE: soft %llu (was %llu), hard %llu",
	       (unsigned long long)rl.rlim_cur, (unsigned long long)soft, (unsigned long long)rl.rlim_max);
}

/* The runtime paths, both roots and the engine over the config just loaded. */
static int open_engine(struct ip_daemon *d)
{
	struct ip_engine_opts eo = { 0 };
	int ret;

	d->socket_path = ip_asprintf("%s/control", d->o.runtime_dir);
	d->lock_path = ip_asprintf("%s/irqpilotd.lock", d->o.runtime_dir);
	d->state_path = ip_asprintf("%s/state", d->o.runtime_dir);
	if (!d->socket_path || !d->lock_path || !d->state_path)
		return -ENOMEM;
	ret = ip_root_open(d->o.root, &d->root);
	if (ret >= 0)
		ret = ip_root_open("/", &d->sysroot);
	if (ret < 0) {
		fprintf(stderr, "irqpilotd: --root %s: %s\n", d->o.root, strerror(-ret));
		return ret;
	}
	eo.dry_run = d->o.dry_run || d->cfg.daemon.dry_run;
	eo.live_counters = ip_root_is_live(d->root);
	eo.overrides = d->cfg.overrides;
	d->cfg.policy.interval_s = ip_daemon_interval_s(d);
	d->conf_banned = d->cfg.policy.banned;
	raise_nofile(d);
	ret = ip_engine_new(d->root, &d->cfg.policy, &eo, &d->engine);
	if (ret < 0)
		return ret;
	/* attaches go out on the connection cq_connect() keeps, owned */
	ip_engine_set_live(d->engine, &d->live);
	return 0;
}

/* Signals arrive as events, not handlers; the first cycle runs at once. */
static int start_event_loop(struct ip_daemon *d)
{
	sigset_t ss;
	int ret;

	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGHUP);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	signal(SIGPIPE, SIG_IGN);
	ret = sd_event_default(&d->ev);
	if (ret >= 0)
		ret = sd_event_add_signal(d->ev, NULL, SIGTERM, on_sigterm, d);
	if (ret >= 0)
		ret = sd_event_add_signal(d->ev, NULL, SIGINT, on_sigterm, d);
	if (ret >= 0)
		ret = sd_event_add_signal(d->ev, NULL, SIGHUP, on_sighup, d);
	if (ret >= 0)
		ret = sd_event_set_watchdog(d->ev, true);
	if (ret >= 0)
		ret = sd_event_add_time_relative(d->ev, &d->timer, CLOCK_MONOTONIC, 0, 0, on_timer, d);
	if (ret < 0) {
		fprintf(stderr, "irqpilotd: event loop: %s\n", strerror(-ret));
		return ret;
	}
	watch_open(d);
	return 0;
}

int ip_daemon_run(const struct ip_daemon_opts *o)
{
	struct ip_daemon d = { .lock_fd = -1, .irqs_lock_fd = -1, .listen_fd = -1, .spare_fd = -1, .cap_fd = -1, .admin_gid = IP_PROTO_NO_GROUP };
	struct ip_diag diag = { "" };
	int ret, code = IP_EXIT_FAILURE;

	d.o = *o;
	ip_config_init(&d.cfg);
	ip_log_init(&d.log, o->foreground, LOG_INFO);
	if (load_config(&d, &diag) < 0) {
		ip_config_free(&d.cfg);
		return IP_EXIT_USAGE;
	}
	if (open_engine(&d) < 0)
		goto out;

	/* refusals: each one line, exit 3 */
	if (take_lock(&d, &diag) < 0 || load_state(&d, &diag) < 0 || check_privileges(&d, &diag) < 0 ||
	    check_irqbalance(&d, &diag) < 0) {
		ip_log_tell(&d.log, LOG_ERR, IP_MESSAGE_REFUSAL, "refusing to start: %s", diag.msg);
		code = IP_EXIT_REFUSED;
		goto out;
	}

	if (start_event_loop(&d) < 0)
		goto out;
	ret = open_control(&d, &diag);
	if (ret < 0) {
		fprintf(stderr, "irqpilotd: refusing to start: control socket: %s\n",
			diag.msg[0] ? diag.msg : strerror(-ret));
		code = ret == -EADDRINUSE ? IP_EXIT_REFUSED : IP_EXIT_FAILURE;
		goto out;
	}
	if (ip_root_is_live(d.root)) {
		ret = start_monitor(&d);
		if (ret < 0)
			ip_log(&d.log, LOG_WARNING, "no hot-plug events (%s): changes are seen at the next cycle",
			       strerror(-ret));
	}
	cq_connect(&d, NULL);
	ip_log(&d.log, LOG_INFO, "started on %s%s, every %.1f s; control socket %s", o->root,
	       ip_engine_dry_run(d.engine) ? " (dry run)" : "", ip_daemon_interval_s(&d), d.socket_path);
	ret = sd_event_loop(d.ev);
	restore_on_exit(&d);
	code = ret < 0 ? IP_EXIT_FAILURE : ret;
out:
	daemon_free(&d);
	return code;
}

/* --restore beside a running daemon: both would own the state file. The
 * restore deletes it, and the daemon, whose originals are in memory and
 * whose last write it thinks is on disk, moves the IRQs again without
 * writing it back: after a kill -9 the originals were gone. So --restore
 * takes the daemon's lock, held until it is done, or refuses. -1: refused
 * (said); *fd -1 when there is no lock to take (a read-only directory,
 * where no daemon can run either). */
static int restore_lock(const char *dir, int *fd)
{
	_cleanup_free_ char *path = ip_asprintf("%s/irqpilotd.lock", dir);
	char other[32];

	*fd = path ? open(path, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
	if (*fd < 0 && path)
		*fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0 || flock(*fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK)
		return 0;
	/* --oneshot holds it too, and restores nothing when it stops: told
	 * to stop it with SIGTERM, "and it restores by itself", the operator
	 * killed it mid-run and waited for a restore that never came */
	fprintf(stderr,
		"irqpilotd: --restore: irqpilotd is running (pid %s holds %s); a daemon stopped with "
		"SIGTERM restores by itself, after an irqpilotd --oneshot run --restore again\n",
		lock_holder(*fd, other, sizeof(other)), path);
	close(*fd);
	*fd = -1;
	return -1;
}

/* The runtime directory's lock, the root and its IRQs' lock, for
 * --restore: IP_EXIT_OK with all three, else the exit status (said), with
 * none. No state file, nothing to write: the IRQs' lock is not asked for,
 * so that the ExecStopPost --restore of a service refused beside another
 * irqpilotd does not fail too, for nothing. */
static int restore_locks(const struct ip_daemon_opts *o, struct ip_state *st, int *lock_fd, int *irqs_fd,
			 struct ip_root **r)
{
	struct ip_diag diag = { "" };
	int ret;

	if (restore_lock(o->runtime_dir, lock_fd) < 0)
		return IP_EXIT_REFUSED;
	ret = ip_root_open(o->root, r);
	if (ret < 0)
		ip_diag_set(&diag, ret, "--root %s: cannot open", o->root);
	else if (faccessat(ip_state_dirfd(st), IP_STATE_NAME, F_OK, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
		ret = ip_daemon_lock_irqs(*r, o->runtime_dir, NULL, irqs_fd, &diag);
	if (ret == 0)
		return IP_EXIT_OK;
	fprintf(stderr, "irqpilotd: --restore: %s\n", diag.msg);
	ip_root_free(*r);
	*r = NULL;
	if (*lock_fd >= 0)
		close(*lock_fd);
	*lock_fd = -1;
	return ret == -EBUSY ? IP_EXIT_REFUSED : IP_EXIT_FAILURE;
}

/* Each invalid record, and the file that holds them set aside. 0, or -1
 * when it could not be (the file stays as it is: nothing is restored). */
static int set_aside_bads(struct ip_state *st, const struct ip_state_bads *bad)
{
	_cleanup_free_ char *aside = NULL;
	struct ip_diag diag = { "" };

	for (size_t i = 0; i < bad->kept; i++)
		fprintf(stderr, "irqpilotd: %s:%d: %s, not restored: %s\n", ip_state_path(st),
			bad->v[i].lineno, bad->v[i].why, bad->v[i].text);
	if (bad->n > bad->kept)
		fprintf(stderr, "irqpilotd: %s: %zu more invalid lines not listed\n", ip_state_path(st),
			bad->n - bad->kept);
	if (!bad->n)
		return 0;
	if (ip_state_set_aside(st, &aside, &diag) < 0) {
		fprintf(stderr, "irqpilotd: --restore: %s\n", diag.msg);
		return -1;
	}
	fprintf(stderr, "irqpilotd: copied %s to %s; its invalid records are kept there\n",
		ip_state_path(st), aside);
	return 0;
}

/* --restore of a state file of another boot (@d says which): nothing. */
static int restore_other_boot(struct ip_state *st, struct ip_diag *d)
{
	_cleanup_free_ char *aside = NULL;
	int ret;

	printf("irqpilotd: nothing to restore: %s\n", d->msg);
	ret = set_aside_other_boot(st, &aside, d);
	if (ret < 0)
		fprintf(stderr, "irqpilotd: --restore: %s\n", d->msg);
	else
		printf("irqpilotd: kept it aside as %s\n", aside);
	return ret;
}

/*
 * --restore: every valid record is restored; each invalid one is reported
 * with its line, and the file holding it is kept aside (never deleted)
 * while the state file is written again with the valid records.
 * What could not be restored stays in the state file. Exit 1 if anything
 * was invalid or failed.
 */
int ip_daemon_restore(const struct ip_daemon_opts *o)
{
	struct ip_apply_results res = { 0 };
	struct ip_state_bads bad = { 0 };
	struct ip_state *st = NULL;
	struct ip_apply_ops ops;
	struct ip_originals orig;
	struct ip_root *r = NULL;
	struct ip_diag diag = { "" };
	char line[IP_REASON_MAX];
	int ret, failed = 0, lock_fd = -1, irqs_fd = -1;

	ret = ip_state_open(o->runtime_dir, &st, &diag);
	if (ret == -ENOENT) {
		printf("irqpilotd: nothing to restore (no %s)\n", o->runtime_dir);
		return IP_EXIT_OK;
	}
	if (ret < 0) {
		fprintf(stderr, "irqpilotd: --restore: %s\n", diag.msg);
		return IP_EXIT_FAILURE;
	}
	ret = restore_locks(o, st, &lock_fd, &irqs_fd, &r);
	if (ret != IP_EXIT_OK) {
		ip_state_close(st);
		return ret;
	}
	ip_originals_init(&orig);
	ret = load_of(st, r, &orig, &bad, &diag);
	if (ret == -ESTALE) {
		ret = restore_other_boot(st, &diag);
		goto out;
	}
	if (ret == -ENOENT) {
		printf("irqpilotd: nothing to restore (no %s)\n", ip_state_path(st));
		ret = 0;
		goto out;
	}
	if (ret < 0) {
		fprintf(stderr, "irqpilotd: --restore: %s\n", diag.msg[0] ? diag.msg : strerror(-ret));
		failed++;
		goto out;
	}
	failed += (int)bad.n;
	if (set_aside_bads(st, &bad) < 0)
		goto out;
	/* The valid records replace the file before any is restored: the
	 * file is never without them. Failing, it stays as it was (a superset). */
	if (bad.n && ip_state_save(st, &orig, &diag) < 0)
		fprintf(stderr, "irqpilotd: --restore: %s\n", diag.msg);
	ip_engine_ops_for_root(r, &ops);
	ret = ip_apply_restore(r, &orig, &ops, &res);
	for (int i = 0; i < res.n; i++) {
		/* a vanished IRQ or thread has nothing left to restore */
		bool bad_one = res.r[i].err && res.r[i].outcome != IP_APPLY_VANISHED;

		failed += bad_one;
		fprintf(bad_one ? stderr : stdout, "%s\n",
			ip_report_apply_line(line, sizeof(line), &res.r[i]));
	}
	ip_apply_results_free(&res);
	/* what failed stays recorded */
	if (ip_state_save(st, &orig, &diag) < 0) {
		fprintf(stderr, "irqpilotd: --restore: %s\n", diag.msg);
		failed++;
	}
out:
	ip_state_bads_free(&bad);
	ip_originals_free(&orig);
	ip_root_free(r);
	ip_state_close(st);
	if (irqs_fd >= 0)
		close(irqs_fd);
	if (lock_fd >= 0)
		close(lock_fd); /* a daemon may start now */
	return ret < 0 || failed ? IP_EXIT_FAILURE : IP_EXIT_OK;
}
