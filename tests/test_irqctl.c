// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * irqctl's side of the command table: every command irqctl can build is
 * one the daemon's decoder takes back unchanged, and bad command lines and
 * hostile requests are refused with a message that says what is wrong.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "irqctl.h"
#include "irqpilot/protocol.h"

/* Command lines for each argument shape, so that a new table entry is
 * covered as soon as it is added; the last of each list is NULL. */
static const char *const *examples(enum ip_arg_shape shape)
{
	static const char *const none[] = { "", NULL };
	static const char *const object[] = { "irqs", "cpus", "domains", "devices", "threads", "ir", "dev", NULL };
	static const char *const target[] = { "45", "0", "sda", "nvme0q1", "0000:00:1f.2", "ahci[0000:00:1f.2]", "json", NULL };
	static const char *const target_cpus[] = { "45 0-3", "nvme0q1 0,2,4,6,12", "7 1023", NULL };
	static const char *const cpus[] = { "4-7", "0,2,4,6,12", "1023", "0-7:2", NULL };
	static const char *const on_off[] = { "on", "off", NULL };
	static const char *const dir_count[] = { "/var/tmp/cap", "/var/tmp/cap 3", "/tmp/x 100000", "rel/dir 2", NULL };

	switch (shape) {
	case IP_ARGS_NONE:
		return none;
	case IP_ARGS_OBJECT:
		return object;
	case IP_ARGS_TARGET:
		return target;
	case IP_ARGS_TARGET_CPUS:
		return target_cpus;
	case IP_ARGS_ON_OFF:
		return on_off;
	case IP_ARGS_DIR_COUNT:
		return dir_count;
	case IP_ARGS_CPUS:
		return cpus;
	}
	return NULL;
}

/* Splits "VERB ARGS" into argv (at most 8 words) in @buf. */
static int split(char *buf, char **argv)
{
	int n = 0;

	for (char *w = strtok(buf, " "); w && n < 8; w = strtok(NULL, " "))
		argv[n++] = w;
	return n;
}

static int build(const struct ctl *c, const char *line, struct ip_request *r)
{
	char buf[4096], *argv[8];
	int argc;

	snprintf(buf, sizeof(buf), "%s", line);
	argc = split(buf, argv);
	return ctl_build_request(c, argc, argv, r);
}

static void same_request(const struct ip_request *a, const struct ip_request *b)
{
	assert_int_equal(a->verb, b->verb);
	switch (ip_proto_command(a->verb)->args) {
	case IP_ARGS_OBJECT:
		assert_int_equal(a->object, b->object);
		break;
	case IP_ARGS_TARGET_CPUS:
		assert_true(cpuset_equal(&a->cpus, &b->cpus));
		/* fall through */
	case IP_ARGS_TARGET:
		assert_int_equal(a->target.is_irq, b->target.is_irq);
		if (a->target.is_irq)
			assert_int_equal(a->target.irq, b->target.irq);
		else
			assert_string_equal(a->target.name, b->target.name);
		break;
	case IP_ARGS_CPUS:
		assert_true(cpuset_equal(&a->cpus, &b->cpus));
		break;
	case IP_ARGS_ON_OFF:
		assert_int_equal(a->on, b->on);
		break;
	case IP_ARGS_DIR_COUNT:
		assert_string_equal(a->path, b->path);
		assert_int_equal(a->samples, b->samples);
		break;
	case IP_ARGS_NONE:
		break;
	}
}

static void test_every_command_round_trips(void **state)
{
	struct ctl c = { 0 };
	int covered = 0;

	(void)state;
	for (int v = 0; v < _IP_VERB_MAX; v++) {
		const struct ip_command *cmd = ip_proto_command((enum ip_verb)v);
		const char *const *ex = examples(cmd->args);

		assert_non_null(cmd);
		assert_non_null(cmd->help);
		assert_true(strncmp(cmd->usage, cmd->name, strlen(cmd->name)) == 0);
		assert_non_null(ex);
		for (; *ex; ex++) {
			char line[256], wire[IP_PROTO_REQ_MAX + 1];
			struct ip_request r, back;
			struct ip_diag d = { "" };
			int n;

			snprintf(line, sizeof(line), "%s%s%s", cmd->name, **ex ? " " : "", *ex);
			if (build(&c, line, &r) != EXIT_OK)
				fail_msg("irqctl refused '%s'", line);
			assert_int_equal(r.verb, v);
			n = ip_proto_encode(&r, wire, sizeof(wire));
			if (n < 0)
				fail_msg("cannot encode '%s': %s", line, strerror(-n));
			if (ip_proto_decode(wire, (size_t)n, &back, &d) != 0)
				fail_msg("the decoder refused '%s' (from '%s'): %s", wire, line, d.msg);
			same_request(&r, &back);
			/* what the daemon checks for rights is the table's flag */
			assert_int_equal(ip_proto_is_mutating(&back), cmd->admin);
		}
		covered++;
	}
	assert_int_equal(covered, _IP_VERB_MAX);
}

