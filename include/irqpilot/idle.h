/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_IDLE_H
#define IRQPILOT_IDLE_H

#include <stdbool.h>
#include <stdint.h>

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
 *    opened) it backs off: a probe at every interval reads
 *    /proc/diskstats and the online, isolated and nohz_full CPU lists (a
 *    few small files, ip_sampler_probe()), and a full cycle runs when
 *    they changed or every IP_IDLE_FULL_S (daemon.h).
 * A capture samples at the configured interval whatever the I/O. While
 * the daemon cycles at the interval the wakeup is disarmed, so I/O does
 * not wake it once per bio.
 */
enum ip_wait {
	IP_WAIT_INTERVAL, /* a full cycle after one interval */
	IP_WAIT_PROBE,	  /* the back-off: probe each interval */
	IP_WAIT_EVENT,	  /* no timer: the armed perf wakeup */
};

enum ip_wait ip_idle_wait(bool idle, bool capturing, int nr_wake);

/*
 * The back-off's probe: true when the full cycle can wait, i.e. the last
 * probe's count (valid) equals this one's and the last full cycle is less
 * than idle_interval_s old.
 */
bool ip_idle_probe_quiet(bool prev_valid, uint64_t prev_ios, uint64_t ios, uint64_t now_usec,
			 uint64_t last_step_usec, double idle_interval_s);

#endif
