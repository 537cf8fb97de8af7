// SPDX-License-Identifier: GPL-2.0
/*
 * ipcq-ctl: a small generic netlink client of irqpilot_cq.ko for the VM
 * tests. It speaks the same uapi header as irqpilotd.
 *
 *   ipcq-ctl attach DISK | detach DISK     exit 0, or 1 with the kernel's error
 *   ipcq-ctl hold DISK                     attach, owned by this process's socket
 *                                          (IPCQ_ATTACH_F_OWNED), print "held", then
 *                                          wait until killed
 *   ipcq-ctl list                          one line per completion thread
 *   ipcq-ctl listen SECONDS                events, one line each, until SECONDS pass
 *
 * DISK is a name ("sda", looked up in /sys/block/DISK/dev, as the daemon
 * does: the module resolves no names) or MAJOR:MINOR.
 *
 * Build: gcc -O2 -Wall -I../../include/uapi $(pkg-config --cflags libnl-genl-3.0) \
 *        ipcq-ctl.c $(pkg-config --libs libnl-genl-3.0)
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include "irqpilot_cq.h"

static const char *const event_names[] = {
	[IPCQ_EVENT_ATTACH] = "attach",
	[IPCQ_EVENT_DETACH] = "detach",
	[IPCQ_EVENT_REMOVED] = "removed",
	[IPCQ_EVENT_STALL] = "stall",
};

/* The thread whose line is open: a later message with its key goes on it. */
static struct {
	int open;
	uint32_t major, minor, hwq, pid;
} line;

static void end_line(void)
{
	if (line.open)
		printf("\n");
	line.open = 0;
	fflush(stdout);
}

static void print_cpus(struct nlattr *nest, const char *sep)
{
	struct nlattr *e, *f[IPCQ_CPU_A_MAX + 1];
	int rem;

	nla_for_each_nested(e, nest, rem) {
		if (nla_type(e) != IPCQ_CPU_A_ENTRY ||
		    nla_parse_nested(f, IPCQ_CPU_A_MAX, e, NULL) < 0 || !f[IPCQ_CPU_A_CPU] ||
		    !f[IPCQ_CPU_A_COUNT])
			continue;
		printf("%s%u:%" PRIu64, sep, nla_get_u32(f[IPCQ_CPU_A_CPU]),
		       (uint64_t)nla_get_u64(f[IPCQ_CPU_A_COUNT]));
		sep = ",";
	}
}

