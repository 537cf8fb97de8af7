// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-steady: watch one running daemon (irqbalance or irqpilotd) over
 * its cycles on a fixture tree, and optionally keep the tree's counters
 * moving like a steady workload between those cycles.
 *
 * Cycles are seen from outside, the same way for both daemons: each cycle
 * reads /proc/interrupts, so the daemon's rchar (/proc/PID/io) jumps; a
 * jump after a quiet third of an interval is a new cycle. Neither daemon
 * has to print anything per cycle (irqbalance --debug would, but its tree
 * dump costs CPU that would then be billed to it).
 *
 * Burst 0 is start-up (irqbalance: object tree and first parse; irqpilotd:
 * its warm-up sample). Measurement runs from half an interval after cycle
 * F (--from, 1 unless given) to half an interval after cycle F + K:
 * exactly K cycles, sampled while the daemon sleeps. A later F measures a
 * daemon settled into what it does for hours, e.g. irqpilotd's idle
 * back-off, which begins after three quiet cycles. CPU time is the sum of every thread's
 * schedstat run time (ns). Wakeups are the voluntary context switches of
 * every thread: each is a sleep the daemon was woken from. The involuntary
 * ones are counted apart (preempted): a long cycle on a busy host is
 * switched out by the scheduler while it runs, which wakes nothing.
 *
 * The writer (--step0/--step1): half an interval after each cycle starts,
 * when neither daemon reads, it adds SIM seconds of the workload that
 * fixturegen's steps 0 and 1 differ by (one step is one second) to the
 * tree's counters. Interrupts follow the affinity the daemon wrote, as the
 * kernel would: a changed smp_affinity(_list) gets a new effective CPU, the
 * one of the mask with the fewest IRQs on it (x86's vector matrix spreads
 * them the same way), and that IRQ's whole rate lands there from then on;
 * /proc/stat's irq and softirq time follows the interrupts. A move is a
 * tick in which an IRQ's written mask differs from the tick before, so
 * both daemons' moves are counted by the same observer.
 *
 * Standalone: only libc.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS 1024
#define MASK_WORDS (MAX_CPUS / 64)

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("bench-steady: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Whole file, NUL-terminated; NULL with errno set when it cannot be read. */
static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 1 << 16, n = 0;
	char *buf;

	if (fd < 0)
		return NULL;
	buf = malloc(cap);
	if (!buf)
		die("out of memory");
	for (;;) {
		ssize_t k;

		if (n + 1 >= cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				die("out of memory");
		}
		k = read(fd, buf + n, cap - n - 1);
		if (k < 0) {
			int e = errno;

			close(fd);
			free(buf);
			errno = e;
			return NULL;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/*
 * Same length or longer (counts only grow), so write over the old bytes
 * without truncating: a reader never sees an empty file.
 */
static void spit(const char *path, const char *buf, size_t len, bool trunc)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | (trunc ? O_TRUNC : 0));

	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	for (size_t off = 0; off < len;) {
		ssize_t k = pwrite(fd, buf + off, len - off, (off_t)off);

		if (k <= 0)
			die("%s: write: %s", path, strerror(errno));
		off += (size_t)k;
	}
	close(fd);
}

/* ---- masks ------------------------------------------------------------ */

struct mask {
	uint64_t w[MASK_WORDS];
};

static bool mask_eq(const struct mask *a, const struct mask *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

static bool mask_test(const struct mask *m, int c)
{
	return (m->w[c / 64] >> (c % 64)) & 1;
}

static void mask_set(struct mask *m, int c)
{
	if (c >= 0 && c < MAX_CPUS)
		m->w[c / 64] |= UINT64_C(1) << (c % 64);
}

/* "0-3,8" -> mask; false on anything else */
static bool parse_list(const char *s, struct mask *m)
{
	memset(m, 0, sizeof(*m));
	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b = a;

		if (end == s)
			return false;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1)
				return false;
			s = end;
		}
		for (long c = a; c <= b && c < MAX_CPUS; c++)
			mask_set(m, (int)c);
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return false;
	}
	return true;
}