static void test_abbreviations_and_relative_capture(void **state)
{
	char cwd[4096], want[4200];
	struct ctl c = { 0 };
	struct ip_request r;

	(void)state;
	assert_int_equal(build(&c, "sh ir", &r), EXIT_OK);
	assert_int_equal(r.verb, IP_VERB_SHOW);
	assert_int_equal(r.object, IP_OBJ_IRQS);
	assert_int_equal(build(&c, "dr of", &r), EXIT_USAGE); /* prefixes of verbs only */
	assert_int_equal(build(&c, "dr off", &r), EXIT_OK);
	assert_int_equal(r.verb, IP_VERB_DRY_RUN);
	assert_false(r.on);
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	snprintf(want, sizeof(want), "%s%sseries", cwd, strcmp(cwd, "/") ? "/" : "");
	assert_int_equal(build(&c, "capture series 4", &r), EXIT_OK);
	assert_string_equal(r.path, want);
	assert_int_equal(r.samples, 4);
	assert_int_equal(build(&c, "help", &r), -1);
}

/* Runs the builder with stderr captured; returns its exit code and what it
 * printed in @msg. */
static int build_err(const char *line, char *msg, size_t size)
{
	struct ctl c = { 0 };
	struct ip_request r;
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO), code;
	size_t n;

	assert_non_null(tmp);
	fflush(stderr);
	dup2(fileno(tmp), STDERR_FILENO);
	code = build(&c, line, &r);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(msg, 1, size - 1, tmp);
	msg[n] = '\0';
	fclose(tmp);
	return code;
}

static void refused_by_irqctl(const char *line, const char *part)
{
	char msg[1024];

	if (build_err(line, msg, sizeof(msg)) != EXIT_USAGE)
		fail_msg("irqctl took '%s'", line);
	if (!strstr(msg, part))
		fail_msg("'%s': message \"%s\" lacks \"%s\"", line, msg, part);
}

static void test_irqctl_refuses(void **state)
{
	char line[2048];

	(void)state;
	refused_by_irqctl("frob", "unknown command 'frob'");
	refused_by_irqctl("s", "'s' is ambiguous");
	refused_by_irqctl("show", "show: missing argument; usage: irqctl show irqs|cpus");
	refused_by_irqctl("pin 45", "usage: irqctl pin IRQ CPULIST");
	refused_by_irqctl("status now", "status: too many arguments; usage: irqctl status");
	refused_by_irqctl("explain 45 46", "too many arguments; usage: irqctl explain IRQ|DEVICE");
	refused_by_irqctl("capture /tmp/x 3 4", "too many arguments");
	refused_by_irqctl("show disks", "unknown object 'disks'");
	refused_by_irqctl("show d", "ambiguous object 'd'");
	refused_by_irqctl("pin 45 3-1", "pin: bad CPU list '3-1'");
	refused_by_irqctl("pin 45 0-99999", "names a CPU above 1023");
	refused_by_irqctl("ban", "ban: missing argument; usage: irqctl ban CPULIST");
	refused_by_irqctl("ban 4-", "ban: bad CPU list '4-'");
	refused_by_irqctl("unban 4 5", "unban: too many arguments; usage: irqctl unban CPULIST");
	refused_by_irqctl("un 4", "'un' is ambiguous");
	refused_by_irqctl("explain ../sda", "'../sda' is neither an IRQ number nor a device name");
	refused_by_irqctl("explain 045", "leading zero");
	refused_by_irqctl("dry-run maybe", "dry-run takes 'on' or 'off', not 'maybe'");
	refused_by_irqctl("capture /tmp/x 0", "sample count '0' is not a number from 1 to 100000");
	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	memcpy(line, "capture /", 9);
	refused_by_irqctl(line, "directory path longer than 1023 bytes");
	memcpy(line, "explain ", 8);
	line[200] = '\0';
	refused_by_irqctl(line, "is longer than 63 characters");
}

