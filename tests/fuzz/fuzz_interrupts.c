// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_ctx {
	const struct ip_irq_header *hdr;
	uint64_t sum;
};

/* Touches everything a consumer would, so ASan sees any bad pointer. */
static int check_line(void *ctx, const struct ip_irq_line *l)
{
	struct fuzz_ctx *c = ctx;
	const char *names[8];
	char buf[256];
	int n, k;

	if (l->ncounts != c->hdr->ncols || l->lineno < 2)
		abort();
	/* nonzero lists exactly the columns that are not 0, ascending */
	k = 0;
	for (int i = 0; i < l->ncounts; i++) {
		c->sum += l->counts[i];
		if (l->counts[i] && (k >= l->nr_nonzero || l->nonzero[k++] != i))
			abort();
	}
	if (k != l->nr_nonzero)
		abort();
	c->sum += strlen(l->chip) + strlen(l->hwirq) + strlen(l->trigger) + strlen(l->actions);
	n = ip_split_actions(l->actions, buf, sizeof(buf), names, 8);
	if (n < 0 || n > 8)
		abort();
	for (int i = 0; i < n; i++)
		if (names[i] < buf || names[i] + strlen(names[i]) >= buf + sizeof(buf) ||
		    !names[i][0])
			abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ip_irq_header hdr;
	struct fuzz_ctx c = { .hdr = &hdr };
	struct ip_diag d;
	int r;

	r = ip_parse_interrupts((const char *)data, size, &hdr, check_line, &c, &d);
	if (r == 0) {
		if (hdr.ncols < 1 || hdr.ncols > IP_CPU_MAX)
			abort();
		for (int i = 0; i < hdr.ncols; i++)
			if (!cpuset_valid_cpu(hdr.col_cpu[i]) ||
			    (i && hdr.col_cpu[i] <= hdr.col_cpu[i - 1]))
				abort();
	} else if (!d.msg[0] || memchr(d.msg, '\0', sizeof(d.msg)) == NULL) {
		abort();
	}
	return 0;
}
