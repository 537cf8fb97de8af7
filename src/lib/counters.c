// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "irqpilot/counters.h"
#include "irqpilot/cqclient.h"
#include "irqpilot/macro.h"
#include "irqpilot/perfwake.h"
#include "irqpilot/procfs.h"

/*
 * The perf counters of every CPU, read a group at a time (PERF_FORMAT_GROUP).
 * Reading a per-CPU event from another CPU costs an IPI to that CPU and a
 * wait for it (perf_event_read(), kernel/events/core.c); a group's leader
 * reads all of its siblings in one. One event per read cost two IPIs per
 * device per CPU every cycle: under TCG with more vCPUs than host CPUs each
 * took milliseconds of spinning (tests/vm/diag/daemon-profile.sh), and on
 * any machine it interrupts every CPU, isolated ones too, twice per device.
 *
 * The events are opened CPU by CPU, and on each CPU device by device, the
 * submission event before the completion one; so a member's place in its
 * CPU's sequence says which device and which event it counts, and nothing
 * else needs to be stored: 16 bytes per event, one flat array, rather than
 * a fixed-size table per group. A group is capped so that its read stays
 * under the kernel's 16 KiB (perf_event_validate_size()).
 */
#define PERF_GROUP_MAX 256
struct perf_member {
	int fd;
	uint64_t id;
	uint64_t last; /* its count at the group's last read */
};

struct perf_group {
	int cpu;
	int first; /* its leader's index in ip_counters.members */
	int seq;   /* the leader's place in the CPU's sequence: 2 * device + complete */
	int nr;
	bool moved; /* a count differed at the last read (or it was never read) */
	int skips;  /* samples in a row that took its counts from the last read */
};

/*
 * A held placement (idle.h) arms the wakeup on the CPUs that submit
 * nothing; a CPU whose wakeup saw no bio since (ip_perf_wake_quiet()) and
 * whose counts did not move at its group's last read is not read: its
 * submissions are still those of the last read, exactly, since the wakeup
 * samples every bio the group counts. Each read is an IPI to that CPU, so a
 * held cycle interrupts the submitting CPUs only, not every CPU (isolated
 * ones too). Completions do not wake; one that started on such a CPU
 * without a bio there (an affinity someone else wrote) is seen at the
 * latest PERF_SKIP_MAX samples later, when the group is read anyway.
 */
#define PERF_SKIP_MAX 5

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
	char (*perf_devs)[32]; /* the devices counted, in the snapshot's order */
	struct perf_member *members;
	int nr_members;
	struct perf_group *groups;
	int nr_groups;
	uint64_t *group_buf;
	int groups_read, groups_kept; /* at the last sample */
	/* The idle wakeup: one block_bio_queue event per online CPU, armed by
	 * the daemon while it has no timer; rebuilt (wake_gen++) with perf. */
	struct ip_perf_wake *wake;
	int nr_wake;
	unsigned wake_gen;
	int wake_err; /* why there is none although perf counts: -errno */
	/* task sampling */
	struct task_io *tasks;
	int nr_tasks;
	struct {
		char name[32];
		uint64_t last_ios;
		double *acc; /* nr_cpus apportioned cumulative submissions */
	} *tdev;
	int nr_tdev;
	/* irqpilot_cq, live only; reopened each sample while absent, since
	 * the module may be loaded at any time. */
	struct ip_cq *cq;
	/* Devices whose submissions came from the module last sample. A
	 * device switching source goes one sample without counts, so that no
	 * rate is ever taken between two different counters. */
	char (*cq_devs)[32];
	int nr_cq_devs;
	bool sampled;
	/* Each storage vector's line at the last complete_from_irqs(),
	 * devices in order (-1: none); the same sample after sample until
	 * the IRQs change, so it is checked rather than looked up again */
	int *vline;
	int nr_vline;
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

static void wake_close(struct ip_counters *c)
{
	for (int i = 0; i < c->nr_wake; i++)
		ip_perf_wake_close(&c->wake[i]);
	free(c->wake);
	c->wake = NULL;
	if (c->nr_wake)
		c->wake_gen++;
	c->nr_wake = 0;
}

