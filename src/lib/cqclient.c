// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The libnl client of irqpilot_cq.ko. Requests go on one socket, events
 * arrive on another, so a dump in progress never swallows an event and an
 * event never breaks a request's sequence check.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/family.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include "irqpilot/cqclient.h"
#include "irqpilot/macro.h"
#include "irqpilot/root.h"
#include "uapi/irqpilot_cq.h"

struct ip_cq {
	struct nl_sock *sk, *ev;
	int family;
	int kerr; /* errno of the last NLMSG_ERROR, 0 if none */
};

const char *ip_cq_event_name(enum ip_cq_event_kind k)
{
	switch (k) {
	case IP_CQ_EV_ATTACH:
		return "attach";
	case IP_CQ_EV_DETACH:
		return "detach";
	case IP_CQ_EV_REMOVED:
		return "removed";
	case IP_CQ_EV_STALL:
		return "stall";
	default:
		return "unknown";
	}
}

void ip_cq_list_free(struct ip_cq_list *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->e[i].cpu_completions);
	free(l->e);
	l->e = NULL;
	l->n = 0;
}

/* The kernel's own errno, which libnl would otherwise fold into NLE_*. */
static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *err, void *arg)
{
	struct ip_cq *c = arg;

	c->kerr = err->error < 0 ? -err->error : err->error;
	return NL_STOP;
}

static int nl_to_errno(struct ip_cq *c, int nlerr)
{
	if (c->kerr)
		return -c->kerr;
	switch (-nlerr) {
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_PERM:
		return -EPERM;
	case NLE_AGAIN:
		return -EAGAIN;
	case NLE_OBJ_NOTFOUND:
		return -ENOENT;
	default:
		return -EIO;
	}
}

static struct nl_sock *new_socket(struct ip_cq *c)
{
	struct nl_sock *sk = nl_socket_alloc();

	if (!sk)
		return NULL;
	if (genl_connect(sk) < 0) {
		nl_socket_free(sk);
		return NULL;
	}
	nl_socket_modify_err_cb(sk, NL_CB_CUSTOM, on_error, c);
	return sk;
}

/* The family version the loaded module registered, from the controller. */
static int family_version(struct nl_sock *sk)
{
	struct nl_cache *cache;
	struct genl_family *f;
	int v = -1;

	if (genl_ctrl_alloc_cache(sk, &cache) < 0)
		return -1;
	f = genl_ctrl_search_by_name(cache, IPCQ_GENL_NAME);
	if (f) {
		v = (int)genl_family_get_version(f);
		genl_family_put(f);
	}
	nl_cache_free(cache);
	return v;
}

bool ip_cq_loaded(struct ip_root *r)
{
	/* the module's name is its family's (kmod/Kbuild, uapi header) */
	return ip_root_exists(r, "sys/module/" IPCQ_GENL_NAME);
}

int ip_cq_open(struct ip_cq **out, struct ip_diag *d)
{
	struct ip_cq *c = calloc(1, sizeof(*c));
	int ret;

	*out = NULL;
	if (!c)
		return ip_diag_set(d, -ENOMEM, "irqpilot_cq: out of memory");
	c->sk = new_socket(c);
	if (!c->sk) {
		free(c);
		return ip_diag_set(d, -EIO, "irqpilot_cq: cannot open a generic netlink socket");
	}
	c->family = genl_ctrl_resolve(c->sk, IPCQ_GENL_NAME);
	if (c->family < 0) {
		ip_cq_close(c);
		return ip_diag_set(d, -IP_CQ_ABSENT,
				   "irqpilot_cq: no generic netlink family %s (module not loaded)",
				   IPCQ_GENL_NAME);
	}
	ret = family_version(c->sk);
	if (ret != IPCQ_GENL_VERSION) {
		ip_cq_close(c);
		if (ret < 0)
			return ip_diag_set(d, -EIO, "irqpilot_cq: cannot read the family's version");
		/* Another version's attributes would be read as garbage. */
		return ip_diag_set(d, -EPROTO,
				   "irqpilot_cq: the module speaks version %d, irqpilotd version %d: load the irqpilot_cq.ko of this release",
				   ret, IPCQ_GENL_VERSION);
	}
	*out = c;
	return 0;
}

