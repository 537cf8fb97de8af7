// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "irqpilot/macro.h"
#include "irqpilot/protocol.h"
#include "irqpilot/root.h"

/* More words than any request has: version, verb, 2 arguments, json. */
#define WORDS_MAX 6

/*
 * The one grammar of the control protocol: irqctl builds its requests, its
 * help and its usage errors from this table, and the daemon decodes with it,
 * so a command cannot be spelt one way in the client and another in the
 * daemon (ip(8) keeps its commands in one table the same way).
 */
static const struct ip_command commands[_IP_VERB_MAX] = {
	[IP_VERB_STATUS] = { "status", IP_ARGS_NONE, false, "status", "what the daemon is doing" },
	[IP_VERB_SHOW] = { "show", IP_ARGS_OBJECT, false, "show irqs|cpus|domains|devices|threads",
			   "the daemon's model of this machine" },
	[IP_VERB_EXPLAIN] = { "explain", IP_ARGS_TARGET, false, "explain IRQ|DEVICE",
			      "why an IRQ or a device's vectors are placed so" },
	[IP_VERB_TOP] = { "top", IP_ARGS_NONE, false, "top", "live rates, redrawn until Ctrl-C" },
	[IP_VERB_METRICS] = { "metrics", IP_ARGS_NONE, false, "metrics",
			      "counters and gauges in the Prometheus text format" },
	[IP_VERB_PIN] = { "pin", IP_ARGS_TARGET_CPUS, true, "pin IRQ CPULIST",
			  "keep IRQ on CPULIST (e.g. 0-3,6) over the policy" },
	[IP_VERB_UNPIN] = { "unpin", IP_ARGS_TARGET, true, "unpin IRQ", "hand IRQ back to the policy" },
	[IP_VERB_DRY_RUN] = { "dry-run", IP_ARGS_ON_OFF, true, "dry-run on|off",
			      "decide and report without writing, or act again" },
	[IP_VERB_RELOAD] = { "reload", IP_ARGS_NONE, true, "reload", "re-read the configuration" },
	[IP_VERB_CAPTURE] = { "capture", IP_ARGS_DIR_COUNT, true, "capture DIR [SAMPLES]",
			      "record a replay series into DIR (an absolute path on the daemon's side)" },
	[IP_VERB_BAN] = { "ban", IP_ARGS_CPUS, true, "ban CPULIST",
			  "never place a vector on CPULIST; those there move off" },
	[IP_VERB_UNBAN] = { "unban", IP_ARGS_CPUS, true, "unban CPULIST",
			    "let the policy use CPULIST again" },
};

static const struct {
	int min, max;
} shape_args[] = {
	[IP_ARGS_NONE] = { 0, 0 },
	[IP_ARGS_OBJECT] = { 1, 1 },
	[IP_ARGS_TARGET] = { 1, 1 },
	[IP_ARGS_TARGET_CPUS] = { 2, 2 },
	[IP_ARGS_ON_OFF] = { 1, 1 },
	[IP_ARGS_DIR_COUNT] = { 1, 2 },
	[IP_ARGS_CPUS] = { 1, 1 },
};

static const char *const object_names[_IP_OBJ_MAX] = {
	[IP_OBJ_IRQS] = "irqs",
	[IP_OBJ_CPUS] = "cpus",
	[IP_OBJ_DOMAINS] = "domains",
	[IP_OBJ_DEVICES] = "devices",
	[IP_OBJ_THREADS] = "threads",
};

const struct ip_command *ip_proto_command(enum ip_verb v)
{
	return (unsigned)v < _IP_VERB_MAX ? &commands[v] : NULL;
}

const char *ip_proto_verb_name(enum ip_verb v)
{
	return (unsigned)v < _IP_VERB_MAX ? commands[v].name : NULL;
}

int ip_proto_min_args(const struct ip_command *c)
{
	return shape_args[c->args].min;
}

int ip_proto_max_args(const struct ip_command *c)
{
	return shape_args[c->args].max;
}

const char *ip_proto_object_name(enum ip_object o)
{
	return (unsigned)o < _IP_OBJ_MAX ? object_names[o] : NULL;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!is_digit(*s))
			return false;
	return true;
}

