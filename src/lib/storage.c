// SPDX-License-Identifier: GPL-2.0-or-later
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/devtree.h"
#include "irqpilot/macro.h"
#include "irqpilot/sorted.h"
#include "irqpilot/storage.h"

/*
 * What one storage scan learns once and every device may need: the chip
 * and hwirq of each IRQ (for devicetree matches) and the interrupt
 * controllers met so far by phandle. Both are read only when a device with
 * an of_node asks, so a PCI-only machine never reads them.
 */
struct hwline {
	unsigned irq;
	bool twice; /* its number on another line too: see load_hw() */
	char chip[32];
	char hwirq[24];
};

struct dtctrl {
	uint32_t phandle;
	char *path;
};

struct scan {
	struct ip_root *r;
	const struct ip_irq_name *names;
	int nr_names;
	bool have_hw;
	struct hwline *hw;
	int nr_hw, cap_hw;
	struct dtctrl *ctrls;
	int nr_ctrls;
};

static void scan_free(struct scan *sc)
{
	free(sc->hw);
	for (int i = 0; i < sc->nr_ctrls; i++)
		free(sc->ctrls[i].path);
	free(sc->ctrls);
}

const char *ip_vec_route_name(enum ip_vec_route r)
{
	switch (r) {
	case IP_ROUTE_MSI:
		return "msi_irqs";
	case IP_ROUTE_INTX:
		return "PCI irq file";
	case IP_ROUTE_DT:
		return "devicetree";
	case IP_ROUTE_ACPI:
		return "ACPI resources";
	case IP_ROUTE_KNAME:
		return "kernel names";
	case IP_ROUTE_HEURISTIC:
		return "driver name heuristics";
	default:
		return "none";
	}
}

const char *ip_vec_routes_str(unsigned mask, char *buf, size_t size)
{
	size_t used = 0;

	if (!size)
		return buf;
	buf[0] = '\0';
	for (int i = 1; i < IP_ROUTE_COUNT; i++) {
		int n;

		if (!(mask & (1u << i)))
			continue;
		n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "",
			     ip_vec_route_name((enum ip_vec_route)i));
		if (n < 0 || (size_t)n >= size - used)
			break;
		used += (size_t)n;
	}
	if (!used)
		snprintf(buf, size, "none");
	return buf;
}

bool ip_blockdev_unsteerable(const struct ip_blockdev *bd)
{
	/* virtual devices never get here: ip_blockdev_is_virtual() drops them */
	return bd->nr_vectors == 0;
}

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
	char usb_root[16];      /* "usb2" when the disk is on a USB root hub */
	char pvbus[8];          /* "xen", "vmbus": a hypervisor's bus, see vectors_paravirt() */
	enum ip_bus bus;
};

/*
 * The buses of a hypervisor's paravirtual disks, whose device is the
 * disk's host though it is neither PCI nor platform: Xen's xenbus
 * frontends (drivers/xen/xenbus/xenbus_probe_frontend.c, bus "xen") and
 * Hyper-V's VMBus (drivers/hv/vmbus_drv.c hv_bus, "vmbus"). Walked past
 * like the SCSI and USB nodes, they reached sys/devices and the disk was
 * dropped without a word, as if no hardware were behind it.
 */
