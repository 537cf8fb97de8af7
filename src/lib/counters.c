// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "irqpilot/counters.h"
#include "irqpilot/macro.h"
#include "irqpilot/procfs.h"

/* One device's perf counters: one fd per CPU per event, -1 where none. */
struct perf_dev {
	char name[32];
	int *submit_fd, *complete_fd;
};

struct task_io {
	pid_t pid;
	uint64_t bytes;
};

struct ip_counters {
	bool live;
	enum ip_count_source submit_src;
	/* perf */
	bool perf_failed;
	int nr_cpus;
	int nr_perf;
	struct perf_dev *perf;
	/* task sampling */
	struct task_io *tasks;
	int nr_tasks;
	struct {
		char name[32];
		uint64_t last_ios;
		double *acc; /* nr_cpus apportioned cumulative submissions */
	} *tdev;
	int nr_tdev;
};

int ip_counters_new(bool live, struct ip_counters **out)
{
	struct ip_counters *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->live = live;
	*out = c;
	return 0;
}

static void perf_close(struct ip_counters *c)
{
	for (int i = 0; i < c->nr_perf; i++) {
		for (int k = 0; k < c->nr_cpus; k++) {
			if (c->perf[i].submit_fd[k] >= 0)
				close(c->perf[i].submit_fd[k]);
			if (c->perf[i].complete_fd[k] >= 0)
				close(c->perf[i].complete_fd[k]);
		}
		free(c->perf[i].submit_fd);
		free(c->perf[i].complete_fd);
	}
	free(c->perf);
	c->perf = NULL;
	c->nr_perf = 0;
}

static void tdev_free(struct ip_counters *c)
{
	for (int i = 0; i < c->nr_tdev; i++)
		free(c->tdev[i].acc);
	free(c->tdev);
	c->tdev = NULL;
	c->nr_tdev = 0;
}

void ip_counters_free(struct ip_counters *c)
{
	if (!c)
		return;
	perf_close(c);
	tdev_free(c);
	free(c->tasks);
	free(c);
}

const char *ip_counters_describe(const struct ip_counters *c)
{
	switch (c->submit_src) {
	case IP_SRC_REPLAY:
		return "recorded counts (irqpilot/submit)";
	case IP_SRC_PERF:
		return "perf tracepoint block:block_bio_queue per CPU";
	case IP_SRC_TASKS:
		return "/proc task sampling apportioned from /proc/diskstats";
	case IP_SRC_MODULE:
		return "irqpilot_cq per-CPU submission counts";
	default:
		return "none";
	}
}

/* ---- replay files ------------------------------------------------- */

struct counter_ctx {
	struct ip_snapshot *snap;
	bool submit;
};

static int counter_line(void *ctx, const char *device, int cpu, uint64_t count)
{
	struct counter_ctx *cc = ctx;
	struct ip_snapshot *snap = cc->snap;

	if (cpu >= snap->topo.nr_cpus)
		return 0;
	for (int i = 0; i < snap->storage.nr_devs; i++) {
		struct ip_devcount *dc = &snap->dc[i];
		uint64_t **arr = cc->submit ? &dc->submit : &dc->complete;

		if (strcmp(snap->storage.devs[i].name, device) != 0)
			continue;
		if (!*arr) {
			*arr = calloc(snap->topo.nr_cpus, sizeof(uint64_t));
			if (!*arr)
				return -ENOMEM;
		}
		(*arr)[cpu] = count;
		if (cc->submit)
			dc->submit_src = IP_SRC_REPLAY;
		else
			dc->complete_src = IP_SRC_REPLAY;
	}
	return 0;
}

static int read_replay(struct ip_root *r, struct ip_snapshot *snap, const char *path, bool submit,
		       struct ip_diag *d)
{
	_cleanup_free_ char *text = NULL;
	struct counter_ctx cc = { snap, submit };
	size_t len;
	int ret = ip_root_read(r, path, &text, &len);

