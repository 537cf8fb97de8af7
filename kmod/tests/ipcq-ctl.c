// SPDX-License-Identifier: GPL-2.0
/*
 * ipcq-ctl: a small generic netlink client of irqpilot_cq.ko for the VM
 * tests. It speaks the same uapi header as irqpilotd.
 *
 *   ipcq-ctl attach DISK | detach DISK     exit 0, or 1 with the kernel's error
 *   ipcq-ctl list                          one line per completion thread
 *   ipcq-ctl listen SECONDS                events, one line each, until SECONDS pass
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

static int print_msg(struct nl_msg *msg, void *arg)
{
	struct genlmsghdr *gh = nlmsg_data(nlmsg_hdr(msg));
	struct nlattr *a[IPCQ_A_MAX + 1], *c;
	int rem;

	(void)arg;
	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, IPCQ_A_MAX, NULL) < 0)
		return NL_SKIP;
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
		const char *sep = "";

		printf(" cpus=");
		nla_for_each_nested(c, a[IPCQ_A_CPU_COMPLETIONS], rem) {
			if (nla_type(c) == 0)
				continue;
			printf("%s%d:%" PRIu64, sep, nla_type(c) - 1, (uint64_t)nla_get_u64(c));
			sep = ",";
		}
	}
	printf("\n");
	fflush(stdout);
	return NL_OK;
}

static int request(struct nl_sock *sk, int family, uint8_t cmd, const char *disk)
{
	struct nl_msg *msg = nlmsg_alloc();
	int ret;

	if (!msg)
		return -NLE_NOMEM;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0,
			 cmd == IPCQ_CMD_LIST ? NLM_F_DUMP : 0, cmd, IPCQ_GENL_VERSION) ||
	    (disk && nla_put_string(msg, IPCQ_A_DISK, disk) < 0)) {
		nlmsg_free(msg);
		return -NLE_NOMEM;
	}
	ret = nl_send_auto(sk, msg);
	nlmsg_free(msg);
	if (ret < 0)
		return ret;
	if (cmd == IPCQ_CMD_LIST)
		return nl_recvmsgs_default(sk);
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
		fprintf(stderr, "usage: ipcq-ctl attach|detach DISK | list | listen SECONDS\n");
		return 2;
	}
	sk = nl_socket_alloc();
	if (!sk || genl_connect(sk) < 0) {
		fprintf(stderr, "ipcq-ctl: cannot open a generic netlink socket\n");
		return 1;
	}
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, print_msg, NULL);
	family = genl_ctrl_resolve(sk, IPCQ_GENL_NAME);
	if (family < 0) {
		fprintf(stderr, "ipcq-ctl: no %s family (module not loaded?)\n", IPCQ_GENL_NAME);
		return 1;
	}
	if (!strcmp(argv[1], "attach") && argc == 3)
		ret = request(sk, family, IPCQ_CMD_ATTACH, argv[2]);
	else if (!strcmp(argv[1], "detach") && argc == 3)
		ret = request(sk, family, IPCQ_CMD_DETACH, argv[2]);
	else if (!strcmp(argv[1], "list") && argc == 2)
		ret = request(sk, family, IPCQ_CMD_LIST, NULL);
	else if (!strcmp(argv[1], "listen") && argc == 3)
		ret = listen_events(sk, atoi(argv[2]));
	else {
		fprintf(stderr, "ipcq-ctl: bad command\n");
		return 2;
	}
	nl_socket_free(sk);
	if (ret < 0) {
		fprintf(stderr, "ipcq-ctl: %s: %s\n", argv[1], nl_geterror(ret));
		return 1;
	}
	return 0;
}