/* "ff,00000001" -> mask, from the right */
static bool parse_hex(const char *s, struct mask *m)
{
	size_t n = strcspn(s, "\n");
	int bit = 0;

	memset(m, 0, sizeof(*m));
	for (size_t i = n; i-- > 0;) {
		int v;

		if (s[i] == ',')
			continue;
		if (!isxdigit((unsigned char)s[i]))
			return false;
		v = isdigit((unsigned char)s[i]) ? s[i] - '0' : tolower((unsigned char)s[i]) - 'a' + 10;
		for (int k = 0; k < 4; k++, bit++)
			if ((v >> k) & 1)
				mask_set(m, bit);
	}
	return true;
}

static char *fmt_list(char *buf, const struct mask *m, int n)
{
	char *p = buf;

	*p = '\0';
	for (int c = 0; c < n; c++) {
		int e = c;

		if (!mask_test(m, c))
			continue;
		while (e + 1 < n && mask_test(m, e + 1))
			e++;
		p += sprintf(p, p == buf ? "%d" : ",%d", c);
		if (e > c)
			p += sprintf(p, "-%d", e);
		c = e;
	}
	*p++ = '\n';
	*p = '\0';
	return buf;
}

/* the kernel's %*pb, as fixturegen writes it */
static char *fmt_hex(char *buf, const struct mask *m, int n)
{
	char *p = buf;
	int chunks = (n + 31) / 32;

	for (int k = chunks - 1; k >= 0; k--) {
		uint32_t v = (uint32_t)(m->w[k / 2] >> (32 * (k % 2)));
		int bits = k == chunks - 1 ? n - 32 * k : 32;

		if (bits < 32)
			v &= (UINT32_C(1) << bits) - 1;
		p += sprintf(p, k == chunks - 1 ? "%0*x" : ",%08x", k == chunks - 1 ? (bits + 3) / 4 : 8,
			     v);
	}
	*p++ = '\n';
	*p = '\0';
	return buf;
}

/* ---- counter files ---------------------------------------------------- */

/* Every run of digits is a number; deltas are per number, in order. */
struct counts {
	size_t n;
	uint64_t *v;
};

static void numbers(const char *text, struct counts *c)
{
	size_t cap = 1024;

	c->n = 0;
	c->v = malloc(cap * sizeof(uint64_t));
	for (const char *p = text; *p;) {
		if (!isdigit((unsigned char)*p)) {
			p++;
			continue;
		}
		if (c->n == cap) {
			cap *= 2;
			c->v = realloc(c->v, cap * sizeof(uint64_t));
		}
		if (!c->v)
			die("out of memory");
		c->v[c->n++] = strtoull(p, (char **)&p, 10);
	}
}

/*
 * Rewrite @text with number i replaced by new[i], keeping each field's
 * width where the new value fits (/proc/interrupts' %10u columns).
 */
static char *renumber(const char *text, const uint64_t *nv, size_t *len)
{
	size_t cap = strlen(text) + 4096, o = 0, i = 0;
	char *out = malloc(cap);

	if (!out)
		die("out of memory");
	for (const char *p = text; *p;) {
		const char *q = p;
		char num[32];
		int w, k;

		if (o + 64 >= cap) {
			cap *= 2;
			out = realloc(out, cap);
			if (!out)
				die("out of memory");
		}
		if (!isdigit((unsigned char)*p)) {
			out[o++] = *p++;
			continue;
		}
		while (isdigit((unsigned char)*q))
			q++;
		w = (int)(q - p);
		if (strtoull(p, NULL, 10) == nv[i]) {
			/* untouched, and "0000" of a PCI address stays as it was */
			i++;
			if (o + (size_t)w + 64 >= cap) {
				cap += (size_t)w + 4096;
				out = realloc(out, cap);
				if (!out)
					die("out of memory");
			}
			memcpy(out + o, p, (size_t)w);
			o += (size_t)w;
			p = q;
			continue;
		}
		k = snprintf(num, sizeof(num), "%" PRIu64, nv[i++]);
		/* eat leading blanks already written to keep the column */
		while (k > w && o > 0 && out[o - 1] == ' ' && o >= 2 && out[o - 2] == ' ') {
			o--;
			w++;
		}
		memcpy(out + o, num, (size_t)k);
		o += (size_t)k;
		p = q;
	}
	out[o] = '\0';
	*len = o;
	return out;
}

