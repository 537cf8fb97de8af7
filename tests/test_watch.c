// SPDX-License-Identifier: GPL-2.0-or-later
/* watch.h on real inotify: a tree's probe files written in the ways a
 * stand-in kernel and the tests write them, and roots that cannot be
 * watched. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "irqpilot/root.h"
#include "irqpilot/watch.h"

static const char *const probe[] = {
	"proc/diskstats",
	"sys/devices/system/cpu/online",
	"sys/devices/system/cpu/isolated",
	"sys/fs/cgroup/cpuset.cpus.isolated",
};

struct fx {
	char dir[64];
	struct ip_root *root;
	struct ip_watch *w;
};

static void path_of(const struct fx *f, const char *rel, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", f->dir, rel);
}

static void mkdirs(const struct fx *f, const char *rel)
{
	char path[256];

	path_of(f, rel, path, sizeof(path));
	for (char *p = strchr(path + strlen(f->dir) + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	mkdir(path, 0755);
}

/* in place, as `echo >` and the closed loops' rewrite() do */
static void put(const struct fx *f, const char *rel, const char *text)
{
	char path[256];
	FILE *fp;

	path_of(f, rel, path, sizeof(path));
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

/* a new file renamed over the old, as fixture writers do */
static void replace(const struct fx *f, const char *rel, const char *text)
{
	char newrel[128], from[256], to[256];

	snprintf(newrel, sizeof(newrel), "%s.new", rel);
	put(f, newrel, text);
	path_of(f, newrel, from, sizeof(from));
	path_of(f, rel, to, sizeof(to));
	assert_int_equal(rename(from, to), 0);
}

static void replace_by_rename(const struct fx *f, const char *from_rel, const char *to_rel)
{
	char from[256], to[256];

	path_of(f, from_rel, from, sizeof(from));
	path_of(f, to_rel, to, sizeof(to));
	assert_int_equal(rename(from, to), 0);
}

static int changed(struct fx *f)
{
	struct ip_diag d = { "" };

	return ip_watch_changed(f->w, &d);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/irqpilot-watch-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	mkdirs(f, "proc");
	mkdirs(f, "sys/devices/system/cpu");
	put(f, "proc/diskstats", "   8       0 sda 1 0 8 0 0 0 0 0 0 0 0\n");
	put(f, "proc/interrupts", "           CPU0\n");
	put(f, "sys/devices/system/cpu/online", "0-3\n");
	assert_int_equal(ip_root_open(f->dir, &f->root), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	ip_watch_free(f->w);
	ip_root_free(f->root);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static void open_watch(struct fx *f)
{
	struct ip_diag d = { "" };

	assert_int_equal(ip_watch_open(f->root, probe, 4, &f->w, &d), 0);
	assert_non_null(f->w);
	assert_int_equal(changed(f), 0);
}

static void test_writes_and_renames_are_seen(void **state)
{
	struct fx *f = *state;
	struct pollfd pfd;

	open_watch(f);
	pfd.fd = ip_watch_fd(f->w);
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 0), 0);

	replace(f, "proc/diskstats", "   8       0 sda 9 0 72 0 0 0 0 0 0 0 0\n");
	/* the fd the daemon waits on is readable, and reading says so once */
	assert_int_equal(poll(&pfd, 1, 0), 1);
	assert_int_equal(changed(f), 1);
	assert_int_equal(changed(f), 0);
	assert_int_equal(poll(&pfd, 1, 0), 0);

	put(f, "sys/devices/system/cpu/online", "0-2\n");
	assert_int_equal(changed(f), 1);
	/* a file that was missing when the watch was made */
	put(f, "sys/devices/system/cpu/isolated", "3\n");
	assert_int_equal(changed(f), 1);
}

static void test_neighbours_are_not_news(void **state)
{
	struct fx *f = *state;

	open_watch(f);
	/* what a stand-in kernel rewrites beside the probe's files */
	replace(f, "proc/interrupts", "           CPU0       CPU1\n");
	put(f, "proc/softirqs", "x\n");
	mkdirs(f, "proc/irq/37");
	put(f, "proc/irq/37/smp_affinity_list", "2\n");
	assert_int_equal(changed(f), 0);
}

static void test_a_missing_directory_is_waited_for(void **state)
{
	struct fx *f = *state;

	open_watch(f);
	/* the closed loop's cgroup v2 partition: neither sys/fs nor the file
	 * existed; the directory's creation is news, and the file's write
	 * after it too, now that its directory is watched */
	mkdirs(f, "sys/fs");
	assert_int_equal(changed(f), 1);
	mkdirs(f, "sys/fs/cgroup");
	assert_int_equal(changed(f), 1);
	put(f, "sys/fs/cgroup/cpuset.cpus.isolated", "3\n");
	assert_int_equal(changed(f), 1);
	assert_int_equal(changed(f), 0);
	/* another file there is not */
	put(f, "sys/fs/cgroup/cgroup.procs", "1\n");
	assert_int_equal(changed(f), 0);
}

static void test_a_directory_replaced_is_watched_again(void **state)
{
	struct fx *f = *state;
	char from[256], to[256];

	open_watch(f);
	/* a whole proc/ swapped in by rename, as a replay steps a tree */
	mkdirs(f, "proc.new");
	put(f, "proc.new/diskstats", "   8       0 sda 2 0 16 0 0 0 0 0 0 0 0\n");
	path_of(f, "proc", from, sizeof(from));
	path_of(f, "proc.old", to, sizeof(to));
	assert_int_equal(rename(from, to), 0);
	path_of(f, "proc.new", from, sizeof(from));
	path_of(f, "proc", to, sizeof(to));
	assert_int_equal(rename(from, to), 0);
	assert_int_equal(changed(f), 1);
	/* the new proc/ is the one watched now */
	put(f, "proc/diskstats", "   8       0 sda 3 0 24 0 0 0 0 0 0 0 0\n");
	assert_int_equal(changed(f), 1);
	put(f, "proc.old/diskstats", "gone\n");
	assert_int_equal(changed(f), 0);
}

/* While the daemon samples on its timer the watch is paused: the tree's
 * writes queue nothing (the fd stays unreadable); resumed, it sees the
 * next write, and a directory that appeared meanwhile is watched too. */
static void test_paused_watch_queues_nothing(void **state)
{
	struct fx *f = *state;
	struct ip_diag d = { "" };
	struct pollfd pfd;

	open_watch(f);
	put(f, "proc/diskstats", "   8       0 sda 5 0 40 0 0 0 0 0 0 0 0\n");
	ip_watch_pause(f->w);
	pfd.fd = ip_watch_fd(f->w);
	pfd.events = POLLIN;
	/* what was queued before the pause is dropped with it */
	assert_int_equal(poll(&pfd, 1, 0), 0);
	replace(f, "proc/diskstats", "   8       0 sda 6 0 48 0 0 0 0 0 0 0 0\n");
	put(f, "sys/devices/system/cpu/online", "0-1\n");
	mkdirs(f, "sys/fs/cgroup");
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_int_equal(changed(f), 0);

	assert_int_equal(ip_watch_resume(f->w, &d), 1);
	assert_int_equal(ip_watch_resume(f->w, &d), 0);
	assert_int_equal(changed(f), 0);
	put(f, "proc/diskstats", "   8       0 sda 7 0 56 0 0 0 0 0 0 0 0\n");
	assert_int_equal(poll(&pfd, 1, 0), 1);
	assert_int_equal(changed(f), 1);
	put(f, "sys/fs/cgroup/cpuset.cpus.isolated", "3\n");
	assert_int_equal(changed(f), 1);
	assert_int_equal(changed(f), 0);
}

static void test_kernel_files_cannot_be_watched(void **state)
{
	struct fx *f = *state;
	struct ip_root *live;
	struct ip_watch *w = (struct ip_watch *)1;
	struct ip_diag d = { "" };
	char path[256];

	/* the live root: the kernel's files change without fsnotify */
	assert_int_equal(ip_root_open("/", &live), 0);
	assert_int_equal(ip_watch_open(live, probe, 4, &w, &d), -EOPNOTSUPP);
	assert_null(w);
	assert_non_null(strstr(d.msg, "live root"));
	ip_root_free(live);

	/* a tree whose proc/ is the kernel's procfs: said, not waited on */
	path_of(f, "proc/diskstats", path, sizeof(path));
	unlink(path);
	path_of(f, "proc/interrupts", path, sizeof(path));
	unlink(path);
	path_of(f, "proc", path, sizeof(path));
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(symlink("/proc", path), 0);
	d.msg[0] = '\0';
	assert_int_equal(ip_watch_open(f->root, probe, 4, &w, &d), -EOPNOTSUPP);
	assert_null(w);
	assert_non_null(strstr(d.msg, "proc is on procfs"));
}

static int64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* What a still tree's daemon looks at before it waits on the watch: the
 * ctime, as each way of writing a file sets it. */
static void test_written_since_by_ctime(void **state)
{
	static const char *const counts[] = { "proc/interrupts", "proc/softirqs", "irqpilot/submit" };
	static const char *const bad[] = { "proc/loop" };
	struct fx *f = *state;
	struct timespec old[2] = { { .tv_sec = 1 }, { .tv_sec = 1 } };
	char path[256];
	int64_t since;

	/* proc/softirqs and irqpilot/submit missing: not written */
	usleep(2 * IP_WATCH_CTIME_SLACK_NS / 1000);
	since = real_ns();
	assert_false(ip_watch_written_since(f->root, counts, 3, since));
	put(f, "proc/interrupts", "           CPU0 CPU1\n");
	assert_true(ip_watch_written_since(f->root, counts, 3, since));

	/* a copy that kept an old mtime, renamed over the file */
	usleep(2 * IP_WATCH_CTIME_SLACK_NS / 1000);
	since = real_ns();
	assert_false(ip_watch_written_since(f->root, counts, 3, since));
	put(f, "proc/interrupts.new", "           CPU0\n");
	path_of(f, "proc/interrupts.new", path, sizeof(path));
	assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);
	replace_by_rename(f, "proc/interrupts.new", "proc/interrupts");
	assert_true(ip_watch_written_since(f->root, counts, 3, since));

	/* a file that appears; one written just before @since (coarse clock) */
	usleep(2 * IP_WATCH_CTIME_SLACK_NS / 1000);
	since = real_ns();
	mkdirs(f, "irqpilot");
	put(f, "irqpilot/submit", "sda 0 1\n");
	assert_true(ip_watch_written_since(f->root, counts + 2, 1, since));
	assert_true(ip_watch_written_since(f->root, counts + 2, 1, real_ns() + IP_WATCH_CTIME_SLACK_NS / 2));
	assert_false(ip_watch_written_since(f->root, counts + 2, 1, real_ns() + 2 * IP_WATCH_CTIME_SLACK_NS));

	/* a path that cannot be looked at (ELOOP) may have been written */
	path_of(f, "proc/loop", path, sizeof(path));
	assert_int_equal(symlink("loop", path), 0);
	assert_true(ip_watch_written_since(f->root, bad, 1, real_ns() + 2 * IP_WATCH_CTIME_SLACK_NS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_writes_and_renames_are_seen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_neighbours_are_not_news, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_missing_directory_is_waited_for, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_directory_replaced_is_watched_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paused_watch_queues_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kernel_files_cannot_be_watched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_written_since_by_ctime, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
