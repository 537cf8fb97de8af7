// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "irqpilot/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* possible CPUs 0-3, 0-5 and a sparse 0,2,5,7: fields map by CPU id */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint32_t by_cpu[8];
	static const char *const lists[] = { "0-3", "0-5", "0,2,5,7" };

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		struct ip_diag d = { "" };
		ip_cpuset possible;
		int r;

		cpuset_zero(&possible);
		if (cpuset_parse_list(&possible, lists[i]) < 0)
			abort();
		r = ip_parse_per_cpu_count((const char *)data, size, &possible, by_cpu, 8, &d);
		if (r < 0 && !d.msg[0])
			abort();
		if (r != 0 && r != -EINVAL && r != -ERANGE && r != -EMSGSIZE)
			abort();
		if (r == 0 && (size == 0 || data[size - 1] != '\n'))
			abort();
		/* a CPU that is not possible never gets a count */
		for (int c = 0; r == 0 && c < 8; c++)
			if (!cpuset_test(&possible, c) && by_cpu[c])
				abort();
	}
	return 0;
}
