/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_PROTOCOL_H
#define IRQPILOT_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "irqpilot/cpuset.h"
#include "irqpilot/diag.h"
#include "irqpilot/json.h"

struct ip_root;

/*
 * The control protocol between irqpilotd and irqctl.
 *
 * Transport: a Unix SOCK_SEQPACKET socket, one request per message and one
 * reply per message, so neither side needs framing.
 *
 * Request: printable UTF-8 words separated by single spaces, first the
 * version "v1", then a verb and its arguments, optionally a last word
 * "json", which older clients send to ask for data (replies are always
 * data now, so it changes nothing):
 *
 *   v1 status                      v1 pin IRQ CPULIST
 *   v1 show irqs|cpus|domains|devices|threads
 *   v1 explain IRQ                 v1 unpin IRQ
 *   v1 top                         v1 dry-run on|off
 *   v1 metrics
 *   v1 reload                      v1 capture /ABS/DIR [SAMPLES]
 *   v1 ban CPULIST                 v1 unban CPULIST
 *
 * IRQ is a decimal IRQ number or a device- or IRQ-name-like token ("sda",
 * "nvme0q1", "0000:00:1f.2", "LOC"). "json" is taken as the flag only when
 * the words before it already make a complete request, so a device named
 * "json" can still be explained.
 *
 * Reply: one JSON object, {"v":1,"ok":true,"data":{...}}: always data, which
 * irqctl renders (the "json" word is still accepted and changes nothing), or
 * on failure
 * {"v":1,"ok":false,"errno":22,"error":"one-line message"}.
 */
#define IP_PROTO_VERSION 1
#define IP_PROTO_REQ_MAX 4096
#define IP_PROTO_REPLY_MAX (1u << 20)
/* IRQ and device names, including the NUL */
#define IP_PROTO_NAME_MAX 64
/* capture directories, including the NUL */
#define IP_PROTO_PATH_MAX 1024
#define IP_PROTO_SAMPLES_MAX 100000
/* How long irqctl waits for the daemon, in milliseconds. */
#define IP_PROTO_TIMEOUT_MS 5000
#ifndef IP_PROTO_SOCKET_DEFAULT
#define IP_PROTO_SOCKET_DEFAULT "/run/irqpilot/control"
#endif
/* Environment variable that overrides the default socket path. */
#define IP_PROTO_SOCKET_ENV "IRQPILOT_SOCKET"

enum ip_verb {
	IP_VERB_STATUS,
	IP_VERB_SHOW,
	IP_VERB_EXPLAIN,
	IP_VERB_TOP,
	IP_VERB_METRICS,
	IP_VERB_PIN,
	IP_VERB_UNPIN,
	IP_VERB_DRY_RUN,
	IP_VERB_RELOAD,
	IP_VERB_CAPTURE,
	IP_VERB_BAN,	/* the daemon's banned set, at run time */
	IP_VERB_UNBAN,
	_IP_VERB_MAX,
};

enum ip_object {
	IP_OBJ_IRQS,
	IP_OBJ_CPUS,
	IP_OBJ_DOMAINS,
	IP_OBJ_DEVICES,
	IP_OBJ_THREADS,
	_IP_OBJ_MAX,
};

/* What explain, pin and unpin act on. */
struct ip_target {
	bool is_irq;
	unsigned int irq;		/* is_irq */
	char name[IP_PROTO_NAME_MAX];	/* !is_irq */
};

struct ip_request {
	enum ip_verb verb;
	bool json;
	enum ip_object object;		/* show */
	struct ip_target target;	/* explain, pin, unpin */
	ip_cpuset cpus;			/* pin, ban, unban; never empty */
	bool on;			/* dry-run */
	char path[IP_PROTO_PATH_MAX];	/* capture; absolute */
	unsigned int samples;		/* capture; 0 = the daemon's default */
};

