// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * irqpilotd: storage-first, capacity-aware IRQ placement.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "irqpilot/capture.h"
#include "irqpilot/config.h"
#include "irqpilot/daemon.h"
#include "irqpilot/engine.h"
#include "irqpilot/json.h"
#include "irqpilot/macro.h"
#include "irqpilot/model.h"
#include "irqpilot/report.h"
#include "irqpilot/root.h"
#include "irqpilot/state.h"
#include "irqpilot/sample.h"

enum mode { MODE_DAEMON, MODE_ONESHOT, MODE_REPLAY, MODE_CAPTURE, MODE_CHECK_CONFIG, MODE_RESTORE };

struct options {
	enum mode mode;
	const char *root;
	const char *dir; /* replay or capture */
	const char *config;
	const char *check_file; /* --check-config's FILE */
	bool config_explicit;
	const char *runtime_dir;
	bool runtime_explicit;
	bool dry_run, json, foreground, verbose;
	double interval_s; /* 0: the policy file's */
	int samples;
};

/* The exit status of a run whose output is all on stdout: help and
 * version cut off by a full disk are a failure like any report. */
static int flushed_stdout(void)
{
	int ret = ip_report_flush(stdout);

	if (ret < 0) {
		fprintf(stderr, "irqpilotd: writing to standard output: %s\n", strerror(-ret));
		return IP_EXIT_FAILURE;
	}
	return IP_EXIT_OK;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: irqpilotd [OPTIONS]\n"
		"Steer storage IRQ vectors and their threads to the CPUs that submit the I/O.\n\n"
		"  --config FILE        policy file (default " IP_CONFIG_DEFAULT_PATH ")\n"
		"  --foreground         also log to stderr\n"
		"  --dry-run            decide and report, but write nothing\n"
		"  --root DIR           read and write everything below DIR (default /)\n"
		"  --runtime-dir DIR    control socket, lock and state (default " IP_RUNTIME_DIR_DEFAULT ")\n"
		"  --interval SECONDS   time between cycles or samples (default: the policy file's, 2)\n"
		"  --oneshot            sample twice, decide, apply (unless --dry-run), report, exit\n"
		"  --json               one JSON document per step on stdout (--oneshot, --replay)\n"
		"  --replay DIR         step through a recorded series (always a dry run)\n"
		"  --capture DIR        record a replay series of this machine into DIR\n"
		"  --samples N          samples to capture (default 10)\n"
		"  --check-config [FILE] validate the policy file (default: --config) and exit\n"
		"  --verbose            with --check-config, print the effective configuration\n"
		"  --restore            write back the original settings a previous run recorded\n"
		"  --version            print the version and exit\n"
		"  --help               print this help and exit\n"
		"\nExit status: 0 success, 1 failure, 2 usage error or invalid policy file,\n"
		"3 refused to start (another irqpilotd, missing privilege, irqbalance running).\n");
}

enum { OPT_ONESHOT = 256, OPT_DRY, OPT_JSON, OPT_ROOT, OPT_REPLAY, OPT_CAPTURE, OPT_SAMPLES,
       OPT_INTERVAL, OPT_VERSION, OPT_HELP, OPT_CONFIG, OPT_FOREGROUND, OPT_CHECK, OPT_VERBOSE,
       OPT_RESTORE, OPT_RUNTIME };

static int parse_runtime_dir(const char *arg, struct options *o)
{
	if (arg[0] != '/') {
		fprintf(stderr, "irqpilotd: --runtime-dir: '%s' is not an absolute path\n", arg);
		return -EINVAL;
	}
	o->runtime_dir = arg;
	o->runtime_explicit = true;
	return 0;
}

static int parse_samples(const char *arg, struct options *o)
{
	char *end;

	errno = 0;
	o->samples = (int)strtol(arg, &end, 10);
	if (errno || *end || o->samples < 1 || o->samples > 100000) {
		fprintf(stderr, "irqpilotd: --samples: '%s' is not a count from 1 to 100000\n", arg);
		return -EINVAL;
	}
	return 0;
}

