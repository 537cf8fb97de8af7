// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "irqpilot/macro.h"
#include "irqpilot/root.h"
#include "irqpilot/watch.h"

/* One file: its directory below the root and its name there. Where the
 * directory is missing, @wd watches the nearest existing ancestor and
 * @name is the next component on the way (@waiting). */
struct watched {
	char *dir, *file;
	const char *name;
	int wd;
	bool waiting;
};

struct ip_watch {
	struct ip_root *root;
	int fd;
	struct watched *w;
	int n;
	bool paused;
};

/* What changes a file's directory can see: written (in place, or closed
 * after writing), renamed over or away, created, removed, and the
 * directory itself removed or renamed (then the watch is made again). */
#define DIR_EVENTS                                                                                      \
	(IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_DELETE_SELF | \
	 IN_MOVE_SELF | IN_ONLYDIR)

static const char *kernel_fs(long type)
{
	switch (type) {
	case PROC_SUPER_MAGIC:
		return "procfs";
	case SYSFS_MAGIC:
		return "sysfs";
	case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC:
		return "cgroupfs";
	case DEBUGFS_MAGIC:
		return "debugfs";
	case TRACEFS_MAGIC:
		return "tracefs";
	default:
		return NULL;
	}
}

/* Watches @dir (below the root, "" for the root itself). -ENOENT when it
 * does not exist (yet). The directory is opened through the root, so that
 * links in the tree resolve as they do for every read, and watched by its
 * /proc/self/fd name, which is that very directory. */
static int add_dir(struct ip_watch *w, const char *dir, int *wd, struct ip_diag *d)
{
	_cleanup_close_ int dfd = ip_root_open_read(w->root, dir[0] ? dir : ".");
	char self[64];
	struct statfs sf;
	const char *fs;

	if (dfd < 0)
		return dfd == -ENOENT ? -ENOENT : ip_diag_set(d, dfd, "%s: %s", dir, strerror(-dfd));
	if (fstatfs(dfd, &sf) < 0)
		return ip_diag_set(d, -errno, "%s: %s", dir, strerror(errno));
	fs = kernel_fs(sf.f_type);
	if (fs)
		return ip_diag_set(d, -EOPNOTSUPP, "%s is on %s, which tells inotify of no change", dir, fs);
	snprintf(self, sizeof(self), "/proc/self/fd/%d", dfd);
	*wd = inotify_add_watch(w->fd, self, DIR_EVENTS);
	if (*wd < 0)
		return ip_diag_set(d, -errno, "%s: inotify_add_watch: %s", dir, strerror(errno));
	return 0;
}

/* Watches @e's directory, or the nearest ancestor of it that exists. */
static int add_one(struct ip_watch *w, struct watched *e, struct ip_diag *d)
{
	_cleanup_free_ char *dir = strdup(e->dir);
	int ret;

	if (!dir)
		return -ENOMEM;
	e->name = e->file;
	e->waiting = false;
	for (;;) {
		char *slash;

		ret = add_dir(w, dir, &e->wd, d);
		if (ret != -ENOENT)
			return ret;
		if (!dir[0])
			return ip_diag_set(d, -ENOENT, "the root is gone");
		/* wait for the component below the parent to appear */
		slash = strrchr(dir, '/');
		e->name = e->dir + (slash ? (size_t)(slash - dir) + 1 : 0);
		e->waiting = true;
		if (slash)
			*slash = '\0';
		else
			dir[0] = '\0';
	}
}

/* A component of e->dir is only as long as the next '/': @name matches
 * it when it is all of it. */
static bool name_is(const struct watched *e, const char *name)
{
	size_t len = e->waiting ? strcspn(e->name, "/") : strlen(e->name);

	return strlen(name) == len && memcmp(name, e->name, len) == 0;
}

static int add_all(struct ip_watch *w, struct ip_diag *d)
{
	for (int i = 0; i < w->n; i++) {
		int ret = add_one(w, &w->w[i], d);

		if (ret < 0)
			return ret;
	}
	return 0;
}