struct cfile {
	const char *rel;
	struct counts d; /* per-step delta of each number */
	bool present;
};

enum { F_INTERRUPTS, F_STAT, F_SOFTIRQS, F_DISKSTATS, F_SUBMIT, F_COMPLETE, F_TIME, NR_F };
static struct cfile files[NR_F] = {
	{ .rel = "proc/interrupts" }, { .rel = "proc/stat" },	     { .rel = "proc/softirqs" },
	{ .rel = "proc/diskstats" },  { .rel = "irqpilot/submit" }, { .rel = "irqpilot/complete" },
	{ .rel = "irqpilot/time_ns" },
};

/* ---- /proc/interrupts rows -------------------------------------------- */

struct irqrow {
	unsigned irq;
	uint64_t rate;	     /* per step, all CPUs */
	int eff;	     /* CPU its interrupts land on */
	struct mask written; /* what smp_affinity(_list) said last tick */
	char *hex, *list;    /* their text last tick */
	bool watch;
};

struct state {
	int ncpus;
	struct irqrow *rows;
	size_t nrows;
	int per_cpu[MAX_CPUS]; /* IRQs whose effective CPU it is */
	const char *tree;
	double sim;
};

static char *tree_path(const struct state *s, const char *rel)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf), "%s/%s", s->tree, rel);
	return buf;
}

static char *read_small(const struct state *s, unsigned irq, const char *name)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "proc/irq/%u/%s", irq, name);
	return slurp(tree_path(s, rel), NULL);
}

static void write_small(const struct state *s, unsigned irq, const char *name, const char *text)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "proc/irq/%u/%s", irq, name);
	spit(tree_path(s, rel), text, strlen(text), true);
}

static int cpu_columns(const char *interrupts)
{
	int n = 0;

	for (const char *p = interrupts; *p && *p != '\n'; p++)
		if (p[0] == 'C' && p[1] == 'P' && p[2] == 'U')
			n++;
	return n;
}

/* per-row step rates from two full texts of /proc/interrupts */
static void load_rows(struct state *s, const char *t0, const char *t1)
{
	const char *a = strchr(t0, '\n'), *b = strchr(t1, '\n');
	size_t cap = 1024;

	s->ncpus = cpu_columns(t0);
	if (s->ncpus < 1 || s->ncpus > MAX_CPUS)
		die("%d CPU columns in /proc/interrupts", s->ncpus);
	s->rows = calloc(cap, sizeof(*s->rows));
	while (a && b) {
		const char *pa = a + 1, *pb = b + 1;
		char *end;
		unsigned long irq;
		struct irqrow *r;

		a = strchr(pa, '\n');
		b = strchr(pb, '\n');
		while (*pa == ' ')
			pa++;
		while (*pb == ' ')
			pb++;
		irq = strtoul(pa, &end, 10);
		if (end == pa || *end != ':')
			continue;
		if (s->nrows == cap) {
			cap *= 2;
			s->rows = realloc(s->rows, cap * sizeof(*s->rows));
			if (!s->rows)
				die("out of memory");
		}
		r = &s->rows[s->nrows++];
		memset(r, 0, sizeof(*r));
		r->irq = (unsigned)irq;
		pa = end + 1;
		pb = strchr(pb, ':') + 1;
		for (int c = 0; c < s->ncpus; c++) {
			uint64_t x = strtoull(pa, &end, 10), y;

			pa = end;
			y = strtoull(pb, &end, 10);
			pb = end;
			r->rate += y > x ? y - x : 0;
		}
	}
}