/* Canonical decimal (no sign, no leading zero) in [min, max]. */
static int parse_decimal(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;

	if (!all_digits(s) || (s[0] == '0' && s[1]))
		return -EINVAL;
	for (; *s; s++) {
		if (v > (ULONG_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) ||
	       strchr("_.:+@-[]", c) != NULL;
}

int ip_proto_parse_target(const char *word, struct ip_target *t, struct ip_diag *d)
{
	size_t n = strlen(word);
	unsigned long irq;
	int r;

	memset(t, 0, sizeof(*t));
	if (all_digits(word)) {
		r = parse_decimal(word, 0, INT_MAX, &irq);
		if (r == -EINVAL)
			return ip_diag_set(d, -EINVAL, "IRQ number '%.40s' has a leading zero",
					   word);
		if (r < 0)
			return ip_diag_set(d, -EINVAL, "IRQ number '%.40s' is out of range", word);
		t->is_irq = true;
		t->irq = (unsigned int)irq;
		return 0;
	}
	if (n >= IP_PROTO_NAME_MAX)
		return ip_diag_set(d, -EINVAL, "name '%.40s...' is longer than %d characters", word,
				   IP_PROTO_NAME_MAX - 1);
	/* Names go into messages and lookups of sysfs entries, so keep them
	 * to what device and IRQ action names use: no '/', no leading '-' or
	 * '.' that would read as an option or a relative path. */
	for (size_t i = 0; i < n; i++)
		if (!name_char(word[i]))
			goto bad;
	if (n == 0 || word[0] == '-' || word[0] == '.')
		goto bad;
	memcpy(t->name, word, n + 1);
	return 0;
bad:
	return ip_diag_set(d, -EINVAL, "'%.40s' is neither an IRQ number nor a device name", word);
}

static int lookup(const char *const *names, int n, const char *word)
{
	for (int i = 0; i < n; i++)
		if (names[i] && strcmp(names[i], word) == 0)
			return i;
	return -1;
}

/* Length of the valid UTF-8 sequence at @str (at most @n bytes), 0 if it
 * is not one (overlong, surrogate, above U+10FFFF, truncated). */
static size_t utf8_char_len(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char c;
	size_t k;
	uint32_t cp;

	if (n == 0)
		return 0;
	c = s[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		k = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		k = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		k = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < k)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return k;
}

/* Framing: everything that makes @buf not a v1 request at all. */
static int check_bytes(const char *buf, size_t len, struct ip_diag *d)
{
	if (len == 0)
		return ip_diag_set(d, -EPROTO, "empty request");
	if (len > IP_PROTO_REQ_MAX)
		return ip_diag_set(d, -EPROTO, "request of %zu bytes exceeds the %d byte limit",
				   len, IP_PROTO_REQ_MAX);
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)buf[i];
		size_t n;

		if (c == '\0')
			return ip_diag_set(d, -EPROTO, "NUL byte at offset %zu of the request", i);
		if (c < 0x20 || c == 0x7f)
			return ip_diag_set(d, -EPROTO,
					   "non-printable byte 0x%02x at offset %zu of the request", c,
					   i);
		n = utf8_char_len(buf + i, len - i);
		if (n == 0)
			return ip_diag_set(d, -EPROTO, "invalid UTF-8 at offset %zu of the request",
					   i);
		/* C1 controls, U+0080..U+009F */
		if (n == 2 && c == 0xc2 && (unsigned char)buf[i + 1] < 0xa0)
			return ip_diag_set(d, -EPROTO,
					   "non-printable character at offset %zu of the request", i);
		i += n;
	}
	if (buf[0] == ' ' || buf[len - 1] == ' ')
		return ip_diag_set(d, -EPROTO, "request starts or ends with a space");
	for (size_t i = 1; i < len; i++)
		if (buf[i] == ' ' && buf[i - 1] == ' ')
			return ip_diag_set(d, -EPROTO,
					   "words must be separated by single spaces (offset %zu)", i);
	return 0;
}

static int check_version(const char *w, struct ip_diag *d)
{
	if (strcmp(w, "v1") == 0)
		return 0;
	if (w[0] == 'v' && all_digits(w + 1))
		return ip_diag_set(d, -EPROTO,
				   "unsupported protocol version '%.20s' (this side speaks v%d)", w,
				   IP_PROTO_VERSION);
	return ip_diag_set(d, -EPROTO,
			   "request does not start with a protocol version such as 'v%d'",
			   IP_PROTO_VERSION);
}

/* A CPU list argument: canonical or not, never empty. */
static int parse_cpus(const char *word, ip_cpuset *s, struct ip_diag *d)
{
	int err = cpuset_parse_list(s, word);

	if (err == -ERANGE)
		return ip_diag_set(d, -EINVAL, "CPU list '%.40s' names a CPU above %d", word,
				   IP_CPU_MAX - 1);
	if (err < 0)
		return ip_diag_set(d, -EINVAL, "bad CPU list '%.40s' (expected e.g. 0-3,6)", word);
	if (cpuset_empty(s))
		return ip_diag_set(d, -EINVAL, "empty CPU list '%.40s'", word);
	return 0;
}