static int parse_interval(const char *arg, struct options *o)
{
	char *end;

	errno = 0;
	o->interval_s = strtod(arg, &end);
	if (errno || *end || !isfinite(o->interval_s) || o->interval_s < 0.01 || o->interval_s > 3600) {
		fprintf(stderr, "irqpilotd: --interval: '%s' is not a number of seconds "
				"from 0.01 to 3600\n", arg);
		return -EINVAL;
	}
	return 0;
}

/* "--check-config FILE", as users type it, as well as "--check-config=FILE":
 * getopt gives an optional argument only after '=', and leaves the next word
 * for us to take unless it is another option. */
static void take_check_config(int argc, char **argv, struct options *o)
{
	const char *file = optarg;

	o->mode = MODE_CHECK_CONFIG;
	if (!file && optind < argc && argv[optind][0] != '-')
		file = argv[optind++];
	if (file)
		o->check_file = file;
}

/* The options that choose what irqpilotd does; they exclude each other,
 * which parse_args checks once all are counted. */
static bool take_mode(int c, int argc, char **argv, struct options *o)
{
	switch (c) {
	case OPT_ONESHOT:
		o->mode = MODE_ONESHOT;
		return true;
	case OPT_REPLAY:
		o->mode = MODE_REPLAY;
		o->dir = optarg;
		o->dry_run = true;
		return true;
	case OPT_CAPTURE:
		o->mode = MODE_CAPTURE;
		o->dir = optarg;
		return true;
	case OPT_CHECK:
		take_check_config(argc, argv, o);
		return true;
	case OPT_RESTORE:
		o->mode = MODE_RESTORE;
		return true;
	default:
		return false;
	}
}