/* first tick: what the tree says now */
static void init_affinity(struct state *s)
{
	for (size_t i = 0; i < s->nrows; i++) {
		struct irqrow *r = &s->rows[i];
		char *eff = read_small(s, r->irq, "effective_affinity_list");
		struct mask m;

		r->eff = -1;
		r->hex = read_small(s, r->irq, "smp_affinity");
		r->list = read_small(s, r->irq, "smp_affinity_list");
		r->watch = r->hex && r->list;
		if (r->list)
			parse_list(r->list, &r->written);
		if (eff && parse_list(eff, &m))
			for (int c = 0; c < s->ncpus; c++)
				if (mask_test(&m, c)) {
					r->eff = c;
					break;
				}
		if (r->eff >= 0)
			s->per_cpu[r->eff]++;
		free(eff);
	}
}

/* What the daemon wrote since the last tick; returns the number of moves. */
static int follow_affinity(struct state *s)
{
	static char buf[MAX_CPUS * 4 + 64];
	int moves = 0;

	for (size_t i = 0; i < s->nrows; i++) {
		struct irqrow *r = &s->rows[i];
		char *hex, *list;
		struct mask m;
		bool ok;
		int best = -1;

		if (!r->watch)
			continue;
		hex = read_small(s, r->irq, "smp_affinity");
		list = read_small(s, r->irq, "smp_affinity_list");
		if (!hex || !list) {
			free(hex);
			free(list);
			continue;
		}
		/* the one that changed is what was written; the list wins a tie */
		if (strcmp(list, r->list) != 0)
			ok = parse_list(list, &m);
		else if (strcmp(hex, r->hex) != 0)
			ok = parse_hex(hex, &m);
		else
			ok = false;
		free(hex);
		free(list);
		if (!ok || mask_eq(&m, &r->written)) {
			continue;
		}
		for (int c = 0; c < s->ncpus; c++)
			if (mask_test(&m, c) && (best < 0 || s->per_cpu[c] < s->per_cpu[best]))
				best = c;
		if (best < 0) /* no online CPU in it: the kernel keeps its own choice */
			continue;
		moves++;
		r->written = m;
		if (r->eff >= 0)
			s->per_cpu[r->eff]--;
		r->eff = best;
		s->per_cpu[best]++;
		/* both views agree again, as they would on a kernel */
		free(r->list);
		free(r->hex);
		r->list = strdup(fmt_list(buf, &m, s->ncpus));
		write_small(s, r->irq, "smp_affinity_list", r->list);
		r->hex = strdup(fmt_hex(buf, &m, s->ncpus));
		write_small(s, r->irq, "smp_affinity", r->hex);
		struct mask e = { { 0 } };

		mask_set(&e, best);
		write_small(s, r->irq, "effective_affinity_list", fmt_list(buf, &e, s->ncpus));
		write_small(s, r->irq, "effective_affinity", fmt_hex(buf, &e, s->ncpus));
	}
	return moves;
}

/*
 * The same interrupts in sys/kernel/irq/N/per_cpu_count, which irqpilotd
 * reads for its tracked vectors between full scans: one count per possible
 * CPU, comma-separated, as per_cpu_count_show() (kernel/irq/irqdesc.c)
 * writes it. Trees without the file (CONFIG_SPARSE_IRQ=n) are left alone.
 */