int ip_proto_parse_args(struct ip_request *r, char *const *arg, int nargs, struct ip_diag *d)
{
	const struct ip_command *c = ip_proto_command(r->verb);
	unsigned long v;
	int i, err;

	if (!c)
		return ip_diag_set(d, -EINVAL, "unknown verb");
	if (nargs < ip_proto_min_args(c) || nargs > ip_proto_max_args(c))
		return ip_diag_set(d, -EINVAL, "wrong number of arguments (%d) to %s; usage: %s", nargs,
				   c->name, c->usage);
	switch (c->args) {
	case IP_ARGS_OBJECT:
		i = lookup(object_names, _IP_OBJ_MAX, arg[0]);
		if (i < 0)
			return ip_diag_set(d, -EINVAL,
					   "unknown object '%.40s' (irqs, cpus, domains, devices, threads)",
					   arg[0]);
		r->object = (enum ip_object)i;
		return 0;
	case IP_ARGS_TARGET:
		return ip_proto_parse_target(arg[0], &r->target, d);
	case IP_ARGS_TARGET_CPUS:
		err = ip_proto_parse_target(arg[0], &r->target, d);
		if (err < 0)
			return err;
		return parse_cpus(arg[1], &r->cpus, d);
	case IP_ARGS_CPUS:
		return parse_cpus(arg[0], &r->cpus, d);
	case IP_ARGS_ON_OFF:
		if (strcmp(arg[0], "on") != 0 && strcmp(arg[0], "off") != 0)
			return ip_diag_set(d, -EINVAL, "%s takes 'on' or 'off', not '%.40s'", c->name,
					   arg[0]);
		r->on = strcmp(arg[0], "on") == 0;
		return 0;
	case IP_ARGS_DIR_COUNT:
		if (arg[0][0] != '/')
			return ip_diag_set(d, -EINVAL,
					   "capture directory '%.40s' is not an absolute path", arg[0]);
		if (strlen(arg[0]) >= IP_PROTO_PATH_MAX)
			return ip_diag_set(d, -EINVAL,
					   "capture directory path is longer than %d bytes",
					   IP_PROTO_PATH_MAX - 1);
		strcpy(r->path, arg[0]);
		if (nargs > 1) {
			err = parse_decimal(arg[1], 1, IP_PROTO_SAMPLES_MAX, &v);
			if (err < 0)
				return ip_diag_set(d, -EINVAL,
						   "sample count '%.40s' is not a number from 1 to %d",
						   arg[1], IP_PROTO_SAMPLES_MAX);
			r->samples = (unsigned int)v;
		}
		return 0;
	case IP_ARGS_NONE:
		break;
	}
	return 0;
}

int ip_proto_decode(const char *buf, size_t len, struct ip_request *out, struct ip_diag *d)
{
	char copy[IP_PROTO_REQ_MAX + 1];
	char *words[WORDS_MAX];
	int n = 0, nargs, v, err;
	struct ip_request r = { 0 };

	err = check_bytes(buf, len, d);
	if (err < 0)
		return err;
	memcpy(copy, buf, len);
	copy[len] = '\0';
	for (char *p = copy, *sp; p; p = sp ? sp + 1 : NULL) {
		if (n == WORDS_MAX)
			return ip_diag_set(d, -EINVAL, "too many words in the request");
		sp = strchr(p, ' ');
		if (sp)
			*sp = '\0';
		words[n++] = p;
	}
	err = check_version(words[0], d);
	if (err < 0)
		return err;
	if (n < 2)
		return ip_diag_set(d, -EINVAL, "request has no verb");
	for (v = 0; v < _IP_VERB_MAX && strcmp(commands[v].name, words[1]) != 0; v++)
		;
	if (v == _IP_VERB_MAX)
		return ip_diag_set(d, -EINVAL, "unknown verb '%.40s'", words[1]);
	r.verb = (enum ip_verb)v;
	nargs = n - 2;
	/* "json" is the flag only if what precedes it is complete. */
	if (nargs > ip_proto_min_args(&commands[v]) && strcmp(words[n - 1], "json") == 0) {
		r.json = true;
		nargs--;
	}
	err = ip_proto_parse_args(&r, words + 2, nargs, d);
	if (err < 0)
		return err;
	*out = r;
	return 0;
}

struct out {
	char *buf;
	size_t size, len;
	bool overflow;
};

static void put(struct out *o, const char *s)
{
	size_t n = strlen(s);

	if (o->len + n + 1 > o->size) {
		o->overflow = true;
		return;
	}
	memcpy(o->buf + o->len, s, n + 1);
	o->len += n;
}

static bool target_valid(const struct ip_target *t)
{
	struct ip_target back;

	if (t->is_irq)
		return t->irq <= INT_MAX;
	return memchr(t->name, '\0', sizeof(t->name)) && !all_digits(t->name) &&
	       ip_proto_parse_target(t->name, &back, NULL) == 0;
}