static void refused_by_daemon(const char *req, int err, const char *part)
{
	struct ip_request r;
	struct ip_diag d = { "" };
	int got = ip_proto_decode(req, strlen(req), &r, &d);

	if (got != err)
		fail_msg("'%.60s': %d, want %d (%s)", req, got, err, d.msg);
	if (!strstr(d.msg, part))
		fail_msg("'%.60s': message \"%s\" lacks \"%s\"", req, d.msg, part);
}

/* What no irqctl sends, but a hostile client may. */
static void test_daemon_refuses_hostile_requests(void **state)
{
	static char big[IP_PROTO_REQ_MAX + 100];

	(void)state;
	for (int v = 0; v < _IP_VERB_MAX; v++) {
		const struct ip_command *cmd = ip_proto_command((enum ip_verb)v);
		char req[256];
		int max = ip_proto_max_args(cmd), min = ip_proto_min_args(cmd);

		/* one word too many for every verb ("x" cannot be json) */
		snprintf(req, sizeof(req), "v1 %s", cmd->name);
		for (int i = 0; i <= max; i++)
			strcat(req, " x");
		refused_by_daemon(req, -EINVAL, "wrong number of arguments");
		refused_by_daemon(req, -EINVAL, cmd->usage);
		if (min > 0) {
			snprintf(req, sizeof(req), "v1 %s", cmd->name);
			refused_by_daemon(req, -EINVAL, "wrong number of arguments (0)");
		}
	}
	refused_by_daemon("v1 frob 1", -EINVAL, "unknown verb 'frob'");
	refused_by_daemon("v1 sh irqs", -EINVAL, "unknown verb 'sh'"); /* no prefixes on the wire */
	refused_by_daemon("v1 show ir", -EINVAL, "unknown object 'ir'");
	refused_by_daemon("v2 status", -EPROTO, "unsupported protocol version 'v2'");
	refused_by_daemon("status", -EPROTO, "does not start with a protocol version");
	refused_by_daemon("v1 capture /tmp/x\xc2\x9b", -EPROTO, "non-printable");
	memset(big, 'a', sizeof(big) - 1);
	memcpy(big, "v1 explain ", 11);
	refused_by_daemon(big, -EPROTO, "exceeds the 4096 byte limit");
	big[IP_PROTO_REQ_MAX] = '\0';
	refused_by_daemon(big, -EINVAL, "is longer than 63 characters");
}

static char *render(enum ip_verb verb, enum ip_object obj, const char *reply)
{
	struct ip_request r = { .verb = verb, .object = obj };
	struct ctl_reply rep;
	struct ip_diag d = { "" };
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);

	assert_non_null(f);
	if (ctl_reply_parse(reply, strlen(reply), &rep, &d) != 0)
		fail_msg("%s: %s", reply, d.msg);
	assert_true(rep.ok);
	ctl_render(f, &r, rep.data);
	fclose(f);
	ctl_reply_free(&rep);
	return out;
}

static void has_line(const char *out, const char *line)
{
	if (!strstr(out, line))
		fail_msg("output lacks \"%s\":\n%s", line, out);
}

/* irqctl renders the daemon's data; a reply that gains fields (a reason
 * code and its numbers) still shows them. */