void ip_cq_close(struct ip_cq *c)
{
	if (!c)
		return;
	if (c->sk)
		nl_socket_free(c->sk);
	if (c->ev)
		nl_socket_free(c->ev);
	free(c);
}

static void put_attr(char *buf, size_t *off, uint16_t type, const void *data, uint16_t len)
{
	struct nlattr *na = (struct nlattr *)(buf + *off);

	na->nla_type = type;
	na->nla_len = NLA_HDRLEN + len;
	memcpy(buf + *off + NLA_HDRLEN, data, len);
	memset(buf + *off + NLA_HDRLEN + len, 0, NLA_ALIGN(len) - len);
	*off += NLA_HDRLEN + NLA_ALIGN(len);
}

size_t ip_cq_encode_request(void *buf, size_t size, int family, uint8_t cmd, unsigned major,
			    unsigned minor, unsigned flags)
{
	struct nlmsghdr *nlh = buf;
	struct genlmsghdr *gh;
	size_t off = NLMSG_HDRLEN + GENL_HDRLEN;
	uint32_t v;

	if (size < IP_CQ_REQUEST_MAX)
		return 0;
	memset(buf, 0, IP_CQ_REQUEST_MAX);
	gh = (struct genlmsghdr *)((char *)buf + NLMSG_HDRLEN);
	gh->cmd = cmd;
	gh->version = IPCQ_GENL_VERSION;
	nlh->nlmsg_type = (uint16_t)family;
	nlh->nlmsg_flags = NLM_F_REQUEST | (cmd == IPCQ_CMD_LIST ? NLM_F_DUMP : NLM_F_ACK);
	/* The module resolves no names: the device number is the disk. */
	if (cmd != IPCQ_CMD_LIST) {
		v = major;
		put_attr(buf, &off, IPCQ_A_MAJOR, &v, sizeof(v));
		v = minor;
		put_attr(buf, &off, IPCQ_A_MINOR, &v, sizeof(v));
	}
	if (cmd == IPCQ_CMD_ATTACH && (flags & IP_CQ_ATTACH_OWNED)) {
		v = IPCQ_ATTACH_F_OWNED;
		put_attr(buf, &off, IPCQ_A_FLAGS, &v, sizeof(v));
	}
	nlh->nlmsg_len = (uint32_t)off;
	return off;
}

static int request(struct ip_cq *c, uint8_t cmd, unsigned major, unsigned minor, unsigned flags)
{
	/* Aligned for the nlmsghdr and nlattr written into it. */
	char buf[IP_CQ_REQUEST_MAX] __attribute__((aligned(8)));
	struct nl_msg *msg;
	int ret;

	ip_cq_encode_request(buf, sizeof(buf), c->family, cmd, major, minor, flags);
	/* Port and sequence are 0 (NL_AUTO_*): nl_send_auto() fills them. */
	msg = nlmsg_convert((struct nlmsghdr *)buf);
	if (!msg)
		return -ENOMEM;
	c->kerr = 0;
	ret = nl_send_auto(c->sk, msg);
	nlmsg_free(msg);
	if (ret < 0)
		return nl_to_errno(c, ret);
	ret = cmd == IPCQ_CMD_LIST ? nl_recvmsgs_default(c->sk) : nl_wait_for_ack(c->sk);
	return ret < 0 ? nl_to_errno(c, ret) : 0;
}

int ip_cq_attach_flags(struct ip_cq *c, unsigned major, unsigned minor, unsigned flags,
		       struct ip_diag *d)
{
	int ret = request(c, IPCQ_CMD_ATTACH, major, minor,
			  flags & IP_CQ_ATTACH_OWNED ? IPCQ_ATTACH_F_OWNED : 0);

	return ret < 0 ? ip_diag_set(d, ret, "irqpilot_cq: attach %u:%u: %s", major, minor,
				     strerror(-ret))
		       : 0;
}