static bool paravirt_bus(const char *bus)
{
	return strcmp(bus, "xen") == 0 || strcmp(bus, "vmbus") == 0;
}

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
			} else if (paravirt_bus(bus)) {
				copy_str(b->pvbus, sizeof(b->pvbus), bus); /* IP_BUS_OTHER */
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
				/* a root hub: drivers/usb/core/hcd.c names it "usb%d" */
				if (strcmp(bus, "usb") == 0 && strncmp(base, "usb", 3) == 0 &&
				    digits_to_end(base + 3) >= 0)
					copy_str(b->usb_root, sizeof(b->usb_root), base);
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

static int add_vector_from(struct ip_blockdev *bd, unsigned irq, enum ip_vec_route route,
			   int dt_index)
{
	struct ip_vector *v;

	for (int i = 0; i < bd->nr_vectors; i++)
		if (bd->vectors[i].irq == irq)
			return 0;
	v = realloc(bd->vectors, (bd->nr_vectors + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	bd->vectors = v;
	v[bd->nr_vectors++] = (struct ip_vector){ .irq = irq, .queue = -1, .map = IP_VEC_MAP_NONE,
						  .route = route, .dt_index = dt_index };
	if (bd->route == IP_ROUTE_NONE)
		bd->route = route;
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
	const char *bus_id; /* NULL: no "<driver>[<device>]" form */
	const char *never;  /* a name that is not this device's to take */
};

static bool action_matches(const char *name, void *ctx)
{
	const struct match_ctx *m = ctx;
	const char *br;

	if (m->never && strcmp(name, m->never) == 0)
		return false;
	for (int i = 0; i < m->ncand; i++)
		if (m->cand[i] && m->cand[i][0] && strcmp(name, m->cand[i]) == 0)
			return true;
	if (!m->bus_id)
		return false;
	/* drivers/ata/libata-core.c ata_host_activate names its vector
	 * "%s[%s]", dev_driver_string(), dev_name() */
	br = strchr(name, '[');
	if (br && strncmp(br + 1, m->bus_id, strlen(m->bus_id)) == 0 &&
	    strcmp(br + 1 + strlen(m->bus_id), "]") == 0)
		return true;
	return false;
}

static int add_named(struct ip_blockdev *bd, const struct scan *sc, struct match_ctx *m,
		     enum ip_vec_route route)
{
	int ret;

	for (int i = 0; i < sc->nr_names; i++) {
		if (!any_action(sc->names[i].actions, action_matches, m))
			continue;
		ret = add_vector_from(bd, sc->names[i].irq, route, -1);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The component after @key in @path ("/mmc_host/" -> "mmc0"), or "". */
static void component_after(const char *path, const char *key, char *out, size_t size)
{
	const char *p = strstr(path, key);
	size_t n;

	out[0] = '\0';
	if (!p)
		return;
	p += strlen(key);
	n = strcspn(p, "/");
	if (n < size) {
		memcpy(out, p, n);
		out[n] = '\0';
	}
}

/*
 * The SCSI host's proc_name: drivers/scsi/scsi_sysfs.c shost_attr
 * proc_name shows the host template's proc_name, and ufshcd
 * (drivers/ufs/core/ufshcd.c ufshcd_driver_template .proc_name = UFSHCD)
 * requests its IRQ with that same string. The host is the "hostN"
 * directory on the way from the disk up to the controller.
 */
static int read_proc_name(struct ip_root *r, const char *syspath, char *out, size_t size)
{
	_cleanup_free_ char *dir = strdup(syspath);
	char *p;

	out[0] = '\0';
	if (!dir)
		return -ENOMEM;
	while ((p = strrchr(dir, '/'))) {
		const char *base = p + 1;

		if (strncmp(base, "host", 4) == 0 && digits_to_end(base + 4) >= 0) {
			_cleanup_free_ char *f = ip_asprintf("%s/scsi_host/%s/proc_name", dir, base);
			_cleanup_free_ char *v = NULL;

			if (!f)
				return -ENOMEM;
			if (ip_root_read_line(r, f, &v) == 0 && v[0] && strlen(v) < size)
				copy_str(out, size, v);
			return 0;
		}
		*p = '\0';
	}
	return 0;
}

/* Entries of @dir whose <entry>/@file reads @want, or exists when @want is NULL. */
static int count_with(struct ip_root *r, const char *dir, const char *file, const char *want,
		      int *out)
{
	char **ents = NULL;
	size_t n = 0;

	*out = 0;
	if (ip_root_listdir(r, dir, &ents, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *f = ip_asprintf("%s/%s/%s", dir, ents[i], file);
		_cleanup_free_ char *v = NULL;

		if (!f) {
			ip_strv_free(ents, n);
			return -ENOMEM;
		}
		if (want ? ip_root_read_line(r, f, &v) == 0 && strcmp(v, want) == 0
			 : ip_root_exists(r, f))
			(*out)++;
	}
	ip_strv_free(ents, n);
	return 0;
}

/*
 * Whether "ufshcd" names other UFS hosts' IRQs too. ufshcd_init
 * (drivers/ufs/core/ufshcd.c) requests every host's IRQ as UFSHCD, and
 * ufs-mediatek.c ufs_mtk_config_mcq_irq names each per-queue IRQ the
 * same, so with one host every "ufshcd" IRQ is its own, and with two
 * (SA8540P's ufs_mem_hc and ufs_card_hc, ExynosAuto v9's ufs_0 and ufs_1)
 * the name cannot say whose an IRQ is. The hosts are counted two ways, as
 * a capture may hold only one: SCSI hosts with proc_name "ufshcd" in
 * class/scsi_host (drivers/scsi/hosts.c shost_class), and devices bound to
 * this glue driver (drivers/base/bus.c driver_sysfs_add links each into
 * bus/platform/drivers/<driver>/). If so, route_note says why.
 */
static int ufshcd_name_shared(struct ip_root *r, struct ip_blockdev *bd, const struct busdev *b,
			      bool *shared)
{
	_cleanup_free_ char *drv = ip_asprintf("sys/bus/platform/drivers/%s", b->driver);
	char pn[64];
	int hosts = 0, bound = 0, ret;
	size_t used = strlen(bd->route_note);

	*shared = false;
	if (!drv)
		return -ENOMEM;
	ret = read_proc_name(r, bd->syspath, pn, sizeof(pn));
	if (ret < 0)
		return ret;
	if (strcmp(pn, "ufshcd") != 0 && !strstr(b->driver, "ufs"))
		return 0;
	ret = count_with(r, "sys/class/scsi_host", "proc_name", "ufshcd", &hosts);
	if (ret == 0)
		ret = count_with(r, drv, "driver", NULL, &bound);
	if (ret < 0)
		return ret;
	if (hosts < 2 && bound < 2)
		return 0;
	*shared = true;
	snprintf(bd->route_note + used, sizeof(bd->route_note) - used,
		 "%s%d UFS hosts name their IRQs \"ufshcd\" (ufshcd_init): which are %s's is unknown",
		 used ? "; " : "", hosts > bound ? hosts : bound, bd->bus_id);
	return 0;
}

static bool action_usb_bus(const char *name, void *ctx)
{
	const char *colon = strrchr(name, ':');

	return colon && colon > name && strcmp(colon + 1, ctx) == 0;
}

/*
 * A USB host controller's IRQ, requested by drivers/usb/core/hcd.c
 * usb_hcd_request_irqs as "%s:usb%d" (the hc_driver's description and
 * the root hub's bus number: "xhci-hcd:usb5" for xhci-plat under dwc3,
 * "ehci_hcd:usb1"). An xHCI has two root hubs and only the primary one
 * requests it (usb_add_hcd, usb_hcd_is_primary_hcd), so a disk on the
 * USB3 hub "usb6" finds it as "xhci-hcd:usb5": every root hub of the
 * controller is tried. Bus numbers are unique, so the name is this
 * controller's alone.
 */
static int vectors_by_usb_bus(struct ip_root *r, struct ip_blockdev *bd, const struct busdev *b,
			      const struct scan *sc)
{
	char **ents = NULL;
	size_t n = 0;
	int ret = 0;

	if (!b->usb_root[0] || ip_root_listdir(r, b->path, &ents, &n) < 0)
		return 0;
	for (size_t i = 0; i < n && ret == 0; i++) {
		if (strncmp(ents[i], "usb", 3) != 0 || digits_to_end(ents[i] + 3) < 0)
			continue;
		for (int k = 0; k < sc->nr_names && ret == 0; k++)
			if (any_action(sc->names[k].actions, action_usb_bus, ents[i]))
				ret = add_vector_from(bd, sc->names[k].irq, IP_ROUTE_KNAME, -1);
	}
	ip_strv_free(ents, n);
	return ret;
}

/*
 * Route 4, names the kernel gives the device itself: the SCSI host's
 * proc_name, the mmc host (drivers/mmc/host/sdhci.c sdhci_add_host
 * requests its IRQ as mmc_hostname(), "mmc0"), the virtio device
 * (drivers/virtio/virtio_mmio.c vm_find_vqs requests dev_name(&vdev->dev),
 * "virtio0"; virtio_pci names "virtio0-config", "virtio0-req.0"),
 * libata's "<driver>[<device>]" and a USB host controller's
 * "<hcd>:usbN" (vectors_by_usb_bus). The UFS proc_name is every UFS
 * host's IRQ name, so it is not taken when @ufs_shared.
 */
static int vectors_by_kernel_name(struct ip_root *r, struct ip_blockdev *bd, const struct busdev *b,
				  const struct scan *sc, bool ufs_shared)
{
	struct match_ctx m = { .bus_id = bd->bus_id, .never = ufs_shared ? "ufshcd" : NULL };
	char mmc[32], proc_name[64], vcfg[48], vreq[48];
	int ret;

	bd->routes_tried |= 1u << IP_ROUTE_KNAME;
	ret = read_proc_name(r, bd->syspath, proc_name, sizeof(proc_name));
	if (ret < 0)
		return ret;
	component_after(bd->syspath, "/mmc_host/", mmc, sizeof(mmc));
	snprintf(vcfg, sizeof(vcfg), "%s-config", b->virtio);
	snprintf(vreq, sizeof(vreq), "%s-requests", b->virtio);
	m.cand[m.ncand++] = proc_name;
	m.cand[m.ncand++] = mmc;
	m.cand[m.ncand++] = b->virtio;
	if (b->virtio[0]) {
		m.cand[m.ncand++] = vcfg;
		m.cand[m.ncand++] = vreq;
	}
	ret = add_named(bd, sc, &m, IP_ROUTE_KNAME);
	if (ret == 0)
		ret = vectors_by_usb_bus(r, bd, b, sc);
	if (ret < 0 || !b->virtio[0])
		return ret;
	/* virtio_pci per-queue vectors: "virtio0-req.3" */
	for (int i = 0; i < sc->nr_names; i++) {
		const char *a = sc->names[i].actions;
		size_t n = strlen(b->virtio);

		if (a && strncmp(a, b->virtio, n) == 0 && strncmp(a + n, "-req.", 5) == 0 &&
		    digits_to_end(a + n + 5) >= 0) {
			ret = add_vector_from(bd, sc->names[i].irq, IP_ROUTE_KNAME, -1);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

/*
 * "dw-mci" names every dw_mmc host's one IRQ (drivers/mmc/host/dw_mmc.c
 * dw_mci_probe requests host->irq as "dw-mci"), so it is this host's only
 * when no other IRQ has that name. With several (an SD and an SDIO host,
 * RK3399, Exynos) none is taken: steering the SDIO Wi-Fi's IRQ for the
 * disk's submitters would be wrong, and an unsteerable disk is warned
 * about, with this note saying why.
 */
static int dwmci_by_name(struct ip_blockdev *bd, const struct scan *sc)
{
	struct match_ctx m = { .cand = { "dw-mci" }, .ncand = 1 };
	int found = 0, last = -1;
	size_t used = strlen(bd->route_note);

	for (int i = 0; i < sc->nr_names; i++)
		if (any_action(sc->names[i].actions, action_matches, &m)) {
			found++;
			last = i;
		}
	if (found == 1)
		return add_vector_from(bd, sc->names[last].irq, IP_ROUTE_HEURISTIC, -1);
	if (found > 1)
		snprintf(bd->route_note + used, sizeof(bd->route_note) - used,
			 "%s%d IRQs are named \"dw-mci\", every dw_mmc host's name: which is %s's is unknown",
			 used ? "; " : "", found, bd->bus_id);
	return 0;
}

/*
 * Whether the driver's name is every one of its hosts' IRQ name, so that
 * it cannot say whose an IRQ is: sunxi-mmc (drivers/mmc/host/sunxi-mmc.c
 * sunxi_mmc_init_host requests "sunxi-mmc" for each host) drives an A64's
 * SD, SDIO Wi-Fi and eMMC hosts alike. It is so when more than one IRQ
 * has the name and more than one device is bound to the driver
 * (drivers/base/bus.c driver_sysfs_add links each into
 * bus/platform/drivers/<driver>/); route_note then says why. @never is a
 * name already known to be no one's.
 */
static int driver_name_shared(struct ip_root *r, struct ip_blockdev *bd, const struct busdev *b,
			      const struct scan *sc, const char *drvbase, const char *never,
			      bool *shared)
{
	struct match_ctx m = { .cand = { b->driver, drvbase }, .ncand = 2, .never = never };
	_cleanup_free_ char *drv = NULL;
	size_t used = strlen(bd->route_note);
	int found = 0, bound = 0, ret;

	*shared = false;
	for (int i = 0; i < sc->nr_names; i++)
		found += any_action(sc->names[i].actions, action_matches, &m);
	if (found < 2 || b->bus != IP_BUS_PLATFORM)
		return 0;
	drv = ip_asprintf("sys/bus/platform/drivers/%s", b->driver);
	if (!drv)
		return -ENOMEM;
	ret = count_with(r, drv, "driver", NULL, &bound);
	if (ret < 0 || bound < 2)
		return ret;
	*shared = true;
	snprintf(bd->route_note + used, sizeof(bd->route_note) - used,
		 "%s%d IRQs are named after %s, which drives %d hosts: which is %s's is unknown",
		 used ? "; " : "", found, b->driver, bound, bd->bus_id);
	return 0;
}

/*
 * Route 5, guesses from the driver: only when the kernel said nothing
 * better. Each name is the one a driver passes to request_irq():
 * - the driver's name: what drivers pass when they request
 *   dev_driver_string() or KBUILD_MODNAME, as many SoC glue drivers do;
 *   not taken when it names several hosts' IRQs (driver_name_shared);
 * - its prefix before '-' or '_' ("ufshcd" for "ufshcd-qcom", since the
 *   glue drivers hand their IRQ to ufshcd_init(), which requests it as
 *   UFSHCD, drivers/ufs/core/ufshcd.c);
 * - the device's name (devm_request_irq(dev, irq, h, 0, dev_name(dev)));
 * - "ufshcd" for every UFS glue driver ("exynos-ufshc", ufs-exynos.c;
 *   "ufshcd-qcom"; "ufs-mediatek"): ufshcd_init() names it,
 *   so with two UFS hosts it is no one's (ufshcd_name_shared);
 * - "dw-mci" for the dw_mmc glue drivers (dwmmc_rockchip, dwmmc_exynos,
 *   dw_mmc-pltfm): drivers/mmc/host/dw_mmc.c dw_mci_probe requests
 *   devm_request_irq(host->dev, host->irq, dw_mci_interrupt,
 *   host->irq_flags, "dw-mci", host). Every dw_mmc host has that name, so
 *   it is tried last, and only a lone one is taken (dwmci_by_name): with
 *   two hosts this route cannot tell them apart, the devicetree can.
 */
static int vectors_by_heuristic(struct ip_root *r, struct ip_blockdev *bd, const struct busdev *b,
				const struct scan *sc, bool ufs_shared)
{
	struct match_ctx m = { .bus_id = NULL, .never = ufs_shared ? "ufshcd" : NULL };
	char drvbase[32];
	int ret;
	bool ufs = strstr(b->driver, "ufs") != NULL, shared;
	bool dwmmc = strncmp(b->driver, "dwmmc", 5) == 0 || strncmp(b->driver, "dw_mmc", 6) == 0;

	bd->routes_tried |= 1u << IP_ROUTE_HEURISTIC;
	copy_str(drvbase, sizeof(drvbase), b->driver);
	drvbase[strcspn(drvbase, "-_")] = '\0';
	/* two UFS hosts' "ufshcd" is ufshcd_name_shared's to say */
	ret = driver_name_shared(r, bd, b, sc, drvbase, m.never, &shared);
	if (ret < 0)
		return ret;
	m.cand[m.ncand++] = shared ? NULL : b->driver;
	m.cand[m.ncand++] = shared ? NULL : drvbase;
	m.cand[m.ncand++] = bd->bus_id;
	m.cand[m.ncand++] = ufs ? "ufshcd" : NULL;
	ret = add_named(bd, sc, &m, IP_ROUTE_HEURISTIC);
	if (ret < 0 || bd->nr_vectors || !dwmmc)
		return ret;
	return dwmci_by_name(bd, sc);
}

/*
 * Route 5 for a hypervisor's disks (paravirt_bus()):
 * - Xen: drivers/block/xen-blkfront.c setup_blkring binds each ring's
 *   event channel as bind_evtchn_to_irqhandler_lateeoi(..., "blkif",
 *   rinfo), so every ring of every vbd is "blkif" (chip
 *   "xen-dyn-lateeoi", drivers/xen/events/events_base.c, whose
 *   set_affinity_irq rebinds the channel: these IRQs can be moved). Which
 *   vbd a channel is is only in xenstore (device/vbd/<id>/[queue-N/]
 *   event-channel), which is not read here. With one vbd bound to the
 *   driver every "blkif" IRQ is its own; its rings are set up one after
 *   the other (talk_to_blkback), each IRQ the lowest free, so the numbers
 *   rise with the ring, and hctx i is ring i (blkif_queue_rq). With more,
 *   none is taken and route_note says why.
 * - Hyper-V: VMBus channels have no IRQ; the host signals the hypervisor
 *   callback vector ("HYP" in /proc/interrupts on x86, one per-CPU
 *   interrupt on arm64) and vmbus_drv.c runs the channel's callback on
 *   its target CPU, which channels/<relid>/cpu sets (writable since 5.8).
 *   Nothing here can be steered as an IRQ: route_note says so.
 */
static int vectors_paravirt(struct ip_root *r, struct ip_blockdev *bd, const struct busdev *b,
			    const struct scan *sc)
{
	struct match_ctx m = { .cand = { "blkif" }, .ncand = 1 };
	_cleanup_free_ char *drv = NULL;
	int found = 0, bound = 0, ret;

	bd->routes_tried |= 1u << IP_ROUTE_HEURISTIC;
	if (strcmp(b->pvbus, "vmbus") == 0) {
		snprintf(bd->route_note, sizeof(bd->route_note),
			 "Hyper-V VMBus channels have no IRQ of their own (HYP vector); "
			 "their CPUs are %s's channels/N/cpu", bd->bus_id);
		bd->route_known = true;
		return 0;
	}
	if (strcmp(b->driver, "vbd") != 0)
		return 0;
	for (int i = 0; i < sc->nr_names; i++)
		found += any_action(sc->names[i].actions, action_matches, &m);
	drv = ip_asprintf("sys/bus/xen/drivers/%s", b->driver);
	if (!drv)
		return -ENOMEM;
	ret = count_with(r, drv, "driver", NULL, &bound);
	if (ret < 0)
		return ret;
	if (bound <= 1)
		return add_named(bd, sc, &m, IP_ROUTE_HEURISTIC);
	if (found)
		snprintf(bd->route_note, sizeof(bd->route_note),
			 "%d IRQs are named \"blkif\" for %d vbd devices: which are %s's only xenstore says",
			 found, bound, bd->bus_id);
	bd->route_known = found > 0;
	return 0;
}

/* ---- devicetree (route 2) --------------------------------------------- */

#define DT_BASE "sys/firmware/devicetree/base"

static int cells_of(struct ip_root *r, const char *node, const char *prop, uint32_t *cells, int max,
		    int *n, struct ip_diag *d)
{
	_cleanup_free_ char *path = ip_asprintf("%s/%s", node, prop);
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int ret;

	*n = 0;
	if (!path)
		return -ENOMEM;
	ret = ip_root_read(r, path, &buf, &len);
	if (ret < 0)
		return ret;
	ret = ip_dt_cells(buf, len, cells, max, n, d);
	if (ret < 0)
		return ip_diag_prefix(d, ret, "%s", path);
	return 0;
}

static int read_u32(struct ip_root *r, const char *node, const char *prop, uint32_t *out)
{
	uint32_t c[1];
	int n, ret = cells_of(r, node, prop, c, 1, &n, NULL);

	if (ret < 0)
		return ret;
	if (n != 1)
		return -EINVAL;
	*out = c[0];
	return 0;
}

static int remember_phandle(struct scan *sc, uint32_t ph, const char *path)
{
	struct dtctrl *c;

	for (int i = 0; i < sc->nr_ctrls; i++)
		if (strcmp(sc->ctrls[i].path, path) == 0)
			return 0;
	c = realloc(sc->ctrls, (sc->nr_ctrls + 1) * sizeof(*c));
	if (!c)
		return -ENOMEM;
	sc->ctrls = c;
	c[sc->nr_ctrls].phandle = ph;
	c[sc->nr_ctrls].path = strdup(path);
	if (!c[sc->nr_ctrls].path)
		return -ENOMEM;
	sc->nr_ctrls++;
	return 0;
}

/*
 * The node whose phandle is @ph. sysfs has no index from phandle to node,
 * so the tree is searched breadth first, where interrupt controllers sit
 * (at the root or under /soc), stopping at the first match; every
 * phandle met on the way is remembered for the next device. Bounded so a
 * hostile or looped tree (links are followed) cannot run away.
 */
static int find_phandle(struct scan *sc, uint32_t ph, const char **path)
{
	char **queue = NULL;
	size_t head = 0, tail = 0, cap = 0;
	int ret = -ENOENT, budget = 20000;

	for (int i = 0; i < sc->nr_ctrls; i++)
		if (sc->ctrls[i].phandle == ph) {
			*path = sc->ctrls[i].path;
			return 0;
		}
	queue = malloc(sizeof(*queue) * (cap = 64));
	if (!queue || !(queue[tail++] = strdup(DT_BASE))) {
		ret = -ENOMEM;
		goto out;
	}
	while (head < tail && budget-- > 0) {
		char *dir = queue[head++];
		char **ents = NULL;
		size_t n = 0;
		uint32_t v;

		if (read_u32(sc->r, dir, "phandle", &v) == 0 || read_u32(sc->r, dir, "linux,phandle", &v) == 0) {
			if (remember_phandle(sc, v, dir) < 0) {
				ret = -ENOMEM;
				goto out;
			}
			if (v == ph) {
				/* not cached before (checked above), so just added */
				*path = sc->ctrls[sc->nr_ctrls - 1].path;
				ret = 0;
				goto out;
			}
		}
		if (ip_root_listdir(sc->r, dir, &ents, &n) < 0)
			continue;
		for (size_t i = 0; i < n; i++) {
			char *sub = ip_asprintf("%s/%s", dir, ents[i]);
			struct stat st;

			if (!sub) {
				ip_strv_free(ents, n);
				ret = -ENOMEM;
				goto out;
			}
			/* a path this long is a loop, not a real tree */
			if (strlen(sub) > 2048 || ip_root_stat(sc->r, sub, &st) < 0 || !S_ISDIR(st.st_mode)) {
				free(sub);
				continue;
			}
			if (tail == cap) {
				char **nq = realloc(queue, sizeof(*queue) * (cap *= 2));

				if (!nq) {
					free(sub);
					ip_strv_free(ents, n);
					ret = -ENOMEM;
					goto out;
				}
				queue = nq;
			}
			queue[tail++] = sub;
		}
		ip_strv_free(ents, n);
	}
out:
	for (size_t i = 0; queue && i < tail; i++)
		free(queue[i]);
	free(queue);
	return ret;
}

static int hw_line(void *ctx, const struct ip_irq_line *l)
{
	struct scan *sc = ctx;

	if (sc->nr_hw == sc->cap_hw) {
		int ncap = sc->cap_hw ? sc->cap_hw * 2 : 128;
		struct hwline *n = realloc(sc->hw, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		sc->hw = n;
		sc->cap_hw = ncap;
	}
	sc->hw[sc->nr_hw].irq = l->irq;
	sc->hw[sc->nr_hw].twice = false;
	copy_str(sc->hw[sc->nr_hw].chip, sizeof(sc->hw[0].chip), l->chip);
	copy_str(sc->hw[sc->nr_hw].hwirq, sizeof(sc->hw[0].hwirq), l->hwirq);
	sc->nr_hw++;
	return 0;
}

static int cmp_hwline(const void *a, const void *b)
{
	unsigned x = ((const struct hwline *)a)->irq, y = ((const struct hwline *)b)->irq;

	return x < y ? -1 : x > y;
}

/*
 * Chip and hwirq of every IRQ: /proc/interrupts shows both on arm64
 * (kernel/irq/proc.c show_interrupts: the chip's name or irq_print_chip,
 * then " %*lu" irq_data.hwirq when the IRQ has a domain). Where the
 * column is empty, /sys/kernel/irq/N/{chip_name,hwirq} (kernel/irq/irqdesc.c,
 * CONFIG_SPARSE_IRQ) says the same. A number on two lines, which no kernel
 * prints, had one made up inside an IRQ name (a GPIO consumer label can
 * hold "\n 37: ... GICv3 163 Level"; sample.c drop_listed_twice()): both
 * are marked, and a specifier they match is not taken from either.
 */
static int load_hw(struct scan *sc, struct ip_diag *d)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ struct ip_irq_header *hdr = NULL;
	size_t len = 0;
	int ret;

	if (sc->have_hw)
		return 0;
	sc->have_hw = true;
	hdr = calloc(1, sizeof(*hdr));
	if (!hdr)
		return -ENOMEM;
	ret = ip_root_read(sc->r, "proc/interrupts", &text, &len);
	if (ret < 0)
		return ip_diag_set(d, ret, "proc/interrupts: %s", strerror(-ret));
	ret = ip_parse_interrupts(text, len, hdr, hw_line, sc, d);
	if (ret < 0)
		return ret;
	if (sc->nr_hw)
		ip_sort(sc->hw, sc->nr_hw, sizeof(*sc->hw), cmp_hwline);
	for (int i = 1; i < sc->nr_hw; i++)
		if (sc->hw[i].irq == sc->hw[i - 1].irq)
			sc->hw[i].twice = sc->hw[i - 1].twice = true;
	for (int i = 0; i < sc->nr_hw; i++) {
		struct hwline *h = &sc->hw[i];
		_cleanup_free_ char *pc = NULL, *ph = NULL, *vc = NULL, *vh = NULL;

		if (h->hwirq[0])
			continue;
		pc = ip_asprintf("sys/kernel/irq/%u/chip_name", h->irq);
		ph = ip_asprintf("sys/kernel/irq/%u/hwirq", h->irq);
		if (!pc || !ph)
			return -ENOMEM;
		if (ip_root_read_line(sc->r, ph, &vh) < 0 || ip_root_read_line(sc->r, pc, &vc) < 0)
			continue;
		copy_str(h->chip, sizeof(h->chip), vc);
		copy_str(h->hwirq, sizeof(h->hwirq), vh);
	}
	return 0;
}

/* The interrupt parent of @node: its own interrupt-parent or the nearest
 * ancestor's (drivers/of/irq.c of_irq_find_parent). */
static int dt_parent(struct scan *sc, const char *node, const char **ctrl, struct ip_diag *d)
{
	_cleanup_free_ char *p = strdup(node);
	uint32_t ph;

	if (!p)
		return -ENOMEM;
	for (;;) {
		char *slash;

		if (read_u32(sc->r, p, "interrupt-parent", &ph) == 0) {
			int ret = find_phandle(sc, ph, ctrl);

			if (ret == -ENOENT)
				return ip_diag_set(d, -ENOENT, "interrupt-parent <%#x> of %s names no node", ph, node);
			return ret;
		}
		if (strcmp(p, DT_BASE) == 0)
			break;
		slash = strrchr(p, '/');
		if (!slash || slash - p < (ptrdiff_t)strlen(DT_BASE))
			break;
		*slash = '\0';
	}
	return ip_diag_set(d, -ENOENT, "%s: no interrupt-parent up to the root", node);
}

/*
 * The one line that shows @want, in *@line (NULL: none does). The kernel
 * maps a hwirq of a domain to one IRQ, so two lines showing it mean two
 * controllers of one name (two PLICs of a multi-socket RISC-V machine) or
 * a line made up (see load_hw()), and a line whose number is shown twice
 * the latter: then which IRQ the specifier is cannot be told, and the
 * route says so rather than take the first.
 */
static int dt_unique_line(const struct scan *sc, const struct ip_dt_irq *want, const struct hwline **line,
			  struct ip_diag *d)
{
	const struct hwline *first = NULL, *second = NULL;

	*line = NULL;
	for (int i = 0; i < sc->nr_hw && !second; i++) {
		if (!ip_dt_irq_matches(want, sc->hw[i].chip, sc->hw[i].hwirq))
			continue;
		if (!first)
			first = &sc->hw[i];
		else
			second = &sc->hw[i];
	}
	if (first && !second && !first->twice) {
		*line = first;
		return 0;
	}
	if (!first)
		return 0;
	if (second && second->irq != first->irq)
		return ip_diag_set(d, -EEXIST,
				   "IRQs %u and %u both show %s %s: two controllers of that name, or a line "
				   "made up inside an IRQ name (a GPIO consumer label can hold a newline); "
				   "which is this device's cannot be told",
				   first->irq, second->irq, first->chip, first->hwirq);
	return ip_diag_set(d, -EEXIST,
			   "IRQ %u, which shows %s %s, is on two lines, as no kernel prints: a line was "
			   "made up inside an IRQ name (a GPIO consumer label can hold a newline), and "
			   "which is the kernel's cannot be told",
			   first->irq, first->chip, first->hwirq);
}

/* One specifier of @ncells at @spec, for controller @ctrl: the IRQ it is. */
static int dt_match_one(struct scan *sc, struct ip_blockdev *bd, const char *ctrl, const uint32_t *spec,
			uint32_t ncells, int index, bool admin, struct ip_diag *d)
{
	_cleanup_free_ char *cpath = ip_asprintf("%s/compatible", ctrl);
	_cleanup_free_ char *compat = NULL;
	const struct hwline *line;
	struct ip_dt_irq want;
	size_t clen = 0;
	int ret;

	if (!cpath)
		return -ENOMEM;
	if (ip_root_read(sc->r, cpath, &compat, &clen) < 0)
		clen = 0;
	ret = ip_dt_translate(compat ? compat : "", clen, ncells, spec, &want, d);
	if (ret < 0)
		return ret;
	ret = load_hw(sc, d);
	if (ret < 0)
		return ret;
	ret = dt_unique_line(sc, &want, &line, d);
	if (ret < 0 || !line)
		return ret; /* none: declared but not requested (yet), not a vector to steer */
	ret = add_vector_from(bd, line->irq, IP_ROUTE_DT, index);
	if (ret < 0)
		return ret;
	if (admin)
		bd->vectors[bd->nr_vectors - 1].admin = true;
	return 0;
}

/*
 * Route 2: the of_node's interrupts (or interrupts-extended), each
 * translated as its controller's driver does and found by chip and hwirq.
 * The position of each is kept: MCQ hosts list their per-queue
 * interrupts in queue order after the host's own. With @admin_only (the
 * queues were found in msi_irqs) they are the host's other interrupts.
 */
static int vectors_by_devicetree(struct scan *sc, struct ip_blockdev *bd, const char *devpath,
				 bool admin_only, struct ip_diag *d)
{
	_cleanup_free_ char *link = ip_asprintf("%s/of_node", devpath);
	_cleanup_free_ char *node = NULL;
	_cleanup_free_ uint32_t *cells = calloc(IP_DT_MAX_CELLS, sizeof(uint32_t));
	int n = 0, ret, index = 0;

	if (!link || !cells)
		return -ENOMEM;
	if (resolve_dir(sc->r, link, &node) < 0)
		return 0;
	bd->routes_tried |= 1u << IP_ROUTE_DT;
	ret = cells_of(sc->r, node, "interrupts-extended", cells, IP_DT_MAX_CELLS, &n, d);
	if (ret == 0) {
		/* <&ctrl spec...> repeated, each spec as long as that ctrl's #interrupt-cells */
		for (int i = 0; i < n; index++) {
			const char *ctrl = NULL;
			uint32_t nc;

			ret = find_phandle(sc, cells[i], &ctrl);
			if (ret == -ENOENT)
				return ip_diag_set(d, -ENOENT, "%s: interrupts-extended names phandle <%#x>, no such node",
						   node, cells[i]);
			if (ret < 0)
				return ret;
			if (read_u32(sc->r, ctrl, "#interrupt-cells", &nc) < 0 || nc == 0 || nc > 8 ||
			    (uint32_t)(n - i - 1) < nc)
				return ip_diag_set(d, -EINVAL, "%s: interrupts-extended does not fit %s's #interrupt-cells",
						   node, ctrl);
			ret = dt_match_one(sc, bd, ctrl, &cells[i + 1], nc, index, admin_only, d);
			if (ret < 0)
				return ret;
			i += 1 + (int)nc;
		}
		return 0;
	}
	if (ret != -ENOENT)
		return ret;
	ret = cells_of(sc->r, node, "interrupts", cells, IP_DT_MAX_CELLS, &n, d);
	if (ret == -ENOENT)
		return 0; /* a node without interrupts: nothing to find here */
	if (ret < 0)
		return ret;
	{
		const char *ctrl = NULL;
		uint32_t nc;

		ret = dt_parent(sc, node, &ctrl, d);
		if (ret < 0)
			return ret;
		if (read_u32(sc->r, ctrl, "#interrupt-cells", &nc) < 0 || nc == 0 || nc > 8 || n % nc)
			return ip_diag_set(d, -EINVAL, "%s: interrupts do not fit %s's #interrupt-cells", node,
					   ctrl);
		for (int i = 0; i < n; i += (int)nc, index++) {
			ret = dt_match_one(sc, bd, ctrl, &cells[i], nc, index, admin_only, d);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

/* kernel/irq/msi.c msi_sysfs_populate_desc: one file per MSI IRQ, for any
 * device with MSI descriptors, not only PCI */
static int vectors_by_msi(struct ip_root *r, struct ip_blockdev *bd, const char *msi)
{
	_cleanup_free_ long *irqs = NULL;
	int n = 0, ret;

	bd->routes_tried |= 1u << IP_ROUTE_MSI;
	if (list_numeric(r, msi, &irqs, &n) != 0 || n <= 0)
		return 0;
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *entry = ip_asprintf("%s/%ld", msi, irqs[i]);
		_cleanup_free_ char *kind = NULL;

		/* "msi" or "msix"; read so that a capture holds the
		 * entry and its replay finds the same vectors. */
		if (!entry)
			return -ENOMEM;
		(void)ip_root_read_line(r, entry, &kind);
		ret = add_vector_from(bd, (unsigned)irqs[i], IP_ROUTE_MSI, -1);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * A UFS host's first interrupt is the host controller's own (UIC, task
 * management, errors; the ufs-qcom and ufs-mediatek bindings list it
 * first), and with MCQ the per-queue ones follow it in queue order
 * (ufs-mediatek.c ufs_mtk_init_mcq_irq: queue i is platform_get_irq(pdev,
 * i + 1), requested with the name UFSHCD like the host's). The counts
 * cannot tell this when a poll queue makes the hw queues one more than the
 * per-queue interrupts, so the host is named here.
 */
static int mark_ufs_host_vector(struct ip_root *r, struct ip_blockdev *bd)
{
	char pn[64];
	int ret = read_proc_name(r, bd->syspath, pn, sizeof(pn));

	if (ret < 0)
		return ret;
	if (strcmp(pn, "ufshcd") == 0)
		for (int i = 0; i < bd->nr_vectors; i++)
			if (bd->vectors[i].dt_index == 0)
				bd->vectors[i].admin = true;
	return 0;
}

/*
 * The routes in the order the kernel's own facts come: msi_irqs (PCI and
 * platform MSI: Qualcomm UFS ESI, GICv3 ITS), the PCI irq file, the
 * devicetree, ACPI, then names the kernel gives, then guesses. A route
 * that cannot be read says why in route_note, and the next is tried.
 */
static int read_vectors(struct scan *sc, struct ip_blockdev *bd, const struct busdev *b)
{
	struct ip_root *r = sc->r;
	_cleanup_free_ char *msi = ip_asprintf("%s/msi_irqs", b->path);
	_cleanup_free_ char *irqf = ip_asprintf("%s/irq", b->path);
	_cleanup_free_ char *fw = ip_asprintf("%s/firmware_node", b->path);
	struct ip_diag dd = { "" };
	bool ufs_shared;
	long long irq;
	int ret;

	if (!msi || !irqf || !fw)
		return -ENOMEM;
	ret = vectors_by_msi(r, bd, msi);
	if (ret < 0)
		return ret;
	if (b->bus == IP_BUS_PCI) {
		if (bd->nr_vectors)
			return 0;
		/* INTx: drivers/pci/pci-sysfs.c irq, 0 when there is no pin */
		bd->routes_tried |= 1u << IP_ROUTE_INTX;
		if (ip_root_read_long(r, irqf, &irq) == 0 && irq > 0 && irq <= 0x7fffffff)
			return add_vector_from(bd, (unsigned)irq, IP_ROUTE_INTX, -1);
		return 0;
	}
	if (b->pvbus[0])
		return vectors_paravirt(sc->r, bd, b, sc);

	/* With platform MSI the devicetree still lists the host's wired
	 * interrupt (Qualcomm UFS: the "ufshcd" SPI next to the ESI vectors). */
	ret = vectors_by_devicetree(sc, bd, b->path, bd->nr_vectors > 0, &dd);
	if (ret == -ENOMEM)
		return ret;
	if (ret < 0)
		snprintf(bd->route_note, sizeof(bd->route_note), "devicetree: %s", dd.msg);
	if (bd->route == IP_ROUTE_DT && bd->nr_vectors > 1) {
		ret = mark_ufs_host_vector(r, bd);
		if (ret < 0)
			return ret;
	}
	if (bd->nr_vectors)
		return 0;

	/*
	 * Route 3, ACPI: drivers/acpi/acpi_platform.c copies a device's _CRS
	 * interrupts into the platform_device's resources, and nothing in
	 * sysfs shows them (firmware_node/ has path, hid, status, but no
	 * resources; only PNP devices have a resources file). So an ACPI
	 * platform device can only be found by name: the route is marked as
	 * tried so reports say it was looked at.
	 */
	if (ip_root_exists(r, fw))
		bd->routes_tried |= 1u << IP_ROUTE_ACPI;

	/* another UFS host's "ufshcd" IRQ is not this one's to take */
	ret = ufshcd_name_shared(r, bd, b, &ufs_shared);
	if (ret < 0)
		return ret;
	ret = vectors_by_kernel_name(r, bd, b, sc, ufs_shared);
	if (ret < 0 || bd->nr_vectors)
		return ret;
	return vectors_by_heuristic(r, bd, b, sc, ufs_shared);
}

static const struct ip_irq_name *find_name(const struct ip_irq_name *names, int nr_names,
					   unsigned irq)
{
	for (int i = 0; i < nr_names; i++)
		if (names[i].irq == irq)
			return &names[i];
	return NULL;
}

/*
 * N of the "ataN" directory right under the controller on the disk's
 * path, or -1. drivers/ata/libata-transport.c ata_tport_add names each
 * port "ata%d" after its print_id, which counts ports across every host,
 * so N is not the port's index in its host.
 */
static long ata_print_id(const char *syspath, const char *ctrl)
{
	size_t n = strlen(ctrl), len;
	const char *p;
	char comp[16];

	if (strncmp(syspath, ctrl, n) != 0 || syspath[n] != '/')
		return -1;
	p = syspath + n + 1;
	if (strncmp(p, "ata", 3) != 0)
		return -1;
	len = strcspn(p, "/");
	if (len >= sizeof(comp))
		return -1;
	memcpy(comp, p, len);
	comp[len] = '\0';
	return digits_to_end(comp + 3);
}

static bool action_is(const char *name, void *ctx)
{
	return strcmp(name, ctx) == 0;
}

/* The vector of @bd named @want, -1 if none or several are. */
static int vector_named(const struct ip_blockdev *bd, const struct scan *sc, const char *want)
{
	int found = -1;

	for (int i = 0; i < bd->nr_vectors; i++) {
		const struct ip_irq_name *nm = find_name(sc->names, sc->nr_names, bd->vectors[i].irq);

		if (!nm || !any_action(nm->actions, action_is, (void *)want))
			continue;
		if (found >= 0)
			return -1;
		found = i;
	}
	return found;
}

/*
 * An AHCI host with one MSI per port (drivers/ata/ahci.c ahci_init_msi
 * sets AHCI_HFLAG_MULTI_MSI) lists every port's vector in msi_irqs, and
 * taking them all would steer each disk's interrupt by every other
 * disk's submitters. drivers/ata/libahci.c ahci_host_activate_multi_irqs
 * requests port i's vector with pp->irq_desc, which ahci_port_start fills
 * with snprintf(irq_desc, 8, "%s%d", dev_driver_string(dev), port_no):
 * the name is cut to 7 characters as the kernel cuts it. Every multi-MSI
 * AHCI host uses the same names, so only this device's vectors are
 * searched. The port index is class/ata_port/ataN/port_no less one
 * (libata-transport.c shows local_port_no, port_no + 1; a host has at
 * most AHCI_MAX_PORTS, 32). Only drivers named "ahci..." are narrowed, as
 * only libahci names vectors so; other drivers' vectors stay as found.
 * With one vector (single MSI "ahci[<bdf>]", INTx) there is nothing to
 * choose. When the port's vector cannot be told apart, none is kept
 * rather than the other ports', and route_note says why in the
 * unsteerable warning.
 */
static void ahci_port_vector(struct ip_root *r, struct ip_blockdev *bd, const struct busdev *b,
			     const struct scan *sc)
{
	char path[64], want[48], why[96];
	size_t used = strlen(bd->route_note);
	long id = ata_print_id(bd->syspath, b->path);
	long long port = 0;
	int keep = -1;

	if (bd->nr_vectors < 2 || !strstr(b->driver, "ahci"))
		return;
	snprintf(path, sizeof(path), "sys/class/ata_port/ata%ld/port_no", id);
	if (id < 0) {
		snprintf(why, sizeof(why), "no ataN directory on its path");
	} else if (ip_root_read_long(r, path, &port) < 0 || port < 1 || port > 32) {
		snprintf(why, sizeof(why), "%s unreadable", path);
	} else {
		snprintf(want, sizeof(want), "%s%lld", b->driver, port - 1);
		want[MIN(strlen(want), (size_t)7)] = '\0';
		keep = vector_named(bd, sc, want);
		snprintf(why, sizeof(why), "not one vector named \"%s\"", want);
	}
	if (keep >= 0) {
		bd->vectors[0] = bd->vectors[keep];
		bd->nr_vectors = 1;
		return;
	}
	snprintf(bd->route_note + used, sizeof(bd->route_note) - used,
		 "%s%d per-port AHCI vectors, which is %s's is unknown: %s", used ? "; " : "",
		 bd->nr_vectors, bd->name, why);
	bd->nr_vectors = 0;
	bd->route = IP_ROUTE_NONE;
}

/*
 * An mmc host has one hw queue and one interrupt that completes its
 * requests, but its devicetree node may list others: sdhci-msm's
 * interrupts are "hc_irq" then "pwr_irq" (qcom,sdhci-msm binding), and
 * drivers/mmc/host/sdhci-msm.c sdhci_msm_probe requests pwr_irq as
 * dev_name(), a threaded handler that only acknowledges bus power and
 * voltage switches. sdhci.c sdhci_add_host requests the host's own as
 * mmc_hostname(), the "mmcN" directory on the disk's path. So when one
 * vector has that name, it is the I/O vector and the others are not on
 * the I/O path: without this, two devicetree vectors for one queue read
 * as "the host's own, then the queue's" (UFS MCQ) and pwr_irq was steered
 * in place of the host's interrupt. Hosts that name their IRQ otherwise
 * ("dw-mci", "sunxi-mmc") are left as found.
 */
static void mmc_host_vector(struct ip_blockdev *bd, const struct scan *sc)
{
	char mmc[32];
	int keep;

	if (bd->nr_vectors < 2)
		return;
	component_after(bd->syspath, "/mmc_host/", mmc, sizeof(mmc));
	if (!mmc[0] || (keep = vector_named(bd, sc, mmc)) < 0)
		return;
	for (int i = 0; i < bd->nr_vectors; i++)
		bd->vectors[i].admin = i != keep;
}

/*
 * A disk on USB completes on its host controller's primary interrupter.
 * An xHCI has one event ring per interrupter, and the kernel sets up only
 * interrupter 0 for transfers (drivers/usb/host/xhci-mem.c xhci_mem_init:
 * ir_set[0]; later kernels add secondary ones only for audio offload).
 * MSI-X entry i is interrupter i, yet 6.1 xhci-pci.c xhci_setup_msix
 * allocates min(online CPUs + 1, HCS_MAX_INTRS) vectors and requests every
 * one as "xhci_hcd" (6.8+ requests only vector 0, the rest stay allocated),
 * so msi_irqs lists them all: the first (msi_irqs is sorted by IRQ, which
 * follows the MSI index) is the disk's, the others never fire.
 */
static void usb_primary_vector(struct ip_blockdev *bd, const struct busdev *b)
{
	if (!b->usb_root[0] || bd->nr_vectors < 2 || bd->route != IP_ROUTE_MSI)
		return;
	for (int i = 0; i < bd->nr_vectors; i++)
		bd->vectors[i].admin = i != 0;
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

/*
 * Whether every I/O vector came in an order the kernel gave: msi_irqs
 * (sorted by IRQ, which follows msi_index as the IRQs are allocated in
 * one block) or the devicetree's interrupts. Such an order is trusted
 * where the counts tell the layout:
 * - as many vectors as hw queues: vector k serves queue k;
 * - one more: the first is the host's own interrupt. UFS MCQ lists the
 *   legacy host interrupt first in the devicetree and the per-queue ones
 *   after it, in queue order (drivers/ufs/host/ufs-mediatek.c
 *   ufs_mtk_init_mcq_irq takes platform_get_irq(pdev, i + 1) for queue
 *   i); ufshcd MCQ kernels that keep a dedicated device-command queue
 *   (UFSHCD_MCQ_IO_QUEUE_OFFSET, 6.3-6.5 as far as we know) also give
 *   it the first ESI vector. Both read the same here;
 * - fewer: the last queues have no vector. Poll queues come after the
 *   default and read queues (HCTX_TYPE_POLL is the last map type) and
 *   never get an interrupt: Qualcomm ESI allocates nr_hw_queues minus
 *   the poll queues (ufs-qcom.c ufs_qcom_config_esi), NVMe and the SCSI
 *   HBAs likewise.
 */
static bool kernel_ordered(const struct ip_blockdev *bd)
{
	for (int i = 0; i < bd->nr_vectors; i++)
		if (!bd->vectors[i].admin && bd->vectors[i].route != IP_ROUTE_MSI &&
		    bd->vectors[i].route != IP_ROUTE_DT)
			return false;
	return true;
}

/*
 * The number of vectors ahead of the queue vectors, from the kernel's own
 * mapping: blk_mq_pci_map_queues(map, pdev, offset) (blk_mq_map_hw_queues
 * from 6.14) gives hw queue q exactly the CPUs of vector q + offset's
 * affinity, and the drivers pass their pre-vector count as the offset
 * (mpi3mr op_reply_q_offset, megaraid_sas low_latency_index_start,
 * mpt3sas high_iops_queues). So the offset is the one under which every
 * queue's cpu_list is its vector's smp_affinity_list; queues past the
 * last vector are poll queues. Here v->queue still holds the index in the
 * name (msixM). -1 when no offset fits or the affinities are unreadable.
 */
static int msix_offset(struct ip_root *r, const struct ip_blockdev *bd, int maxm)
{
	_cleanup_free_ ip_cpuset *aff = NULL;
	_cleanup_free_ bool *have = NULL;
	int got = 0;

	if (maxm < 0 || maxm > 4096 || bd->nr_queues < 2)
		return -1;
	aff = calloc(maxm + 1, sizeof(*aff));
	have = calloc(maxm + 1, sizeof(*have));
	if (!aff || !have)
		return -1;
	for (int i = 0; i < bd->nr_vectors; i++) {
		const struct ip_vector *v = &bd->vectors[i];
		_cleanup_free_ char *path = NULL, *text = NULL;

		if (v->map != IP_VEC_MAP_NAME || v->queue < 0 || v->queue > maxm)
			continue;
		path = ip_asprintf("proc/irq/%u/smp_affinity_list", v->irq);
		if (!path || ip_root_read(r, path, &text, NULL) < 0 ||
		    cpuset_parse_list(&aff[v->queue], text) < 0)
			continue;
		have[v->queue] = true;
		got++;
	}
	if (got < 2)
		return -1;
	for (int o = 0; o <= maxm; o++) {
		int matched = 0;
		bool ok = true, tail = false;

		for (int qi = 0; qi < bd->nr_queues && ok; qi++) {
			int m = qi + o;

			if (m > maxm || !have[m]) {
				tail = true;
				continue;
			}
			if (tail || !cpuset_equal(&aff[m], &bd->queues[qi].cpus))
				ok = false;
			else
				matched++;
		}
		if (ok && matched >= 2)
			return o;
	}
	return -1;
}

/* Queue numbers from the kernel's action names (nvme0q3, msixM); returns
 * how many vectors got one and the highest in *maxq. */
static int map_by_name(struct ip_blockdev *bd, const struct ip_irq_name *names, int nr_names,
		       int *maxq)
{
	int named = 0;

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
			*maxq = MAX(*maxq, q.queue);
		} else {
			/* a route may already know it is the host's own (UFS) */
			v->admin = v->admin || q.admin;
		}
	}
	return named;
}

/* With the offset o > 0 that msix_offset found, msixM serves queue M - o;
 * returns how many named vectors are left. */
static int apply_msix_offset(struct ip_blockdev *bd, int o, int named)
{
	for (int i = 0; i < bd->nr_vectors; i++) {
		struct ip_vector *v = &bd->vectors[i];

		if (v->map != IP_VEC_MAP_NAME)
			continue;
		if (v->queue >= o) {
			v->queue -= o;
			continue;
		}
		/*
		 * Below the offset: pre-vectors. One is mpi3mr's admin
		 * reply queue (op_reply_q_offset = 1); more are the
		 * high-IOPS reply queues of megaraid_sas
		 * (low_latency_index_start) and mpt3sas
		 * (high_iops_queues), which the drivers pick for a
		 * busy device whatever queue the I/O came on
		 * (megasas_get_msix_index, _base_get_high_iops_msix_index):
		 * on the I/O path, serving every queue.
		 */
		v->admin = o == 1;
		v->queue = -1;
		v->map = IP_VEC_MAP_NONE;
		named--;
	}
	return named;
}

/*
 * Affinities unreadable: mpi3mr and megaraid_sas reserve msix0 for the
 * admin queue when they have more than one vector (op_reply_q_offset = 1),
 * so msixM then serves hw queue M-1: one named queue too many gives that
 * away.
 */
static void msix0_is_admin(struct ip_blockdev *bd)
{
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

/* A name that points past the last queue is not to be trusted. Returns
 * the I/O (non-admin) vectors; *named loses the distrusted ones. */
static int drop_names_past_queues(struct ip_blockdev *bd, int *named)
{
	int io = 0;

	for (int i = 0; i < bd->nr_vectors; i++) {
		struct ip_vector *v = &bd->vectors[i];

		if (v->map == IP_VEC_MAP_NAME && v->queue >= bd->nr_queues) {
			v->queue = -1;
			v->map = IP_VEC_MAP_NONE;
			(*named)--;
		}
		if (!v->admin)
			io++;
	}
	return io;
}

/* No names: one I/O vector serves every queue, or the vectors follow the
 * queues in the order the counts allow. Returns the I/O vectors left. */
static int map_unnamed(struct ip_blockdev *bd, int io, int named)
{
	if (io == 1) {
		/* one I/O vector serves every queue (AHCI, UFS, INTx lines) */
		for (int i = 0; i < bd->nr_vectors; i++) {
			if (!bd->vectors[i].admin) {
				bd->vectors[i].queue = -1;
				bd->vectors[i].map = IP_VEC_MAP_NONE;
			}
		}
	} else if (named == 0 && io > 1 &&
		   (io == bd->nr_queues || (kernel_ordered(bd) && io <= bd->nr_queues + 1))) {
		int k = io == bd->nr_queues + 1 ? -1 : 0;

		for (int i = 0; i < bd->nr_vectors; i++) {
			if (bd->vectors[i].admin)
				continue;
			if (k < 0) {
				/* one more than the queues: the first is the host's
				 * own, listed ahead of the queues (below) */
				bd->vectors[i].admin = true;
				k++;
				continue;
			}
			bd->vectors[i].queue = k++;
			bd->vectors[i].map = IP_VEC_MAP_ORDER;
		}
		if (io == bd->nr_queues + 1)
			io--;
	}
	return io;
}

static void link_queues(struct ip_blockdev *bd, int io)
{
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

/* A queue's index and its place in the device's queues. */
struct qpos {
	unsigned index;
	int k;
};

static int cmp_qpos(const void *a, const void *b)
{
	const struct qpos *x = a, *y = b;

	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return x->k - y->k;
}

static void serves_add(struct ip_vec_serves *v, const struct ip_hwqueue *hq)
{
	cpuset_or(&v->cpus, &v->cpus, &hq->cpus);
	v->nr++;
}

/* Queues by index, so that this is not vectors x queues: 1,024 of each on
 * an NVMe drive of a 1,024-CPU machine. */
int ip_blockdev_link_serves(struct ip_blockdev *bd)
{
	struct qpos *qp = malloc(sizeof(*qp) * (bd->nr_queues ? bd->nr_queues : 1));
	int nq = 0;

	for (int vi = 0; vi < bd->nr_vectors; vi++)
		bd->vectors[vi].serves = (struct ip_vec_serves){ .lo = -1, .hi = -1 };
	if (!qp)
		return -ENOMEM;
	for (int k = 0; k < bd->nr_queues; k++) {
		const struct ip_hwqueue *hq = &bd->queues[k];

		if (hq->vector >= 0 && hq->vector < bd->nr_vectors)
			serves_add(&bd->vectors[hq->vector].serves, hq);
		/* a vector's queue is >= 0: no other index can be its */
		if (hq->index >= 0)
			qp[nq++] = (struct qpos){ (unsigned)hq->index, k };
	}
	ip_sort(qp, nq, sizeof(*qp), cmp_qpos);
	for (int vi = 0; vi < bd->nr_vectors; vi++) {
		struct ip_vec_serves *v = &bd->vectors[vi].serves;
		int queue = bd->vectors[vi].queue;
		bool found;
		size_t j;

		if (queue >= 0) {
			j = IP_SORTED_POS(qp, nq, index, (unsigned)queue, &found);
			for (; j < (size_t)nq && qp[j].index == (unsigned)queue; j++)
				if (bd->queues[qp[j].k].vector != vi) /* else counted as naming it */
					serves_add(v, &bd->queues[qp[j].k]);
		}
		v->lo = cpuset_first(&v->cpus);
		v->hi = cpuset_last(&v->cpus);
	}
	free(qp);
	return 0;
}

static void map_vectors(struct ip_root *r, struct ip_blockdev *bd, const struct ip_irq_name *names,
			int nr_names)
{
	int io, named, maxq = -1, o;

	named = map_by_name(bd, names, nr_names, &maxq);
	o = named ? msix_offset(r, bd, maxq) : -1;
	if (o > 0)
		named = apply_msix_offset(bd, o, named);
	else if (o < 0 && named == bd->nr_queues + 1 && maxq == bd->nr_queues)
		msix0_is_admin(bd);
	io = drop_names_past_queues(bd, &named);
	io = map_unnamed(bd, io, named);
	link_queues(bd, io);
}

/* ---- Intel VMD ------------------------------------------------------- */

/* @irq's line, sorted by load_hw(); NULL for one shown on two lines. */
static const struct hwline *hw_of(const struct scan *sc, unsigned irq)
{
	bool found;
	size_t i = IP_SORTED_POS(sc->hw, sc->nr_hw, irq, irq, &found);

	return found && !sc->hw[i].twice ? &sc->hw[i] : NULL;
}

/* The "vmd%d" name drivers/pci/controller/vmd.c gives each of its own
 * vectors (vmd->name, requested for every MSI-X entry), or NULL. */
static const char *vmd_name(const struct scan *sc, unsigned long irq)
{
	for (int i = 0; i < sc->nr_names; i++) {
		const char *a = sc->names[i].actions;

		if (sc->names[i].irq == irq && a && strncmp(a, "vmd", 3) == 0 && digits_to_end(a + 3) >= 0)
			return a;
	}
	return NULL;
}

enum vmd_fate { VMD_NOT, VMD_CARRIER, VMD_SIBLING, VMD_STUCK };

/*
 * What becomes of vector @i, a "VMD-MSI" line or not. Its hwirq is the
 * Linux IRQ of the VMD vector it rides (vmd_msi_init), the carrier, as
 * is that of every other line the carrier delivers, so /proc/interrupts
 * shows who shares it. The carrier can stand for this vector when every
 * line it carries is this device's and at most one of them is an I/O
 * vector: that one's (or the first's, when all are admin) is the carrier
 * (VMD_CARRIER), the others are dropped (VMD_SIBLING). Otherwise moving it
 * would move another queue's or device's completions too (VMD_STUCK).
 */
static enum vmd_fate vmd_fate(const struct scan *sc, const struct ip_blockdev *bd, int i,
			      unsigned long *carrier, const char **name)
{
	const struct hwline *h = hw_of(sc, bd->vectors[i].irq);
	int io = 0, pick = -1;

	if (!h || strcmp(h->chip, "VMD-MSI") != 0)
		return VMD_NOT;
	if (ip_parse_hwirq(h->hwirq, carrier) < 0 || !(*name = vmd_name(sc, *carrier)))
		return VMD_STUCK;
	for (int k = 0; k < sc->nr_hw; k++) {
		int j = 0;

		if (strcmp(sc->hw[k].chip, "VMD-MSI") != 0 || strcmp(sc->hw[k].hwirq, h->hwirq) != 0)
			continue;
		while (j < bd->nr_vectors && bd->vectors[j].irq != sc->hw[k].irq)
			j++;
		if (j == bd->nr_vectors)
			return VMD_STUCK; /* another device's */
		if (!bd->vectors[j].admin) {
			io++;
			pick = j;
		} else if (pick < 0 || (bd->vectors[pick].admin && j < pick)) {
			pick = j;
		}
	}
	if (io > 1)
		return VMD_STUCK;
	return pick == i ? VMD_CARRIER : VMD_SIBLING;
}

/* Drops the vectors marked with queue -2 and links the queues again. */
static void drop_marked(struct ip_blockdev *bd)
{
	int n = 0, io = 0;

	for (int i = 0; i < bd->nr_vectors; i++) {
		if (bd->vectors[i].queue == -2)
			continue;
		io += !bd->vectors[i].admin;
		bd->vectors[n++] = bd->vectors[i];
	}
	bd->nr_vectors = n;
	link_queues(bd, io);
}

/*
 * PCI MSI chips none of whose vectors can be moved on its own, by the
 * start of the chip's name, and why:
 * - pcie-brcmstb.c (Raspberry Pi 4 and CM4, BCM7xxx set-top boxes),
 *   "BRCM STB PCIe MSI": brcm_pcie_msi_isr is a chained handler on the
 *   controller's "msi" SPI and brcm_msi_set_affinity returns -EINVAL (the
 *   Raspberry Pi kernel's moves the chained SPI instead, so every vector
 *   with it);
 * - Intel VMD from 6.17 (vmd.c msi_create_parent_irq_domain, prefix
 *   "VMD-"): the per-device chip, "VMD-PCI-MSIX-<bdf>", has no affinity
 *   (VMD_MSI_FLAGS_REQUIRED holds MSI_FLAG_NO_AFFINITY), and its hwirq is
 *   the MSI-X index, so unlike "VMD-MSI" (vmd_carriers()) the line no
 *   longer names the vmd vector that carries it.
 * Such vectors are dropped, so the disk is unsteerable and route_note
 * says why.
 */
static int stuck_msi(struct scan *sc, struct ip_blockdev *bd)
{
	static const struct {
		const char *prefix, *why;
	} chips[] = {
		{ "BRCM STB PCIe MSI", "are demultiplexed from one chained interrupt, which moves none alone" },
		{ "VMD-PCI-MSI", "cannot be moved, and no line shows which vmd vector carries them" },
	};
	struct ip_diag dd = { "" };
	size_t used, k = 0;
	int n = 0, ret;

	if (bd->bus != IP_BUS_PCI || !bd->nr_vectors)
		return 0;
	ret = load_hw(sc, &dd);
	if (ret < 0) /* no chips known: nothing to tell */
		return ret == -ENOMEM ? ret : 0;
	for (int i = 0; i < bd->nr_vectors; i++) {
		const struct hwline *h = hw_of(sc, bd->vectors[i].irq);

		for (size_t c = 0; h && c < ARRAY_SIZE(chips); c++) {
			if (strncmp(h->chip, chips[c].prefix, strlen(chips[c].prefix)) != 0)
				continue;
			k = c;
			bd->vectors[i].queue = -2;
			n++;
		}
	}
	if (!n)
		return 0;
	drop_marked(bd);
	used = strlen(bd->route_note);
	snprintf(bd->route_note + used, sizeof(bd->route_note) - used, "%s%d %s vectors %s",
		 used ? "; " : "", n, chips[k].prefix, chips[k].why);
	bd->route_known = true;
	return 0;
}

/*
 * NVMe behind Intel VMD with MSI remapping (every client part,
 * VMD_FEATS_CLIENT cannot bypass it): the device's vectors are in VMD's
 * "VMD-MSI" domain, whose chip has no irq_set_affinity
 * (MSI_FLAG_NO_AFFINITY: "PCI MSIs cannot be steered separately"), so
 * their managed masks say nothing of where completions land. VMD's own
 * MSI-X vectors ("vmd0", not managed) do, so each vector is replaced by
 * its carrier, or dropped when it cannot be moved apart (vmd_fate()).
 * VMD's domains start at 0x10000 (vmd_find_free_domain), which is how its
 * children are told without reading /proc/interrupts for every disk.
 */
static int vmd_carriers(struct scan *sc, struct ip_blockdev *bd)
{
	const char *colon = strchr(bd->bus_id, ':'), *name = NULL;
	struct ip_diag dd = { "" };
	int moved = 0, stuck = 0, ret;
	size_t used;

	if (bd->bus != IP_BUS_PCI || !colon || colon - bd->bus_id < 5 || !bd->nr_vectors)
		return 0;
	ret = load_hw(sc, &dd);
	if (ret < 0)
		return ret == -ENOMEM ? ret : 0;
	for (int i = 0; i < bd->nr_vectors; i++) {
		unsigned long carrier = 0;
		enum vmd_fate f = vmd_fate(sc, bd, i, &carrier, &name);

		moved += f == VMD_CARRIER;
		stuck += f == VMD_STUCK;
		if (f == VMD_CARRIER)
			bd->vectors[i].irq = (unsigned)carrier;
		/* a sibling's or stuck vector's queue keeps none */
		bd->vectors[i].queue = f == VMD_NOT || f == VMD_CARRIER ? bd->vectors[i].queue : -2;
	}
	drop_marked(bd);
	if (!moved && !stuck)
		return 0;
	used = strlen(bd->route_note);
	used += (size_t)snprintf(bd->route_note + used, sizeof(bd->route_note) - used,
				 "%s%d VMD-MSI vectors are moved as the %s vectors that carry them",
				 used ? "; " : "", moved, name ? name : "VMD");
	if (stuck && used < sizeof(bd->route_note))
		snprintf(bd->route_note + used, sizeof(bd->route_note) - used,
			 "; %d ride one with another and cannot be moved", stuck);
	bd->route_known = true;
	return 0;
}

static void blockdev_free(struct ip_blockdev *bd)
{
	free(bd->syspath);
	free(bd->queues);
	free(bd->vectors);
	memset(bd, 0, sizeof(*bd));
}

/* queue/ knobs the policy reads; absent or odd ones keep the defaults */
static int read_queue_knobs(struct ip_root *r, struct ip_blockdev *bd)
{
	_cleanup_free_ char *path = ip_asprintf("%s/queue/rq_affinity", bd->syspath);
	long long v;

	if (!path)
		return -ENOMEM;
	if (ip_root_read_long(r, path, &v) == 0 && v >= 0 && v <= 2)
		bd->rq_affinity = (int)v;
	free(path);
	path = ip_asprintf("%s/queue/rotational", bd->syspath);
	if (!path)
		return -ENOMEM;
	bd->rotational = ip_root_read_long(r, path, &v) == 0 && v == 1;
	return 0;
}

/* The bus device's local_cpulist and numa_node. Neither is fatal: what
 * cannot be used is said in numa_note, and the device is still steered. */
static int read_locality(struct ip_root *r, struct ip_blockdev *bd, const char *devpath)
{
	_cleanup_free_ char *path = ip_asprintf("%s/local_cpulist", devpath);
	_cleanup_free_ char *text = NULL;
	long long v;
	int ret;

	if (!path)
		return -ENOMEM;
	cpuset_zero(&bd->local_cpus);
	/* drivers/pci/pci-sysfs.c local_cpulist_show: a cpulist and "\n". A
	 * garbled one is said, and the policy falls back to the topology's
	 * CPUs of numa_node: the device is still steered. */
	if (ip_root_read(r, path, &text, NULL) == 0 && cpuset_parse_list(&bd->local_cpus, text) < 0) {
		cpuset_zero(&bd->local_cpus);
		snprintf(bd->numa_note, sizeof(bd->numa_note), "%s: not a CPU list: \"%.*s\"", path,
			 (int)strcspn(text, "\n") > 48 ? 48 : (int)strcspn(text, "\n"), text);
	}
	free(path);
	path = ip_asprintf("%s/numa_node", devpath);
	if (!path)
		return -ENOMEM;
	/* numa_node_show: "%d\n", -1 (NUMA_NO_NODE) when firmware gave none */
	ret = ip_root_read_long(r, path, &v);
	if (ret == 0 && v >= 0 && v < 65536)
		bd->numa_node = (int)v;
	else if ((ret == 0 && v != -1) || (ret < 0 && ret != -ENOENT && !bd->numa_note[0]))
		snprintf(bd->numa_note, sizeof(bd->numa_note), "%s: %s", path,
			 ret == -EINVAL ? "not a decimal number" : ret < 0 ? strerror(-ret) : "not a NUMA node");
	return 0;
}

static int read_blockdev(struct scan *sc, const char *dir, const char *name, struct ip_blockdev *bd,
			 struct ip_diag *d)
{
	struct ip_root *r = sc->r;
	_cleanup_free_ char *link = ip_asprintf("%s/%s", dir, name);
	_cleanup_free_ char *devf = NULL, *text = NULL;
	struct busdev b;
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

	ret = read_queue_knobs(r, bd);
	if (ret < 0)
		return ret;

	ret = read_queues(r, bd, d);
	if (ret < 0)
		return ret;

	ret = find_busdev(r, bd->syspath, &b, d);
	if (ret < 0)
		return ret;
	copy_str(bd->driver, sizeof(bd->driver), b.virtio_driver[0] ? b.virtio_driver : b.driver);
	copy_str(bd->bus_id, sizeof(bd->bus_id), base_name(b.path));
	bd->bus = b.bus;

	ret = read_locality(r, bd, b.path);
	if (ret < 0)
		return ret;

	ret = read_vectors(sc, bd, &b);
	if (ret < 0)
		return ip_diag_set(d, ret, "%s: reading vectors: %s", b.path, strerror(-ret));
	ahci_port_vector(r, bd, &b, sc);
	mmc_host_vector(bd, sc);
	usb_primary_vector(bd, &b);
	map_vectors(r, bd, sc->names, sc->nr_names);
	ret = stuck_msi(sc, bd);
	if (ret == 0)
		ret = vmd_carriers(sc, bd);
	if (ret < 0)
		return ret;
	return ip_blockdev_link_serves(bd);
}

/*
 * NVMe native multipath (CONFIG_NVME_MULTIPATH, nvme_core.multipath=Y):
 * for a namespace of a subsystem that may have several controllers (CMIC),
 * drivers/nvme/host/multipath.c nvme_mpath_alloc_disk makes a head disk
 * "nvme%dn%d" (subsystem instance, head instance) under
 * virtual/nvme-subsystem/nvme-subsysS/. It is bio-based (blk_alloc_disk):
 * no mq/, no interrupt. Each controller's own disk is named
 * "nvme%dc%dn%d" (subsystem, controller, head instance) and is
 * GENHD_FL_HIDDEN (core.c nvme_alloc_ns), yet it is still in sys/block
 * with a dev and mq/ (block/genhd.c only skips the bdev and partitions of
 * a hidden disk), so it is scanned as any NVMe disk with its controller's
 * vectors. What it lacks is the I/O: nvme_ns_head_submit_bio remaps the
 * head's bios to a path, and block_bio_queue fires once per bio (the
 * BIO_TRACE_COMPLETION flag), for the head's dev_t; the head's diskstats
 * count it (nvme_mpath_start_request). So each path is told its head.
 */
static bool nvme_head_name(const char *name, unsigned *subsys, unsigned *ns)
{
	int end = 0;

	return strncmp(name, "nvme", 4) == 0 && isdigit((unsigned char)name[4]) &&
	       sscanf(name, "nvme%un%u%n", subsys, ns, &end) == 2 && name[end] == '\0';
}

static bool nvme_path_name(const char *name, unsigned *subsys, unsigned *ns)
{
	unsigned ctrl;
	int end = 0;

	return strncmp(name, "nvme", 4) == 0 && isdigit((unsigned char)name[4]) &&
	       sscanf(name, "nvme%uc%un%u%n", subsys, &ctrl, ns, &end) == 3 && name[end] == '\0';
}

static int link_mpath_heads(struct ip_root *r, const char *dir, struct ip_storage *s)
{
	for (int i = 0; i < s->nr_devs; i++) {
		struct ip_blockdev *bd = &s->devs[i];
		_cleanup_free_ char *devf = NULL, *text = NULL;
		unsigned subsys, ns;

		if (!nvme_path_name(bd->name, &subsys, &ns))
			continue;
		snprintf(bd->mpath_head, sizeof(bd->mpath_head), "nvme%un%u", subsys, ns);
		devf = ip_asprintf("%s/%s/dev", dir, bd->mpath_head);
		if (!devf)
			return -ENOMEM;
		/* a path whose head is gone (being removed) is still a disk */
		if (ip_root_read_line(r, devf, &text) < 0 ||
		    sscanf(text, "%u:%u", &bd->head_major, &bd->head_minor) != 2) {
			bd->mpath_head[0] = '\0';
			bd->head_major = bd->head_minor = 0;
		}
	}
	return 0;
}

/*
 * A multipath head no path disk was found for cannot be steered, and must
 * not vanish unsaid as a disk without mq/ otherwise does: it is listed with
 * no vector, which the daemon reports as a device it cannot steer.
 */
static int add_orphan_head(struct ip_root *r, const char *dir, const char *name,
			   struct ip_storage *s)
{
	struct ip_blockdev *bd = &s->devs[s->nr_devs];
	_cleanup_free_ char *link = ip_asprintf("%s/%s", dir, name);
	_cleanup_free_ char *devf = NULL, *text = NULL, *parent = NULL;
	unsigned subsys, ns;

	if (!link || !nvme_head_name(name, &subsys, &ns))
		return link ? 0 : -ENOMEM;
	for (int i = 0; i < s->nr_devs; i++)
		if (strcmp(s->devs[i].mpath_head, name) == 0 || strcmp(s->devs[i].name, name) == 0)
			return 0;
	memset(bd, 0, sizeof(*bd));
	bd->rq_affinity = -1;
	bd->numa_node = -1;
	copy_str(bd->name, sizeof(bd->name), name);
	copy_str(bd->driver, sizeof(bd->driver), "nvme");
	if (resolve_dir(r, link, &bd->syspath) < 0)
		return 0;
	devf = ip_asprintf("%s/dev", bd->syspath);
	parent = strdup(bd->syspath);
	if (!devf || !parent) {
		blockdev_free(bd);
		return -ENOMEM;
	}
	if (ip_root_read_line(r, devf, &text) < 0 ||
	    sscanf(text, "%u:%u", &bd->major, &bd->minor) != 2) {
		blockdev_free(bd);
		return 0;
	}
	if (strrchr(parent, '/'))
		*strrchr(parent, '/') = '\0';
	copy_str(bd->bus_id, sizeof(bd->bus_id), base_name(parent));
	snprintf(bd->route_note, sizeof(bd->route_note),
		 "an NVMe multipath head: no path disk nvme%uc*n%u with hw queues found", subsys, ns);
	s->nr_devs++;
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
	struct scan sc = { .r = r, .names = names, .nr_names = nr_names };
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
		ret = read_blockdev(&sc, dir, ents[i], bd, d);
		if (ret < 0) {
			blockdev_free(bd);
			if (ret == -ENOMEM)
				break;
			ret = 0;
			continue;
		}
		s->nr_devs++;
	}
	if (ret != -ENOMEM)
		ret = link_mpath_heads(r, dir, s);
	for (size_t i = 0; i < n && ret != -ENOMEM; i++)
		ret = add_orphan_head(r, dir, ents[i], s);
	ip_strv_free(ents, n);
	scan_free(&sc);
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
	if (!s->users || --*s->users == 0) {
		for (int i = 0; i < s->nr_devs; i++)
			blockdev_free(&s->devs[i]);
		free(s->devs);
		free(s->users);
	}
	*s = (struct ip_storage){ 0 };
}

int ip_storage_share(struct ip_storage *dst, struct ip_storage *src)
{
	if (!src->users) {
		src->users = malloc(sizeof(*src->users));
		if (!src->users)
			return -ENOMEM;
		*src->users = 1;
	}
	++*src->users;
	*dst = *src;
	return 0;
}