static void test_render(void **state)
{
	char *out;

	(void)state;
	out = render(IP_VERB_EXPLAIN, 0,
		     "{\"v\":1,\"ok\":true,\"data\":{\"devices\":[],\"irqs\":[{\"irq\":37,\"name\":\"ufshcd\","
		     "\"chip\":\"GICv3\",\"hwirq\":\"279\",\"trigger\":\"Level\",\"storage\":true,"
		     "\"devices\":[\"sda\",\"sdb\"],\"affinity\":\"0-7\",\"effective\":\"6\",\"rate\":1200,"
		     "\"busiest_cpu\":6,\"busiest_share\":0.5,\"submit_rate\":900,\"submit_domains\":[{\"domain\":2,"
		     "\"class\":\"performance\",\"cpus\":\"6-7\",\"share\":1}],\"locality\":1,\"threads\":[],"
		     "\"pinned\":\"4-5\",\"code\":\"pinned\",\"decision\":{\"code\":\"dwell\",\"since_s\":3}}]}}");
	has_line(out, "IRQ 37 ufshcd (GICv3 279 Level)\n");
	has_line(out, "  devices: sda,sdb\n");
	has_line(out, "  interrupts: 1200/s, mostly on CPU 6 (50%)\n");
	has_line(out, "    performance domain 6-7: 100%\n");
	has_line(out, "  pinned at run time to 4-5 (irqctl unpin 37 to release)\n");
	has_line(out, "  code: pinned\n");
	has_line(out, "  decision: dwell (code=dwell, since_s=3)\n");
	free(out);

	out = render(IP_VERB_STATUS, 0,
		     "{\"v\":1,\"ok\":true,\"data\":{\"version\":\"1.0\",\"pid\":7,\"root\":\"/\","
		     "\"config\":\"/etc/irqpilot.conf\",\"dry_run\":true,\"interval_s\":2,\"cycle_interval_s\":10,"
		     "\"idle\":true,\"cycles\":3,\"devices\":2,\"vectors_steered\":1,\"vectors_managed\":0,"
		     "\"moves\":1,\"last_move\":\"37 ufshcd → 6\",\"last_move_cycle\":2,\"submit_source\":\"diskstats\","
		     "\"capture\":null,\"warnings\":[\"sda: no IRQ vector found\"]}}");
	has_line(out, "irqpilotd 1.0 (pid 7), root /, dry run: nothing is written\n");
	has_line(out, "cycles: 3, every 10.0 s (no storage I/O)\n");
	has_line(out, "moves: 1; last: 37 ufshcd → 6, in cycle 2\n");
	has_line(out, "warning: sda: no IRQ vector found\n");
	assert_null(strstr(out, "capturing"));
	free(out);

	out = render(IP_VERB_STATUS, 0,
		     "{\"v\":1,\"ok\":true,\"data\":{\"version\":\"1.0\",\"pid\":7,\"root\":\"/\","
		     "\"config\":\"/etc/irqpilot.conf\",\"dry_run\":false,\"interval_s\":2,\"cycle_interval_s\":10,"
		     "\"idle\":false,\"holding\":true,\"cycles\":9,\"devices\":1,\"vectors_steered\":1,"
		     "\"vectors_managed\":0,\"moves\":1,\"last_move\":null,\"submit_source\":\"perf\",\"capture\":null,"
		     "\"warnings\":[]}}");
	has_line(out, "cycles: 9, every 10.0 s (placement held: a bio from another CPU starts one at once)\n");
	free(out);

	/* idle without a timer: on perf, or on a watched --root tree, still or written */
	static const char idle_fmt[] =
		"{\"v\":1,\"ok\":true,\"data\":{\"version\":\"1.0\",\"pid\":7,\"root\":\"/t\","
		"\"config\":\"c\",\"dry_run\":false,\"interval_s\":2,\"cycle_interval_s\":60,"
		"\"idle\":true,\"idle_wakeup\":\"%s\",\"cycles\":5,\"devices\":1,\"vectors_steered\":1,"
		"\"vectors_managed\":0,\"moves\":0,\"last_move\":null,\"submit_source\":\"x\",\"capture\":null,"
		"\"warnings\":[]}}";
	char reply[1024];

	snprintf(reply, sizeof(reply), idle_fmt, "perf");
	out = render(IP_VERB_STATUS, 0, reply);
	has_line(out, "cycles: 5, none until I/O (no storage I/O: the first bio wakes irqpilotd)\n");
	free(out);
	snprintf(reply, sizeof(reply), idle_fmt, "watch");
	out = render(IP_VERB_STATUS, 0, reply);
	has_line(out, "cycles: 5, every 60.0 s (no storage I/O: a change to the tree's /proc/diskstats or CPU lists "
		      "starts one)\n");
	free(out);
	/* the files a still tree waits for are the daemon's list, not irqctl's */
	snprintf(reply, sizeof(reply), idle_fmt,
		 "still\",\"still_until_written\":[\"proc/interrupts\",\"proc/softirqs\",\"irqpilot/submit\"],\"x\":\"");
	out = render(IP_VERB_STATUS, 0, reply);
	has_line(out, "cycles: 5, none while the tree is still (no storage I/O: a change to the tree's /proc/diskstats "
		      "or CPU lists starts one; to its /proc/interrupts, /proc/softirqs or /irqpilot/submit, a full "
		      "cycle 60 s after the last)\n");
	free(out);
	snprintf(reply, sizeof(reply), idle_fmt, "still\",\"still_until_written\":[\"proc/stat\"],\"x\":\"");
	out = render(IP_VERB_STATUS, 0, reply);
	has_line(out, "cycles: 5, none while the tree is still (no storage I/O: a change to the tree's /proc/diskstats "
		      "or CPU lists starts one; to its /proc/stat, a full cycle 60 s after the last)\n");
	free(out);
	snprintf(reply, sizeof(reply), idle_fmt, "timer");
	out = render(IP_VERB_STATUS, 0, reply);
	has_line(out, "cycles: 5, every 60.0 s (no storage I/O)\n");
	free(out);

	out = render(IP_VERB_PIN, 0, "{\"v\":1,\"ok\":true,\"data\":{\"irq\":37,\"cpus\":\"4-5\"}}");
	assert_string_equal(out, "IRQ 37 pinned to 4-5 until unpinned or restart\n");
	free(out);

	/* a name that two lines carry pins both */
	out = render(IP_VERB_PIN, 0,
		     "{\"v\":1,\"ok\":true,\"data\":{\"irq\":61,\"name\":\"eth0\",\"cpus\":\"2\","
		     "\"irqs\":[{\"irq\":61},{\"irq\":62}]}}");
	assert_string_equal(out, "IRQ 61 pinned to 2 until unpinned or restart\n"
				 "IRQ 62 pinned to 2 until unpinned or restart\n");
	free(out);
	out = render(IP_VERB_UNPIN, 0,
		     "{\"v\":1,\"ok\":true,\"data\":{\"irq\":60,\"name\":\"msm_drm\","
		     "\"irqs\":[{\"irq\":60,\"restored\":\"0-7\"},{\"irq\":37,\"restored\":null}]}}");
	assert_string_equal(out, "IRQ 60 unpinned: back to its original affinity 0-7\n"
				 "IRQ 37 unpinned: the policy places it again\n");
	free(out);

	out = render(IP_VERB_BAN, 0,
		     "{\"v\":1,\"ok\":true,\"data\":{\"cpus\":\"4-7\",\"banned\":\"2,4-7\",\"kept_on_reload\":true}}");
	assert_string_equal(out, "CPUs 4-7 banned; banned now: 2,4-7 (kept across reload, until unbanned or restart)\n");
	free(out);
	out = render(IP_VERB_UNBAN, 0,
		     "{\"v\":1,\"ok\":true,\"data\":{\"cpus\":\"5\",\"banned\":\"\",\"kept_on_reload\":true}}");
	assert_string_equal(out, "CPUs 5 unbanned; banned now: none (kept across reload, until unbanned or restart)\n");
	free(out);
}

