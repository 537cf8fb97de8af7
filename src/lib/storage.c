// SPDX-License-Identifier: GPL-2.0-or-later
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/macro.h"
#include "irqpilot/storage.h"

bool ip_blockdev_is_virtual(const char *name)
{
	/*
	 * sr (optical drives) is real hardware, but nobody's I/O latency
	 * depends on where a CD-ROM's interrupt lands, and ATAPI drives share
	 * the AHCI vector with the disks anyway, so listing them would only
	 * add noise to the policy's weights.
	 */
	static const char *const prefixes[] = { "loop", "ram", "zram", "dm-", "md", "nbd", "sr" };

	if (!name || !*name)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
		size_t n = strlen(prefixes[i]);

		if (strncmp(name, prefixes[i], n) != 0)
			continue;
		/* "md127", "md_d0"; but "mdisk"-style names are not md. */
		if (prefixes[i][n - 1] == '-' || name[n] == '\0' || name[n] == '_' ||
		    isdigit((unsigned char)name[n]))
			return true;
	}
	return false;
}

/* Digits up to the end of @s; -1 if @s is empty or holds anything else. */
static long digits_to_end(const char *s)
{
	long v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s) || v > 1000000)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v;
}

/* Skips a run of digits; NULL if there was none. */
static const char *skip_digits(const char *s)
{
	if (!isdigit((unsigned char)*s))
		return NULL;
	while (isdigit((unsigned char)*s))
		s++;
	return s;
}

int ip_vector_queue_from_name(const char *action, bool *admin)
{
	const char *p;
	long q;

	if (admin)
		*admin = false;
	if (!action)
		return -1;

	/* nvme: "nvme<ctrl>q<qid>", qid 0 is the admin queue, qid N serves hctx N-1 */
	if (strncmp(action, "nvme", 4) == 0 && (p = skip_digits(action + 4)) && *p == 'q') {
		q = digits_to_end(p + 1);
		if (q == 0) {
			if (admin)
				*admin = true;
			return -1;
		}
		if (q > 0)
			return (int)(q - 1);
		return -1;
	}

	/* virtio: "virtio<N>-req.<M>" (multi-queue), "virtio<N>-config" */
	if (strncmp(action, "virtio", 6) == 0 && (p = skip_digits(action + 6)) && *p == '-') {
		if (strcmp(p, "-config") == 0) {
			if (admin)
				*admin = true;
			return -1;
		}
		if (strncmp(p, "-req.", 5) == 0) {
			q = digits_to_end(p + 5);
			return q >= 0 ? (int)q : -1;
		}
		/* "-requests" (single-queue virtio-blk), "-virtqueues" (shared) */
		return -1;
	}

	/* mpi3mr, megaraid_sas, mpt3sas and others: "<name>-msix<M>" */
	p = strstr(action, "-msix");
	if (p) {
		const char *next;

		/* take the last occurrence, the one that ends the name */
		while ((next = strstr(p + 1, "-msix")))
			p = next;
		q = digits_to_end(p + 5);
		return q >= 0 ? (int)q : -1;
	}
	return -1;
}

