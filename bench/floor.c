// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-floor: the least a daemon that runs once per interval can cost.
 * It wakes on a timerfd every --interval seconds, through epoll as both
 * daemons wait, and does nothing else: no file read, no allocation. Its
 * CPU per interval, measured by bench-steady beside the daemons in the
 * same run, is the wakeup itself (timer interrupt, scheduling in and out,
 * two system calls) on this machine, under this load; a ratio target
 * below floor / irqbalance cannot be met by waking once per interval.
 *
 * Standalone: only libc.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct itimerspec its = { 0 };
	struct epoll_event ev = { .events = EPOLLIN };
	double interval = argc == 3 && strcmp(argv[1], "--interval") == 0 ? atof(argv[2]) : 0;
	int tfd, efd;

	if (interval <= 0) {
		fputs("usage: bench-floor --interval SECONDS\n", stderr);
		return 2;
	}
	its.it_interval.tv_sec = (time_t)interval;
	its.it_interval.tv_nsec = (long)((interval - (double)(time_t)interval) * 1e9);
	its.it_value = its.it_interval;
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	efd = epoll_create1(EPOLL_CLOEXEC);
	if (tfd < 0 || efd < 0 || epoll_ctl(efd, EPOLL_CTL_ADD, tfd, &ev) < 0 || timerfd_settime(tfd, 0, &its, NULL) < 0) {
		fprintf(stderr, "bench-floor: %s\n", strerror(errno));
		return 1;
	}
	for (;;) {
		uint64_t n;

		if (epoll_wait(efd, &ev, 1, -1) < 0 && errno != EINTR)
			return 1;
		if (read(tfd, &n, sizeof(n)) < 0 && errno != EAGAIN)
			return 1;
	}
}
