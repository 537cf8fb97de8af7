// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whatever loads must dump to text that loads back to the same thing:
 * that is what irqpilotd --check-config -v promises. */
static void round_trip(const struct ip_config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct ip_config back;
	struct ip_diag d;

	if (!f)
		return;
	if (ip_config_dump(c, f) != 0)
		abort();
	fclose(f);
	ip_config_init(&back);
	if (ip_config_load_string(buf, "dump", &back, &d) != 0 || !ip_config_equal(c, &back)) {
		fprintf(stderr, "round trip failed: %s\n%s\n", d.msg, buf);
		abort();
	}
	ip_config_free(&back);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct ip_config c;
	struct ip_diag d;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	ip_config_init(&c);
	d.msg[0] = '\0';
	if (ip_config_load_string(text, "fuzz", &c, &d) == 0)
		round_trip(&c);
	else if (strncmp(d.msg, "fuzz:", 5) != 0)
		abort(); /* every error names the input */
	ip_config_free(&c);
	free(text);
	return 0;
}
