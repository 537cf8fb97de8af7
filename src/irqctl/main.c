// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * irqctl: ask the running irqpilotd what it sees and why, and steer it.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "irqpilot/json.h"
#include "irqpilot/jsonparse.h"
#include "irqpilot/macro.h"
#include "irqpilot/protocol.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

enum {
	EXIT_OK = 0,
	EXIT_FAILED = 1,      /* the daemon refused or failed the request */
	EXIT_USAGE = 2,
	EXIT_UNREACHABLE = 3, /* not running, socket unreachable, no answer */
	EXIT_DENIED = 4,
};

struct ctl {
	const char *socket;
	bool json, no_pager, once, once_set, interval_set;
	double interval_s;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = sig;
}

static void help(FILE *f)
{
	fprintf(f,
		"Usage: irqctl [OPTIONS] COMMAND\n"
		"Ask the running irqpilotd what it sees and why, and steer it.\n"
		"\n"
		"Commands:\n"
		"  status                       what the daemon is doing\n"
		"  show irqs|cpus|domains|devices|threads\n"
		"                               the daemon's model of this machine\n"
		"  explain IRQ|DEVICE           why an IRQ or a device's vectors are placed so\n"
		"  top [--once] [--interval S]  live rates, redrawn until Ctrl-C\n"
		"  pin IRQ CPULIST              keep IRQ on CPULIST (e.g. 0-3,6) over the policy\n"
		"  unpin IRQ                    hand IRQ back to the policy\n"
		"  dry-run on|off               decide and report without writing, or act again\n"
		"  reload                       re-read the configuration\n"
		"  capture DIR [SAMPLES]        record a replay series into DIR, written by the\n"
		"                               daemon (relative to the current directory)\n"
		"  help                         show this help\n"
		"\n"
		"IRQ is an IRQ number or a name such as nvme0q1; commands and objects may be\n"
		"abbreviated as long as that is unambiguous (irqctl sh ir). pin, unpin, dry-run,\n"
		"reload and capture need root or CAP_SYS_ADMIN.\n"
		"\n"
		"Options:\n"
		"  -s, --socket PATH    the daemon's control socket (default $%s,\n"
		"                       else %s)\n"
		"  -j, --json           print the reply's data as JSON (2-space indent)\n"
		"      --no-pager       do not pipe the output into a pager\n"
		"      --once           top: print one table and exit\n"
		"  -i, --interval S     top: seconds between redraws (default 2)\n"
		"  -h, --help           show this help\n"
		"  -V, --version        show the version\n"
		"\n"
		"Exit status:\n"
		"  0  success\n"
		"  1  irqpilotd refused or failed the request (its error is printed)\n"
		"  2  usage error\n"
		"  3  irqpilotd is not running, its socket is unreachable, or it did not\n"
		"     answer within %d s\n"
		"  4  permission denied (by the daemon or on the socket)\n",
		IP_PROTO_SOCKET_ENV, IP_PROTO_SOCKET_DEFAULT, IP_PROTO_TIMEOUT_MS / 1000);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("irqctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'irqctl help' for more information.\n", stderr);
	return EXIT_USAGE;
}

#define VERB_HELP _IP_VERB_MAX

static const char *verb_at(int i)
{
	return i == VERB_HELP ? "help" : ip_proto_verb_name((enum ip_verb)i);
}

static const char *object_at(int i)
{
	return ip_proto_object_name((enum ip_object)i);
}

/* Exact match, else the one name @word is a prefix of, as ip(8) does.
 * -1 unknown, -2 ambiguous. */
static int match(const char *word, const char *(*name_at)(int), int n)
{
	size_t len = strlen(word);
	int found = -1;

	for (int i = 0; i < n; i++)
		if (strcmp(word, name_at(i)) == 0)
			return i;
	if (len == 0)
		return -1;
	for (int i = 0; i < n; i++) {
		if (strncmp(word, name_at(i), len) != 0)
			continue;
		if (found >= 0)
			return -2;
		found = i;
	}
	return found;
}

static int parse_target(const char *verb, const char *word, struct ip_target *t)
{
	struct ip_diag d = { "" };

	if (ip_proto_parse_target(word, t, &d) < 0)
		return usage_error("%s: %s", verb, d.msg);
	return 0;
}

/* The capture directory is a path on the daemon's side, which has its own
 * working directory: make a relative one absolute here. */
