// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-floor: the least a daemon that runs once per interval can cost.
 * It wakes on a timerfd every --interval seconds, through epoll as both
 * daemons wait, and does nothing else: no file read, no allocation. Its
 * CPU per interval, measured by bench-steady beside the daemons in the
 * same run, is the wakeup itself (timer interrupt, scheduling in and out,
 * two system calls) on this machine, under this load; a ratio target
 * below floor / irqbalance cannot be met by waking once per interval.
 *
 * With --replay FILE it also makes, at each wakeup, the file system calls
 * of one recorded daemon cycle (run.sh takes them from strace), and
 * nothing between them: no parsing, no decision. Lines of FILE:
 *
 *   pread PATH COUNT OFFSET   pread() of the file, opened once at start
 *   fstat PATH                fstat() of it, opened once at start
 *   statat DIR NAME           fstatat() of NAME below DIR, opened once
 *
 * as the daemon keeps its files and its root open. A file the daemon
 * opened again in that cycle is still read on its first inode here: the
 * same size, the same cost.
 * Its CPU per interval is what the kernel's side of that cycle costs
 * here; what a daemon spends above it is its own code.
 *
 * Standalone: only libc.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

enum { OP_PREAD, OP_FSTAT, OP_STATAT };

struct op {
	int kind;
	int fd;
	char *name; /* OP_STATAT */
	size_t count;
	off_t offset;
};

/* A file the replay opened, once, as irqpilotd keeps its files open. */
struct opened {
	char *path;
	int fd;
};

struct replay {
	struct op *ops;
	int nr;
	struct opened *files;
	int nr_files;
	char *buf;
	size_t buf_size;
};

static int path_fd(struct replay *r, const char *path)
{
	struct opened *f;
	char *dup;
	int fd;

	for (int i = 0; i < r->nr_files; i++)
		if (strcmp(r->files[i].path, path) == 0)
			return r->files[i].fd;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	f = realloc(r->files, (r->nr_files + 1) * sizeof(*f));
	if (f)
		r->files = f;
	dup = f ? strdup(path) : NULL;
	if (!dup) {
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	r->files[r->nr_files++] = (struct opened){ dup, fd };
	return fd;
}

/* One line of FILE into @o; -1 with errno, or with errno 0 for a bad line. */
static int parse_op(struct replay *r, char *line, struct op *o)
{
	char *kind = strtok(line, " \n"), *path = strtok(NULL, " \n"), *a = strtok(NULL, " \n");
	char *b = strtok(NULL, " \n");

	errno = 0;
	memset(o, 0, sizeof(*o));
	if (!kind || !path)
		return -1;
	if (strcmp(kind, "pread") == 0 && a && b) {
		o->kind = OP_PREAD;
		o->count = strtoul(a, NULL, 10);
		o->offset = strtoll(b, NULL, 10);
		if (o->count > r->buf_size)
			r->buf_size = o->count;
	} else if (strcmp(kind, "fstat") == 0 && !a) {
		o->kind = OP_FSTAT;
	} else if (strcmp(kind, "statat") == 0 && a && !b) {
		o->kind = OP_STATAT;
		if (!(o->name = strdup(a)))
			return -1;
	} else {
		return -1;
	}
	o->fd = path_fd(r, path);
	return o->fd < 0 ? -1 : 0;
}

static int load_replay(struct replay *r, const char *file)
{
	char line[8192];
	FILE *f = fopen(file, "re");
	int lineno = 0;

	if (!f) {
		fprintf(stderr, "bench-floor: %s: %s\n", file, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		struct op *ops = realloc(r->ops, (r->nr + 1) * sizeof(*ops));

		lineno++;
		if (!ops) {
			fclose(f);
			return -1;
		}
		r->ops = ops;
		if (parse_op(r, line, &r->ops[r->nr]) < 0) {
			fprintf(stderr, "bench-floor: %s line %d: %s\n", file, lineno,
				errno ? strerror(errno) : "not 'pread PATH COUNT OFFSET', 'fstat PATH' or 'statat DIR NAME'");
			fclose(f);
			return -1;
		}
		r->nr++;
	}
	fclose(f);
	r->buf = malloc(r->buf_size ? r->buf_size : 1);
	return r->buf ? 0 : -1;
}

static void run_replay(const struct replay *r)
{
	struct stat st;

	for (int i = 0; i < r->nr; i++) {
		const struct op *o = &r->ops[i];

		if (o->kind == OP_FSTAT)
			(void)!fstat(o->fd, &st);
		else if (o->kind == OP_STATAT)
			(void)!fstatat(o->fd, o->name, &st, 0);
		else
			(void)!pread(o->fd, r->buf, o->count, o->offset);
	}
}

int main(int argc, char **argv)
{
	struct itimerspec its = { 0 };
	struct epoll_event ev = { .events = EPOLLIN };
	struct replay r = { 0 };
	double interval = 0;
	const char *replay = NULL;
	int tfd, efd;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--interval") == 0)
			interval = atof(argv[i + 1]);
		else if (strcmp(argv[i], "--replay") == 0)
			replay = argv[i + 1];
		else
			interval = -1;
	}
	if (interval <= 0 || argc % 2 == 0) {
		fputs("usage: bench-floor --interval SECONDS [--replay FILE]\n", stderr);
		return 2;
	}
	if (replay && load_replay(&r, replay) < 0)
		return 1;
	its.it_interval.tv_sec = (time_t)interval;
	its.it_interval.tv_nsec = (long)((interval - (double)(time_t)interval) * 1e9);
	its.it_value = its.it_interval;
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	efd = epoll_create1(EPOLL_CLOEXEC);
	if (tfd < 0 || efd < 0 || epoll_ctl(efd, EPOLL_CTL_ADD, tfd, &ev) < 0 || timerfd_settime(tfd, 0, &its, NULL) < 0) {
		fprintf(stderr, "bench-floor: %s\n", strerror(errno));
		return 1;
	}
	for (;;) {
		uint64_t n;

		if (epoll_wait(efd, &ev, 1, -1) < 0 && errno != EINTR)
			return 1;
		if (read(tfd, &n, sizeof(n)) < 0 && errno != EAGAIN)
			return 1;
		run_replay(&r);
	}
}
