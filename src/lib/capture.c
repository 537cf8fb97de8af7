// SPDX-License-Identifier: GPL-2.0-or-later
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "irqpilot/capture.h"
#include "irqpilot/macro.h"
#include "irqpilot/state.h"

struct mirror_ctx {
	struct ip_root *root;
	int dirfd;
	int err;
	char path[256];
};

static void mirror_event(void *ctx, const struct ip_root_event *ev)
{
	struct mirror_ctx *m = ctx;
	int ret;

	if (m->err)
		return;
	ret = ip_root_mirror(m->root, ev, m->dirfd);
	if (ret < 0) {
		m->err = ret;
		snprintf(m->path, sizeof(m->path), "%s", ev->path);
	}
}

static int write_text(int dirfd, const char *path, const char *text)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	size_t len = strlen(text), off = 0;

	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t k = write(fd, text + off, len - off);

		if (k < 0)
			return -errno;
		off += k;
	}
	return 0;
}

static int write_counts(int dirfd, const char *path, const struct ip_snapshot *snap, bool submit)
{
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	int ret;

	if (!f)
		return -ENOMEM;
	for (int i = 0; i < snap->storage.nr_devs; i++) {
		const uint64_t *v = submit ? snap->dc[i].submit : snap->dc[i].complete;

		for (int c = 0; v && c < snap->topo.nr_cpus; c++)
			if (cpuset_test(&snap->topo.possible, c))
				fprintf(f, "%s %d %llu\n", snap->storage.devs[i].name, c,
					(unsigned long long)v[c]);
	}
	if (fclose(f) != 0)
		return -ENOMEM;
	ret = write_text(dirfd, path, buf ? buf : "");
	return ret;
}

/* Makes (when missing) and opens directory @name in @at, never through a
 * symlink: mkdirat() does not follow one, and O_NOFOLLOW refuses to open
 * one (ELOOP), so a link planted under any name ends the walk. */
static int open_subdir(int at, const char *name)
{
	int fd;

	if (mkdirat(at, name, 0755) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* A capture goes into a new or empty directory: a second one into the
 * same place rewrote 0000/ over the first one's step (files it read only
 * once stayed) and left 0001/... as they were, which a replay then took
 * as one series, failing as "samples out of order" or mixing two runs. */
static int check_empty(int dirfd, const char *dir, struct ip_diag *d)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dh = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;
	int ret = 0;

	if (!dh) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		return ip_diag_set(d, ret, "%s: %s", dir, strerror(-ret));
	}
	while ((e = readdir(dh)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			ret = ip_diag_set(d, -ENOTEMPTY,
					  "%s is not empty (it holds %s): a capture goes into a new or "
					  "empty directory",
					  dir, e->d_name);
			break;
		}
	closedir(dh);
	return ret;
}

int ip_capture_step(struct ip_root *r, struct ip_sampler *s, int dirfd, const char *dir, int step,
		    struct ip_snapshot *out, struct ip_diag *d)
{
	_cleanup_free_ char *stepdir = ip_asprintf("%s/%04d", dir, step);
	_cleanup_close_ int fd = -1;
	struct mirror_ctx m = { .root = r };
	char name[16], tbuf[32];
	int ret;

	if (!stepdir)
		return -ENOMEM;
	snprintf(name, sizeof(name), "%04d", step);
	fd = open_subdir(dirfd, name);
	if (fd < 0)
		return ip_diag_set(d, fd, "%s: %s", stepdir, strerror(-fd));
	m.dirfd = fd;
	/* Each step must stand alone as a root: read everything again. */
	ip_sampler_invalidate(s);
	ip_root_set_recorder(r, mirror_event, &m);
	ret = ip_sampler_sample(s, out, d);
	ip_root_set_recorder(r, NULL, NULL);
	if (ret < 0)
		return ret;
	if (m.err) {
		ip_snapshot_free(out);
		return ip_diag_set(d, m.err, "%s: cannot record %s: %s", stepdir, m.path, strerror(-m.err));
	}
	if (mkdirat(fd, "irqpilot", 0755) < 0 && errno != EEXIST)
		ret = -errno;
	snprintf(tbuf, sizeof(tbuf), "%llu\n", (unsigned long long)out->time_ns);
	if (ret == 0)
		ret = write_text(fd, "irqpilot/time_ns", tbuf);
	if (ret == 0)
		ret = write_counts(fd, "irqpilot/submit", out, true);
	if (ret == 0)
		ret = write_counts(fd, "irqpilot/complete", out, false);
	if (ret < 0) {
		ip_snapshot_free(out);
		return ip_diag_set(d, ret, "%s/irqpilot: %s", stepdir, strerror(-ret));
	}
	return 0;
}

