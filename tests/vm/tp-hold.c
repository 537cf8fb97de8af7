// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tp-hold: keep perf tracepoint events open so that their kernel text is
 * patched once, before any I/O, and never again while a scenario runs.
 *
 *   tp-hold SYSTEM:EVENT...
 *
 * Opens one counting perf event per tracepoint on CPU 0, prints "held N"
 * on stdout and waits for SIGTERM. Exits 2, saying which event failed and
 * why, if one cannot be opened.
 *
 * Why: the first perf event on a tracepoint registers perf's probe
 * (perf_trace_event_reg(), kernel/trace/trace_event_perf.c), which flips
 * the tracepoint's static branch and static call at every call site
 * (tracepoint_add_func(), kernel/tracepoint.c); the last one closed
 * patches them back. irqpilotd's events on block:block_bio_queue and
 * block:block_rq_complete do that at its start and exit. Under QEMU's
 * multi-threaded TCG a vCPU inside submit_bio_noacct_nocheck() while
 * another vCPU patches it can keep running the stale translation: fio's
 * vCPU then loops there (soft lockups at submit_bio_noacct_nocheck+0xd2,
 * tests/vm/README.md). While this holds an event, perf's probe stays
 * registered and later events only take a reference (perf_refcount), so
 * starting or stopping the daemon under fio writes no kernel text.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int tracepoint_id(const char *spec, long long *id)
{
	static const char *const bases[] = { "/sys/kernel/tracing/events",
					     "/sys/kernel/debug/tracing/events" };
	char path[256], name[128];
	const char *colon = strchr(spec, ':');
	size_t i;

	if (!colon || colon == spec || !colon[1] || strlen(spec) >= sizeof(name))
		return -EINVAL;
	snprintf(name, sizeof(name), "%.*s/%s", (int)(colon - spec), spec, colon + 1);
	for (i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		FILE *f;
		int ok;

		snprintf(path, sizeof(path), "%s/%s/id", bases[i], name);
		f = fopen(path, "re");
		if (!f)
			continue;
		ok = fscanf(f, "%lld", id) == 1;
		fclose(f);
		return ok ? 0 : -EIO;
	}
	return -ENOENT;
}

int main(int argc, char **argv)
{
	sigset_t set;
	int i, sig;

	if (argc < 2) {
		fprintf(stderr, "usage: tp-hold SYSTEM:EVENT...\n");
		return 2;
	}
	/* Blocked before the events open, so a SIGTERM sent at once is not lost. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);

	for (i = 1; i < argc; i++) {
		struct perf_event_attr attr;
		long long id;
		int r = tracepoint_id(argv[i], &id);

		if (r < 0) {
			fprintf(stderr, "tp-hold: %s: no tracepoint id: %s\n", argv[i], strerror(-r));
			return 2;
		}
		memset(&attr, 0, sizeof(attr));
		attr.type = PERF_TYPE_TRACEPOINT;
		attr.size = sizeof(attr);
		attr.config = (unsigned long long)id;
		/* Counting on one CPU: the probe is registered for all CPUs all the same. */
		if (syscall(SYS_perf_event_open, &attr, -1, 0, -1, 0) < 0) {
			fprintf(stderr, "tp-hold: %s: perf_event_open: %s\n", argv[i], strerror(errno));
			return 2;
		}
	}
	printf("held %d\n", argc - 1);
	fflush(stdout);
	if (sigwait(&set, &sig) != 0)
		return 1;
	return 0;
}
