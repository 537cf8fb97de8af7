// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "irqpilot/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const rows[] = { "BLOCK", "TIMER", "RCU", "" };
	static uint64_t by_cpu[IP_CPU_MAX];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct ip_diag d = { "" };
		int n = -1, r;

		r = ip_parse_softirqs((const char *)data, size, rows[i], by_cpu, &n, &d);
		if (r == 0 && (n < 1 || n > IP_CPU_MAX))
			abort();
		if (r < 0 && !d.msg[0])
			abort();
		if (r != 0 && r != -EINVAL && r != -ERANGE && r != -ENOENT)
			abort();
	}
	return 0;
}
