// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "irqpilot/macro.h"
#include "irqpilot/sorted.h"
#include "irqpilot/state.h"

#define STATE_TMP "state.tmp"
#define STATE_READ_MAX (16u << 20)

/* Text built by text_add(); oom once a grow failed. */
struct text {
	char *p;
	size_t len, cap;
	bool oom;
};

struct ip_state {
	int dirfd;
	char *dir, *path;
	char *written; /* what the file holds, NULL: unknown */
	bool have_written;
	struct stat written_st; /* the file as written, to tell it is still that */
	char boot[40];		/* boot_id, "" unknown */
	char *root;		/* the root's path, escaped; NULL unknown */
	/* The records as text, made every save to be compared with written:
	 * kept from one save to the next, where a FILE of open_memstream()
	 * each time cost a small machine's cycle 4% for an unchanged file. */
	struct text next;
};

void ip_state_bads_free(struct ip_state_bads *b)
{
	free(b->v);
	b->v = NULL;
	b->n = b->kept = 0;
}

/* ---- the pure parser ---- */

/* Digits only, no sign, no blanks: strtoul() would take "-1" as ULONG_MAX. */
static bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		uint64_t digit = (uint64_t)(*s - '0');

		if (digit > max || v > (max - digit) / 10)
			return false;
		v = v * 10 + digit;
	}
	*out = v;
	return true;
}

/* A block device name is one sysfs directory entry below sys/block. */
static bool device_ok(const char *s, size_t size)
{
	return *s && strlen(s) < size && !strchr(s, '/') && strcmp(s, ".") != 0 &&
	       strcmp(s, "..") != 0;
}

/* A name from the kernel (a comm, an IRQ's chip or actions) may hold
 * blanks, the records' separators, and any other byte. */
static void escape(const char *text, char *out, size_t size)
{
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)text; *p && o + 5 < size; p++) {
		if (*p > ' ' && *p < 0x7f && *p != '\\')
			out[o++] = (char)*p;
		else
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", *p);
	}
	out[o] = '\0';
}

/* escape()'s inverse; an empty text only with @empty_ok. */
static bool unescape(const char *s, char *out, size_t size, bool empty_ok)
{
	size_t o = 0;

	for (; *s; s++) {
		unsigned v;

		if (o + 1 >= size)
			return false;
		if (*s != '\\') {
			out[o++] = *s;
			continue;
		}
		if (s[1] != 'x' || sscanf(s + 2, "%2x", &v) != 1 || !s[2] || !s[3] || v == 0)
			return false;
		out[o++] = (char)v;
		s += 3;
	}
	out[o] = '\0';
	return o > 0 || empty_ok;
}

static bool comm_unescape(const char *s, char *out, size_t size)
{
	return unescape(s, out, size, false);
}

/* what apply.c records: the writer and the reader agree */
static bool sched_ok(uint64_t policy, uint64_t prio)
{
	return policy <= 7 && prio <= 99 && ip_thread_sched_ok((int)policy, (int)prio);
}

/* IDENT_KEYS[k]=VALUE, each once, into @id; false if @tok is none of
 * them, a second one, or a value longer than its field holds (the writer
 * cuts to that: such a value is not one it wrote). */
static const char *const IDENT_KEYS[] = { "chip=", "hwirq=", "actions=" };

static bool parse_ident_field(const char *tok, struct ip_irq_ident *id, bool seen[3])
{
	char *dst[3] = { id->chip, id->hwirq, id->actions };
	const size_t size[3] = { sizeof(id->chip), sizeof(id->hwirq), sizeof(id->actions) };

	for (int k = 0; k < 3; k++) {
		size_t n = strlen(IDENT_KEYS[k]);

		if (strncmp(tok, IDENT_KEYS[k], n) != 0)
			continue;
		if (seen[k] || !unescape(tok + n, dst[k], size[k], true))
			return false;
		seen[k] = true;
		return true;
	}
	return false;
}

/*
 * The records of a file as read, each with its place in it: sorted by
 * object, then place, they are added to the originals in that order, so
 * each lands at the end of its sorted array, and an object's first record
 * is added first, as when added as read. Added as read, each record cost a
 * search of the records before it and the move of the greater ones: a file
 * of 80000 thread records, or 40000 irq records in falling order, took
 * 15 s and 7 s to load, a damaged one of 16 MiB most of an hour.
 */