static int capture_path(const char *dir, char *out, size_t size)
{
	char cwd[PATH_MAX];
	int n;

	if (dir[0] == '/') {
		n = snprintf(out, size, "%s", dir);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return usage_error("capture: cannot resolve %s: %s", dir, strerror(errno));
		n = snprintf(out, size, "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", dir);
	}
	if (n < 0 || (size_t)n >= size)
		return usage_error("capture: directory path longer than %zu bytes", size - 1);
	if (strchr(out, ' '))
		return usage_error("capture: the directory path must not contain spaces");
	for (const char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return usage_error("capture: the directory path has a control character");
	return 0;
}

/* Builds the request from the command words; returns EXIT_OK or a usage
 * exit code, with the message printed. */
static int build_request(const struct ctl *c, int argc, char **argv, struct ip_request *r)
{
	int v, o, nargs = argc - 1;
	const char *name;

	memset(r, 0, sizeof(*r));
	if (argc == 0)
		return usage_error("no command given");
	v = match(argv[0], verb_at, VERB_HELP + 1);
	if (v == -2)
		return usage_error("'%s' is ambiguous; spell out more of the command", argv[0]);
	if (v < 0)
		return usage_error("unknown command '%s'", argv[0]);
	if (v == VERB_HELP)
		return -1;
	name = verb_at(v);
	r->verb = (enum ip_verb)v;
	r->json = c->json;
	if ((c->once_set || c->interval_set) && r->verb != IP_VERB_TOP)
		return usage_error("--once and --interval only apply to top");

#define NEED(lo, hi, what)                                                                   \
	do {                                                                                 \
		if (nargs < (lo))                                                            \
			return usage_error("%s: missing argument; usage: irqctl %s", name, what); \
		if (nargs > (hi))                                                            \
			return usage_error("%s: too many arguments; usage: irqctl %s", name,     \
					   what);                                            \
	} while (0)

	switch (r->verb) {
	case IP_VERB_STATUS:
	case IP_VERB_TOP:
	case IP_VERB_RELOAD:
		NEED(0, 0, name);
		break;
	case IP_VERB_SHOW:
		NEED(1, 1, "show irqs|cpus|domains|devices|threads");
		o = match(argv[1], object_at, _IP_OBJ_MAX);
		if (o < 0)
			return usage_error("show: %s object '%s' (irqs, cpus, domains, devices, threads)",
					   o == -2 ? "ambiguous" : "unknown", argv[1]);
		r->object = (enum ip_object)o;
		break;
	case IP_VERB_EXPLAIN:
		NEED(1, 1, "explain IRQ|DEVICE");
		return parse_target(name, argv[1], &r->target) ? EXIT_USAGE : EXIT_OK;
	case IP_VERB_UNPIN:
		NEED(1, 1, "unpin IRQ");
		return parse_target(name, argv[1], &r->target) ? EXIT_USAGE : EXIT_OK;
	case IP_VERB_PIN:
		NEED(2, 2, "pin IRQ CPULIST");
		if (parse_target(name, argv[1], &r->target))
			return EXIT_USAGE;
		switch (cpuset_parse_list(&r->cpus, argv[2])) {
		case 0:
			break;
		case -ERANGE:
			return usage_error("pin: CPU list '%s' names a CPU above %d", argv[2],
					   IP_CPU_MAX - 1);
		default:
			return usage_error("pin: bad CPU list '%s' (expected e.g. 0-3,6)", argv[2]);
		}
		if (cpuset_empty(&r->cpus))
			return usage_error("pin: empty CPU list");
		break;
	case IP_VERB_DRY_RUN:
		NEED(1, 1, "dry-run on|off");
		if (strcmp(argv[1], "on") && strcmp(argv[1], "off"))
			return usage_error("dry-run: expected 'on' or 'off', not '%s'", argv[1]);
		r->on = strcmp(argv[1], "on") == 0;
		break;
	case IP_VERB_CAPTURE:
		NEED(1, 2, "capture DIR [SAMPLES]");
		if (capture_path(argv[1], r->path, sizeof(r->path)))
			return EXIT_USAGE;
		if (nargs == 2) {
			char *end;
			long n;

			errno = 0;
			n = strtol(argv[2], &end, 10);
			if (errno || end == argv[2] || *end || n < 1 || n > IP_PROTO_SAMPLES_MAX)
				return usage_error("capture: SAMPLES must be a number from 1 to %d",
						   IP_PROTO_SAMPLES_MAX);
			r->samples = (unsigned int)n;
		}
		break;
	case _IP_VERB_MAX:
		break;
	}
#undef NEED
	return EXIT_OK;
}

/* One round trip. Prints what went wrong and returns its exit code, or
 * EXIT_OK with @reply filled. */
/* The daemon's words reach a terminal: nothing in them may drive it. */
static void put_clean(FILE *f, const char *prefix, const char *text)
{
	_cleanup_free_ char *copy = strdup(text);

	fputs(prefix, f);
	if (copy) {
		ip_proto_strip_controls(copy);
		fputs(copy, f);
	}
}

static int transact(const struct ctl *c, const char *req, size_t len, struct ip_reply *reply)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	struct ip_diag d = { "" };
	size_t n;
	int r;

	r = ip_proto_connect(c->socket, IP_PROTO_TIMEOUT_MS, &fd, &d);
	switch (r) {
	case 0:
		break;
	case -ENOENT:
	case -ENOTDIR:
		fprintf(stderr, "irqctl: irqpilotd is not running (no socket at %s)\n", c->socket);
		return EXIT_UNREACHABLE;
	case -ECONNREFUSED:
		fprintf(stderr, "irqctl: irqpilotd is not running (nothing listening on %s)\n",
			c->socket);
		return EXIT_UNREACHABLE;
	case -EACCES:
	case -EPERM:
		fprintf(stderr, "irqctl: permission denied connecting to %s; %s\n", c->socket,
			"run as root or get access to the socket");
		return EXIT_DENIED;
	case -EAGAIN:
		fprintf(stderr,
			"irqctl: irqpilotd did not accept the connection within %d s (%s)\n",
			IP_PROTO_TIMEOUT_MS / 1000, c->socket);
		return EXIT_UNREACHABLE;
	case -ENAMETOOLONG:
	case -EINVAL:
		return usage_error("%s", d.msg);
	default:
		fprintf(stderr, "irqctl: cannot reach irqpilotd: %s\n", d.msg);
		return EXIT_UNREACHABLE;
	}
	r = ip_proto_call(fd, req, len, &buf, &n, &d);
	switch (r) {
	case 0:
		break;
	case -EINTR:
		if (stop_requested)
			return -EINTR;
		fprintf(stderr, "irqctl: interrupted\n");
		return EXIT_UNREACHABLE;
	case -EAGAIN:
		fprintf(stderr, "irqctl: irqpilotd did not answer within %d s (%s)\n",
			IP_PROTO_TIMEOUT_MS / 1000, c->socket);
		return EXIT_UNREACHABLE;
	case -ECONNRESET:
	case -EPIPE:
		fprintf(stderr, "irqctl: irqpilotd closed the connection without answering\n");
		return EXIT_UNREACHABLE;
	case -EMSGSIZE:
		fprintf(stderr, "irqctl: bad reply from irqpilotd: %s\n", d.msg);
		return EXIT_FAILED;
	default:
		fprintf(stderr, "irqctl: talking to irqpilotd: %s\n", d.msg);
		return EXIT_UNREACHABLE;
	}
	r = ip_proto_reply_parse(buf, n, reply, &d);
	if (r < 0) {
		fprintf(stderr, "irqctl: bad reply from irqpilotd: %s\n", d.msg);
		return EXIT_FAILED;
	}
	if (!reply->ok) {
		put_clean(stderr, "irqctl: ", reply->error);
		fputc('\n', stderr);
		r = reply->err == EPERM || reply->err == EACCES ? EXIT_DENIED : EXIT_FAILED;
		ip_proto_reply_free(reply);
		return r;
	}
	return EXIT_OK;
}

