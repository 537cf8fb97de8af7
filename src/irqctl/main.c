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

#include "irqpilot/macro.h"
#include "irqpilot/protocol.h"
#include "irqpilot/report.h"
#include "irqctl.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = sig;
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

static int transact(const struct ctl *c, const char *req, size_t len, struct ctl_reply *reply)
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
		return ctl_usage_error("%s", d.msg);
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
	r = ctl_reply_parse(buf, n, reply, &d);
	if (r < 0) {
		fprintf(stderr, "irqctl: bad reply from irqpilotd: %s\n", d.msg);
		return EXIT_FAILED;
	}
	if (!reply->ok) {
		put_clean(stderr, "irqctl: ", reply->error);
		fputc('\n', stderr);
		r = reply->err == EPERM || reply->err == EACCES ? EXIT_DENIED : EXIT_FAILED;
		ctl_reply_free(reply);
		return r;
	}
	return EXIT_OK;
}

/* --json prints what the daemon said; otherwise irqctl renders it. */
static void format_reply(FILE *f, const struct ctl *c, const struct ip_request *r,
			 const struct ctl_reply *reply)
{
	json_object *empty = NULL;

	if (reply->text) {
		/* a daemon from before replies were data */
		fputs(reply->text, f);
		return;
	}
	/* an ok reply with nothing to say still gives scripts a document */
	if (!reply->data)
		empty = json_object_new_object();
	if (c->json)
		ctl_print_json(f, reply->data ? reply->data : empty);
	else
		ctl_render(f, r, reply->data ? reply->data : empty);
	json_object_put(empty);
}

/* Also the JSON: a daemon from before its writer escaped C1 controls passes them. */
static void print_reply(FILE *f, const struct ctl *c, const struct ip_request *r,
			const struct ctl_reply *reply)
{
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);

	if (!m)
		return;
	format_reply(m, c, r, reply);
	if (fclose(m) == 0 && out)
		put_clean(f, "", out);
}

/* Output that did not reach stdout fails the command (ip_report_flush()):
 * `irqctl top >/dev/full` ran on for good. */
static int flush_output(void)
{
	int ret = ip_report_flush(stdout);

	if (ret == 0)
		return EXIT_OK;
	fprintf(stderr, "irqctl: writing to standard output: %s\n", strerror(-ret));
	return EXIT_FAILED;
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

static int run_once(const struct ctl *c, const struct ip_request *rq, const char *req, size_t len)
{
	struct ctl_reply reply;
	FILE *pager;
	int r;

	r = transact(c, req, len, &reply);
	if (r != EXIT_OK)
		return r;
	pager = pager_open(c);
	print_reply(pager ? pager : stdout, c, rq, &reply);
	ctl_reply_free(&reply);
	/* a pager the user quit early took what was wanted */
	if (pager) {
		pclose(pager);
		return EXIT_OK;
	}
	return flush_output();
}

/* Sleeps, returning early when a stop signal arrives. */
static void wait_interval(double seconds)
{
	struct timespec ts = { .tv_sec = (time_t)seconds,
			       .tv_nsec = (long)((seconds - floor(seconds)) * 1e9) };

	while (!stop_requested && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int run_top(const struct ctl *c, const struct ip_request *rq, const char *req, size_t len)
{
	bool redraw = !c->once && !c->json && isatty(STDOUT_FILENO);
	struct sigaction sa = { .sa_handler = on_signal };
	struct ctl_reply reply;
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
		print_reply(stdout, c, rq, &reply);
		ctl_reply_free(&reply);
		r = flush_output();
		if (r != EXIT_OK)
			return r;
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
		return ctl_usage_error("--interval: '%s' is not a number of seconds from 0.1 to 86400",
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
			ctl_help(stdout);
			return -1;
		case 'V':
			printf("irqctl %s\n", PACKAGE_VERSION);
			return -1;
		case ':':
			return ctl_usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			return ctl_usage_error("unknown option '%s'", argv[optind - 1]);
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
	/* help and version are output too: a full disk fails them as any */
	if (code < 0)
		return flush_output();
	if (code)
		return code;
	code = ctl_build_request(&c, argc - optind, argv + optind, &r);
	if (code < 0) {
		ctl_help(stdout);
		return flush_output();
	}
	if (code)
		return code;
	n = ip_proto_encode(&r, req, sizeof(req));
	if (n < 0)
		return ctl_usage_error("cannot express this request: %s", strerror(-n));
	if (r.verb == IP_VERB_TOP)
		return run_top(&c, &r, req, (size_t)n);
	/* Only read-only output is long enough to want a pager. */
	if (ip_proto_is_mutating(&r))
		c.no_pager = true;
	return run_once(&c, &r, req, (size_t)n);
}