/* "0000:00:1f.2", also 5+-digit domains behind VMD ("10000:e1:00.0"). */
static bool is_pci_bdf(const char *s)
{
	size_t n = 0;

	while (isxdigit((unsigned char)s[n]))
		n++;
	if (n < 4 || s[n] != ':')
		return false;
	s += n + 1;
	if (!isxdigit((unsigned char)s[0]) || !isxdigit((unsigned char)s[1]) || s[2] != ':')
		return false;
	s += 3;
	if (!isxdigit((unsigned char)s[0]) || !isxdigit((unsigned char)s[1]) || s[2] != '.')
		return false;
	return s[3] >= '0' && s[3] <= '7' && s[4] == '\0';
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Truncating copy; names that do not fit were checked by the callers. */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/*
 * Basename of the target of @dir/driver, and the bus it names: the link
 * always points into bus/<bus>/drivers/<driver>, which tells a platform
 * device from the scsi_device (bus "scsi", driver sd) below it even though
 * both live under sys/devices/platform/.
 */
static int read_driver(struct ip_root *r, const char *dir, char *out, size_t size, char *bus,
		       size_t bsize)
{
	_cleanup_free_ char *path = ip_asprintf("%s/driver", dir);
	_cleanup_free_ char *target = NULL;
	const char *p;
	int ret;

	if (!path)
		return -ENOMEM;
	ret = ip_root_readlink(r, path, &target);
	if (ret < 0)
		return ret;
	if (!*base_name(target))
		return -EINVAL;
	copy_str(out, size, base_name(target));
	bus[0] = '\0';
	p = strstr(target, "bus/");
	if (p && (p == target || p[-1] == '/')) {
		size_t n = strcspn(p + 4, "/");

		if (n < bsize && strncmp(p + 4 + n, "/drivers/", 9) == 0) {
			memcpy(bus, p + 4, n);
			bus[n] = '\0';
		}
	}
	return 0;
}

/* The sysfs directory a link names: ip_root_resolve() leaves a flattened
 * link that ends the path alone, so resolve "<path>/." instead. */
static int resolve_dir(struct ip_root *r, const char *path, char **out)
{
	_cleanup_free_ char *p = ip_asprintf("%s/.", path);

	if (!p)
		return -ENOMEM;
	return ip_root_resolve(r, p, out);
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* Numeric entries of a directory (mq/, msi_irqs/), sorted as numbers. */
static int list_numeric(struct ip_root *r, const char *dir, long **out, int *nout)
{
	char **names = NULL;
	size_t n = 0;
	long *v;
	int cnt = 0;
	int ret = ip_root_listdir(r, dir, &names, &n);

	if (ret < 0)
		return ret;
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v) {
		ip_strv_free(names, n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		long x = digits_to_end(names[i]);

		if (x >= 0)
			v[cnt++] = x;
	}
	ip_strv_free(names, n);
	qsort(v, cnt, sizeof(*v), cmp_long);
	*out = v;
	*nout = cnt;
	return 0;
}

/* The bus device (PCI function or platform device) behind a disk. */
struct busdev {
	char path[512];
	char driver[32];
	char virtio[32];        /* "virtio1" when a virtio device sits between */
	char virtio_driver[32]; /* "virtio_blk" */
	enum ip_bus bus;
};

static int find_busdev(struct ip_root *r, const char *disk, struct busdev *b, struct ip_diag *d)
{
	_cleanup_free_ char *devlink = ip_asprintf("%s/device", disk);
	_cleanup_free_ char *cur = NULL;

	memset(b, 0, sizeof(*b));
	if (!devlink)
		return -ENOMEM;
	/* NVMe and SCSI disks have a device link; others hang off their parent. */
	if (resolve_dir(r, devlink, &cur) < 0) {
		char *slash;

		cur = strdup(disk);
		if (!cur)
			return -ENOMEM;
		slash = strrchr(cur, '/');
		if (slash)
			*slash = '\0';
	}
	while (strncmp(cur, "sys/devices/", 12) == 0) {
		const char *base = base_name(cur);
		char drv[32], bus[32];
		char *slash;

		if (read_driver(r, cur, drv, sizeof(drv), bus, sizeof(bus)) == 0) {
			/* a link that names no bus: trust only a PCI address */
			if (strcmp(bus, "pci") == 0 || (!bus[0] && is_pci_bdf(base))) {
				b->bus = IP_BUS_PCI;
			} else if (strcmp(bus, "platform") == 0 || strcmp(bus, "amba") == 0) {
				b->bus = strcmp(drv, "virtio-mmio") == 0 ? IP_BUS_VIRTIO_MMIO
									 : IP_BUS_PLATFORM;
			} else {
				/*
				 * sd, nvme-core and scsi/ata nodes have drivers too
				 * but no interrupts; a virtio device is remembered
				 * because its vectors are named after it.
				 */
				if (strncmp(base, "virtio", 6) == 0 &&
				    digits_to_end(base + 6) >= 0) {
					copy_str(b->virtio, sizeof(b->virtio), base);
					copy_str(b->virtio_driver, sizeof(b->virtio_driver), drv);
				}
				goto up;
			}
			if (strlen(cur) >= sizeof(b->path))
				return ip_diag_set(d, -ENAMETOOLONG, "%s: path too long", cur);
			copy_str(b->path, sizeof(b->path), cur);
			copy_str(b->driver, sizeof(b->driver), drv);
			return 0;
		}
up:
		slash = strrchr(cur, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
	return ip_diag_set(d, -ENODEV, "%s: no PCI or platform device with a driver above it",
			   disk);
}

static int read_queues(struct ip_root *r, struct ip_blockdev *bd, struct ip_diag *d)
{
	_cleanup_free_ char *mq = ip_asprintf("%s/mq", bd->syspath);
	_cleanup_free_ long *idx = NULL;
	int n = 0, ret;

	if (!mq)
		return -ENOMEM;
	ret = list_numeric(r, mq, &idx, &n);
	if (ret < 0)
		return ip_diag_set(d, ret, "%s: %s", mq, strerror(-ret));
	if (n == 0)
		return ip_diag_set(d, -ENOENT, "%s: no hardware queues", mq);
	bd->queues = calloc(n, sizeof(*bd->queues));
	if (!bd->queues)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *path = ip_asprintf("%s/%ld/cpu_list", mq, idx[i]);
		_cleanup_free_ char *text = NULL;
		struct ip_hwqueue *q = &bd->queues[i];

		if (!path)
			return -ENOMEM;
		ret = ip_root_read(r, path, &text, NULL);
		if (ret < 0)
			return ip_diag_set(d, ret, "%s: %s", path, strerror(-ret));
		ret = cpuset_parse_list(&q->cpus, text);
		if (ret < 0)
			return ip_diag_set(d, ret, "%s: bad cpu list", path);
		q->index = (int)idx[i];
		q->vector = -1;
		bd->nr_queues++;
	}
	return 0;
}

static int add_vector(struct ip_blockdev *bd, unsigned irq)
{
	struct ip_vector *v;

	for (int i = 0; i < bd->nr_vectors; i++)
		if (bd->vectors[i].irq == irq)
			return 0;
	v = realloc(bd->vectors, (bd->nr_vectors + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	bd->vectors = v;
	v[bd->nr_vectors++] = (struct ip_vector){ .irq = irq, .queue = -1, .map = IP_VEC_MAP_NONE };
	return 0;
}

/*
 * Calls @fn on every action name of @actions. The kernel joins the names
 * of a shared line with ", ", and a single name may hold spaces
 * ("hisi_sas_v3_hw cq"), so only ", " separates.
 */
static bool any_action(const char *actions, bool (*fn)(const char *name, void *ctx), void *ctx)
{
	char buf[256];

	while (actions && *actions) {
		const char *sep = strstr(actions, ", ");
		size_t n = sep ? (size_t)(sep - actions) : strlen(actions);

		if (n >= sizeof(buf))
			n = sizeof(buf) - 1;
		memcpy(buf, actions, n);
		buf[n] = '\0';
		if (fn(buf, ctx))
			return true;
		actions = sep ? sep + 2 : NULL;
	}
	return false;
}

struct match_ctx {
	const char *cand[8];
	int ncand;
	const char *bus_id;
};

static bool action_matches(const char *name, void *ctx)
{
	const struct match_ctx *m = ctx;
	const char *br;

	for (int i = 0; i < m->ncand; i++)
		if (m->cand[i][0] && strcmp(name, m->cand[i]) == 0)
			return true;
	/* libata names its vectors "<driver>[<device>]" */
	br = strchr(name, '[');
	if (br && strncmp(br + 1, m->bus_id, strlen(m->bus_id)) == 0 &&
	    strcmp(br + 1 + strlen(m->bus_id), "]") == 0)
		return true;
	return false;
}

/*
 * Platform devices have no msi_irqs/ or irq file in sysfs, so their
 * vectors are found by name: the driver ("ufshcd" for ufshcd-qcom), the
 * device ("1d84000.ufshc"), the virtio device, or an mmc host ("mmc0")
 * on the way from the disk.
 */
static int vectors_by_name(struct ip_blockdev *bd, const struct busdev *b,
			   const struct ip_irq_name *names, int nr_names)
{
	struct match_ctx m = { .bus_id = bd->bus_id };
	char drvbase[32], mmc[32] = "";
	const char *p;
	size_t n;
	int ret;

	copy_str(drvbase, sizeof(drvbase), b->driver);
	n = strcspn(drvbase, "-_");
	drvbase[n] = '\0';
	/* mmcblk0 sits below .../mmc_host/mmc0/mmc0:aaaa/block/mmcblk0 */
	p = strstr(bd->syspath, "/mmc_host/");
	if (p) {
		p += strlen("/mmc_host/");
		n = strcspn(p, "/");
		if (n < sizeof(mmc)) {
			memcpy(mmc, p, n);
			mmc[n] = '\0';
		}
	}
	m.cand[m.ncand++] = b->driver;
	m.cand[m.ncand++] = drvbase;
	m.cand[m.ncand++] = bd->bus_id;
	m.cand[m.ncand++] = b->virtio;
	m.cand[m.ncand++] = mmc;
	for (int i = 0; i < nr_names; i++) {
		if (!any_action(names[i].actions, action_matches, &m))
			continue;
		ret = add_vector(bd, names[i].irq);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int read_vectors(struct ip_root *r, struct ip_blockdev *bd, const struct busdev *b,
			const struct ip_irq_name *names, int nr_names)
{
	_cleanup_free_ char *msi = ip_asprintf("%s/msi_irqs", b->path);
	_cleanup_free_ char *irqf = ip_asprintf("%s/irq", b->path);
	_cleanup_free_ long *irqs = NULL;
	long long irq;
	int n = 0, ret;

	if (!msi || !irqf)
		return -ENOMEM;
	if (b->bus != IP_BUS_PCI)
		return vectors_by_name(bd, b, names, nr_names);
	if (list_numeric(r, msi, &irqs, &n) == 0 && n > 0) {
		for (int i = 0; i < n; i++) {
			_cleanup_free_ char *entry = ip_asprintf("%s/%ld", msi, irqs[i]);
			_cleanup_free_ char *kind = NULL;

			/* "msi" or "msix"; read so that a capture holds the
			 * entry and its replay finds the same vectors. */
			if (!entry)
				return -ENOMEM;
			(void)ip_root_read_line(r, entry, &kind);
			ret = add_vector(bd, (unsigned)irqs[i]);
			if (ret < 0)
				return ret;
		}
		return 0;
	}
	/* INTx: the irq file, 0 when the function has no interrupt pin */
	if (ip_root_read_long(r, irqf, &irq) == 0 && irq > 0 && irq <= 0x7fffffff)
		return add_vector(bd, (unsigned)irq);
	return 0;
}

static const struct ip_irq_name *find_name(const struct ip_irq_name *names, int nr_names,
					   unsigned irq)
{
	for (int i = 0; i < nr_names; i++)
		if (names[i].irq == irq)
			return &names[i];
	return NULL;
}

struct qname_ctx {
	bool admin;
	int queue;
};

static bool action_queue(const char *name, void *ctx)
{
	struct qname_ctx *q = ctx;
	bool admin;
	int n = ip_vector_queue_from_name(name, &admin);

	if (admin)
		q->admin = true;
	if (n >= 0) {
		q->queue = n;
		return true;
	}
	return false;
}

static void map_vectors(struct ip_blockdev *bd, const struct ip_irq_name *names, int nr_names)
{
	int io = 0, named = 0, maxq = -1;

	for (int i = 0; i < bd->nr_vectors; i++) {
		struct ip_vector *v = &bd->vectors[i];
		const struct ip_irq_name *nm = find_name(names, nr_names, v->irq);
		struct qname_ctx q = { false, -1 };

		if (nm)
			any_action(nm->actions, action_queue, &q);
		/* "nvme0q0, nvme0q1" on one vector is still on the I/O path */
		if (q.queue >= 0) {
			v->queue = q.queue;
			v->map = IP_VEC_MAP_NAME;
			named++;
			maxq = MAX(maxq, q.queue);
		} else {
			v->admin = q.admin;
		}
	}

	/*
	 * mpi3mr and megaraid_sas reserve msix0 for the admin queue when they
	 * have more than one vector (op_reply_q_offset = 1), so msixM then
	 * serves hw queue M-1: one named queue too many gives that away.
	 */
	if (named == bd->nr_queues + 1 && maxq == bd->nr_queues) {
		for (int i = 0; i < bd->nr_vectors; i++) {
			struct ip_vector *v = &bd->vectors[i];

			if (v->map != IP_VEC_MAP_NAME)
				continue;
			if (v->queue == 0) {
				v->admin = true;
				v->queue = -1;
				v->map = IP_VEC_MAP_NONE;
			} else {
				v->queue--;
			}
		}
	}

	/* A name that points past the last queue is not to be trusted. */
	for (int i = 0; i < bd->nr_vectors; i++) {
		struct ip_vector *v = &bd->vectors[i];

		if (v->map == IP_VEC_MAP_NAME && v->queue >= bd->nr_queues) {
			v->queue = -1;
			v->map = IP_VEC_MAP_NONE;
			named--;
		}
		if (!v->admin)
			io++;
	}

	if (io == 1) {
		/* one I/O vector serves every queue (AHCI, UFS, INTx lines) */
		for (int i = 0; i < bd->nr_vectors; i++) {
			if (!bd->vectors[i].admin) {
				bd->vectors[i].queue = -1;
				bd->vectors[i].map = IP_VEC_MAP_NONE;
			}
		}
	} else if (named == 0 && io == bd->nr_queues) {
		int k = 0;

		for (int i = 0; i < bd->nr_vectors; i++) {
			if (bd->vectors[i].admin)
				continue;
			bd->vectors[i].queue = k++;
			bd->vectors[i].map = IP_VEC_MAP_ORDER;
		}
	}

	for (int qi = 0; qi < bd->nr_queues; qi++) {
		struct ip_hwqueue *hq = &bd->queues[qi];

		hq->vector = -1;
		for (int i = 0; i < bd->nr_vectors; i++) {
			const struct ip_vector *v = &bd->vectors[i];

			if (v->admin)
				continue;
			/* queue numbers are positions in mq/, which are its indexes */
			if (v->queue == qi || (io == 1 && v->queue < 0)) {
				hq->vector = i;
				break;
			}
		}
	}
}

static void blockdev_free(struct ip_blockdev *bd)
{
	free(bd->syspath);
	free(bd->queues);
	free(bd->vectors);
	memset(bd, 0, sizeof(*bd));
}

static int read_blockdev(struct ip_root *r, const char *dir, const char *name,
			 const struct ip_irq_name *names, int nr_names, struct ip_blockdev *bd,
			 struct ip_diag *d)
{
	_cleanup_free_ char *link = ip_asprintf("%s/%s", dir, name);
	_cleanup_free_ char *devf = NULL, *text = NULL, *path = NULL;
	struct busdev b;
	long long v;
	int ret;

	memset(bd, 0, sizeof(*bd));
	bd->rq_affinity = -1;
	bd->numa_node = -1;
	if (!link)
		return -ENOMEM;
	if (strlen(name) >= sizeof(bd->name))
		return ip_diag_set(d, -ENAMETOOLONG, "%s: name too long", link);
	copy_str(bd->name, sizeof(bd->name), name);
	ret = resolve_dir(r, link, &bd->syspath);
	if (ret < 0)
		return ip_diag_set(d, ret, "%s: %s", link, strerror(-ret));

	devf = ip_asprintf("%s/dev", bd->syspath);
	if (!devf)
		return -ENOMEM;
	ret = ip_root_read_line(r, devf, &text);
	if (ret < 0)
		return ip_diag_set(d, ret, "%s: %s", devf, strerror(-ret));
	if (sscanf(text, "%u:%u", &bd->major, &bd->minor) != 2)
		return ip_diag_set(d, -EINVAL, "%s: not major:minor: \"%s\"", devf, text);

	path = ip_asprintf("%s/queue/rq_affinity", bd->syspath);
	if (!path)
		return -ENOMEM;
	if (ip_root_read_long(r, path, &v) == 0 && v >= 0 && v <= 2)
		bd->rq_affinity = (int)v;
	free(path);
	path = ip_asprintf("%s/queue/rotational", bd->syspath);
	if (!path)
		return -ENOMEM;
	bd->rotational = ip_root_read_long(r, path, &v) == 0 && v == 1;

	ret = read_queues(r, bd, d);
	if (ret < 0)
		return ret;

	ret = find_busdev(r, bd->syspath, &b, d);
	if (ret < 0)
		return ret;
	copy_str(bd->driver, sizeof(bd->driver), b.virtio_driver[0] ? b.virtio_driver : b.driver);
	copy_str(bd->bus_id, sizeof(bd->bus_id), base_name(b.path));
	bd->bus = b.bus;

	free(path);
	path = ip_asprintf("%s/local_cpulist", b.path);
	if (!path)
		return -ENOMEM;
	free(text);
	text = NULL;
	cpuset_zero(&bd->local_cpus);
	if (ip_root_read(r, path, &text, NULL) == 0 && cpuset_parse_list(&bd->local_cpus, text) < 0)
		cpuset_zero(&bd->local_cpus);
	free(path);
	path = ip_asprintf("%s/numa_node", b.path);
	if (!path)
		return -ENOMEM;
	if (ip_root_read_long(r, path, &v) == 0 && v >= 0 && v < 65536)
		bd->numa_node = (int)v;

	ret = read_vectors(r, bd, &b, names, nr_names);
	if (ret < 0)
		return ip_diag_set(d, ret, "%s: reading vectors: %s", b.path, strerror(-ret));
	map_vectors(bd, names, nr_names);
	return 0;
}

/*
 * One odd device (a garbled cpu_list, a disk whose controller has no
 * driver) must not hide the others from the policy: it is skipped, and
 * the reason of the last skip is left in @d while 0 is returned, so a
 * caller can report it without failing the sample.
 */
int ip_storage_sample(struct ip_root *r, const struct ip_irq_name *names, int nr_names,
		      struct ip_storage *s, struct ip_diag *d)
{
	const char *dir = "sys/block";
	char **ents = NULL;
	size_t n = 0;
	int ret;

	memset(s, 0, sizeof(*s));
	if (nr_names < 0 || (nr_names > 0 && !names))
		return ip_diag_set(d, -EINVAL, "storage: bad IRQ name list");
	ret = ip_root_listdir(r, dir, &ents, &n);
	if (ret == -ENOENT) {
		/* a partial capture or container view may hold only class/block */
		dir = "sys/class/block";
		ret = ip_root_listdir(r, dir, &ents, &n);
	}
	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ip_diag_set(d, ret, "%s: %s", dir, strerror(-ret));

	s->devs = calloc(n ? n : 1, sizeof(*s->devs));
	if (!s->devs) {
		ip_strv_free(ents, n);
		return ip_diag_set(d, -ENOMEM, "storage: out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		struct ip_blockdev *bd = &s->devs[s->nr_devs];
		_cleanup_free_ char *part = NULL;

		if (ip_blockdev_is_virtual(ents[i]))
			continue;
		/* sys/class/block lists partitions too; sys/block does not */
		part = ip_asprintf("%s/%s/partition", dir, ents[i]);
		if (!part) {
			ret = -ENOMEM;
			break;
		}
		if (ip_root_exists(r, part))
			continue;
		ret = read_blockdev(r, dir, ents[i], names, nr_names, bd, d);
		if (ret < 0) {
			blockdev_free(bd);
			if (ret == -ENOMEM)
				break;
			ret = 0;
			continue;
		}
		s->nr_devs++;
	}
	ip_strv_free(ents, n);
	if (ret == -ENOMEM) {
		ip_storage_free(s);
		return ip_diag_set(d, -ENOMEM, "storage: out of memory");
	}
	return 0;
}

void ip_storage_free(struct ip_storage *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nr_devs; i++)
		blockdev_free(&s->devs[i]);
	free(s->devs);
	s->devs = NULL;
	s->nr_devs = 0;
}
