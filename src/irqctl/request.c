// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * irqctl's command line: from words to a request, with the protocol's own
 * command table and argument parser.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "irqpilot/protocol.h"
#include "irqctl.h"

/* The commands' lines come from the protocol's command table, so the help
 * cannot list a command the daemon does not take or miss one it does. */
static void help_commands(FILE *f)
{
	bool first = true;

	for (int v = 0; v < _IP_VERB_MAX; v++) {
		const struct ip_command *c = ip_proto_command((enum ip_verb)v);
		const char *usage = v == IP_VERB_TOP ? "top [--once] [--interval S]" : c->usage;

		if (strlen(usage) > 28)
			fprintf(f, "  %s\n  %-28s %s\n", usage, "", c->help);
		else
			fprintf(f, "  %-28s %s\n", usage, c->help);
	}
	fprintf(f, "  %-28s %s\n", "help", "show this help");
	fputs("\nIRQ is an IRQ number or a name such as nvme0q1; commands and objects may be\n"
	      "abbreviated as long as that is unambiguous (irqctl sh ir). A relative capture\n"
	      "DIR is taken from the current directory. ", f);
	for (int v = 0; v < _IP_VERB_MAX; v++) {
		const struct ip_command *c = ip_proto_command((enum ip_verb)v);

		if (!c->admin)
			continue;
		fprintf(f, "%s%s", first ? "" : ", ", c->name);
		first = false;
	}
	fputs("\nneed root or the daemon's admin_group.\n", f);
}

void ctl_help(FILE *f)
{
	fputs("Usage: irqctl [OPTIONS] COMMAND\n"
	      "Ask the running irqpilotd what it sees and why, and steer it.\n"
	      "\n"
	      "Commands:\n", f);
	help_commands(f);
	fprintf(f,
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
		"  1  irqpilotd refused or failed the request (its error is printed),\n"
		"     or the output could not be written\n"
		"  2  usage error\n"
		"  3  irqpilotd is not running, its socket is unreachable, or it did not\n"
		"     answer within %d s\n"
		"  4  permission denied (by the daemon or on the socket)\n",
		IP_PROTO_SOCKET_ENV, IP_PROTO_SOCKET_DEFAULT, IP_PROTO_TIMEOUT_MS / 1000);
}

int ctl_usage_error(const char *fmt, ...)
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

/* The capture directory is a path on the daemon's side, which has its own
 * working directory: make a relative one absolute here. */
static int capture_path(const char *dir, char *out, size_t size)
{
	char cwd[PATH_MAX];
	int n;

	/* made absolute, "" named the current directory, and the daemon
	 * refused that as not below its state directory (exit 4) */
	if (!dir[0])
		return ctl_usage_error("capture: empty directory name ''");
	if (dir[0] == '/') {
		n = snprintf(out, size, "%s", dir);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return ctl_usage_error("capture: cannot resolve %s: %s", dir, strerror(errno));
		n = snprintf(out, size, "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", dir);
	}
	if (n < 0 || (size_t)n >= size)
		return ctl_usage_error("capture: directory path longer than %zu bytes", size - 1);
	if (strchr(out, ' '))
		return ctl_usage_error("capture: the directory path must not contain spaces");
	for (const char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return ctl_usage_error("capture: the directory path has a control character");
	return 0;
}

/* Builds the request from the command words with the protocol's own
 * argument parser; irqctl only adds abbreviations and makes a relative
 * capture directory absolute. Returns EXIT_OK, -1 for help, or a usage exit
 * code with the message printed. */
int ctl_build_request(const struct ctl *c, int argc, char **argv, struct ip_request *r)
{
	char *args[2] = { NULL, NULL }, dir[IP_PROTO_PATH_MAX];
	const struct ip_command *cmd;
	struct ip_diag d = { "" };
	int v, o, nargs = argc - 1;

	memset(r, 0, sizeof(*r));
	if (argc == 0)
		return ctl_usage_error("no command given");
	v = match(argv[0], verb_at, VERB_HELP + 1);
	if (v == -2)
		return ctl_usage_error("'%s' is ambiguous; spell out more of the command", argv[0]);
	if (v < 0)
		return ctl_usage_error("unknown command '%s'", argv[0]);
	if (v == VERB_HELP)
		return -1;
	cmd = ip_proto_command((enum ip_verb)v);
	r->verb = (enum ip_verb)v;
	/* The daemon always answers with data now; --json only changes
	 * how irqctl prints it, so the wire flag is not sent. */
	if ((c->once_set || c->interval_set) && r->verb != IP_VERB_TOP)
		return ctl_usage_error("--once and --interval only apply to top");
	if (nargs < ip_proto_min_args(cmd))
		return ctl_usage_error("%s: missing argument; usage: irqctl %s", cmd->name, cmd->usage);
	if (nargs > ip_proto_max_args(cmd))
		return ctl_usage_error("%s: too many arguments; usage: irqctl %s", cmd->name, cmd->usage);
	for (int i = 0; i < nargs; i++)
		args[i] = argv[1 + i];
	if (cmd->args == IP_ARGS_OBJECT) {
		o = match(argv[1], object_at, _IP_OBJ_MAX);
		if (o < 0)
			return ctl_usage_error("show: %s object '%s' (irqs, cpus, domains, devices, threads)",
					   o == -2 ? "ambiguous" : "unknown", argv[1]);
		args[0] = (char *)object_at(o);
	}
	if (cmd->args == IP_ARGS_DIR_COUNT) {
		if (capture_path(argv[1], dir, sizeof(dir)))
			return EXIT_USAGE;
		args[0] = dir;
	}
	if (ip_proto_parse_args(r, args, nargs, &d) < 0)
		return ctl_usage_error("%s: %s", cmd->name, d.msg);
	return EXIT_OK;
}