static void bump_per_cpu_count(const struct state *s, unsigned irq, int cpu, uint64_t add)
{
	char rel[128], out[65536];
	char *text, *p;
	size_t n = 0;
	int i = 0;

	snprintf(rel, sizeof(rel), "sys/kernel/irq/%u/per_cpu_count", irq);
	text = slurp(tree_path(s, rel), NULL);
	if (!text)
		return;
	for (p = text; *p && *p != '\n' && n < sizeof(out) - 32; i++) {
		char *end;
		unsigned long long v = strtoull(p, &end, 10);

		if (end == p)
			die("%s: not a count at field %d", rel, i);
		if (i == cpu)
			v = (uint32_t)(v + add); /* the kernel's counts are 32 bits */
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%llu", i ? "," : "", v);
		p = *end == ',' ? end + 1 : end;
	}
	n += (size_t)snprintf(out + n, sizeof(out) - n, "\n");
	spit(tree_path(s, rel), out, n, true);
	free(text);
}

/* Add @sim steps to every counter file; interrupts follow the affinity. */
static void tick(struct state *s)
{
	uint64_t landed[MAX_CPUS] = { 0 }, total_landed = 0;
	size_t irq_row = 0;

	for (int f = 0; f < NR_F; f++) {
		struct cfile *cf = &files[f];
		struct counts cur;
		size_t len;
		char *text, *out;

		if (!cf->present)
			continue;
		text = slurp(tree_path(s, cf->rel), NULL);
		if (!text)
			die("%s: %s", tree_path(s, cf->rel), strerror(errno));
		numbers(text, &cur);
		if (cur.n != cf->d.n)
			die("%s: %zu numbers, the steps had %zu", cf->rel, cur.n, cf->d.n);
		if (f == F_INTERRUPTS) {
			/* walk the numbers line by line: "N:" rows get their rate on eff */
			const char *p = strchr(text, '\n');
			size_t k = 0;

			for (const char *q = text; q < p; q++)
				if (isdigit((unsigned char)*q) && (q == text || !isdigit((unsigned char)q[-1])))
					k++; /* "CPU0" headers have digits */
			while (p && *p) {
				const char *line = p + 1, *nl = strchr(line, '\n'), *q = line;
				bool numbered;
				size_t first = k;

				while (*q == ' ')
					q++;
				numbered = isdigit((unsigned char)*q);
				for (q = line; *q && q != nl; q++)
					if (isdigit((unsigned char)*q) && (q == line || !isdigit((unsigned char)q[-1])))
						k++;
				if (numbered && irq_row < s->nrows) {
					struct irqrow *r = &s->rows[irq_row++];
					uint64_t add = (uint64_t)(s->sim * (double)r->rate + 0.5);

					/* numbers: label, then ncpus counts */
					if (r->eff >= 0 && first + 1 + (size_t)r->eff < k) {
						cur.v[first + 1 + r->eff] += add;
						landed[r->eff] += add;
						total_landed += add;
						if (add)
							bump_per_cpu_count(s, r->irq, r->eff, add);
					}
				} else {
					for (size_t j = first; j < k; j++)
						cur.v[j] += (uint64_t)(s->sim * (double)cf->d.v[j] + 0.5);
				}
				p = nl;
			}
		} else if (f == F_STAT) {
			/* cpuN lines: user nice system idle iowait irq softirq ... */
			const char *p = text;
			size_t k = 0;
			uint64_t tirq = 0, tsoft = 0;
			size_t irq_idx[MAX_CPUS], soft_idx[MAX_CPUS];
			int ncpu_lines = 0;

			for (size_t j = 0; j < cur.n; j++)
				cur.v[j] += (uint64_t)(s->sim * (double)cf->d.v[j] + 0.5);
			while (*p) {
				const char *nl = strchr(p, '\n');
				size_t first = k;
				bool cpun = strncmp(p, "cpu", 3) == 0 && isdigit((unsigned char)p[3]);

				if (!nl)
					nl = p + strlen(p);
				for (const char *q = p; q < nl; q++)
					if (isdigit((unsigned char)*q) && (q == p || !isdigit((unsigned char)q[-1])))
						k++;
				/* numbers: N (of cpuN), then the times */
				if (cpun && ncpu_lines < MAX_CPUS && first + 7 < k) {
					irq_idx[ncpu_lines] = first + 6;
					soft_idx[ncpu_lines] = first + 7;
					ncpu_lines++;
				}
				p = *nl ? nl + 1 : nl;
			}
			if (total_landed) {
				for (int c = 0; c < ncpu_lines; c++) {
					uint64_t di = (uint64_t)(s->sim * (double)cf->d.v[irq_idx[c]] + 0.5);
					uint64_t ds = (uint64_t)(s->sim * (double)cf->d.v[soft_idx[c]] + 0.5);

					cur.v[irq_idx[c]] -= di;
					cur.v[soft_idx[c]] -= ds;
					tirq += di;
					tsoft += ds;
				}
				for (int c = 0; c < ncpu_lines && c < s->ncpus; c++) {
					cur.v[irq_idx[c]] += tirq * landed[c] / total_landed;
					cur.v[soft_idx[c]] += tsoft * landed[c] / total_landed;
				}
			}
		} else {
			for (size_t j = 0; j < cur.n; j++)
				cur.v[j] += (uint64_t)(s->sim * (double)cf->d.v[j] + 0.5);
		}
		out = renumber(text, cur.v, &len);
		spit(tree_path(s, cf->rel), out, len, f == F_TIME);
		free(out);
		free(text);
		free(cur.v);
	}
}

