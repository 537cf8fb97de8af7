// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fixturegen: write the /proc and /sys tree of a large synthetic x86 server.
 *
 * The hand-written fixtures are small; scaling problems (a 90 MB
 * /proc/interrupts, thousands of proc/irq directories, 1,024 topology
 * directories) only show on trees the size of a real big machine. The
 * formats copy what Debian's 6.1 kernel prints, byte for byte where the
 * parsers care (column widths, blk-mq's ", " lists, %*pb masks), and the
 * layout copies the real sysfs: relative symlinks for block devices,
 * drivers and bus entries.
 *
 * The machine: 2 packages (1 when --cpus 2), SMT pairs n and n + N/2, one
 * LLC and one NUMA node per package; an AHCI controller with sda on one
 * non-managed MSI; K NVMe controllers with one admin vector and min(N, 64)
 * managed I/O vectors spread like the kernel's group_cpus_evenly(); and
 * mlx5 and ixgbe NICs filling the remaining IRQs. Counts are a function of
 * (seed, IRQ, CPU, step), so trees of steps K and K+1 stand for two samples
 * one second apart of a steady workload.
 *
 * Standalone: only libc, so it can be built before the library.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_CPUS 1024
#define MASK_WORDS (MAX_CPUS / 64)
#define MAX_NVME 32
#define MAX_NICS 512
#define MAX_IRQS 200000
#define NVME_MAX_IOQ 64
#define NIC_MAX_QUEUES 63

/* ---- small CPU masks ------------------------------------------------ */

struct mask {
	uint64_t w[MASK_WORDS];
};

static void mask_set(struct mask *m, int c)
{
	m->w[c / 64] |= UINT64_C(1) << (c % 64);
}

static void mask_clear(struct mask *m, int c)
{
	m->w[c / 64] &= ~(UINT64_C(1) << (c % 64));
}

static bool mask_test(const struct mask *m, int c)
{
	return (m->w[c / 64] >> (c % 64)) & 1;
}

static int mask_first(const struct mask *m, int n)
{
	for (int c = 0; c < n; c++)
		if (mask_test(m, c))
			return c;
	return -1;
}

/* cpulist: "0-3,8,10-11" */
static char *mask_list(char *buf, const struct mask *m, int n)
{
	char *p = buf;

	*p = '\0';
	for (int c = 0; c < n; c++) {
		int e = c;

		if (!mask_test(m, c))
			continue;
		while (e + 1 < n && mask_test(m, e + 1))
			e++;
		p += sprintf(p, "%s%d", p == buf ? "" : ",", c);
		if (e > c)
			p += sprintf(p, "-%d", e);
		c = e;
	}
	return buf;
}

/* The kernel's %*pb with nr_cpu_ids bits: 32-bit hex groups, the top one
 * only as wide as the bits it holds. */
static char *mask_hex(char *buf, const struct mask *m, int n)
{
	char *p = buf;
	int chunks = (n + 31) / 32;

	for (int k = chunks - 1; k >= 0; k--) {
		uint32_t v = (uint32_t)(m->w[k / 2] >> (32 * (k % 2)));
		int bits = k == chunks - 1 ? n - 32 * k : 32;

		if (bits < 32)
			v &= (UINT32_C(1) << bits) - 1;
		if (k == chunks - 1)
			p += sprintf(p, "%0*x", (bits + 3) / 4, v);
		else
			p += sprintf(p, ",%08x", v);
	}
	return buf;
}

/* blk-mq's mq/N/cpu_list: "0, 1, 128, 129" */
static char *mask_blk(char *buf, const struct mask *m, int n)
{
	char *p = buf;

	*p = '\0';
	for (int c = 0; c < n; c++)
		if (mask_test(m, c))
			p += sprintf(p, "%s%d", p == buf ? "" : ", ", c);
	return buf;
}

/* ---- deterministic numbers ---------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static uint64_t hash3(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
	return mix(seed ^ mix(a * UINT64_C(0x100000001b3) ^ mix(b + 0x51 + mix(c + 0x3f))));
}

/* ---- the machine ---------------------------------------------------- */

enum kind {
	K_LEGACY,
	K_DMAR,
	K_PORT,
	K_AHCI,
	K_NVME_ADMIN,
	K_NVME_IO,
	K_NIC,
};

struct irq {
	unsigned num;
	enum kind kind;
	const char *chip;
	unsigned long hwirq;
	const char *flow; /* "edge", "fasteoi" */
	char action[64];
	struct mask aff; /* smp_affinity */
	bool hint;	 /* affinity_hint = aff, else zero */
	int eff;	 /* effective CPU */
	int node;
	int dev;       /* index into pcidevs, -1 */
	uint32_t base; /* count on the effective CPU at step 0 */
	uint32_t rate; /* per step on the effective CPU */
};

struct pcidev {
	char bdf[16];
	char path[160]; /* sys/devices/... */
	const char *driver;
	const char *cls, *vendor, *device;
	int node;
	bool msix;
	unsigned intx;		/* the irq file */
	int first_irq, nr_irqs; /* indexes into irqs[] */
};

struct nvme {
	int dev; /* pcidev */
	int nq;
	struct mask q[NVME_MAX_IOQ];
	int cpu2q[MAX_CPUS];
	int admin;		   /* irq index */
	int io0;		   /* irq index of q1 */
	uint32_t submit[MAX_CPUS]; /* I/Os per step by CPU */
};

struct gen {
	/* options */
	int ncpus, want_irqs, nnvme;
	uint64_t seed;
	long step;
	bool have_step, all_threads;
	const char *dir;

	/* topology */
	int ncores, npkg, cores_p0;
	int pkg_of[MAX_CPUS];
	struct mask pkg_cpus[2], all;
	int order[2][MAX_CPUS]; /* CPUs local to node n first */

	/* devices */
	struct irq *irqs;
	int nirqs, irq_cap;
	unsigned next_num;
	struct pcidev devs[MAX_NICS + MAX_NVME * 2 + 16];
	int ndevs;
	struct nvme nv[MAX_NVME];
	int ahci_dev, ahci_irq;
	int ahci_submit_cpu;
	uint32_t ahci_rate;
	uint64_t *totals; /* per IRQ, for proc/stat */
	uint32_t blk_rate[MAX_CPUS];

	/* output */
	int root;
	int fd;
	char cur[512];
	char *buf;
	size_t len, cap;
	uint64_t files;
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("fixturegen: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* snprintf that refuses to truncate: a cut path would write elsewhere. */
static void xsnprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void xsnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size)
		die("internal error: \"%.40s...\" does not fit %zu bytes", buf, size);
}

/* ---- output --------------------------------------------------------- */

/* Deepest first: most parents already exist, so this is one mkdirat. */
static void mkdir_p(struct gen *g, const char *path)
{
	char tmp[512];
	char *s;

	if (mkdirat(g->root, path, 0755) == 0 || errno == EEXIST)
		return;
	if (errno != ENOENT)
		die("%s/%s: %s", g->dir, path, strerror(errno));
	xsnprintf(tmp, sizeof(tmp), "%s", path);
	s = strrchr(tmp, '/');
	if (!s)
		die("%s/%s: %s", g->dir, path, strerror(ENOENT));
	*s = '\0';
	mkdir_p(g, tmp);
	if (mkdirat(g->root, path, 0755) < 0 && errno != EEXIST)
		die("%s/%s: %s", g->dir, path, strerror(errno));
}

static void parent_dir(struct gen *g, const char *path)
{
	char tmp[512];
	char *s;

	xsnprintf(tmp, sizeof(tmp), "%s", path);
	s = strrchr(tmp, '/');
	if (!s)
		return;
	*s = '\0';
	mkdir_p(g, tmp);
}

static void flush(struct gen *g)
{
	size_t off = 0;

	while (off < g->len) {
		ssize_t n = write(g->fd, g->buf + off, g->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("%s/%s: %s", g->dir, g->cur, strerror(errno));
		off += (size_t)n;
	}
	g->len = 0;
}

static void reserve(struct gen *g, size_t n)
{
	if (g->len + n <= g->cap)
		return;
	flush(g);
	if (n > g->cap) {
		g->buf = realloc(g->buf, n);
		if (!g->buf)
			die("out of memory");
		g->cap = n;
	}
}

static void fopen_(struct gen *g, mode_t mode, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fopen_(struct gen *g, mode_t mode, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g->cur, sizeof(g->cur), fmt, ap);
	va_end(ap);
	g->fd = openat(g->root, g->cur, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (g->fd < 0 && errno == ENOENT) {
		parent_dir(g, g->cur);
		g->fd = openat(g->root, g->cur, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	}
	if (g->fd < 0)
		die("%s/%s: %s", g->dir, g->cur, strerror(errno));
	g->len = 0;
}

static void fclose_(struct gen *g)
{
	flush(g);
	if (close(g->fd) < 0)
		die("%s/%s: %s", g->dir, g->cur, strerror(errno));
	g->fd = -1;
	g->files++;
}

static void out(struct gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(struct gen *g, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(g->buf + g->len, g->cap - g->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		die("format error");
	if ((size_t)n >= g->cap - g->len) {
		reserve(g, (size_t)n + 1);
		va_start(ap, fmt);
		vsnprintf(g->buf + g->len, g->cap - g->len, fmt, ap);
		va_end(ap);
	}
	g->len += (size_t)n;
}

static void outs(struct gen *g, const char *s)
{
	size_t n = strlen(s);

	reserve(g, n);
	memcpy(g->buf + g->len, s, n);
	g->len += n;
}

/* "%10u " without printf: /proc/interrupts of 1,024 CPUs x 8,000 IRQs
 * is 8 million of these. */
static void out_u10(struct gen *g, uint32_t v)
{
	char *p;

	reserve(g, 11);
	p = g->buf + g->len;
	memset(p, ' ', 11);
	for (int i = 9; i >= 0; i--) {
		p[i] = (char)('0' + v % 10);
		v /= 10;
		if (!v)
			break;
	}
	g->len += 11;
}

/* A one-line file. */
static void wr(struct gen *g, const char *path, mode_t mode, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void wr(struct gen *g, const char *path, mode_t mode, const char *fmt, ...)
{
	va_list ap;
	int n;

	fopen_(g, mode, "%s", path);
	va_start(ap, fmt);
	n = vsnprintf(g->buf, g->cap, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= g->cap)
		die("%s: content too long", path);
	g->len = (size_t)n;
	fclose_(g);
}

/* A relative symlink at @path to @target. */
static void lnk(struct gen *g, const char *path, const char *target)
{
	if (symlinkat(target, g->root, path) == 0)
		return;
	if (errno == ENOENT) {
		parent_dir(g, path);
		if (symlinkat(target, g->root, path) == 0)
			return;
	}
	die("%s/%s: %s", g->dir, path, strerror(errno));
}

/* "../" once per component of @dir below sys/, to reach sys/ again. */
static char *ups_to_sys(char *buf, const char *dir)
{
	const char *p = dir + strlen("sys/");

	buf[0] = '\0';
	strcat(buf, "../");
	for (; *p; p++)
		if (*p == '/')
			strcat(buf, "../");
	return buf;
}

/* ---- topology ------------------------------------------------------- */

static void build_topology(struct gen *g)
{
	int n = g->ncpus;

	g->ncores = n / 2;
	g->npkg = g->ncores > 1 ? 2 : 1;
	g->cores_p0 = (g->ncores + 1) / 2;
	memset(g->pkg_cpus, 0, sizeof(g->pkg_cpus));
	memset(&g->all, 0, sizeof(g->all));
	for (int c = 0; c < n; c++) {
		int core = c % g->ncores;

		g->pkg_of[c] = core < g->cores_p0 ? 0 : 1;
		mask_set(&g->pkg_cpus[g->pkg_of[c]], c);
		mask_set(&g->all, c);
	}
	for (int node = 0; node < g->npkg; node++) {
		int k = 0;

		for (int c = 0; c < n; c++)
			if (g->pkg_of[c] == node)
				g->order[node][k++] = c;
		for (int c = 0; c < n; c++)
			if (g->pkg_of[c] != node)
				g->order[node][k++] = c;
	}
}

static int sibling(const struct gen *g, int c)
{
	return c < g->ncores ? c + g->ncores : c - g->ncores;
}

static int core_of(const struct gen *g, int c)
{
	return c % g->ncores;
}

/* ---- IRQs ----------------------------------------------------------- */

static struct irq *new_irq(struct gen *g, unsigned num, enum kind kind, const char *chip,
			   unsigned long hwirq, const char *flow)
{
	struct irq *q;

	if (g->nirqs == g->irq_cap) {
		g->irq_cap = g->irq_cap ? g->irq_cap * 2 : 256;
		g->irqs = realloc(g->irqs, sizeof(*g->irqs) * g->irq_cap);
		if (!g->irqs)
			die("out of memory");
	}
	q = &g->irqs[g->nirqs++];
	memset(q, 0, sizeof(*q));
	q->num = num;
	q->kind = kind;
	q->chip = chip;
	q->hwirq = hwirq;
	q->flow = flow;
	q->dev = -1;
	q->node = 0;
	q->aff = g->all;
	q->eff = (int)(hash3(g->seed, num, 0xeff, 0) % (uint64_t)g->ncpus);
	q->base = (uint32_t)(hash3(g->seed, num, 0xba5e, 0) % 3000000);
	q->rate = (uint32_t)(hash3(g->seed, num, 0x4a7e, 0) % 200);
	return q;
}

static void single_cpu(struct irq *q, int cpu)
{
	memset(&q->aff, 0, sizeof(q->aff));
	mask_set(&q->aff, cpu);
	q->eff = cpu;
}

/* x86 PCI-MSI hwirq: requester id << 11 | vector index. */
static unsigned long msi_hwirq(const char *bdf, int index)
{
	unsigned dom, bus, dev, fn;

	if (sscanf(bdf, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
		return (unsigned long)index;
	return ((unsigned long)((bus << 8) | (dev << 3) | fn) << 11) | (unsigned long)index |
	       ((unsigned long)dom << 27);
}

static int add_dev(struct gen *g, const char *bdf, const char *parent, const char *driver,
		   const char *cls, const char *vendor, const char *device, int node, bool msix)
{
	struct pcidev *d;

	if (g->ndevs >= (int)(sizeof(g->devs) / sizeof(g->devs[0])))
		die("too many PCI devices");
	d = &g->devs[g->ndevs];
	memset(d, 0, sizeof(*d));
	xsnprintf(d->bdf, sizeof(d->bdf), "%s", bdf);
	xsnprintf(d->path, sizeof(d->path), "%s/%s", parent, bdf);
	d->driver = driver;
	d->cls = cls;
	d->vendor = vendor;
	d->device = device;
	d->node = node;
	d->msix = msix;
	d->intx = 16 + (unsigned)(hash3(g->seed, (uint64_t)g->ndevs, 0x1a7, 0) % 8);
	d->first_irq = -1;
	return g->ndevs++;
}

static struct irq *dev_irq(struct gen *g, int dev, const char *action)
{
	struct pcidev *d = &g->devs[dev];
	int index = d->first_irq < 0 ? 0 : g->nirqs - d->first_irq;
	struct irq *q =
		new_irq(g, g->next_num++, K_NIC, "IR-PCI-MSI", msi_hwirq(d->bdf, index), "edge");

	if (d->first_irq < 0)
		d->first_irq = g->nirqs - 1;
	d->nr_irqs++;
	q->dev = dev;
	q->node = d->node;
	xsnprintf(q->action, sizeof(q->action), "%s", action);
	if (!d->msix)
		d->intx = q->num; /* MSI (not MSI-X) moves pdev->irq to the vector */
	return q;
}

/*
 * The kernel's group_cpus_evenly(): groups per node in proportion to the
 * node's CPUs, then within a node consecutive CPUs, SMT siblings together.
 */
static void spread(struct gen *g, struct nvme *nv)
{
	int ngrp[2] = { 0, 0 }, ncpu[2] = { 0, 0 };
	int numgrps = nv->nq, remaining = g->ncpus, curgrp = 0;
	int sorted[2] = { 0, 1 };

	for (int c = 0; c < g->ncpus; c++)
		ncpu[g->pkg_of[c]]++;
	if (g->npkg == 2 && ncpu[1] < ncpu[0]) {
		sorted[0] = 1;
		sorted[1] = 0;
	}
	for (int i = 0; i < g->npkg; i++) {
		int node = sorted[i];
		int k = (int)((long)numgrps * ncpu[node] / remaining);

		ngrp[node] = k > 1 ? k : 1;
		numgrps -= ngrp[node];
		remaining -= ncpu[node];
	}
	memset(nv->q, 0, sizeof(nv->q));
	for (int node = 0; node < g->npkg; node++) {
		struct mask nmsk = g->pkg_cpus[node];
		int per = ncpu[node] / ngrp[node], extra = ncpu[node] - per * ngrp[node];

		for (int v = 0; v < ngrp[node]; v++) {
			int want = per + (extra > 0 ? 1 : 0);
			struct mask *m = &nv->q[curgrp];

			if (extra > 0)
				extra--;
			while (want > 0) {
				int cpu = mask_first(&nmsk, g->ncpus), sib;

				if (cpu < 0)
					break;
				mask_clear(&nmsk, cpu);
				mask_set(m, cpu);
				want--;
				sib = sibling(g, cpu);
				if (want > 0 && sib != cpu && mask_test(&nmsk, sib)) {
					mask_clear(&nmsk, sib);
					mask_set(m, sib);
					want--;
				}
			}
			if (++curgrp >= nv->nq)
				curgrp = 0;
		}
	}
	for (int c = 0; c < g->ncpus; c++)
		nv->cpu2q[c] = 0;
	for (int q = 0; q < nv->nq; q++)
		for (int c = 0; c < g->ncpus; c++)
			if (mask_test(&nv->q[q], c))
				nv->cpu2q[c] = q;
}

struct legacy {
	unsigned num;
	unsigned long hwirq;
	const char *flow, *action;
};

static const struct legacy legacy[] = {
	{ 0, 2, "edge", "timer" }, { 3, 3, "edge", "ttyS1" },	{ 4, 4, "edge", "ttyS0" },
	{ 8, 8, "edge", "rtc0" },  { 9, 9, "fasteoi", "acpi" }, { 16, 16, "fasteoi", "i801_smbus" },
};
#define NR_LEGACY ((int)(sizeof(legacy) / sizeof(legacy[0])))

static int nvme_queues(const struct gen *g)
{
	return g->ncpus < NVME_MAX_IOQ ? g->ncpus : NVME_MAX_IOQ;
}

static int nic_vectors(const struct gen *g)
{
	return 1 + (g->ncpus < NIC_MAX_QUEUES ? g->ncpus : NIC_MAX_QUEUES);
}

/* NIC i: node i % npkg, its own root port every 8 functions. */
static bool nic_needs_port(const struct gen *g, int i)
{
	return (i / g->npkg) % 8 == 0;
}

static void nic_bdf(const struct gen *g, int i, char *port_parent, char *port, char *bdf)
{
	static const unsigned rc[2] = { 0x17, 0x85 };
	int node = i % g->npkg, j = i / g->npkg;
	unsigned bus = rc[node] + 1 + (unsigned)(j / 8);

	sprintf(port_parent, "sys/devices/pci0000:%02x", rc[node]);
	sprintf(port, "0000:%02x:%02x.%d", rc[node], (unsigned)(j / 8 % 32), j / 8 / 32);
	sprintf(bdf, "0000:%02x:00.%d", bus, j % 8);
}

static void build_irqs(struct gen *g)
{
	int nq = nvme_queues(g), per_nic = nic_vectors(g), fixed, rest;
	int nic_vecs[MAX_NICS], nnics = 0;
	bool extra_legacy = false;
	char parent[192], port[32], bdf[32], name[64];

	fixed = NR_LEGACY + g->npkg + g->nnvme + 1 + g->nnvme * (1 + nq);
	if (g->want_irqs < fixed)
		die("--irqs %d is too few for this machine: its legacy lines, IOMMU, AHCI and %d "
		    "NVMe controllers with %d I/O queues each need %d",
		    g->want_irqs, g->nnvme, nq, fixed);
	rest = g->want_irqs - fixed;
	while (rest > 0) {
		int port_cost = nic_needs_port(g, nnics) ? 1 : 0, v;

		if (rest - port_cost < 1) {
			/* one IRQ left and no room for a new port and NIC */
			if (nnics)
				nic_vecs[nnics - 1]++;
			else
				extra_legacy = true;
			rest--;
			break;
		}
		if (nnics == MAX_NICS)
			die("--irqs %d is too many for %d CPUs: it would take more than %d NICs",
			    g->want_irqs, g->ncpus, MAX_NICS);
		rest -= port_cost;
		v = rest < per_nic ? rest : per_nic;
		nic_vecs[nnics++] = v;
		rest -= v;
	}

	/* legacy IO-APIC pins */
	for (int i = 0; i < NR_LEGACY; i++) {
		struct irq *q = new_irq(g, legacy[i].num, K_LEGACY, "IR-IO-APIC", legacy[i].hwirq,
					legacy[i].flow);

		xsnprintf(q->action, sizeof(q->action), "%s", legacy[i].action);
		if (legacy[i].num == 0)
			q->eff = 0;
		q->rate = legacy[i].num == 4 ? 3 : 0;
	}
	if (extra_legacy) {
		struct irq *q = new_irq(g, 23, K_LEGACY, "IR-IO-APIC", 23, "fasteoi");

		xsnprintf(q->action, sizeof(q->action), "ehci_hcd:usb1");
	}
	g->next_num = 24;
	for (int p = 0; p < g->npkg; p++) {
		struct irq *q =
			new_irq(g, g->next_num++, K_DMAR, "DMAR-MSI", (unsigned long)p, "edge");

		xsnprintf(q->action, sizeof(q->action), "dmar%d", p);
		q->node = p;
		q->rate = 0;
	}

	/* root ports probe first: NVMe ports, then NIC ports */
	for (int k = 0; k < g->nnvme; k++) {
		int node = k % g->npkg, j = k / g->npkg;
		unsigned rc = node ? 0xd7 : 0x5d;
		int d;

		xsnprintf(parent, sizeof(parent), "sys/devices/pci0000:%02x", rc);
		xsnprintf(port, sizeof(port), "0000:%02x:%02x.0", rc, (unsigned)j);
		d = add_dev(g, port, parent, "pcieport", "0x060400", "0x8086", "0x2030", node,
			    false);
		dev_irq(g, d, "PCIe PME, aerdrv")->kind = K_PORT;
	}
	for (int i = 0; i < nnics; i++) {
		int d;

		if (!nic_needs_port(g, i))
			continue;
		nic_bdf(g, i, parent, port, bdf);
		d = add_dev(g, port, parent, "pcieport", "0x060400", "0x8086", "0x2030",
			    i % g->npkg, false);
		dev_irq(g, d, "PCIe PME, aerdrv")->kind = K_PORT;
	}

	/* AHCI: one non-managed MSI, all CPUs allowed */
	g->ahci_dev = add_dev(g, "0000:00:17.0", "sys/devices/pci0000:00", "ahci", "0x010601",
			      "0x8086", "0xa182", 0, false);
	dev_irq(g, g->ahci_dev, "ahci[0000:00:17.0]")->kind = K_AHCI;
	g->ahci_irq = g->nirqs - 1;

	/* NICs */
	for (int i = 0, eth = 0; i < nnics; i++) {
		int node = i % g->npkg, d, v = nic_vecs[i];
		bool mlx = i % 2 == 0;
		char pp[256];

		nic_bdf(g, i, parent, port, bdf);
		xsnprintf(pp, sizeof(pp), "%s/%s", parent, port);
		d = add_dev(g, bdf, pp, mlx ? "mlx5_core" : "ixgbe", "0x020000",
			    mlx ? "0x15b3" : "0x8086", mlx ? "0x1017" : "0x10fb", node, true);
		for (int k = 0; k < v; k++) {
			struct irq *q;

			if (mlx && k == 0)
				xsnprintf(name, sizeof(name), "mlx5_async0@pci:%s", bdf);
			else if (mlx)
				xsnprintf(name, sizeof(name), "mlx5_comp%d@pci:%s", k - 1, bdf);
			else if (k == v - 1 && v > 1)
				xsnprintf(name, sizeof(name), "eth%d", eth);
			else
				xsnprintf(name, sizeof(name), "eth%d-TxRx-%d", eth, k);
			q = dev_irq(g, d, name);
			q->rate = (uint32_t)(hash3(g->seed, q->num, 0x4e7, 0) % 20000);
			/* queue vectors carry the driver's hint: one CPU each,
			 * local node first */
			if ((mlx && k > 0) || (!mlx && !(k == v - 1 && v > 1))) {
				int qi = mlx ? k - 1 : k;

				single_cpu(q, g->order[node][qi % g->ncpus]);
				q->hint = true;
			} else {
				q->rate = 1 + q->rate % 50;
			}
		}
		if (!mlx)
			eth++;
	}

	/* NVMe: admin vector, then one managed vector per hw queue */
	for (int k = 0; k < g->nnvme; k++) {
		struct nvme *nv = &g->nv[k];
		int node = k % g->npkg, j = k / g->npkg;
		unsigned rc = node ? 0xd7 : 0x5d;
		struct irq *q;

		xsnprintf(parent, sizeof(parent), "sys/devices/pci0000:%02x/0000:%02x:%02x.0", rc,
			  rc, (unsigned)j);
		xsnprintf(bdf, sizeof(bdf), "0000:%02x:00.0", rc + 1 + (unsigned)j);
		nv->dev =
			add_dev(g, bdf, parent, "nvme", "0x010802", "0x144d", "0xa80a", node, true);
		nv->nq = nq;
		spread(g, nv);
		xsnprintf(name, sizeof(name), "nvme%dq0", k);
		q = dev_irq(g, nv->dev, name);
		q->kind = K_NVME_ADMIN;
		q->rate = 1;
		nv->admin = g->nirqs - 1;
		nv->io0 = g->nirqs;
		for (int i = 0; i < nq; i++) {
			xsnprintf(name, sizeof(name), "nvme%dq%d", k, i + 1);
			q = dev_irq(g, nv->dev, name);
			q->kind = K_NVME_IO;
			q->aff = nv->q[i];
			q->eff = mask_first(&nv->q[i], g->ncpus);
			q->node = g->pkg_of[q->eff];
			q->rate = 0;
		}
	}
	if (g->nirqs != g->want_irqs)
		die("internal error: planned %d IRQs, made %d", g->want_irqs, g->nirqs);
}

/*
 * The workload one step stands for: every CPU of the controller's package
 * submits to each NVMe controller, one CPU reads from sda; each I/O
 * completes with one interrupt on the effective CPU of the vector that
 * serves the submitting CPU's queue, and raises a BLOCK softirq there.
 */
static void build_workload(struct gen *g)
{
	memset(g->blk_rate, 0, sizeof(g->blk_rate));
	for (int k = 0; k < g->nnvme; k++) {
		struct nvme *nv = &g->nv[k];
		int node = g->devs[nv->dev].node;

		for (int c = 0; c < g->ncpus; c++) {
			struct irq *q = &g->irqs[nv->io0 + nv->cpu2q[c]];
			uint32_t r = 0;

			if (g->pkg_of[c] == node)
				r = 200 +
				    (uint32_t)(hash3(g->seed, (uint64_t)k, (uint64_t)c, 0x5b) %
					       1800);
			nv->submit[c] = r;
			q->rate += r;
			g->blk_rate[q->eff] += r;
		}
	}
	g->ahci_submit_cpu = 3 % g->ncpus;
	g->ahci_rate = 8000;
	g->irqs[g->ahci_irq].rate = g->ahci_rate;
	g->blk_rate[g->irqs[g->ahci_irq].eff] += g->ahci_rate;
}

static uint32_t irq_count(const struct gen *g, const struct irq *q, int c)
{
	uint64_t h;

	if (c == q->eff)
		return q->base + (uint32_t)((uint64_t)g->step * q->rate);
	h = hash3(g->seed, q->num, (uint64_t)c, 0xc0);
	/* counts left from before the affinity was last set */
	if ((h & 7) == 0 && mask_test(&q->aff, c))
		return (uint32_t)((h >> 40) % 2000);
	/* and a few from early boot anywhere */
	if ((h & 63) == 1)
		return (uint32_t)((h >> 32) % 50);
	return 0;
}

/* ---- /proc ----------------------------------------------------------- */

static unsigned kernel_nr_irqs(const struct gen *g)
{
	unsigned n = 424 + 8 * (unsigned)g->ncpus;

	for (int i = 0; i < g->nirqs; i++)
		if (g->irqs[i].num + 1 > n)
			n = g->irqs[i].num + 1;
	return n;
}

static int prec_of(unsigned nr_irqs)
{
	int prec = 3;

	for (unsigned j = 1000; prec < 10 && j <= nr_irqs; ++prec)
		j *= 10;
	return prec;
}

struct ipi {
	const char *name, *desc;
	uint32_t base, rate;
};

static const struct ipi ipis[] = {
	{ "NMI", "Non-maskable interrupts", 40, 1 },
	{ "LOC", "Local timer interrupts", 900000, 250 },
	{ "SPU", "Spurious interrupts", 0, 0 },
	{ "PMI", "Performance monitoring interrupts", 40, 1 },
	{ "IWI", "IRQ work interrupts", 3000, 2 },
	{ "RTR", "APIC ICR read retries", 0, 0 },
	{ "RES", "Rescheduling interrupts", 50000, 120 },
	{ "CAL", "Function call interrupts", 20000, 40 },
	{ "TLB", "TLB shootdowns", 8000, 10 },
	{ "TRM", "Thermal event interrupts", 0, 0 },
	{ "THR", "Threshold APIC interrupts", 0, 0 },
	{ "DFR", "Deferred Error APIC interrupts", 0, 0 },
	{ "MCE", "Machine check exceptions", 0, 0 },
	{ "MCP", "Machine check polls", 90, 0 },
	{ "ERR", NULL, 0, 0 },
	{ "MIS", NULL, 0, 0 },
	{ "PIN", "Posted-interrupt notification event", 0, 0 },
	{ "NPI", "Nested posted-interrupt event", 0, 0 },
	{ "PIW", "Posted-interrupt wakeup event", 0, 0 },
};

/* Exactly show_interrupts() and arch_show_interrupts() of x86 6.1. */
static void write_interrupts(struct gen *g)
{
	int prec = prec_of(kernel_nr_irqs(g));

	fopen_(g, 0444, "proc/interrupts");
	out(g, "%*s", prec + 8, "");
	for (int c = 0; c < g->ncpus; c++)
		out(g, "CPU%-8d", c);
	outs(g, "\n");
	for (int i = 0; i < g->nirqs; i++) {
		const struct irq *q = &g->irqs[i];
		uint64_t total = 0;

		out(g, "%*u: ", prec, q->num);
		for (int c = 0; c < g->ncpus; c++) {
			uint32_t v = irq_count(g, q, c);

			total += v;
			out_u10(g, v);
		}
		g->totals[i] = total;
		out(g, " %8s %*lu-%-8s  %s\n", q->chip, prec, q->hwirq, q->flow, q->action);
	}
	for (size_t k = 0; k < sizeof(ipis) / sizeof(ipis[0]); k++) {
		const struct ipi *p = &ipis[k];

		if (!p->desc) {
			out(g, "%*s: %10u\n", prec, p->name, 0u);
			continue;
		}
		out(g, "%*s: ", prec, p->name);
		for (int c = 0; c < g->ncpus; c++) {
			uint32_t base = p->base ? (uint32_t)(hash3(g->seed, k, (uint64_t)c, 0x191) %
							     (p->base + 1))
						: 0;

			out_u10(g, base + (uint32_t)((uint64_t)g->step * p->rate));
		}
		out(g, "  %s\n", p->desc);
	}
	fclose_(g);
}

static void write_irq_dir(struct gen *g, unsigned num, const struct mask *aff, bool hint, int eff,
			  int node)
{
	static char list[8192], hex[512];
	struct mask none, em;
	char dir[64], path[96];

	memset(&none, 0, sizeof(none));
	memset(&em, 0, sizeof(em));
	if (eff >= 0)
		mask_set(&em, eff);
	xsnprintf(dir, sizeof(dir), "proc/irq/%u", num);
	mkdir_p(g, dir);
	/* 6.1 leaves smp_affinity 0644 even on managed vectors; writes fail
	 * with EIO. */
	xsnprintf(path, sizeof(path), "%s/smp_affinity", dir);
	wr(g, path, 0644, "%s\n", mask_hex(hex, aff, g->ncpus));
	xsnprintf(path, sizeof(path), "%s/smp_affinity_list", dir);
	wr(g, path, 0644, "%s\n", mask_list(list, aff, g->ncpus));
	xsnprintf(path, sizeof(path), "%s/effective_affinity", dir);
	wr(g, path, 0444, "%s\n", mask_hex(hex, &em, g->ncpus));
	xsnprintf(path, sizeof(path), "%s/effective_affinity_list", dir);
	wr(g, path, 0444, "%s\n", mask_list(list, &em, g->ncpus));
	xsnprintf(path, sizeof(path), "%s/node", dir);
	wr(g, path, 0444, "%d\n", node);
	xsnprintf(path, sizeof(path), "%s/affinity_hint", dir);
	wr(g, path, 0444, "%s\n", mask_hex(hex, hint ? aff : &none, g->ncpus));
}

static void write_proc_irq(struct gen *g)
{
	static char hex[512];
	bool have[16] = { false };

	for (int i = 0; i < g->nirqs; i++) {
		const struct irq *q = &g->irqs[i];

		if (q->num < 16)
			have[q->num] = true;
		write_irq_dir(g, q->num, &q->aff, q->hint, q->eff, q->node);
	}
	/* legacy descriptors exist without a handler */
	for (unsigned n = 0; n < 16; n++)
		if (!have[n])
			write_irq_dir(g, n, &g->all, false, -1, 0);
	wr(g, "proc/irq/default_smp_affinity", 0644, "%s\n", mask_hex(hex, &g->all, g->ncpus));
}

/*
 * /sys/kernel/irq/N/per_cpu_count, exactly per_cpu_count_show() of
 * kernel/irq/irqdesc.c (6.1, CONFIG_SPARSE_IRQ): "%u" per possible CPU
 * joined by ",", then "\n", each by scnprintf(buf + ret, PAGE_SIZE - ret):
 * past PAGE_SIZE - 1 bytes the text is cut, mid-number, and the newline
 * is lost. The generated machine has every possible CPU online.
 */
#define KERNEL_PAGE_SIZE 4096

static void write_per_cpu_count(struct gen *g, unsigned num, const struct irq *q)
{
	char dir[64], path[96], buf[KERNEL_PAGE_SIZE];
	size_t ret = 0;

	for (int c = 0; c < g->ncpus; c++) {
		int k = snprintf(buf + ret, sizeof(buf) - ret, "%s%u", c ? "," : "", q ? irq_count(g, q, c) : 0u);

		ret += (size_t)k < sizeof(buf) - ret ? (size_t)k : sizeof(buf) - ret - 1;
	}
	if (ret + 1 < sizeof(buf))
		buf[ret++] = '\n';
	xsnprintf(dir, sizeof(dir), "sys/kernel/irq/%u", num);
	mkdir_p(g, dir);
	xsnprintf(path, sizeof(path), "%s/per_cpu_count", dir);
	fopen_(g, 0444, "%s", path);
	reserve(g, ret);
	memcpy(g->buf + g->len, buf, ret);
	g->len += ret;
	fclose_(g);
}

static void write_sys_kernel_irq(struct gen *g)
{
	bool have[16] = { false };

	for (int i = 0; i < g->nirqs; i++) {
		if (g->irqs[i].num < 16)
			have[g->irqs[i].num] = true;
		write_per_cpu_count(g, g->irqs[i].num, &g->irqs[i]);
	}
	/* the legacy descriptors of write_proc_irq(), without a handler */
	for (unsigned n = 0; n < 16; n++)
		if (!have[n])
			write_per_cpu_count(g, n, NULL);
}

static const char *const softirq_names[] = { "HI",	 "TIMER",   "NET_TX", "NET_RX",	 "BLOCK",
					     "IRQ_POLL", "TASKLET", "SCHED",  "HRTIMER", "RCU" };

static void write_softirqs(struct gen *g)
{
	fopen_(g, 0444, "proc/softirqs");
	outs(g, "                    ");
	for (int c = 0; c < g->ncpus; c++)
		out(g, "CPU%-8d", c);
	outs(g, "\n");
	for (int k = 0; k < 10; k++) {
		out(g, "%12s:", softirq_names[k]);
		for (int c = 0; c < g->ncpus; c++) {
			uint64_t h = hash3(g->seed, (uint64_t)k, (uint64_t)c, 0x50f7);
			uint32_t v, rate;

			switch (k) {
			case 1: /* TIMER */
				v = (uint32_t)(h % 400000);
				rate = 250;
				break;
			case 3: /* NET_RX */
				v = (uint32_t)(h % 2000000);
				rate = (uint32_t)(h >> 40) % 5000;
				break;
			case 4: /* BLOCK */
				v = (uint32_t)(h % 1000000);
				rate = g->blk_rate[c];
				break;
			case 7: /* SCHED */
				v = (uint32_t)(h % 800000);
				rate = 300;
				break;
			case 9: /* RCU */
				v = (uint32_t)(h % 600000);
				rate = 200;
				break;
			default:
				v = (uint32_t)(h % 100);
				rate = 0;
			}
			out(g, " %10u", v + (uint32_t)((uint64_t)g->step * rate));
		}
		outs(g, "\n");
	}
	fclose_(g);
}

static void write_stat(struct gen *g)
{
	uint64_t sum[10] = { 0 }, intr = 0;
	unsigned nr = kernel_nr_irqs(g);
	uint64_t *cpu = calloc((size_t)g->ncpus * 10, sizeof(uint64_t));
	int i = 0;

	if (!cpu)
		die("out of memory");
	for (int c = 0; c < g->ncpus; c++) {
		uint64_t h = hash3(g->seed, (uint64_t)c, 0x57a7, 0);
		uint64_t *v = &cpu[c * 10];

		v[0] = h % 500000 + (uint64_t)g->step * 30;		      /* user */
		v[2] = (h >> 20) % 200000 + (uint64_t)g->step * 10;	      /* system */
		v[3] = 5000000 + (h >> 40) % 100000 + (uint64_t)g->step * 55; /* idle */
		v[4] = (h >> 10) % 1000 + (uint64_t)g->step * 2;	      /* iowait */
		v[5] = (h >> 30) % 500 + (uint64_t)g->step;		      /* irq */
		v[6] = (h >> 50) % 800 + (uint64_t)g->step * 2;		      /* softirq */
		for (int k = 0; k < 10; k++)
			sum[k] += v[k];
	}
	fopen_(g, 0444, "proc/stat");
	out(g, "cpu  %lu %lu %lu %lu %lu %lu %lu %lu %lu %lu\n", (unsigned long)sum[0],
	    (unsigned long)sum[1], (unsigned long)sum[2], (unsigned long)sum[3],
	    (unsigned long)sum[4], (unsigned long)sum[5], (unsigned long)sum[6],
	    (unsigned long)sum[7], (unsigned long)sum[8], (unsigned long)sum[9]);
	for (int c = 0; c < g->ncpus; c++) {
		uint64_t *v = &cpu[c * 10];

		out(g, "cpu%d %lu %lu %lu %lu %lu %lu %lu %lu %lu %lu\n", c, (unsigned long)v[0],
		    (unsigned long)v[1], (unsigned long)v[2], (unsigned long)v[3],
		    (unsigned long)v[4], (unsigned long)v[5], (unsigned long)v[6],
		    (unsigned long)v[7], (unsigned long)v[8], (unsigned long)v[9]);
	}
	free(cpu);
	for (int k = 0; k < g->nirqs; k++)
		intr += g->totals[k];
	out(g, "intr %lu", (unsigned long)intr);
	for (unsigned n = 0; n < nr; n++) {
		uint64_t v = 0;

		while (i < g->nirqs && g->irqs[i].num < n)
			i++;
		if (i < g->nirqs && g->irqs[i].num == n)
			v = g->totals[i];
		out(g, " %lu", (unsigned long)v);
	}
	out(g, "\nctxt %lu\nbtime 1700000000\nprocesses %d\nprocs_running 2\nprocs_blocked 0\n",
	    (unsigned long)(123456789 + (uint64_t)g->step * 50000), 40000 + g->ncpus * 8);
	out(g, "softirq %lu 0 0 0 0 0 0 0 0 0 0\n", (unsigned long)(1000000 + g->step * 10000));
	fclose_(g);
}

struct disk {
	char name[32];
	unsigned major, minor;
	uint64_t ios_base, ios_rate;
	int parts;
};

static void diskstat_line(struct gen *g, const char *name, unsigned major, unsigned minor,
			  uint64_t rd, uint64_t wr_)
{
	out(g, "%4u %7u %s %lu %lu %lu %u %lu %lu %lu %u %u %u %u %lu %lu %lu %u %lu %u\n", major,
	    minor, name, (unsigned long)rd, 0ul, (unsigned long)(rd * 8),
	    (unsigned)(rd / 10 % 4000000000u), (unsigned long)wr_, (unsigned long)(wr_ / 4),
	    (unsigned long)(wr_ * 16), (unsigned)(wr_ / 5 % 4000000000u), 0u,
	    (unsigned)((rd + wr_) / 20 % 4000000000u), (unsigned)((rd + wr_) / 8 % 4000000000u),
	    0ul, 0ul, 0ul, 0u, 0ul, 0u);
}

static void write_diskstats(struct gen *g)
{
	fopen_(g, 0444, "proc/diskstats");
	for (int k = 0; k < g->nnvme; k++) {
		uint64_t rate = 0,
			 base = 1000000 + hash3(g->seed, (uint64_t)k, 0xd15c, 0) % 100000000;
		uint64_t rd, w;
		char name[32];

		for (int c = 0; c < g->ncpus; c++)
			rate += g->nv[k].submit[c];
		rd = base + (uint64_t)g->step * rate * 7 / 10;
		w = base / 3 + (uint64_t)g->step * (rate - rate * 7 / 10);
		xsnprintf(name, sizeof(name), "nvme%dn1", k);
		diskstat_line(g, name, 259, (unsigned)(k * 3), rd, w);
		xsnprintf(name, sizeof(name), "nvme%dn1p1", k);
		diskstat_line(g, name, 259, (unsigned)(k * 3 + 1), 300, 2);
		xsnprintf(name, sizeof(name), "nvme%dn1p2", k);
		diskstat_line(g, name, 259, (unsigned)(k * 3 + 2), rd - 300, w - 2);
	}
	{
		uint64_t rd = 250000 + (uint64_t)g->step * g->ahci_rate, w = 90000;

		diskstat_line(g, "sda", 8, 0, rd, w);
		diskstat_line(g, "sda1", 8, 1, 400, 10);
		diskstat_line(g, "sda2", 8, 2, rd - 400, w - 10);
		diskstat_line(g, "dm-0", 253, 0, rd - 500, w - 20);
	}
	fclose_(g);
}

static void write_task(struct gen *g, int pid, int ppid, const char *comm,
		       const struct mask *allowed, int cpu, unsigned policy, unsigned rtprio,
		       uint64_t stime, uint64_t vcsw, uint64_t nvcsw)
{
	static char list[8192], hex[512];
	char path[64];
	int prio = policy ? -(int)rtprio - 1 : 20, nice = 0;

	xsnprintf(path, sizeof(path), "proc/%d/comm", pid);
	wr(g, path, 0644, "%s\n", comm);
	xsnprintf(path, sizeof(path), "proc/%d/stat", pid);
	wr(g, path, 0444,
	   "%d (%s) S %d 0 0 0 -1 %u 0 0 0 0 %lu %lu 0 0 %d %d 1 0 %d 0 0 18446744073709551615 0 0 "
	   "0 0 0 0 0 2147483647 0 1 0 0 17 %d %u %u 0 0 0 0 0 0 0 0 0 0 0\n",
	   pid, comm, ppid, ppid == 2 ? 2129984u : 4194560u, 0ul, (unsigned long)stime, prio, nice,
	   500 + pid, cpu, rtprio, policy);
	xsnprintf(path, sizeof(path), "proc/%d/status", pid);
	fopen_(g, 0444, "%s", path);
	out(g,
	    "Name:\t%s\nUmask:\t0022\nState:\tS "
	    "(sleeping)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t%d\n"
	    "TracerPid:\t0\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nFDSize:\t64\nGroups:\t "
	    "\nNStgid:\t%d\n"
	    "NSpid:\t%d\nNSpgid:\t0\nNSsid:\t0\nThreads:\t1\nSigQ:\t0/1030000\n"
	    "SigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\nSigBlk:\t0000000000000000\n"
	    "SigIgn:\tffffffffffffffff\nSigCgt:\t0000000000000000\nCapInh:\t0000000000000000\n"
	    "CapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\n"
	    "CapAmb:\t0000000000000000\nNoNewPrivs:\t0\nSeccomp:\t0\nSeccomp_filters:\t0\n"
	    "Speculation_Store_Bypass:\tthread vulnerable\nSpeculationIndirectBranch:\tconditional "
	    "enabled\n",
	    comm, pid, pid, ppid, pid, pid);
	out(g, "Cpus_allowed:\t%s\n", mask_hex(hex, allowed, g->ncpus));
	out(g, "Cpus_allowed_list:\t%s\n", mask_list(list, allowed, g->ncpus));
	out(g, "Mems_allowed:\t%s\nMems_allowed_list:\t%s\n", g->npkg > 1 ? "00000003" : "00000001",
	    g->npkg > 1 ? "0-1" : "0");
	out(g, "voluntary_ctxt_switches:\t%lu\nnonvoluntary_ctxt_switches:\t%lu\n",
	    (unsigned long)vcsw, (unsigned long)nvcsw);
	fclose_(g);
}

static void write_tasks(struct gen *g)
{
	struct mask one;
	int pid = 3;
	char comm[64];

	write_task(g, 1, 0, "systemd", &g->all, 0, 0, 0, 9000 + (uint64_t)g->step, 80000, 3000);
	write_task(g, 2, 0, "kthreadd", &g->all, 1 % g->ncpus, 0, 0, 300, 9000, 10);
	for (int c = 0; c < g->ncpus; c++) {
		memset(&one, 0, sizeof(one));
		mask_set(&one, c);
		xsnprintf(comm, sizeof(comm), "ksoftirqd/%d", c);
		write_task(g, 14 + c * 8, 2, comm, &one, c, 0, 0, 100 + (uint64_t)g->step / 10,
			   5000 + (uint64_t)g->step * 3, 20);
		if (14 + c * 8 > pid)
			pid = 14 + c * 8;
	}
	pid += 100;
	/* IRQ threads (threadirqs): SCHED_FIFO 50, following the vector */
	for (int i = 0; i < g->nirqs; i++) {
		const struct irq *q = &g->irqs[i];
		uint64_t wakeups;

		if (q->kind == K_LEGACY && q->num == 0)
			continue; /* the timer is never threaded */
		if (!g->all_threads && q->kind != K_AHCI)
			continue;
		wakeups = 2000 + (uint64_t)g->step * q->rate * 9 / 10;
		memset(&one, 0, sizeof(one));
		mask_set(&one, q->eff);
		xsnprintf(comm, sizeof(comm), "irq/%u-%s", q->num, q->action);
		write_task(g, pid++, 2, comm, &one, q->eff, 1, 50, 40 + wakeups / 4000, wakeups,
			   12);
	}
	/* the workload itself */
	{
		memset(&one, 0, sizeof(one));
		mask_set(&one, g->ahci_submit_cpu);
		write_task(g, pid + 500, 1, "fio", &one, g->ahci_submit_cpu, 0, 0,
			   2000 + (uint64_t)g->step * 40, 90000 + (uint64_t)g->step * 8000, 400);
	}
}

static void write_proc(struct gen *g)
{
	write_interrupts(g);
	write_proc_irq(g);
	write_sys_kernel_irq(g);
	write_softirqs(g);
	write_stat(g);
	write_diskstats(g);
	write_tasks(g);
	wr(g, "proc/cmdline", 0444,
	   "BOOT_IMAGE=/boot/vmlinuz-6.1.0-18-amd64 root=/dev/mapper/vg0-root ro threadirqs "
	   "quiet\n");
}

/* ---- /sys ------------------------------------------------------------ */

static void write_cpus(struct gen *g)
{
	static char list[8192], hex[512], path[256];
	char all[32];
	int n = g->ncpus;

	xsnprintf(all, sizeof(all), "0-%d", n - 1);
	wr(g, "sys/devices/system/cpu/possible", 0444, "%s\n", all);
	wr(g, "sys/devices/system/cpu/present", 0444, "%s\n", all);
	wr(g, "sys/devices/system/cpu/online", 0444, "%s\n", all);
	wr(g, "sys/devices/system/cpu/offline", 0444, "\n");
	wr(g, "sys/devices/system/cpu/isolated", 0444, "\n");
	wr(g, "sys/devices/system/cpu/nohz_full", 0444, "(null)\n");
	wr(g, "sys/devices/system/cpu/kernel_max", 0444, "8191\n");

	for (int c = 0; c < n; c++) {
		struct mask smt, pkg = g->pkg_cpus[g->pkg_of[c]];
		int core = core_of(g, c), p = g->pkg_of[c];
		int core_id = p ? core - g->cores_p0 : core;
		unsigned khz =
			hash3(g->seed, (uint64_t)core, 0xf4e9, 0) % 8 == 0 ? 3600000 : 3500000;
		char d[96];

		memset(&smt, 0, sizeof(smt));
		mask_set(&smt, c);
		mask_set(&smt, sibling(g, c));
		xsnprintf(d, sizeof(d), "sys/devices/system/cpu/cpu%d", c);
		if (c > 0) {
			xsnprintf(path, sizeof(path), "%s/online", d);
			wr(g, path, 0644, "1\n");
		}
#define TOPO(file, ...)                                                \
	do {                                                           \
		xsnprintf(path, sizeof(path), "%s/topology/" file, d); \
		wr(g, path, 0444, __VA_ARGS__);                        \
	} while (0)
		TOPO("physical_package_id", "%d\n", p);
		TOPO("die_id", "0\n");
		TOPO("cluster_id", "%d\n", core * 2);
		TOPO("core_id", "%d\n", core_id);
		TOPO("core_cpus", "%s\n", mask_hex(hex, &smt, n));
		TOPO("core_cpus_list", "%s\n", mask_list(list, &smt, n));
		TOPO("thread_siblings", "%s\n", mask_hex(hex, &smt, n));
		TOPO("thread_siblings_list", "%s\n", mask_list(list, &smt, n));
		/* x86: a cluster is the L2 domain, here one core */
		TOPO("cluster_cpus", "%s\n", mask_hex(hex, &smt, n));
		TOPO("cluster_cpus_list", "%s\n", mask_list(list, &smt, n));
		TOPO("die_cpus", "%s\n", mask_hex(hex, &pkg, n));
		TOPO("die_cpus_list", "%s\n", mask_list(list, &pkg, n));
		TOPO("package_cpus", "%s\n", mask_hex(hex, &pkg, n));
		TOPO("package_cpus_list", "%s\n", mask_list(list, &pkg, n));
		TOPO("core_siblings", "%s\n", mask_hex(hex, &pkg, n));
		TOPO("core_siblings_list", "%s\n", mask_list(list, &pkg, n));
#undef TOPO
		for (int i = 0; i < 4; i++) {
			static const char *const type[] = { "Data", "Instruction", "Unified",
							    "Unified" };
			static const char *const size[] = { "48K", "32K", "2048K", "" };
			static const int level[] = { 1, 1, 2, 3 };
			const struct mask *sh = i < 3 ? &smt : &pkg;
			char l3[16];

			xsnprintf(l3, sizeof(l3), "%dK",
				  1536 * (g->ncores / g->npkg > 0 ? g->ncores / g->npkg : 1));
#define CACHE(file, ...)                                                       \
	do {                                                                   \
		xsnprintf(path, sizeof(path), "%s/cache/index%d/" file, d, i); \
		wr(g, path, 0444, __VA_ARGS__);                                \
	} while (0)
			CACHE("level", "%d\n", level[i]);
			CACHE("type", "%s\n", type[i]);
			CACHE("size", "%s\n", i == 3 ? l3 : size[i]);
			CACHE("id", "%d\n", i == 3 ? p : core);
			CACHE("shared_cpu_map", "%s\n", mask_hex(hex, sh, n));
			CACHE("shared_cpu_list", "%s\n", mask_list(list, sh, n));
#undef CACHE
		}
		/* intel_pstate: one policy per CPU; Turbo Boost Max 3.0
		 * favours some cores by a few percent */
		xsnprintf(path, sizeof(path),
			  "sys/devices/system/cpu/cpufreq/policy%d/related_cpus", c);
		wr(g, path, 0444, "%d\n", c);
		xsnprintf(path, sizeof(path),
			  "sys/devices/system/cpu/cpufreq/policy%d/affected_cpus", c);
		wr(g, path, 0444, "%d\n", c);
		xsnprintf(path, sizeof(path),
			  "sys/devices/system/cpu/cpufreq/policy%d/cpuinfo_max_freq", c);
		wr(g, path, 0444, "%u\n", khz);
		xsnprintf(path, sizeof(path),
			  "sys/devices/system/cpu/cpufreq/policy%d/cpuinfo_min_freq", c);
		wr(g, path, 0444, "800000\n");
		xsnprintf(path, sizeof(path),
			  "sys/devices/system/cpu/cpufreq/policy%d/scaling_driver", c);
		wr(g, path, 0444, "intel_pstate\n");
		xsnprintf(path, sizeof(path), "%s/cpufreq", d);
		xsnprintf(list, sizeof(list), "../cpufreq/policy%d", c);
		lnk(g, path, list);
		xsnprintf(path, sizeof(path), "%s/node%d", d, p);
		xsnprintf(list, sizeof(list), "../../node/node%d", p);
		lnk(g, path, list);
	}

	for (int p = 0; p < g->npkg; p++) {
		xsnprintf(path, sizeof(path), "sys/devices/system/node/node%d/cpulist", p);
		wr(g, path, 0444, "%s\n", mask_list(list, &g->pkg_cpus[p], n));
		xsnprintf(path, sizeof(path), "sys/devices/system/node/node%d/cpumap", p);
		wr(g, path, 0444, "%s\n", mask_hex(hex, &g->pkg_cpus[p], n));
	}
	xsnprintf(all, sizeof(all), g->npkg > 1 ? "0-1" : "0");
	wr(g, "sys/devices/system/node/online", 0444, "%s\n", all);
	wr(g, "sys/devices/system/node/possible", 0444, "%s\n", all);
	wr(g, "sys/devices/system/node/has_cpu", 0444, "%s\n", all);
	wr(g, "sys/devices/system/node/has_normal_memory", 0444, "%s\n", all);
}

static void write_pci(struct gen *g)
{
	static char list[8192], hex[512];
	char path[512], target[512], ups[128];

	for (int i = 0; i < g->ndevs; i++) {
		const struct pcidev *d = &g->devs[i];
		const struct mask *local = &g->pkg_cpus[d->node];

		mkdir_p(g, d->path);
		ups_to_sys(ups, d->path);
#define DEVF(file, ...)                                             \
	do {                                                        \
		xsnprintf(path, sizeof(path), "%s/" file, d->path); \
		wr(g, path, 0444, __VA_ARGS__);                     \
	} while (0)
		DEVF("vendor", "%s\n", d->vendor);
		DEVF("device", "%s\n", d->device);
		/* real functions have them, and irqbalance skips a device
		 * it cannot read them from */
		DEVF("subsystem_vendor", "%s\n", d->vendor);
		DEVF("subsystem_device", "%s\n", d->device);
		DEVF("class", "%s\n", d->cls);
		DEVF("irq", "%u\n", d->intx);
		DEVF("numa_node", "%d\n", d->node);
		DEVF("local_cpulist", "%s\n", mask_list(list, local, g->ncpus));
		DEVF("local_cpus", "%s\n", mask_hex(hex, local, g->ncpus));
		DEVF("enable", "1\n");
		DEVF("uevent", "DRIVER=%s\nPCI_CLASS=%lX\nPCI_ID=%s:%s\nPCI_SLOT_NAME=%s\n",
		     d->driver, strtoul(d->cls, NULL, 16), d->vendor + 2, d->device + 2, d->bdf);
#undef DEVF
		for (int j = 0; j < d->nr_irqs; j++) {
			xsnprintf(path, sizeof(path), "%s/msi_irqs/%u", d->path,
				  g->irqs[d->first_irq + j].num);
			wr(g, path, 0444, "%s\n", d->msix ? "msix" : "msi");
		}
		xsnprintf(path, sizeof(path), "%s/driver", d->path);
		xsnprintf(target, sizeof(target), "%sbus/pci/drivers/%s", ups, d->driver);
		lnk(g, path, target);
		xsnprintf(path, sizeof(path), "%s/subsystem", d->path);
		xsnprintf(target, sizeof(target), "%sbus/pci", ups);
		lnk(g, path, target);
		xsnprintf(path, sizeof(path), "sys/bus/pci/devices/%s", d->bdf);
		xsnprintf(target, sizeof(target), "../../../%s", d->path + strlen("sys/"));
		lnk(g, path, target);
		xsnprintf(path, sizeof(path), "sys/bus/pci/drivers/%s/%s", d->driver, d->bdf);
		xsnprintf(target, sizeof(target), "../../../../%s", d->path + strlen("sys/"));
		lnk(g, path, target);
	}
}

static void write_block_dev(struct gen *g, const char *name, const char *dir, unsigned major,
			    unsigned minor, bool rotational, const struct mask *queues, int nq,
			    const char *const *parts, int nparts, unsigned pminor0)
{
	static char list[16384];
	char path[512], target[512];

	xsnprintf(path, sizeof(path), "%s/dev", dir);
	wr(g, path, 0444, "%u:%u\n", major, minor);
	xsnprintf(path, sizeof(path), "%s/size", dir);
	wr(g, path, 0444, "%lu\n", rotational ? 7814037168ul : 7501476528ul);
	xsnprintf(path, sizeof(path), "%s/ro", dir);
	wr(g, path, 0444, "0\n");
	xsnprintf(path, sizeof(path), "%s/removable", dir);
	wr(g, path, 0444, "0\n");
	xsnprintf(path, sizeof(path), "%s/queue/rq_affinity", dir);
	wr(g, path, 0644, "1\n");
	xsnprintf(path, sizeof(path), "%s/queue/rotational", dir);
	wr(g, path, 0644, "%d\n", rotational ? 1 : 0);
	xsnprintf(path, sizeof(path), "%s/queue/scheduler", dir);
	wr(g, path, 0644, rotational ? "none [mq-deadline] \n" : "[none] mq-deadline \n");
	xsnprintf(path, sizeof(path), "%s/queue/nr_requests", dir);
	wr(g, path, 0644, "%d\n", rotational ? 64 : 1023);
	for (int q = 0; q < nq; q++) {
		xsnprintf(path, sizeof(path), "%s/mq/%d/cpu_list", dir, q);
		wr(g, path, 0444, "%s\n", mask_blk(list, &queues[q], g->ncpus));
		xsnprintf(path, sizeof(path), "%s/mq/%d/nr_tags", dir, q);
		wr(g, path, 0444, "%d\n", rotational ? 32 : 1023);
	}
	for (int i = 0; i < nparts; i++) {
		xsnprintf(path, sizeof(path), "%s/%s/dev", dir, parts[i]);
		wr(g, path, 0444, "%u:%u\n", major, pminor0 + (unsigned)i);
		xsnprintf(path, sizeof(path), "%s/%s/partition", dir, parts[i]);
		wr(g, path, 0444, "%d\n", i + 1);
		xsnprintf(path, sizeof(path), "sys/class/block/%s", parts[i]);
		xsnprintf(target, sizeof(target), "../../%s/%s", dir + strlen("sys/"), parts[i]);
		lnk(g, path, target);
	}
	xsnprintf(path, sizeof(path), "sys/block/%s", name);
	xsnprintf(target, sizeof(target), "../%s", dir + strlen("sys/"));
	lnk(g, path, target);
	xsnprintf(path, sizeof(path), "sys/class/block/%s", name);
	xsnprintf(target, sizeof(target), "../../%s", dir + strlen("sys/"));
	lnk(g, path, target);
}

static void write_storage(struct gen *g)
{
	char dir[512], path[512], target[512];

	/* sda behind libata: the disk's device is the scsi_device, whose
	 * driver (sd) is on the scsi bus */
	{
		const char *ahci = g->devs[g->ahci_dev].path;
		const char *const parts[] = { "sda1", "sda2" };
		char sdev[512], ups[128];

		xsnprintf(sdev, sizeof(sdev), "%s/ata1/host0/target0:0:0/0:0:0:0", ahci);
		xsnprintf(dir, sizeof(dir), "%s/block/sda", sdev);
		write_block_dev(g, "sda", dir, 8, 0, true, &g->all, 1, parts, 2, 1);
		xsnprintf(path, sizeof(path), "%s/device", dir);
		lnk(g, path, "../../../0:0:0:0");
		xsnprintf(path, sizeof(path), "%s/driver", sdev);
		xsnprintf(target, sizeof(target), "%sbus/scsi/drivers/sd", ups_to_sys(ups, sdev));
		lnk(g, path, target);
		xsnprintf(path, sizeof(path), "%s/vendor", sdev);
		wr(g, path, 0444, "ATA     \n");
		xsnprintf(path, sizeof(path), "%s/model", sdev);
		wr(g, path, 0444, "ST4000NM0035-1V4\n");
		xsnprintf(path, sizeof(path), "%s/ata1/host0/scsi_host/host0/proc_name", ahci);
		wr(g, path, 0444, "ahci\n");
	}
	for (int k = 0; k < g->nnvme; k++) {
		const struct nvme *nv = &g->nv[k];
		const char *pci = g->devs[nv->dev].path;
		char name[32], p1[32], p2[32], ctrl[512];
		const char *parts[] = { p1, p2 };

		xsnprintf(name, sizeof(name), "nvme%dn1", k);
		xsnprintf(p1, sizeof(p1), "nvme%dn1p1", k);
		xsnprintf(p2, sizeof(p2), "nvme%dn1p2", k);
		xsnprintf(ctrl, sizeof(ctrl), "%s/nvme/nvme%d", pci, k);
		xsnprintf(dir, sizeof(dir), "%s/%s", ctrl, name);
		write_block_dev(g, name, dir, 259, (unsigned)(k * 3), false, nv->q, nv->nq, parts,
				2, (unsigned)(k * 3 + 1));
		xsnprintf(path, sizeof(path), "%s/device", dir);
		xsnprintf(target, sizeof(target), "../../nvme%d", k);
		lnk(g, path, target);
		xsnprintf(path, sizeof(path), "%s/device", ctrl);
		xsnprintf(target, sizeof(target), "../../../%s", g->devs[nv->dev].bdf);
		lnk(g, path, target);
		xsnprintf(path, sizeof(path), "%s/numa_node", ctrl);
		wr(g, path, 0444, "%d\n", g->devs[nv->dev].node);
		xsnprintf(path, sizeof(path), "%s/model", ctrl);
		wr(g, path, 0444, "SAMSUNG MZQL27T6HBLA-00A07              \n");
	}
	/* a device-mapper volume on top, which the scan must skip */
	xsnprintf(dir, sizeof(dir), "sys/devices/virtual/block/dm-0");
	xsnprintf(path, sizeof(path), "%s/dev", dir);
	wr(g, path, 0444, "253:0\n");
	lnk(g, "sys/block/dm-0", "../devices/virtual/block/dm-0");
	lnk(g, "sys/class/block/dm-0", "../../devices/virtual/block/dm-0");
}

static void write_replay(struct gen *g)
{
	fopen_(g, 0444, "irqpilot/time_ns");
	out(g, "%lu\n", (unsigned long)(1000000000ul * (unsigned long)(g->step + 1)));
	fclose_(g);
	fopen_(g, 0444, "irqpilot/submit");
	for (int k = 0; k < g->nnvme; k++)
		for (int c = 0; c < g->ncpus; c++)
			if (g->nv[k].submit[c])
				out(g, "nvme%dn1 %d %lu\n", k, c,
				    (unsigned long)((uint64_t)g->step * g->nv[k].submit[c]));
	out(g, "sda %d %lu\n", g->ahci_submit_cpu,
	    (unsigned long)((uint64_t)g->step * g->ahci_rate));
	fclose_(g);
}

/* ---- main ------------------------------------------------------------ */

static void usage(FILE *f)
{
	fputs("usage: fixturegen --cpus N --irqs M [--nvme K] [--seed S] [--step T] "
	      "[--all-irq-threads] DIR\n"
	      "\n"
	      "Writes the proc/ and sys/ tree of a synthetic 2-socket x86 server into DIR\n"
	      "(which must not exist, or be empty).\n"
	      "  --cpus N          CPUs, even, 2..1024 (SMT pairs n and n+N/2)\n"
	      "  --irqs M          numbered IRQs in /proc/interrupts, at least 16\n"
	      "  --nvme K          NVMe controllers, 0..32 (default 1)\n"
	      "  --seed S          seed of the counts (default 1)\n"
	      "  --step T          counters after T seconds of a steady workload, and\n"
	      "                    irqpilot/{time_ns,submit} as in a replay step\n"
	      "  --all-irq-threads an IRQ thread for every device vector, not only AHCI's\n",
	      f);
}

static long parse_num(const char *opt, const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end)
		die("%s: \"%s\" is not a number", opt, s);
	if (v < lo || v > hi)
		die("%s: %ld is out of range (%ld..%ld)", opt, v, lo, hi);
	return v;
}

static void open_root(struct gen *g)
{
	DIR *d;
	struct dirent *e;

	if (mkdir(g->dir, 0755) < 0 && errno != EEXIST)
		die("%s: %s", g->dir, strerror(errno));
	g->root = open(g->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (g->root < 0)
		die("%s: %s", g->dir, strerror(errno));
	d = fdopendir(dup(g->root));
	if (!d)
		die("%s: %s", g->dir, strerror(errno));
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			die("%s: not empty; refusing to write into it", g->dir);
	closedir(d);
}

int main(int argc, char **argv)
{
	struct gen *g = calloc(1, sizeof(*g));

	if (!g)
		die("out of memory");
	g->nnvme = 1;
	g->seed = 1;
	g->fd = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(a, "--all-irq-threads") == 0) {
			g->all_threads = true;
			continue;
		}
		if (a[0] == '-' && a[1] == '-') {
			if (i + 1 >= argc)
				die("%s needs a value", a);
			if (strcmp(a, "--cpus") == 0)
				g->ncpus = (int)parse_num(a, argv[++i], 2, MAX_CPUS);
			else if (strcmp(a, "--irqs") == 0)
				g->want_irqs = (int)parse_num(a, argv[++i], 16, MAX_IRQS);
			else if (strcmp(a, "--nvme") == 0)
				g->nnvme = (int)parse_num(a, argv[++i], 0, MAX_NVME);
			else if (strcmp(a, "--seed") == 0)
				g->seed = (uint64_t)parse_num(a, argv[++i], 0, LONG_MAX);
			else if (strcmp(a, "--step") == 0) {
				g->step = parse_num(a, argv[++i], 0, 1000000);
				g->have_step = true;
			} else {
				usage(stderr);
				die("unknown option %s", a);
			}
			continue;
		}
		if (g->dir)
			die("more than one DIR given (%s, %s)", g->dir, a);
		g->dir = a;
	}
	if (!g->dir || !g->ncpus || !g->want_irqs) {
		usage(stderr);
		die("--cpus, --irqs and DIR are required");
	}
	if (g->ncpus % 2)
		die("--cpus %d: must be even (SMT pairs)", g->ncpus);

	umask(0);
	g->cap = 1 << 20;
	g->buf = malloc(g->cap);
	if (!g->buf)
		die("out of memory");
	build_topology(g);
	build_irqs(g);
	/* numbers were handed out in ascending order, as the kernel lists
	 * them; devices keep indexes into irqs[] */
	for (int i = 1; i < g->nirqs; i++)
		if (g->irqs[i].num <= g->irqs[i - 1].num)
			die("internal error: IRQ %u after %u", g->irqs[i].num, g->irqs[i - 1].num);
	build_workload(g);
	g->totals = calloc(g->nirqs, sizeof(uint64_t));
	if (!g->totals)
		die("out of memory");

	open_root(g);
	write_proc(g);
	write_cpus(g);
	write_pci(g);
	write_storage(g);
	if (g->have_step)
		write_replay(g);
	close(g->root);
	free(g->totals);
	free(g->irqs);
	free(g->buf);
	free(g);
	return 0;
}
