// SPDX-License-Identifier: GPL-2.0-or-later
/* The state file that lets irqpilotd --restore work after kill -9. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "irqpilot/state.h"

static char dir[] = "/tmp/irqpilot-state-XXXXXX";
static char path[128], victim[128];

static int setup(void **state)
{
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/state", dir);
	snprintf(victim, sizeof(victim), "%s.victim", dir);
	return 0;
}

static int teardown(void **state)
{
	char p[160];

	unlink(path);
	snprintf(p, sizeof(p), "%s/state.tmp", dir);
	unlink(p);
	unlink(victim);
	return rmdir(dir);
}

static void put(const char *p, const char *text)
{
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *slurp(const char *p)
{
	static char buf[16384];
	FILE *f = fopen(p, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static struct ip_state *open_state(void)
{
	struct ip_state *s = NULL;
	struct ip_diag d = { "" };

	assert_int_equal(ip_state_open(dir, &s, &d), 0);
	return s;
}

static void test_round_trip(void **state)
{
	struct ip_originals h, back;
	struct ip_diag d = { "" };
	struct ip_state_bads bad = { 0 };
	struct ip_state *s = open_state();

	ip_originals_init(&h);
	assert_int_equal(ip_originals_add_irq(&h, 45, "0-3"), 0);
	h.threads = calloc(1, sizeof(*h.threads));
	h.nr_threads = 1;
	/* comm may hold spaces, ')' and backslashes */
	h.threads[0] = (struct ip_thread_orig){ .pid = 812, .irq = 45, .comm = "irq/45-a b)\\c",
						 .start = 4711, .have_affinity = true,
						 .have_sched = true, .policy = 1, .priority = 50 };
	cpuset_parse_list(&h.threads[0].allowed, "0-3,8");
	h.rq = calloc(1, sizeof(*h.rq));
	h.nr_rq = 1;
	snprintf(h.rq[0].device, sizeof(h.rq[0].device), "sda");
	h.rq[0].value = 1;
	assert_int_equal(ip_originals_add_cq(&h, "sdb", 8, 16), 1);
	assert_int_equal(ip_state_save(s, &h, &d), 0);
	assert_non_null(strstr(slurp(path), "thread 812 45 4711 irq/45-a\\x20b)\\x5cc affinity 0-3,8\n"));

	ip_originals_init(&back);
	assert_int_equal(ip_state_load(s, 32768, &back, &bad, &d), 0);
	assert_int_equal(bad.n, 0);
	assert_string_equal(ip_originals_irq(&back, 45), "0-3");
	assert_int_equal(back.nr_threads, 1);
	assert_int_equal(back.threads[0].pid, 812);
	assert_string_equal(back.threads[0].comm, "irq/45-a b)\\c");
	assert_int_equal(back.threads[0].start, 4711);
	assert_true(back.threads[0].have_affinity && back.threads[0].have_sched);
	assert_string_equal(cpuset_str(&back.threads[0].allowed), "0-3,8");
	assert_int_equal(back.threads[0].priority, 50);
	assert_int_equal(back.nr_rq, 1);
	assert_string_equal(back.rq[0].device, "sda");
	assert_non_null(ip_originals_cq(&back, "sdb"));
	assert_int_equal(ip_originals_cq(&back, "sdb")->minor, 16);
	ip_originals_free(&back);
	ip_originals_free(&h);
	ip_state_close(s);
}

/*
 * The text is built anew at every save and compared with the file's: a
 * machine's worth of records (longer than any first buffer) reads back
 * whole, a save of the same records leaves the file as it is (the same
 * inode: no rename), and one more record is written.
 */