/* What follows a verb. */
enum ip_arg_shape {
	IP_ARGS_NONE,
	IP_ARGS_OBJECT,		/* irqs|cpus|domains|devices|threads */
	IP_ARGS_TARGET,		/* IRQ or name */
	IP_ARGS_TARGET_CPUS,	/* IRQ or name, CPU list */
	IP_ARGS_ON_OFF,
	IP_ARGS_DIR_COUNT,	/* absolute directory, optional sample count */
	IP_ARGS_CPUS,		/* CPU list */
};

/* One entry of the command table: the whole grammar of one verb. */
struct ip_command {
	const char *name;	/* the verb on the wire and on irqctl's command line */
	enum ip_arg_shape args;
	bool admin;		/* changes state: needs root or the admin group */
	const char *usage;	/* "pin IRQ CPULIST" */
	const char *help;	/* one line for irqctl --help */
};

/* The table entry of @v; NULL when out of range. Iterate with
 * for (v = 0; v < _IP_VERB_MAX; v++). */
const struct ip_command *ip_proto_command(enum ip_verb v);
/* How many argument words @c takes. */
int ip_proto_min_args(const struct ip_command *c);
int ip_proto_max_args(const struct ip_command *c);
/*
 * Parses the @nargs argument words of the verb already in @r->verb into @r,
 * as the decoder does: both irqctl and the daemon call this, so they accept
 * the same words. Returns 0 or -EINVAL with @d saying what is wrong (count,
 * object, IRQ, CPU list, on/off, path, sample count).
 */
int ip_proto_parse_args(struct ip_request *r, char *const *args, int nargs, struct ip_diag *d);

/* "status", "dry-run"...; NULL when out of range. */
const char *ip_proto_verb_name(enum ip_verb v);
/* "irqs", "cpus"...; NULL when out of range. */
const char *ip_proto_object_name(enum ip_object o);

/*
 * Decodes one request message of exactly @len bytes (not NUL-terminated).
 * Returns 0, -EPROTO when the message is not a v1 request at all (empty,
 * too long, NUL or control bytes, invalid UTF-8, bad spacing, other
 * version) or -EINVAL when it is one but wrong (unknown verb or object,
 * argument count, bad CPU list, IRQ, path or count). @d says which.
 */
int ip_proto_decode(const char *buf, size_t len, struct ip_request *out, struct ip_diag *d);
/*
 * Writes @r as a NUL-terminated request message. Returns its length
 * (without the NUL), -EINVAL when @r is not valid, -EMSGSIZE when it would
 * exceed IP_PROTO_REQ_MAX, -ENOBUFS when @size is too small.
 */
int ip_proto_encode(const struct ip_request *r, char *buf, size_t size);
/* The IRQ argument rules of the decoder, for clients validating input. */
int ip_proto_parse_target(const char *word, struct ip_target *t, struct ip_diag *d);

/* The command's admin flag: pin, unpin, dry-run, reload, capture, ban and
 * unban change the daemon's state. */
bool ip_proto_is_mutating(const struct ip_request *r);

/* No [control] admin_group. */
#define IP_PROTO_NO_GROUP ((gid_t)-1)

/*
 * Who is at the other end of a control connection. Every field comes from
 * the kernel as the daemon sees it, never from what the peer's own user
 * namespace calls itself: SO_PEERCRED and SO_PEERGROUPS are translated into
 * the reader's namespace, so a "root" of a child user namespace shows as
 * the uid that created it (or as the overflow uid 65534).
 */
struct ip_peer {
	uid_t uid;		/* effective uid at connect() */
	gid_t gid;
	pid_t pid;
	bool same_userns;	/* its process is in the daemon's user namespace */
	bool in_admin_group;	/* gid or a supplementary group is the admin group */
};

/* uid 0 of the daemon's own user namespace: may always write. */
bool ip_proto_peer_is_root(const struct ip_peer *p);
/*
 * Anyone who can reach the socket may read. Changing state needs both a
 * process in the daemon's user namespace and uid 0 or membership of
 * @admin_group (NULL or "" for none, when p->in_admin_group is false).
 * Returns 0, or -EPERM with @d saying who may.
 */
int ip_proto_check_access(const struct ip_request *r, const struct ip_peer *p, const char *admin_group,
			  struct ip_diag *d);

