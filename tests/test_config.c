// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include <sys/stat.h>

#include "irqpilot/config.h"

#define NAME "/etc/irqpilot/irqpilot.conf"

static ip_cpuset cpus(const char *list)
{
	ip_cpuset s;

	assert_int_equal(cpuset_parse_list(&s, list), 0);
	return s;
}

static void assert_cpus(const ip_cpuset *s, const char *list)
{
	ip_cpuset want = cpus(list);

	if (!cpuset_equal(s, &want))
		fail_msg("CPUs %s, expected %s", cpuset_str(s), list);
}

/* Loads @text, which must fail with exactly @msg. */
static void assert_error(const char *text, const char *msg)
{
	struct ip_config c;
	struct ip_diag d = { "" };

	ip_config_init(&c);
	assert_int_equal(ip_config_load_string(text, NAME, &c, &d), -EINVAL);
	assert_string_equal(d.msg, msg);
	ip_config_free(&c);
}

static void load_ok(const char *text, struct ip_config *c)
{
	struct ip_diag d = { "" };
	int r;

	ip_config_init(c);
	r = ip_config_load_string(text, NAME, c, &d);
	if (r)
		fail_msg("load failed: %d %s", r, d.msg);
}

static void test_defaults(void **state)
{
	struct ip_config c, e;
	struct ip_diag d = { "" };

	ip_config_init(&c);
	assert_true(c.daemon.interval_s == 2);
	assert_false(c.daemon.dry_run);
	assert_true(c.daemon.restore_on_exit);
	assert_int_equal(c.daemon.log_level, LOG_INFO);
	assert_false(c.daemon.coexist);
	assert_true(c.daemon.top_wakeups_per_irq == 10);
	assert_true(c.daemon.top_thread_cpu == 20);
	assert_false(c.overrides.have_performance);
	assert_false(c.overrides.have_efficiency);
	assert_true(c.policy.move_threshold == 0.20);
	assert_int_equal(c.policy.rt_priority, 50);
	assert_int_equal(c.policy.granularity, IP_GRAN_CPU);
	assert_true(cpuset_empty(&c.policy.banned));
	assert_int_equal(c.policy.completion_threads, IP_COMPLETION_AUTO);
	assert_int_equal(c.policy.nr_dev_rules, 0);

	/* An empty or comment-only file is the built-in defaults. */
	load_ok("# nothing here\n\n; nor here\n", &e);
	assert_true(ip_config_equal(&c, &e));
	ip_config_free(&e);

	/* A missing file is -ENOENT with the path, for the caller to judge. */
	assert_int_equal(ip_config_load_file("/nonexistent/irqpilot.conf", true, &c, &d), -ENOENT);
	assert_string_equal(d.msg, "/nonexistent/irqpilot.conf: No such file or directory");
	ip_config_free(&c);
}

static const char *const full_text =
	"[daemon]\n"
	"interval = 0.5\n"
	"dry_run = yes\n"
	"restore_on_exit = off\n"
	"log_level = debug\n"
	"coexist = TRUE\n"
	"top_wakeups_per_irq = 4\n"
	"top_thread_cpu = 35.5\n"
	"\n"
	"[cpus]\n"
	"banned = 0\n"
	"performance = 4-7\n"
	"efficiency = 1-3\n"
	"\n"
	"[policy]\n"
	"granularity = domain\n"
	"move_threshold = 35\n"
	"dwell = 12.5\n"
	"max_moves = 9\n"
	"min_rate = 50\n"
	"idle_domain = stay\n"
	"idle_grace = 0\n"
	"return_window = 120\n"
	"rt_priority = 0\n"
	"completion_threads = no\n"
	"\n"
	"[device \"mmcblk*\"]\n"
	"pin = 0-3\n"
	"rt_priority = 60\n"
	"rq_affinity = 2\n"
	"completion_threads = yes\n"
	"\n"
	"[device sd[ab]]\n"
	"ban = yes\n"
	"\n"
	"[irq \"nvme*q0\"]\n"
	"pin = 1\n"
	"rt_priority = 1\n"
	"\n"
	"[irq 45]\n"
	"ban = on\n";

