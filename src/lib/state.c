// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "irqpilot/macro.h"
#include "irqpilot/state.h"

static bool anything(const struct ip_history *h)
{
	for (size_t i = 0; i < h->nr; i++)
		if (h->irqs[i].orig)
			return true;
	for (size_t i = 0; i < h->nr_cqdev; i++)
		if (h->cqdev[i].attached_by_us)
			return true;
	return h->nr_threads || h->nr_rq;
}

int ip_state_save(const struct ip_history *h, const char *path, struct ip_diag *d)
{
	_cleanup_free_ char *tmp = ip_asprintf("%s.new", path);
	FILE *f;
	int fd;

	if (!tmp)
		return -ENOMEM;
	if (!anything(h)) {
		if (unlink(path) < 0 && errno != ENOENT)
			return ip_diag_set(d, -errno, "%s: %s", path, strerror(errno));
		return 0;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return ip_diag_set(d, -errno, "%s: %s", tmp, strerror(errno));
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	fprintf(f, "# irqpilot state 1: original settings, for irqpilotd --restore\n");
	for (size_t i = 0; i < h->nr; i++)
		if (h->irqs[i].orig)
			fprintf(f, "irq %u %s\n", h->irqs[i].irq, h->irqs[i].orig);
	for (size_t i = 0; i < h->nr_threads; i++) {
		const struct ip_thread_orig *o = &h->threads[i];

		if (o->have_affinity)
			fprintf(f, "thread %d %u affinity %s\n", (int)o->pid, o->irq, cpuset_str(&o->allowed));
		if (o->have_sched)
			fprintf(f, "thread %d %u sched %d %d\n", (int)o->pid, o->irq, o->policy, o->priority);
	}
	for (size_t i = 0; i < h->nr_rq; i++)
		fprintf(f, "rq %s %d\n", h->rq[i].device, h->rq[i].value);
	/* a device we attached to irqpilot_cq is detached on restore */
	for (size_t i = 0; i < h->nr_cqdev; i++)
		if (h->cqdev[i].attached_by_us)
			fprintf(f, "cq %s %u:%u\n", h->cqdev[i].device, h->cqdev[i].major, h->cqdev[i].minor);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		int e = -errno;

		fclose(f);
		unlink(tmp);
		return ip_diag_set(d, e, "%s: %s", tmp, strerror(-e));
	}
	fclose(f);
	if (rename(tmp, path) < 0) {
		int e = -errno;

		unlink(tmp);
		return ip_diag_set(d, e, "%s: %s", path, strerror(-e));
	}
	return 0;
}

static struct ip_thread_orig *thread_slot(struct ip_history *h, pid_t pid, unsigned irq)
{
	struct ip_thread_orig *nv;

	for (size_t i = 0; i < h->nr_threads; i++)
		if (h->threads[i].pid == pid)
			return &h->threads[i];
	nv = realloc(h->threads, sizeof(*nv) * (h->nr_threads + 1));
	if (!nv)
		return NULL;
	h->threads = nv;
	nv = &h->threads[h->nr_threads++];
	memset(nv, 0, sizeof(*nv));
	nv->pid = pid;
	nv->irq = irq;
	return nv;
}

static int load_line(struct ip_history *h, char *line)
{
	char kind[16], a[64], b[64], c[IP_CPULIST_MAX];
	int n = sscanf(line, "%15s %63s %63s %4095[^\n]", kind, a, b, c);
	char *end;

	if (n >= 3 && strcmp(kind, "irq") == 0) {
		unsigned long irq = strtoul(a, &end, 10);
		struct ip_irq_hist *e;
		ip_cpuset s;

		if (*end || cpuset_parse_list(&s, b) < 0)
			return -EINVAL;
		e = ip_history_get(h, (unsigned)irq);
		if (!e)
			return -ENOMEM;
		if (!e->orig) {
			e->orig = strdup(b);
			if (!e->orig)
				return -ENOMEM;
		}
		return 0;
	}
	if (n == 4 && strcmp(kind, "thread") == 0) {
		long pid = strtol(a, &end, 10);
		unsigned long irq;
		struct ip_thread_orig *o;
		char what[16], rest[IP_CPULIST_MAX];

		if (*end || pid <= 0)
			return -EINVAL;
		irq = strtoul(b, &end, 10);
		if (*end || sscanf(c, "%15s %4095[^\n]", what, rest) != 2)
			return -EINVAL;
		o = thread_slot(h, (pid_t)pid, (unsigned)irq);
		if (!o)
			return -ENOMEM;
		if (strcmp(what, "affinity") == 0) {
			if (cpuset_parse_list(&o->allowed, rest) < 0)
				return -EINVAL;
			o->have_affinity = true;
			return 0;
		}
		if (strcmp(what, "sched") == 0 && sscanf(rest, "%d %d", &o->policy, &o->priority) == 2) {
			o->have_sched = true;
			return 0;
		}
		return -EINVAL;
	}
	if (n == 3 && strcmp(kind, "cq") == 0) {
		unsigned maj, min;
		struct ip_cqdev_hist *e;

		if (sscanf(b, "%u:%u", &maj, &min) != 2 || strlen(a) >= sizeof(e->device))
			return -EINVAL;
		e = ip_history_cqdev_get(h, a);
		if (!e)
			return -ENOMEM;
		e->major = maj;
		e->minor = min;
		e->attached_by_us = true;
		return 0;
	}
	if (n == 3 && strcmp(kind, "rq") == 0) {
		long v = strtol(b, &end, 10);
		struct ip_rq_orig *nv;

		if (*end || v < 0 || v > 2 || strlen(a) >= sizeof(nv->device))
			return -EINVAL;
		for (size_t i = 0; i < h->nr_rq; i++)
			if (strcmp(h->rq[i].device, a) == 0)
				return 0;
		nv = realloc(h->rq, sizeof(*nv) * (h->nr_rq + 1));
		if (!nv)
			return -ENOMEM;
		h->rq = nv;
		snprintf(nv[h->nr_rq].device, sizeof(nv->device), "%s", a);
		nv[h->nr_rq].value = (int)v;
		h->nr_rq++;
		return 0;
	}
	return -EINVAL;
}

int ip_state_load(const char *path, struct ip_history *h, struct ip_diag *d)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	char line[IP_CPULIST_MAX + 128];
	int lineno = 0;

	if (!f)
		return ip_diag_set(d, -errno, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		int ret;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		ret = load_line(h, line);
		if (ret == -ENOMEM)
			return ret;
		if (ret < 0)
			return ip_diag_set(d, ret, "%s:%d: not a state record: %.80s", path, lineno, line);
	}
	return 0;
}
