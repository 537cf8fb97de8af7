// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/devtree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The devicetree parsers on what a hostile tree could hold: the first
 * byte splits the input into a "compatible" string list and an
 * "interrupts" property, whose cells are then translated in groups of
 * #interrupt-cells (the second byte), as the storage scan does.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint32_t cells[IP_DT_MAX_CELLS];
	struct ip_diag d;
	struct ip_dt_irq irq;
	size_t split;
	unsigned nc;
	int n = 0;

	if (size < 2)
		return 0;
	split = data[0] % (size - 1);
	nc = data[1] % 9;
	data += 2;
	size -= 2;
	if (ip_dt_cells(data + split, size - split, cells, IP_DT_MAX_CELLS, &n, &d) < 0) {
		if (n != 0)
			abort();
		/* whole cells only: what a short property would leave */
		ip_dt_cells(data + split, (size - split) & ~(size_t)3, cells, IP_DT_MAX_CELLS, &n, &d);
	}
	if (n < 0 || n > IP_DT_MAX_CELLS)
		abort();
	(void)ip_dt_compatible((const char *)data, split, "arm,gic-v3");
	for (int i = 0; nc && i + (int)nc <= n; i += (int)nc) {
		int ret = ip_dt_translate((const char *)data, split, nc, &cells[i], &irq, &d);

		if (ret == 0 && (memchr(irq.chip, '\0', sizeof(irq.chip)) == NULL || !irq.chip[0]))
			abort();
		if (ret == 0) {
			char hw[24], shown[32];

			/* what it translated to must match itself as shown: a
			 * prefix chip with a suffix ("GIC-0", "APLIC-DIRECT") */
			snprintf(hw, sizeof(hw), "%lu", irq.hwirq);
			snprintf(shown, sizeof(shown), "%s%s", irq.chip, irq.chip_is_prefix ? "-0" : "");
			if (!ip_dt_irq_matches(&irq, shown, hw))
				abort();
		}
		if (ret < 0 && !d.msg[0])
			abort();
	}
	{
		char s[32];
		unsigned long hw;
		size_t k = size < sizeof(s) - 1 ? size : sizeof(s) - 1;

		memcpy(s, data, k);
		s[k] = '\0';
		(void)ip_parse_hwirq(s, &hw);
	}
	return 0;
}