int ip_proto_encode(const struct ip_request *r, char *buf, size_t size)
{
	char num[32], list[IP_CPULIST_MAX], tmp[IP_PROTO_REQ_MAX + 1];
	struct out o = { .buf = tmp, .size = sizeof(tmp) };
	struct ip_request back;

	if ((unsigned)r->verb >= _IP_VERB_MAX)
		return -EINVAL;
	put(&o, "v1 ");
	put(&o, commands[r->verb].name);
	switch (commands[r->verb].args) {
	case IP_ARGS_OBJECT:
		if (!ip_proto_object_name(r->object))
			return -EINVAL;
		put(&o, " ");
		put(&o, object_names[r->object]);
		break;
	case IP_ARGS_TARGET:
	case IP_ARGS_TARGET_CPUS:
		if (!target_valid(&r->target))
			return -EINVAL;
		put(&o, " ");
		if (r->target.is_irq) {
			snprintf(num, sizeof(num), "%u", r->target.irq);
			put(&o, num);
		} else {
			put(&o, r->target.name);
		}
		if (commands[r->verb].args != IP_ARGS_TARGET_CPUS)
			break;
		if (cpuset_empty(&r->cpus))
			return -EINVAL;
		cpuset_format_list(&r->cpus, list, sizeof(list));
		put(&o, " ");
		put(&o, list);
		break;
	case IP_ARGS_CPUS:
		if (cpuset_empty(&r->cpus))
			return -EINVAL;
		cpuset_format_list(&r->cpus, list, sizeof(list));
		put(&o, " ");
		put(&o, list);
		break;
	case IP_ARGS_ON_OFF:
		put(&o, r->on ? " on" : " off");
		break;
	case IP_ARGS_DIR_COUNT:
		/* Words are split at spaces, so a path cannot hold one. */
		if (!memchr(r->path, '\0', sizeof(r->path)) || r->path[0] != '/' ||
		    strchr(r->path, ' '))
			return -EINVAL;
		put(&o, " ");
		put(&o, r->path);
		if (r->samples > IP_PROTO_SAMPLES_MAX)
			return -EINVAL;
		if (r->samples) {
			snprintf(num, sizeof(num), " %u", r->samples);
			put(&o, num);
		}
		break;
	case IP_ARGS_NONE:
		break;
	}
	if (r->json)
		put(&o, " json");
	if (o.overflow)
		return -EMSGSIZE;
	/* Whatever the encoder writes, the decoder must take (a path with a
	 * control character, say): refuse here rather than at the daemon. */
	if (ip_proto_decode(tmp, o.len, &back, NULL) < 0)
		return -EINVAL;
	if (o.len + 1 > size)
		return -ENOBUFS;
	memcpy(buf, tmp, o.len + 1);
	return (int)o.len;
}

bool ip_proto_is_mutating(const struct ip_request *r)
{
	const struct ip_command *c = ip_proto_command(r->verb);

	/* unknown verbs are treated as the more dangerous kind */
	return !c || c->admin;
}

bool ip_proto_peer_is_root(const struct ip_peer *p)
{
	return p->same_userns && p->uid == 0;
}

int ip_proto_check_access(const struct ip_request *r, const struct ip_peer *p, const char *admin_group,
			  struct ip_diag *d)
{
	bool group = admin_group && admin_group[0];

	if (!ip_proto_is_mutating(r))
		return 0;
	if (!p->same_userns)
		return ip_diag_set(d, -EPERM,
				   "'%s' changes state: refused to a client in another user namespace "
				   "(uid %u outside it)",
				   ip_proto_verb_name(r->verb), (unsigned)p->uid);
	if (p->uid == 0 || (group && p->in_admin_group))
		return 0;
	return ip_diag_set(d, -EPERM, "'%s' changes state: only root%s%s may do that",
			   ip_proto_verb_name(r->verb), group ? " or members of group " : "",
			   group ? admin_group : "");
}

/* "Uid:\t1000\t1000\t1000\t1000": the second field is the effective one. */
static int status_id(const char *line, const char *key, unsigned long *out)
{
	size_t n = strlen(key);
	unsigned long real;

	if (strncmp(line, key, n) != 0)
		return 0;
	return sscanf(line + n, "%lu %lu", &real, out) == 2 ? 1 : -EINVAL;
}

int ip_proto_pid_ids(struct ip_root *root, pid_t pid, uid_t *euid, gid_t *egid, struct ip_diag *d)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	unsigned long u = 0, g = 0;
	bool have_uid = false, have_gid = false;
	size_t len;
	int r;

	path = ip_asprintf("proc/%d/status", (int)pid);
	if (!path)
		return -ENOMEM;
	r = ip_root_read(root, path, &text, &len);
	if (r < 0)
		return ip_diag_set(d, r, "%s: %s", path, strerror(-r));
	for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		int k;

		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if ((k = status_id(line, "Uid:", &u)) < 0 || (k == 0 && (k = status_id(line, "Gid:", &g)) < 0))
			return ip_diag_set(d, -EINVAL, "%s: bad %.3s line", path, line);
		if (k > 0 && line[0] == 'U')
			have_uid = true;
		else if (k > 0)
			have_gid = true;
	}
	if (!have_uid || !have_gid)
		return ip_diag_set(d, -EINVAL, "%s: no %s line", path, have_uid ? "Gid" : "Uid");
	*euid = (uid_t)u;
	*egid = (gid_t)g;
	return 0;
}

