// SPDX-License-Identifier: GPL-2.0-or-later
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <linux/openat2.h>
#include <sys/resource.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "irqpilot/macro.h"
#include "irqpilot/root.h"

/* A file read every cycle, kept open (ip_root_read_again()). */
struct kept {
	char *path;
	int fd;
	/* Below a tree: the inotify watch that says the file was replaced or
	 * removed (ip_root_notice_replaced()); -1: fstat() before each read. */
	int wd;
	bool reg; /* a regular file: a read shorter than asked is its end */
	dev_t dev; /* of the file when opened, for ip_root_lookup_again() */
	ino_t ino;
};

struct ip_root {
	int fd;
	char *dir;
	bool live;
	bool confined; /* links resolve inside (ip_root_open_confined()) */
	bool noatime_denied; /* O_NOATIME gave EPERM once: not asked again */
	int ino_fd;	     /* the kept files' watches; -1 before the first notice */
	bool watch_failed;   /* inotify_init1() failed: fstat() before each read */
	ip_root_recorder rec;
	void *rec_ctx;
	struct kept *kept; /* sorted by path */
	int nr_kept, cap_kept, max_kept;
	char **absent; /* ip_root_read_optional()'s files found missing */
	int nr_absent;
};

#define MAX_LINK_HOPS 40
/* ip_root_read_again() takes at most an eighth of RLIMIT_NOFILE: the
 * sampler's kept vector files take a quarter (sample.c, FD_SHARE), the
 * perf counters and clients the rest. */
#define KEPT_SHARE 8
#define KEPT_MAX 4096

char *ip_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

const char *ip_join(char *buf, size_t size, const char *const *v, size_t n, const char *sep,
		    const char *last, const char *prefix)
{
	size_t k = 0;

	if (!size)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < n && k < size; i++) {
		int w = snprintf(buf + k, size - k, "%s%s%s", !i ? "" : i + 1 == n ? last : sep, prefix,
				 v[i]);

		if (w < 0)
			break;
		k += (size_t)w;
	}
	return buf;
}

void ip_strv_free(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int root_open(const char *dir, int nofollow, struct ip_root **out)
{
	_cleanup_free_ struct ip_root *r = calloc(1, sizeof(*r));
	char real[PATH_MAX];

	if (!r)
		return -ENOMEM;
	r->ino_fd = -1;
	r->fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC | nofollow);
	if (r->fd < 0)
		return -errno;
	if (!realpath(dir, real))
		snprintf(real, sizeof(real), "%s", dir);
	r->dir = strdup(real);
	if (!r->dir) {
		close(r->fd);
		return -ENOMEM;
	}
	r->live = strcmp(real, "/") == 0;
	{
		struct rlimit rl;
		rlim_t n = 1024;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
			n = rl.rlim_cur;
		n /= KEPT_SHARE;
		r->max_kept = n > KEPT_MAX ? KEPT_MAX : (int)n;
	}
	*out = TAKE_PTR(r);
	return 0;
}

int ip_root_open(const char *dir, struct ip_root **out)
{
	return root_open(dir, 0, out);
}

/* A step that is itself a link (to "/", which made it the live root, or
 * out of the capture) would be read where it points: it is never
 * followed, and fails as ENOTDIR. */
int ip_root_open_confined(const char *dir, struct ip_root **out)
{
	int ret = root_open(dir, O_NOFOLLOW, out);

	if (ret == 0)
		(*out)->confined = true;
	return ret;
}

static void kept_forget_all(struct ip_root *r)
{
	for (int i = 0; i < r->nr_kept; i++) {
		close(r->kept[i].fd);
		free(r->kept[i].path);
	}
	r->nr_kept = 0;
}

void ip_root_free(struct ip_root *r)
{
	if (!r)
		return;
	kept_forget_all(r);
	free(r->kept);
	if (r->ino_fd >= 0)
		close(r->ino_fd);
	ip_root_recheck_absent(r);
	if (r->fd >= 0)
		close(r->fd);
	free(r->dir);
	free(r);
}

const char *ip_root_dir(const struct ip_root *r)
{
	return r->dir;
}

bool ip_root_is_live(const struct ip_root *r)
{
	return r->live;
}

bool ip_root_is_confined(const struct ip_root *r)
{
	return r->confined;
}

void ip_root_set_recorder(struct ip_root *r, ip_root_recorder fn, void *ctx)
{
	r->rec = fn;
	r->rec_ctx = ctx;
}

bool ip_root_recording(const struct ip_root *r)
{
	return r->rec != NULL;
}