	if (ret < 0)
		return ret;
	ret = ip_parse_counters(text, len, counter_line, &cc, d);
	return ret < 0 ? ip_diag_prefix(d, ret, "%s", path) : 0;
}

/* ---- perf tracepoint counters -------------------------------------- */

static int tracepoint_id(struct ip_root *r, const char *event, long long *id)
{
	char path[128];

	snprintf(path, sizeof(path), "sys/kernel/tracing/events/block/%s/id", event);
	if (ip_root_read_long(r, path, id) == 0)
		return 0;
	snprintf(path, sizeof(path), "sys/kernel/debug/tracing/events/block/%s/id", event);
	return ip_root_read_long(r, path, id);
}

static int open_tracepoint(long long id, int cpu, unsigned major, unsigned minor)
{
	struct perf_event_attr attr;
	char filter[64];
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.size = sizeof(attr);
	attr.config = (uint64_t)id;
	attr.sample_period = 1;
	fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* The kernel's dev_t inside tracepoints is MKDEV: major << 20 | minor. */
	snprintf(filter, sizeof(filter), "dev == %u", (major << 20) | minor);
	if (ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

static int perf_setup(struct ip_counters *c, struct ip_root *r, const struct ip_snapshot *snap)
{
	long long qid, cid;
	int n = snap->storage.nr_devs, ncpu = snap->topo.nr_cpus;

	if (tracepoint_id(r, "block_bio_queue", &qid) < 0 ||
	    tracepoint_id(r, "block_rq_complete", &cid) < 0)
		return -ENOENT;
	/* An fd per device per CPU per event: refuse rather than exhaust fds. */
	if ((long)n * ncpu * 2 > 8192)
		return -E2BIG;
	c->perf = calloc(n ? n : 1, sizeof(*c->perf));
	if (!c->perf)
		return -ENOMEM;
	c->nr_cpus = ncpu;
	for (int i = 0; i < n; i++) {
		const struct ip_blockdev *b = &snap->storage.devs[i];
		struct perf_dev *p = &c->perf[i];

		snprintf(p->name, sizeof(p->name), "%s", b->name);
		p->submit_fd = malloc(sizeof(int) * ncpu);
		p->complete_fd = malloc(sizeof(int) * ncpu);
		c->nr_perf = i + 1;
		if (!p->submit_fd || !p->complete_fd)
			return -ENOMEM;
		for (int k = 0; k < ncpu; k++)
			p->submit_fd[k] = p->complete_fd[k] = -1;
		CPUSET_FOREACH(cpu, &snap->topo.online) {
			int fd;

			if (cpu >= ncpu)
				break;
			fd = open_tracepoint(qid, cpu, b->major, b->minor);
			if (fd < 0)
				return fd;
			p->submit_fd[cpu] = fd;
			fd = open_tracepoint(cid, cpu, b->major, b->minor);
			if (fd < 0)
				return fd;
			p->complete_fd[cpu] = fd;
		}
	}
	return 0;
}

static bool perf_matches(const struct ip_counters *c, const struct ip_snapshot *snap)
{
	if (!c->perf || c->nr_perf != snap->storage.nr_devs || c->nr_cpus != snap->topo.nr_cpus)
		return false;
	for (int i = 0; i < c->nr_perf; i++)
		if (strcmp(c->perf[i].name, snap->storage.devs[i].name))
			return false;
	return true;
}

static int perf_read(struct ip_counters *c, struct ip_snapshot *snap)
{
	for (int i = 0; i < c->nr_perf; i++) {
		struct ip_devcount *dc = &snap->dc[i];

		dc->submit = calloc(c->nr_cpus, sizeof(uint64_t));
		dc->complete = calloc(c->nr_cpus, sizeof(uint64_t));
		if (!dc->submit || !dc->complete)
			return -ENOMEM;
		for (int k = 0; k < c->nr_cpus; k++) {
			uint64_t v;

			if (c->perf[i].submit_fd[k] >= 0 &&
			    read(c->perf[i].submit_fd[k], &v, sizeof(v)) == sizeof(v))
				dc->submit[k] = v;
			if (c->perf[i].complete_fd[k] >= 0 &&
			    read(c->perf[i].complete_fd[k], &v, sizeof(v)) == sizeof(v))
				dc->complete[k] = v;
		}
		dc->submit_src = dc->complete_src = IP_SRC_PERF;
	}
	return 0;
}

/* ---- task sampling -------------------------------------------------- */

static int cmp_task(const void *a, const void *b)
{
	pid_t x = ((const struct task_io *)a)->pid, y = ((const struct task_io *)b)->pid;

	return x < y ? -1 : x > y;
}

static uint64_t prev_bytes(const struct ip_counters *c, pid_t pid, bool *found)
{
	struct task_io key = { pid, 0 };
	struct task_io *t = c->nr_tasks ? bsearch(&key, c->tasks, c->nr_tasks, sizeof(key), cmp_task) : NULL;

	*found = t != NULL;
	return t ? t->bytes : 0;
}

/* Per-CPU weights: the I/O bytes of tasks since the last sample, by the
 * CPU each task last ran on. */
static int task_weights(struct ip_counters *c, struct ip_root *r, int nr_cpus, double *w)
{
	char **names = NULL;
	size_t n = 0;
	struct task_io *now;
	int cnt = 0, ret;

	ret = ip_root_listdir(r, "proc", &names, &n);
	if (ret < 0)
		return ret;
	now = malloc(sizeof(*now) * (n ? n : 1));
	if (!now) {
		ip_strv_free(names, n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		char path[64], *end, *text = NULL;
		long pid = strtol(names[i], &end, 10);
		struct ip_pid_stat ps;
		struct ip_pid_io io;
		size_t len;
		uint64_t before, bytes;
		bool found;

		if (*end || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "proc/%ld/io", pid);
		if (ip_root_read(r, path, &text, &len) < 0)
			continue;
		ret = ip_parse_pid_io(text, len, &io, NULL);
		free(text);
		if (ret < 0)
			continue;
		bytes = io.read_bytes + io.write_bytes;
		before = prev_bytes(c, (pid_t)pid, &found);
		now[cnt].pid = (pid_t)pid;
		now[cnt].bytes = bytes;
		cnt++;
		if (!found || bytes <= before)
			continue;
		snprintf(path, sizeof(path), "proc/%ld/stat", pid);
		if (ip_root_read(r, path, &text, &len) < 0)
			continue;
		ret = ip_parse_pid_stat(text, len, &ps, NULL);
		free(text);
		if (ret < 0 || !ps.has_processor || ps.processor < 0 || ps.processor >= nr_cpus)
			continue;
		w[ps.processor] += (double)(bytes - before);
	}
	ip_strv_free(names, n);
	qsort(now, cnt, sizeof(*now), cmp_task);
	free(c->tasks);
	c->tasks = now;
	c->nr_tasks = cnt;
	return 0;
}

static int tasks_sample(struct ip_counters *c, struct ip_root *r, struct ip_snapshot *snap)
{
	int nr_cpus = snap->topo.nr_cpus, ret;
	_cleanup_free_ double *w = calloc(nr_cpus ? nr_cpus : 1, sizeof(double));
	double total = 0;
	bool reset = c->nr_tdev != snap->storage.nr_devs;

	if (!w)
		return -ENOMEM;
	for (int i = 0; !reset && i < c->nr_tdev; i++)
		reset = strcmp(c->tdev[i].name, snap->storage.devs[i].name) != 0;
	if (reset) {
		tdev_free(c);
		c->tdev = calloc(snap->storage.nr_devs ? snap->storage.nr_devs : 1, sizeof(*c->tdev));
		if (!c->tdev)
			return -ENOMEM;
		for (int i = 0; i < snap->storage.nr_devs; i++) {
			snprintf(c->tdev[i].name, sizeof(c->tdev[i].name), "%s", snap->storage.devs[i].name);
			c->tdev[i].last_ios = snap->dc[i].ios;
			c->tdev[i].acc = calloc(nr_cpus > 0 ? (size_t)nr_cpus : 1, sizeof(double));
			c->nr_tdev = i + 1;
			if (!c->tdev[i].acc)
				return -ENOMEM;
		}
	}
	ret = task_weights(c, r, nr_cpus, w);
	if (ret < 0)
		return ret;
	for (int k = 0; k < nr_cpus; k++)
		total += w[k];
	for (int i = 0; i < snap->storage.nr_devs; i++) {
		struct ip_devcount *dc = &snap->dc[i];
		uint64_t ios = dc->ios, delta = ios >= c->tdev[i].last_ios ? ios - c->tdev[i].last_ios : 0;

		c->tdev[i].last_ios = ios;
		if (total > 0)
			for (int k = 0; k < nr_cpus; k++)
				c->tdev[i].acc[k] += (double)delta * w[k] / total;
		dc->submit = calloc(nr_cpus > 0 ? (size_t)nr_cpus : 1, sizeof(uint64_t));
		if (!dc->submit)
			return -ENOMEM;
		for (int k = 0; k < nr_cpus; k++)
			dc->submit[k] = (uint64_t)c->tdev[i].acc[k];
		dc->submit_src = IP_SRC_TASKS;
	}
	return 0;
}

/* ---- completions from interrupts ------------------------------------ */

static int complete_from_irqs(struct ip_snapshot *snap)
{
	int nr_cpus = snap->topo.nr_cpus;

	for (int i = 0; i < snap->storage.nr_devs; i++) {
		const struct ip_blockdev *b = &snap->storage.devs[i];
		struct ip_devcount *dc = &snap->dc[i];

		if (dc->complete)
			continue;
		dc->complete = calloc(nr_cpus ? nr_cpus : 1, sizeof(uint64_t));
		if (!dc->complete)
			return -ENOMEM;
		for (int v = 0; v < b->nr_vectors; v++) {
			const struct ip_irq *irq = ip_snapshot_irq(snap, b->vectors[v].irq);

			if (!irq || !irq->percpu || b->vectors[v].admin)
				continue;
			for (int k = 0; k < nr_cpus; k++)
				dc->complete[k] += irq->percpu[k];
		}
		dc->complete_src = IP_SRC_INTERRUPTS;
	}
	return 0;
}

int ip_counters_sample(struct ip_counters *c, struct ip_root *r, struct ip_snapshot *snap,
		       struct ip_diag *d)
{
	int ret;

	if (!snap->storage.nr_devs)
		return 0;
	ret = read_replay(r, snap, "irqpilot/submit", true, d);
	if (ret == 0) {
		c->submit_src = IP_SRC_REPLAY;
		ret = read_replay(r, snap, "irqpilot/complete", false, d);
		if (ret < 0 && ret != -ENOENT)
			return ret;
		return complete_from_irqs(snap);
	}
	if (ret != -ENOENT)
		return ret;
	if (c->live && !c->perf_failed) {
		if (!perf_matches(c, snap)) {
			perf_close(c);
			ret = perf_setup(c, r, snap);
			if (ret < 0) {
				/* No tracefs, no privilege, or too many CPUs:
				 * fall back to task sampling for good. */
				perf_close(c);
				c->perf_failed = true;
			}
		}
		if (!c->perf_failed) {
			c->submit_src = IP_SRC_PERF;
			return perf_read(c, snap);
		}
	}
	if (c->live) {
		ret = tasks_sample(c, r, snap);
		if (ret < 0)
			return ret;
		c->submit_src = IP_SRC_TASKS;
	} else {
		c->submit_src = IP_SRC_NONE;
	}
	return complete_from_irqs(snap);
}
