// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct ip_pid_status status;
	struct ip_pid_stat st;
	struct ip_pid_io io;
	struct ip_diag d;

	if (ip_parse_pid_stat(text, size, &st, &d) == 0) {
		if (memchr(st.comm, '\0', sizeof(st.comm)) == NULL || st.pid < 0 || st.ppid < 0)
			abort();
		if (st.has_processor && !cpuset_valid_cpu(st.processor))
			abort();
	}
	if (ip_parse_pid_status(text, size, &status, &d) == 0) {
		if (status.has_cpus_allowed && cpuset_count(&status.cpus_allowed) > IP_CPU_MAX)
			abort();
	}
	if (ip_parse_pid_io(text, size, &io, &d) < 0 && !d.msg[0])
		abort();
	return 0;
}