/* Every option that is not a mode: a flag, a path or a checked value. */
static int take_setting(int c, struct options *o)
{
	switch (c) {
	case OPT_DRY:
		o->dry_run = true;
		return 0;
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_ROOT:
		o->root = optarg;
		return 0;
	case OPT_CONFIG:
		o->config = optarg;
		o->config_explicit = true;
		return 0;
	case OPT_FOREGROUND:
		o->foreground = true;
		return 0;
	case OPT_VERBOSE:
		o->verbose = true;
		return 0;
	case OPT_RUNTIME:
		return parse_runtime_dir(optarg, o);
	case OPT_SAMPLES:
		return parse_samples(optarg, o);
	case OPT_INTERVAL:
		return parse_interval(optarg, o);
	case OPT_VERSION:
		printf("irqpilotd %s\n", PACKAGE_VERSION);
		exit(flushed_stdout());
	case OPT_HELP:
		usage(stdout);
		exit(flushed_stdout());
	default:
		usage(stderr);
		return -EINVAL;
	}
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "oneshot", no_argument, NULL, OPT_ONESHOT },
		{ "dry-run", no_argument, NULL, OPT_DRY },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "replay", required_argument, NULL, OPT_REPLAY },
		{ "capture", required_argument, NULL, OPT_CAPTURE },
		{ "samples", required_argument, NULL, OPT_SAMPLES },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "foreground", no_argument, NULL, OPT_FOREGROUND },
		{ "check-config", optional_argument, NULL, OPT_CHECK },
		{ "verbose", no_argument, NULL, OPT_VERBOSE },
		{ "restore", no_argument, NULL, OPT_RESTORE },
		{ "runtime-dir", required_argument, NULL, OPT_RUNTIME },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	int c, modes = 0;

	*o = (struct options){ .mode = MODE_DAEMON, .root = "/", .samples = 10,
			       .config = IP_CONFIG_DEFAULT_PATH, .runtime_dir = IP_RUNTIME_DIR_DEFAULT };
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (take_mode(c, argc, argv, o))
			modes++;
		else if (take_setting(c, o) < 0)
			return -EINVAL;
	}
	if (optind < argc) {
		fprintf(stderr, "irqpilotd: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (modes > 1) {
		fprintf(stderr, "irqpilotd: --oneshot, --replay, --capture, --check-config and --restore "
				"exclude each other\n");
		return -EINVAL;
	}
	/* FILE beats --config wherever it stands: a --config after it was
	 * checked instead, and the file meant reported valid unread. */
	if (o->check_file) {
		o->config = o->check_file;
		o->config_explicit = true;
	}
	return 0;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void report_step(const struct options *o, const struct ip_step *st, struct ip_engine *e)
{
	const char *src = ip_sampler_submit_source(ip_engine_sampler(e));
	bool dry = ip_engine_dry_run(e) || o->mode == MODE_REPLAY;

	if (o->json) {
		struct ip_json j;

		ip_json_init(&j, stdout);
		ip_json_object_begin(&j, NULL);
		ip_json_int(&j, "schema", IP_JSON_SCHEMA);
		ip_json_int(&j, "step", st->index);
		ip_json_bool(&j, "dry_run", dry);
		ip_json_uint(&j, "time_ns", st->now_ns);
		ip_report_plan_json(&j, st->decided ? &st->plan : NULL, &st->results);
		ip_report_model_json(&j, "model", &st->model, src);
		ip_json_object_end(&j);
		fputc('\n', stdout);
	} else {
		if (o->mode == MODE_REPLAY)
			printf("== step %d\n", st->index);
		ip_report_model_text(stdout, &st->model, src);
		ip_report_plan_text(stdout, st->decided ? &st->plan : NULL, &st->results, dry);
	}
}

/* A report that did not reach stdout fails the run (ip_report_flush()). */
static int flush_report(void)
{
	int ret = ip_report_flush(stdout);

	if (ret < 0)
		fprintf(stderr, "irqpilotd: writing the report to standard output: %s\n", strerror(-ret));
	return ret;
}

static int step(const struct options *o, struct ip_engine *e, bool report)
{
	struct ip_step *st;
	struct ip_diag d = { "" };
	int ret = ip_engine_step(e, &st, &d);
	const char *note = ip_sampler_take_note(ip_engine_sampler(e));

	/* what the sample could not read as the kernel writes it, as the daemon logs it */
	if (note)
		fprintf(stderr, "irqpilotd: sampler: %s\n", note);
	if (ret < 0) {
		fprintf(stderr, "irqpilotd: %s\n", d.msg[0] ? d.msg : strerror(-ret));
		return ret;
	}
	if (!report)
		return 0;
	report_step(o, st, e);
	return flush_report();
}

static int run_replay(const struct options *o, const struct ip_config *cfg)
{
	struct ip_engine_opts eo = { .dry_run = true, .simulate = true, .overrides = cfg->overrides };
	struct ip_engine *e = NULL;
	struct ip_diag d = { "" };
	char **steps = NULL;
	size_t n = 0;
	int ret;

	ret = ip_replay_steps(o->dir, &steps, &n, &d);
	if (ret < 0) {
		fprintf(stderr, "irqpilotd: --replay: %s\n", d.msg);
		return ret;
	}
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *path = ip_asprintf("%s/%s", o->dir, steps[i]);
		struct ip_root *r = NULL;

		if (!path) {
			ret = -ENOMEM;
			break;
		}
		/* a capture is untrusted: its links stay in the step */
		ret = ip_root_open_confined(path, &r);
		if (ret < 0) {
			fprintf(stderr, "irqpilotd: %s: %s\n", path,
				ret == -ENOTDIR ? "not a directory (a step is never a symbolic link)"
						: strerror(-ret));
			break;
		}
		if (!e)
			ret = ip_engine_new(r, &cfg->policy, &eo, &e);
		else
			ip_engine_set_root(e, r);
		if (ret >= 0)
			ret = step(o, e, true);
		ip_engine_set_root(e, NULL);
		ip_root_free(r);
		if (ret < 0) {
			fprintf(stderr, "irqpilotd: replay step %s failed\n", steps[i]);
			break;
		}
	}
	ip_engine_free(e);
	ip_strv_free(steps, n);
	return ret;
}

/* The policy file for the modes that are not the daemon. */
static int load_config(const struct options *o, struct ip_config *cfg)
{
	struct ip_diag d = { "" };
	int ret = ip_config_load_file(o->config, o->config_explicit, cfg, &d);

	if (ret < 0)
		fprintf(stderr, "irqpilotd: %s\n", d.msg);
	return ret < 0 ? ret : 0;
}