static void test_every_key(void **state)
{
	struct ip_config c;
	const struct ip_rule *r;

	load_ok(full_text, &c);
	assert_true(c.daemon.interval_s == 0.5);
	assert_true(c.daemon.dry_run);
	assert_false(c.daemon.restore_on_exit);
	assert_int_equal(c.daemon.log_level, LOG_DEBUG);
	assert_true(c.daemon.coexist);
	assert_true(c.daemon.top_wakeups_per_irq == 4);
	assert_true(c.daemon.top_thread_cpu == 35.5);

	assert_cpus(&c.policy.banned, "0");
	assert_true(c.overrides.have_performance);
	assert_cpus(&c.overrides.performance, "4-7");
	assert_true(c.overrides.have_efficiency);
	assert_cpus(&c.overrides.efficiency, "1-3");

	assert_int_equal(c.policy.granularity, IP_GRAN_DOMAIN);
	assert_true(c.policy.move_threshold == 0.35);
	assert_true(c.policy.dwell_s == 12.5);
	assert_int_equal(c.policy.max_moves, 9);
	assert_true(c.policy.min_rate == 50);
	assert_int_equal(c.policy.idle_domain, IP_IDLE_STAY);
	assert_true(c.policy.idle_grace_s == 0);
	assert_true(c.policy.return_window_s == 120);
	assert_int_equal(c.policy.rt_priority, 0);
	assert_int_equal(c.policy.completion_threads, IP_COMPLETION_NO);

	assert_int_equal(c.policy.nr_dev_rules, 2);
	r = &c.policy.dev_rules[0];
	assert_string_equal(r->match, "mmcblk*");
	assert_true(r->have_pin);
	assert_cpus(&r->pin, "0-3");
	assert_false(r->ban);
	assert_int_equal(r->rt_priority, 60);
	assert_int_equal(r->rq_affinity, 2);
	assert_int_equal(r->completion_threads, IP_COMPLETION_YES);
	r = &c.policy.dev_rules[1];
	assert_string_equal(r->match, "sd[ab]");
	assert_true(r->ban);
	assert_false(r->have_pin);
	assert_int_equal(r->rt_priority, -1);
	assert_int_equal(r->rq_affinity, -1);
	assert_int_equal(r->completion_threads, IP_COMPLETION_INHERIT);

	assert_int_equal(c.policy.nr_irq_rules, 2);
	r = &c.policy.irq_rules[0];
	assert_string_equal(r->match, "nvme*q0");
	assert_cpus(&r->pin, "1");
	assert_int_equal(r->rt_priority, 1);
	assert_int_equal(r->rq_affinity, -1);
	assert_string_equal(c.policy.irq_rules[1].match, "45");
	assert_true(c.policy.irq_rules[1].ban);

	/* Globs: the last matching section that sets it wins. */
	assert_int_equal(ip_policy_completion_threads(&c.policy, "mmcblk0", &r), IP_COMPLETION_YES);
	assert_ptr_equal(r, &c.policy.dev_rules[0]);
	assert_int_equal(ip_policy_completion_threads(&c.policy, "sda", &r), IP_COMPLETION_NO);
	assert_null(r);
	assert_int_equal(ip_policy_completion_threads(&c.policy, "nvme0n1", NULL), IP_COMPLETION_NO);
	ip_config_free(&c);
}

static void round_trip(const struct ip_config *c);

static void test_syntax(void **state)
{
	struct ip_config c;

	/* Comments (whole-line and inline, '#' and ';'), indentation, CRLF,
	 * a BOM, quoted values, ':' and unquoted or quoted names. */
	load_ok("\xef\xbb\xbf# policy\r\n"
		"[daemon] ; the daemon\r\n"
		"    interval = 5   # seconds\r\n"
		"\tdry_run=1\n",
		&c);
	assert_true(c.daemon.interval_s == 5);
	assert_true(c.daemon.dry_run);
	ip_config_free(&c);
	assert_error("[daemon]\ndry_run=1;x\n",
		     NAME ":2: dry_run: '1;x' is not a boolean (yes, no, true, false, on, off, 1 or 0)");

	load_ok("[daemon]\n    interval = 5   # seconds\n  log_level: \"err\"\n"
		"[ device   \"dm#1\" ]\n"
		"ban = yes\n"
		"[device nvme*]   # unquoted\n"
		"[device \" spaced \"]\n",
		&c);
	assert_true(c.daemon.interval_s == 5);
	assert_int_equal(c.daemon.log_level, LOG_ERR);
	assert_int_equal(c.policy.nr_dev_rules, 3);
	assert_string_equal(c.policy.dev_rules[0].match, "dm#1");
	assert_true(c.policy.dev_rules[0].ban);
	assert_string_equal(c.policy.dev_rules[1].match, "nvme*");
	assert_false(c.policy.dev_rules[1].ban);
	assert_string_equal(c.policy.dev_rules[2].match, " spaced ");
	ip_config_free(&c);

	/* Inside double quotes ';' and '#' after a blank are plain characters
	 * in values too (inih alone would cut the value at " ;"), and the dump
	 * quotes such a path so that it loads back the same. */
	load_ok("[daemon]\nmetrics_textfile = \"/var/lib/m ;1 #2.prom\" ; comment\n", &c);
	assert_string_equal(c.daemon.metrics_textfile, "/var/lib/m ;1 #2.prom");
	round_trip(&c);
	ip_config_free(&c);

	/* Repeated sections with the same glob are separate rules, in order;
	 * repeated [daemon] sections are one. */
	load_ok("[device \"sd*\"]\nrt_priority = 10\n[daemon]\ninterval=3\n"
		"[device sd*]\nrt_priority = 20\n[daemon]\ndry_run = yes\n",
		&c);
	assert_int_equal(c.policy.nr_dev_rules, 2);
	assert_int_equal(c.policy.dev_rules[0].rt_priority, 10);
	assert_int_equal(c.policy.dev_rules[1].rt_priority, 20);
	assert_true(c.daemon.interval_s == 3);
	assert_true(c.daemon.dry_run);
	ip_config_free(&c);
}

