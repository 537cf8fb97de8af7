// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check_disk(void *ctx, const struct ip_diskstat *s)
{
	size_t n = strlen(s->name);

	if (n == 0 || strpbrk(s->name, " \t\n"))
		abort();
	*(size_t *)ctx += n;
	return 0;
}

static int check_counter(void *ctx, const char *device, int cpu, uint64_t count)
{
	if (!device[0] || !cpuset_valid_cpu(cpu))
		abort();
	*(size_t *)ctx += strlen(device) + (size_t)count;
	return 0;
}

/* The line-oriented numeric formats: diskstats, /proc/stat and the
 * replay counter files share the same pitfalls. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ip_cpu_times times[IP_CPU_MAX];
	const char *text = (const char *)data;
	struct ip_diag d;
	ip_cpuset present;
	size_t sum = 0;

	ip_parse_diskstats(text, size, check_disk, &sum, &d);
	if (ip_parse_stat(text, size, times, &present, &d) == 0 && cpuset_empty(&present))
		abort();
	ip_parse_counters(text, size, check_counter, &sum, &d);
	return 0;
}
