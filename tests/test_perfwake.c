// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The idle wakeup's mechanism on this machine's kernel (perfwake.h): an
 * armed event's fd becomes readable at its first occurrence, a disarmed
 * one never. The daemon's event is block:block_bio_queue system-wide,
 * which needs CAP_PERFMON, tracefs and a disk to write to; the mechanism
 * (ring buffer, wakeup_events, ENABLE/DISABLE, perf_poll) is the same for
 * every event, so this uses the calling thread's own page faults, which
 * an unprivileged process may count (perf_event_paranoid <= 2). Nothing
 * of the machine's settings is touched. SKIPs (77) with the reason where
 * perf_event_open is refused (a seccomp filter, paranoid 3, no perf).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "irqpilot/perfwake.h"

static int fails;

#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                     \
			fputc('\n', stderr);                              \
			fails++;                                          \
		}                                                         \
	} while (0)

/* page faults of our own: fresh anonymous pages, each written once */
static void fault_pages(int n)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, (size_t)n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	for (int i = 0; i < n; i++)
		((volatile char *)p)[(size_t)i * page] = 1;
	munmap(p, (size_t)n * page);
}

static int readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r = poll(&p, 1, timeout_ms);

	return r > 0 && (p.revents & POLLIN);
}

int main(void)
{
	struct ip_perf_wake w = IP_PERF_WAKE_INIT;
	struct perf_event_attr attr;
	int ret;

	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_PAGE_FAULTS;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	ret = ip_perf_wake_open(&w, &attr, 0, -1, NULL);
	if (ret < 0) {
		printf("SKIP: perf_event_open or its ring buffer refused here: %s\n", strerror(-ret));
		return 77;
	}
	CHECK(!w.armed, "opened armed");
	/* disarmed: faults wake no one */
	fault_pages(64);
	CHECK(!readable(w.fd, 200), "readable while never armed");

	CHECK(ip_perf_wake_arm(&w, true) == 0, "arm: %s", strerror(errno));
	CHECK(!readable(w.fd, 100), "readable after arming, before any event");
	/* the counters skip a CPU whose armed wakeup saw nothing */
	CHECK(ip_perf_wake_quiet(&w), "not quiet after arming, before any event");
	fault_pages(64);
	/* the wakeup goes through irq_work: allow it a moment */
	CHECK(readable(w.fd, 2000), "not readable after faults while armed");
	CHECK(!ip_perf_wake_quiet(&w), "quiet after faults while armed");

	/* disarmed again: faults after that wake no one */
	CHECK(ip_perf_wake_arm(&w, false) == 0, "disarm: %s", strerror(errno));
	(void)readable(w.fd, 0); /* what was pending from before the disarm */
	fault_pages(64);
	CHECK(!readable(w.fd, 200), "readable after faults while disarmed");
	CHECK(!ip_perf_wake_quiet(&w), "quiet while disarmed: nothing is counted then");

	/* armed anew after samples it never polled: no stale wakeup */
	CHECK(ip_perf_wake_arm(&w, true) == 0, "re-arm: %s", strerror(errno));
	fault_pages(64);
	CHECK(ip_perf_wake_arm(&w, false) == 0, "disarm: %s", strerror(errno));
	CHECK(ip_perf_wake_arm(&w, true) == 0, "re-arm: %s", strerror(errno));
	CHECK(!readable(w.fd, 100), "a wakeup from before the re-arm was delivered");
	CHECK(ip_perf_wake_quiet(&w), "samples from before the re-arm count against it");
	fault_pages(64);
	CHECK(readable(w.fd, 2000), "not readable after faults when re-armed");

	ip_perf_wake_close(&w);
	CHECK(w.fd == -1 && !w.rb, "close left fd or buffer");
	if (!fails)
		printf("PASS: the perf wakeup fires armed and stays silent disarmed\n");
	return fails ? 1 : 0;
}
