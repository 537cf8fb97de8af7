/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_IDLE_H
#define IRQPILOT_IDLE_H

#include <stdbool.h>
#include <stdint.h>

struct ip_plan;

/*
 * How the daemon waits for its next cycle: the decision alone, without
 * the event loop, so that it can be tested without a kernel.
 *
 * A full cycle reads every IRQ, thread and queue. After IP_IDLE_AFTER_CYCLES
 * quiet ones (no storage I/O) the daemon is idle, and then:
 *  - with perf counting submissions and its wakeup open (counters.h), no
 *    timer runs at all: the kernel makes the wakeup fd readable at the
 *    first bio and the daemon cycles at once. Zero wakeups at idle, and
 *    a burst is placed within one interval.
 *  - otherwise (task sampling, a --root tree, or the wakeup could not be
 *    opened) it backs off: a probe reads /proc/diskstats and the online,
 *    isolated and nohz_full CPU lists (a few small files,
 *    ip_sampler_probe()), and a full cycle runs when they changed or
 *    every IP_IDLE_FULL_S (daemon.h). The probe runs at every interval,
 *    or, on a --root tree whose files can be watched (watch.h), only when
 *    one of those files was written, at most once an interval: one
 *    wakeup a minute, for the full cycle, and none while the tree is
 *    still (none of the files a full cycle reads written since the last:
 *    the daemon's still_wait()).
 * Under steady I/O whose placement has held (ip_plan_settled()) for
 * IP_HOLD_AFTER_CYCLES cycles in a row, with the wakeup open, the daemon
 * holds: a full cycle every ip_hold_interval_s(), and the wakeup armed on
 * the CPUs that submitted nothing in the last sample. What could make it
 * move is a bio from somewhere else, and that wakes it at once; a shift
 * among the CPUs already submitting, a trickle or an end of the I/O waits
 * for the held cycle. At the default 2 s interval that is a fifth of the
 * cycles (measured on a real kernel: 5.5 times irqbalance's CPU a minute
 * without it, issue 18).
 * A capture samples at the configured interval whatever the I/O. While
 * the daemon cycles at the interval the wakeup is disarmed, so I/O does
 * not wake it once per bio.
 */
enum ip_wait {
	IP_WAIT_INTERVAL, /* a full cycle after one interval */
	IP_WAIT_PROBE,	  /* the back-off: probe each interval */
	IP_WAIT_WATCH,	  /* the back-off, probing when a watched file changed */
	IP_WAIT_EVENT,	  /* no timer: the armed perf wakeup */
	IP_WAIT_HOLD,	  /* steady and settled: a long cycle, the wakeup armed elsewhere */
};

#define IP_HOLD_AFTER_CYCLES 3
/* The held cycle: this many intervals, at most IP_HOLD_MAX_S (irqbalance's
 * own interval) and never shorter than the interval. */
#define IP_HOLD_INTERVALS 5
#define IP_HOLD_MAX_S 10.0

/* @settled: cycles in a row with storage I/O whose plan was settled;
 * @nr_wake: perf wakeup fds open; @watch: the probe's files are watched. */
enum ip_wait ip_idle_wait(bool idle, unsigned settled, bool capturing, int nr_wake, bool watch, double interval_s);
double ip_hold_interval_s(double interval_s);

/*
 * True when @p changes nothing and no vector waits for time to tell: no
 * move, thread, rq_affinity or irqpilot_cq action, and no vector kept
 * for a reason that a later sample could turn into a move (a gain below
 * the threshold, dwell, the move budget, the idle grace, no rates yet).
 */
bool ip_plan_settled(const struct ip_plan *p);

/*
 * The back-off's probe: true when the full cycle can wait, i.e. the last
 * probe's count (valid) equals this one's and the last full cycle is less
 * than idle_interval_s old.
 */
bool ip_idle_probe_quiet(bool prev_valid, uint64_t prev_ios, uint64_t ios, uint64_t now_usec,
			 uint64_t last_step_usec, double idle_interval_s);

#endif