static void test_value_errors(void **state)
{
	assert_error("# 1\n#2\n#3\n#4\n#5\n#6\n#7\n#8\n#9\n#10\n[policy]\nmove_threshold = 150\n",
		     NAME ":12: move_threshold: '150' is not a number from 1 to 100");
	assert_error("[policy]\nmove_threshold = 0.5\n",
		     NAME ":2: move_threshold: '0.5' is not a number from 1 to 100");
	assert_error("[daemon]\ninterval = 0.05\n",
		     NAME ":2: interval: '0.05' is not a number from 0.1 to 3600");
	assert_error("[daemon]\ninterval = 2s\n",
		     NAME ":2: interval: '2s' is not a number from 0.1 to 3600");
	assert_error("[daemon]\ninterval = inf\n",
		     NAME ":2: interval: 'inf' is not a number from 0.1 to 3600");
	assert_error("[daemon]\ninterval = -1\n",
		     NAME ":2: interval: '-1' is not a number from 0.1 to 3600");
	assert_error("[daemon]\ninterval =\n",
		     NAME ":2: interval: '' is not a number from 0.1 to 3600");
	assert_error("[daemon]\nlog_level = verbose\n",
		     NAME ":2: log_level: 'verbose' is not err, warning, notice, info or debug");
	assert_error("[daemon]\ncoexist = maybe\n",
		     NAME ":2: coexist: 'maybe' is not a boolean (yes, no, true, false, on, off, 1 or 0)");
	assert_error("[daemon]\ntop_thread_cpu = 101\n",
		     NAME ":2: top_thread_cpu: '101' is not a number from 0 to 100");
	assert_error("[policy]\nmax_moves = 2.5\n",
		     NAME ":2: max_moves: '2.5' is not a whole number from 1 to 1000");
	assert_error("[policy]\nmax_moves = 0\n",
		     NAME ":2: max_moves: '0' is not a whole number from 1 to 1000");
	assert_error("[policy]\nrt_priority = 100\n",
		     NAME ":2: rt_priority: '100' is not a whole number from 0 to 99 "
			  "(0 leaves the threads' priority alone)");
	assert_error("[policy]\ngranularity = socket\n",
		     NAME ":2: granularity: 'socket' is not cpu or domain");
	assert_error("[policy]\nidle_domain = home\n",
		     NAME ":2: idle_domain: 'home' is not efficiency or stay");
	assert_error("[policy]\ncompletion_threads = maybe\n",
		     NAME ":2: completion_threads: 'maybe' is not auto, yes or no");
	assert_error("[policy]\nmin_rate = -5\n",
		     NAME ":2: min_rate: '-5' is not a number from 0 to 1000000000");
	assert_error("[cpus]\nbanned = 0-3,\n",
		     NAME ":2: banned: '0-3,' is not a CPU list such as 0-3,8");
	assert_error("[cpus]\nperformance = 5000\n",
		     NAME ":2: performance: '5000' names a CPU above 1023");
	assert_error("[cpus]\nefficiency =\n", NAME ":2: efficiency: needs a CPU list such as 0-3,8");
	assert_error("[device sda]\nrt_priority = 0\n",
		     NAME ":2: rt_priority: '0' is not a whole number from 1 to 99");
	assert_error("[device sda]\nrq_affinity = 3\n",
		     NAME ":2: rq_affinity: '3' is not a whole number from 0 to 2");
	assert_error("[irq 45]\npin = 2-1\n", NAME ":2: pin: '2-1' is not a CPU list such as 0-3,8");
	assert_error("[irq 45]\npin =\n", NAME ":2: pin: needs a CPU list such as 0-3,8");
}

static void test_structure_errors(void **state)
{
	assert_error("\n[demon]\ninterval = 2\n",
		     NAME ":2: unknown section [demon] "
			  "(known: [daemon], [cpus], [policy], [control], [device NAME], [irq NAME])");
	assert_error("[daemon]\nintervall = 2\n",
		     NAME ":2: unknown key 'intervall' in [daemon] (known: interval, dry_run, "
			  "restore_on_exit, log_level, coexist, top_wakeups_per_irq, top_thread_cpu, metrics_textfile)");
	assert_error("[irq nvme0q1]\nrq_affinity = 1\n",
		     NAME ":2: rq_affinity: only in [device] sections, not [irq]");
	assert_error("[irq nvme0q1]\ncompletion_threads = yes\n",
		     NAME ":2: completion_threads: only in [device] sections, not [irq]");
	assert_error("[policy]\nrq_affinity = 1\n", NAME ":2: rq_affinity: only in [device] sections");
	assert_error("interval = 2\n",
		     NAME ":1: 'interval' is outside any section; put it under [daemon], [cpus], [policy] or [control]");
	assert_error("[daemon\ninterval = 2\n", NAME ":1: section header '[daemon' lacks its closing ']'");
	assert_error("[daemon main]\n", NAME ":1: [daemon] takes no name, found 'main'");
	assert_error("[device]\n",
		     NAME ":1: [device] needs a device name or glob, e.g. [device \"nvme*\"]");
	assert_error("[irq \"\"]\n", NAME ":1: [irq] needs a device name or glob, e.g. [irq \"nvme*q0\"]");
	assert_error("[device \"nvme*]\n",
		     NAME ":1: [device \"nvme*]: the quoted name lacks its closing '\"'");
	assert_error("[device a\"b]\n",
		     NAME ":1: [device a\"b]: a name cannot contain '\"' except around it");
	assert_error("[daemon]\ndry_run\n",
		     NAME ":2: expected 'key = value' or '[section]', found 'dry_run'");
	assert_error("[daemon]\n= yes\n", NAME ":2: '= yes' has no key before '='");

	char line[400];

	snprintf(line, sizeof(line), "[cpus]\nbanned = 0%0300d\n", 0);
	assert_error(line, NAME ":2: line too long (more than 199 characters without comments)");
	/* ... but comments do not count. */
	snprintf(line, sizeof(line), "[cpus]\nbanned = 0 # %0300d\n", 0);
	struct ip_config c;

	load_ok(line, &c);
	assert_cpus(&c.policy.banned, "0");
	ip_config_free(&c);
}