int ip_watch_open(struct ip_root *r, const char *const *paths, int n, struct ip_watch **out, struct ip_diag *d)
{
	struct ip_watch *w;
	int ret;

	*out = NULL;
	if (ip_root_is_live(r))
		return ip_diag_set(d, -EOPNOTSUPP, "the live root's /proc and /sys tell inotify of no change");
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->root = r;
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	w->w = calloc(n, sizeof(*w->w));
	if (w->fd < 0 || !w->w) {
		ret = w->fd < 0 ? ip_diag_set(d, -errno, "inotify_init1: %s", strerror(errno)) : -ENOMEM;
		ip_watch_free(w);
		return ret;
	}
	for (int i = 0; i < n; i++) {
		const char *p = paths[i] + (paths[i][0] == '/');
		const char *slash = strrchr(p, '/');
		struct watched *e = &w->w[w->n++];

		e->dir = slash ? strndup(p, slash - p) : strdup("");
		e->file = strdup(slash ? slash + 1 : p);
		if (!e->dir || !e->file) {
			ip_watch_free(w);
			return -ENOMEM;
		}
	}
	ret = add_all(w, d);
	if (ret < 0) {
		ip_watch_free(w);
		return ret;
	}
	*out = w;
	return 0;
}

void ip_watch_free(struct ip_watch *w)
{
	if (!w)
		return;
	for (int i = 0; i < w->n; i++) {
		free(w->w[i].dir);
		free(w->w[i].file);
	}
	free(w->w);
	if (w->fd >= 0)
		close(w->fd);
	free(w);
}

int ip_watch_fd(const struct ip_watch *w)
{
	return w->fd;
}

/* What one event means: 1 a watched file changed, 2 a directory on the
 * way did (the watches are made again), 0 nothing of ours. */
static int event_kind(const struct ip_watch *w, const struct inotify_event *ev)
{
	int kind = 0;

	if (ev->mask & IN_Q_OVERFLOW)
		return 2;
	for (int i = 0; i < w->n; i++) {
		const struct watched *e = &w->w[i];

		if (e->wd != ev->wd)
			continue;
		if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT))
			return 2;
		if (ev->len && name_is(e, ev->name))
			kind = e->waiting ? 2 : (kind ? kind : 1);
	}
	return kind;
}

/* Read the queue to EAGAIN; with @changed, the strongest event_kind()
 * of what was read. 0, or -errno (-EIO: read nothing, not even EAGAIN). */
static int drain(struct ip_watch *w, int *changed)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		ssize_t len = read(w->fd, buf, sizeof(buf));

		if (len < 0 && errno == EINTR)
			continue;
		if (len < 0 && errno == EAGAIN)
			return 0;
		if (len <= 0)
			return len < 0 ? -errno : -EIO;
		for (char *p = buf; changed && p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			int kind = event_kind(w, ev);

			*changed = kind > *changed ? kind : *changed;
			p += sizeof(*ev) + ev->len;
		}
	}
}

int ip_watch_changed(struct ip_watch *w, struct ip_diag *d)
{
	int changed = 0, ret;

	if (w->paused)
		return 0;
	ret = drain(w, &changed);
	if (ret < 0)
		return ip_diag_set(d, ret, "inotify: %s",
				   ret == -EIO ? "read nothing" : strerror(-ret));
	if (changed == 2) {
		/* a watched directory went or a missing one came: watch
		 * each file's directory again (the same inode keeps its wd) */
		ret = add_all(w, d);
		if (ret < 0)
			return ret;
	}
	return changed ? 1 : 0;
}

void ip_watch_pause(struct ip_watch *w)
{
	if (w->paused)
		return;
	/* files of one directory share its wd: a second removal is EINVAL */
	for (int i = 0; i < w->n; i++)
		if (w->w[i].wd >= 0)
			(void)inotify_rm_watch(w->fd, w->w[i].wd);
	for (int i = 0; i < w->n; i++)
		w->w[i].wd = -1;
	/* what was queued, and the IN_IGNORED of each removal: no one's
	 * news; a read error shows again at the resumed watch's first read */
	(void)drain(w, NULL);
	w->paused = true;
}

int ip_watch_resume(struct ip_watch *w, struct ip_diag *d)
{
	int ret;

	if (!w->paused)
		return 0;
	ret = add_all(w, d);
	if (ret < 0)
		return ret;
	w->paused = false;
	return 1;
}

bool ip_watch_written_since(struct ip_root *r, const char *const *paths, int n, int64_t since_ns)
{
	for (int i = 0; i < n; i++) {
		struct stat st;
		int ret = ip_root_stat(r, paths[i], &st);

		if (ret == -ENOENT)
			continue;
		if (ret < 0 || (int64_t)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec >=
				       since_ns - IP_WATCH_CTIME_SLACK_NS)
			return true;
	}
	return false;
}