int ip_cq_attach(struct ip_cq *c, unsigned major, unsigned minor, struct ip_diag *d)
{
	return ip_cq_attach_flags(c, major, minor, 0, d);
}

int ip_cq_detach(struct ip_cq *c, unsigned major, unsigned minor, struct ip_diag *d)
{
	int ret = request(c, IPCQ_CMD_DETACH, major, minor, 0);

	return ret < 0 ? ip_diag_set(d, ret, "irqpilot_cq: detach %u:%u: %s", major, minor,
				     strerror(-ret))
		       : 0;
}

static uint32_t get_u32(struct nlattr **a, int type)
{
	return a[type] ? nla_get_u32(a[type]) : 0;
}

static uint64_t get_u64(struct nlattr **a, int type)
{
	return a[type] ? nla_get_u64(a[type]) : 0;
}

static struct nla_policy list_policy[IPCQ_A_MAX + 1] = {
	[IPCQ_A_DISK] = { .type = NLA_STRING },
	[IPCQ_A_MAJOR] = { .type = NLA_U32 },
	[IPCQ_A_MINOR] = { .type = NLA_U32 },
	[IPCQ_A_HWQ] = { .type = NLA_U32 },
	[IPCQ_A_NR_HWQ] = { .type = NLA_U32 },
	[IPCQ_A_PID] = { .type = NLA_U32 },
	[IPCQ_A_COMPLETIONS] = { .type = NLA_U64 },
	[IPCQ_A_WAKEUPS] = { .type = NLA_U64 },
	[IPCQ_A_MAX_WAIT_NS] = { .type = NLA_U64 },
	[IPCQ_A_STALLS] = { .type = NLA_U64 },
	[IPCQ_A_FALLBACKS] = { .type = NLA_U64 },
	[IPCQ_A_CPU_COMPLETIONS] = { .type = NLA_NESTED },
	[IPCQ_A_EVENT] = { .type = NLA_U32 },
	[IPCQ_A_WAIT_NS] = { .type = NLA_U64 },
	[IPCQ_A_FLAGS] = { .type = NLA_U32 },
};

static struct nla_policy cpu_policy[IPCQ_CPU_A_MAX + 1] = {
	[IPCQ_CPU_A_CPU] = { .type = NLA_U32 },
	[IPCQ_CPU_A_COUNT] = { .type = NLA_U64 },
};

/* Adds the IPCQ_CPU_A_ENTRY nests of @nest to @e; CPUs past e->nr_cpus are dropped. */
static void add_cpus(struct ip_cq_entry *e, struct nlattr *nest)
{
	struct nlattr *ent, *f[IPCQ_CPU_A_MAX + 1];
	int rem;

	nla_for_each_nested(ent, nest, rem) {
		uint32_t cpu;

		if (nla_type(ent) != IPCQ_CPU_A_ENTRY ||
		    nla_parse_nested(f, IPCQ_CPU_A_MAX, ent, cpu_policy) < 0 ||
		    !f[IPCQ_CPU_A_CPU] || !f[IPCQ_CPU_A_COUNT])
			continue;
		cpu = nla_get_u32(f[IPCQ_CPU_A_CPU]);
		if (cpu < (uint32_t)e->nr_cpus)
			e->cpu_completions[cpu] = nla_get_u64(f[IPCQ_CPU_A_COUNT]);
	}
}