static void format_reply(FILE *f, const struct ctl *c, const struct ip_reply *reply)
{
	if (c->json) {
		if (reply->data) {
			ip_jv_print(f, reply->data, true);
		} else {
			/* A reply without data still gives scripts a document. */
			struct ip_json j;

			ip_json_init(&j, f);
			ip_json_object_begin(&j, NULL);
			if (reply->text)
				ip_json_string(&j, "text", reply->text);
			ip_json_object_end(&j);
		}
		fputc('\n', f);
		return;
	}
	if (reply->text) {
		size_t n = strlen(reply->text);

		fputs(reply->text, f);
		if (n && reply->text[n - 1] != '\n')
			fputc('\n', f);
	} else if (reply->data) {
		ip_jv_print(f, reply->data, true);
		fputc('\n', f);
	}
}

/* Also the JSON: its writer escapes C0 controls but passes C1 ones. */
static void print_reply(FILE *f, const struct ctl *c, const struct ip_reply *reply)
{
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);

	if (!m)
		return;
	format_reply(m, c, reply);
	if (fclose(m) == 0 && out)
		put_clean(f, "", out);
}

static bool on_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (!path)
		path = "/usr/bin:/bin";
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, ":");

		int k = snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, p, prog);

		if (n && k > 0 && k < (int)sizeof(buf) && access(buf, X_OK) == 0)
			return true;
		p += n;
		if (*p)
			p++;
	}
	return false;
}