static void test_duplicates_and_conflicts(void **state)
{
	assert_error("[daemon]\ninterval = 2\ndry_run = no\ninterval = 3\n",
		     NAME ":4: interval: already set at line 2");
	/* A repeated [policy] is the same section. */
	assert_error("[policy]\ndwell = 2\n[daemon]\n[policy]\ndwell = 3\n",
		     NAME ":5: dwell: already set at line 2");
	assert_error("[device sda]\nrt_priority = 5\nrt_priority = 6\n",
		     NAME ":3: rt_priority: already set at line 2");
	assert_error("[cpus]\nperformance = 2-7\n\nefficiency = 0-3\n",
		     NAME ":4: efficiency: CPUs 2-3 are also performance (line 2); a CPU has one class");
	assert_error("[cpus]\nefficiency = 0-3\nperformance = 3\n",
		     NAME ":3: performance: CPUs 3 are also efficiency (line 2); a CPU has one class");
	assert_error("[irq 45]\npin = 1\nban = yes\n",
		     NAME ":3: ban: conflicts with 'pin' (line 2): a banned IRQ is never moved");
	assert_error("[device sda]\nban = true\npin = 1\n",
		     NAME ":3: pin: conflicts with 'ban = yes' (line 2): a banned IRQ is never moved");

	/* Not conflicts: ban = no with a pin, and the same key in two rules. */
	struct ip_config c;

	load_ok("[irq 45]\nban = no\npin = 1\n[irq 45]\npin = 2\n", &c);
	assert_int_equal(c.policy.nr_irq_rules, 2);
	assert_cpus(&c.policy.irq_rules[1].pin, "2");
	ip_config_free(&c);
}

static void test_first_error_and_count(void **state)
{
	assert_error("[daemon]\ninterval = 0\n[bogus]\nx = 1\n[policy]\nmax_moves = x\ndwell = y\n",
		     NAME ":2: interval: '0' is not a number from 0.1 to 3600 (and 3 more errors)");
	assert_error("[daemon]\ninterval = 0\ninterval = 1\n",
		     NAME ":2: interval: '0' is not a number from 0.1 to 3600 (and 1 more error)");
}

/* What the message quotes of the file is printable: ESC and C1 controls
 * in a key or value went raw to the terminal. */
static void test_error_quotes_no_controls(void **state)
{
	assert_error("[daemon]\n\x1b]0;x\x07key\x1b[31m = 1\n",
		     NAME ":2: unknown key '?]0;x?key?[31m' in [daemon] (known: interval, dry_run, "
			  "restore_on_exit, log_level, coexist, top_wakeups_per_irq, top_thread_cpu, "
			  "metrics_textfile)");
	assert_error("[daemon]\ninterval = \xc2\x9b" "2J\xc3\xa9\n",
		     NAME ":2: interval: '??2J\xc3\xa9' is not a number from 0.1 to 3600");
}

static void test_error_keeps_old(void **state)
{
	struct ip_config c, before;
	struct ip_diag d = { "" };

	load_ok(full_text, &c);
	load_ok(full_text, &before);
	assert_int_equal(ip_config_load_string("[daemon]\ninterval = 2\n[policy]\ndwell = x\n", NAME,
					       &c, &d),
			 -EINVAL);
	assert_true(ip_config_equal(&c, &before));
	assert_int_equal(c.policy.nr_dev_rules, 2);

	/* Success replaces it whole, rules included. */
	assert_int_equal(ip_config_load_string("[daemon]\ninterval = 7\n", NAME, &c, &d), 0);
	assert_true(c.daemon.interval_s == 7);
	assert_int_equal(c.policy.nr_dev_rules, 0);
	ip_config_free(&c);
	ip_config_free(&before);
}

static void round_trip(const struct ip_config *c)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	struct ip_config back;
	struct ip_diag d = { "" };

	assert_non_null(f);
	assert_int_equal(ip_config_dump(c, f), 0);
	fclose(f);
	ip_config_init(&back);
	if (ip_config_load_string(buf, "dump", &back, &d))
		fail_msg("dump does not load: %s\n%s", d.msg, buf);
	if (!ip_config_equal(c, &back))
		fail_msg("dump loads differently:\n%s", buf);
	ip_config_free(&back);
	free(buf);
}