static void test_many_records_unchanged_not_written(void **state)
{
	struct ip_originals h, back;
	struct ip_diag d = { "" };
	struct ip_state_bads bad = { 0 };
	struct ip_state *s = open_state();
	struct stat a, b;
	char list[16];

	ip_originals_init(&h);
	for (unsigned irq = 100; irq < 400; irq++) {
		snprintf(list, sizeof(list), "%u-%u", irq % 64, irq % 64 + 3);
		assert_int_equal(ip_originals_add_irq(&h, irq, list), 0);
	}
	assert_int_equal(ip_state_save(s, &h, &d), 0);
	assert_int_equal(stat(path, &a), 0);
	assert_true(a.st_size > 4000);
	ip_originals_init(&back);
	assert_int_equal(ip_state_load(s, 32768, &back, &bad, &d), 0);
	assert_int_equal(bad.n, 0);
	assert_int_equal(back.nr_irqs, 300);
	assert_string_equal(ip_originals_irq(&back, 100), "36-39");
	assert_string_equal(ip_originals_irq(&back, 399), "15-18");
	ip_originals_free(&back);

	assert_int_equal(ip_state_save(s, &h, &d), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(ip_originals_add_irq(&h, 400, "7"), 0);
	assert_int_equal(ip_state_save(s, &h, &d), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_int_not_equal(a.st_ino, b.st_ino);
	assert_non_null(strstr(slurp(path), "irq 399 15-18\nirq 400 7\n"));
	ip_originals_free(&h);
	ip_state_close(s);
}

/*
 * The file emptied, removed or overwritten by someone else while the
 * records stay the same: the next save writes it again and says so (the
 * unchanged text alone left it as it was, and a crash then lost the
 * originals). A file loaded and unchanged is not written again.
 */
static void test_changed_behind_our_back(void **state)
{
	struct ip_originals h, back;
	struct ip_diag d = { "" };
	struct ip_state_bads bad = { 0 };
	struct ip_state *s = open_state();
	const char *want = "irq 45 0-3\n";
	struct stat a, b;
	char other[160];

	ip_originals_init(&h);
	assert_int_equal(ip_originals_add_irq(&h, 45, "0-3"), 0);
	assert_int_equal(ip_state_save(s, &h, &d), 0);
	assert_int_equal(ip_state_save(s, &h, &d), 0);

	put(path, "");
	assert_int_equal(ip_state_save(s, &h, &d), 1);
	assert_non_null(strstr(d.msg, "changed or removed by someone else"));
	assert_non_null(strstr(slurp(path), want));
	assert_int_equal(ip_state_save(s, &h, &d), 0);

	assert_int_equal(unlink(path), 0);
	assert_int_equal(ip_state_save(s, &h, &d), 1);
	assert_non_null(strstr(slurp(path), want));

	/* the same length, another text ("irq 45 0-2"), renamed over it */
	snprintf(other, sizeof(other), "%s/state.new", dir);
	put(other, "# irqpilot state 2: original settings, for irqpilotd --restore\nirq 45 0-2\n");
	assert_int_equal(rename(other, path), 0);
	assert_int_equal(ip_state_save(s, &h, &d), 1);
	assert_non_null(strstr(slurp(path), want));
	ip_state_close(s);

	s = open_state();
	ip_originals_init(&back);
	assert_int_equal(ip_state_load(s, 32768, &back, &bad, &d), 0);
	assert_int_equal(stat(path, &a), 0);
	assert_int_equal(ip_state_save(s, &back, &d), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	ip_originals_free(&back);
	ip_originals_free(&h);
	ip_state_close(s);
}

/*
 * A chmod (or chown) of the state file while the daemon runs: its text,
 * inode and mtime stay, so it counted as still the file written, and a
 * --restore after a crash refused it ("writable by no one else: not
 * read"), restoring nothing. The next save writes it again, 0600.
 */
static void test_mode_changed_behind_our_back(void **state)
{
	struct ip_originals h, back;
	struct ip_diag d = { "" };
	struct ip_state_bads bad = { 0 };
	struct ip_state *s = open_state();
	struct stat st;

	ip_originals_init(&h);
	assert_int_equal(ip_originals_add_irq(&h, 45, "0-3"), 0);
	assert_int_equal(ip_state_save(s, &h, &d), 0);
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_equal(ip_state_save(s, &h, &d), 1);
	assert_non_null(strstr(d.msg, "changed or removed by someone else"));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	ip_state_close(s);

	s = open_state();
	ip_originals_init(&back);
	assert_int_equal(ip_state_load(s, 32768, &back, &bad, &d), 0);
	assert_string_equal(ip_originals_irq(&back, 45), "0-3");
	ip_originals_free(&back);
	ip_originals_free(&h);
	ip_state_close(s);
	unlink(path);
}

/* Whose originals a file holds: a boot (ip_state_set_boot()) or a root
 * (ip_state_set_root()), @a's or @b's. */
struct origin {
	void (*set)(struct ip_state *s, const char *who);
	const char *a, *b;
	int err;	   /* ip_state_load() under @b of a file of @a */
	const char *line;  /* what the file of @a holds */
	const char *said;  /* and what the refusal says */
};

static void other_origin_not_loaded(const struct origin *o)
{
	struct ip_originals h, back;
	struct ip_diag d = { "" };
	struct ip_state_bads bad = { 0 };
	struct ip_state *s = open_state();

	ip_originals_init(&h);
	assert_int_equal(ip_originals_add_irq(&h, 45, "0-3"), 0);
	o->set(s, o->a);
	assert_int_equal(ip_state_save(s, &h, &d), 0);
	assert_non_null(strstr(slurp(path), o->line));
	ip_state_close(s);

	s = open_state();
	o->set(s, o->b);
	ip_originals_init(&back);
	assert_int_equal(ip_state_load(s, 32768, &back, &bad, &d), o->err);
	assert_non_null(strstr(d.msg, o->said));
	assert_true(ip_originals_empty(&back));
	ip_state_close(s);

	/* the same one, or none known (a fixture tree's boot, an older
	 * reader's root): loaded */
	for (int i = 0; i < 2; i++) {
		s = open_state();
		if (i == 0)
			o->set(s, o->a);
		assert_int_equal(ip_state_load(s, 32768, &back, &bad, &d), 0);
		assert_string_equal(ip_originals_irq(&back, 45), "0-3");
		ip_originals_free(&back);
		ip_originals_init(&back);
		ip_state_close(s);
	}
	ip_originals_free(&h);
	unlink(path);
}

/*
 * A state file from before a reboot (a --runtime-dir on a disk, not
 * /run): the reboot put every setting back already, and its records are
 * the last boot's. Loaded, they were taken for this boot's originals: an
 * IRQ the daemon then moved was not recorded as it is now (one original
 * per object), and the last boot's value was written at stop. The file
 * names its boot, and one of another boot is not loaded (-ESTALE).
 */
static void test_other_boot_not_loaded(void **state)
{
	static const struct origin o = {
		ip_state_set_boot,
		"6f1a3c1e-0d7b-4a0e-9d43-2b7c9a4c1f00",
		"0b2e6c5a-9f1d-4c3e-8a71-5d4f3e2c1b00",
		-ESTALE,
		"\n# boot 6f1a3c1e-0d7b-4a0e-9d43-2b7c9a4c1f00\n",
		"another boot",
	};

	other_origin_not_loaded(&o);
}

static void set_root(struct ip_state *s, const char *root)
{
	assert_int_equal(ip_state_set_root(s, root), 0);
}

/*
 * A daemon run on a fixture tree with this runtime directory and killed
 * left its tree's originals; the live daemon loaded them as this
 * machine's and wrote the tree's CPU lists to whatever IRQs bear those
 * numbers here at stop. The file names its root, escaped as a record's
 * names are (one line whatever the path), and one of another root is not
 * loaded (-EXDEV).
 */
static void test_other_root_not_loaded(void **state)
{
	static const struct origin o = {
		set_root,
		"/tmp/fix ture\n",
		"/",
		-EXDEV,
		"\n# root /tmp/fix\\x20ture\\x0a\n",
		"another root (/tmp/fix\\x20ture\\x0a; this is /)",
	};

	other_origin_not_loaded(&o);
}

/*
 * A tree that has a boot_id of its own (a copy of another machine's
 * /proc) is of another boot too, and its boot line comes first: the
 * other boot was said, and the daemon set the other root's file aside as
 * restored by a reboot, so the originals of the tree it was run on were
 * never written back there. Another root is said whatever the order.
 */
static void test_other_root_and_boot_is_another_root(void **state)
{
	struct ip_originals h, back;
	struct ip_diag d = { "" };
	struct ip_state_bads bad = { 0 };
	struct ip_state *s = open_state();

	ip_originals_init(&h);
	assert_int_equal(ip_originals_add_irq(&h, 45, "0-3"), 0);
	ip_state_set_boot(s, "6f1a3c1e-0d7b-4a0e-9d43-2b7c9a4c1f00");
	set_root(s, "/tmp/tree");
	assert_int_equal(ip_state_save(s, &h, &d), 0);
	ip_state_close(s);

	s = open_state();
	ip_state_set_boot(s, "0b2e6c5a-9f1d-4c3e-8a71-5d4f3e2c1b00");
	set_root(s, "/");
	ip_originals_init(&back);
	assert_int_equal(ip_state_load(s, 32768, &back, &bad, &d), -EXDEV);
	assert_non_null(strstr(d.msg, "another root (/tmp/tree; this is /)"));
	assert_true(ip_originals_empty(&back));
	ip_state_close(s);
	ip_originals_free(&h);
	unlink(path);
}

static void test_nothing_left_removes_the_file(void **state)
{
	struct ip_originals h;
	struct ip_diag d = { "" };
	struct ip_state_bads bad = { 0 };
	struct ip_state *s = open_state();

	ip_originals_init(&h);
	put(path, "irq 45 0-3\n");
	assert_int_equal(ip_state_save(s, &h, &d), 0);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(ip_state_load(s, 0, &h, &bad, &d), -ENOENT);
	ip_state_close(s);
}

/* Item 3 and 7: every bad line is reported with its number, and the
 * valid records around it still load. */
static void test_invalid_records(void **state)
{
	static const struct {
		const char *line, *why;
	} cases[] = {
		{ "irq x 0-3", "IRQ number out of range" },
		{ "irq -1 0-3", "IRQ number out of range" },
		{ "irq 4294967295 0-3", "IRQ number out of range" },
		{ "irq 46 zz", "not a CPU list" },
		{ "thread 4294967297 28 1 irq/28-x affinity 0", "pid out of range (pid_max)" },
		{ "thread 32768 28 1 irq/28-x affinity 0", "pid out of range (pid_max)" },
		{ "thread 0 28 1 irq/28-x affinity 0", "pid out of range (pid_max)" },
		{ "thread 812 28 1 irq/28-x sched 1 0", "scheduling policy or priority out of range" },
		{ "thread 812 28 1 irq/28-x sched 1 100", "scheduling policy or priority out of range" },
		{ "thread 812 28 1 irq/28-x sched 0 5", "scheduling policy or priority out of range" },
		{ "thread 812 28 1 irq/28-x sched 6 0", "scheduling policy or priority out of range" },
		{ "thread 812 28 1 irq/28-x sched 9 1", "scheduling policy or priority out of range" },
		{ "thread 812 28 affinity 0-3", "thread: want 'thread PID IRQ START COMM affinity|sched ...'" },
		{ "rq ../../x 1", "not a block device name" },
		{ "rq .. 1", "not a block device name" },
		{ "rq sda 3", "rq_affinity out of range (0-2)" },
		{ "cq a/b 8:0", "not a block device name" },
		{ "cq sdc 8", "not MAJOR:MINOR" },
		{ "nonsense", "unknown record" },
		{ "irq 47 0-3 chip=GICv3 hwirq=297", "irq: want 'irq N CPULIST [chip=C hwirq=H actions=A]'" },
		{ "irq 47 0-3 chip=GICv3 chip=GICv3 actions=ufshcd", "irq: not chip=, hwirq= and actions= once each" },
		{ "irq 47 0-3 chip=GICv3 hwirq=297 name=ufshcd", "irq: not chip=, hwirq= and actions= once each" },
		{ "irq 47 0-3 chip=GICv3 hwirq=297 actions=\\x00", "irq: not chip=, hwirq= and actions= once each" },
	};
	size_t n = sizeof(cases) / sizeof(cases[0]);
	char text[4096] = "# irqpilot state 2\nirq 45 0-3\n";
	struct ip_originals h;
	struct ip_state_bads bad = { 0 };

	for (size_t i = 0; i < n; i++) {
		strcat(text, cases[i].line);
		strcat(text, "\n");
	}
	strcat(text, "rq sda 2\n");
	ip_originals_init(&h);
	assert_int_equal(ip_state_parse(text, strlen(text), 32768, &h, &bad), 0);
	assert_int_equal(bad.n, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(bad.v[i].lineno, (int)i + 3);
		assert_string_equal(bad.v[i].why, cases[i].why);
	}
	assert_string_equal(ip_originals_irq(&h, 45), "0-3");
	assert_int_equal(h.nr_rq, 1);
	assert_int_equal(h.rq[0].value, 2);
	assert_int_equal(h.nr_threads, 0);
	ip_state_bads_free(&bad);
	ip_originals_free(&h);
}

/*
 * The vector an original is of goes to the file with it and comes back
 * whole: blanks and backslashes escaped as in a thread's comm, an empty
 * field (a line without actions) empty. A record written before the
 * identity was kept still loads, with none: restored as it was.
 */
static void test_irq_identity_round_trip(void **state)
{
	struct ip_originals h, back;
	struct ip_irq_ident id, none;
	struct ip_diag d = { "" };
	struct ip_state_bads bad = { 0 };
	struct ip_state *s = open_state();
	const struct ip_irq_ident *got;
	static const char older[] = "# irqpilot state 2\nirq 45 0-3\n";

	ip_originals_init(&h);
	ip_irq_ident_set(&id, "PCI-MSIX-0000:00:02.0", "524288-edge", "mmc0, a\\b");
	assert_int_equal(ip_originals_add_irq_id(&h, 45, "0-3", &id), 0);
	ip_irq_ident_set(&none, "IO-APIC", "9-fasteoi", "");
	assert_int_equal(ip_originals_add_irq_id(&h, 9, "0", &none), 0);
	assert_int_equal(ip_state_save(s, &h, &d), 0);
	assert_non_null(strstr(slurp(path), "irq 45 0-3 chip=PCI-MSIX-0000:00:02.0 hwirq=524288-edge "
					    "actions=mmc0,\\x20a\\x5cb\n"));
	assert_non_null(strstr(slurp(path), "irq 9 0 chip=IO-APIC hwirq=9-fasteoi actions=\n"));

	ip_originals_init(&back);
	assert_int_equal(ip_state_load(s, 32768, &back, &bad, &d), 0);
	assert_int_equal(bad.n, 0);
	assert_string_equal(ip_originals_irq(&back, 45), "0-3");
	got = ip_originals_irq_id(&back, 45);
	assert_true(got->have_hw && got->have_actions);
	assert_string_equal(got->chip, "PCI-MSIX-0000:00:02.0");
	assert_string_equal(got->hwirq, "524288-edge");
	assert_string_equal(got->actions, "mmc0, a\\b");
	got = ip_originals_irq_id(&back, 9);
	assert_true(got->have_hw && got->have_actions);
	assert_string_equal(got->actions, "");
	ip_originals_free(&back);

	ip_originals_init(&back);
	assert_int_equal(ip_state_parse(older, strlen(older), 32768, &back, &bad), 0);
	assert_int_equal(bad.n, 0);
	assert_string_equal(ip_originals_irq(&back, 45), "0-3");
	assert_false(ip_originals_irq_id(&back, 45)->have_hw || ip_originals_irq_id(&back, 45)->have_actions);
	ip_originals_free(&back);
	ip_originals_free(&h);
	ip_state_close(s);
}

/* Item 6: no link is followed, neither to read nor to write. */
/* How many bad lines @text has; the first one's reason in @why; whether
 * it yields no record in *none. */
static size_t bad_lines(const char *text, char *why, size_t size, bool *none)
{
	struct ip_state_bads bad = { 0 };
	struct ip_originals h;
	size_t n;

	ip_originals_init(&h);
	assert_int_equal(ip_state_parse(text, strlen(text), 32768, &h, &bad), 0);
	n = bad.n;
	snprintf(why, size, "%s", n ? bad.v[0].why : "");
	*none = ip_originals_empty(&h);
	ip_state_bads_free(&bad);
	ip_originals_free(&h);
	return n;
}

/* A header naming another version is a bad line, and the records after
 * it are not taken: they may mean something else there. Version 2's own
 * headers and other comments pass. */
static void test_other_version_refused(void **state)
{
	static const char *const refused[] = { "# irqpilot state 3\nirq 45 0-3\n",
					       "# irqpilot state 1: original settings\nirq 45 0-3\n",
					       "# irqpilot state 22\nirq 45 0-3\n",
					       "# irqpilot state \nirq 45 0-3\n" };
	static const char *const taken[] = { "# irqpilot state 2\nirq 45 0-3\n",
					     "# irqpilot state 2: original settings\nirq 45 0-3\n",
					     "# a comment\nirq 45 0-3\n" };
	char why[96];
	bool none;

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		assert_int_equal(bad_lines(refused[i], why, sizeof(why), &none), 1);
		assert_string_equal(why, "not a version 2 state file");
		assert_true(none);
	}
	for (size_t i = 0; i < sizeof(taken) / sizeof(taken[0]); i++) {
		assert_int_equal(bad_lines(taken[i], why, sizeof(why), &none), 0);
		assert_false(none);
	}
}

/* Duplicate records (a hand edit, a concatenated file): the first is the
 * original for a thread as for an IRQ, never a later value. */
static void test_duplicates_first_wins(void **state)
{
	static const char text[] = "# irqpilot state 2\n"
				   "irq 45 0-3\n"
				   "thread 812 28 4711 irq/28-x affinity 0-3\n"
				   "thread 812 28 4711 irq/28-x sched 1 50\n"
				   "irq 45 7\n"
				   "thread 812 28 4711 irq/28-x affinity 6\n"
				   "thread 812 28 4711 irq/28-x sched 2 10\n";
	struct ip_state_bads bad = { 0 };
	struct ip_originals h;

	ip_originals_init(&h);
	assert_int_equal(ip_state_parse(text, strlen(text), 32768, &h, &bad), 0);
	assert_int_equal(bad.n, 0);
	assert_string_equal(ip_originals_irq(&h, 45), "0-3");
	assert_int_equal(h.nr_threads, 1);
	assert_true(h.threads[0].have_affinity);
	assert_string_equal(cpuset_str(&h.threads[0].allowed), "0-3");
	assert_true(h.threads[0].have_sched);
	assert_int_equal(h.threads[0].policy, 1);
	assert_int_equal(h.threads[0].priority, 50);
	ip_state_bads_free(&bad);
	ip_originals_free(&h);
}

/* A file of garbage up to the 16 MiB that load reads: every bad line is
 * counted, only the first few are kept, and the parse does not take the
 * quadratic time (hours under ASan) of one realloc per kept line. */
static void test_garbage_file_counted_not_kept(void **state)
{
	size_t lines = 4u << 20, len = 2 * lines;
	char *text = malloc(len);
	struct ip_state_bads bad = { 0 };
	struct ip_originals h;

	assert_non_null(text);
	for (size_t i = 0; i < lines; i++)
		memcpy(text + 2 * i, "x\n", 2);
	ip_originals_init(&h);
	assert_int_equal(ip_state_parse(text, len, 32768, &h, &bad), 0);
	assert_int_equal(bad.n, lines);
	assert_int_equal(bad.kept, IP_STATE_BADS_KEPT);
	assert_int_equal(bad.v[0].lineno, 1);
	assert_int_equal(bad.v[IP_STATE_BADS_KEPT - 1].lineno, IP_STATE_BADS_KEPT);
	assert_string_equal(bad.v[0].why, "unknown record");
	assert_true(ip_originals_empty(&h));
	ip_state_bads_free(&bad);
	ip_originals_free(&h);
	free(text);
}

/* CPU seconds this process has used. */
static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A file with many records in falling order, each object twice: each
 * record used to cost a search of those before it and the move of the
 * greater ones, so 100000 of a kind took minutes (80000 thread records
 * 15 s). The first record of an object still wins, the arrays come out
 * sorted, and the whole load takes well under a second. */
static void test_many_records_load_fast(void **state)
{
	enum { N = 100000 };
	size_t cap = (size_t)N * 2 * 160, len = 0;
	char *text = malloc(cap);
	struct ip_state_bads bad = { 0 };
	struct ip_originals h;
	double t0;

	assert_non_null(text);
	for (int pass = 0; pass < 2; pass++)
		for (int i = N; i > 0; i--)
			len += (size_t)snprintf(text + len, cap - len,
						"irq %d %d\nthread %d 28 %d irq/28-x affinity %d\n"
						"thread %d 28 %d irq/28-x sched 1 %d\nrq d%d %d\n",
						i, pass, i, i, pass, i, i, 1 + pass, i, pass);
	ip_originals_init(&h);
	t0 = cpu_seconds();
	assert_int_equal(ip_state_parse(text, len, 4194304, &h, &bad), 0);
	assert_true(cpu_seconds() - t0 < 5.0);
	assert_int_equal(bad.n, 0);
	assert_int_equal(h.nr_irqs, N);
	assert_int_equal(h.nr_threads, N);
	assert_int_equal(h.nr_rq, N);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(h.irqs[i].irq, i + 1);
		assert_string_equal(h.irqs[i].list, "0");
		assert_int_equal(h.threads[i].pid, (pid_t)i + 1);
		assert_string_equal(cpuset_str(&h.threads[i].allowed), "0");
		assert_int_equal(h.threads[i].priority, 1);
		assert_int_equal(h.rq[i].value, 0);
	}
	assert_true(ip_originals_rq(&h, "d77"));
	assert_false(ip_originals_rq(&h, "d0"));
	ip_state_bads_free(&bad);
	ip_originals_free(&h);
	free(text);
}

static void test_links_refused(void **state)
{
	struct ip_originals h;
	struct ip_diag d = { "" };
	struct ip_state_bads bad = { 0 };
	struct ip_state *s = open_state();
	char tmp[160];

	put(victim, "precious\n");
	assert_int_equal(symlink(victim, path), 0);
	ip_originals_init(&h);
	assert_int_equal(ip_state_load(s, 0, &h, &bad, &d), -ELOOP);
	assert_non_null(strstr(d.msg, "symbolic link"));
	unlink(path);
	/* a planted temporary file: replaced, its target untouched */
	snprintf(tmp, sizeof(tmp), "%s/state.tmp", dir);
	assert_int_equal(symlink(victim, tmp), 0);
	assert_int_equal(ip_originals_add_irq(&h, 45, "0-3"), 0);
	assert_int_equal(ip_state_save(s, &h, &d), 0);
	assert_string_equal(slurp(victim), "precious\n");
	assert_non_null(strstr(slurp(path), "irq 45 0-3\n"));
	ip_originals_free(&h);
	ip_state_close(s);
}

static void test_runtime_dir_checked(void **state)
{
	struct ip_state *s = NULL;
	struct ip_diag d = { "" };
	char link[160];

	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(ip_state_open(dir, &s, &d), -EPERM);
	assert_non_null(strstr(d.msg, "writable by no one else"));
	assert_int_equal(chmod(dir, 0720), 0);
	assert_int_equal(ip_state_open(dir, &s, &d), -EPERM);
	assert_int_equal(chmod(dir, 0700), 0);
	if (geteuid() == 0) {
		assert_int_equal(chown(dir, 65534, 0), 0);
		assert_int_equal(ip_state_open(dir, &s, &d), -EPERM);
		assert_int_equal(chown(dir, 0, 0), 0);
	}
	snprintf(link, sizeof(link), "%s.link", dir);
	assert_int_equal(symlink(dir, link), 0);
	assert_int_equal(ip_state_open(link, &s, &d), -ELOOP);
	unlink(link);
}

/* --restore moves an unparsable file aside; it is never deleted. */
static void test_set_aside(void **state)
{
	struct ip_originals h;
	struct ip_diag d = { "" };
	struct ip_state_bads bad = { 0 };
	struct ip_state *s = open_state();
	char *aside = NULL;

	put(path, "irq 45 0-3\nirq x y\n");
	ip_originals_init(&h);
	assert_int_equal(ip_state_load(s, 0, &h, &bad, &d), 0);
	assert_int_equal(bad.n, 1);
	assert_int_equal(bad.v[0].lineno, 2);
	assert_int_equal(ip_state_set_aside(s, &aside, &d), 0);
	assert_non_null(strstr(aside, "/state.invalid-"));
	assert_string_equal(slurp(aside), "irq 45 0-3\nirq x y\n");
	/* the state file stays until the valid records replace it */
	assert_string_equal(slurp(path), "irq 45 0-3\nirq x y\n");
	assert_int_equal(ip_state_save(s, &h, &d), 0);
	assert_non_null(strstr(slurp(path), "\nirq 45 0-3\n"));
	assert_null(strstr(slurp(path), "irq x"));
	assert_string_equal(slurp(aside), "irq 45 0-3\nirq x y\n");
	unlink(path);
	unlink(aside);
	free(aside);
	ip_state_bads_free(&bad);
	ip_originals_free(&h);
	ip_state_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_irq_identity_round_trip),
		cmocka_unit_test(test_many_records_unchanged_not_written),
		cmocka_unit_test(test_changed_behind_our_back),
		cmocka_unit_test(test_nothing_left_removes_the_file),
		cmocka_unit_test(test_invalid_records),
		cmocka_unit_test(test_other_version_refused),
		cmocka_unit_test(test_duplicates_first_wins),
		cmocka_unit_test(test_garbage_file_counted_not_kept),
		cmocka_unit_test(test_many_records_load_fast),
		cmocka_unit_test(test_links_refused),
		cmocka_unit_test(test_runtime_dir_checked),
		cmocka_unit_test(test_set_aside),
		cmocka_unit_test(test_mode_changed_behind_our_back),
		cmocka_unit_test(test_other_boot_not_loaded),
		cmocka_unit_test(test_other_root_not_loaded),
		cmocka_unit_test(test_other_root_and_boot_is_another_root),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