/* $IRQPILOT_PAGER, $PAGER, or less when it is installed; NULL for none. */
static FILE *pager_open(const struct ctl *c)
{
	const char *pager;

	if (c->no_pager || !isatty(STDOUT_FILENO))
		return NULL;
	pager = getenv("IRQPILOT_PAGER");
	if (!pager)
		pager = getenv("PAGER");
	if (!pager) {
		if (!on_path("less"))
			return NULL;
		pager = "less";
	}
	if (!*pager || strcmp(pager, "cat") == 0)
		return NULL;
	/* Quit if one screen, keep colours, no line wrap, keep the screen. */
	setenv("LESS", "FRSXK", 0);
	fflush(stdout);
	/* A user quitting the pager early must not kill us mid-write. */
	signal(SIGPIPE, SIG_IGN);
	return popen(pager, "w");
}

static int run_once(const struct ctl *c, const char *req, size_t len)
{
	struct ip_reply reply;
	FILE *pager;
	int r;

	r = transact(c, req, len, &reply);
	if (r != EXIT_OK)
		return r;
	pager = pager_open(c);
	print_reply(pager ? pager : stdout, c, &reply);
	if (pager)
		pclose(pager);
	ip_proto_reply_free(&reply);
	return EXIT_OK;
}

/* Sleeps, returning early when a stop signal arrives. */
static void wait_interval(double seconds)
{
	struct timespec ts = { .tv_sec = (time_t)seconds,
			       .tv_nsec = (long)((seconds - floor(seconds)) * 1e9) };

	while (!stop_requested && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int run_top(const struct ctl *c, const char *req, size_t len)
{
	bool redraw = !c->once && !c->json && isatty(STDOUT_FILENO);
	struct sigaction sa = { .sa_handler = on_signal };
	struct ip_reply reply;
	int r;

	/* No SA_RESTART: a Ctrl-C must end the wait for the daemon too. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!stop_requested) {
		r = transact(c, req, len, &reply);
		if (r == -EINTR)
			break;
		if (r != EXIT_OK)
			return r;
		if (redraw)
			fputs("\033[H\033[2J", stdout);
		print_reply(stdout, c, &reply);
		fflush(stdout);
		ip_proto_reply_free(&reply);
		if (c->once)
			break;
		wait_interval(c->interval_s);
	}
	return EXIT_OK;
}

static int parse_interval(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0.1 || v > 86400)
		return usage_error("--interval: '%s' is not a number of seconds from 0.1 to 86400",
				   s);
	*out = v;
	return 0;
}

static int parse_options(int argc, char **argv, struct ctl *c)
{
	enum { OPT_NO_PAGER = 256, OPT_ONCE };
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "no-pager", no_argument, NULL, OPT_NO_PAGER },
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "interval", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":s:ji:hV", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			c->socket = optarg;
			break;
		case 'j':
			c->json = true;
			break;
		case OPT_NO_PAGER:
			c->no_pager = true;
			break;
		case OPT_ONCE:
			c->once = c->once_set = true;
			break;
		case 'i':
			if (parse_interval(optarg, &c->interval_s))
				return EXIT_USAGE;
			c->interval_set = true;
			break;
		case 'h':
			help(stdout);
			return -1;
		case 'V':
			printf("irqctl %s\n", PACKAGE_VERSION);
			return -1;
		case ':':
			return usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	struct ctl c = { .interval_s = 2.0 };
	char req[IP_PROTO_REQ_MAX + 1];
	struct ip_request r;
	int code, n;

	c.socket = getenv(IP_PROTO_SOCKET_ENV);
	if (!c.socket || !*c.socket)
		c.socket = IP_PROTO_SOCKET_DEFAULT;
	code = parse_options(argc, argv, &c);
	if (code < 0)
		return EXIT_OK;
	if (code)
		return code;
	code = build_request(&c, argc - optind, argv + optind, &r);
	if (code < 0) {
		help(stdout);
		return EXIT_OK;
	}
	if (code)
		return code;
	n = ip_proto_encode(&r, req, sizeof(req));
	if (n < 0)
		return usage_error("cannot express this request: %s", strerror(-n));
	if (r.verb == IP_VERB_TOP)
		return run_top(&c, req, (size_t)n);
	/* Only read-only output is long enough to want a pager. */
	if (ip_proto_is_mutating(&r))
		c.no_pager = true;
	return run_once(&c, req, (size_t)n);
}