static void test_control_admin_group(void **state)
{
	struct ip_config c, def;
	struct ip_diag d = { "" };
	char *buf = NULL;
	size_t size = 0;
	FILE *f;

	ip_config_init(&def);
	assert_string_equal(def.control.admin_group, "");
	load_ok("[control]\nadmin_group = irq-admins\n", &c);
	assert_string_equal(c.control.admin_group, "irq-admins");
	assert_false(ip_config_equal(&c, &def));
	round_trip(&c);
	f = open_memstream(&buf, &size);
	assert_int_equal(ip_config_dump(&c, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "[control]\nadmin_group = irq-admins\n"));
	free(buf);
	ip_config_free(&c);
	/* Samba machine accounts end in '$' */
	load_ok("[control]\nadmin_group = \"host$\"\n", &c);
	assert_string_equal(c.control.admin_group, "host$");
	ip_config_free(&c);

	assert_error("[control]\nadmin_group = a b\n",
		     NAME ":2: admin_group: 'a b' is not a group name (letters, digits, '_', '-', '.', at most 32)");
	assert_error("[control]\nadmin_group = -x\n",
		     NAME ":2: admin_group: '-x' is not a group name (letters, digits, '_', '-', '.', at most 32)");
	assert_error("[control]\nadmin_group = ../wheel\n",
		     NAME ":2: admin_group: '../wheel' is not a group name (letters, digits, '_', '-', '.', at most 32)");
	assert_error("[control]\nadmin_group = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
		     NAME ":2: admin_group: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' is not a group name (letters, digits, '_', '-', '.', at most 32)");
	assert_error("[control]\nadmin_group =\n",
		     NAME ":2: admin_group: '' is not a group name (letters, digits, '_', '-', '.', at most 32)");
	assert_error("[daemon]\nadmin_group = adm\n",
		     NAME ":2: unknown key 'admin_group' in [daemon] (known: interval, dry_run, restore_on_exit, "
			  "log_level, coexist, top_wakeups_per_irq, top_thread_cpu, metrics_textfile)");
	assert_error("[control]\ninterval = 2\n",
		     NAME ":2: unknown key 'interval' in [control] (known: admin_group)");
	assert_error("[control x]\n", NAME ":1: [control] takes no name, found 'x'");
	(void)d;
	ip_config_free(&def);
}

static void test_dump_round_trip(void **state)
{
	struct ip_config c;
	char *buf = NULL;
	size_t size = 0;
	FILE *f;

	ip_config_init(&c);
	round_trip(&c);
	ip_config_free(&c);

	load_ok(full_text, &c);
	round_trip(&c);

	f = open_memstream(&buf, &size);
	assert_int_equal(ip_config_dump(&c, f), 0);
	fclose(f);
	/* What a user reads in --check-config -v. */
	assert_non_null(strstr(buf, "[daemon]\ninterval = 0.5\ndry_run = yes\n"));
	assert_non_null(strstr(buf, "move_threshold = 35\n"));
	assert_non_null(strstr(buf, "log_level = debug\n"));
	assert_non_null(strstr(buf, "[device \"mmcblk*\"]\npin = 0-3\nrt_priority = 60\n"
				    "rq_affinity = 2\ncompletion_threads = yes\n"));
	assert_non_null(strstr(buf, "[device \"sd[ab]\"]\nban = yes\n"));
	assert_non_null(strstr(buf, "[irq \"45\"]\nban = yes\n"));
	free(buf);
	ip_config_free(&c);

	/* Awkward numbers survive the percent scaling and decimal printing. */
	load_ok("[policy]\nmove_threshold = 7\ndwell = 0.1\nmin_rate = 0.3\n"
		"[daemon]\ninterval = 3599.999\n",
		&c);
	round_trip(&c);
	ip_config_free(&c);
}

static void test_load_file(void **state)
{
	char path[] = "/tmp/test_config.XXXXXX";
	struct ip_config c;
	struct ip_diag d = { "" };
	char msg[600];
	int fd = mkstemp(path);
	static const char text[] = "[daemon]\ninterval = 3\n\0[policy]\n";

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	ip_config_init(&c);
	assert_int_equal(ip_config_load_file(path, true, &c, &d), 0);
	assert_true(c.daemon.interval_s == 3);

	assert_int_equal(write(fd, "x = 1\n", 6), 6);
	assert_int_equal(ip_config_load_file(path, true, &c, &d), -EINVAL);
	snprintf(msg, sizeof(msg), "%s:3: unknown key 'x' in [daemon] (known: interval, dry_run, "
		 "restore_on_exit, log_level, coexist, top_wakeups_per_irq, top_thread_cpu, metrics_textfile)", path);
	assert_string_equal(d.msg, msg);
	assert_true(c.daemon.interval_s == 3);

	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	assert_int_equal(ip_config_load_file(path, true, &c, &d), -EINVAL);
	snprintf(msg, sizeof(msg), "%s:6: contains a NUL byte; not a text file?", path);
	assert_string_equal(d.msg, msg);
	close(fd);
	unlink(path);

	/* A FIFO in the file's place is refused at once: waiting for a writer
	 * would hang a reloading daemon. */
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(10);
	assert_int_equal(ip_config_load_file(path, true, &c, &d), -EINVAL);
	alarm(0);
	snprintf(msg, sizeof(msg), "%s: is a pipe or socket, not a file", path);
	assert_string_equal(d.msg, msg);
	unlink(path);
	ip_config_free(&c);
}

/* The shipped example must load, and its commented-out defaults must be
 * the real ones: uncommenting every key gives the built-in configuration. */