int ip_capture_run(struct ip_root *r, struct ip_sampler *s, const char *dir, int samples,
		   double interval_s, struct ip_diag *d)
{
	_cleanup_close_ int fd = -1;
	int ret;

	if (samples < 1)
		return ip_diag_set(d, -EINVAL, "--samples must be at least 1");
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return ip_diag_set(d, -errno, "%s: %s", dir, strerror(errno));
	/* Made beforehand in /var/tmp by anyone, a link planted under a name
	 * the capture writes, or on the way to it (0000/proc -> /etc), had root
	 * unlink, create and truncate files anywhere. A directory of our own is
	 * out of anyone else's reach down to its last file, which we made. */
	fd = ip_open_own_dir(dir, "a capture directory", d);
	if (fd < 0)
		return fd;
	ret = check_empty(fd, dir, d);
	if (ret < 0)
		return ret;
	for (int i = 0; i < samples; i++) {
		struct ip_snapshot snap;

		if (i > 0 && interval_s > 0) {
			struct timespec ts = { (time_t)interval_s,
					       (long)((interval_s - (time_t)interval_s) * 1e9) };

			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
		}
		ret = ip_capture_step(r, s, fd, dir, i, &snap, d);
		if (ret < 0)
			return ret;
		ip_snapshot_free(&snap);
	}
	return 0;
}

/* The part of @path below @base ("" when it is @base), or NULL when it is
 * elsewhere: a prefix that ends inside a name ("/var/lib/irqpilotx") is
 * elsewhere. */
static const char *below(const char *base, const char *path)
{
	size_t n = strlen(base);

	while (n > 1 && base[n - 1] == '/')
		n--;
	if (strncmp(path, base, n) != 0 || (path[n] != '/' && path[n] != '\0'))
		return NULL;
	return path + n;
}

int ip_capture_open_below(const char *base, const char *path, int *dirfd, struct ip_diag *d)
{
	_cleanup_free_ char *rest = NULL;
	const char *rel = below(base, path);
	char *save = NULL, *comp;
	int fd, nr = 0;

	*dirfd = -1;
	if (!rel)
		return ip_diag_set(d, -EPERM, "capture directory %s is not below %s, the only place captures go",
				   path, base);
	rest = strdup(rel);
	if (!rest)
		return -ENOMEM;
	/* the directories below are the daemon's own only if @base is */
	fd = ip_open_own_dir(base, "the state directory that captures go below", d);
	if (fd < 0)
		return fd;
	for (comp = strtok_r(rest, "/", &save); comp; comp = strtok_r(NULL, "/", &save), nr++) {
		int next;

		if (!strcmp(comp, "..") || !strcmp(comp, ".")) {
			close(fd);
			return ip_diag_set(d, -EPERM, "capture directory %s: '%s' is not allowed in it", path,
					   comp);
		}
		next = open_subdir(fd, comp);
		close(fd);
		if (next < 0)
			return ip_diag_set(d, next, "capture directory %s: %s: %s", path, comp,
					   next == -ELOOP || next == -ENOTDIR ? "a symlink or not a directory"
									      : strerror(-next));
		fd = next;
	}
	if (!nr) {
		close(fd);
		return ip_diag_set(d, -EINVAL, "capture directory %s: name a directory below %s", path, base);
	}
	nr = check_empty(fd, path, d);
	if (nr < 0) {
		close(fd);
		return nr;
	}
	*dirfd = fd;
	return 0;
}

static bool is_step_name(const char *n)
{
	size_t len = strlen(n);

	if (len < 4)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isdigit((unsigned char)n[i]))
			return false;
	return true;
}

/* Steps in the order they were recorded: by number, not by name, as
 * --samples goes to 100000 and "%04d" makes 10000 longer than 9999 (by
 * name, 10000 would come between 1000 and 1001 and fail as "samples out
 * of order"). Leading zeros do not count; equal numbers fall back to the
 * name, so the order is total. */
static int cmp_step(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t lx, ly;

	while (x[0] == '0' && x[1])
		x++;
	while (y[0] == '0' && y[1])
		y++;
	lx = strlen(x);
	ly = strlen(y);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x, y) ? strcmp(x, y) : strcmp(*(char *const *)a, *(char *const *)b);
}

int ip_replay_steps(const char *dir, char ***steps, size_t *n, struct ip_diag *d)
{
	struct ip_root *r;
	char **names = NULL;
	size_t cnt = 0, keep = 0;
	int ret = ip_root_open(dir, &r);

	if (ret < 0)
		return ip_diag_set(d, ret, "%s: %s", dir, strerror(-ret));
	/* only the step names stay; sorted by number below */
	ret = ip_root_listdir(r, ".", &names, &cnt);
	ip_root_free(r);
	if (ret < 0)
		return ip_diag_set(d, ret, "%s: %s", dir, strerror(-ret));
	for (size_t i = 0; i < cnt; i++) {
		if (is_step_name(names[i]))
			names[keep++] = names[i];
		else
			free(names[i]);
	}
	if (!keep) {
		free(names);
		return ip_diag_set(d, -ENOENT, "%s: no steps (0000/, 0001/, ...) in this replay series", dir);
	}
	qsort(names, keep, sizeof(*names), cmp_step);
	*steps = names;
	*n = keep;
	return 0;
}