static void load_steps(struct state *s, const char *d0, const char *d1)
{
	char p0[4096], p1[4096];

	for (int f = 0; f < NR_F; f++) {
		struct counts a, b;
		char *t0, *t1;

		snprintf(p0, sizeof(p0), "%s/%s", d0, files[f].rel);
		snprintf(p1, sizeof(p1), "%s/%s", d1, files[f].rel);
		t0 = slurp(p0, NULL);
		t1 = slurp(p1, NULL);
		if (!t0 || !t1) {
			free(t0);
			free(t1);
			continue;
		}
		numbers(t0, &a);
		numbers(t1, &b);
		if (a.n != b.n)
			die("%s: steps 0 and 1 differ in shape", files[f].rel);
		for (size_t j = 0; j < a.n; j++)
			a.v[j] = b.v[j] > a.v[j] ? b.v[j] - a.v[j] : 0;
		files[f].d = a;
		files[f].present = true;
		free(b.v);
		if (f == F_INTERRUPTS)
			load_rows(s, t0, t1);
		free(t0);
		free(t1);
	}
	if (!files[F_INTERRUPTS].present)
		die("%s has no proc/interrupts", d0);
}

/* ---- the watched process ------------------------------------------------ */

struct usage {
	uint64_t run_ns, vol, nonvol, ticks;
	double t;
};

static bool task_usage(int pid, struct usage *u)
{
	char path[384], *text;
	DIR *d;
	struct dirent *e;

	memset(u, 0, sizeof(*u));
	u->t = now_s();
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return false;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", pid, e->d_name);
		text = slurp(path, NULL);
		if (text)
			u->run_ns += strtoull(text, NULL, 10);
		free(text);
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", pid, e->d_name);
		text = slurp(path, NULL);
		/* each at the start of its line (task_context_switch_counts(),
		 * fs/proc/array.c) */
		if (text) {
			const char *v = strstr(text, "\nvoluntary_ctxt_switches:");
			const char *nv = strstr(text, "\nnonvoluntary_ctxt_switches:");

			if (v)
				u->vol += strtoull(v + strlen("\nvoluntary_ctxt_switches:"), NULL, 10);
			if (nv)
				u->nonvol += strtoull(nv + strlen("\nnonvoluntary_ctxt_switches:"), NULL, 10);
		}
		free(text);
	}
	closedir(d);
	/* utime + stime of the whole process, threads that exited included */
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	text = slurp(path, NULL);
	if (text) {
		char *p = strrchr(text, ')');
		unsigned long long ut = 0, st = 0;

		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2)
			u->ticks = ut + st;
		free(text);
	}
	return true;
}

