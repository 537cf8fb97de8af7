// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/cpuset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* parse(format(s)) must give s back, whatever syntax s was read from. */
static void round_trip(const ip_cpuset *s)
{
	static char buf[IP_CPULIST_MAX];
	ip_cpuset back;
	size_t n;

	n = cpuset_format_list(s, buf, sizeof(buf));
	if (n >= sizeof(buf) || strlen(buf) != n)
		abort();
	if (cpuset_parse_list(&back, buf) != 0 || !cpuset_equal(&back, s))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	ip_cpuset s;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (cpuset_parse_list(&s, text) == 0)
		round_trip(&s);
	if (cpuset_parse_mask(&s, text) == 0)
		round_trip(&s);
	free(text);
	return 0;
}