/* Linux 6.5's SO_PEERPIDFD: the value of asm-generic/socket.h, which the
 * architectures listed use; elsewhere only the pidfd_open() path is taken. */
#if !defined(SO_PEERPIDFD) && (defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || \
			       defined(__arm__) || defined(__riscv) || defined(__s390__) ||         \
			       defined(__powerpc__) || defined(__loongarch__))
#define SO_PEERPIDFD 77
#endif

/* A pidfd for the peer: SO_PEERPIDFD names exactly the process that
 * connected; pidfd_open() names whoever has that pid now, so then its ids
 * must still be the connecting ones (*exact false). -ESRCH: gone. */
static int peer_pidfd(struct ip_root *sysroot, int fd, const struct ucred *cred, bool *exact)
{
	uid_t euid;
	gid_t egid;
	int pidfd = -1;

#ifdef SO_PEERPIDFD
	socklen_t len = sizeof(pidfd);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0) {
		*exact = true;
		return pidfd;
	}
	/* the kernel says EINVAL or ESRCH for a peer with no task left */
	if (errno == EINVAL || errno == ESRCH)
		return -ESRCH;
	if (errno != ENOPROTOOPT)
		return -errno;
#endif
	*exact = false;
	if (cred->pid <= 0)
		return -ESRCH;
	pidfd = (int)syscall(SYS_pidfd_open, cred->pid, 0);
	if (pidfd < 0)
		return -errno;
	if (ip_proto_pid_ids(sysroot, cred->pid, &euid, &egid, NULL) < 0 || euid != cred->uid ||
	    egid != cred->gid) {
		close(pidfd);
		return -ESRCH;
	}
	return pidfd;
}

/* A pidfd polls readable once its process has exited. */
static bool pidfd_alive(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) == 0;
}

static bool same_ns(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Whether the peer's process is in the daemon's user namespace. The
 * pidfd pins the process, and so its pid number, from before the read of
 * proc/PID/ns/user until after it: alive then, the link was its own. */
static int peer_same_userns(struct ip_root *sysroot, int fd, const struct ucred *cred, bool *same,
			    struct ip_diag *d)
{
	_cleanup_free_ char *path = NULL;
	struct stat self, peer;
	bool exact;
	pid_t pid = cred->pid;
	int pidfd, r;

	*same = false;
	r = ip_root_stat(sysroot, "proc/self/ns/user", &self);
	if (r < 0)
		return ip_diag_set(d, r, "proc/self/ns/user: %s", strerror(-r));
	pidfd = peer_pidfd(sysroot, fd, cred, &exact);
	if (pidfd == -ESRCH || pidfd == -ENOENT)
		return 0;
	if (pidfd < 0)
		return ip_diag_set(d, pidfd, "peer pidfd: %s", strerror(-pidfd));
	path = ip_asprintf("proc/%d/ns/user", (int)pid);
	r = path ? ip_root_stat(sysroot, path, &peer) : -ENOMEM;
	*same = r == 0 && same_ns(&self, &peer) && pidfd_alive(pidfd);
	close(pidfd);
	if (r < 0 && r != -ENOENT && r != -ESRCH)
		return ip_diag_set(d, r, "%s: %s", path ? path : "proc/PID/ns/user", strerror(-r));
	return 0;
}

/* SO_PEERGROUPS: the supplementary groups at connect(), as SO_PEERCRED's
 * ids, translated by the kernel into the daemon's namespace. */
static int peer_in_group(int fd, gid_t gid, gid_t want, bool *in, struct ip_diag *d)
{
	_cleanup_free_ gid_t *groups = NULL;
	socklen_t len = 64 * sizeof(gid_t);

	*in = want != IP_PROTO_NO_GROUP && gid == want;
	if (want == IP_PROTO_NO_GROUP || *in)
		return 0;
	for (int tries = 0; tries < 3; tries++) {
		gid_t *g = realloc(groups, len ? len : sizeof(gid_t));

		if (!g)
			return -ENOMEM;
		groups = g;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0) {
			for (size_t i = 0; i < len / sizeof(gid_t); i++)
				*in = *in || groups[i] == want;
			return 0;
		}
		if (errno != ERANGE)
			return ip_diag_set(d, -errno, "SO_PEERGROUPS: %s", strerror(errno));
	}
	return ip_diag_set(d, -EAGAIN, "SO_PEERGROUPS: the groups kept changing size");
}

