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
#include "irqpilot/json.h"
#include "irqpilot/macro.h"
#include "irqpilot/model.h"
#include "irqpilot/report.h"
#include "irqpilot/root.h"
#include "irqpilot/sample.h"

enum mode { MODE_DAEMON, MODE_ONESHOT, MODE_REPLAY, MODE_CAPTURE };

struct options {
	enum mode mode;
	const char *root;
	const char *dir; /* replay or capture */
	bool dry_run, json;
	double interval_s;
	int samples;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: irqpilotd [OPTIONS]\n"
		"Steer storage IRQ vectors and their threads to the CPUs that submit the I/O.\n\n"
		"  --oneshot            sample twice, report, and exit\n"
		"  --dry-run            decide and report, but write nothing\n"
		"  --json               one JSON document per step on stdout\n"
		"  --root DIR           read and write everything below DIR (default /)\n"
		"  --replay DIR         step through a recorded series (always a dry run)\n"
		"  --capture DIR        record a replay series of this machine into DIR\n"
		"  --samples N          samples to capture (default 10)\n"
		"  --interval SECONDS   time between samples (default 2)\n"
		"  --version            print the version and exit\n"
		"  --help               print this help and exit\n");
}

static int parse_args(int argc, char **argv, struct options *o)
{
	enum { OPT_ONESHOT = 256, OPT_DRY, OPT_JSON, OPT_ROOT, OPT_REPLAY, OPT_CAPTURE, OPT_SAMPLES,
	       OPT_INTERVAL, OPT_VERSION, OPT_HELP };
	static const struct option longopts[] = {
		{ "oneshot", no_argument, NULL, OPT_ONESHOT },
		{ "dry-run", no_argument, NULL, OPT_DRY },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "replay", required_argument, NULL, OPT_REPLAY },
		{ "capture", required_argument, NULL, OPT_CAPTURE },
		{ "samples", required_argument, NULL, OPT_SAMPLES },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct options){ .mode = MODE_DAEMON, .root = "/", .interval_s = 2, .samples = 10 };
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		char *end;

		switch (c) {
		case OPT_ONESHOT:
			o->mode = MODE_ONESHOT;
			break;
		case OPT_DRY:
			o->dry_run = true;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_ROOT:
			o->root = optarg;
			break;
		case OPT_REPLAY:
			o->mode = MODE_REPLAY;
			o->dir = optarg;
			o->dry_run = true;
			break;
		case OPT_CAPTURE:
			o->mode = MODE_CAPTURE;
			o->dir = optarg;
			break;
		case OPT_SAMPLES:
			errno = 0;
			o->samples = (int)strtol(optarg, &end, 10);
			if (errno || *end || o->samples < 1 || o->samples > 100000) {
				fprintf(stderr, "irqpilotd: --samples: '%s' is not a count from 1 to 100000\n",
					optarg);
				return -EINVAL;
			}
			break;
		case OPT_INTERVAL:
			errno = 0;
			o->interval_s = strtod(optarg, &end);
			if (errno || *end || !isfinite(o->interval_s) || o->interval_s < 0.01 ||
			    o->interval_s > 3600) {
				fprintf(stderr, "irqpilotd: --interval: '%s' is not a number of seconds "
						"from 0.01 to 3600\n", optarg);
				return -EINVAL;
			}
			break;
		case OPT_VERSION:
			printf("irqpilotd %s\n", PACKAGE_VERSION);
			exit(EXIT_SUCCESS);
		case OPT_HELP:
			usage(stdout);
			exit(EXIT_SUCCESS);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "irqpilotd: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void report_step(const struct options *o, int step, const struct ip_model *m,
			const struct ip_sampler *s)
{
	if (o->json) {
		struct ip_json j;

		ip_json_init(&j, stdout);
		ip_json_object_begin(&j, NULL);
		ip_json_int(&j, "schema", IP_JSON_SCHEMA);
		ip_json_int(&j, "step", step);
		ip_json_bool(&j, "dry_run", o->dry_run);
		ip_report_model_json(&j, "model", m, ip_sampler_submit_source(s));
		ip_json_object_end(&j);
		fputc('\n', stdout);
	} else {
		if (o->mode == MODE_REPLAY)
			printf("== step %d\n", step);
		ip_report_model_text(stdout, m, ip_sampler_submit_source(s));
	}
	fflush(stdout);
}