static void test_shipped_example(void **state)
{
	struct ip_config c, def;
	struct ip_diag d = { "" };
	FILE *f = fopen(TOP_SRCDIR "/conf/irqpilot.conf", "r");
	char *out = NULL, line[512];
	size_t osize = 0;
	FILE *o;

	assert_non_null(f);
	ip_config_init(&c);
	assert_int_equal(ip_config_load_file(TOP_SRCDIR "/conf/irqpilot.conf", true, &c, &d), 0);
	ip_config_init(&def);
	assert_true(ip_config_equal(&c, &def));
	ip_config_free(&c);

	/* Uncomment "#key = value" and "#[section]" lines. */
	o = open_memstream(&out, &osize);
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' && (line[1] == '[' || (line[1] >= 'a' && line[1] <= 'z' &&
							  strchr(line, '='))))
			fputs(line + 1, o);
	}
	fclose(o);
	fclose(f);
	ip_config_init(&c);
	if (ip_config_load_string(out, "uncommented", &c, &d))
		fail_msg("%s\n%s", d.msg, out);
	/* The example sections aside, every value is the default. */
	assert_true(c.policy.nr_dev_rules >= 1);
	assert_string_equal(c.policy.dev_rules[0].match, "mmcblk*");
	assert_true(c.policy.nr_irq_rules >= 1);
	assert_string_equal(c.policy.irq_rules[0].match, "nvme*q0");
	/* ip_config_free drops the rules and keeps the scalars. */
	ip_config_free(&c);
	if (!ip_config_equal(&c, &def))
		fail_msg("commented defaults differ from the built-in ones:\n%s", out);
	free(out);
	ip_config_free(&def);
}

/* ---- the key table ---------------------------------------------------- */

/* A section where table key @k may be written, as "[daemon]" or "[device sda]". */
static void key_header(const struct ip_config_key *k, char *buf, size_t size)
{
	for (int s = IP_SECT_DAEMON; s < IP_SECT_MAX; s++) {
		if (!(k->sections & IP_SECT_BIT(s)))
			continue;
		if (s == IP_SECT_DEVICE || s == IP_SECT_IRQ)
			snprintf(buf, size, "[%s sda]", ip_config_section_name(s));
		else
			snprintf(buf, size, "[%s]", ip_config_section_name(s));
		return;
	}
	fail_msg("%s: in no section", k->key);
}

/* A plain decimal, as the parser takes it (no exponent). */
static void fmt_plain(char *buf, size_t size, double v)
{
	if (v == (double)(long long)v)
		snprintf(buf, size, "%lld", (long long)v);
	else
		snprintf(buf, size, "%g", v);
}

/* Every key with a default loads from "key = DEFAULT" to the built-in
 * configuration: the table's defaults are values the parser takes, and
 * ip_config_init() is what they say. */
static void test_table_defaults(void **state)
{
	size_t n;
	const struct ip_config_key *keys = ip_config_keys(&n);
	struct ip_config def;
	int with_default = 0;

	assert_true(n >= 20);
	ip_config_init(&def);
	for (size_t i = 0; i < n; i++) {
		const struct ip_config_key *k = &keys[i];
		char text[256], head[64];
		struct ip_config c;

		assert_non_null(k->doc);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(keys[j].key, k->key) && (keys[j].sections & k->sections))
				fail_msg("%s: twice in one section", k->key);
		if (!k->def)
			continue;
		with_default++;
		key_header(k, head, sizeof(head));
		snprintf(text, sizeof(text), "%s\n%s = %s\n", head, k->key, k->def);
		load_ok(text, &c);
		if (!ip_config_equal(&c, &def))
			fail_msg("'%s' is not the built-in default", text);
		ip_config_free(&c);
	}
	/* Every key of [daemon], [cpus] and [policy] but performance and
	 * efficiency, which are detected. */
	assert_int_equal(with_default, 19);
	ip_config_free(&def);
}

/* A value beyond a key's range, or of the wrong kind, is refused with the
 * file, the line and the key. */