/* A file may be checked on another machine than the one it is for, so a
 * group missing here does not make it invalid; but the daemon would refuse
 * to start with it on this machine, which the user is told. */
static void warn_admin_group(const struct ip_config *cfg, const char *path)
{
	struct ip_diag d = { "" };
	gid_t gid;

	if (ip_daemon_admin_group(cfg, path, &gid, &d) < 0)
		fprintf(stderr, "irqpilotd: warning: %s; irqpilotd would refuse to start here\n", d.msg);
}

static int check_config(const struct options *o)
{
	struct ip_config cfg;
	struct ip_diag d = { "" };
	int ret;

	ip_config_init(&cfg);
	ret = ip_config_load_file(o->config, o->config_explicit, &cfg, &d);
	if (ret == IP_CONFIG_ABSENT) {
		printf("%s: no such file: the built-in defaults apply\n", o->config);
	} else if (ret < 0) {
		fprintf(stderr, "%s\n", d.msg);
		ip_config_free(&cfg);
		return IP_EXIT_USAGE;
	} else {
		printf("%s: valid\n", o->config);
		warn_admin_group(&cfg, o->config);
	}
	if (o->verbose)
		ip_config_dump(&cfg, stdout);
	ip_config_free(&cfg);
	/* --verbose > effective.conf on a full disk left a cut-off file that
	 * loads as a different policy, and status 0 said all was well. */
	return flushed_stdout();
}

/* systemd passes StateDirectory= as $STATE_DIRECTORY, a colon-separated
 * list when the unit names several; the first is the daemon's. */
static char *state_directory(void)
{
	const char *env = getenv("STATE_DIRECTORY");

	if (!env || env[0] != '/')
		return strdup(IP_STATE_DIR_DEFAULT);
	return strndup(env, strcspn(env, ":"));
}

/* The daemon and --restore own their config, state and logging. */
static int run_daemon_mode(const struct options *o)
{
	_cleanup_free_ char *state_dir = state_directory();
	struct ip_daemon_opts dopt = {
		.config_path = o->config, .config_explicit = o->config_explicit, .root = o->root,
		.runtime_dir = o->runtime_dir, .state_dir = state_dir, .foreground = o->foreground,
		.dry_run = o->dry_run, .interval_s = o->interval_s,
	};

	if (!state_dir)
		return IP_EXIT_FAILURE;

	return o->mode == MODE_DAEMON ? ip_daemon_run(&dopt) : ip_daemon_restore(&dopt);
}

static int run_capture(const struct options *o, const struct ip_config *cfg, struct ip_root *r)
{
	struct ip_sampler_opts so = { .live_counters = ip_root_is_live(r), .overrides = cfg->overrides };
	struct ip_sampler *s = NULL;
	struct ip_diag d = { "" };
	int ret;

	ret = ip_sampler_new(r, &so, &s);
	if (ret >= 0)
		ret = ip_capture_run(r, s, o->dir, o->samples, o->interval_s, &d);
	if (ret < 0)
		fprintf(stderr, "irqpilotd: --capture: %s\n", d.msg[0] ? d.msg : strerror(-ret));
	else
		fprintf(stderr, "irqpilotd: recorded %d samples in %s\n", o->samples, o->dir);
	ip_sampler_free(s);
	return ret;
}

/*
 * Where --oneshot records the originals of what it writes: the runtime
 * directory, as the daemon does, so that --restore (or the daemon started
 * next) puts them back. The default one is the live machine's: a tree
 * given by --root records there only with --runtime-dir (said). 0, or
 * -EBUSY/-EXDEV refused, said.
 */