static void record(struct ip_root *r, enum ip_root_event_kind kind, const char *path,
		   const char *data, size_t len, mode_t mode)
{
	struct ip_root_event ev = { kind, path, data, len, mode };

	if (r->rec)
		r->rec(r->rec_ctx, &ev);
}

/* Strip leading slashes and "./" so that every path is relative to the root. */
static const char *rel(const char *path)
{
	while (*path == '/' || (path[0] == '.' && path[1] == '/'))
		path += (*path == '/') ? 1 : 2;
	return *path ? path : ".";
}

/* Read a small regular file that stands for a symlink in a flattened tree. */
static int read_flat_link(int dirfd, const char *path, char **target)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	char buf[PATH_MAX];
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	/* A link target is one non-empty line without NULs. */
	if (n == 0 || memchr(buf, '\n', n) || strlen(buf) != (size_t)n)
		return -ENOTDIR;
	*target = strdup(buf);
	return *target ? 0 : -ENOMEM;
}

/* Split the first component off @todo in place; *rest is what follows it
 * (NULL when nothing does). NULL when @todo holds no component. */
static char *pop_component(char *todo, char **rest)
{
	char *comp = todo, *slash;

	while (*comp == '/')
		comp++;
	if (!*comp)
		return NULL;
	slash = strchr(comp, '/');
	*rest = slash ? slash + 1 : NULL;
	if (slash)
		*slash = '\0';
	while (*rest && **rest == '/')
		(*rest)++;
	return comp;
}

/* ".." never climbs above the root: at the top it stays there. */
static void drop_last_component(char *done)
{
	char *p = strrchr(done, '/');

	if (p)
		*p = '\0';
	else
		done[0] = '\0';
}

static int read_link_target(struct ip_root *r, const char *cand, const struct stat *st, char **target)
{
	char buf[PATH_MAX];
	ssize_t n;

	if (!S_ISLNK(st->st_mode))
		return read_flat_link(r->fd, cand, target);
	n = readlinkat(r->fd, cand, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	*target = strdup(buf);
	return *target ? 0 : -ENOMEM;
}

/* A capture must hold every link a lookup went through, or the replayed
 * tree resolves differently. */
static int note_link(struct ip_root *r, const char *cand, const char *target, int mirror_fd)
{
	struct ip_root_event ev = { IP_ROOT_EV_LINK, cand, target, strlen(target), 0 };
	int ret;

	if (mirror_fd < 0) {
		record(r, IP_ROOT_EV_LINK, cand, target, strlen(target), 0);
		return 0;
	}
	ret = ip_root_mirror(NULL, &ev, mirror_fd);
	return ret < 0 && ret != -EEXIST ? ret : 0;
}

/* The link @cand is replaced by its target: what is left to walk becomes
 * the target followed by @rest, from the top if the target is absolute. */
static int follow_link(struct ip_root *r, const char *cand, const struct stat *st, const char *rest,
		       int mirror_fd, char *done, char **todo)
{
	_cleanup_free_ char *target = NULL;
	char *ntodo;
	int ret = read_link_target(r, cand, st, &target);

	if (ret < 0)
		return ret;
	ret = note_link(r, cand, target, mirror_fd);
	if (ret < 0)
		return ret;
	if (target[0] == '/')
		done[0] = '\0';
	ntodo = ip_asprintf("%s/%s", target, rest ? rest : "");
	if (!ntodo)
		return -ENOMEM;
	free(*todo);
	*todo = ntodo;
	return 0;
}

/*
 * Walk @path one component at a time below the root, following real and
 * flattened links. If @mirror_fd >= 0, every directory and link met is
 * recreated below it. On success *out is the resolved relative path.
 */
static int walk(struct ip_root *r, const char *path, bool follow_last, int mirror_fd, char **out)
{
	_cleanup_free_ char *done = strdup("");
	_cleanup_free_ char *todo = strdup(rel(path));
	int hops = 0;

	if (!done || !todo)
		return -ENOMEM;
	for (;;) {
		char *comp, *cand, *rest = NULL;
		struct stat st;
		bool last;
		int ret;

		comp = pop_component(todo, &rest);
		if (!comp)
			break;
		last = !rest || !*rest;
		if (strcmp(comp, ".") == 0)
			goto next;
		if (strcmp(comp, "..") == 0) {
			drop_last_component(done);
			goto next;
		}
		cand = *done ? ip_asprintf("%s/%s", done, comp) : strdup(comp);
		if (!cand)
			return -ENOMEM;
		if (fstatat(r->fd, cand, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			ret = -errno;
			free(cand);
			return ret;
		}
		if (S_ISLNK(st.st_mode) || (S_ISREG(st.st_mode) && !last)) {
			if (last && !follow_last) {
				free(done);
				done = cand;
				break;
			}
			if (++hops > MAX_LINK_HOPS) {
				free(cand);
				return -ELOOP;
			}
			ret = follow_link(r, cand, &st, rest, mirror_fd, done, &todo);
			free(cand);
			if (ret < 0)
				return ret;
			continue;
		}
		free(done);
		done = cand;
next:
		if (!rest)
			break;
		memmove(todo, rest, strlen(rest) + 1);
	}
	*out = *done ? TAKE_PTR(done) : strdup(".");
	return *out ? 0 : -ENOMEM;
}

int ip_root_resolve(struct ip_root *r, const char *path, char **out)
{
	return walk(r, path, true, -1, out);
}

/* A root's irqpilot/ is a fixture's: the recorded clock and counts of a
 * capture or a replay step (capture.h). The live machine has none, and a
 * stray /irqpilot/submit must neither stand in for the kernel's counts nor
 * cost a failed open every cycle: on the live root it is not looked for. */
static bool fixture_only(const struct ip_root *r, const char *path)
{
	static const char dir[] = "irqpilot/";

	return r->live && strncmp(rel(path), dir, sizeof(dir) - 1) == 0;
}

/* @path opened after our own walk(), which keeps every link inside the
 * root; the last component is opened without following, as walk() already
 * followed it. -1 and errno on failure, like openat(). */
static int open_walked(struct ip_root *r, const char *path, int flags)
{
	_cleanup_free_ char *resolved = NULL;
	int ret = walk(r, path, true, -1, &resolved);

	if (ret < 0) {
		errno = -ret;
		return -1;
	}
	return openat(r->fd, resolved, flags | O_NOFOLLOW);
}

/* A capture holds regular files and directories only. A FIFO or a
 * device planted in one would never end a read (/dev/zero), or block it
 * for good (a FIFO without a writer, a terminal): @fd is refused as
 * ENXIO, "no such device", when it is one. */
static int only_files(int fd)
{
	struct stat st;

	if (fd < 0 || (fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))))
		return fd;
	close(fd);
	errno = ENXIO;
	return -1;
}