static void test_table_refuses(void **state)
{
	size_t n;
	const struct ip_config_key *keys = ip_config_keys(&n);

	for (size_t i = 0; i < n; i++) {
		const struct ip_config_key *k = &keys[i];
		const char *bad[2] = { NULL, NULL };
		char above[32], below[32], head[64];

		key_header(k, head, sizeof(head));
		switch (k->type) {
		case IP_CONF_NUMBER:
			fmt_plain(above, sizeof(above), k->max * 1.5 + 1);
			bad[0] = above;
			if (k->min > 0) {
				fmt_plain(below, sizeof(below), k->min / 2);
				bad[1] = below;
			}
			break;
		case IP_CONF_INT:
			fmt_plain(above, sizeof(above), k->max + 1);
			bad[0] = above;
			if (k->min > 0) {
				fmt_plain(below, sizeof(below), k->min - 1);
				bad[1] = below;
			}
			break;
		case IP_CONF_BOOL:
			bad[0] = "maybe";
			break;
		case IP_CONF_ENUM:
			bad[0] = "bogus";
			break;
		case IP_CONF_CPUS:
			bad[0] = "3-1";
			break;
		case IP_CONF_GROUP:
			bad[0] = "a/b";
			break;
		case IP_CONF_PATH:
			bad[0] = "relative/metrics.prom";
			break;
		}
		for (int b = 0; b < 2 && bad[b]; b++) {
			struct ip_config c;
			struct ip_diag d = { "" };
			char text[256], want[128];

			snprintf(text, sizeof(text), "# line 1\n%s\n%s = %s\n", head, k->key, bad[b]);
			snprintf(want, sizeof(want), NAME ":3: %s: '%s' ", k->key, bad[b]);
			ip_config_init(&c);
			assert_int_equal(ip_config_load_string(text, NAME, &c, &d), -EINVAL);
			if (strncmp(d.msg, want, strlen(want)) != 0)
				fail_msg("'%s' gave '%s', expected it to start '%s'", text, d.msg, want);
			if (k->type == IP_CONF_NUMBER || k->type == IP_CONF_INT) {
				char range[64], lo[32], hi[32];

				fmt_plain(lo, sizeof(lo), k->min);
				fmt_plain(hi, sizeof(hi), k->max);
				snprintf(range, sizeof(range), "from %s to %s", lo, hi);
				if (!strstr(d.msg, range))
					fail_msg("'%s' does not say '%s'", d.msg, range);
			}
			/* and the configuration is left as it was */
			assert_true(c.daemon.interval_s == 2);
			ip_config_free(&c);
		}
	}
}

/* A value other than the default for key @k, or NULL where the test
 * writes it elsewhere. */
static const char *other_value(const struct ip_config_key *k, char *buf, size_t size)
{
	switch (k->type) {
	case IP_CONF_NUMBER:
	case IP_CONF_INT:
		fmt_plain(buf, size, k->def && atof(k->def) == k->max ? k->min : k->max);
		return buf;
	case IP_CONF_BOOL:
		return k->def && !strcmp(k->def, "yes") ? "no" : "yes";
	case IP_CONF_ENUM:
		return k->def && !strcmp(k->def, k->choices->names[k->choices->n - 1]) ?
			       k->choices->names[0] :
			       k->choices->names[k->choices->n - 1];
	case IP_CONF_CPUS:
		if (!strcmp(k->key, "performance"))
			return "4-7";
		if (!strcmp(k->key, "efficiency"))
			return "0-1";
		return "2";
	case IP_CONF_GROUP:
		return "irq-admins";
	case IP_CONF_PATH:
		return "/var/lib/prometheus/node-exporter/irqpilot.prom";
	}
	return NULL;
}

/* Every key, set alone to a value other than its default, makes a
 * configuration that ip_config_equal() tells from the default and that
 * dumps to text loading back equal; then all of them at once. */
static void test_table_round_trip(void **state)
{
	size_t n;
	const struct ip_config_key *keys = ip_config_keys(&n);
	struct ip_config def, c;
	char all[4096] = "";
	size_t used = 0;

	ip_config_init(&def);
	for (size_t i = 0; i < n; i++) {
		const struct ip_config_key *k = &keys[i];
		char text[256], head[64], val[32];

		key_header(k, head, sizeof(head));
		snprintf(text, sizeof(text), "%s\n%s = %s\n", head, k->key,
			 other_value(k, val, sizeof(val)));
		load_ok(text, &c);
		if (ip_config_equal(&c, &def) && !(k->sections & IP_SECT_BIT(IP_SECT_DEVICE)))
			fail_msg("'%s' is equal to the default", text);
		round_trip(&c);
		ip_config_free(&c);

		/* Rule keys go to one rule each: pin and ban = yes exclude each other. */
		used += (size_t)snprintf(all + used, sizeof(all) - used, "%s\n%s = %s\n", head,
					 k->key, other_value(k, val, sizeof(val)));
		assert_true(used < sizeof(all));
	}
	load_ok(all, &c);
	assert_false(ip_config_equal(&c, &def));
	round_trip(&c);
	ip_config_free(&c);
	ip_config_free(&def);
}

/* Two rules that differ in one key are not equal: the comparison of rules
 * looks at every rule key. */
static void test_table_rule_keys_compared(void **state)
{
	size_t n;
	const struct ip_config_key *keys = ip_config_keys(&n);

	for (size_t i = 0; i < n; i++) {
		const struct ip_config_key *k = &keys[i];
		struct ip_config a, b;
		char text[256], head[64], val[32];

		if (!(k->sections & (IP_SECT_BIT(IP_SECT_DEVICE) | IP_SECT_BIT(IP_SECT_IRQ))))
			continue;
		key_header(k, head, sizeof(head));
		snprintf(text, sizeof(text), "%s\n%s = %s\n", head, k->key,
			 other_value(k, val, sizeof(val)));
		load_ok(text, &a);
		snprintf(text, sizeof(text), "%s\n", head);
		load_ok(text, &b);
		if (ip_config_equal(&a, &b))
			fail_msg("%s: a rule with it equals one without", k->key);
		ip_config_free(&a);
		ip_config_free(&b);
	}
}

/* ---- irqpilot.conf(5) against the table ------------------------------- */

struct man_key {
	unsigned sections; /* those the .SH heading names */
	char key[64];
	char synopsis[256]; /* the .BR line */
	char text[2048];    /* the paragraph, lines joined by blanks */
};