int ip_proto_peer_regroup(int fd, gid_t admin_gid, struct ip_peer *p, struct ip_diag *d)
{
	int r = peer_in_group(fd, p->gid, admin_gid, &p->in_admin_group, d);

	if (r < 0)
		p->in_admin_group = false;
	return r;
}

int ip_proto_peer_identify(struct ip_root *sysroot, int fd, gid_t admin_gid, struct ip_peer *p,
			   struct ip_diag *d)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int r;

	memset(p, 0, sizeof(*p));
	p->uid = (uid_t)-1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return ip_diag_set(d, -errno, "SO_PEERCRED: %s", strerror(errno));
	p->uid = cred.uid;
	p->gid = cred.gid;
	p->pid = cred.pid;
	r = peer_in_group(fd, cred.gid, admin_gid, &p->in_admin_group, d);
	if (r >= 0)
		r = peer_same_userns(sysroot, fd, &cred, &p->same_userns, d);
	return r < 0 ? r : 0;
}

/* ---- terminal safety --------------------------------------------------- */

enum seq { SEQ_NONE, SEQ_CSI, SEQ_STRING, SEQ_ONE };

/* The kind of sequence introduced by ESC followed by @c (ECMA-48 5.3). */
static enum seq esc_kind(unsigned char c)
{
	if (c == '[')
		return SEQ_CSI;
	if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_')
		return SEQ_STRING;
	return SEQ_ONE;
}

/* The same for a C1 control U+0080 + @c1: CSI, OSC, DCS, SOS, PM, APC. */
static enum seq c1_kind(unsigned char c1)
{
	if (c1 == 0x1b)
		return SEQ_CSI;
	if (c1 == 0x1d || c1 == 0x10 || c1 == 0x18 || c1 == 0x1e || c1 == 0x1f)
		return SEQ_STRING;
	return SEQ_NONE;
}

/* Past a sequence's body at @p: CSI parameters up to its final byte, a
 * control string up to BEL or ST (ESC \ or U+009C). */
static const char *skip_seq(const char *p, enum seq k)
{
	const unsigned char *u = (const unsigned char *)p;

	if (k == SEQ_CSI) {
		while (*u >= 0x20 && *u <= 0x3f)
			u++;
		while (*u >= 0x20 && *u <= 0x2f)
			u++;
		if (*u >= 0x40 && *u <= 0x7e)
			u++;
	} else if (k == SEQ_STRING) {
		while (*u && *u != 0x07 && !(u[0] == 0x1b && u[1] == '\\') && !(u[0] == 0xc2 && u[1] == 0x9c))
			u++;
		u += *u == 0x07 ? 1 : *u ? 2 : 0;
	} else if (k == SEQ_ONE) {
		while (*u >= 0x20 && *u <= 0x2f) /* intermediates */
			u++;
		if (*u >= 0x30 && *u <= 0x7e)
			u++;
	}
	return (const char *)u;
}