/* openat() below the root. A confined root (a replay step: a capture
 * someone sent in) is untrusted: the kernel's openat() would follow a
 * link to "../../../etc/shadow" or "/etc/shadow" out of it and read the
 * host's file. RESOLVE_IN_ROOT resolves links the way walk() does: an
 * absolute target from the tree's top, ".." stopping there. Without
 * openat2() (before 5.6, or a seccomp filter that says ENOSYS), or on a
 * rename race (EAGAIN), walk() resolves instead. A --root tree is the
 * operator's and may link to the kernel's /proc (ip_watch_open()): it is
 * not confined. -1 and errno on failure, like openat(). */
static int open_in_root(struct ip_root *r, const char *path, int flags)
{
	struct open_how how = { .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	int fd;

	if (!r->confined)
		return openat(r->fd, rel(path), flags);
	/* without blocking: a FIFO opened to read waits for a writer */
	if (!(flags & O_PATH))
		flags |= O_NONBLOCK;
	how.flags = (unsigned)flags;
	fd = (int)syscall(SYS_openat2, r->fd, rel(path), &how, sizeof(how));
	if (fd < 0 && (errno == ENOSYS || errno == EAGAIN))
		fd = open_walked(r, path, flags);
	return only_files(fd);
}

/* Open through the kernel first; fall back to our own walk only for
 * flattened links, which the kernel reports as ENOTDIR. */
static int root_openat(struct ip_root *r, const char *path, int flags)
{
	int fd;

	if (fixture_only(r, path))
		return -ENOENT;
	/* Below a tree, a file read after its writer changed it had its atime
	 * written back (relatime): touch_atime() and __mark_inode_dirty() were
	 * 2.6% of a steady cycle at 64 CPUs on tmpfs, a cost the kernel's own
	 * files do not have. Only the owner (or CAP_FOWNER) may ask; the
	 * others read as before. */
	if (!r->live && flags == O_RDONLY && !r->noatime_denied)
		flags |= O_NOATIME;
	fd = open_in_root(r, path, flags | O_CLOEXEC);
	if (fd < 0 && errno == EPERM && (flags & O_NOATIME)) {
		r->noatime_denied = true;
		flags &= ~O_NOATIME;
		fd = open_in_root(r, path, flags | O_CLOEXEC);
	}
	if (fd >= 0 || errno != ENOTDIR)
		return fd >= 0 ? fd : -errno;
	fd = open_walked(r, path, flags | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

/* The effective uid of @pid, or -1 when it cannot be read. */
static uid_t euid_of(int pid)
{
	char path[64], line[256];
	unsigned int real, eff;
	uid_t uid = (uid_t)-1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %u %u", &real, &eff) == 2) {
			uid = eff;
			break;
		}
	if (f)
		fclose(f);
	return uid;
}

/*
 * Whether every flock on @fd's file, as /proc/locks shows them, is held by
 * a process neither of our euid nor root's: not an irqpilotd that writes
 * these IRQs. proc/irq is world-readable, so anyone may open and flock it:
 * a user who did kept the service from starting (exit 3, not restarted),
 * its ExecStopPost --restore from putting the originals back, and irqctl
 * dry-run off from taking effect. A holder that cannot be told (another
 * PID namespace, gone, unreadable) counts as an irqpilotd.
 */
static bool held_by_others_only(int fd)
{
	unsigned int maj, min;
	unsigned long ino;
	char line[256], kind[16];
	bool others = false;
	struct stat st;
	FILE *f;
	int pid;

	if (fstat(fd, &st) < 0 || !(f = fopen("/proc/locks", "re")))
		return false;
	while (fgets(line, sizeof(line), f)) {
		uid_t uid;

		/* "N: -> FLOCK ...": one waiting, which holds nothing */
		if (strstr(line, "->") ||
		    sscanf(line, "%*d: %15s %*s %*s %d %x:%x:%lu", kind, &pid, &maj, &min, &ino) != 5 ||
		    strcmp(kind, "FLOCK") != 0 || ino != st.st_ino || maj != major(st.st_dev) ||
		    min != minor(st.st_dev))
			continue;
		uid = pid > 0 ? euid_of(pid) : (uid_t)-1;
		if (uid == (uid_t)-1 || uid == 0 || uid == geteuid()) {
			others = false;
			break;
		}
		others = true;
	}
	fclose(f);
	return others;
}

int ip_root_lock_irqs(struct ip_root *r, int *fd)
{
	int ret = root_openat(r, "proc/irq", O_RDONLY | O_DIRECTORY);

	*fd = -1;
	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	if (flock(ret, LOCK_EX | LOCK_NB) < 0) {
		int err = errno;

		if (err == EWOULDBLOCK && held_by_others_only(ret))
			err = 0;
		close(ret);
		return err ? -err : 1;
	}
	*fd = ret;
	return 0;
}

/* Big enough for any single-value attribute: sysfs shows at most a page. */
#define ATTR_BUF 8192

/* Room for at least 4 KiB more of a file being read into @buf (@n bytes
 * so far, @cap allocated), doubling, capped at IP_ROOT_READ_MAX: a file
 * that would pass the cap is -EFBIG, not silently cut. */
static int grow_read_buf(char **buf, size_t *cap, size_t n)
{
	size_t ncap = *cap ? *cap * 2 : 8192;
	char *nb;

	if (ncap > IP_ROOT_READ_MAX + 1)
		ncap = IP_ROOT_READ_MAX + 1;
	if (ncap <= n + 1)
		return -EFBIG;
	nb = realloc(*buf, ncap);
	if (!nb)
		return -ENOMEM;
	*buf = nb;
	*cap = ncap;
	return 0;
}

/* The whole of @fd from offset 0, to EOF: @attr (root_read()), a first
 * read shorter than asked is EOF; so is reaching @size (-1: not
 * known), a regular file's size just read by fstat. Read onto the stack
 * first and copied to a buffer of its own size: nearly every file read
 * each cycle is a few bytes, and an 8 KiB heap buffer for each was most
 * of the cycle's malloc work (it is past the per-thread cache's sizes). */
static int pread_all(int fd, bool attr, off_t size, char **out, size_t *len)
{
	char small[ATTR_BUF], *buf = small;
	_cleanup_free_ char *heap = NULL;
	size_t cap = sizeof(small), n = 0;

	for (;;) {
		ssize_t k;

		if (cap - n < (buf == small ? 2u : 4096u)) {
			int ret = grow_read_buf(&heap, &cap, n);

			if (ret < 0)
				return ret;
			if (buf == small)
				memcpy(heap, small, n);
			buf = heap;
		}
		k = pread(fd, buf + n, cap - n - 1, (off_t)n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		n += k;
		if ((attr && n < cap - 1) || (off_t)n == size)
			break;
	}
	if (buf == small) {
		heap = malloc(n + 1);
		if (!heap)
			return -ENOMEM;
		memcpy(heap, small, n);
	}
	heap[n] = '\0';
	if (len)
		*len = n;
	*out = TAKE_PTR(heap);
	return 0;
}

/*
 * @attr: a single-value file (kernfs, single_open seq_file), produced
 * whole on the first read, so a read shorter than asked is EOF; small
 * machines read dozens of them a cycle, and the read that only returns 0
 * was a third of it. Iterating seq_files (/proc/interrupts, diskstats)
 * may return less than asked before their end, so they are read to EOF.
 * pread_all() does both: from offset 0 of a new fd it is read().
 */
static int root_read(struct ip_root *r, const char *path, bool attr, char **out, size_t *len)
{
	_cleanup_close_ int fd = root_openat(r, path, O_RDONLY);
	mode_t mode = 0;
	size_t n;
	int ret;

	if (fd < 0)
		return fd;
	/* Only a capture keeps the mode; read() of a directory fails with
	 * EISDIR just as well. */
	if (r->rec) {
		struct stat st;

		if (fstat(fd, &st) < 0)
			return -errno;
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		mode = st.st_mode & 07777;
	}
	ret = pread_all(fd, attr, -1, out, &n);
	if (ret < 0)
		return ret;
	record(r, IP_ROOT_EV_READ, rel(path), *out, n, mode);
	if (len)
		*len = n;
	return 0;
}

int ip_root_open_read(struct ip_root *r, const char *path)
{
	return root_openat(r, path, O_RDONLY);
}

int ip_root_read(struct ip_root *r, const char *path, char **out, size_t *len)
{
	return root_read(r, path, false, out, len);
}

int ip_root_read_attr(struct ip_root *r, const char *path, char **out, size_t *len)
{
	return root_read(r, path, true, out, len);
}

/* @path's entry in r->kept, or where it would go (*found false). */
static int kept_pos(const struct ip_root *r, const char *path, bool *found)
{
	int lo = 0, hi = r->nr_kept;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2, c = strcmp(r->kept[mid].path, path);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static void kept_drop(struct ip_root *r, int i)
{
	int wd = r->kept[i].wd, users = 0;

	for (int j = 0; wd >= 0 && j < r->nr_kept; j++)
		users += r->kept[j].wd == wd;
	/* a file kept by two names (a link) is one inode, one watch */
	if (users == 1)
		(void)inotify_rm_watch(r->ino_fd, wd);
	close(r->kept[i].fd);
	free(r->kept[i].path);
	memmove(&r->kept[i], &r->kept[i + 1], sizeof(*r->kept) * (r->nr_kept - i - 1));
	r->nr_kept--;
}

/*
 * The watch of kept @fd's inode, -1 without one (the live root, no
 * notice asked yet, out of watches). Through its /proc/self/fd link: the
 * inode read, not whatever the name leads to by now. IN_ATTRIB comes with
 * the link count's change when the file is removed or renamed over
 * (fsnotify_link_count(), fs/namei.c vfs_unlink() and vfs_rename()); a
 * writer's in-place rewrite gives IN_MODIFY only, which is not asked for.
 */
static int watch_kept(struct ip_root *r, int fd)
{
	struct stat st;
	char link[32];
	int wd;

	if (r->ino_fd < 0)
		return -1;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	wd = inotify_add_watch(r->ino_fd, link, IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF);
	if (wd < 0)
		return -1;
	/* Renamed over or removed before the watch began (between the read by
	 * name and here, or since the last fstat() of a file kept before the
	 * first notice): its IN_ATTRIB is past and none comes again, and the
	 * old text would be read for good. Unwatched, the next read's fstat()
	 * finds no name and reads the file by it. */
	if (fstat(fd, &st) < 0 || st.st_nlink == 0) {
		(void)inotify_rm_watch(r->ino_fd, wd);
		return -1;
	}
	return wd;
}

/* Keeps @fd (just read whole by name) for @path at @i; quietly not when
 * the share of fds is used up or memory is short. */
static void kept_add(struct ip_root *r, int i, const char *path, int fd)
{
	struct stat st;
	struct kept *k;
	char *copy;

	if (r->nr_kept >= r->max_kept || fstat(fd, &st) < 0)
		goto no;
	if (r->nr_kept == r->cap_kept) {
		int ncap = r->cap_kept ? r->cap_kept * 2 : 16;
		struct kept *n = realloc(r->kept, sizeof(*n) * ncap);

		if (!n)
			goto no;
		r->kept = n;
		r->cap_kept = ncap;
	}
	copy = strdup(path);
	if (!copy)
		goto no;
	k = &r->kept[i];
	memmove(k + 1, k, sizeof(*k) * (r->nr_kept - i));
	k->path = copy;
	k->fd = fd;
	k->dev = st.st_dev;
	k->ino = st.st_ino;
	/* procfs shows its seq_files as empty regular files: not these */
	k->reg = !r->live && S_ISREG(st.st_mode) && st.st_size > 0;
	k->wd = watch_kept(r, fd);
	r->nr_kept++;
	return;
no:
	close(fd);
}

/* Drops the kept files whose watch @wd fired (or was lost): read by name
 * next time. The last of them takes the watch away. */
static void kept_drop_watched(struct ip_root *r, int wd)
{
	for (int i = r->nr_kept - 1; i >= 0; i--)
		if (r->kept[i].wd == wd)
			kept_drop(r, i);
}

/* The first notice: the watches start, for the files kept so far too. */
static int start_watches(struct ip_root *r)
{
	r->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (r->ino_fd < 0)
		return -errno;
	for (int i = 0; i < r->nr_kept; i++)
		r->kept[i].wd = watch_kept(r, r->kept[i].fd);
	return 0;
}

void ip_root_notice_replaced(struct ip_root *r)
{
	union {
		struct inotify_event ev;
		char b[4096];
	} buf;
	ssize_t n;

	if (r->live || r->rec)
		return;
	if (r->ino_fd < 0) {
		if (!r->watch_failed && start_watches(r) < 0)
			r->watch_failed = true;
		return;
	}
	while ((n = read(r->ino_fd, buf.b, sizeof(buf.b))) > 0)
		for (ssize_t off = 0; off + (ssize_t)sizeof(struct inotify_event) <= n;) {
			const struct inotify_event *ev = (const void *)(buf.b + off);

			if (ev->mask & IN_Q_OVERFLOW) {
				/* events lost: every file by name, watched anew */
				kept_forget_all(r);
				close(r->ino_fd);
				r->ino_fd = -1;
				return;
			}
			kept_drop_watched(r, ev->wd);
			off += (ssize_t)(sizeof(*ev) + ev->len);
		}
}

void ip_root_lookup_again(struct ip_root *r)
{
	ip_root_recheck_absent(r);
	if (r->live)
		return;
	/* a lookup each, not a close and an open: the idle minute's full
	 * cycle pays it for every kept file */
	for (int i = r->nr_kept - 1; i >= 0; i--)
		if (!ip_root_names(r, r->kept[i].path, r->kept[i].dev, r->kept[i].ino))
			kept_drop(r, i);
}

bool ip_root_names(struct ip_root *r, const char *path, dev_t dev, ino_t ino)
{
	struct stat st;

	/* in a confined root, resolved inside it (ip_root_stat()) */
	if (r->confined)
		return ip_root_stat(r, path, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
	return fstatat(r->fd, rel(path), &st, 0) == 0 && st.st_dev == dev && st.st_ino == ino;
}

int ip_root_read_again(struct ip_root *r, const char *path, bool attr, char **out, size_t *len)
{
	off_t size = -1;
	bool found;
	int i, fd, ret;

	if (r->rec)
		return root_read(r, path, attr, out, len);
	i = kept_pos(r, path, &found);
	if (found && !r->live && r->kept[i].wd < 0) {
		struct stat st;

		/* A fixture may rename a new file over the kept one or remove
		 * it: the kept inode has no name left then. fstat() of the fd,
		 * not a lookup of the name, which cost the cycle of a tree
		 * with many kept files a quarter of its time. */
		if (fstat(r->kept[i].fd, &st) < 0 || st.st_nlink == 0) {
			kept_drop(r, i);
			found = false;
		} else if (S_ISREG(st.st_mode) && st.st_size > 0) {
			size = st.st_size;
		}
	}
	if (found) {
		ret = pread_all(r->kept[i].fd, attr || r->kept[i].reg, size, out, len);
		if (ret != -ESRCH && ret != -ENODEV && ret != -EIO)
			return ret;
		/* gone (a task, a kernfs node): by name once more */
		kept_drop(r, i);
	}
	fd = root_openat(r, path, O_RDONLY);
	if (fd < 0)
		return fd;
	ret = pread_all(fd, attr, -1, out, len);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	kept_add(r, i, path, fd);
	return 0;
}

static bool is_absent(const struct ip_root *r, const char *path)
{
	for (int i = 0; i < r->nr_absent; i++)
		if (strcmp(r->absent[i], path) == 0)
			return true;
	return false;
}

int ip_root_read_optional(struct ip_root *r, const char *path, bool attr, char **out, size_t *len)
{
	int ret;
	char **n;

	/* a capture holds what each read found, so it asks each time */
	if (r->rec)
		return ip_root_read_again(r, path, attr, out, len);
	if (is_absent(r, path))
		return -ENOENT;
	ret = ip_root_read_again(r, path, attr, out, len);
	if (ret != -ENOENT)
		return ret;
	/* not remembered when memory is short: asked again next time */
	n = realloc(r->absent, sizeof(*n) * (r->nr_absent + 1));
	if (n) {
		r->absent = n;
		if ((n[r->nr_absent] = strdup(path)))
			r->nr_absent++;
	}
	return ret;
}

void ip_root_recheck_absent(struct ip_root *r)
{
	for (int i = 0; i < r->nr_absent; i++)
		free(r->absent[i]);
	free(r->absent);
	r->absent = NULL;
	r->nr_absent = 0;
}

#define LINES_CHUNK (256u << 10)

int ip_root_read_lines(struct ip_root *r, const char *path, ip_root_lines_fn fn, void *ctx)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t cap = LINES_CHUNK, have = 0;
	int lineno = 1, ret;
	bool eof = false;

	/* A capture must hold the whole file as read: no streaming then. */
	if (r->rec) {
		_cleanup_free_ char *all = NULL;
		size_t len;

		ret = ip_root_read(r, path, &all, &len);
		return ret < 0 ? ret : fn(ctx, all, len, 1);
	}
	fd = root_openat(r, path, O_RDONLY);
	if (fd < 0)
		return fd;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	while (!eof || have) {
		size_t end;
		ssize_t k;

		if (!eof) {
			if (have == cap) {
				/* one line longer than the buffer */
				char *nb = cap * 2 > IP_ROOT_READ_MAX ? NULL : realloc(buf, cap * 2);

				if (!nb)
					return -EFBIG;
				buf = nb;
				cap *= 2;
			}
			k = read(fd, buf + have, cap - have);
			if (k < 0) {
				if (errno == EINTR)
					continue;
				return -errno;
			}
			if (k == 0)
				eof = true;
			have += k;
		}
		/* hand over every complete line; at the end, the rest too */
		end = have;
		if (!eof) {
			char *nl = memrchr(buf, '\n', have);

			if (!nl)
				continue;
			end = (size_t)(nl - buf) + 1;
		}
		if (end == 0)
			break;
		ret = fn(ctx, buf, end, lineno);
		if (ret < 0)
			return ret;
		for (const char *q = buf; (q = memchr(q, '\n', end - (size_t)(q - buf))); q++)
			lineno++;
		memmove(buf, buf + end, have - end);
		have -= end;
	}
	return 0;
}

/* @buf cut at its first newline. */
static char *first_line(char *buf)
{
	char *nl = strchr(buf, '\n');

	if (nl)
		*nl = '\0';
	return buf;
}

int ip_root_read_line(struct ip_root *r, const char *path, char **out)
{
	char *buf;
	int ret = ip_root_read_attr(r, path, &buf, NULL);

	if (ret < 0)
		return ret;
	*out = first_line(buf);
	return 0;
}

int ip_root_read_line_again(struct ip_root *r, const char *path, char **out)
{
	char *buf;
	int ret = ip_root_read_again(r, path, true, &buf, NULL);

	if (ret < 0)
		return ret;
	*out = first_line(buf);
	return 0;
}

static int parse_long(const char *buf, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno)
		return -errno;
	if (end == buf)
		return -EINVAL;
	while (*end == ' ' || *end == '\n' || *end == '\t')
		end++;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int ip_root_read_long(struct ip_root *r, const char *path, long long *out)
{
	_cleanup_free_ char *buf = NULL;
	int ret = ip_root_read_attr(r, path, &buf, NULL);

	return ret < 0 ? ret : parse_long(buf, out);
}

int ip_root_read_long_optional(struct ip_root *r, const char *path, long long *out)
{
	_cleanup_free_ char *buf = NULL;
	int ret = ip_root_read_optional(r, path, true, &buf, NULL);

	return ret < 0 ? ret : parse_long(buf, out);
}

int ip_root_readlink(struct ip_root *r, const char *path, char **target)
{
	_cleanup_free_ char *resolved = NULL;
	char buf[PATH_MAX];
	struct stat st;
	ssize_t n;
	int ret = walk(r, path, false, -1, &resolved);

	if (ret < 0)
		return ret;
	if (fstatat(r->fd, resolved, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISREG(st.st_mode)) {
		ret = read_flat_link(r->fd, resolved, target);
		if (ret == -ENOTDIR)
			return -EINVAL;
		if (ret == 0)
			record(r, IP_ROOT_EV_LINK, rel(path), *target, strlen(*target), 0);
		return ret;
	}
	if (!S_ISLNK(st.st_mode))
		return -EINVAL;
	n = readlinkat(r->fd, resolved, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	*target = strdup(buf);
	if (!*target)
		return -ENOMEM;
	record(r, IP_ROOT_EV_LINK, rel(path), *target, n, 0);
	return 0;
}

int ip_root_stat(struct ip_root *r, const char *path, struct stat *st)
{
	_cleanup_free_ char *resolved = NULL;
	int ret;

	/* in a confined root, fstatat() would follow a link out of it: what
	 * is stat'ed must be what root_openat() would open */
	if (r->confined) {
		_cleanup_close_ int fd = root_openat(r, path, O_PATH);

		if (fd < 0)
			return fd;
		return fstat(fd, st) == 0 ? 0 : -errno;
	}
	if (fstatat(r->fd, rel(path), st, 0) == 0)
		return 0;
	if (errno != ENOTDIR)
		return -errno;
	ret = walk(r, path, true, -1, &resolved);
	if (ret < 0)
		return ret;
	return fstatat(r->fd, resolved, st, 0) == 0 ? 0 : -errno;
}

bool ip_root_exists(struct ip_root *r, const char *path)
{
	struct stat st;

	return ip_root_stat(r, path, &st) == 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int ip_root_listdir(struct ip_root *r, const char *path, char ***names, size_t *n)
{
	int fd = root_openat(r, path, O_RDONLY | O_DIRECTORY);
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return fd;
	d = fdopendir(fd);
	if (!d) {
		int e = -errno;

		close(fd);
		return e;
	}
	while ((errno = 0, de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (cnt == cap) {
			size_t ncap = cap ? cap * 2 : 32;
			char **nv = realloc(v, ncap * sizeof(*v));

			if (!nv)
				goto oom;
			v = nv;
			cap = ncap;
		}
		v[cnt] = strdup(de->d_name);
		if (!v[cnt])
			goto oom;
		cnt++;
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_str);
	record(r, IP_ROOT_EV_DIR, rel(path), NULL, 0, 0);
	*names = v;
	*n = cnt;
	return 0;
oom:
	closedir(d);
	ip_strv_free(v, cnt);
	return -ENOMEM;
}

int ip_root_write(struct ip_root *r, const char *path, const char *data)
{
	_cleanup_close_ int fd = root_openat(r, path, O_WRONLY | O_TRUNC);
	size_t len = strlen(data);
	ssize_t n;

	if (fd < 0)
		return fd;
	n = write(fd, data, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* mkdir -p of @path's parent below @dirfd. */
static int mkparents(int dirfd, const char *path)
{
	_cleanup_free_ char *p = strdup(path);

	if (!p)
		return -ENOMEM;
	for (char *s = strchr(p, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdirat(dirfd, p, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return 0;
}

static int write_file_at(int dirfd, const char *path, const char *data, size_t len, mode_t mode)
{
	_cleanup_close_ int fd = -1;
	size_t off = 0;

	unlinkat(dirfd, path, 0);
	fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t k = write(fd, data + off, len - off);

		if (k < 0)
			return -errno;
		off += k;
	}
	if (fchmod(fd, mode & 07777) < 0)
		return -errno;
	return 0;
}

int ip_root_mirror(struct ip_root *r, const struct ip_root_event *ev, int dest_dirfd)
{
	_cleanup_free_ char *resolved = NULL;
	int ret;

	if (ev->kind == IP_ROOT_EV_LINK && !r) {
		/* a link met while walking: create it where it stands */
		ret = mkparents(dest_dirfd, ev->path);
		if (ret < 0)
			return ret;
		if (symlinkat(ev->data, dest_dirfd, ev->path) < 0)
			return errno == EEXIST ? 0 : -errno;
		return 0;
	}
	/* recreate every link on the way, then the object at the end */
	ret = walk(r, ev->path, ev->kind != IP_ROOT_EV_LINK, dest_dirfd, &resolved);
	if (ret < 0)
		return ret;
	ret = mkparents(dest_dirfd, resolved);
	if (ret < 0)
		return ret;
	switch (ev->kind) {
	case IP_ROOT_EV_READ:
		return write_file_at(dest_dirfd, resolved, ev->data, ev->len, ev->mode);
	case IP_ROOT_EV_LINK:
		if (symlinkat(ev->data, dest_dirfd, resolved) < 0 && errno != EEXIST)
			return -errno;
		return 0;
	case IP_ROOT_EV_DIR:
		if (strcmp(resolved, ".") && mkdirat(dest_dirfd, resolved, 0755) < 0 && errno != EEXIST)
			return -errno;
		return 0;
	}
	return -EINVAL;
}