/* The keys irqpilot.conf(5) documents: ".BR key " = " ..." lines under a
 * "[daemon] SECTION" or "[device NAME] AND [irq NAME] SECTIONS" heading. */
static int read_man(struct man_key *out, int max)
{
	FILE *f = fopen(TOP_SRCDIR "/man/irqpilot.conf.5", "r");
	char line[512];
	unsigned sections = 0;
	int n = 0, first = 0; /* keys first..n-1 share the paragraph (.TQ) */

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char key[64];
		int end = 0;

		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, ".SH", 3) || !strncmp(line, ".SS", 3) ||
		    !strncmp(line, ".TP", 3) || !strncmp(line, ".PP", 3)) {
			first = n;
			if (strncmp(line, ".SH", 3) != 0)
				continue;
			sections = 0;
			if (!strstr(line, "SECTION"))
				continue;
			for (int s = IP_SECT_DAEMON; s < IP_SECT_MAX; s++) {
				char tag[32];

				snprintf(tag, sizeof(tag), "[%s", ip_config_section_name(s));
				if (strstr(line, tag))
					sections |= IP_SECT_BIT(s);
			}
			continue;
		}
		if (!strncmp(line, ".TQ", 3))
			continue;
		if (sections && sscanf(line, ".BR %63[a-z_] \" = \"%n", key, &end) == 1 && end) {
			assert_true(n < max);
			out[n].sections = sections;
			snprintf(out[n].key, sizeof(out[n].key), "%s", key);
			snprintf(out[n].synopsis, sizeof(out[n].synopsis), "%s", line);
			out[n].text[0] = '\0';
			n++;
			continue;
		}
		for (int i = first; i < n; i++) {
			size_t used = strlen(out[i].text);

			snprintf(out[i].text + used, sizeof(out[i].text) - used, "%s%s",
				 used ? " " : "", line);
		}
	}
	fclose(f);
	return n;
}

/* Every key of the table is in irqpilot.conf(5) under a heading naming its
 * section, with its choices, range and default as the parser has them; and
 * every key the page documents exists. */
static void test_man_page(void **state)
{
	struct man_key man[64];
	int nman = read_man(man, (int)(sizeof(man) / sizeof(man[0])));
	size_t n;
	const struct ip_config_key *keys = ip_config_keys(&n);

	assert_true(nman >= 20);
	for (size_t i = 0; i < n; i++) {
		const struct ip_config_key *k = &keys[i];
		const struct man_key *m = NULL;
		char want[256];

		for (int j = 0; j < nman && !m; j++)
			if (!strcmp(man[j].key, k->key) && (man[j].sections & k->sections))
				m = &man[j];
		if (!m)
			fail_msg("%s ([%s]...) is not in irqpilot.conf(5)", k->key,
				 ip_config_section_name(__builtin_ctz(k->sections)));
		if (k->type == IP_CONF_ENUM) {
			size_t used = 0;

			for (size_t c = 0; c < k->choices->n; c++)
				used += (size_t)snprintf(want + used, sizeof(want) - used, "%s\\fB%s\\fR",
							 c ? " | " : "", k->choices->names[c]);
			if (!strstr(m->synopsis, want))
				fail_msg("%s: the page's '%s' lacks '%s'", k->key, m->synopsis, want);
		}
		if (k->type == IP_CONF_NUMBER || k->type == IP_CONF_INT) {
			char lo[32], hi[32];

			fmt_plain(lo, sizeof(lo), k->min);
			fmt_plain(hi, sizeof(hi), k->max);
			snprintf(want, sizeof(want), "rom %s to %s", lo, hi);
			/* a small whole-number range may be listed instead: 0 | 1 | 2 */
			if (!strstr(m->text, want) && !(k->type == IP_CONF_INT && k->max - k->min < 4 &&
							strstr(m->synopsis, "\\fB0\\fR | ")))
				fail_msg("%s: the page does not say '(f)%s': %s", k->key, want, m->text);
		}
		if (k->def) {
			snprintf(want, sizeof(want), "Default: %s.", k->def[0] ? k->def : "none");
			if (!strstr(m->text, want))
				fail_msg("%s: the page does not say '%s': %s", k->key, want, m->text);
		}
	}
	for (int j = 0; j < nman; j++) {
		bool found = false;

		for (size_t i = 0; i < n && !found; i++)
			found = !strcmp(man[j].key, keys[i].key) && (man[j].sections & keys[i].sections);
		if (!found)
			fail_msg("irqpilot.conf(5) documents '%s', which no section it names has",
				 man[j].key);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_every_key),
		cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_value_errors),
		cmocka_unit_test(test_structure_errors),
		cmocka_unit_test(test_duplicates_and_conflicts),
		cmocka_unit_test(test_first_error_and_count),
		cmocka_unit_test(test_error_quotes_no_controls),
		cmocka_unit_test(test_error_keeps_old),
		cmocka_unit_test(test_control_admin_group),
		cmocka_unit_test(test_dump_round_trip),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_shipped_example),
		cmocka_unit_test(test_table_defaults),
		cmocka_unit_test(test_table_refuses),
		cmocka_unit_test(test_table_round_trip),
		cmocka_unit_test(test_table_rule_keys_compared),
		cmocka_unit_test(test_man_page),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
