// SPDX-License-Identifier: GPL-2.0-or-later
#include "irqpilot/idle.h"
#include "irqpilot/policy.h"

double ip_hold_interval_s(double interval_s)
{
	double h = interval_s * IP_HOLD_INTERVALS;

	if (h > IP_HOLD_MAX_S)
		h = IP_HOLD_MAX_S;
	return h > interval_s ? h : interval_s;
}

enum ip_wait ip_idle_wait(bool idle, unsigned settled, bool capturing, int nr_wake, bool watch, double interval_s)
{
	if (capturing)
		return IP_WAIT_INTERVAL;
	if (idle)
		return nr_wake > 0 ? IP_WAIT_EVENT : watch ? IP_WAIT_WATCH : IP_WAIT_PROBE;
	/* without the wakeup a held cycle would miss a move for its length;
	 * at an interval as long as the hold there is nothing to stretch */
	if (settled >= IP_HOLD_AFTER_CYCLES && nr_wake > 0 && ip_hold_interval_s(interval_s) > interval_s)
		return IP_WAIT_HOLD;
	return IP_WAIT_INTERVAL;
}

bool ip_plan_settled(const struct ip_plan *p)
{
	if (p->nr_moves || p->nr_threads || p->nr_rq || p->nr_cq)
		return false;
	for (int i = 0; i < p->nr_kept; i++) {
		switch (p->kept[i].why.code) {
		case IP_R_NO_RATES:
		case IP_R_BELOW_THRESHOLD:
		case IP_R_IDLE_GRACE:
		case IP_R_DWELL:
		case IP_R_BUDGET:
		case IP_R_ALTERNATING:
			return false;
		default:
			break;
		}
	}
	return true;
}

bool ip_idle_probe_quiet(bool prev_valid, uint64_t prev_ios, uint64_t ios, uint64_t now_usec,
			 uint64_t last_step_usec, double idle_interval_s)
{
	return prev_valid && ios == prev_ios &&
	       now_usec < last_step_usec + (uint64_t)(idle_interval_s * 1e6);
}