static int oneshot_own(const struct options *o, struct ip_root *r, struct ip_engine *e, struct ip_owned *own)
{
	struct ip_diag d = { "" };
	int ret;

	*own = (struct ip_owned){ .lock_fd = -1, .irqs_fd = -1 };
	if (ip_engine_dry_run(e))
		return 0;
	if (!ip_root_is_live(r) && !o->runtime_explicit) {
		/* recording nothing, it still writes: a daemon on that tree
		 * would take its moves for originals */
		ret = ip_daemon_lock_irqs(r, o->runtime_dir, NULL, &own->irqs_fd, &d);
		if (ret < 0) {
			fprintf(stderr, "irqpilotd: --oneshot: refusing to write: %s\n", d.msg);
			return ret;
		}
		fprintf(stderr, "irqpilotd: --oneshot: original settings not recorded: %s is not this "
				"machine's runtime directory for --root %s; give --runtime-dir for --restore "
				"to undo this run\n",
			o->runtime_dir, ip_root_dir(r));
		return 0;
	}
	ret = ip_daemon_own(o->runtime_dir, r, e, own, &d);
	if (ret < 0)
		fprintf(stderr, "irqpilotd: --oneshot: refusing to write: %s\n", d.msg);
	return ret;
}

/* What --oneshot left recorded, and how to undo it. */
static void oneshot_said(struct ip_engine *e, const struct ip_owned *own)
{
	size_t n = own->state ? ip_originals_count(ip_engine_originals(e)) : 0;

	if (n)
		fprintf(stderr, "irqpilotd: %zu original setting(s) recorded in %s; irqpilotd --restore puts "
				"them back\n",
			n, ip_state_path(own->state));
}

static int run_oneshot(const struct options *o, const struct ip_config *cfg, struct ip_root *r)
{
	struct ip_engine_opts eo = {
		.dry_run = o->dry_run || cfg->daemon.dry_run,
		.live_counters = ip_root_is_live(r),
		.overrides = cfg->overrides,
	};
	struct ip_engine *e = NULL;
	struct ip_owned own = { .lock_fd = -1, .irqs_fd = -1 };
	int ret;

	ret = ip_engine_new(r, &cfg->policy, &eo, &e);
	if (ret >= 0)
		ret = oneshot_own(o, r, e, &own);
	if (ret < 0)
		goto out;
	/* Rates need two samples one interval apart. */
	ret = step(o, e, false);
	if (ret < 0)
		goto out;
	sleep_s(o->interval_s);
	ret = step(o, e, true);
out:
	if (e)
		oneshot_said(e, &own);
	ip_daemon_owned_free(&own);
	ip_engine_free(e);
	return ret;
}

/* --capture and --oneshot read (and --oneshot writes) the one --root. */
static int run_on_root(const struct options *o, const struct ip_config *cfg)
{
	struct ip_root *r = NULL;
	int ret;

	ret = ip_root_open(o->root, &r);
	if (ret < 0) {
		fprintf(stderr, "irqpilotd: --root %s: %s\n", o->root, strerror(-ret));
		return ret;
	}
	if (o->mode == MODE_CAPTURE)
		ret = run_capture(o, cfg, r);
	else if (o->mode == MODE_ONESHOT)
		ret = run_oneshot(o, cfg, r);
	else
		ret = -EINVAL;
	ip_root_free(r);
	return ret;
}

int main(int argc, char **argv)
{
	struct ip_config cfg;
	struct options o;
	int ret;

	if (parse_args(argc, argv, &o) < 0)
		return IP_EXIT_USAGE;
	if (o.mode == MODE_CHECK_CONFIG)
		return check_config(&o);
	if (o.mode == MODE_DAEMON || o.mode == MODE_RESTORE)
		return run_daemon_mode(&o);
	ip_config_init(&cfg);
	if (load_config(&o, &cfg) < 0) {
		ip_config_free(&cfg);
		return IP_EXIT_USAGE;
	}
	/* The window is counted in the file's period; --interval here only
	 * spaces the samples of --capture and --once. */
	cfg.policy.interval_s = cfg.daemon.interval_s;
	if (o.interval_s <= 0)
		o.interval_s = cfg.daemon.interval_s;
	if (o.mode == MODE_REPLAY)
		ret = run_replay(&o, &cfg);
	else
		ret = run_on_root(&o, &cfg);
	ip_config_free(&cfg);
	if (ret == -EBUSY || ret == -EXDEV)
		return IP_EXIT_REFUSED;
	return ret < 0 ? IP_EXIT_FAILURE : IP_EXIT_OK;
}
