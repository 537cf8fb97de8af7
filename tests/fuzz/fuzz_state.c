// SPDX-License-Identifier: GPL-2.0-or-later
/* The state file --restore trusts with root's writes: whatever it holds,
 * every record that comes out is in range. */
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ip_state_bads bad = { 0 };
	struct ip_originals h;

	ip_originals_init(&h);
	if (ip_state_parse((const char *)data, size, 32768, &h, &bad) < 0)
		abort();
	for (size_t i = 0; i < h.nr_irqs; i++)
		if (h.irqs[i].irq >= IP_STATE_IRQ_MAX)
			abort();
	for (size_t i = 0; i < h.nr_threads; i++) {
		const struct ip_thread_orig *o = &h.threads[i];

		if (o->pid <= 0 || o->pid >= 32768 || !o->comm[0] || !memchr(o->comm, 0, sizeof(o->comm)))
			abort();
		if (o->have_sched && (o->policy == SCHED_FIFO || o->policy == SCHED_RR
					      ? o->priority < 1 || o->priority > 99
					      : o->priority != 0))
			abort();
	}
	for (size_t i = 0; i < h.nr_rq; i++)
		if (strchr(h.rq[i].device, '/') || !strcmp(h.rq[i].device, "..") ||
		    h.rq[i].value < 0 || h.rq[i].value > 2)
			abort();
	for (size_t i = 0; i < h.nr_cq; i++)
		if (strchr(h.cq[i].device, '/') || h.cq[i].major > 4095)
			abort();
	if (bad.kept > bad.n || bad.kept > IP_STATE_BADS_KEPT)
		abort();
	for (size_t i = 0; i < bad.kept; i++)
		if (bad.v[i].lineno <= 0 || !bad.v[i].why[0])
			abort();
	ip_state_bads_free(&bad);
	ip_originals_free(&h);
	return 0;
}