static void perf_close(struct ip_counters *c)
{
	wake_close(c);
	for (int i = 0; i < c->nr_members; i++)
		close(c->members[i].fd);
	free(c->members);
	c->members = NULL;
	c->nr_members = 0;
	free(c->perf_devs);
	c->perf_devs = NULL;
	c->nr_perf = 0;
	free(c->groups);
	c->groups = NULL;
	c->nr_groups = 0;
	free(c->group_buf);
	c->group_buf = NULL;
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
	ip_cq_close(c->cq);
	free(c->cq_devs);
	free(c->vline);
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
	int ret = ip_root_read_optional(r, path, false, &text, &len);

	/* a file missing is the caller's to judge; any other failure says
	 * which file, as a damaged capture has two of them */
	if (ret == -ENOENT)
		return ret;
	if (ret < 0)
		return ip_diag_set(d, ret, "%s: %s", path, strerror(-ret));
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

/*
 * The tracepoints' test for @b. The kernel's dev_t inside tracepoints is
 * MKDEV: major << 20 | minor. An NVMe multipath path (storage.h) also
 * takes its head's: block_bio_queue fires once per bio, for the head the
 * bio was submitted to, while block_rq_complete names the path whose
 * request completed. Every path counts all of the head's submissions, as
 * the kernel picks the path per bio (by the submitter's node, or in turn)
 * and the policy should steer each toward the CPUs that may use it.
 */
static int dev_filter(const struct ip_blockdev *b, char *buf, size_t size)
{
	if (b->head_major || b->head_minor)
		return snprintf(buf, size, "(dev == %u || dev == %u)", (b->major << 20) | b->minor,
				(b->head_major << 20) | b->head_minor);
	return snprintf(buf, size, "dev == %u", (b->major << 20) | b->minor);
}

static int open_tracepoint(long long id, int cpu, int group_fd, const struct ip_blockdev *b)
{
	struct perf_event_attr attr;
	char filter[64];
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.size = sizeof(attr);
	attr.config = (uint64_t)id;
	/* Counting, not sampling (sample_period 0): read() gives the count
	 * either way, but a sampling event takes perf_swevent_overflow() and
	 * an attempt at a sample record (kernel/events/core.c) on every bio
	 * and every completion, which nobody reads. */
	attr.sample_period = 0;
	attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID;
	fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	dev_filter(b, filter, sizeof(filter));
	if (ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/*
 * Any tracked device's first bio after arming wakes the daemon: the same
 * tracepoint that counts submissions, so what wakes it is what the next
 * cycle measures (every bio passes block_bio_queue once, polled I/O too;
 * passthrough commands pass neither it nor /proc/diskstats). The kernel
 * takes a filter of at most a page (strndup_user(..., PAGE_SIZE)): past
 * that, any block device's I/O wakes it, which costs a cycle, not a miss.
 */
static int wake_setup(struct ip_counters *c, long long qid, const struct ip_snapshot *snap)
{
	size_t cap = 4000, len = 0;
	_cleanup_free_ char *filter = malloc(cap);
	struct perf_event_attr attr;
	int ret = 0;

	if (!filter)
		return -ENOMEM;
	filter[0] = '\0';
	for (int i = 0; i < snap->storage.nr_devs && filter; i++) {
		const struct ip_blockdev *b = &snap->storage.devs[i];
		int n = snprintf(filter + len, cap - len, "%s", i ? " || " : "");

		if (n >= 0 && (size_t)n < cap - len)
			n += dev_filter(b, filter + len + n, cap - len - n);

		if (n < 0 || (size_t)n >= cap - len) {
			free(filter);
			filter = NULL;
		} else {
			len += n;
		}
	}
	c->wake = calloc(snap->topo.nr_cpus ? snap->topo.nr_cpus : 1, sizeof(*c->wake));
	if (!c->wake)
		return -ENOMEM;
	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.config = (uint64_t)qid;
	c->wake_gen++;
	CPUSET_FOREACH(cpu, &snap->topo.online) {
		if (cpu >= snap->topo.nr_cpus)
			break;
		ret = ip_perf_wake_open(&c->wake[c->nr_wake], &attr, -1, cpu, filter && len ? filter : NULL);
		if (ret < 0)
			break;
		c->nr_wake++;
	}
	if (ret < 0)
		wake_close(c);
	c->wake_err = ret;
	return ret;
}

int ip_counters_wake_count(const struct ip_counters *c, unsigned *gen)
{
	if (gen)
		*gen = c->wake_gen;
	return c->submit_src == IP_SRC_PERF ? c->nr_wake : 0;
}

int ip_counters_wake_fd(const struct ip_counters *c, int i)
{
	return i >= 0 && i < c->nr_wake ? c->wake[i].fd : -EBADF;
}

int ip_counters_wake_arm_except(struct ip_counters *c, const ip_cpuset *skip)
{
	int ret = 0, n = 0;

	for (int i = 0; i < c->nr_wake && ret >= 0; i++) {
		bool on = !skip || c->wake[i].cpu < 0 || !cpuset_test(skip, c->wake[i].cpu);

		ret = ip_perf_wake_arm(&c->wake[i], on);
		n += on;
	}
	/* half armed would miss I/O started on the other CPUs */
	for (int i = 0; ret < 0 && i < c->nr_wake; i++)
		(void)ip_perf_wake_arm(&c->wake[i], false);
	return ret < 0 ? ret : n;
}

int ip_counters_wake_disarm(struct ip_counters *c)
{
	int ret = 0;

	for (int i = 0; i < c->nr_wake; i++) {
		int r = ip_perf_wake_arm(&c->wake[i], false);

		if (r < 0 && ret == 0)
			ret = r;
	}
	return ret;
}

bool ip_counters_wake_armed(const struct ip_counters *c, int i)
{
	return i >= 0 && i < c->nr_wake && c->wake[i].armed;
}

const char *ip_counters_wake_why(const struct ip_counters *c)
{
	if (c->submit_src != IP_SRC_PERF)
		return "submissions are not counted by perf events";
	if (c->wake_err < 0)
		return strerror(-c->wake_err);
	return c->nr_wake ? NULL : "no online CPU";
}

/* The next event on @cpu: a sibling in the CPU's group, or the leader of a new one. */
static int group_open(struct ip_counters *c, long long tp, int cpu, int seq, const struct ip_blockdev *b)
{
	struct perf_group *g = c->nr_groups ? &c->groups[c->nr_groups - 1] : NULL;
	struct perf_member *m = &c->members[c->nr_members];
	int fd;

	if (!g || g->cpu != cpu || g->nr == PERF_GROUP_MAX) {
		g = &c->groups[c->nr_groups++];
		*g = (struct perf_group){ .cpu = cpu, .first = c->nr_members, .seq = seq, .moved = true };
	}
	fd = open_tracepoint(tp, cpu, g->nr ? c->members[g->first].fd : -1, b);
	if (fd < 0)
		return fd;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &m->id) < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	m->fd = fd;
	c->nr_members++;
	g->nr++;
	return 0;
}

static int perf_setup(struct ip_counters *c, struct ip_root *r, const struct ip_snapshot *snap)
{
	long long qid, cid;
	int n = snap->storage.nr_devs, ncpu = snap->topo.nr_cpus, gmax, ret;

	if (tracepoint_id(r, "block_bio_queue", &qid) < 0 ||
	    tracepoint_id(r, "block_rq_complete", &cid) < 0)
		return -ENOENT;
	/* An fd per device per CPU per event: refuse rather than exhaust fds. */
	if ((long)n * ncpu * 2 > 8192)
		return -E2BIG;
	/* at most one group per CPU per PERF_GROUP_MAX events */
	gmax = ncpu * ((2 * n + PERF_GROUP_MAX - 1) / PERF_GROUP_MAX);
	c->perf_devs = calloc(n ? n : 1, sizeof(*c->perf_devs));
	c->members = calloc((size_t)2 * n * ncpu + 1, sizeof(*c->members));
	c->groups = calloc(gmax ? gmax : 1, sizeof(*c->groups));
	c->group_buf = malloc(sizeof(uint64_t) * (1 + 2 * PERF_GROUP_MAX));
	if (!c->perf_devs || !c->members || !c->groups || !c->group_buf)
		return -ENOMEM;
	c->nr_cpus = ncpu;
	c->nr_perf = n;
	for (int i = 0; i < n; i++)
		snprintf(c->perf_devs[i], sizeof(c->perf_devs[i]), "%s", snap->storage.devs[i].name);
	CPUSET_FOREACH(cpu, &snap->topo.online) {
		if (cpu >= ncpu)
			break;
		for (int i = 0; i < n; i++) {
			const struct ip_blockdev *b = &snap->storage.devs[i];

			ret = group_open(c, qid, cpu, 2 * i, b);
			if (ret >= 0)
				ret = group_open(c, cid, cpu, 2 * i + 1, b);
			if (ret < 0)
				return ret;
		}
	}
	/* without the wakeup the daemon backs off on a timer instead */
	(void)wake_setup(c, qid, snap);
	return 0;
}

static bool perf_matches(const struct ip_counters *c, const struct ip_snapshot *snap)
{
	if (!c->perf_devs || c->nr_perf != snap->storage.nr_devs || c->nr_cpus != snap->topo.nr_cpus)
		return false;
	for (int i = 0; i < c->nr_perf; i++)
		if (strcmp(c->perf_devs[i], snap->storage.devs[i].name))
			return false;
	return true;
}

static void put_count(struct ip_snapshot *snap, const struct perf_group *g, int k, uint64_t v)
{
	int seq = g->seq + k;

	if (seq & 1)
		snap->dc[seq / 2].complete[g->cpu] = v;
	else
		snap->dc[seq / 2].submit[g->cpu] = v;
}

/* One group's counts into the snapshot. Anything but the whole group leaves
 * this CPU's counts at 0 for the sample rather than put counts in the wrong
 * place. */
static void group_read(struct ip_counters *c, struct perf_group *g, struct ip_snapshot *snap)
{
	struct perf_member *m = &c->members[g->first];
	/* { nr, { value, id } [nr] } (perf_read_group(), kernel/events/core.c) */
	size_t want = sizeof(uint64_t) * (1 + 2 * (size_t)g->nr);
	uint64_t *v = c->group_buf;

	g->moved = true;
	if (read(m[0].fd, v, want) != (ssize_t)want || v[0] != (uint64_t)g->nr)
		return;
	g->moved = false;
	for (int j = 0; j < g->nr; j++) {
		int k = j;

		/* siblings come in the order they joined; the id says */
		if (v[2 + 2 * j] != m[k].id)
			for (k = 0; k < g->nr && m[k].id != v[2 + 2 * j]; k++)
				;
		if (k == g->nr)
			continue;
		g->moved |= v[1 + 2 * j] != m[k].last;
		m[k].last = v[1 + 2 * j];
		put_count(snap, g, k, m[k].last);
	}
}

/* Whether @g's counts can be taken from its last read (see PERF_SKIP_MAX);
 * *w walks the wakeups, which are in CPU order as the groups are. */
static bool group_keep(const struct ip_counters *c, const struct perf_group *g, int *w)
{
	while (*w < c->nr_wake && c->wake[*w].cpu < g->cpu)
		(*w)++;
	return !g->moved && g->skips < PERF_SKIP_MAX && *w < c->nr_wake && c->wake[*w].cpu == g->cpu &&
	       ip_perf_wake_quiet(&c->wake[*w]);
}

static int perf_read(struct ip_counters *c, struct ip_snapshot *snap)
{
	for (int i = 0; i < c->nr_perf; i++) {
		struct ip_devcount *dc = &snap->dc[i];

		dc->submit = calloc(c->nr_cpus, sizeof(uint64_t));
		dc->complete = calloc(c->nr_cpus, sizeof(uint64_t));
		if (!dc->submit || !dc->complete)
			return -ENOMEM;
		dc->submit_src = dc->complete_src = IP_SRC_PERF;
	}
	c->groups_read = c->groups_kept = 0;
	for (int gi = 0, w = 0; gi < c->nr_groups; gi++) {
		struct perf_group *g = &c->groups[gi];

		if (group_keep(c, g, &w)) {
			for (int k = 0; k < g->nr; k++)
				put_count(snap, g, k, c->members[g->first + k].last);
			g->skips++;
			c->groups_kept++;
			continue;
		}
		group_read(c, g, snap);
		g->skips = 0;
		c->groups_read++;
	}
	return 0;
}

void ip_counters_perf_reads(const struct ip_counters *c, int *read, int *kept)
{
	*read = c ? c->groups_read : 0;
	*kept = c ? c->groups_kept : 0;
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

/*
 * ip_snapshot_irq_next(@snap, @irq, @at), for storage vector @k (devices
 * in order): the line c->vline has for it when it is still where the
 * search would land, the first with the number (the lines are sorted by
 * it), where 132 searches a sample were 7,000 instructions at 2 NVMe
 * drives.
 */
static const struct ip_irq *vector_line(struct ip_counters *c, const struct ip_snapshot *snap, int k,
					unsigned irq, size_t *at)
{
	int l = c->vline[k];
	const struct ip_irq *q;

	if (l >= 0 && l < snap->nr_irqs && snap->irqs[l].irq == irq &&
	    (l == 0 || snap->irqs[l - 1].irq < irq))
		return &snap->irqs[l];
	q = ip_snapshot_irq_next(snap, irq, at);
	c->vline[k] = q ? (int)(q - snap->irqs) : -1;
	return q;
}

/* c->vline sized to @snap's storage vectors; what it held is kept when
 * their number is the same, as it is between storage scans. */
static int vline_room(struct ip_counters *c, const struct ip_snapshot *snap)
{
	int n = 0;
	int *v;

	for (int i = 0; i < snap->storage.nr_devs; i++)
		n += snap->storage.devs[i].nr_vectors;
	if (n == c->nr_vline && c->vline)
		return 0;
	v = realloc(c->vline, sizeof(*v) * (n ? n : 1));
	if (!v)
		return -ENOMEM;
	for (int k = 0; k < n; k++)
		v[k] = -1;
	c->vline = v;
	c->nr_vline = n;
	return 0;
}

static int complete_from_irqs(struct ip_counters *c, struct ip_snapshot *snap)
{
	int nr_cpus = snap->topo.nr_cpus, base = 0;

	if (vline_room(c, snap) < 0)
		return -ENOMEM;
	for (int i = 0; i < snap->storage.nr_devs; base += snap->storage.devs[i++].nr_vectors) {
		const struct ip_blockdev *b = &snap->storage.devs[i];
		struct ip_devcount *dc = &snap->dc[i];
		size_t at = 0;

		if (dc->complete)
			continue;
		dc->complete = calloc(nr_cpus ? nr_cpus : 1, sizeof(uint64_t));
		if (!dc->complete)
			return -ENOMEM;
		for (int v = 0; v < b->nr_vectors; v++) {
			const struct ip_irq *irq = vector_line(c, snap, base + v, b->vectors[v].irq, &at);

			if (!irq || b->vectors[v].admin)
				continue;
			for (int k = 0; k < irq->nr_percpu; k++)
				if ((int)irq->percpu[k].cpu < nr_cpus)
					dc->complete[irq->percpu[k].cpu] += irq->percpu[k].count;
		}
		dc->complete_src = IP_SRC_INTERRUPTS;
	}
	return 0;
}

/* ---- irqpilot_cq: completion threads and their submitters ---------- */

void ip_snapshot_free_cq(struct ip_snapshot *s)
{
	for (int i = 0; i < s->nr_cq; i++)
		free(s->cq[i].cpu_completions);
	free(s->cq);
	s->cq = NULL;
	s->nr_cq = 0;
	s->have_cq = false;
}

int ip_snapshot_cq_count(const struct ip_snapshot *s, int dev)
{
	int n = 0;

	for (int i = 0; i < s->nr_cq; i++)
		n += s->cq[i].dev == dev;
	return n;
}

static struct ip_cq_thread *cq_add(struct ip_snapshot *snap)
{
	struct ip_cq_thread *nv = realloc(snap->cq, (snap->nr_cq + 1) * sizeof(*nv)), *t;

	if (!nv)
		return NULL;
	snap->cq = nv;
	t = &nv[snap->nr_cq];
	memset(t, 0, sizeof(*t));
	t->cpu_completions = calloc(snap->topo.nr_cpus ? snap->topo.nr_cpus : 1, sizeof(uint64_t));
	if (!t->cpu_completions)
		return NULL;
	t->dev = -1;
	snap->nr_cq++;
	return t;
}

/* Where the thread may run and at what priority; a replay tree may lack
 * the PID, and then it is taken to run anywhere. */
static void cq_read_task(struct ip_root *r, const struct ip_snapshot *snap, struct ip_cq_thread *t)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	struct ip_pid_status st;
	struct ip_pid_stat ps;
	size_t len;

	t->allowed = snap->topo.online;
	t->last_cpu = -1;
	path = ip_asprintf("proc/%d/status", (int)t->pid);
	if (!path || ip_root_read_again(r, path, true, &text, &len) < 0)
		return;
	if (ip_parse_pid_status(text, len, &st, NULL) == 0 && st.has_cpus_allowed)
		t->allowed = st.cpus_allowed;
	free(text);
	text = NULL;
	free(path);
	path = ip_asprintf("proc/%d/stat", (int)t->pid);
	if (!path || ip_root_read_again(r, path, true, &text, &len) < 0)
		return;
	if (ip_parse_pid_stat(text, len, &ps, NULL) == 0) {
		t->policy = ps.policy;
		t->rt_priority = ps.rt_priority;
		t->have_sched = true;
		if (ps.has_processor)
			t->last_cpu = ps.processor;
	}
}

static void cq_link(struct ip_root *r, struct ip_snapshot *snap)
{
	for (int i = 0; i < snap->nr_cq; i++) {
		struct ip_cq_thread *t = &snap->cq[i];

		for (int k = 0; k < snap->storage.nr_devs && t->dev < 0; k++) {
			const struct ip_blockdev *b = &snap->storage.devs[k];

			if ((b->major == t->major && b->minor == t->minor && (t->major || t->minor)) ||
			    (t->disk[0] && strcmp(b->name, t->disk) == 0))
				t->dev = k;
		}
		cq_read_task(r, snap, t);
	}
}

/*
 * A replay step's irqpilot/cq: one thread a line, in the words of
 * "ipcq-ctl list" (kmod/tests/ipcq-ctl.c), so a recording is that output:
 *   disk=sda dev=8:0 hwq=0 nr_hwq=1 pid=812 completions=9 wakeups=4 max_wait_ns=0
 *   stalls=0 fallbacks=0 cpus=3:9
 */
static int cq_parse_line(struct ip_snapshot *snap, char *line, const char *path, int lineno,
			 struct ip_diag *d)
{
	struct ip_cq_thread *t;
	char *save = NULL, *tok;

	line[strcspn(line, "#")] = '\0';
	if (!line[strspn(line, " \t")])
		return 0;
	t = cq_add(snap);
	if (!t)
		return -ENOMEM;
	for (tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		char *v = strchr(tok, '='), *end = NULL;
		unsigned long long n = 0;
		bool ok = true;

		if (!v)
			return ip_diag_set(d, -EINVAL, "%s:%d: '%s' is not key=value", path, lineno,
					   tok);
		*v++ = '\0';
		if (strcmp(tok, "disk") == 0) {
			snprintf(t->disk, sizeof(t->disk), "%s", v);
			continue;
		}
		if (strcmp(tok, "dev") == 0) {
			ok = sscanf(v, "%u:%u", &t->major, &t->minor) == 2;
		} else if (strcmp(tok, "cpus") == 0) {
			char *s2 = NULL;

			for (char *p = strtok_r(v, ",", &s2); p && ok; p = strtok_r(NULL, ",", &s2)) {
				int cpu;
				unsigned long long cnt;

				ok = sscanf(p, "%d:%llu", &cpu, &cnt) == 2 && cpu >= 0;
				if (ok && cpu < snap->topo.nr_cpus)
					t->cpu_completions[cpu] = cnt;
			}
		} else {
			errno = 0;
			n = strtoull(v, &end, 10);
			ok = end != v && !*end && !errno;
			if (strcmp(tok, "hwq") == 0)
				t->hwq = (unsigned)n;
			else if (strcmp(tok, "nr_hwq") == 0)
				t->nr_hwq = (unsigned)n;
			else if (strcmp(tok, "pid") == 0)
				t->pid = (pid_t)n;
			else if (strcmp(tok, "completions") == 0)
				t->completions = n;
			else if (strcmp(tok, "wakeups") == 0)
				t->wakeups = n;
			else if (strcmp(tok, "max_wait_ns") == 0)
				t->max_wait_ns = n;
			else if (strcmp(tok, "stalls") == 0)
				t->stalls = n;
			else if (strcmp(tok, "fallbacks") == 0)
				t->fallbacks = n;
			/* unknown keys: a newer module's, ignored */
		}
		if (!ok)
			return ip_diag_set(d, -EINVAL, "%s:%d: bad value '%s' for %s", path, lineno,
					   v, tok);
	}
	if (!t->pid)
		return ip_diag_set(d, -EINVAL, "%s:%d: no pid=", path, lineno);
	return 0;
}

static int cq_read_replay(struct ip_root *r, struct ip_snapshot *snap, struct ip_diag *d)
{
	static const char path[] = "irqpilot/cq";
	_cleanup_free_ char *text = NULL;
	char *save = NULL;
	size_t len;
	int ret = ip_root_read_optional(r, path, false, &text, &len), lineno = 0;

	if (ret < 0)
		return ret;
	snap->have_cq = true;
	for (char *p = text; p && *p;) {
		char *nl = strchr(p, '\n');

		if (nl)
			*nl = '\0';
		lineno++;
		ret = cq_parse_line(snap, p, path, lineno, d);
		if (ret < 0)
			return ret;
		p = nl ? nl + 1 : NULL;
	}
	(void)save;
	return 0;
}

static int cq_read_live(struct ip_counters *c, struct ip_root *r, struct ip_snapshot *snap)
{
	struct ip_diag diag = { "" };
	struct ip_cq_list l;
	int ret;

	if (!c->cq && (!ip_cq_loaded(r) || ip_cq_open(&c->cq, &diag) < 0))
		return 0; /* no module: the daemon says so, once */
	ret = ip_cq_list(c->cq, snap->topo.nr_cpus, &l, &diag);
	if (ret < 0) {
		/* The module went away (rmmod): look for it again next time. */
		ip_cq_close(c->cq);
		c->cq = NULL;
		return ret == -ENOMEM ? ret : 0;
	}
	snap->have_cq = true;
	for (int i = 0; i < l.n; i++) {
		struct ip_cq_thread *t = cq_add(snap);
		const struct ip_cq_entry *e = &l.e[i];

		if (!t) {
			ip_cq_list_free(&l);
			return -ENOMEM;
		}
		snprintf(t->disk, sizeof(t->disk), "%s", e->disk);
		t->major = e->major;
		t->minor = e->minor;
		t->hwq = e->hwq;
		t->nr_hwq = e->nr_hwq;
		t->pid = e->pid;
		t->completions = e->completions;
		t->wakeups = e->wakeups;
		t->max_wait_ns = e->max_wait_ns;
		t->stalls = e->stalls;
		t->fallbacks = e->fallbacks;
		memcpy(t->cpu_completions, e->cpu_completions,
		       MIN(e->nr_cpus, snap->topo.nr_cpus) * sizeof(uint64_t));
	}
	ip_cq_list_free(&l);
	return 0;
}

/*
 * The module counts each completion by the CPU that submitted the request
 * (rq->mq_ctx->cpu): for an attached device, the exact submitter signal.
 */
static bool cq_was(const struct ip_counters *c, const char *name)
{
	for (int i = 0; i < c->nr_cq_devs; i++)
		if (strcmp(c->cq_devs[i], name) == 0)
			return true;
	return false;
}

static int cq_submissions(struct ip_counters *c, struct ip_snapshot *snap)
{
	int nr_cpus = snap->topo.nr_cpus, n = 0;
	char(*now)[32] = calloc(snap->storage.nr_devs ? snap->storage.nr_devs : 1, sizeof(*now));

	if (!now)
		return -ENOMEM;
	for (int k = 0; k < snap->storage.nr_devs; k++) {
		const char *name = snap->storage.devs[k].name;
		struct ip_devcount *dc = &snap->dc[k];
		bool any = ip_snapshot_cq_count(snap, k) > 0;

		if (any)
			snprintf(now[n++], sizeof(*now), "%s", name);
		if (c->sampled && any != cq_was(c, name)) {
			free(dc->submit);
			dc->submit = NULL;
			dc->submit_src = IP_SRC_NONE;
			continue;
		}
		if (!any)
			continue;
		if (!dc->submit) {
			dc->submit = calloc(nr_cpus ? nr_cpus : 1, sizeof(uint64_t));
			if (!dc->submit) {
				free(now);
				return -ENOMEM;
			}
		}
		memset(dc->submit, 0, nr_cpus * sizeof(uint64_t));
		for (int i = 0; i < snap->nr_cq; i++)
			for (int cpu = 0; snap->cq[i].dev == k && cpu < nr_cpus; cpu++)
				dc->submit[cpu] += snap->cq[i].cpu_completions[cpu];
		dc->submit_src = IP_SRC_MODULE;
	}
	free(c->cq_devs);
	c->cq_devs = now;
	c->nr_cq_devs = n;
	c->sampled = true;
	return 0;
}

static int cq_sample(struct ip_counters *c, struct ip_root *r, struct ip_snapshot *snap,
		     struct ip_diag *d)
{
	/* as sample_base()'s recorded counts: a fixture's alone */
	int ret = cq_read_replay(r, snap, d);

	if (ret == -ENOENT && c->live)
		ret = cq_read_live(c, r, snap);
	else if (ret == -ENOENT)
		ret = 0;
	if (ret >= 0) {
		cq_link(r, snap);
		ret = cq_submissions(c, snap);
	}
	if (ret < 0)
		ip_snapshot_free_cq(snap);
	return ret;
}

/*
 * A recorded count that does not parse (a garbled line, a file caught
 * mid-rewrite) failed the whole sample: every cycle "cycle failed" and no
 * decision at all while it lasted, bans and pins with the rest. It is
 * this sample's submissions that are unknown, not the machine: they are
 * dropped (a rate is never taken across them) and the caller is told
 * (IP_COUNTERS_UNREADABLE, with @d saying why). A file that cannot be
 * read at all (too large, a FIFO) still fails: a damaged capture.
 */
static int replay_unreadable(struct ip_counters *c, struct ip_snapshot *snap, int err)
{
	if (err != -EINVAL && err != -ERANGE)
		return err;
	for (int i = 0; i < snap->storage.nr_devs; i++) {
		struct ip_devcount *dc = &snap->dc[i];

		free(dc->submit);
		free(dc->complete);
		dc->submit = dc->complete = NULL;
		dc->submit_src = dc->complete_src = IP_SRC_NONE;
	}
	c->submit_src = IP_SRC_NONE;
	return IP_COUNTERS_UNREADABLE;
}

static int sample_base(struct ip_counters *c, struct ip_root *r, struct ip_snapshot *snap,
		       struct ip_diag *d)
{
	int ret;

	if (!snap->storage.nr_devs)
		return 0;
	/* recorded counts: a fixture's only (root.c, fixture_only()) */
	ret = read_replay(r, snap, "irqpilot/submit", true, d);
	if (ret == 0) {
		c->submit_src = IP_SRC_REPLAY;
		ret = read_replay(r, snap, "irqpilot/complete", false, d);
		if (ret < 0 && ret != -ENOENT)
			return replay_unreadable(c, snap, ret);
		return complete_from_irqs(c, snap);
	}
	if (ret != -ENOENT)
		return replay_unreadable(c, snap, ret);
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
	return complete_from_irqs(c, snap);
}

int ip_counters_sample(struct ip_counters *c, struct ip_root *r, struct ip_snapshot *snap,
		       struct ip_diag *d)
{
	struct ip_diag cqd;
	int ret = sample_base(c, r, snap, d), cq;

	if (ret < 0)
		return ret;
	cq = cq_sample(c, r, snap, ret ? &cqd : d);
	if (cq < 0 && ret && d)
		*d = cqd;
	return cq < 0 ? cq : ret;
}

void ip_model_cq_rate(const struct ip_model *m, int i, struct ip_cq_rate *out, double *by_cpu)
{
	const struct ip_cq_thread *t = &m->cur->cq[i], *p = NULL;
	int n = m->cur->topo.nr_cpus;
	double dc, dw;

	memset(out, 0, sizeof(*out));
	out->wakeups_per_completion = -1;
	for (int k = 0; by_cpu && k < n; k++)
		by_cpu[k] = 0;
	for (int k = 0; m->prev && k < m->prev->nr_cq && !p; k++) {
		const struct ip_cq_thread *q = &m->prev->cq[k];

		if (q->pid == t->pid && q->hwq == t->hwq && q->major == t->major &&
		    q->minor == t->minor)
			p = q;
	}
	/* A counter that went down: detached and attached again, same pid. */
	if (!p || m->interval_s <= 0 || t->completions < p->completions)
		return;
	out->have = true;
	dc = (double)(t->completions - p->completions);
	dw = t->wakeups >= p->wakeups ? (double)(t->wakeups - p->wakeups) : 0;
	out->completions = dc / m->interval_s;
	if (dc > 0)
		out->wakeups_per_completion = dw / dc;
	for (int k = 0; k < n && k < m->prev->topo.nr_cpus; k++) {
		uint64_t a = p->cpu_completions[k], b = t->cpu_completions[k];
		double r = b >= a ? (double)(b - a) / m->interval_s : 0;

		out->submit_total += r;
		if (by_cpu)
			by_cpu[k] = r;
	}
}