/*
 * Identifies the peer of a connected Unix socket: SO_PEERCRED, the
 * supplementary groups from SO_PEERGROUPS (compared with @admin_gid,
 * IP_PROTO_NO_GROUP for none), and whether the peer process's
 * proc/PID/ns/user under @sysroot is the daemon's own. The process is held
 * by a pidfd (SO_PEERPIDFD from Linux 6.5, else pidfd_open() of the pid,
 * whose euid and egid must then still be the peer's), and the namespace
 * only counts when that process is still alive after it was read, so a
 * recycled pid cannot lend its namespace. A peer that is gone is reported
 * with same_userns false, not as an error.
 */
int ip_proto_peer_identify(struct ip_root *sysroot, int fd, gid_t admin_gid, struct ip_peer *p,
			   struct ip_diag *d);
/* p->in_admin_group judged again for the admin group @admin_gid (a reload
 * named another), from the peer's groups at connect(); false on an error. */
int ip_proto_peer_regroup(int fd, gid_t admin_gid, struct ip_peer *p, struct ip_diag *d);
/* The euid and egid of proc/PID/status (its Uid: and Gid: lines) under
 * @root. Returns 0, -ENOENT when the process is gone, -EINVAL (bad file). */
int ip_proto_pid_ids(struct ip_root *root, pid_t pid, uid_t *euid, gid_t *egid, struct ip_diag *d);

/*
 * Reply envelopes, written with the JSON writer. An ok reply with data:
 *
 *	ip_proto_reply_begin(&j, f);	// {"v":1,"ok":true,"data":{
 *	ip_json_int(&j, "irq", 45);	// members of "data"
 *	ip_proto_reply_end(&j);		// }}
 *
 * Errors are one line: control characters in the message become spaces.
 */
void ip_proto_reply_error(FILE *f, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void ip_proto_reply_begin(struct ip_json *j, FILE *f);
void ip_proto_reply_end(struct ip_json *j);

/*
 * What a client prints of a reply must not drive the terminal: removes in
 * place every C0 control but newline and tab, DEL, the C1 controls
 * (U+0080..U+009F) and whole escape sequences (ESC or C1 CSI ... final
 * byte, OSC/DCS/SOS/PM/APC ... BEL or ST, ESC and one more character).
 * @s is UTF-8; returns its new length.
 */
size_t ip_proto_strip_controls(char *s);

/*
 * Transport. These return the errno of the failing system call unchanged
 * (-ENOENT, -ECONNREFUSED, -EACCES...) because the caller tells users which
 * one it was; the diag names the path.
 */
/* Client: connects and sets send and receive timeouts of @timeout_ms. */
int ip_proto_connect(const char *path, int timeout_ms, int *fd, struct ip_diag *d);
/* Client: sends one request and receives one reply (malloc()ed, NUL-
 * terminated). -EAGAIN: no answer in time; -ECONNRESET: the daemon closed
 * the connection without answering; -EMSGSIZE: reply over the limit. */
int ip_proto_call(int fd, const char *req, size_t len, char **reply, size_t *reply_len,
		  struct ip_diag *d);
/* Daemon: a listening socket at @path, made with mode @mode. A stale socket
 * is replaced, a live one (another daemon answering) gives -EADDRINUSE.
 * @dirfd is @path's directory, opened and checked by the caller: the socket
 * is looked at, given its mode and a stale one removed through it, so that
 * a directory replaced by a link since cannot lead root to another file. */
int ip_proto_listen(int dirfd, const char *path, mode_t mode, int *fd, struct ip_diag *d);
/* Daemon: receives one request into @buf (IP_PROTO_REQ_MAX bytes). Returns
 * its length, 0 when the peer closed, -EMSGSIZE when it was longer. */
ssize_t ip_proto_recv_request(int fd, char *buf, struct ip_diag *d);
/* Daemon: sends @reply, or an EMSGSIZE error reply in its place when it is
 * over IP_PROTO_REPLY_MAX. */
int ip_proto_send_reply(int fd, const char *reply, size_t len, struct ip_diag *d);

#endif