/* A reply with a member of another type than the daemon sends renders
 * what it can: "by_cpu" or an explained device that is no object crashed
 * irqctl (SIGSEGV in json_object_object_foreach()). */
static void test_render_wrong_types(void **state)
{
	static const char *const by_cpu[] = { "1", "null", "\"x\"", "[1,2]", "true" };
	char reply[512], *out;

	(void)state;
	for (size_t i = 0; i < sizeof(by_cpu) / sizeof(by_cpu[0]); i++) {
		snprintf(reply, sizeof(reply),
			 "{\"v\":1,\"ok\":true,\"data\":{\"domains\":[{\"class\":\"x\"}],"
			 "\"devices\":[{\"name\":\"sda\",\"submit\":{\"total\":5,\"by_cpu\":%s}}]}}",
			 by_cpu[i]);
		out = render(IP_VERB_SHOW, IP_OBJ_DEVICES, reply);
		has_line(out, "sda ");
		free(out);
		snprintf(reply, sizeof(reply),
			 "{\"v\":1,\"ok\":true,\"data\":{\"devices\":[%s,{\"name\":\"sdb\"}],\"irqs\":[%s]}}",
			 by_cpu[i], by_cpu[i]);
		out = render(IP_VERB_EXPLAIN, 0, reply);
		has_line(out, "sdb: ");
		free(out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_command_round_trips),
		cmocka_unit_test(test_abbreviations_and_relative_capture),
		cmocka_unit_test(test_irqctl_refuses),
		cmocka_unit_test(test_daemon_refuses_hostile_requests),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_render_wrong_types),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
