// SPDX-License-Identifier: GPL-2.0-or-later
#include "irqpilot/idle.h"

enum ip_wait ip_idle_wait(bool idle, bool capturing, int nr_wake)
{
	if (!idle || capturing)
		return IP_WAIT_INTERVAL;
	return nr_wake > 0 ? IP_WAIT_EVENT : IP_WAIT_PROBE;
}

bool ip_idle_probe_quiet(bool prev_valid, uint64_t prev_ios, uint64_t ios, uint64_t now_usec,
			 uint64_t last_step_usec, double idle_interval_s)
{
	return prev_valid && ios == prev_ios &&
	       now_usec < last_step_usec + (uint64_t)(idle_interval_s * 1e6);
}
