// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-cycle: the cost of one daemon cycle (sample + derive) on a tree.
 *
 * The daemon's steady state is a sample against cached topology and
 * storage scans, derived against the previous snapshot; that is what is
 * timed. The warm-up sample (cold caches: topology, storage scan, IRQ
 * thread scan) is reported on its own line because it is paid once.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "irqpilot/model.h"
#include "irqpilot/root.h"
#include "irqpilot/sample.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double tv_ms(const struct timeval *tv)
{
	return (double)tv->tv_sec * 1e3 + (double)tv->tv_usec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static double pct(const double *v, int n, double p)
{
	int k = (int)(p / 100.0 * n + 0.999999);

	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

/* rchar and syscr of /proc/self/io: bytes read and read calls so far */
static void self_io(unsigned long long *rchar, unsigned long long *syscr)
{
	char line[128];
	FILE *f = fopen("/proc/self/io", "re");

	*rchar = *syscr = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "rchar: %llu", rchar);
		sscanf(line, "syscr: %llu", syscr);
	}
	fclose(f);
}

static int count_tracked(const struct ip_snapshot *snap)
{
	int n = 0;

	for (int i = 0; i < snap->nr_irqs; i++)
		n += snap->irqs[i].tracked;
	return n;
}

static void usage(FILE *f)
{
	fputs("usage: bench-cycle --root DIR [--cycles N] [--full]\n"
	      "Times N (default 50) sample+derive cycles of the daemon on the tree DIR.\n"
	      "--full reads all of /proc/interrupts every cycle (no per_cpu_count fast path).\n",
	      f);
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	long cycles = 50;
	struct ip_root *r = NULL;
	struct ip_sampler *s = NULL;
	struct ip_sampler_opts o = { .live_counters = false };
	struct ip_snapshot prev, cur;
	struct ip_diag d = { { 0 } };
	struct rusage ru0, ru1;
	double *wall, t0, warm_ms, sum = 0, cpu_ms, user_ms, sys_ms;
	unsigned long long rc0, rc1, sc0, sc1;
	unsigned long full = 0, fast = 0;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--root") == 0 && i + 1 < argc) {
			dir = argv[++i];
		} else if (strcmp(argv[i], "--cycles") == 0 && i + 1 < argc) {
			char *end;

			errno = 0;
			cycles = strtol(argv[++i], &end, 10);
			if (errno || *end || cycles < 1 || cycles > 1000000) {
				fprintf(stderr, "bench-cycle: --cycles: \"%s\" is not 1..1000000\n",
					argv[i]);
				return 2;
			}
		} else if (strcmp(argv[i], "--full") == 0) {
			o.full_scan_always = true;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!dir) {
		usage(stderr);
		return 2;
	}
	wall = calloc((size_t)cycles, sizeof(double));
	if (!wall)
		return 1;

	ret = ip_root_open(dir, &r);
	if (ret < 0) {
		fprintf(stderr, "bench-cycle: %s: %s\n", dir, strerror(-ret));
		return 1;
	}
	ret = ip_sampler_new(r, &o, &s);
	if (ret < 0) {
		fprintf(stderr, "bench-cycle: sampler: %s\n", strerror(-ret));
		return 1;
	}

	t0 = now_ms();
	ret = ip_sampler_sample(s, &prev, &d);
	warm_ms = now_ms() - t0;
	if (ret < 0) {
		fprintf(stderr, "bench-cycle: warm-up sample: %s\n", d.msg);
		return 1;
	}

	self_io(&rc0, &sc0);
	getrusage(RUSAGE_SELF, &ru0);
	for (long i = 0; i < cycles; i++) {
		struct ip_model m;

		t0 = now_ms();
		ret = ip_sampler_sample(s, &cur, &d);
		if (ret < 0) {
			fprintf(stderr, "bench-cycle: cycle %ld: sample: %s\n", i, d.msg);
			return 1;
		}
		ret = ip_model_derive(&prev, &cur, &m, &d);
		if (ret < 0) {
			fprintf(stderr, "bench-cycle: cycle %ld: derive: %s\n", i, d.msg);
			return 1;
		}
		ip_model_free(&m);
		ip_snapshot_free(&prev);
		prev = cur;
		wall[i] = now_ms() - t0;
		sum += wall[i];
	}
	getrusage(RUSAGE_SELF, &ru1);
	self_io(&rc1, &sc1);

	user_ms = (tv_ms(&ru1.ru_utime) - tv_ms(&ru0.ru_utime)) / (double)cycles;
	sys_ms = (tv_ms(&ru1.ru_stime) - tv_ms(&ru0.ru_stime)) / (double)cycles;
	cpu_ms = user_ms + sys_ms;
	qsort(wall, (size_t)cycles, sizeof(double), cmp_double);

	printf("tree         %s\n", dir);
	printf("machine      %d CPUs, %d IRQs (%d tracked), %d storage devices, %d IRQ threads\n",
	       prev.topo.nr_cpus, prev.nr_irqs, count_tracked(&prev), prev.storage.nr_devs,
	       prev.nr_threads);
	printf("warm-up      %.3f ms (cold caches, not counted below)\n", warm_ms);
	printf("cycles       %ld (sample + derive against the previous snapshot)\n", cycles);
	printf("\n");
	printf("%-22s %10s\n", "per cycle", "value");
	printf("%-22s %10.3f\n", "wall mean (ms)", sum / (double)cycles);
	printf("%-22s %10.3f\n", "wall median (ms)", pct(wall, (int)cycles, 50));
	printf("%-22s %10.3f\n", "wall p95 (ms)", pct(wall, (int)cycles, 95));
	printf("%-22s %10.3f\n", "wall min (ms)", wall[0]);
	printf("%-22s %10.3f\n", "wall max (ms)", wall[cycles - 1]);
	printf("%-22s %10.3f\n", "CPU user+sys (ms)", cpu_ms);
	printf("%-22s %10.3f\n", "  user (ms)", user_ms);
	printf("%-22s %10.3f\n", "  sys (ms)", sys_ms);
	printf("%-22s %10.1f\n", "peak RSS (MiB)", (double)ru1.ru_maxrss / 1024.0);
	printf("%-22s %10.0f\n", "bytes read", (double)(rc1 - rc0) / (double)cycles);
	printf("%-22s %10.1f\n", "read calls", (double)(sc1 - sc0) / (double)cycles);
	ip_sampler_scan_counts(s, &full, &fast);
	printf("%-22s %10lu / %lu\n", "full / fast samples", full, fast);
	printf("\n");
	printf("BENCH cycle cpus=%d irqs=%d cycles=%ld warmup_ms=%.3f wall_mean_ms=%.3f "
	       "wall_median_ms=%.3f wall_p95_ms=%.3f cpu_ms=%.3f user_ms=%.3f sys_ms=%.3f "
	       "maxrss_kb=%ld\n",
	       prev.topo.nr_cpus, prev.nr_irqs, cycles, warm_ms, sum / (double)cycles,
	       pct(wall, (int)cycles, 50), pct(wall, (int)cycles, 95), cpu_ms, user_ms, sys_ms,
	       ru1.ru_maxrss);

	ip_snapshot_free(&prev);
	ip_sampler_free(s);
	ip_root_free(r);
	free(wall);
	return 0;
}
