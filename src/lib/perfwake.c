// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "irqpilot/perfwake.h"

int ip_perf_wake_open(struct ip_perf_wake *w, const struct perf_event_attr *attr, pid_t pid, int cpu,
		      const char *filter)
{
	struct perf_event_attr a = *attr;
	long page = sysconf(_SC_PAGESIZE);
	int e;

	w->fd = -1;
	w->cpu = cpu;
	w->rb = NULL;
	w->armed = false;
	w->head_armed = 0;
	a.size = sizeof(a);
	a.sample_period = 1;
	a.sample_type = 0; /* a bare header: nothing in it is read */
	a.wakeup_events = 1;
	a.watermark = 0;
	a.disabled = 1;
	w->fd = (int)syscall(SYS_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (w->fd < 0)
		return -errno;
	if (filter && ioctl(w->fd, PERF_EVENT_IOC_SET_FILTER, filter) < 0)
		goto fail;
	/* the header page and 2^0 data pages; read-only: overwrite mode */
	w->rb_len = 2 * (size_t)page;
	w->rb = mmap(NULL, w->rb_len, PROT_READ, MAP_SHARED, w->fd, 0);
	if (w->rb == MAP_FAILED) {
		w->rb = NULL;
		goto fail;
	}
	return 0;
fail:
	e = -errno;
	ip_perf_wake_close(w);
	return e;
}

static uint64_t rb_head(const struct ip_perf_wake *w)
{
	const struct perf_event_mmap_page *pg = w->rb;

	/* the kernel's store of data_head is ordered after the sample's
	 * (perf_output_put_handle()); an acquire load pairs with it */
	return pg ? __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE) : 0;
}

int ip_perf_wake_arm(struct ip_perf_wake *w, bool on)
{
	if (w->fd < 0)
		return -EBADF;
	if (w->armed == on)
		return 0;
	if (on) {
		struct pollfd p = { .fd = w->fd, .events = POLLIN };

		/* perf_poll() hands out the buffer's pending wakeup once
		 * (atomic_xchg): samples written after the last poll, before the
		 * last disarm, would otherwise wake the caller at once. */
		(void)poll(&p, 1, 0);
		/* taken while disabled: any sample after the enable moves it */
		w->head_armed = rb_head(w);
	}
	if (ioctl(w->fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) < 0)
		return -errno;
	w->armed = on;
	return 0;
}

bool ip_perf_wake_quiet(const struct ip_perf_wake *w)
{
	return w->armed && w->rb && rb_head(w) == w->head_armed;
}

void ip_perf_wake_close(struct ip_perf_wake *w)
{
	if (w->rb)
		munmap(w->rb, w->rb_len);
	if (w->fd >= 0)
		close(w->fd);
	w->rb = NULL;
	w->fd = -1;
	w->armed = false;
}
