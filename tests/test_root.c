// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "irqpilot/macro.h"
#include "irqpilot/root.h"

static char tmpl[64];

static void put(const char *rel, const char *content)
{
	char path[256], *p;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpl, rel);
	for (p = strchr(path + strlen(tmpl) + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static void link_(const char *target, const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", tmpl, rel);
	assert_int_equal(symlink(target, path), 0);
}

static int setup(void **state)
{
	snprintf(tmpl, sizeof(tmpl), "/tmp/irqpilot-root-XXXXXX");
	assert_non_null(mkdtemp(tmpl));
	put("sys/devices/pci0000:00/0000:00:06.0/block/sda/queue/rq_affinity", "1\n");
	put("sys/devices/pci0000:00/0000:00:06.0/block/sda/dev", "8:0\n");
	put("sys/devices/pci0000:00/0000:00:06.0/driver-target/x", "");
	mkdir("tmp", 0755);
	put("sys/block/.keep", "");
	/* a real symlink and a flattened one (a file holding the target) */
	link_("../devices/pci0000:00/0000:00:06.0/block/sda", "sys/block/sda");
	put("sys/class/block/sda", "../../devices/pci0000:00/0000:00:06.0/block/sda");
	put("sys/devices/pci0000:00/0000:00:06.0/driver", "../../../bus/pci/drivers/ahci");
	put("proc/irq/28/smp_affinity_list", "0-3\n");
	put("proc/number", "  42 \n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpl);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_read_through_links(void **state)
{
	struct ip_root *r;
	char *s;
	long long v;

	assert_int_equal(ip_root_open(tmpl, &r), 0);
	assert_false(ip_root_is_live(r));
	assert_int_equal(ip_root_read_line(r, "sys/block/sda/queue/rq_affinity", &s), 0);
	assert_string_equal(s, "1");
	free(s);
	/* the flattened link is followed like the real one */
	assert_int_equal(ip_root_read_line(r, "/sys/class/block/sda/dev", &s), 0);
	assert_string_equal(s, "8:0");
	free(s);
	assert_int_equal(ip_root_resolve(r, "sys/class/block/sda/queue", &s), 0);
	assert_string_equal(s, "sys/devices/pci0000:00/0000:00:06.0/block/sda/queue");
	free(s);
	assert_int_equal(ip_root_read_long(r, "proc/number", &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(ip_root_read_long(r, "proc/irq/28/smp_affinity_list", &v), -EINVAL);
	assert_int_equal(ip_root_read(r, "proc/irq/29/smp_affinity_list", &s, NULL), -ENOENT);
	ip_root_free(r);
}

static void test_readlink_both_kinds(void **state)
{
	struct ip_root *r;
	char *s;

	assert_int_equal(ip_root_open(tmpl, &r), 0);
	assert_int_equal(ip_root_readlink(r, "sys/devices/pci0000:00/0000:00:06.0/driver", &s), 0);
	assert_string_equal(s, "../../../bus/pci/drivers/ahci");
	free(s);
	assert_int_equal(ip_root_readlink(r, "sys/block/sda", &s), 0);
	assert_string_equal(s, "../devices/pci0000:00/0000:00:06.0/block/sda");
	free(s);
	/* a directory is not a link */
	assert_int_equal(ip_root_readlink(r, "proc/irq", &s), -EINVAL);
	ip_root_free(r);
}

static void test_listdir_and_write(void **state)
{
	struct ip_root *r;
	char **names, *s;
	size_t n;

	assert_int_equal(ip_root_open(tmpl, &r), 0);
	assert_int_equal(ip_root_listdir(r, "sys/devices/pci0000:00/0000:00:06.0", &names, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(names[0], "block");
	assert_string_equal(names[1], "driver");
	assert_string_equal(names[2], "driver-target");
	ip_strv_free(names, n);
	assert_int_equal(ip_root_write(r, "proc/irq/28/smp_affinity_list", "6"), 0);
	assert_int_equal(ip_root_read_line(r, "proc/irq/28/smp_affinity_list", &s), 0);
	assert_string_equal(s, "6");
	free(s);
	/* writes never create files: a vanished IRQ is ENOENT */
	assert_int_equal(ip_root_write(r, "proc/irq/99/smp_affinity_list", "6"), -ENOENT);
	ip_root_free(r);
}

struct rec {
	int reads, links;
	mode_t mode;
	char last[128];
};

static void recorder(void *ctx, const struct ip_root_event *ev)
{
	struct rec *rc = ctx;

	if (ev->kind == IP_ROOT_EV_READ) {
		rc->reads++;
		rc->mode = ev->mode;
	}
	if (ev->kind == IP_ROOT_EV_LINK)
		rc->links++;
	snprintf(rc->last, sizeof(rc->last), "%s", ev->path);
}

static void test_mirror_keeps_links(void **state)
{
	struct ip_root *r, *copy;
	struct rec rc = { 0 };
	char dest[128], path[256], buf[256];
	struct ip_root_event ev;
	char *s;
	int fd;
	ssize_t n;

	snprintf(dest, sizeof(dest), "%s/mirror", tmpl);
	assert_int_equal(mkdir(dest, 0755), 0);
	fd = open(dest, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(ip_root_open(tmpl, &r), 0);
	ip_root_set_recorder(r, recorder, &rc);
	assert_int_equal(ip_root_read(r, "sys/class/block/sda/queue/rq_affinity", &s, NULL), 0);
	assert_int_equal(rc.reads, 1);
	assert_string_equal(rc.last, "sys/class/block/sda/queue/rq_affinity");
	ev = (struct ip_root_event){ IP_ROOT_EV_READ, rc.last, s, strlen(s), 0444 };
	assert_int_equal(ip_root_mirror(r, &ev, fd), 0);
	free(s);
	/* the flattened link became a real symlink in the copy */
	snprintf(path, sizeof(path), "%s/sys/class/block/sda", dest);
	n = readlink(path, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, "../../devices/pci0000:00/0000:00:06.0/block/sda");
	assert_int_equal(ip_root_open(dest, &copy), 0);
	assert_int_equal(ip_root_read_line(copy, "sys/class/block/sda/queue/rq_affinity", &s), 0);
	assert_string_equal(s, "1");
	free(s);
	ip_root_free(copy);
	ip_root_free(r);
	close(fd);
}

/* A file of @n bytes, all 'x' but a newline at the end. */
static void put_size(const char *rel, size_t n)
{
	char *text = malloc(n + 1);

	assert_non_null(text);
	memset(text, 'x', n);
	text[n - 1] = '\n';
	text[n] = '\0';
	put(rel, text);
	free(text);
}

/* Single-value reads stop at the first short read; longer files are still
 * read whole, directories still refused, and a capture still gets modes. */
static void test_read_attr(void **state)
{
	static const size_t sizes[] = { 1, 8190, 8191, 8192, 20000 };
	struct ip_root *r;
	struct rec rc = { 0 };
	char rel[32], path[300], *s;
	size_t len;

	assert_int_equal(ip_root_open(tmpl, &r), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(rel, sizeof(rel), "proc/size%zu", sizes[i]);
		put_size(rel, sizes[i]);
		assert_int_equal(ip_root_read_attr(r, rel, &s, &len), 0);
		assert_int_equal(len, sizes[i]);
		assert_int_equal(strlen(s), sizes[i]);
		assert_int_equal(s[sizes[i] - 1], '\n');
		free(s);
		assert_int_equal(ip_root_read(r, rel, &s, &len), 0);
		assert_int_equal(len, sizes[i]);
		free(s);
	}
	assert_int_equal(ip_root_read(r, "proc/irq", &s, &len), -EISDIR);
	assert_int_equal(ip_root_read_attr(r, "proc/irq", &s, &len), -EISDIR);
	assert_int_equal(ip_root_read_line(r, "proc/irq", &s), -EISDIR);

	snprintf(path, sizeof(path), "%s/proc/irq/28/smp_affinity_list", tmpl);
	assert_int_equal(chmod(path, 0444), 0);
	ip_root_set_recorder(r, recorder, &rc);
	assert_int_equal(ip_root_read_attr(r, "proc/irq", &s, &len), -EISDIR);
	assert_int_equal(ip_root_read(r, "proc/irq", &s, &len), -EISDIR);
	assert_int_equal(rc.reads, 0);
	assert_int_equal(ip_root_read_attr(r, "proc/irq/28/smp_affinity_list", &s, &len), 0);
	assert_int_equal(rc.reads, 1);
	assert_int_equal(rc.mode, 0444);
	free(s);
	snprintf(path, sizeof(path), "%s/proc/size20000", tmpl);
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(ip_root_read(r, "proc/size20000", &s, &len), 0);
	assert_int_equal(rc.reads, 2);
	assert_int_equal(rc.mode, 0640);
	free(s);
	snprintf(path, sizeof(path), "%s/proc/irq/28/smp_affinity_list", tmpl);
	assert_int_equal(chmod(path, 0644), 0);
	ip_root_free(r);
}

static int count_fds(void)
{
	char path[64];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n += access(path, F_OK) == 0;
	}
	return n;
}

static void expect_again(struct ip_root *r, const char *rel, bool attr, const char *want)
{
	char *s;
	size_t len;

	assert_int_equal(ip_root_read_again(r, rel, attr, &s, &len), 0);
	assert_string_equal(s, want);
	assert_int_equal(len, strlen(want));
	free(s);
}

/*
 * A file read every cycle is kept open: rewritten in place it reads the
 * new text with no fd opened again; replaced by rename (fixtures do) or
 * removed, the name wins; a file longer than one read is read whole; and
 * while recording every read reaches the recorder.
 */
static void test_read_again(void **state)
{
	static const size_t sizes[] = { 1, 8190, 8191, 8192, 12000, 20000 };
	struct ip_root *r;
	struct rec rc = { 0 };
	char rel[32], path[300], path2[300], *s;
	size_t len;
	int fds;

	assert_int_equal(ip_root_open(tmpl, &r), 0);
	put("proc/diskstats", "one\n");
	expect_again(r, "proc/diskstats", false, "one\n");
	fds = count_fds();
	put("proc/diskstats", "two, longer\n");
	expect_again(r, "proc/diskstats", false, "two, longer\n");
	put("proc/diskstats", "3\n");
	expect_again(r, "proc/diskstats", true, "3\n");
	assert_int_equal(count_fds(), fds);

	put("proc/diskstats.new", "renamed\n");
	snprintf(path, sizeof(path), "%s/proc/diskstats.new", tmpl);
	snprintf(path2, sizeof(path2), "%s/proc/diskstats", tmpl);
	assert_int_equal(rename(path, path2), 0);
	expect_again(r, "proc/diskstats", false, "renamed\n");
	assert_int_equal(count_fds(), fds);

	/* read onto the stack first (8 KiB), then to the heap: whole on
	 * either side of the switch, by name (size unknown) and kept */
	for (size_t k = 0; k < ARRAY_SIZE(sizes); k++) {
		snprintf(rel, sizeof(rel), "proc/big%zu", sizes[k]);
		put_size(rel, sizes[k]);
		for (int pass = 0; pass < 4; pass++) {
			assert_int_equal(ip_root_read_again(r, rel, pass & 1, &s, &len), 0);
			assert_int_equal(len, sizes[k]);
			assert_int_equal(strlen(s), sizes[k]);
			assert_int_equal(s[sizes[k] - 1], '\n');
			free(s);
		}
	}
	fds = count_fds();

	assert_int_equal(unlink(path2), 0);
	assert_int_equal(ip_root_read_again(r, "proc/diskstats", false, &s, &len), -ENOENT);
	assert_int_equal(count_fds(), fds - 1); /* big's kept, diskstats' closed */

	/* A directory renamed aside keeps its files' names: its kept file is
	 * read until the full scan's ip_root_lookup_again() (a minute at
	 * most), which looks each kept name up and closes what it no longer
	 * leads to; the others stay open. */
	put("sys/cpu/online", "0-3\n");
	expect_again(r, "sys/cpu/online", true, "0-3\n");
	snprintf(path, sizeof(path), "%s/sys/cpu", tmpl);
	snprintf(path2, sizeof(path2), "%s/sys/cpu.old", tmpl);
	assert_int_equal(rename(path, path2), 0);
	put("sys/cpu/online", "0-7\n");
	expect_again(r, "sys/cpu/online", true, "0-3\n");
	assert_int_equal(count_fds(), fds);
	ip_root_lookup_again(r);
	assert_int_equal(count_fds(), fds - 1);
	expect_again(r, "sys/cpu/online", true, "0-7\n");
	assert_int_equal(count_fds(), fds);

	ip_root_set_recorder(r, recorder, &rc);
	put("proc/diskstats", "recorded\n");
	expect_again(r, "proc/diskstats", false, "recorded\n");
	expect_again(r, "proc/diskstats", true, "recorded\n");
	assert_int_equal(rc.reads, 2);
	ip_root_free(r);
}

/*
 * Once the sampler asks for notice, a kept file is trusted without an
 * fstat() per read: its inotify watch says when a fixture replaced it
 * (rename) or removed it, and the next notice closes it to be read by
 * name. Between notices the kept inode is read, as a live file would be;
 * a rewrite in place is read at once; a file kept before the first notice
 * is watched from it; the last read of a regular file ends at a short
 * read, the whole of it.
 */
static void test_read_again_watched(void **state)
{
	struct ip_root *r;
	char path[300], path2[300], *s;
	size_t len;
	int fds;

	(void)state;
	assert_int_equal(ip_root_open(tmpl, &r), 0);
	put("proc/softirqs", "before\n");
	expect_again(r, "proc/softirqs", false, "before\n");
	ip_root_notice_replaced(r);
	fds = count_fds(); /* the watches' fd among them */
	put("proc/softirqs", "in place\n");
	expect_again(r, "proc/softirqs", false, "in place\n");

	put("proc/softirqs.new", "renamed\n");
	snprintf(path, sizeof(path), "%s/proc/softirqs.new", tmpl);
	snprintf(path2, sizeof(path2), "%s/proc/softirqs", tmpl);
	assert_int_equal(rename(path, path2), 0);
	expect_again(r, "proc/softirqs", false, "in place\n");
	ip_root_notice_replaced(r);
	assert_int_equal(count_fds(), fds - 1);
	expect_again(r, "proc/softirqs", false, "renamed\n");
	assert_int_equal(count_fds(), fds);
	put("proc/softirqs", "kept again\n");
	expect_again(r, "proc/softirqs", true, "kept again\n");

	assert_int_equal(unlink(path2), 0);
	ip_root_notice_replaced(r);
	assert_int_equal(ip_root_read_again(r, "proc/softirqs", false, &s, &len), -ENOENT);
	assert_int_equal(count_fds(), fds - 1);
	ip_root_notice_replaced(r); /* the freed inode's IN_IGNORED: nothing kept to drop */
	assert_int_equal(count_fds(), fds - 1);
	ip_root_free(r);
}

/*
 * A file renamed over between its keeping and its watch: the watch is on
 * an inode already without a name, whose IN_ATTRIB came before it, and
 * no event comes again. The kept file was then read as it was for good
 * (a closed-loop test under ASan saw a recorded submission count stand
 * still and took the load for idle). Here the rename comes before the
 * first notice, which watches the files kept so far; a watch begun on a
 * file without a name is not trusted, and the name read.
 */
static void test_read_again_renamed_before_watch(void **state)
{
	struct ip_root *r;
	char path[300], path2[300];

	(void)state;
	assert_int_equal(ip_root_open(tmpl, &r), 0);
	put("irqpilot/submit", "sda 6 100\n");
	expect_again(r, "irqpilot/submit", false, "sda 6 100\n");
	put("irqpilot/submit.new", "sda 6 400\n");
	snprintf(path, sizeof(path), "%s/irqpilot/submit.new", tmpl);
	snprintf(path2, sizeof(path2), "%s/irqpilot/submit", tmpl);
	assert_int_equal(rename(path, path2), 0);
	ip_root_notice_replaced(r);
	expect_again(r, "irqpilot/submit", false, "sda 6 400\n");
	/* and watched from then on */
	put("irqpilot/submit.new", "sda 6 900\n");
	assert_int_equal(rename(path, path2), 0);
	ip_root_notice_replaced(r);
	expect_again(r, "irqpilot/submit", false, "sda 6 900\n");
	ip_root_free(r);
}

/* @rel, missing, is made with @text: still missing until @forget, then
 * read as @value. */
static void absent_until(struct ip_root *r, const char *rel, const char *text, long long value,
			 void (*forget)(struct ip_root *))
{
	long long v;

	assert_int_equal(ip_root_read_long_optional(r, rel, &v), -ENOENT);
	put(rel, text);
	assert_int_equal(ip_root_read_long_optional(r, rel, &v), -ENOENT);
	forget(r);
	assert_int_equal(ip_root_read_long_optional(r, rel, &v), 0);
	assert_int_equal(v, value);
}

/*
 * A file a root may lack for good (a fixture's irqpilot/time_ns, 6.7's
 * cpuset.cpus.isolated on 6.1) is looked up once, not every cycle: one
 * that appears later is read only after ip_root_recheck_absent() (the
 * sampler's idle probe) or ip_root_lookup_again() (its full scan), and
 * one that is there is read every time.
 */
static void test_read_optional(void **state)
{
	struct ip_root *r;
	struct rec rc = { 0 };
	long long v;
	char *s;
	size_t len;

	(void)state;
	assert_int_equal(ip_root_open(tmpl, &r), 0);
	absent_until(r, "irqpilot/time_ns", "7000\n", 7000, ip_root_recheck_absent);
	/* the full scan's one call forgets the absent files too */
	absent_until(r, "irqpilot/clock_ns", "9000\n", 9000, ip_root_lookup_again);
	/* present: read afresh each time, as ip_root_read_again() does */
	put("irqpilot/time_ns", "8000\n");
	assert_int_equal(ip_root_read_long_optional(r, "irqpilot/time_ns", &v), 0);
	assert_int_equal(v, 8000);
	put("irqpilot/time_ns", "soon\n");
	assert_int_equal(ip_root_read_long_optional(r, "irqpilot/time_ns", &v), -EINVAL);

	/* only absence is remembered: an error is said each time */
	assert_int_equal(ip_root_read_optional(r, "proc/irq", false, &s, &len), -EISDIR);
	assert_int_equal(ip_root_read_optional(r, "proc/irq", false, &s, &len), -EISDIR);

	/* a capture asks each time: what it records is what was there */
	assert_int_equal(ip_root_read_optional(r, "proc/later", false, &s, &len), -ENOENT);
	ip_root_set_recorder(r, recorder, &rc);
	put("proc/later", "now\n");
	assert_int_equal(ip_root_read_optional(r, "proc/later", false, &s, &len), 0);
	assert_string_equal(s, "now\n");
	free(s);
	ip_root_free(r);
}

/* The one join of the daemon's log lines and irqctl's lists. */
static void test_join(void **state)
{
	const char *const files[] = { "proc/interrupts", "proc/softirqs", "irqpilot/submit" };
	char buf[64], small[12];

	assert_string_equal(ip_join(buf, sizeof(buf), files, 3, ", ", " or ", "/"),
			    "/proc/interrupts, /proc/softirqs or /irqpilot/submit");
	assert_string_equal(ip_join(buf, sizeof(buf), files, 2, ", ", " or ", "/"),
			    "/proc/interrupts or /proc/softirqs");
	assert_string_equal(ip_join(buf, sizeof(buf), files, 1, ", ", " or ", "/"), "/proc/interrupts");
	assert_string_equal(ip_join(buf, sizeof(buf), files, 0, ", ", " or ", "/"), "");
	assert_string_equal(ip_join(buf, sizeof(buf), files + 1, 2, ",", ",", ""),
			    "proc/softirqs,irqpilot/submit");
	/* cut short, still a string */
	assert_string_equal(ip_join(small, sizeof(small), files, 3, ", ", " or ", "/"), "/proc/inter");
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_through_links),
		cmocka_unit_test(test_readlink_both_kinds),
		cmocka_unit_test(test_listdir_and_write),
		cmocka_unit_test(test_mirror_keeps_links),
		cmocka_unit_test(test_read_attr),
		cmocka_unit_test(test_read_again),
		cmocka_unit_test(test_read_again_watched),
		cmocka_unit_test(test_read_again_renamed_before_watch),
		cmocka_unit_test(test_read_optional),
		cmocka_unit_test(test_join),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