int ip_cq_list_parse(const struct nlmsghdr *nlh, int nr_cpus, struct ip_cq_list *l)
{
	struct nlattr *a[IPCQ_A_MAX + 1];
	struct ip_cq_entry *e, *nv;

	if (nlh->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN ||
	    ((const struct genlmsghdr *)nlmsg_data(nlh))->cmd != IPCQ_CMD_LIST ||
	    genlmsg_parse((struct nlmsghdr *)nlh, 0, a, IPCQ_A_MAX, list_policy) < 0 ||
	    !a[IPCQ_A_PID] || !a[IPCQ_A_MAJOR] || !a[IPCQ_A_MINOR] || !a[IPCQ_A_HWQ])
		return 1;
	/* The rest of the CPUs of the thread before, which did not fit its message. */
	if (l->n > 0 && !a[IPCQ_A_COMPLETIONS]) {
		e = &l->e[l->n - 1];
		if (e->have_counts && e->major == get_u32(a, IPCQ_A_MAJOR) &&
		    e->minor == get_u32(a, IPCQ_A_MINOR) && e->hwq == get_u32(a, IPCQ_A_HWQ) &&
		    e->pid == (pid_t)get_u32(a, IPCQ_A_PID)) {
			if (a[IPCQ_A_CPU_COMPLETIONS])
				add_cpus(e, a[IPCQ_A_CPU_COMPLETIONS]);
			return 0;
		}
	}
	nv = realloc(l->e, (l->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	l->e = nv;
	e = &nv[l->n];
	memset(e, 0, sizeof(*e));
	e->cpu_completions = calloc(nr_cpus > 0 ? nr_cpus : 1, sizeof(uint64_t));
	if (!e->cpu_completions)
		return -ENOMEM;
	l->n++;
	e->nr_cpus = nr_cpus > 0 ? nr_cpus : 0;
	if (a[IPCQ_A_DISK])
		snprintf(e->disk, sizeof(e->disk), "%s", nla_get_string(a[IPCQ_A_DISK]));
	e->major = get_u32(a, IPCQ_A_MAJOR);
	e->minor = get_u32(a, IPCQ_A_MINOR);
	e->hwq = get_u32(a, IPCQ_A_HWQ);
	e->nr_hwq = get_u32(a, IPCQ_A_NR_HWQ);
	e->pid = (pid_t)get_u32(a, IPCQ_A_PID);
	/* A caller without CAP_SYS_ADMIN gets the threads without counts. */
	e->have_counts = a[IPCQ_A_COMPLETIONS] != NULL;
	e->completions = get_u64(a, IPCQ_A_COMPLETIONS);
	e->wakeups = get_u64(a, IPCQ_A_WAKEUPS);
	e->max_wait_ns = get_u64(a, IPCQ_A_MAX_WAIT_NS);
	e->stalls = get_u64(a, IPCQ_A_STALLS);
	e->fallbacks = get_u64(a, IPCQ_A_FALLBACKS);
	if (a[IPCQ_A_CPU_COMPLETIONS])
		add_cpus(e, a[IPCQ_A_CPU_COMPLETIONS]);
	return 0;
}

struct list_ctx {
	struct ip_cq_list *l;
	int nr_cpus;
	int err;
};

static int on_list(struct nl_msg *msg, void *arg)
{
	struct list_ctx *lc = arg;
	int ret = ip_cq_list_parse(nlmsg_hdr(msg), lc->nr_cpus, lc->l);

	if (ret < 0) {
		lc->err = ret;
		return NL_STOP;
	}
	return ret ? NL_SKIP : NL_OK;
}

int ip_cq_list(struct ip_cq *c, int nr_cpus, struct ip_cq_list *out, struct ip_diag *d)
{
	struct list_ctx lc = { out, nr_cpus, 0 };
	int ret;

	memset(out, 0, sizeof(*out));
	nl_socket_modify_cb(c->sk, NL_CB_VALID, NL_CB_CUSTOM, on_list, &lc);
	ret = request(c, IPCQ_CMD_LIST, 0, 0, 0);
	nl_socket_modify_cb(c->sk, NL_CB_VALID, NL_CB_DEFAULT, NULL, NULL);
	if (!ret)
		ret = lc.err;
	if (ret < 0) {
		ip_cq_list_free(out);
		return ip_diag_set(d, ret, "irqpilot_cq: list: %s", strerror(-ret));
	}
	return 0;
}

/* ---- events ---- */

int ip_cq_subscribe(struct ip_cq *c, struct ip_diag *d)
{
	int grp, ret;

	if (c->ev)
		return 0;
	grp = genl_ctrl_resolve_grp(c->sk, IPCQ_GENL_NAME, IPCQ_GENL_MCGRP_EVENTS);
	if (grp < 0)
		return ip_diag_set(d, -ENOENT, "irqpilot_cq: no multicast group %s",
				   IPCQ_GENL_MCGRP_EVENTS);
	c->ev = new_socket(c);
	if (!c->ev)
		return ip_diag_set(d, -EIO, "irqpilot_cq: cannot open the event socket");
	nl_socket_disable_seq_check(c->ev);
	ret = nl_socket_add_membership(c->ev, grp);
	if (ret >= 0)
		ret = nl_socket_set_nonblocking(c->ev);
	if (ret < 0) {
		nl_socket_free(c->ev);
		c->ev = NULL;
		return ip_diag_set(d, -EIO, "irqpilot_cq: joining %s: %s", IPCQ_GENL_MCGRP_EVENTS,
				   nl_geterror(ret));
	}
	return 0;
}

int ip_cq_event_fd(const struct ip_cq *c)
{
	return c && c->ev ? nl_socket_get_fd(c->ev) : -1;
}

struct ev_ctx {
	void (*cb)(void *ctx, const struct ip_cq_event *ev);
	void *ctx;
	int n;
};

static int on_event(struct nl_msg *msg, void *arg)
{
	struct ev_ctx *ec = arg;
	struct genlmsghdr *gh = nlmsg_data(nlmsg_hdr(msg));
	struct nlattr *a[IPCQ_A_MAX + 1];
	struct ip_cq_event ev = { .hwq = -1 };

	if (gh->cmd != IPCQ_CMD_EVENT || genlmsg_parse(nlmsg_hdr(msg), 0, a, IPCQ_A_MAX, NULL) < 0)
		return NL_SKIP;
	switch (get_u32(a, IPCQ_A_EVENT)) {
	case IPCQ_EVENT_ATTACH:
		ev.kind = IP_CQ_EV_ATTACH;
		break;
	case IPCQ_EVENT_DETACH:
		ev.kind = IP_CQ_EV_DETACH;
		break;
	case IPCQ_EVENT_REMOVED:
		ev.kind = IP_CQ_EV_REMOVED;
		break;
	case IPCQ_EVENT_STALL:
		ev.kind = IP_CQ_EV_STALL;
		break;
	default:
		ev.kind = IP_CQ_EV_UNKNOWN;
		break;
	}
	if (a[IPCQ_A_DISK])
		snprintf(ev.disk, sizeof(ev.disk), "%s", nla_get_string(a[IPCQ_A_DISK]));
	ev.major = get_u32(a, IPCQ_A_MAJOR);
	ev.minor = get_u32(a, IPCQ_A_MINOR);
	if (a[IPCQ_A_HWQ])
		ev.hwq = (int)get_u32(a, IPCQ_A_HWQ);
	ev.nr_hwq = get_u32(a, IPCQ_A_NR_HWQ);
	ev.wait_ns = get_u64(a, IPCQ_A_WAIT_NS);
	ec->n++;
	ec->cb(ec->ctx, &ev);
	return NL_OK;
}

int ip_cq_read_events(struct ip_cq *c, void (*cb)(void *ctx, const struct ip_cq_event *ev),
		      void *ctx)
{
	struct ev_ctx ec = { cb, ctx, 0 };
	int ret;
	struct nl_cb *nlcb;

	if (!c || !c->ev)
		return -EBADF;
	nl_socket_modify_cb(c->ev, NL_CB_VALID, NL_CB_CUSTOM, on_event, &ec);
	nlcb = nl_socket_get_cb(c->ev);
	if (!nlcb)
		return -ENOMEM;
	/* Drain: the fd is non-blocking, so "nothing more" ends the loop. */
	do
		ret = nl_recvmsgs_report(c->ev, nlcb);
	while (ret > 0);
	nl_cb_put(nlcb);
	/* ENOBUFS (events overran the buffer) loses events, not the socket. */
	if (ret < 0 && ret != -NLE_AGAIN && ret != -NLE_NOMEM) {
		c->kerr = 0;
		return nl_to_errno(c, ret);
	}
	return ec.n;
}