size_t ip_proto_strip_controls(char *s)
{
	const char *p = s;
	char *o = s;

	while (*p) {
		unsigned char c = (unsigned char)*p;

		if (c == 0x1b) {
			p = p[1] ? skip_seq(p + 2, esc_kind((unsigned char)p[1])) : p + 1;
		} else if (c == 0xc2 && (unsigned char)p[1] >= 0x80 && (unsigned char)p[1] <= 0x9f) {
			p = skip_seq(p + 2, c1_kind((unsigned char)p[1] - 0x80));
		} else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
			p++;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	return (size_t)(o - s);
}

/* Error messages are one line: a newline in one would break log lines. */
static void one_line(char *s)
{
	size_t n;

	for (char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	n = strlen(s);
	while (n && s[n - 1] == ' ')
		s[--n] = '\0';
}

void ip_proto_reply_error(FILE *f, int err, const char *fmt, ...)
{
	struct ip_json j;
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	one_line(msg);
	if (err < 0)
		err = -err;
	if (err == 0)
		err = EIO;
	ip_json_init(&j, f);
	ip_json_object_begin(&j, NULL);
	ip_json_int(&j, "v", IP_PROTO_VERSION);
	ip_json_bool(&j, "ok", false);
	ip_json_int(&j, "errno", err);
	ip_json_string(&j, "error", msg[0] ? msg : strerror(err));
	ip_json_object_end(&j);
}

void ip_proto_reply_begin(struct ip_json *j, FILE *f)
{
	ip_json_init(j, f);
	ip_json_object_begin(j, NULL);
	ip_json_int(j, "v", IP_PROTO_VERSION);
	ip_json_bool(j, "ok", true);
	ip_json_object_begin(j, "data");
}

void ip_proto_reply_end(struct ip_json *j)
{
	ip_json_object_end(j);
	ip_json_object_end(j);
}

static int fill_addr(const char *path, struct sockaddr_un *sa, struct ip_diag *d)
{
	size_t n = strlen(path);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (n == 0)
		return ip_diag_set(d, -EINVAL, "empty socket path");
	if (n >= sizeof(sa->sun_path))
		return ip_diag_set(d, -ENAMETOOLONG,
				   "socket path %.60s... is longer than %zu bytes", path,
				   sizeof(sa->sun_path) - 1);
	memcpy(sa->sun_path, path, n);
	return 0;
}

static int set_timeouts(int fd, int timeout_ms)
{
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = timeout_ms % 1000 * 1000 };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	return 0;
}

int ip_proto_connect(const char *path, int timeout_ms, int *fd, struct ip_diag *d)
{
	_cleanup_close_ int s = -1;
	struct sockaddr_un sa;
	int r;

	r = fill_addr(path, &sa, d);
	if (r < 0)
		return r;
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return ip_diag_set(d, -errno, "socket: %s", strerror(errno));
	if (timeout_ms > 0) {
		r = set_timeouts(s, timeout_ms);
		if (r < 0)
			return ip_diag_set(d, r, "setting socket timeouts: %s", strerror(-r));
	}
	/* For AF_UNIX the send timeout also bounds a connect() that waits on a
	 * full backlog. */
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return ip_diag_set(d, -errno, "connect to %s: %s", path, strerror(errno));
	*fd = TAKE_FD(s);
	return 0;
}

int ip_proto_call(int fd, const char *req, size_t len, char **reply, size_t *reply_len,
		  struct ip_diag *d)
{
	_cleanup_free_ char *buf = NULL;
	struct iovec iov;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;
	char *shrunk;
	int flags = 0;

	*reply = NULL;
	*reply_len = 0;
	if (len > IP_PROTO_REQ_MAX)
		return ip_diag_set(d, -EMSGSIZE, "request of %zu bytes exceeds the %d byte limit",
				   len, IP_PROTO_REQ_MAX);
	/* A daemon that refuses the connection (no fd left to serve it) says
	 * why and closes it, maybe before the request is sent: its reply is
	 * then queued here already, and read below rather than lost. */
	if (send(fd, req, len, MSG_NOSIGNAL) < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return ip_diag_set(d, -EAGAIN, "timed out sending the request");
		if (errno != EPIPE && errno != ECONNRESET)
			return ip_diag_set(d, -errno, "sending the request: %s", strerror(errno));
		flags = MSG_DONTWAIT;
	}
	/* One more byte than allowed, to tell an exact fit from a cut. */
	buf = malloc(IP_PROTO_REPLY_MAX + 1);
	if (!buf)
		return -ENOMEM;
	iov.iov_base = buf;
	iov.iov_len = IP_PROTO_REPLY_MAX + 1;
	n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | flags);
	/* A daemon that closed with the request unread leaves ECONNRESET,
	 * which the kernel reports once, ahead of the reply queued before
	 * it: the reply is read next, or the end. */
	if (n < 0 && errno == ECONNRESET) {
		msg.msg_flags = 0;
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n < 0)
			n = 0;
	}
	if (n < 0 && flags && (errno == EAGAIN || errno == EWOULDBLOCK))
		n = 0;
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return ip_diag_set(d, -EAGAIN, "no reply within the timeout");
		return ip_diag_set(d, -errno, "receiving the reply: %s", strerror(errno));
	}
	if (n == 0)
		return ip_diag_set(d, -ECONNRESET,
				   "the daemon closed the connection without answering");
	if ((msg.msg_flags & MSG_TRUNC) || (size_t)n > IP_PROTO_REPLY_MAX)
		return ip_diag_set(d, -EMSGSIZE, "reply exceeds the %u byte limit",
				   IP_PROTO_REPLY_MAX);
	buf[n] = '\0';
	shrunk = realloc(buf, (size_t)n + 1);
	if (shrunk)
		buf = shrunk;
	*reply = TAKE_PTR(buf);
	*reply_len = (size_t)n;
	return 0;
}

/* The socket is made with @mode, not given it after: a chmod(2) of the path
 * follows a link, and whoever may write the runtime directory's parent can
 * have swapped the directory for one between bind() and chmod(), so that
 * root changed the mode of a file the link leads to. The umask is the
 * process's; irqpilotd has one thread, so nothing else creates a file
 * under it meanwhile. */
static int bind_with_mode(int s, const struct sockaddr_un *sa, mode_t mode)
{
	mode_t old = umask(~mode & 0777);
	int r = bind(s, (const struct sockaddr *)sa, sizeof(*sa));
	int e = errno;

	umask(old);
	errno = e;
	return r;
}

/* bind() went by path, which a swapped directory leads elsewhere: only a
 * socket in the directory the caller checked is taken. A default ACL there
 * overrides the umask; the mode is then set through that directory, and
 * fchmodat() refuses a link rather than follow it. */