struct pend_irq {
	size_t seq;
	struct ip_irq_orig v;
};

struct pend_thread {
	size_t seq;
	struct ip_thread_orig v;
};

struct pend_rq {
	size_t seq;
	struct ip_rq_orig v;
};

struct pend_cq {
	size_t seq;
	struct ip_cq_orig v;
};

struct batch {
	size_t seq;
	struct pend_irq *irq;
	size_t nr_irq, cap_irq;
	struct pend_thread *thr;
	size_t nr_thr, cap_thr;
	struct pend_rq *rq;
	size_t nr_rq, cap_rq;
	struct pend_cq *cq;
	size_t nr_cq, cap_cq;
};

/* A new zeroed record at the end of *@arr, numbered; NULL on ENOMEM. */
static void *batch_slot(struct batch *b, void **arr, size_t *n, size_t *cap, size_t size)
{
	char *slot;

	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		void *nv = realloc(*arr, ncap * size);

		if (!nv)
			return NULL;
		*arr = nv;
		*cap = ncap;
	}
	slot = (char *)*arr + (*n)++ * size;
	memset(slot, 0, size);
	*(size_t *)slot = b->seq++; /* each pend_* begins with seq */
	return slot;
}

#define BATCH_ADD(b, f) \
	((__typeof__((b)->f))batch_slot((b), (void **)&(b)->f, &(b)->nr_##f, &(b)->cap_##f, sizeof(*(b)->f)))

static void batch_free(struct batch *b)
{
	for (size_t i = 0; i < b->nr_irq; i++)
		free(b->irq[i].v.list);
	free(b->irq);
	free(b->thr);
	free(b->rq);
	free(b->cq);
}

static int cmp_seq(size_t a, size_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_pend_irq(const void *a, const void *b)
{
	const struct pend_irq *x = a, *y = b;

	return x->v.irq != y->v.irq ? (x->v.irq < y->v.irq ? -1 : 1) : cmp_seq(x->seq, y->seq);
}

static int cmp_pend_thread(const void *a, const void *b)
{
	const struct pend_thread *x = a, *y = b;
	int c = ip_thread_orig_cmp(&x->v, &y->v);

	return c ? c : cmp_seq(x->seq, y->seq);
}

static int cmp_pend_rq(const void *a, const void *b)
{
	const struct pend_rq *x = a, *y = b;
	int c = strcmp(x->v.device, y->v.device);

	return c ? c : cmp_seq(x->seq, y->seq);
}

static int cmp_pend_cq(const void *a, const void *b)
{
	const struct pend_cq *x = a, *y = b;
	int c = strcmp(x->v.device, y->v.device);

	return c ? c : cmp_seq(x->seq, y->seq);
}

/* A thread's first affinity and first sched record win: a later one may
 * hold what irqpilotd wrote, not what the thread had. */
static int feed_threads(struct batch *b, struct ip_originals *h)
{
	ip_sort(b->thr, b->nr_thr, sizeof(*b->thr), cmp_pend_thread);
	for (size_t i = 0; i < b->nr_thr; i++) {
		const struct ip_thread_orig *t = &b->thr[i].v;
		struct ip_thread_orig *o = ip_originals_thread(h, t->pid, t->irq, t->comm, t->start);

		if (!o)
			return -ENOMEM;
		if (t->have_affinity && !o->have_affinity) {
			o->have_affinity = true;
			o->allowed = t->allowed;
		}
		if (t->have_sched && !o->have_sched) {
			o->have_sched = true;
			o->policy = t->policy;
			o->priority = t->priority;
		}
	}
	return 0;
}

/* Adds the records of @b to @h in sorted order; 0 or -ENOMEM. */
static int batch_feed(struct batch *b, struct ip_originals *h)
{
	ip_sort(b->irq, b->nr_irq, sizeof(*b->irq), cmp_pend_irq);
	for (size_t i = 0; i < b->nr_irq; i++)
		if (ip_originals_add_irq_id(h, b->irq[i].v.irq, b->irq[i].v.list, &b->irq[i].v.id) < 0)
			return -ENOMEM;
	if (feed_threads(b, h) < 0)
		return -ENOMEM;
	ip_sort(b->rq, b->nr_rq, sizeof(*b->rq), cmp_pend_rq);
	for (size_t i = 0; i < b->nr_rq; i++)
		if (ip_originals_add_rq(h, b->rq[i].v.device, b->rq[i].v.value) < 0)
			return -ENOMEM;
	/* a device's last cq record wins, as ip_originals_add_cq() has it */
	ip_sort(b->cq, b->nr_cq, sizeof(*b->cq), cmp_pend_cq);
	for (size_t i = 0; i < b->nr_cq; i++)
		if (ip_originals_add_cq(h, b->cq[i].v.device, b->cq[i].v.major, b->cq[i].v.minor) < 0)
			return -ENOMEM;
	return 0;
}

/* Each parse_*_record: 0, -ENOMEM, or 1 with @why set for a line that
 * is not a valid record of its kind. */
static int parse_irq_record(struct batch *b, char **tok, int nt, const char **why)
{
	struct ip_irq_ident id = { 0 };
	struct pend_irq *p;
	bool seen[3] = { false };
	uint64_t a;
	ip_cpuset s;

	/* without the identity: a file written before it was kept */
	if (nt != 3 && nt != 6)
		return *why = "irq: want 'irq N CPULIST [chip=C hwirq=H actions=A]'", 1;
	if (!parse_u64(tok[1], IP_STATE_IRQ_MAX - 1, &a))
		return *why = "IRQ number out of range", 1;
	if (cpuset_parse_list(&s, tok[2]) < 0 || cpuset_empty(&s))
		return *why = "not a CPU list", 1;
	for (int k = 3; k < nt; k++)
		if (!parse_ident_field(tok[k], &id, seen))
			return *why = "irq: not chip=, hwirq= and actions= once each", 1;
	id.have_hw = id.have_actions = nt == 6;
	/* the first record of an IRQ wins, as it did when written: sorted
	 * after it (cmp_pend_irq), its others find it added (batch_feed) */
	p = BATCH_ADD(b, irq);
	if (!p || !(p->v.list = strdup(tok[2])))
		return -ENOMEM;
	p->v.irq = (unsigned)a;
	p->v.id = id;
	return 0;
}

static int parse_thread_record(struct batch *b, char **tok, int nt, long pid_max,
			       const char **why)
{
	uint64_t a, bb, c, dd = 0, prio = 0;
	struct pend_thread *p;
	char comm[64];
	ip_cpuset s;

	if (nt < 7)
		return *why = "thread: want 'thread PID IRQ START COMM affinity|sched ...'", 1;
	if (!parse_u64(tok[1], (uint64_t)pid_max - 1, &a) || a == 0)
		return *why = "pid out of range (pid_max)", 1;
	if (!parse_u64(tok[2], IP_STATE_IRQ_MAX - 1, &bb))
		return *why = "IRQ number out of range", 1;
	if (!parse_u64(tok[3], UINT64_MAX, &c))
		return *why = "not a start time", 1;
	if (!comm_unescape(tok[4], comm, sizeof(comm)))
		return *why = "not a thread name", 1;
	if (strcmp(tok[5], "affinity") == 0 && nt == 7) {
		if (cpuset_parse_list(&s, tok[6]) < 0 || cpuset_empty(&s))
			return *why = "not a CPU list", 1;
	} else if (strcmp(tok[5], "sched") == 0 && nt == 8) {
		if (!parse_u64(tok[6], 7, &dd) || !parse_u64(tok[7], 99, &prio) || !sched_ok(dd, prio))
			return *why = "scheduling policy or priority out of range", 1;
	} else {
		return *why = "thread: want 'affinity CPULIST' or 'sched POLICY PRIORITY'", 1;
	}
	p = BATCH_ADD(b, thr);
	if (!p)
		return -ENOMEM;
	p->v.pid = (pid_t)a;
	p->v.irq = (unsigned)bb;
	p->v.start = c;
	memcpy(p->v.comm, comm, sizeof(comm));
	if (tok[5][0] == 'a') {
		p->v.have_affinity = true;
		p->v.allowed = s;
	} else {
		p->v.have_sched = true;
		p->v.policy = (int)dd;
		p->v.priority = (int)prio;
	}
	return 0;
}

static int parse_cq_record(struct batch *bt, char **tok, int nt, const char **why)
{
	struct pend_cq *p;
	uint64_t a, b;
	char *colon;

	if (nt != 3)
		return *why = "cq: want 'cq DEVICE MAJOR:MINOR'", 1;
	if (!device_ok(tok[1], sizeof(((struct ip_cq_orig *)0)->device)))
		return *why = "not a block device name", 1;
	colon = strchr(tok[2], ':');
	if (!colon)
		return *why = "not MAJOR:MINOR", 1;
	*colon = '\0';
	/* dev_t: 12 bits of major, 20 of minor */
	if (!parse_u64(tok[2], 4095, &a) || !parse_u64(colon + 1, (1u << 20) - 1, &b))
		return *colon = ':', *why = "not MAJOR:MINOR", 1;
	*colon = ':';
	p = BATCH_ADD(bt, cq);
	if (!p)
		return -ENOMEM;
	snprintf(p->v.device, sizeof(p->v.device), "%s", tok[1]);
	p->v.major = (unsigned)a;
	p->v.minor = (unsigned)b;
	return 0;
}

static int parse_rq_record(struct batch *b, char **tok, int nt, const char **why)
{
	struct pend_rq *p;
	uint64_t a;

	if (nt != 3)
		return *why = "rq: want 'rq DEVICE 0|1|2'", 1;
	if (!device_ok(tok[1], sizeof(((struct ip_rq_orig *)0)->device)))
		return *why = "not a block device name", 1;
	if (!parse_u64(tok[2], 2, &a))
		return *why = "rq_affinity out of range (0-2)", 1;
	p = BATCH_ADD(b, rq);
	if (!p)
		return -ENOMEM;
	snprintf(p->v.device, sizeof(p->v.device), "%s", tok[1]);
	p->v.value = (int)a;
	return 0;
}

/* 0, -ENOMEM, or 1 with @why set for a line that is not a valid record. */
static int parse_record(struct batch *b, char **tok, int nt, long pid_max, const char **why)
{
	if (strcmp(tok[0], "irq") == 0)
		return parse_irq_record(b, tok, nt, why);
	if (strcmp(tok[0], "thread") == 0)
		return parse_thread_record(b, tok, nt, pid_max, why);
	if (strcmp(tok[0], "cq") == 0)
		return parse_cq_record(b, tok, nt, why);
	if (strcmp(tok[0], "rq") == 0)
		return parse_rq_record(b, tok, nt, why);
	return *why = "unknown record", 1;
}

static int add_bad(struct ip_state_bads *bad, int lineno, const char *why, const char *line,
		   size_t len)
{
	struct ip_state_bad *nv;
	size_t o = 0;

	bad->n++;
	if (bad->kept == IP_STATE_BADS_KEPT)
		return 0;
	nv = realloc(bad->v, (bad->kept + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	bad->v = nv;
	nv = &nv[bad->kept++];
	nv->lineno = lineno;
	snprintf(nv->why, sizeof(nv->why), "%s", why);
	/* printable only: the text goes to a terminal or the journal */
	for (size_t i = 0; i < len && o + 1 < sizeof(nv->text); i++)
		nv->text[o++] = line[i] >= ' ' && line[i] < 0x7f ? line[i] : '?';
	nv->text[o] = '\0';
	return 0;
}

/* an irq record's identity, escaped, is up to 4 bytes a byte of its fields */
#define LINE_MAX_LEN (IP_CPULIST_MAX + 4 * sizeof(struct ip_irq_ident) + 256)
#define MAX_TOKENS 9
#define HEADER "# irqpilot state "

/* A comment is skipped, but the header names the format: a file another
 * version wrote may spell its records alike and mean something else, so
 * any version but 2 is a bad line (1 also: it recorded after the write),
 * and nothing after it is taken as a record. */
static bool other_version(const char *line, size_t n)
{
	size_t h = sizeof(HEADER) - 1;

	if (n < h || memcmp(line, HEADER, h) != 0)
		return false;
	return !(n > h && line[h] == '2' && (n == h + 1 || line[h + 1] == ':'));
}

int ip_state_parse(const char *text, size_t len, long pid_max, struct ip_originals *h,
		   struct ip_state_bads *bad)
{
	char *line = malloc(LINE_MAX_LEN + 1);
	struct batch b = { 0 };
	size_t pos = 0;
	int lineno = 0, ret = 0;

	if (!line)
		return -ENOMEM;
	if (pid_max < 2 || pid_max > IP_STATE_PID_LIMIT)
		pid_max = IP_STATE_PID_LIMIT;
	while (pos < len && ret >= 0) {
		const char *start = text + pos, *nl = memchr(start, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - start) : len - pos;
		char *tok[MAX_TOKENS], *save = NULL, *t;
		const char *why = NULL;
		int nt = 0;

		pos += n + (nl ? 1 : 0);
		lineno++;
		if (n > 0 && start[0] == '#' && other_version(start, n)) {
			ret = add_bad(bad, lineno, "not a version 2 state file", start, n);
			break;
		}
		if (n == 0 || start[0] == '#')
			continue;
		if (n > LINE_MAX_LEN) {
			ret = add_bad(bad, lineno, "line too long", start, n);
			continue;
		}
		if (memchr(start, '\0', n)) {
			ret = add_bad(bad, lineno, "NUL byte in the line", start, n);
			continue;
		}
		memcpy(line, start, n);
		line[n] = '\0';
		for (t = strtok_r(line, " \t", &save); t && nt < MAX_TOKENS; t = strtok_r(NULL, " \t", &save))
			tok[nt++] = t;
		if (nt == 0)
			continue;
		if (t) {
			ret = add_bad(bad, lineno, "too many fields", start, n);
			continue;
		}
		ret = parse_record(&b, tok, nt, pid_max, &why);
		if (ret == 1)
			ret = add_bad(bad, lineno, why, start, n);
	}
	free(line);
	if (ret >= 0)
		ret = batch_feed(&b, h);
	batch_free(&b);
	return ret < 0 ? ret : 0;
}

long ip_state_pid_max(struct ip_root *r)
{
	long long v;

	if (ip_root_read_long(r, "proc/sys/kernel/pid_max", &v) < 0 || v < 2 || v > IP_STATE_PID_LIMIT)
		return IP_STATE_PID_LIMIT;
	return (long)v;
}

/* ---- the file ---- */

int ip_open_own_dir(const char *dir, const char *what, struct ip_diag *d)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	int e;

	if (fd < 0) {
		e = errno;
		/* O_DIRECTORY fails a link with ENOTDIR before O_NOFOLLOW's ELOOP */
		if (e == ELOOP || e == ENOTDIR)
			return ip_diag_set(d, -ELOOP, "%s: a symlink or not a directory", dir);
		return ip_diag_set(d, -e, "%s: %s", dir, strerror(e));
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		close(fd);
		return ip_diag_set(d, -e, "%s: %s", dir, strerror(e));
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return ip_diag_set(d, -EPERM,
				   "%s: owned by uid %u with mode %04o; %s must be owned by uid %u and "
				   "writable by no one else",
				   dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), what,
				   (unsigned)geteuid());
	}
	return fd;
}

int ip_state_open(const char *dir, struct ip_state **out, struct ip_diag *d)
{
	struct ip_state *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	/* Whoever may write here could swap the file restore trusts. */
	s->dirfd = ip_open_own_dir(dir, "the runtime directory", d);
	if (s->dirfd < 0) {
		int e = s->dirfd;

		free(s);
		return e;
	}
	s->dir = strdup(dir);
	s->path = ip_asprintf("%s/%s", dir, IP_STATE_NAME);
	if (!s->dir || !s->path) {
		ip_state_close(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

void ip_state_close(struct ip_state *s)
{
	if (!s)
		return;
	close(s->dirfd);
	free(s->dir);
	free(s->path);
	free(s->written);
	free(s->next.p);
	free(s->root);
	free(s);
}

const char *ip_state_path(const struct ip_state *s)
{
	return s->path;
}

int ip_state_dirfd(const struct ip_state *s)
{
	return s->dirfd;
}

void ip_state_set_boot(struct ip_state *s, const char *boot_id)
{
	snprintf(s->boot, sizeof(s->boot), "%s", boot_id ? boot_id : "");
}

/* A boot_id is a UUID: 36 characters of hex digits and '-'. */
static bool boot_id_ok(const char *id, size_t n)
{
	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(id[i] == '-' || (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

void ip_state_boot_of(struct ip_state *s, struct ip_root *r)
{
	_cleanup_free_ char *id = NULL;
	bool ok = ip_root_read_line(r, "proc/sys/kernel/random/boot_id", &id) == 0 &&
		  boot_id_ok(id, strlen(id));

	ip_state_set_boot(s, ok ? id : NULL);
}

int ip_state_set_root(struct ip_state *s, const char *root)
{
	/* escape() stops 5 bytes short of the end */
	size_t size = root ? strlen(root) * 4 + 6 : 0;
	char *e = size ? malloc(size) : NULL;

	if (size && !e)
		return -ENOMEM;
	if (e)
		escape(root, e, size);
	free(s->root);
	s->root = e;
	return 0;
}

#define BOOT_LINE "# boot "
#define ROOT_LINE "# root "

/* @line (@n bytes) is "@key VALUE": VALUE is @s's @ours (0), another
 * (1), or @line is no such line (-1). */
static int names_other(const char *line, size_t n, const char *key, const char *ours)
{
	size_t kl = strlen(key);

	if (n <= kl || memcmp(line, key, kl) != 0)
		return -1;
	return !(n - kl == strlen(ours) && memcmp(line + kl, ours, n - kl) == 0);
}

/*
 * Whose originals the comment lines that open @text are (a line not a
 * comment ends them): -EXDEV for another root's (a daemon run on a
 * fixture tree with this runtime directory, killed: restored here, its
 * tree's settings would be written to this machine's IRQs), -ESTALE for
 * another boot's.
 */
static int other_origin(const struct ip_state *s, const char *text, size_t len, struct ip_diag *d)
{
	size_t bl = sizeof(BOOT_LINE) - 1, rl = sizeof(ROOT_LINE) - 1;

	/* Another root first, whatever the lines' order: a tree with a
	 * boot_id of its own is of another boot too, and a file of another
	 * boot is set aside as put back by the reboot, which never touched
	 * that tree. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t pos = 0; pos < len && text[pos] == '#';) {
			const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
			size_t n = nl ? (size_t)(nl - line) : len - pos;

			if (pass == 0 && s->root && names_other(line, n, ROOT_LINE, s->root) == 1)
				return ip_diag_set(d, -EXDEV,
						   "%s holds the originals of another root (%.*s; this is %.200s): "
						   "restore them with irqpilotd --restore --root of that tree",
						   s->path, (int)MIN(n - rl, (size_t)200), line + rl, s->root);
			if (pass == 1 && s->boot[0] && names_other(line, n, BOOT_LINE, s->boot) == 1)
				return ip_diag_set(d, -ESTALE,
						   "%s holds the originals of another boot (boot_id %.*s; this is %s): "
						   "the reboot put those settings back already",
						   s->path, (int)MIN(n - bl, (size_t)40), line + bl, s->boot);
			pos += n + 1;
		}
	}
	return 0;
}

int ip_state_load(struct ip_state *s, long pid_max, struct ip_originals *h, struct ip_state_bads *bad,
		  struct ip_diag *d)
{
	int fd = openat(s->dirfd, IP_STATE_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct stat st;
	int ret;

	if (fd < 0) {
		if (errno == ELOOP)
			return ip_diag_set(d, -ELOOP, "%s is a symbolic link: not read", s->path);
		return ip_diag_set(d, -errno, "%s: %s", s->path, strerror(errno));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) || st.st_size > STATE_READ_MAX) {
		close(fd);
		return ip_diag_set(d, -EPERM,
				   "%s: not a regular file of at most 16 MiB owned by uid %u and "
				   "writable by no one else: not read",
				   s->path, (unsigned)geteuid());
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (len < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + len, (size_t)st.st_size - len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	close(fd);
	ret = other_origin(s, buf, len, d);
	if (ret < 0)
		return ret;
	ret = ip_state_parse(buf, len, pid_max, h, bad);
	if (ret < 0)
		return ret;
	/* The file holds this: a save of the same records is not a write. */
	if (!bad->n) {
		buf[len] = '\0';
		free(s->written);
		s->written = TAKE_PTR(buf);
		s->have_written = true;
		s->written_st = st;
	}
	return 0;
}

/* Room for @need bytes in @t; sets oom and returns false if there is none. */
static bool text_reserve(struct text *t, size_t need)
{
	size_t cap = MAX(t->cap * 2, need + 256);
	char *n;

	if (need <= t->cap)
		return true;
	n = realloc(t->p, cap);
	if (!n) {
		t->oom = true;
		return false;
	}
	t->p = n;
	t->cap = cap;
	return true;
}

static void text_add(struct text *t, const char *fmt, ...) _printf_(2, 3);
static void text_add(struct text *t, const char *fmt, ...)
{
	va_list ap, again;
	int k;

	if (t->oom || !text_reserve(t, t->len + 1))
		return;
	va_start(ap, fmt);
	va_copy(again, ap);
	k = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	/* a print that did not fit is printed again once there is room; one
	 * that then says another length (or fails) marks the text out of
	 * memory: never a partial line in the file */
	if (k >= 0 && (size_t)k >= t->cap - t->len && text_reserve(t, t->len + (size_t)k + 1) &&
	    vsnprintf(t->p + t->len, t->cap - t->len, fmt, again) != k)
		k = -1;
	va_end(again);
	va_end(ap);
	if (k < 0)
		t->oom = true;
	else if (!t->oom)
		t->len += (size_t)k;
}

/* @h as the state file has it, of @s's boot and root, into @t; false on ENOMEM. */
static bool format(const struct ip_originals *h, const struct ip_state *s, struct text *t)
{
	t->len = 0;
	t->oom = false;
	text_add(t, HEADER "2: original settings, for irqpilotd --restore\n");
	if (s->boot[0])
		text_add(t, BOOT_LINE "%s\n", s->boot);
	if (s->root)
		text_add(t, ROOT_LINE "%s\n", s->root);
	for (size_t i = 0; i < h->nr_irqs; i++) {
		const struct ip_irq_ident *id = &h->irqs[i].id;
		char chip[sizeof(id->chip) * 4 + 1], hwirq[sizeof(id->hwirq) * 4 + 1];
		char actions[sizeof(id->actions) * 4 + 1];

		/* all three or none: a line's chip and hwirq are known when a
		 * move is planned (it is tracked), and its actions always */
		if (!id->have_hw || !id->have_actions) {
			text_add(t, "irq %u %s\n", h->irqs[i].irq, h->irqs[i].list);
			continue;
		}
		escape(id->chip, chip, sizeof(chip));
		escape(id->hwirq, hwirq, sizeof(hwirq));
		escape(id->actions, actions, sizeof(actions));
		text_add(t, "irq %u %s chip=%s hwirq=%s actions=%s\n", h->irqs[i].irq, h->irqs[i].list,
			 chip, hwirq, actions);
	}
	for (size_t i = 0; i < h->nr_threads; i++) {
		const struct ip_thread_orig *o = &h->threads[i];
		char comm[64 * 4 + 1];

		escape(o->comm, comm, sizeof(comm));
		if (o->have_affinity)
			text_add(t, "thread %d %u %llu %s affinity %s\n", (int)o->pid, o->irq,
				 (unsigned long long)o->start, comm, cpuset_str(&o->allowed));
		if (o->have_sched)
			text_add(t, "thread %d %u %llu %s sched %d %d\n", (int)o->pid, o->irq,
				 (unsigned long long)o->start, comm, o->policy, o->priority);
	}
	for (size_t i = 0; i < h->nr_rq; i++)
		text_add(t, "rq %s %d\n", h->rq[i].device, h->rq[i].value);
	/* a device we attached to irqpilot_cq is detached on restore */
	for (size_t i = 0; i < h->nr_cq; i++)
		text_add(t, "cq %s %u:%u\n", h->cq[i].device, h->cq[i].major, h->cq[i].minor);
	return !t->oom;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/*
 * Whether the file is still the one last written: an unchanged text is
 * not written again, so a file removed or emptied by someone else (rm,
 * "> state", a tmpfiles clean of the runtime directory) would otherwise
 * stay so, and after a crash --restore would find no originals. Its owner
 * and mode too: a chmod or chown keeps text and mtime, and --restore
 * refuses a file another user owns or may write.
 */
static bool still_written(const struct ip_state *s)
{
	struct stat st;

	if (fstatat(s->dirfd, IP_STATE_NAME, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	return st.st_dev == s->written_st.st_dev && st.st_ino == s->written_st.st_ino &&
	       st.st_size == s->written_st.st_size && st.st_mode == s->written_st.st_mode &&
	       st.st_uid == s->written_st.st_uid && st.st_gid == s->written_st.st_gid &&
	       st.st_mtim.tv_sec == s->written_st.st_mtim.tv_sec &&
	       st.st_mtim.tv_nsec == s->written_st.st_mtim.tv_nsec;
}

int ip_state_save(struct ip_state *s, const struct ip_originals *h, struct ip_diag *d)
{
	bool again = false;
	_cleanup_free_ char *text = NULL;
	int fd, ret;

	if (ip_originals_empty(h)) {
		if (s->have_written && !s->written)
			return 0;
		if (unlinkat(s->dirfd, IP_STATE_NAME, 0) < 0 && errno != ENOENT)
			return ip_diag_set(d, -errno, "%s: %s", s->path, strerror(errno));
		if (fsync(s->dirfd) < 0)
			return ip_diag_set(d, -errno, "%s: fsync: %s", s->dir, strerror(errno));
		free(s->written);
		s->written = NULL;
		s->have_written = true;
		return 0;
	}
	if (!format(h, s, &s->next))
		return -ENOMEM;
	if (s->have_written && s->written && strcmp(s->written, s->next.p) == 0) {
		if (still_written(s))
			return 0;
		again = true;
	}
	/* the text is the file's once written; the next save makes its own */
	text = TAKE_PTR(s->next.p);
	s->next = (struct text){ 0 };
	/* A temporary file left by a crash, or planted: the name is ours. */
	if (unlinkat(s->dirfd, STATE_TMP, 0) < 0 && errno != ENOENT)
		return ip_diag_set(d, -errno, "%s/%s: %s", s->dir, STATE_TMP, strerror(errno));
	fd = openat(s->dirfd, STATE_TMP, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return ip_diag_set(d, -errno, "%s/%s: %s", s->dir, STATE_TMP, strerror(errno));
	ret = write_all(fd, text, strlen(text));
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	/* after the fsync: the mtime the file keeps through the rename */
	if (ret == 0 && fstat(fd, &s->written_st) < 0)
		ret = -errno;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	if (ret == 0 && renameat(s->dirfd, STATE_TMP, s->dirfd, IP_STATE_NAME) < 0)
		ret = -errno;
	if (ret < 0) {
		unlinkat(s->dirfd, STATE_TMP, 0);
		return ip_diag_set(d, ret, "%s: %s", s->path, strerror(-ret));
	}
	/* the rename itself is durable only once the directory is */
	if (fsync(s->dirfd) < 0)
		return ip_diag_set(d, -errno, "%s: fsync: %s", s->dir, strerror(errno));
	free(s->written);
	s->written = TAKE_PTR(text);
	s->have_written = true;
	if (again)
		return ip_diag_set(d, 1, "%s was changed or removed by someone else; written again",
				   s->path);
	return 0;
}

int ip_state_set_aside(struct ip_state *s, char **aside, struct ip_diag *d)
{
	char name[64], stamp[32];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	for (int i = 0; i < 100; i++) {
		if (i)
			snprintf(name, sizeof(name), "%s.invalid-%s-%d", IP_STATE_NAME, stamp, i);
		else
			snprintf(name, sizeof(name), "%s.invalid-%s", IP_STATE_NAME, stamp);
		/* a link: never over an existing file, and the state file
		 * stays until ip_state_save() replaces it */
		if (linkat(s->dirfd, IP_STATE_NAME, s->dirfd, name, 0) == 0) {
			if (fsync(s->dirfd) < 0)
				return ip_diag_set(d, -errno, "%s: %s", s->path, strerror(errno));
			free(s->written);
			s->written = NULL;
			s->have_written = false;
			*aside = ip_asprintf("%s/%s", s->dir, name);
			return *aside ? 0 : -ENOMEM;
		}
		if (errno != EEXIST)
			return ip_diag_set(d, -errno, "%s: %s", s->path, strerror(errno));
	}
	return ip_diag_set(d, -EEXIST, "%s: too many files set aside", s->path);
}

int ip_state_record(void *ctx, const struct ip_originals *h)
{
	struct ip_diag d = { "" };
	int ret = ip_state_save(ctx, h, &d);

	/* written again after someone else's change is written: no error */
	return ret > 0 ? 0 : ret;
}