/* Sample, derive against the previous snapshot, report. The previous
 * snapshot is replaced by the new one. */
static int cycle(const struct options *o, struct ip_sampler *s, struct ip_snapshot *prev, bool *have_prev,
		 int step, bool report)
{
	struct ip_snapshot cur;
	struct ip_model m;
	struct ip_diag d = { "" };
	int ret;

	ret = ip_sampler_sample(s, &cur, &d);
	if (ret < 0) {
		fprintf(stderr, "irqpilotd: sample failed: %s\n", d.msg[0] ? d.msg : strerror(-ret));
		return ret;
	}
	ret = ip_model_derive(*have_prev ? prev : NULL, &cur, &m, &d);
	if (ret < 0) {
		fprintf(stderr, "irqpilotd: %s\n", d.msg);
		ip_snapshot_free(&cur);
		return ret;
	}
	if (report)
		report_step(o, step, &m, s);
	ip_model_free(&m);
	if (*have_prev)
		ip_snapshot_free(prev);
	*prev = cur;
	*have_prev = true;
	return 0;
}

static int run_replay(const struct options *o)
{
	struct ip_snapshot prev;
	bool have_prev = false;
	struct ip_sampler *s = NULL;
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
		ret = ip_root_open(path, &r);
		if (ret < 0) {
			fprintf(stderr, "irqpilotd: %s: %s\n", path, strerror(-ret));
			break;
		}
		if (!s) {
			struct ip_sampler_opts so = { .live_counters = false };

			ret = ip_sampler_new(r, &so, &s);
		} else {
			ip_sampler_set_root(s, r);
		}
		if (ret >= 0)
			ret = cycle(o, s, &prev, &have_prev, (int)i, true);
		ip_sampler_set_root(s, NULL);
		ip_root_free(r);
		if (ret < 0) {
			fprintf(stderr, "irqpilotd: replay step %s failed\n", steps[i]);
			break;
		}
	}
	if (have_prev)
		ip_snapshot_free(&prev);
	ip_sampler_free(s);
	ip_strv_free(steps, n);
	return ret;
}

int main(int argc, char **argv)
{
	struct options o;
	struct ip_root *r = NULL;
	struct ip_sampler *s = NULL;
	struct ip_snapshot prev;
	bool have_prev = false;
	struct ip_diag d = { "" };
	int ret;

	if (parse_args(argc, argv, &o) < 0)
		return 2;
	if (o.mode == MODE_REPLAY)
		return run_replay(&o) < 0 ? 1 : 0;

	ret = ip_root_open(o.root, &r);
	if (ret < 0) {
		fprintf(stderr, "irqpilotd: --root %s: %s\n", o.root, strerror(-ret));
		return 1;
	}
	{
		struct ip_sampler_opts so = { .live_counters = ip_root_is_live(r) };

		ret = ip_sampler_new(r, &so, &s);
	}
	if (ret < 0) {
		fprintf(stderr, "irqpilotd: %s\n", strerror(-ret));
		goto out;
	}
	switch (o.mode) {
	case MODE_CAPTURE:
		ret = ip_capture_run(r, s, o.dir, o.samples, o.interval_s, &d);
		if (ret < 0)
			fprintf(stderr, "irqpilotd: --capture: %s\n", d.msg[0] ? d.msg : strerror(-ret));
		else
			fprintf(stderr, "irqpilotd: recorded %d samples in %s\n", o.samples, o.dir);
		break;
	case MODE_ONESHOT:
		/* Rates need two samples one interval apart. */
		ret = cycle(&o, s, &prev, &have_prev, 0, false);
		if (ret < 0)
			break;
		sleep_s(o.interval_s);
		ret = cycle(&o, s, &prev, &have_prev, 0, true);
		break;
	case MODE_DAEMON:
	case MODE_REPLAY:
		fprintf(stderr, "irqpilotd: run with --oneshot, --replay DIR or --capture DIR\n");
		ret = -EINVAL;
		break;
	}
out:
	if (have_prev)
		ip_snapshot_free(&prev);
	ip_sampler_free(s);
	ip_root_free(r);
	return ret < 0 ? 1 : 0;
}