static int print_msg(struct nl_msg *msg, void *arg)
{
	struct genlmsghdr *gh = nlmsg_data(nlmsg_hdr(msg));
	struct nlattr *a[IPCQ_A_MAX + 1];
	uint32_t major, minor, hwq, pid;

	(void)arg;
	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, IPCQ_A_MAX, NULL) < 0)
		return NL_SKIP;
	if (gh->cmd == IPCQ_CMD_LIST) {
		major = a[IPCQ_A_MAJOR] ? nla_get_u32(a[IPCQ_A_MAJOR]) : 0;
		minor = a[IPCQ_A_MINOR] ? nla_get_u32(a[IPCQ_A_MINOR]) : 0;
		hwq = a[IPCQ_A_HWQ] ? nla_get_u32(a[IPCQ_A_HWQ]) : 0;
		pid = a[IPCQ_A_PID] ? nla_get_u32(a[IPCQ_A_PID]) : 0;
		/* The rest of a thread's CPUs, which did not fit its first message. */
		if (line.open && !a[IPCQ_A_COMPLETIONS] && major == line.major &&
		    minor == line.minor && hwq == line.hwq && pid == line.pid) {
			if (a[IPCQ_A_CPU_COMPLETIONS])
				print_cpus(a[IPCQ_A_CPU_COMPLETIONS], ",");
			return NL_OK;
		}
		end_line();
		line.open = 1;
		line.major = major;
		line.minor = minor;
		line.hwq = hwq;
		line.pid = pid;
	}
	if (gh->cmd == IPCQ_CMD_EVENT) {
		uint32_t ev = a[IPCQ_A_EVENT] ? nla_get_u32(a[IPCQ_A_EVENT]) : 0;

		printf("event=%s", ev < 5 && event_names[ev] ? event_names[ev] : "unknown");
	}
	if (a[IPCQ_A_DISK])
		printf("%sdisk=%s", gh->cmd == IPCQ_CMD_EVENT ? " " : "",
		       nla_get_string(a[IPCQ_A_DISK]));
	if (a[IPCQ_A_MAJOR] && a[IPCQ_A_MINOR])
		printf(" dev=%u:%u", nla_get_u32(a[IPCQ_A_MAJOR]), nla_get_u32(a[IPCQ_A_MINOR]));
	if (a[IPCQ_A_HWQ])
		printf(" hwq=%u", nla_get_u32(a[IPCQ_A_HWQ]));
	if (a[IPCQ_A_NR_HWQ])
		printf(" nr_hwq=%u", nla_get_u32(a[IPCQ_A_NR_HWQ]));
	if (a[IPCQ_A_PID])
		printf(" pid=%u", nla_get_u32(a[IPCQ_A_PID]));
	if (a[IPCQ_A_COMPLETIONS])
		printf(" completions=%" PRIu64, (uint64_t)nla_get_u64(a[IPCQ_A_COMPLETIONS]));
	if (a[IPCQ_A_WAKEUPS])
		printf(" wakeups=%" PRIu64, (uint64_t)nla_get_u64(a[IPCQ_A_WAKEUPS]));
	if (a[IPCQ_A_MAX_WAIT_NS])
		printf(" max_wait_ns=%" PRIu64, (uint64_t)nla_get_u64(a[IPCQ_A_MAX_WAIT_NS]));
	if (a[IPCQ_A_STALLS])
		printf(" stalls=%" PRIu64, (uint64_t)nla_get_u64(a[IPCQ_A_STALLS]));
	if (a[IPCQ_A_FALLBACKS])
		printf(" fallbacks=%" PRIu64, (uint64_t)nla_get_u64(a[IPCQ_A_FALLBACKS]));
	if (a[IPCQ_A_WAIT_NS])
		printf(" wait_ns=%" PRIu64, (uint64_t)nla_get_u64(a[IPCQ_A_WAIT_NS]));
	if (a[IPCQ_A_CPU_COMPLETIONS]) {
		printf(" cpus=");
		print_cpus(a[IPCQ_A_CPU_COMPLETIONS], "");
	}
	if (gh->cmd != IPCQ_CMD_LIST) {
		printf("\n");
		fflush(stdout);
	}
	return NL_OK;
}

/* The kernel's errno and extack message, which libnl folds into NLE_* or drops. */
static int kerr;
static char kmsg[256];

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *err, void *arg)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)((char *)err - NLMSG_HDRLEN);
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	int off = sizeof(*err);

	(void)nla;
	(void)arg;
	kerr = err->error < 0 ? -err->error : err->error;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += err->msg.nlmsg_len - NLMSG_HDRLEN;
	if ((nlh->nlmsg_flags & NLM_F_ACK_TLVS) && off < (int)(nlh->nlmsg_len - NLMSG_HDRLEN) &&
	    nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)err + NLMSG_ALIGN(off)),
		      nlh->nlmsg_len - NLMSG_HDRLEN - NLMSG_ALIGN(off), NULL) == 0 &&
	    tb[NLMSGERR_ATTR_MSG])
		snprintf(kmsg, sizeof(kmsg), "%s", nla_get_string(tb[NLMSGERR_ATTR_MSG]));
	return NL_STOP;
}

/* DISK: MAJOR:MINOR, or a name looked up in /sys/block/NAME/dev. */
static int resolve(const char *disk, unsigned *major, unsigned *minor, const char **name)
{
	char path[300];
	FILE *f;
	int n;

	*name = NULL;
	if (sscanf(disk, "%u:%u%n", major, minor, &n) == 2 && !disk[n])
		return 0;
	if (strchr(disk, '/'))
		return -1;
	snprintf(path, sizeof(path), "/sys/block/%s/dev", disk);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%u:%u", major, minor);
	fclose(f);
	*name = disk;
	return n == 2 ? 0 : -1;
}