static int check_bound(int dirfd, const char *name, const char *path, mode_t mode, struct ip_diag *d)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISSOCK(st.st_mode))
		return ip_diag_set(d, -ENOENT, "%s was made outside the directory checked for it "
				   "(was the directory replaced?)", path);
	if ((st.st_mode & 07777) != (mode & 07777) &&
	    fchmodat(dirfd, name, mode, AT_SYMLINK_NOFOLLOW) < 0)
		return ip_diag_set(d, -errno, "chmod %s: %s", path, strerror(errno));
	return 0;
}

int ip_proto_listen(int dirfd, const char *path, mode_t mode, int *fd, struct ip_diag *d)
{
	_cleanup_close_ int s = -1;
	struct sockaddr_un sa;
	struct stat st;
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	int r;

	r = fill_addr(path, &sa, d);
	if (r < 0)
		return r;
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return ip_diag_set(d, -errno, "socket: %s", strerror(errno));
	if (bind_with_mode(s, &sa, mode) < 0) {
		_cleanup_close_ int probe = -1;

		if (errno != EADDRINUSE)
			return ip_diag_set(d, -errno, "bind %s: %s", path, strerror(errno));
		/* Only a socket nobody answers on is stale; never unlink a
		 * live daemon's socket or a file that is not a socket. It is
		 * looked at and removed in the directory checked, not by a
		 * path that may lead elsewhere by now. */
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISSOCK(st.st_mode))
			return ip_diag_set(d, -EADDRINUSE, "%s exists and is not a socket", path);
		r = ip_proto_connect(path, 1000, &probe, NULL);
		if (r == 0)
			return ip_diag_set(d, -EADDRINUSE, "another daemon is answering on %s",
					   path);
		if (r != -ECONNREFUSED)
			return ip_diag_set(d, -EADDRINUSE, "%s is in use (%s)", path, strerror(-r));
		if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
			return ip_diag_set(d, -errno, "removing stale %s: %s", path,
					   strerror(errno));
		if (bind_with_mode(s, &sa, mode) < 0)
			return ip_diag_set(d, -errno, "bind %s: %s", path, strerror(errno));
	}
	r = check_bound(dirfd, name, path, mode, d);
	if (r < 0)
		return r;
	if (listen(s, 16) < 0)
		return ip_diag_set(d, -errno, "listen on %s: %s", path, strerror(errno));
	*fd = TAKE_FD(s);
	return 0;
}

ssize_t ip_proto_recv_request(int fd, char *buf, struct ip_diag *d)
{
	struct iovec iov = { .iov_base = buf, .iov_len = IP_PROTO_REQ_MAX };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return ip_diag_set(d, -errno, "receiving a request: %s", strerror(errno));
	if (msg.msg_flags & MSG_TRUNC)
		return ip_diag_set(d, -EMSGSIZE, "request exceeds the %d byte limit",
				   IP_PROTO_REQ_MAX);
	return n;
}

static int send_all(int fd, const char *buf, size_t len)
{
	int sz;
	socklen_t sl = sizeof(sz);

	/* A SEQPACKET message must fit the socket's send buffer whole, and
	 * the default (net.core.wmem_default, ~208 KiB) is smaller than a
	 * big reply. SO_SNDBUFFORCE goes past wmem_max for a root daemon;
	 * the kernel doubles the value it is given. */
	if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, &sl) == 0 && (size_t)sz < len + 4096) {
		int want = (int)(len / 2 + 8192);

		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &want, sizeof(want)) < 0)
			(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want));
	}
	if (send(fd, buf, len, MSG_NOSIGNAL) < 0)
		return -errno;
	return 0;
}

int ip_proto_send_reply(int fd, const char *reply, size_t len, struct ip_diag *d)
{
	_cleanup_free_ char *alt = NULL;
	size_t alt_len = 0;
	FILE *f;
	int r;

	if (len <= IP_PROTO_REPLY_MAX) {
		r = send_all(fd, reply, len);
		if (r != -EMSGSIZE)
			return r < 0 ? ip_diag_set(d, r, "sending a reply: %s", strerror(-r)) : 0;
	}
	f = open_memstream(&alt, &alt_len);
	if (!f)
		return -ENOMEM;
	if (len > IP_PROTO_REPLY_MAX)
		ip_proto_reply_error(f, EMSGSIZE, "reply of %zu bytes exceeds the %u byte limit",
				     len, IP_PROTO_REPLY_MAX);
	else
		ip_proto_reply_error(f, EMSGSIZE,
				     "reply of %zu bytes does not fit the socket buffer; raise net.core.wmem_max",
				     len);
	if (fclose(f) != 0 || !alt)
		return -ENOMEM;
	r = send_all(fd, alt, alt_len);
	if (r < 0)
		return ip_diag_set(d, r, "sending a reply: %s", strerror(-r));
	return ip_diag_set(d, -EMSGSIZE, "reply of %zu bytes replaced by an error reply", len);
}