static bool rchar(int pid, uint64_t *v)
{
	char path[64], *text, *p;

	snprintf(path, sizeof(path), "/proc/%d/io", pid);
	text = slurp(path, NULL);
	if (!text)
		return false;
	p = strstr(text, "rchar:");
	*v = p ? strtoull(p + 6, NULL, 10) : 0;
	free(text);
	return p != NULL;
}

static long vm_hwm_kb(int pid)
{
	char path[64], *text, *p;
	long v = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	text = slurp(path, NULL);
	if (text && (p = strstr(text, "VmHWM:")))
		v = strtol(p + 6, NULL, 10);
	free(text);
	return v;
}

static void usage(FILE *f)
{
	fputs("usage: bench-steady --pid PID --interval S --cycles K [--from F | --after SECONDS]\n"
	      "                    [--tree DIR --step0 D0 --step1 D1 [--sim SECONDS]] [--label NAME]\n"
	      "Watches PID for F + K cycles (seen as bursts of reads; F is 1 unless given) and reports\n"
	      "its CPU time per cycle, wakeups per minute and peak RSS over the last K. With --after,\n"
	      "cycles are not looked for: the window is K intervals of wall time from SECONDS after\n"
	      "the start (a daemon that sleeps without a timer at idle has no cycles to count).\n"
	      "With --tree, half an interval after each cycle starts it advances DIR's counters by\n"
	      "SECONDS (default S) of the workload that fixturegen trees D0 and D1 (steps 0 and 1)\n"
	      "differ by, with interrupts following the affinity the daemon wrote, and counts the\n"
	      "IRQs it moved.\n",
	      f);
}

/* The BENCH line's figures over @n cycles from @a to @b, without its end:
 * the same for a window of cycles and one of wall time. */
static void print_usage(const char *label, int n, const struct usage *a, const struct usage *b, long hwm)
{
	double el = b->t - a->t;

	printf("BENCH steady label=%s cycles=%d elapsed_s=%.2f cpu_ms_per_cycle=%.3f "
	       "cpu_ticks_per_cycle=%.2f wakeups_per_min=%.1f preempted_per_min=%.1f vmhwm_kb=%ld",
	       label, n, el, (double)(b->run_ns - a->run_ns) / 1e6 / n, (double)(b->ticks - a->ticks) / n,
	       el > 0 ? (double)(b->vol - a->vol) * 60 / el : 0,
	       el > 0 ? (double)(b->nonvol - a->nonvol) * 60 / el : 0, hwm);
}

/* Sleeps until @until (now_s()), dying if @pid exits meanwhile. */
static void sleep_until(int pid, const char *label, double until)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (double t = now_s(); t < until; t = now_s()) {
		if (access(path, F_OK) != 0)
			die("%s (pid %d) exited", label, pid);
		usleep(until - t > 0.5 ? 500000 : (useconds_t)((until - t) * 1e6) + 1);
	}
}