static int request(struct nl_sock *sk, int family, uint8_t cmd, const char *disk, uint32_t flags)
{
	struct nl_msg *msg = nlmsg_alloc();
	unsigned major = 0, minor = 0;
	const char *name = NULL;
	int ret;

	if (!msg)
		return -NLE_NOMEM;
	if (disk && resolve(disk, &major, &minor, &name) < 0) {
		nlmsg_free(msg);
		fprintf(stderr, "ipcq-ctl: no disk %s\n", disk);
		return -NLE_OBJ_NOTFOUND;
	}
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0,
			 cmd == IPCQ_CMD_LIST ? NLM_F_DUMP : 0, cmd, IPCQ_GENL_VERSION) ||
	    (disk && (nla_put_u32(msg, IPCQ_A_MAJOR, major) < 0 ||
		      nla_put_u32(msg, IPCQ_A_MINOR, minor) < 0 ||
		      (name && nla_put_string(msg, IPCQ_A_DISK, name) < 0))) ||
	    (flags && nla_put_u32(msg, IPCQ_A_FLAGS, flags) < 0)) {
		nlmsg_free(msg);
		return -NLE_NOMEM;
	}
	ret = nl_send_auto(sk, msg);
	nlmsg_free(msg);
	if (ret < 0)
		return ret;
	if (cmd == IPCQ_CMD_LIST) {
		ret = nl_recvmsgs_default(sk);
		end_line();
		return ret;
	}
	return nl_wait_for_ack(sk);
}

static int listen_events(struct nl_sock *sk, int seconds)
{
	struct pollfd pfd = { .fd = nl_socket_get_fd(sk), .events = POLLIN };
	struct timespec now, end;
	int grp, ret, ms;

	grp = genl_ctrl_resolve_grp(sk, IPCQ_GENL_NAME, IPCQ_GENL_MCGRP_EVENTS);
	if (grp < 0)
		return grp;
	ret = nl_socket_add_membership(sk, grp);
	if (ret < 0)
		return ret;
	nl_socket_disable_seq_check(sk);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += seconds;
	printf("listening\n");
	fflush(stdout);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (end.tv_sec - now.tv_sec) * 1000 + (end.tv_nsec - now.tv_nsec) / 1000000;
		if (ms <= 0)
			return 0;
		if (poll(&pfd, 1, ms) > 0) {
			ret = nl_recvmsgs_default(sk);
			if (ret < 0)
				return ret;
		}
	}
}

int main(int argc, char **argv)
{
	struct nl_sock *sk;
	int family, ret;

	if (argc < 2) {
		fprintf(stderr, "usage: ipcq-ctl attach|detach|hold DISK | list | listen SECONDS\n");
		return 2;
	}
	sk = nl_socket_alloc();
	if (!sk || genl_connect(sk) < 0) {
		fprintf(stderr, "ipcq-ctl: cannot open a generic netlink socket\n");
		return 1;
	}
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, print_msg, NULL);
	nl_socket_modify_err_cb(sk, NL_CB_CUSTOM, on_error, NULL);
	{
		int one = 1;

		setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	}
	family = genl_ctrl_resolve(sk, IPCQ_GENL_NAME);
	if (family < 0) {
		fprintf(stderr, "ipcq-ctl: no %s family (module not loaded?)\n", IPCQ_GENL_NAME);
		return 1;
	}
	if (!strcmp(argv[1], "attach") && argc == 3)
		ret = request(sk, family, IPCQ_CMD_ATTACH, argv[2], 0);
	else if (!strcmp(argv[1], "hold") && argc == 3) {
		ret = request(sk, family, IPCQ_CMD_ATTACH, argv[2], IPCQ_ATTACH_F_OWNED);
		if (ret >= 0) {
			printf("held\n");
			fflush(stdout);
			for (;;)
				pause();
		}
	} else if (!strcmp(argv[1], "detach") && argc == 3)
		ret = request(sk, family, IPCQ_CMD_DETACH, argv[2], 0);
	else if (!strcmp(argv[1], "list") && argc == 2)
		ret = request(sk, family, IPCQ_CMD_LIST, NULL, 0);
	else if (!strcmp(argv[1], "listen") && argc == 3)
		ret = listen_events(sk, atoi(argv[2]));
	else {
		fprintf(stderr, "ipcq-ctl: bad command\n");
		return 2;
	}
	nl_socket_free(sk);
	if (ret < 0) {
		if (kerr)
			fprintf(stderr, "ipcq-ctl: %s: %s%s%s\n", argv[1], strerror(kerr),
				*kmsg ? ": " : "", kmsg);
		else
			fprintf(stderr, "ipcq-ctl: %s: %s\n", argv[1], nl_geterror(ret));
		return 1;
	}
	return 0;
}