/* --after: a window of wall time, "cycles" being intervals of it. */
static int watch_wall(int pid, const char *label, double interval, int cycles, double after)
{
	struct usage a = { 0 }, b = { 0 };

	sleep_until(pid, label, now_s() + after);
	if (!task_usage(pid, &a))
		die("%s (pid %d) exited", label, pid);
	sleep_until(pid, label, a.t + cycles * interval);
	if (!task_usage(pid, &b))
		die("%s (pid %d) exited", label, pid);
	print_usage(label, cycles, &a, &b, vm_hwm_kb(pid));
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct state s = { 0 };
	const char *d0 = NULL, *d1 = NULL, *label = "daemon";
	int pid = 0, cycles = 0;
	double interval = 0, gap, last_io = -1e9, start[4096], timeout;
	int seen = -1, sampled = -1, first = 1, from = 1;
	double after = -1;
	struct usage a = { 0 }, b = { 0 };
	uint64_t last = 0, io;
	int moves[4096] = { 0 };
	long hwm;

	s.sim = -1;
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(argv[i], "--pid") == 0 && v)
			pid = atoi(v);
		else if (strcmp(argv[i], "--interval") == 0 && v)
			interval = atof(v);
		else if (strcmp(argv[i], "--cycles") == 0 && v)
			cycles = atoi(v);
		else if (strcmp(argv[i], "--from") == 0 && v)
			from = atoi(v);
		else if (strcmp(argv[i], "--after") == 0 && v)
			after = atof(v);
		else if (strcmp(argv[i], "--tree") == 0 && v)
			s.tree = v;
		else if (strcmp(argv[i], "--step0") == 0 && v)
			d0 = v;
		else if (strcmp(argv[i], "--step1") == 0 && v)
			d1 = v;
		else if (strcmp(argv[i], "--sim") == 0 && v)
			s.sim = atof(v);
		else if (strcmp(argv[i], "--label") == 0 && v)
			label = v;
		else if (strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
		i++;
	}
	if (pid <= 0 || interval <= 0 || cycles < 1 || cycles > 4000 || from < 1 || from > 60 ||
	    (s.tree && (!d0 || !d1))) {
		usage(stderr);
		return 2;
	}
	if (s.sim < 0)
		s.sim = interval;
	if (after >= 0)
		return s.tree ? (usage(stderr), 2) : watch_wall(pid, label, interval, cycles, after);
	first = from;
	if (s.tree) {
		load_steps(&s, d0, d1);
		init_affinity(&s);
	}
	gap = interval / 3;
	timeout = now_s() + 60 + 3 * interval;
	if (!rchar(pid, &last))
		die("pid %d: no /proc/%d/io", pid, pid);
	/* reads may already have begun: the start-up burst is cycle 0 either way */
	if (last > 0) {
		seen = 0;
		start[0] = last_io = now_s();
	}
	for (;;) {
		double t = now_s();

		if (!rchar(pid, &io))
			die("%s (pid %d) exited after %d cycles", label, pid, seen + 1);
		if (io != last) {
			if (t - last_io > gap) {
				if (++seen >= 4096)
					die("too many cycles");
				start[seen] = t;
				timeout = t + 3 * interval + 30;
			}
			last_io = t;
			last = io;
		}
		/* half an interval into each cycle: sample, then advance the tree */
		/* A tick that writes a big tree can outlast a daemon's cycle, so
		 * the cycle counted here may step past 1 or 1 + K: first and last
		 * are the first samples at or after them, and the figures are per
		 * cycle actually spanned (at 1,024 x 8,000 on a loaded host an
		 * equality test never saw 1 + K and the run never ended). */
		if (seen > sampled && t >= start[seen] + interval / 2) {
			if (sampled < from && seen >= from) {
				task_usage(pid, &a);
				first = seen;
			}
			sampled = seen;
			if (seen >= first + cycles) {
				task_usage(pid, &b);
				break;
			}
			if (s.tree) {
				if (seen > 0)
					moves[seen] = follow_affinity(&s);
				tick(&s);
			}
		}
		if (t > timeout)
			die("%s (pid %d): no cycle for %.0f s after %d cycles", label, pid, 3 * interval + 30,
			    seen + 1);
		usleep(20000);
	}
	/* the moves made in cycle 1 + K are still unseen: count them too */
	if (s.tree)
		moves[seen] = follow_affinity(&s);
	hwm = vm_hwm_kb(pid);
	{
		int total = 0, settled = 0, half = 1 + cycles / 2;

		print_usage(label, seen - first, &a, &b, hwm);
		if (s.tree) {
			printf(" moves=");
			for (int c = 1; c <= seen; c++) {
				printf("%s%d", c > 1 ? "," : "", moves[c]);
				total += moves[c];
				if (c > half)
					settled += moves[c];
			}
			printf(" moves_total=%d moves_settled=%d settled_cycles=%d", total, settled, seen - half);
		}
		printf("\n");
	}
	return 0;
}
