// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Storage discovery against the fixture trees, a real capture and small
 * trees built on the fly for the odd cases.
 *
 * The laptop's managed NVMe vectors have smp_affinity mode 0444 in the
 * generator (6.18 behaviour), but git records only the executable bit, so
 * a checkout has 0644: nothing here (or in the policy tests) may depend on
 * modes read from the committed trees.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "irqpilot/devtree.h"
#include "irqpilot/macro.h"
#include "irqpilot/procfs.h"
#include "irqpilot/report.h"
#include "irqpilot/root.h"
#include "irqpilot/storage.h"

#ifndef TOP_SRCDIR
#define TOP_SRCDIR "."
#endif
#ifndef SHARED_DIR
#define SHARED_DIR TOP_SRCDIR "/../shared"
#endif
#define FIXTURES TOP_SRCDIR "/tests/fixtures/"

/* ---- IRQ names from a tree's /proc/interrupts --------------------- */

struct names {
	int n;
	struct ip_irq_name v[512];
};

static int collect(void *ctx, const struct ip_irq_line *l)
{
	struct names *nm = ctx;

	if (nm->n >= (int)ARRAY_SIZE(nm->v))
		return -E2BIG;
	nm->v[nm->n].irq = l->irq;
	nm->v[nm->n].actions = strdup(l->actions);
	if (!nm->v[nm->n].actions)
		return -ENOMEM;
	nm->n++;
	return 0;
}

static void names_free(struct names *nm)
{
	for (int i = 0; i < nm->n; i++)
		free((char *)nm->v[i].actions);
	free(nm);
}

static struct names *read_names(struct ip_root *r)
{
	struct names *nm = calloc(1, sizeof(*nm));
	struct ip_irq_header *hdr = calloc(1, sizeof(*hdr));
	struct ip_diag d = { "" };
	char *text = NULL;
	size_t len;

	assert_non_null(nm);
	assert_non_null(hdr);
	assert_int_equal(ip_root_read(r, "proc/interrupts", &text, &len), 0);
	if (ip_parse_interrupts(text, len, hdr, collect, nm, &d) < 0)
		fail_msg("proc/interrupts: %s", d.msg);
	free(text);
	free(hdr);
	return nm;
}

/* ---- one sampled tree --------------------------------------------- */

struct scan {
	struct ip_root *r;
	struct names *nm;
	struct ip_storage s;
	struct ip_diag d;
};

static void scan_tree(struct scan *sc, const char *dir, bool with_names)
{
	memset(sc, 0, sizeof(*sc));
	assert_int_equal(ip_root_open(dir, &sc->r), 0);
	sc->nm = with_names ? read_names(sc->r) : calloc(1, sizeof(*sc->nm));
	assert_non_null(sc->nm);
	if (ip_storage_sample(sc->r, sc->nm->v, sc->nm->n, &sc->s, &sc->d) < 0)
		fail_msg("%s: %s", dir, sc->d.msg);
}

static void scan_free(struct scan *sc)
{
	ip_storage_free(&sc->s);
	names_free(sc->nm);
	ip_root_free(sc->r);
}

static const struct ip_blockdev *dev(const struct scan *sc, const char *name)
{
	for (int i = 0; i < sc->s.nr_devs; i++)
		if (strcmp(sc->s.devs[i].name, name) == 0)
			return &sc->s.devs[i];
	return NULL;
}

static const struct ip_blockdev *must_dev(const struct scan *sc, const char *name)
{
	const struct ip_blockdev *b = dev(sc, name);

	if (!b)
		fail_msg("device %s not found", name);
	return b;
}

static void assert_cpus(const ip_cpuset *s, const char *want)
{
	char buf[IP_CPULIST_MAX];

	cpuset_format_list(s, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

static const struct ip_vector *vec_by_irq(const struct ip_blockdev *b, unsigned irq)
{
	for (int i = 0; i < b->nr_vectors; i++)
		if (b->vectors[i].irq == irq)
			return &b->vectors[i];
	fail_msg("%s has no vector %u", b->name, irq);
	return NULL;
}

/* ---- names --------------------------------------------------------- */

static void test_queue_from_name(void **state)
{
	static const struct {
		const char *name;
		int queue;
		bool admin;
	} cases[] = {
		{ "nvme0q0", -1, true },
		{ "nvme0q1", 0, false },
		{ "nvme0q4", 3, false },
		{ "nvme12q65", 64, false },
		{ "nvme1q", -1, false },
		{ "nvme0q1x", -1, false },
		{ "virtio1-req.0", 0, false },
		{ "virtio1-req.3", 3, false },
		{ "virtio1-config", -1, true },
		{ "virtio0-requests", -1, false },
		{ "virtio2-virtqueues", -1, false },
		{ "virtio0", -1, false },
		{ "mpi3mr0-msix5", 5, false },
		{ "mpi3mr0-msix0", 0, false },
		{ "megasas0-msix3", 3, false },
		{ "megasas0-msix", -1, false },
		{ "ahci[0000:00:06.0]", -1, false },
		{ "ahci0", -1, false },
		{ "ufshcd", -1, false },
		{ "mmc0", -1, false },
		{ "hisi_sas_v3_hw cq", -1, false },
		{ "qla2xxx (rsp_q)", -1, false },
		{ "lpfc:fp", -1, false },
		{ "i40e-eno1-TxRx-0", -1, false },
		{ "", -1, false },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		bool admin = !cases[i].admin;
		int q = ip_vector_queue_from_name(cases[i].name, &admin);

		if (q != cases[i].queue || admin != cases[i].admin)
			fail_msg("%s: queue %d admin %d, want %d %d", cases[i].name, q, admin,
				 cases[i].queue, cases[i].admin);
	}
	assert_int_equal(ip_vector_queue_from_name(NULL, NULL), -1);
	assert_int_equal(ip_vector_queue_from_name("nvme0q2", NULL), 1);
}

static void test_is_virtual(void **state)
{
	static const char *const virt[] = { "loop0", "loop12", "ram0", "zram0", "dm-0", "dm-12",
					    "md127", "md0", "nbd3", "sr0", "" };
	static const char *const real[] = { "sda", "nvme0n1", "mmcblk0", "vda", "xvda", "sdaa",
					    "mmcblk0boot0", "pmem0", "rbd0" };

	for (size_t i = 0; i < ARRAY_SIZE(virt); i++)
		if (!ip_blockdev_is_virtual(virt[i]))
			fail_msg("%s should be virtual", virt[i]);
	for (size_t i = 0; i < ARRAY_SIZE(real); i++)
		if (ip_blockdev_is_virtual(real[i]))
			fail_msg("%s should not be virtual", real[i]);
}

/* ---- fixtures ------------------------------------------------------- */

static void test_phone(void **state)
{
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "phone-arm64", true);
	/* zram0, loop0, dm-0 are in sys/block but are not hardware */
	assert_int_equal(sc.s.nr_devs, 2);
	assert_null(dev(&sc, "zram0"));
	assert_null(dev(&sc, "loop0"));
	assert_null(dev(&sc, "dm-0"));

	b = must_dev(&sc, "sda");
	assert_int_equal(b->major, 8);
	assert_int_equal(b->minor, 0);
	assert_string_equal(b->driver, "ufshcd-qcom");
	assert_string_equal(b->bus_id, "1d84000.ufshc");
	assert_int_equal(b->bus, IP_BUS_PLATFORM);
	assert_string_equal(b->syspath, "sys/devices/platform/soc/1d84000.ufshc/"
					"host0/target0:0:0/0:0:0:0/block/sda");
	assert_int_equal(b->rq_affinity, 1);
	assert_false(b->rotational);
	assert_int_equal(b->numa_node, -1);
	assert_true(cpuset_empty(&b->local_cpus));
	assert_int_equal(b->nr_queues, 1);
	assert_int_equal(b->queues[0].index, 0);
	assert_cpus(&b->queues[0].cpus, "0-7");
	/* no msi_irqs, no of_node: its one vector is found by the SCSI
	 * host's proc_name, "ufshcd" */
	assert_int_equal(b->route, IP_ROUTE_KNAME);
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 37);
	assert_false(b->vectors[0].admin);
	assert_int_equal(b->vectors[0].queue, -1);
	assert_int_equal(b->vectors[0].map, IP_VEC_MAP_NONE);
	assert_int_equal(b->queues[0].vector, 0);

	/* the second LUN shares the controller's vector */
	b = must_dev(&sc, "sdb");
	assert_int_equal(b->minor, 16);
	assert_string_equal(b->bus_id, "1d84000.ufshc");
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 37);
	scan_free(&sc);
}

static void test_laptop(void **state)
{
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "laptop-hybrid", true);
	assert_int_equal(sc.s.nr_devs, 1);
	b = must_dev(&sc, "nvme0n1");
	assert_int_equal(b->major, 259);
	assert_int_equal(b->minor, 0);
	assert_string_equal(b->driver, "nvme");
	assert_string_equal(b->bus_id, "0000:01:00.0");
	assert_int_equal(b->bus, IP_BUS_PCI);
	assert_int_equal(b->rq_affinity, 1);
	assert_false(b->rotational);
	assert_int_equal(b->numa_node, -1);
	assert_cpus(&b->local_cpus, "0-11");
	assert_int_equal(b->nr_queues, 12);
	assert_int_equal(b->nr_vectors, 13);

	const struct ip_vector *admin = vec_by_irq(b, 124);

	assert_true(admin->admin);
	assert_int_equal(admin->queue, -1);
	for (int q = 0; q < 12; q++) {
		const struct ip_vector *v = vec_by_irq(b, 125 + q);
		char want[8];

		/* mq/10 must come after mq/9, not after mq/1 */
		assert_int_equal(b->queues[q].index, q);
		snprintf(want, sizeof(want), "%d", q);
		assert_cpus(&b->queues[q].cpus, want);
		assert_false(v->admin);
		assert_int_equal(v->queue, q);
		assert_int_equal(v->map, IP_VEC_MAP_NAME);
		assert_int_equal(b->vectors[b->queues[q].vector].irq, 125 + q);
	}
	scan_free(&sc);
}

static void test_server(void **state)
{
	static const char *const groups[8] = { "0-1,16-17", "2-3,18-19", "4-5,20-21", "6-7,22-23",
						"8-9,24-25", "10-11,26-27", "12-13,28-29",
						"14-15,30-31" };
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "server-2s", true);
	assert_int_equal(sc.s.nr_devs, 4);
	assert_null(dev(&sc, "dm-0"));
	assert_null(dev(&sc, "md127"));

	for (int i = 0; i < 2; i++) {
		b = must_dev(&sc, i ? "sdb" : "sda");
		assert_string_equal(b->driver, "ahci");
		assert_string_equal(b->bus_id, "0000:00:17.0");
		assert_int_equal(b->bus, IP_BUS_PCI);
		assert_true(b->rotational);
		assert_int_equal(b->rq_affinity, 1);
		assert_int_equal(b->numa_node, 0);
		assert_cpus(&b->local_cpus, "0-7,16-23");
		/* blk-mq maps possible CPUs, so offline CPU 31 is listed */
		assert_int_equal(b->nr_queues, 1);
		assert_cpus(&b->queues[0].cpus, "0-31");
		assert_int_equal(b->nr_vectors, 1);
		assert_int_equal(b->vectors[0].irq, 38);
		assert_int_equal(b->vectors[0].queue, -1);
		assert_int_equal(b->vectors[0].map, IP_VEC_MAP_NONE);
		assert_int_equal(b->queues[0].vector, 0);
	}

	for (int i = 0; i < 2; i++) {
		b = must_dev(&sc, i ? "sdd" : "sdc");
		assert_string_equal(b->driver, "mpi3mr");
		assert_string_equal(b->bus_id, "0000:5e:00.0");
		assert_int_equal(b->numa_node, 1);
		assert_cpus(&b->local_cpus, "8-15,24-30");
		assert_int_equal(b->rotational, i == 1);
		assert_int_equal(b->rq_affinity, i ? 2 : 1);
		assert_int_equal(b->nr_queues, 8);
		assert_int_equal(b->nr_vectors, 9);
		/* msix0 is the admin pre-vector; msixM serves op reply queue M-1 */
		assert_true(vec_by_irq(b, 150)->admin);
		assert_int_equal(vec_by_irq(b, 150)->queue, -1);
		for (int q = 0; q < 8; q++) {
			const struct ip_vector *v = vec_by_irq(b, 151 + q);

			assert_cpus(&b->queues[q].cpus, groups[q]);
			assert_false(v->admin);
			assert_int_equal(v->queue, q);
			assert_int_equal(v->map, IP_VEC_MAP_NAME);
			assert_int_equal(b->vectors[b->queues[q].vector].irq, 151 + q);
		}
	}
	scan_free(&sc);
}

static void test_qemu_intx_shared(void **state)
{
	struct scan sc;
	const struct ip_blockdev *mmc, *sda, *sdb;

	scan_tree(&sc, FIXTURES "qemu-intx-shared", true);
	/* sr0 (a CD-ROM on the same HBA) and loop0 are skipped */
	assert_int_equal(sc.s.nr_devs, 3);
	assert_null(dev(&sc, "sr0"));
	assert_null(dev(&sc, "loop0"));

	mmc = must_dev(&sc, "mmcblk0");
	assert_int_equal(mmc->major, 179);
	assert_string_equal(mmc->driver, "sdhci-pci");
	assert_string_equal(mmc->bus_id, "0000:00:04.0");
	assert_int_equal(mmc->bus, IP_BUS_PCI);
	assert_false(mmc->rotational);
	assert_int_equal(mmc->nr_queues, 1);
	assert_cpus(&mmc->queues[0].cpus, "0-3");

	sda = must_dev(&sc, "sda");
	sdb = must_dev(&sc, "sdb");
	assert_string_equal(sda->driver, "sym53c8xx");
	assert_string_equal(sda->bus_id, "0000:00:05.0");
	assert_string_equal(sdb->bus_id, "0000:00:05.0");
	assert_true(sda->rotational);

	/* INTx from the irq file: one line, 10, carried by both controllers */
	const struct ip_blockdev *all[] = { mmc, sda, sdb };

	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		assert_int_equal(all[i]->nr_vectors, 1);
		assert_int_equal(all[i]->vectors[0].irq, 10);
		assert_int_equal(all[i]->vectors[0].queue, -1);
		assert_false(all[i]->vectors[0].admin);
		assert_int_equal(all[i]->queues[0].vector, 0);
	}
	scan_free(&sc);
}

/* The real capture: symlinks there are flattened into files. */
static void test_capture_ahci(void **state)
{
	const char *dir = SHARED_DIR "/captures/qemu-x86-ahci-threadirqs/0000";
	struct scan sc;
	const struct ip_blockdev *b;

	if (access(dir, R_OK) != 0) {
		print_message("skipped: %s not present\n", dir);
		skip();
	}
	scan_tree(&sc, dir, true);
	/* the two virtio functions there are not disks (no vda in sys/block) */
	assert_int_equal(sc.s.nr_devs, 2);

	b = must_dev(&sc, "sda");
	assert_string_equal(b->driver, "ahci");
	assert_string_equal(b->bus_id, "0000:00:06.0");
	assert_int_equal(b->bus, IP_BUS_PCI);
	assert_int_equal(b->major, 8);
	assert_int_equal(b->rq_affinity, 1);
	assert_true(b->rotational);
	assert_int_equal(b->nr_queues, 1);
	assert_cpus(&b->queues[0].cpus, "0-3");
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 28);
	assert_int_equal(b->vectors[0].queue, -1);
	assert_int_equal(b->queues[0].vector, 0);

	b = must_dev(&sc, "nvme0n1");
	assert_string_equal(b->driver, "nvme");
	assert_string_equal(b->bus_id, "0000:00:07.0");
	assert_int_equal(b->major, 259);
	assert_false(b->rotational);
	assert_int_equal(b->nr_queues, 4);
	assert_int_equal(b->nr_vectors, 5);
	assert_int_equal(b->vectors[0].irq, 29);
	assert_true(b->vectors[0].admin);
	for (int q = 0; q < 4; q++) {
		char want[4];

		snprintf(want, sizeof(want), "%d", q);
		assert_cpus(&b->queues[q].cpus, want);
		assert_int_equal(b->vectors[q + 1].irq, 30 + q);
		assert_int_equal(b->vectors[q + 1].queue, q);
		assert_int_equal(b->vectors[q + 1].map, IP_VEC_MAP_NAME);
		assert_int_equal(b->queues[q].vector, q + 1);
	}
	scan_free(&sc);
}

/* ---- trees built on the fly --------------------------------------- */

#define PCI0 "sys/devices/pci0000:00/"
#define SDEV "host0/target0:0:0/0:0:0:0/block/"

static char tmpl[] = "/tmp/irqpilot-storage-XXXXXX";

static void put(const char *dir, const char *rel, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (char *s = strchr(path + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		mkdir(path, 0755);
		*s = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void lnk(const char *dir, const char *rel, const char *target)
{
	char path[4096];

	put(dir, rel, ""); /* creates the parents */
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	unlink(path);
	assert_int_equal(symlink(target, path), 0);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

static char *mktree(void)
{
	char *dir = strdup(tmpl);

	assert_non_null(dir);
	assert_non_null(mkdtemp(dir));
	return dir;
}

static void rmtree(char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

/*
 * A PCI function at sys/devices/pci0000:00/<bdf> with one SCSI disk under
 * it, listed in sys/block (or only in sys/class/block if @class_only).
 */
static void pci_disk_in(const char *t, bool class_only, const char *bdf, const char *drv,
			const char *name, const char *devno, int nq, const char *msi)
{
	char fn[256], disk[512], rel[1024], tgt[1024];

	snprintf(fn, sizeof(fn), "sys/devices/pci0000:00/%s", bdf);
	snprintf(disk, sizeof(disk), "%s/host0/target0:0:0/0:0:0:0/block/%s", fn, name);
	snprintf(rel, sizeof(rel), "%s/driver", fn);
	snprintf(tgt, sizeof(tgt), "../../../bus/pci/drivers/%s", drv);
	lnk(t, rel, tgt);
	snprintf(rel, sizeof(rel), "%s/host0/target0:0:0/0:0:0:0/driver", fn);
	lnk(t, rel, "../../../../../../../bus/scsi/drivers/sd");
	snprintf(rel, sizeof(rel), "%s/irq", fn);
	put(t, rel, "11\n");
	for (const char *p = msi; p && *p;) {
		char num[16];
		size_t n = strcspn(p, ",");

		snprintf(num, sizeof(num), "%.*s", (int)n, p);
		snprintf(rel, sizeof(rel), "%s/msi_irqs/%s", fn, num);
		put(t, rel, "msix\n");
		p += n + (p[n] == ',');
	}
	snprintf(rel, sizeof(rel), "%s/dev", disk);
	put(t, rel, devno);
	for (int q = 0; q < nq; q++) {
		char cpu[16];

		snprintf(rel, sizeof(rel), "%s/mq/%d/cpu_list", disk, q);
		snprintf(cpu, sizeof(cpu), "%d\n", q);
		put(t, rel, cpu);
	}
	snprintf(rel, sizeof(rel), "sys/%s/%s", class_only ? "class/block" : "block", name);
	snprintf(tgt, sizeof(tgt), "%s%s", class_only ? "../../" : "../", disk + 4);
	lnk(t, rel, tgt);
}

static void pci_disk(const char *t, const char *bdf, const char *drv, const char *name,
		     const char *devno, int nq, const char *msi)
{
	pci_disk_in(t, false, bdf, drv, name, devno, nq, msi);
}

static void test_odd_devices_skipped(void **state)
{
	char *t = mktree();
	struct ip_root *r;
	struct ip_storage s;
	struct ip_diag d = { "" };

	pci_disk(t, "0000:00:10.0", "ahci", "sda", "8:0\n", 1, "40");
	pci_disk(t, "0000:00:11.0", "ahci", "sdb", "8:16\n", 1, "41");
	pci_disk(t, "0000:00:12.0", "ahci", "sdc", "8:32\n", 1, "42");
	pci_disk(t, "0000:00:13.0", "ahci", "sdd", "garbage\n", 1, "43");
	/* sdb: a garbled cpu_list */
	put(t, PCI0 "0000:00:11.0/" SDEV "sdb/mq/0/cpu_list", "0, x, 2\n");
	/* sdc: mq/ is not a directory */
	{
		char p[1024];

		snprintf(p, sizeof(p), "%s/" PCI0 "0000:00:12.0/" SDEV "sdc/mq", t);
		nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		put(t, PCI0 "0000:00:12.0/" SDEV "sdc/mq", "0\n");
	}
	/* sde: a dangling sys/block link */
	lnk(t, "sys/block/sde", "../devices/nowhere/sde");

	assert_int_equal(ip_root_open(t, &r), 0);
	assert_int_equal(ip_storage_sample(r, NULL, 0, &s, &d), 0);
	assert_int_equal(s.nr_devs, 1);
	assert_string_equal(s.devs[0].name, "sda");
	assert_int_equal(s.devs[0].nr_vectors, 1);
	assert_int_equal(s.devs[0].vectors[0].irq, 40);
	/* unreadable bits of a good device take their "unknown" values */
	assert_int_equal(s.devs[0].rq_affinity, -1);
	assert_int_equal(s.devs[0].numa_node, -1);
	/* the reason of a skip is kept for the caller */
	assert_true(d.msg[0] != '\0');
	ip_storage_free(&s);
	ip_root_free(r);
	rmtree(t);
}

/*
 * local_cpulist and numa_node as drivers/pci/pci-sysfs.c writes them
 * ("8-15\n", "%d\n"), then garbled: the device is still found, the
 * garbled value reads as unknown, and numa_note says which file and why.
 */
static void test_numa_files(void **state)
{
	static const char *const cases[][3] = {
		/* local_cpulist, numa_node, expected note ("" none) */
		{ "8-15\n", "1\n", "" },
		{ "0-15\n", "-1\n", "" },
		{ "8-15,zz\n", "1\n", "local_cpulist: not a CPU list: \"8-15,zz\"" },
		{ "8-15\n", "one\n", "numa_node: not a decimal number" },
	};
	struct ip_diag d = { { 0 } };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *t = mktree();
		const char *fn = "sys/devices/pci0000:00/0000:5e:00.0";
		char rel[256];
		struct ip_root *r;
		struct ip_storage s;
		const struct ip_blockdev *b;

		pci_disk(t, "0000:5e:00.0", "mpi3mr", "sda", "8:0\n", 1, "60");
		snprintf(rel, sizeof(rel), "%s/local_cpulist", fn);
		put(t, rel, cases[i][0]);
		snprintf(rel, sizeof(rel), "%s/numa_node", fn);
		put(t, rel, cases[i][1]);
		assert_int_equal(ip_root_open(t, &r), 0);
		assert_int_equal(ip_storage_sample(r, NULL, 0, &s, &d), 0);
		assert_int_equal(s.nr_devs, 1);
		b = &s.devs[0];
		if (!cases[i][2][0]) {
			ip_cpuset want;

			assert_int_equal(cpuset_parse_list(&want, cases[i][0]), 0);
			assert_true(cpuset_equal(&b->local_cpus, &want));
			assert_string_equal(b->numa_note, "");
			assert_int_equal(b->numa_node, i == 0 ? 1 : -1);
		} else {
			assert_non_null(strstr(b->numa_note, cases[i][2]));
			if (i == 2) {
				assert_true(cpuset_empty(&b->local_cpus));
				assert_int_equal(b->numa_node, 1);
			} else {
				assert_int_equal(b->numa_node, -1);
			}
		}
		ip_storage_free(&s);
		ip_root_free(r);
		rmtree(t);
	}
}

static void test_no_sys_block(void **state)
{
	char *t = mktree();
	struct ip_root *r;
	struct ip_storage s;
	struct ip_diag d = { "" };

	assert_int_equal(ip_root_open(t, &r), 0);
	assert_int_equal(ip_storage_sample(r, NULL, 0, &s, &d), 0);
	assert_int_equal(s.nr_devs, 0);
	ip_storage_free(&s);
	ip_storage_free(&s); /* idempotent */
	ip_root_free(r);
	rmtree(t);
}

/*
 * Snapshots share the scan's devices: the scan's own copy may be freed (a
 * rescan) while older snapshots still read them, and the last share frees
 * them (the ASan build's leak check sees the rest).
 */
static void test_share(void **state)
{
	struct scan sc;
	struct ip_storage a, b;

	scan_tree(&sc, FIXTURES "server-hba-highiops", true);
	assert_int_equal(ip_storage_share(&a, &sc.s), 0);
	assert_int_equal(ip_storage_share(&b, &sc.s), 0);
	assert_ptr_equal(a.devs, sc.s.devs);
	assert_int_equal(*sc.s.users, 3);
	ip_storage_free(&sc.s);
	assert_null(sc.s.devs);
	assert_int_equal(*a.users, 2);
	assert_int_equal(must_dev(&(struct scan){ .s = a }, "nvme0n1")->nr_vectors, 17);
	ip_storage_free(&a);
	assert_int_equal(must_dev(&(struct scan){ .s = b }, "sda")->nr_vectors, 24);
	assert_int_equal(must_dev(&(struct scan){ .s = b }, "nvme0n1")->vectors[1].serves.nr, 1);
	ip_storage_free(&b);
	assert_null(b.users);
	scan_free(&sc);
}

/* Only sys/class/block: partitions are listed there and must be skipped. */
static void test_class_block_fallback(void **state)
{
	char *t = mktree();
	const char *disk = PCI0 "0000:00:10.0/" SDEV "sda";
	char rel[1024];
	struct ip_root *r;
	struct ip_storage s;
	struct ip_diag d = { "" };

	pci_disk_in(t, true, "0000:00:10.0", "ahci", "sda", "8:0\n", 1, NULL);
	snprintf(rel, sizeof(rel), "%s/sda1/partition", disk);
	put(t, rel, "1\n");
	snprintf(rel, sizeof(rel), "%s/sda1/dev", disk);
	put(t, rel, "8:1\n");
	lnk(t, "sys/class/block/sda1", "../../devices/pci0000:00/0000:00:10.0/" SDEV "sda/sda1");

	assert_int_equal(ip_root_open(t, &r), 0);
	assert_int_equal(ip_storage_sample(r, NULL, 0, &s, &d), 0);
	assert_int_equal(s.nr_devs, 1);
	assert_string_equal(s.devs[0].name, "sda");
	/* a partition is passed over on purpose, not skipped as broken */
	assert_string_equal(d.msg, "");
	/* no msi_irqs: INTx from the irq file */
	assert_int_equal(s.devs[0].nr_vectors, 1);
	assert_int_equal(s.devs[0].vectors[0].irq, 11);
	ip_storage_free(&s);
	ip_root_free(r);
	rmtree(t);
}

/* Vectors tied to queues by order, and the msix0-is-admin offset. */
static void test_vector_mapping(void **state)
{
	char *t = mktree();
	struct ip_root *r;
	struct ip_storage s;
	struct ip_diag d = { "" };
	const struct ip_irq_name names[] = {
		{ 40, "foo_hba" },       { 41, "foo_hba" },      { 50, "megasas0-msix0" },
		{ 51, "megasas0-msix1" }, { 52, "megasas0-msix2" }, { 60, "nvme1q0" },
		{ 61, "nvme1q1" },       { 62, "nvme1q9" },
	};

	/* sda: two unnamed vectors for two queues: by order */
	pci_disk(t, "0000:00:10.0", "foo", "sda", "8:0\n", 2, "40,41");
	/* sdb: msix0..2 for two queues: msix0 is admin, msix1 -> queue 0 */
	pci_disk(t, "0000:00:11.0", "megaraid_sas", "sdb", "8:16\n", 2, "50,51,52");
	/* sdc: a name pointing past the last queue is not trusted */
	pci_disk(t, "0000:00:12.0", "nvme", "sdc", "8:32\n", 2, "60,61,62");

	assert_int_equal(ip_root_open(t, &r), 0);
	assert_int_equal(ip_storage_sample(r, names, ARRAY_SIZE(names), &s, &d), 0);
	assert_int_equal(s.nr_devs, 3);

	assert_string_equal(s.devs[0].name, "sda");
	assert_int_equal(s.devs[0].vectors[0].queue, 0);
	assert_int_equal(s.devs[0].vectors[0].map, IP_VEC_MAP_ORDER);
	assert_int_equal(s.devs[0].vectors[1].queue, 1);
	assert_int_equal(s.devs[0].vectors[1].map, IP_VEC_MAP_ORDER);
	assert_int_equal(s.devs[0].queues[1].vector, 1);

	assert_string_equal(s.devs[1].name, "sdb");
	assert_true(s.devs[1].vectors[0].admin);
	assert_int_equal(s.devs[1].vectors[1].queue, 0);
	assert_int_equal(s.devs[1].vectors[2].queue, 1);
	assert_int_equal(s.devs[1].queues[0].vector, 1);
	assert_int_equal(s.devs[1].queues[1].vector, 2);

	assert_string_equal(s.devs[2].name, "sdc");
	assert_true(s.devs[2].vectors[0].admin);
	assert_int_equal(s.devs[2].vectors[1].queue, 0);
	assert_int_equal(s.devs[2].vectors[2].queue, -1);
	assert_int_equal(s.devs[2].vectors[2].map, IP_VEC_MAP_NONE);
	assert_int_equal(s.devs[2].queues[1].vector, -1);
	/* each queue once: sdb's queue 0 names msix1, whose own queue is 0 */
	assert_int_equal(s.devs[1].vectors[1].serves.nr, 1);
	assert_int_equal(s.devs[1].vectors[0].serves.nr, 0);
	assert_int_equal(s.devs[2].vectors[1].serves.nr, 1);
	assert_int_equal(s.devs[2].vectors[2].serves.nr, 0);
	assert_int_equal(s.devs[2].vectors[2].serves.hi, -1);
	ip_storage_free(&s);
	ip_root_free(r);
	rmtree(t);
}

/* virtio-blk over PCI (named queues) and over virtio-mmio (one IRQ, by name). */
static void test_virtio(void **state)
{
	char *t = mktree();
	struct ip_root *r;
	struct ip_storage s;
	struct ip_diag d = { "" };
	const struct ip_irq_name names[] = {
		{ 24, "virtio1-config" }, { 25, "virtio1-req.0" }, { 26, "virtio1-req.1" },
		{ 27, "virtio1-req.2" },  { 40, "virtio0" },       { 41, "virtio2" },
	};
	const char *pf = PCI0 "0000:00:05.0";
	const char *mm = "sys/devices/platform/a003e00.virtio_mmio";
	char rel[512];

	lnk(t, PCI0 "0000:00:05.0/driver", "../../../bus/pci/drivers/virtio-pci");
	lnk(t, PCI0 "0000:00:05.0/virtio1/driver", "../../../../bus/virtio/drivers/virtio_blk");
	for (int v = 24; v <= 27; v++) {
		snprintf(rel, sizeof(rel), "%s/msi_irqs/%d", pf, v);
		put(t, rel, "msix\n");
	}
	put(t, PCI0 "0000:00:05.0/virtio1/block/vda/dev", "253:0\n");
	for (int q = 0; q < 3; q++) {
		snprintf(rel, sizeof(rel), "%s/virtio1/block/vda/mq/%d/cpu_list", pf, q);
		put(t, rel, q == 2 ? "2, 3\n" : (q ? "1\n" : "0\n"));
	}
	lnk(t, "sys/block/vda", "../devices/pci0000:00/0000:00:05.0/virtio1/block/vda");

	lnk(t, "sys/devices/platform/a003e00.virtio_mmio/driver",
	    "../../../bus/platform/drivers/virtio-mmio");
	lnk(t, "sys/devices/platform/a003e00.virtio_mmio/virtio0/driver",
	    "../../../../bus/virtio/drivers/virtio_blk");
	snprintf(rel, sizeof(rel), "%s/virtio0/block/vdb/dev", mm);
	put(t, rel, "253:16\n");
	snprintf(rel, sizeof(rel), "%s/virtio0/block/vdb/mq/0/cpu_list", mm);
	put(t, rel, "0, 1, 2, 3\n");
	lnk(t, "sys/block/vdb", "../devices/platform/a003e00.virtio_mmio/virtio0/block/vdb");

	assert_int_equal(ip_root_open(t, &r), 0);
	assert_int_equal(ip_storage_sample(r, names, ARRAY_SIZE(names), &s, &d), 0);
	assert_int_equal(s.nr_devs, 2);

	assert_string_equal(s.devs[0].name, "vda");
	assert_string_equal(s.devs[0].driver, "virtio_blk");
	assert_string_equal(s.devs[0].bus_id, "0000:00:05.0");
	assert_int_equal(s.devs[0].bus, IP_BUS_PCI);
	assert_int_equal(s.devs[0].nr_vectors, 4);
	assert_true(s.devs[0].vectors[0].admin);
	for (int q = 0; q < 3; q++) {
		assert_int_equal(s.devs[0].vectors[q + 1].queue, q);
		assert_int_equal(s.devs[0].queues[q].vector, q + 1);
	}
	assert_cpus(&s.devs[0].queues[2].cpus, "2-3");

	assert_string_equal(s.devs[1].name, "vdb");
	assert_string_equal(s.devs[1].driver, "virtio_blk");
	assert_string_equal(s.devs[1].bus_id, "a003e00.virtio_mmio");
	assert_int_equal(s.devs[1].bus, IP_BUS_VIRTIO_MMIO);
	/* virtio2 belongs to another device: only virtio0 is this disk's */
	assert_int_equal(s.devs[1].nr_vectors, 1);
	assert_int_equal(s.devs[1].vectors[0].irq, 40);
	assert_int_equal(s.devs[1].queues[0].vector, 0);
	ip_storage_free(&s);
	ip_root_free(r);
	rmtree(t);
}

/* A platform controller whose interrupt is not in /proc/interrupts. */
static void test_platform_without_irq(void **state)
{
	struct scan sc;

	memset(&sc, 0, sizeof(sc));
	/* the phone tree, but with no IRQ names at all */
	scan_tree(&sc, FIXTURES "phone-arm64", false);
	assert_int_equal(sc.s.nr_devs, 2);
	assert_int_equal(must_dev(&sc, "sda")->nr_vectors, 0);
	assert_int_equal(must_dev(&sc, "sda")->queues[0].vector, -1);
	scan_free(&sc);
}

/* ---- the kernel's own facts: msi_irqs, devicetree, kernel names ------ */

static const struct ip_vector *vec_at_dt(const struct ip_blockdev *b, int index)
{
	for (int i = 0; i < b->nr_vectors; i++)
		if (b->vectors[i].dt_index == index)
			return &b->vectors[i];
	fail_msg("%s has no vector at devicetree index %d", b->name, index);
	return NULL;
}

/* Pixel 6: exynos-ufshc, IRQ "ufshcd": only the devicetree ties them. */
static void test_pixel6(void **state)
{
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "pixel6-gs101", true);
	assert_int_equal(sc.s.nr_devs, 3);
	b = must_dev(&sc, "sda");
	assert_string_equal(b->driver, "exynos-ufshc");
	assert_string_equal(b->bus_id, "14700000.ufs");
	assert_int_equal(b->bus, IP_BUS_PLATFORM);
	assert_int_equal(b->route, IP_ROUTE_DT);
	assert_int_equal(b->routes_tried, (1u << IP_ROUTE_MSI) | (1u << IP_ROUTE_DT));
	assert_int_equal(b->nr_vectors, 1);
	/* <GIC_SPI 532 ...> is hwirq 564, IRQ 231 */
	assert_int_equal(b->vectors[0].irq, 231);
	assert_int_equal(b->vectors[0].dt_index, 0);
	assert_int_equal(b->vectors[0].route, IP_ROUTE_DT);
	assert_false(b->vectors[0].admin);
	assert_int_equal(b->queues[0].vector, 0);
	assert_false(ip_blockdev_unsteerable(b));
	/* the boot LUNs share the host's vector */
	assert_int_equal(must_dev(&sc, "sdc")->vectors[0].irq, 231);
	scan_free(&sc);
}

static void copy_tree(const char *from, char *to)
{
	char cmd[1024];

	/* writable: the generator makes /proc files 0444, as the kernel does */
	snprintf(cmd, sizeof(cmd), "cp -a '%s/.' '%s' && chmod -R u+w '%s'", from, to, to);
	assert_int_equal(system(cmd), 0);
}

static void unlink_in(const char *dir, const char *rel)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_int_equal(unlink(path), 0);
}

/* A copy of @fixture in which device @dev (its directory under
 * sys/devices/) has no devicetree link, so that the routes after the
 * devicetree's must find its IRQs. Free with rmtree(). */
static char *copy_without_of_node(const char *fixture, const char *dev)
{
	char *t = mktree();
	char rel[512];

	copy_tree(fixture, t);
	snprintf(rel, sizeof(rel), "%s/of_node", dev);
	unlink_in(t, rel);
	return t;
}

/* A reason the routes know of is said, and asks for no bug report: the
 * warning asked for a capture even where it named why (a Hyper-V channel
 * has no IRQ at all). */
static void assert_known_unsteerable(const struct ip_blockdev *b)
{
	char w[640];

	assert_true(b->route_known);
	ip_report_discovery(b, w, sizeof(w));
	assert_non_null(strstr(w, "its completions cannot be steered: "));
	assert_non_null(strstr(w, b->route_note));
	assert_null(strstr(w, "bug report"));
}

/*
 * A Xen HVM guest's xen-blkfront disks hang off xenbus devices (bus "xen",
 * sys/devices/vbd-51712, driver "vbd"), and every ring's event channel IRQ
 * is "blkif" (xen-blkfront.c setup_blkring). They were dropped as "not
 * backed by hardware". With two vbds the four "blkif" lines cannot be told
 * apart (the event channels are only in xenstore): kept, unsteerable, and
 * the note says why. With one vbd its rings' IRQs are its own, allocated
 * ring by ring.
 */
static void test_xen_blkfront(void **state)
{
	char *t = mktree();
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "xen-hvm-blkfront", true);
	assert_int_equal(sc.s.nr_devs, 2);
	for (int i = 0; i < 2; i++) {
		b = must_dev(&sc, i ? "xvdb" : "xvda");
		assert_string_equal(b->driver, "vbd");
		assert_string_equal(b->bus_id, i ? "vbd-51728" : "vbd-51712");
		assert_int_equal(b->nr_queues, 2);
		assert_int_equal(b->nr_vectors, 0);
		assert_true(ip_blockdev_unsteerable(b));
		assert_non_null(strstr(b->route_note, "4 IRQs are named \"blkif\""));
		assert_non_null(strstr(b->route_note, "xenstore"));
		assert_known_unsteerable(b);
	}
	scan_free(&sc);

	copy_tree(FIXTURES "xen-hvm-blkfront", t);
	unlink_in(t, "sys/block/xvdb");
	unlink_in(t, "sys/bus/xen/drivers/vbd/vbd-51728");
	put(t, "proc/interrupts",
	    "           CPU0       CPU1       \n"
	    " 32:        812          0  xen-dyn-lateeoi    -event     xenbus\n"
	    " 33:      90122          0  xen-dyn-lateeoi    -event     blkif\n"
	    " 34:      88730          0  xen-dyn-lateeoi    -event     blkif\n");
	scan_tree(&sc, t, true);
	assert_int_equal(sc.s.nr_devs, 1);
	b = must_dev(&sc, "xvda");
	assert_int_equal(b->route, IP_ROUTE_HEURISTIC);
	assert_int_equal(b->nr_vectors, 2);
	assert_int_equal(b->vectors[0].irq, 33);
	assert_int_equal(b->vectors[1].irq, 34);
	assert_int_equal(b->queues[0].vector, 0);
	assert_int_equal(b->queues[1].vector, 1);
	scan_free(&sc);
	rmtree(t);
}

/*
 * Hyper-V storvsc disks hang off VMBus devices (bus "vmbus"), whose
 * channels interrupt through the hypervisor callback vector ("HYP"), not
 * an IRQ of their own. They were dropped silently; now they are kept,
 * unsteerable, with a note naming the channel CPU files.
 */
static void test_hyperv_storvsc(void **state)
{
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "hyperv-storvsc", true);
	assert_int_equal(sc.s.nr_devs, 2);
	b = must_dev(&sc, "sda");
	assert_string_equal(b->driver, "hv_storvsc");
	assert_string_equal(b->bus_id, "f8b3781a-1e82-4818-a1c3-63d806ec15bb");
	assert_int_equal(b->nr_queues, 4);
	assert_int_equal(b->nr_vectors, 0);
	assert_true(ip_blockdev_unsteerable(b));
	assert_non_null(strstr(b->route_note, "VMBus"));
	assert_non_null(strstr(b->route_note, "channels/"));
	assert_known_unsteerable(b);
	scan_free(&sc);
}

/*
 * NVMe behind Intel VMD (a laptop in RST mode): the NVMe's vectors are
 * "VMD-MSI" lines that cannot be moved (vmd.c: no irq_set_affinity,
 * MSI_FLAG_NO_AFFINITY); each is delivered on the vmd0 vector whose Linux
 * IRQ is its hwirq (vmd_msi_init). Their managed masks were reported as
 * the kernel's correct spread, while every completion came on vmd0's
 * vectors. Each I/O vector is now its carrier: the admin vector's carrier
 * also carries queue 7's (vmd_next_irq ran out of VMD vectors), so it is
 * queue 7's, and an I/O vector whose carrier also carries another I/O
 * vector cannot be moved apart from it and is dropped, with a note.
 */
static void test_vmd_nvme(void **state)
{
	char *t = mktree();
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "vmd-laptop-nvme", true);
	b = must_dev(&sc, "nvme0n1");
	assert_int_equal(b->nr_queues, 8);
	assert_int_equal(b->nr_vectors, 8);
	for (int q = 0; q < 7; q++) {
		assert_int_equal(b->vectors[b->queues[q].vector].irq, 127 + q);
		assert_false(b->vectors[b->queues[q].vector].admin);
	}
	assert_int_equal(b->vectors[b->queues[7].vector].irq, 126);
	assert_non_null(strstr(b->route_note, "VMD-MSI"));
	assert_non_null(strstr(b->route_note, "vmd0"));
	scan_free(&sc);

	/* q2 and q3 on one VMD vector: neither can be moved alone */
	copy_tree(FIXTURES "vmd-laptop-nvme", t);
	for (int irq = 138; irq <= 142; irq++) {
		char rel[160];

		snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:06.0/"
			 "10000:e1:00.0/msi_irqs/%d", irq);
		unlink_in(t, rel);
	}
	put(t, "proc/interrupts",
	    "           CPU0       CPU1       CPU2       CPU3       CPU4       CPU5       CPU6       CPU7       \n"
	    "126:         30          0          0          0          0          0          0          0  IR-PCI-MSI 229378-edge      vmd0\n"
	    "127:       9500          0          0          0          0          0          0          0  IR-PCI-MSI 229379-edge      vmd0\n"
	    "128:      20500          0          0          0          0          0          0          0  IR-PCI-MSI 229380-edge      vmd0\n"
	    "134:         30          0          0          0          0          0          0          0   VMD-MSI 126  nvme0q0\n"
	    "135:       9500          0          0          0          0          0          0          0   VMD-MSI 127  nvme0q1\n"
	    "136:      10000          0          0          0          0          0          0          0   VMD-MSI 128  nvme0q2\n"
	    "137:      10500          0          0          0          0          0          0          0   VMD-MSI 128  nvme0q3\n");
	scan_tree(&sc, t, true);
	b = must_dev(&sc, "nvme0n1");
	assert_int_equal(b->vectors[b->queues[0].vector].irq, 127);
	assert_int_equal(b->queues[1].vector, -1);
	assert_int_equal(b->queues[2].vector, -1);
	for (int i = 0; i < b->nr_vectors; i++)
		assert_true(b->vectors[i].irq < 134);
	assert_non_null(strstr(b->route_note, "2 ride one"));
	scan_free(&sc);

	/*
	 * From 6.17 VMD is an MSI parent (prefix "VMD-"): the line shows the
	 * per-device chip and the MSI-X index, no longer the carrier. The
	 * vectors cannot be moved and nothing says by which vmd vector they
	 * come: none is kept. (The chip name is msi-lib's prefix, bus and
	 * device; the flow name after the index is not checked here.)
	 */
	put(t, "proc/interrupts",
	    "           CPU0       CPU1       CPU2       CPU3       CPU4       CPU5       CPU6       CPU7       \n"
	    "126:         30          0          0          0          0          0          0          0  IR-PCI-MSIX-0000:00:0e.0    2-edge      vmd0\n"
	    "134:         30          0          0          0          0          0          0          0  VMD-PCI-MSIX-10000:e1:00.0    0-edge      nvme0q0\n"
	    "135:       9500          0          0          0          0          0          0          0  VMD-PCI-MSIX-10000:e1:00.0    1-edge      nvme0q1\n"
	    "136:      10000          0          0          0          0          0          0          0  VMD-PCI-MSIX-10000:e1:00.0    2-edge      nvme0q2\n"
	    "137:      10500          0          0          0          0          0          0          0  VMD-PCI-MSIX-10000:e1:00.0    3-edge      nvme0q3\n");
	scan_tree(&sc, t, true);
	b = must_dev(&sc, "nvme0n1");
	assert_int_equal(b->nr_vectors, 0);
	assert_true(ip_blockdev_unsteerable(b));
	assert_non_null(strstr(b->route_note, "4 VMD-PCI-MSI vectors cannot be moved"));
	assert_known_unsteerable(b);
	scan_free(&sc);
	rmtree(t);
}

/*
 * Raspberry Pi 4: emmc2 is found through the devicetree (GIC-400 SPI 126,
 * hwirq 158). The NVMe's MSIs are "BRCM STB PCIe MSI" lines that
 * pcie-brcmstb.c demultiplexes from one chained interrupt and whose
 * affinity it refuses (brcm_msi_set_affinity: -EINVAL): they were taken as
 * one managed vector per queue. Now none is kept, and the note says why.
 */
static void test_rpi4_brcmstb(void **state)
{
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "rpi4-nvme", true);
	b = must_dev(&sc, "mmcblk0");
	assert_int_equal(b->route, IP_ROUTE_DT);
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 36);
	b = must_dev(&sc, "nvme0n1");
	assert_int_equal(b->nr_queues, 4);
	assert_int_equal(b->nr_vectors, 0);
	assert_true(ip_blockdev_unsteerable(b));
	for (int q = 0; q < 4; q++)
		assert_int_equal(b->queues[q].vector, -1);
	assert_non_null(strstr(b->route_note, "5 BRCM STB PCIe MSI vectors"));
	assert_non_null(strstr(b->route_note, "chained"));
	assert_known_unsteerable(b);
	scan_free(&sc);
}

/*
 * M1 under Asahi: nvme-apple is a platform NVMe (no msi_irqs) whose one
 * interrupt serves the admin and the single I/O queue; the devicetree
 * finds it through the AIC (AIC_IRQ 590: hwirq 66126). Held before this
 * fixture; it covers the AIC end to end and an NVMe on the platform bus.
 */
static void test_m1_apple_nvme(void **state)
{
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "m1-apple-nvme", true);
	b = must_dev(&sc, "nvme0n1");
	assert_int_equal(b->bus, IP_BUS_PLATFORM);
	assert_string_equal(b->driver, "nvme-apple");
	assert_int_equal(b->route, IP_ROUTE_DT);
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 31);
	assert_int_equal(b->queues[0].vector, 0);
	scan_free(&sc);
}

/*
 * NVMe native multipath: the head nvme0n1 has no mq/ and no IRQ; the two
 * hidden path disks carry the queues and their own controller's vectors,
 * and each is told its head, whose submissions and diskstats are theirs.
 */
static void test_nvme_mpath(void **state)
{
	struct scan sc;

	scan_tree(&sc, FIXTURES "nvme-mpath-2ctrl", true);
	assert_int_equal(sc.s.nr_devs, 2);
	assert_null(dev(&sc, "nvme0n1"));
	for (int c = 0; c < 2; c++) {
		char name[16];
		const struct ip_blockdev *b;

		snprintf(name, sizeof(name), "nvme0c%dn1", c);
		b = must_dev(&sc, name);
		assert_string_equal(b->driver, "nvme");
		assert_string_equal(b->bus_id, c ? "0000:3c:00.0" : "0000:3b:00.0");
		assert_string_equal(b->mpath_head, "nvme0n1");
		assert_int_equal(b->head_major, 259);
		assert_int_equal(b->head_minor, 0);
		assert_int_equal(b->nr_queues, 8);
		assert_int_equal(b->nr_vectors, 9);
		/* nvme1q3 is the second controller's: no vector of the other */
		for (int q = 0; q < 8; q++)
			assert_int_equal(b->vectors[b->queues[q].vector].irq, (c ? 51u : 41u) + q);
		assert_false(ip_blockdev_unsteerable(b));
	}
	scan_free(&sc);
}

/* A head whose path disks are not there is said, not skipped unsaid. */
static void test_nvme_mpath_head_alone(void **state)
{
	char *t = mktree();
	struct scan sc;
	const struct ip_blockdev *b;

	copy_tree(FIXTURES "nvme-mpath-2ctrl", t);
	unlink_in(t, "sys/block/nvme0c0n1");
	unlink_in(t, "sys/block/nvme0c1n1");
	scan_tree(&sc, t, true);
	assert_int_equal(sc.s.nr_devs, 1);
	b = must_dev(&sc, "nvme0n1");
	assert_int_equal(b->major, 259);
	assert_int_equal(b->minor, 0);
	assert_string_equal(b->bus_id, "nvme-subsys0");
	assert_true(ip_blockdev_unsteerable(b));
	assert_non_null(strstr(b->route_note, "NVMe multipath head"));
	scan_free(&sc);
	rmtree(t);
}

/*
 * An AHCI host with one MSI per port (libahci.c names port i's vector
 * "ahci<i>"): each disk keeps its own port's vector, the port index coming
 * from class/ata_port/ataN/port_no (ata3 is port 0 there, the sSATA host
 * having taken ata1-2), and the single-MSI host beside it keeps its one.
 * Taking every msi_irqs entry steered each disk's IRQ by its neighbours'
 * submitters.
 */
static void test_ahci_multi_msi(void **state)
{
	static const struct {
		const char *disk;
		unsigned irq;
	} want[] = { { "sda", 37 }, { "sdb", 40 }, { "sdc", 41 }, { "sdd", 43 } };
	char *t = mktree();
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "server-ahci-multimsi", true);
	assert_int_equal(sc.s.nr_devs, 4);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		b = must_dev(&sc, want[i].disk);
		assert_int_equal(b->nr_vectors, 1);
		assert_int_equal(b->vectors[0].irq, want[i].irq);
		assert_int_equal(b->vectors[0].route, IP_ROUTE_MSI);
		assert_int_equal(b->queues[0].vector, 0);
		assert_false(ip_blockdev_unsteerable(b));
	}
	scan_free(&sc);

	/* sdc's port is unknown: no vector rather than its neighbours', and said */
	copy_tree(FIXTURES "server-ahci-multimsi", t);
	unlink_in(t, "sys/class/ata_port/ata4");
	scan_tree(&sc, t, true);
	b = must_dev(&sc, "sdc");
	assert_true(ip_blockdev_unsteerable(b));
	assert_non_null(strstr(b->route_note, "sys/class/ata_port/ata4/port_no unreadable"));
	assert_int_equal(must_dev(&sc, "sdb")->vectors[0].irq, 40);
	scan_free(&sc);

	/* no action names: the port's vector cannot be told; single MSI needs none */
	scan_tree(&sc, t, false);
	b = must_dev(&sc, "sdd");
	assert_true(ip_blockdev_unsteerable(b));
	assert_non_null(strstr(b->route_note, "not one vector named \"ahci3\""));
	b = must_dev(&sc, "sda");
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 37);
	scan_free(&sc);
	rmtree(t);
}

/*
 * The same phone with less and less to go on: no devicetree link, then no
 * SCSI proc_name, then an IRQ no route can name. Each time the next route
 * is the one that matches, and at the end the device is reported.
 */
static void test_pixel6_routes_fall_back(void **state)
{
	char *t = copy_without_of_node(FIXTURES "pixel6-gs101", "sys/devices/platform/soc@0/14700000.ufs");
	struct scan sc;
	const struct ip_blockdev *b;
	char w[640];

	scan_tree(&sc, t, true);
	b = must_dev(&sc, "sda");
	assert_int_equal(b->route, IP_ROUTE_KNAME);
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 231);
	assert_non_null(strstr(ip_vec_routes_str(b->routes_tried, w, sizeof(w)), "msi_irqs, kernel names"));
	scan_free(&sc);

	unlink_in(t, "sys/devices/platform/soc@0/14700000.ufs/host0/scsi_host/host0/proc_name");
	scan_tree(&sc, t, true);
	b = must_dev(&sc, "sda");
	/* "ufshcd" for a UFS glue driver, drivers/ufs/core/ufshcd.c */
	assert_int_equal(b->route, IP_ROUTE_HEURISTIC);
	assert_int_equal(b->vectors[0].irq, 231);
	scan_free(&sc);

	/* an IRQ named by nothing the routes know */
	put(t, "proc/interrupts",
	    "           CPU0       CPU1       CPU2       CPU3       CPU4       CPU5       CPU6       CPU7       \n"
	    "231:     318822          0          0          0          0          0          0          0     GICv3 564 Level     exynos-ufs-host\n");
	scan_tree(&sc, t, true);
	b = must_dev(&sc, "sda");
	assert_int_equal(b->nr_vectors, 0);
	assert_int_equal(b->route, IP_ROUTE_NONE);
	assert_true(ip_blockdev_unsteerable(b));
	assert_int_equal(b->queues[0].vector, -1);
	assert_int_equal(b->routes_tried, (1u << IP_ROUTE_MSI) | (1u << IP_ROUTE_KNAME) |
						  (1u << IP_ROUTE_HEURISTIC));
	scan_free(&sc);
	rmtree(t);
}

/* A controller with no rule: the devicetree route says which one. */
static void test_unknown_interrupt_controller(void **state)
{
	char *t = mktree();
	struct scan sc;
	const struct ip_blockdev *b;
	char path[4096];
	FILE *f;

	copy_tree(FIXTURES "pixel6-gs101", t);
	snprintf(path, sizeof(path), "%s/sys/firmware/devicetree/base/interrupt-controller@10400000/compatible", t);
	chmod(path, 0644);
	f = fopen(path, "wb");
	assert_non_null(f);
	fwrite("acme,noc-intc\0", 1, 14, f);
	fclose(f);
	scan_tree(&sc, t, true);
	b = must_dev(&sc, "sda");
	assert_string_equal(b->route_note, "devicetree: unknown interrupt controller acme,noc-intc");
	/* the next route still finds it, by proc_name */
	assert_int_equal(b->route, IP_ROUTE_KNAME);
	assert_int_equal(b->vectors[0].irq, 231);
	scan_free(&sc);
	rmtree(t);
}

/* Exynos 850: two dw_mmc hosts, both "dw-mci"; only one has the eMMC. */
static void test_exynos_dwmmc(void **state)
{
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "exynos850-emmc", true);
	b = must_dev(&sc, "mmcblk0");
	assert_string_equal(b->driver, "dwmmc_exynos");
	assert_int_equal(b->route, IP_ROUTE_DT);
	/* GIC-400: <GIC_SPI 222> is hwirq 254 on chip "GIC-0" */
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 48);
	scan_free(&sc);
}

/* RK3399: SD on dw_mmc next to a second dw_mmc (SDIO), eMMC on arasan. */
static void test_rk3399(void **state)
{
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "rk3399-mmc", true);
	assert_int_equal(sc.s.nr_devs, 2);
	b = must_dev(&sc, "mmcblk1");
	assert_string_equal(b->driver, "dwmmc_rockchip");
	assert_int_equal(b->route, IP_ROUTE_DT);
	/* sdmmc, not the SDIO host's "dw-mci" (IRQ 29) */
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 30);
	b = must_dev(&sc, "mmcblk2");
	assert_string_equal(b->driver, "sdhci-arasan");
	assert_int_equal(b->route, IP_ROUTE_DT);
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 31);
	scan_free(&sc);
}

/*
 * SC7180: sdhci-msm's node lists hc_irq then pwr_irq. The host's IRQ
 * (160, "mmc1", sdhci_add_host) serves the one queue; pwr_irq (161,
 * "7c4000.mmc") is not on the I/O path, though as the second of two
 * devicetree interrupts for one queue it looked like the queue's.
 */
static void test_sc7180_sdhci_msm(void **state)
{
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "sc7180-emmc", true);
	assert_int_equal(sc.s.nr_devs, 1);
	b = must_dev(&sc, "mmcblk1");
	assert_string_equal(b->driver, "sdhci_msm");
	assert_int_equal(b->route, IP_ROUTE_DT);
	assert_int_equal(b->nr_vectors, 2);
	assert_false(vec_by_irq(b, 160)->admin);
	assert_true(vec_by_irq(b, 161)->admin);
	assert_int_equal(b->nr_queues, 1);
	assert_int_equal(b->vectors[b->queues[0].vector].irq, 160);
	scan_free(&sc);
}

/*
 * Allwinner A64: SD, SDIO and eMMC hosts all bound to sunxi-mmc, whose
 * IRQs are all "sunxi-mmc". The devicetree tells them apart. Without it
 * the driver's name is every host's: the heuristic took all three IRQs
 * for each disk (the Wi-Fi's included) and tied none to the queue. Now
 * none is taken, and the note says why, so the daemon warns.
 */
static void test_a64_sunxi_mmc(void **state)
{
	static const char *const hosts[] = { "1c0f000", "1c10000", "1c11000" };
	struct scan sc;
	const struct ip_blockdev *b;
	char *t, rel[256];

	scan_tree(&sc, FIXTURES "a64-sunxi-mmc", true);
	assert_int_equal(sc.s.nr_devs, 2);
	b = must_dev(&sc, "mmcblk0");
	assert_int_equal(b->route, IP_ROUTE_DT);
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 25);
	b = must_dev(&sc, "mmcblk2");
	assert_int_equal(b->route, IP_ROUTE_DT);
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 27);
	scan_free(&sc);

	t = copy_without_of_node(FIXTURES "a64-sunxi-mmc", "sys/devices/platform/soc/1c0f000.mmc");
	for (size_t i = 1; i < ARRAY_SIZE(hosts); i++) {
		snprintf(rel, sizeof(rel), "sys/devices/platform/soc/%s.mmc/of_node", hosts[i]);
		unlink_in(t, rel);
	}
	scan_tree(&sc, t, true);
	for (int i = 0; i < 2; i++) {
		b = must_dev(&sc, i ? "mmcblk2" : "mmcblk0");
		assert_int_equal(b->nr_vectors, 0);
		assert_true(ip_blockdev_unsteerable(b));
		assert_non_null(strstr(b->route_note, "3 IRQs are named after sunxi-mmc, which drives 3 hosts"));
	}
	scan_free(&sc);

	/* with one host bound, its driver's name is its own */
	unlink_in(t, "sys/bus/platform/drivers/sunxi-mmc/1c10000.mmc");
	unlink_in(t, "sys/bus/platform/drivers/sunxi-mmc/1c11000.mmc");
	put(t, "proc/interrupts",
	    "           CPU0       CPU1       CPU2       CPU3       \n"
	    " 25:       9000          0          0          0     GIC-0  92 Level     sunxi-mmc\n");
	scan_tree(&sc, t, true);
	b = must_dev(&sc, "mmcblk0");
	assert_int_equal(b->route, IP_ROUTE_HEURISTIC);
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 25);
	scan_free(&sc);
	rmtree(t);
}

/*
 * MT8195: mtk-sd requests its IRQ with pdev->name, "" for a devicetree
 * device, so the line has an action with no name. The devicetree finds
 * it by chip and hwirq all the same.
 */
static void test_mt8195_unnamed_irq(void **state)
{
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "mt8195-emmc", true);
	assert_int_equal(sc.s.nr_devs, 1);
	b = must_dev(&sc, "mmcblk0");
	assert_string_equal(b->driver, "mtk-msdc");
	assert_int_equal(b->route, IP_ROUTE_DT);
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 129);
	assert_int_equal(b->queues[0].vector, 0);
	scan_free(&sc);
}

/*
 * A line made up inside an IRQ name (a GPIO consumer label of 31 bytes at most,
 * drivers/gpio/gpiolib-cdev.c, holding "\n44:", eight counts and
 * "GICv3 163") showing the eMMC host's hwirq. Taking the first line that
 * showed it gave the host a vector of the label's choosing; now no line
 * is taken and the route says why, whichever number the label picks.
 */
static void dt_made_up(const char *label, const char *why)
{
	static const char head[] =
		"           CPU0       CPU1       CPU2       CPU3       CPU4       CPU5       CPU6       CPU7       \n"
		"129:     120311          0          0          0          0          0          0          0     GICv3 163 Level     \n"
		"130:         31          0          0          0          0          0          0          0     GICv3 167 Level     \n"
		"200:          0          0          0          0          0          0          0          0  mt8195-pinctrl  12 Edge      sd-cd";
	char *t = mktree(), *text = NULL;
	struct scan sc;
	const struct ip_blockdev *b;

	assert_true(strlen(label) <= 31);
	copy_tree(FIXTURES "mt8195-emmc", t);
	assert_true(asprintf(&text, "%s%s\n", head, label) > 0);
	put(t, "proc/interrupts", text);
	scan_tree(&sc, t, true);
	b = must_dev(&sc, "mmcblk0");
	assert_int_equal(b->nr_vectors, 0);
	assert_true(ip_blockdev_unsteerable(b));
	if (!strstr(b->route_note, why))
		fail_msg("route_note \"%s\" does not say \"%s\"", b->route_note, why);
	scan_free(&sc);
	free(text);
	rmtree(t);
}

static void test_dt_line_made_up(void **state)
{
	(void)state;
	/* a number no line has */
	dt_made_up("\n44: 9 9 9 9 9 9 9 9 GICv3 163", "IRQs 44 and 129 both show GICv3 163: two controllers of that name, or a line made up");
	/* another IRQ's number */
	dt_made_up("\n130: 9 9 9 9 9 9 9 9 GICv3 163", "IRQs 129 and 130 both show GICv3 163");
	/* the host's own number, another hwirq */
	dt_made_up("\n129: 9 9 9 9 9 9 9 9 GICv3 99", "IRQ 129, which shows GICv3 163, is on two lines");
}

/*
 * A UAS disk on a PCI xHCI with 5 MSI-X vectors, all "xhci_hcd": only
 * interrupter 0 (the first vector) carries its completions. Before, all
 * five were its I/O vectors and its one queue was tied to none.
 */
static void test_usb_xhci_primary_interrupter(void **state)
{
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "x86-usb-uas", true);
	assert_int_equal(sc.s.nr_devs, 1);
	b = must_dev(&sc, "sda");
	assert_string_equal(b->driver, "xhci_hcd");
	assert_int_equal(b->route, IP_ROUTE_MSI);
	assert_int_equal(b->nr_vectors, 5);
	assert_false(vec_by_irq(b, 124)->admin);
	for (unsigned irq = 125; irq <= 128; irq++)
		assert_true(vec_by_irq(b, irq)->admin);
	assert_int_equal(b->nr_queues, 1);
	assert_true(b->queues[0].vector >= 0);
	assert_int_equal(b->vectors[b->queues[0].vector].irq, 124);
	scan_free(&sc);
}

/*
 * RK3399 booting from a UAS SSD on dwc3's xHCI (xhci-plat): the IRQ is
 * "xhci-hcd:usb5", named after the primary root hub, while the disk is
 * below the USB3 one, usb6. The other controller's "xhci-hcd:usb7" is
 * not its. Before, no route knew the name and sda was unsteerable.
 */
static void test_usb_platform_xhci(void **state)
{
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "rk3399-usb-xhci", true);
	assert_int_equal(sc.s.nr_devs, 1);
	b = must_dev(&sc, "sda");
	assert_string_equal(b->driver, "xhci-hcd");
	assert_string_equal(b->bus_id, "xhci-hcd.0.auto");
	assert_int_equal(b->route, IP_ROUTE_KNAME);
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 76);
	assert_int_equal(b->queues[0].vector, 0);
	scan_free(&sc);
}

/*
 * RK3399 whose SD host has no devicetree link: both dw_mmc hosts' IRQs are
 * "dw-mci", and the SDIO host's (29) is not the disk's. Neither is taken,
 * and the note says why, so the daemon warns about mmcblk1.
 */
static void test_rk3399_dwmci_ambiguous(void **state)
{
	char *t = copy_without_of_node(FIXTURES "rk3399-mmc", "sys/devices/platform/fe320000.mmc");
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, t, true);
	b = must_dev(&sc, "mmcblk1");
	assert_int_equal(b->nr_vectors, 0);
	assert_true(ip_blockdev_unsteerable(b));
	assert_non_null(strstr(b->route_note, "2 IRQs are named \"dw-mci\""));
	assert_non_null(strstr(b->route_note, "fe320000.mmc"));
	scan_free(&sc);
	rmtree(t);
}

/*
 * A second UFS host, as the kernel writes it: 17f00000.ufs (drivers/of/
 * platform.c of_device_make_bus_id, "<address>.<node name>"), SCSI host1
 * with proc_name "ufshcd" (ufshcd_driver_template), its IRQ requested as
 * "ufshcd" too (ufshcd_init), and class/scsi_host links to both hosts.
 */
static void add_second_ufs_host(const char *t, const char *driver)
{
	const char *dev = "sys/devices/platform/soc@0/17f00000.ufs";
	const char *lun = "sys/devices/platform/soc@0/17f00000.ufs/host1/target1:0:0/1:0:0:0";
	char cmd[4096], rel[512], target[512];

	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/%s/host1/target1:0:0' && cp -a '%s/sys/devices/platform/soc@0/14700000.ufs/host0/target0:0:0/0:0:0:1' '%s/%s' && mv '%s/%s/block/sdb' '%s/%s/block/sdd'",
		 t, dev, t, t, lun, t, lun, t, lun);
	assert_int_equal(system(cmd), 0);
	snprintf(rel, sizeof(rel), "%s/block/sdd/dev", lun);
	put(t, rel, "8:48\n");
	snprintf(rel, sizeof(rel), "%s/host1/scsi_host/host1/proc_name", dev);
	put(t, rel, "ufshcd\n");
	snprintf(rel, sizeof(rel), "%s/driver", dev);
	snprintf(target, sizeof(target), "../../../../bus/platform/drivers/%s", driver);
	lnk(t, rel, target);
	snprintf(rel, sizeof(rel), "sys/bus/platform/drivers/%s/17f00000.ufs", driver);
	lnk(t, rel, "../../../../devices/platform/soc@0/17f00000.ufs");
	lnk(t, "sys/block/sdd", "../devices/platform/soc@0/17f00000.ufs/host1/target1:0:0/1:0:0:0/block/sdd");
	lnk(t, "sys/class/scsi_host/host0", "../../devices/platform/soc@0/14700000.ufs/host0/scsi_host/host0");
	lnk(t, "sys/class/scsi_host/host1", "../../devices/platform/soc@0/17f00000.ufs/host1/scsi_host/host1");
	put(t, "proc/interrupts",
	    "           CPU0       CPU1       CPU2       CPU3       CPU4       CPU5       CPU6       CPU7       \n"
	    "231:     318822          0          0          0          0          0          0          0     GICv3 564 Level     ufshcd\n"
	    "240:      91000          0          0          0          0          0          0          0     GICv3 632 Level     ufshcd\n");
}

static void assert_ufs_refused(const struct scan *sc, const char *disk, const char *bus_id)
{
	const struct ip_blockdev *b = must_dev(sc, disk);

	assert_int_equal(b->nr_vectors, 0);
	assert_true(ip_blockdev_unsteerable(b));
	assert_non_null(strstr(b->route_note, "2 UFS hosts name their IRQs \"ufshcd\""));
	assert_non_null(strstr(b->route_note, bus_id));
}

/*
 * Two UFS hosts (SA8540P, ExynosAuto v9) with no devicetree link: both
 * IRQs are "ufshcd", so the name cannot say whose either is. Neither disk
 * takes one, and the note says why, whether the other host is known from
 * class/scsi_host (bound to the generic "ufshcd-pltfrm",
 * drivers/ufs/host/ufshcd-pltfrm.c) or from the glue driver's directory.
 * One MCQ host with nine "ufshcd" IRQs still takes them all.
 */
static void test_two_ufs_hosts_by_name(void **state)
{
	char *t = copy_without_of_node(FIXTURES "pixel6-gs101", "sys/devices/platform/soc@0/14700000.ufs");
	struct scan sc;
	const struct ip_blockdev *b;

	add_second_ufs_host(t, "ufshcd-pltfrm");
	scan_tree(&sc, t, true);
	assert_ufs_refused(&sc, "sda", "14700000.ufs");
	assert_ufs_refused(&sc, "sdd", "17f00000.ufs");
	scan_free(&sc);

	unlink_in(t, "sys/class/scsi_host/host0");
	unlink_in(t, "sys/class/scsi_host/host1");
	/* rebound to the glue driver that has the first host */
	unlink_in(t, "sys/bus/platform/drivers/ufshcd-pltfrm/17f00000.ufs");
	unlink_in(t, "sys/devices/platform/soc@0/17f00000.ufs/driver");
	lnk(t, "sys/devices/platform/soc@0/17f00000.ufs/driver", "../../../../bus/platform/drivers/exynos-ufshc");
	lnk(t, "sys/bus/platform/drivers/exynos-ufshc/17f00000.ufs", "../../../../devices/platform/soc@0/17f00000.ufs");
	scan_tree(&sc, t, true);
	assert_ufs_refused(&sc, "sda", "14700000.ufs");
	assert_ufs_refused(&sc, "sdd", "17f00000.ufs");
	scan_free(&sc);
	rmtree(t);

	t = copy_without_of_node(FIXTURES "mt6985-ufs-mcq", "sys/devices/platform/soc/112b0000.ufshci");
	scan_tree(&sc, t, true);
	b = must_dev(&sc, "sda");
	assert_int_equal(b->route, IP_ROUTE_KNAME);
	assert_int_equal(b->nr_vectors, 9);
	assert_string_equal(b->route_note, "");
	scan_free(&sc);
	rmtree(t);
}

/* SM8550 UFS 4, MCQ with ESI: per-queue platform MSI, the host's SPI aside. */
static void test_qcom_mcq_esi(void **state)
{
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "sm8550-ufs-mcq", true);
	b = must_dev(&sc, "sda");
	assert_int_equal(b->route, IP_ROUTE_MSI);
	assert_int_equal(b->nr_queues, 9);
	assert_int_equal(b->nr_vectors, 9);
	for (int q = 0; q < 8; q++) {
		const struct ip_vector *v = vec_by_irq(b, 260 + q);

		assert_int_equal(v->route, IP_ROUTE_MSI);
		assert_int_equal(v->queue, q);
		assert_int_equal(v->map, IP_VEC_MAP_ORDER);
		assert_int_equal(b->vectors[b->queues[q].vector].irq, 260 + q);
	}
	/* the poll queue has no vector; the host's own SPI is not on the I/O path */
	assert_int_equal(b->queues[8].vector, -1);
	assert_true(vec_by_irq(b, 200)->admin);
	assert_int_equal(vec_by_irq(b, 200)->route, IP_ROUTE_DT);
	scan_free(&sc);
}

/* MediaTek MCQ: nine "ufshcd" vectors, the queue only in devicetree order. */
static void test_mtk_mcq(void **state)
{
	static const unsigned linux_irq[8] = { 190, 189, 192, 191, 194, 193, 196, 195 };
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "mt6985-ufs-mcq", true);
	b = must_dev(&sc, "sda");
	assert_int_equal(b->route, IP_ROUTE_DT);
	assert_int_equal(b->nr_vectors, 9);
	assert_int_equal(vec_at_dt(b, 0)->irq, 181);
	assert_true(vec_at_dt(b, 0)->admin);
	for (int q = 0; q < 8; q++) {
		const struct ip_vector *v = vec_at_dt(b, q + 1);

		assert_int_equal(v->irq, linux_irq[q]);
		assert_false(v->admin);
		assert_int_equal(v->queue, q);
		assert_int_equal(v->map, IP_VEC_MAP_ORDER);
		assert_int_equal(b->vectors[b->queues[q].vector].irq, linux_irq[q]);
	}
	assert_int_equal(b->queues[8].vector, -1);
	scan_free(&sc);
}

/* virtio-mmio on arm64: the transport's devicetree node, not "virtio1". */
static void test_virtio_mmio_arm64(void **state)
{
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "virt-arm64-mmio", true);
	b = must_dev(&sc, "vda");
	assert_int_equal(b->bus, IP_BUS_VIRTIO_MMIO);
	assert_string_equal(b->driver, "virtio_blk");
	assert_int_equal(b->route, IP_ROUTE_DT);
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 47);
	scan_free(&sc);
}

/*
 * QEMU riscv64 "virt": virtio-blk over virtio-mmio on a PLIC, whose chip
 * is "SiFive PLIC". The disk's one IRQ, "virtio0", is found, and by the
 * devicetree: its PLIC source is the hwirq, which names alone cannot give
 * where two hosts share a name (dw_mmc's "dw-mci").
 */
static void test_virtio_mmio_riscv64(void **state)
{
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "virt-riscv64-mmio", true);
	b = must_dev(&sc, "vda");
	assert_int_equal(b->bus, IP_BUS_VIRTIO_MMIO);
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 14);
	assert_int_equal(b->route, IP_ROUTE_DT);
	assert_string_equal(b->route_note, "");
	scan_free(&sc);
}

/* ---- the devicetree parsers ------------------------------------------ */

static void test_dt_parsers(void **state)
{
	static const unsigned char be[] = { 0, 0, 0, 0, 0, 0, 2, 0x14, 0, 0, 0, 4, 0, 0, 0, 0 };
	static const char v3[] = "arm,gic-v3";
	static const char v2[] = "samsung,exynos-gic\0arm,gic-400";
	static const char jh7110[] = "starfive,jh7110-plic\0sifive,plic-1.0.0";
	static const char m1[] = "apple,t8103-aic\0apple,aic";
	static const char m1pro[] = "apple,t6000-aic\0apple,aic2";
	uint32_t cells[8], spec[4];
	struct ip_dt_irq irq;
	struct ip_diag d = { "" };
	unsigned long hw;
	int n;

	assert_int_equal(ip_dt_cells(be, sizeof(be), cells, 8, &n, &d), 0);
	assert_int_equal(n, 4);
	assert_int_equal(cells[1], 532);
	assert_int_equal(ip_dt_cells(be, 7, cells, 8, &n, &d), -EINVAL);
	assert_int_equal(ip_dt_cells(be, sizeof(be), cells, 3, &n, &d), -E2BIG);

	assert_true(ip_dt_compatible(v2, sizeof(v2), "arm,gic-400"));
	assert_false(ip_dt_compatible(v2, sizeof(v2), "arm,gic"));

	/* SPI n is hwirq n + 32, PPI n is n + 16; a 4th cell changes nothing */
	assert_int_equal(ip_dt_translate(v3, sizeof(v3), 4, cells, &irq, &d), 0);
	assert_int_equal(irq.hwirq, 564);
	assert_true(ip_dt_irq_matches(&irq, "GICv3", "564"));
	assert_false(ip_dt_irq_matches(&irq, "GICv3", "563"));
	assert_false(ip_dt_irq_matches(&irq, "ITS-MSI", "564"));
	spec[0] = 1, spec[1] = 7, spec[2] = 4;
	assert_int_equal(ip_dt_translate(v2, sizeof(v2), 3, spec, &irq, &d), 0);
	assert_int_equal(irq.hwirq, 23);
	/* the v2 chip prints as GIC-0 or GICv2, never GICv3 */
	assert_true(ip_dt_irq_matches(&irq, "GIC-0", "23"));
	assert_true(ip_dt_irq_matches(&irq, "GICv2", "23"));
	assert_false(ip_dt_irq_matches(&irq, "GICv3", "23"));
	spec[0] = 2, spec[1] = 5;
	assert_int_equal(ip_dt_translate(v3, sizeof(v3), 3, spec, &irq, &d), 0);
	assert_int_equal(irq.hwirq, 4101);
	assert_int_equal(ip_dt_translate(v2, sizeof(v2), 3, spec, &irq, &d), -EINVAL);
	spec[0] = 1, spec[1] = 16;
	assert_int_equal(ip_dt_translate(v3, sizeof(v3), 3, spec, &irq, &d), -EINVAL);
	assert_int_equal(ip_dt_translate(v3, sizeof(v3), 2, spec, &irq, &d), -EINVAL);
	assert_int_equal(ip_dt_translate("acme,intc", 10, 2, spec, &irq, &d), -EPROTONOSUPPORT);
	assert_string_equal(d.msg, "unknown interrupt controller acme,intc");

	/* RISC-V: the PLIC's and APLIC's cell 0 is the hwirq */
	spec[0] = 74, spec[1] = 4;
	assert_int_equal(ip_dt_translate(jh7110, sizeof(jh7110), 1, spec, &irq, &d), 0);
	assert_int_equal(irq.hwirq, 74);
	assert_true(ip_dt_irq_matches(&irq, "SiFive PLIC", "74"));
	assert_false(ip_dt_irq_matches(&irq, "SiFive", "74"));
	assert_int_equal(ip_dt_translate("thead,c900-plic", 16, 2, spec, &irq, &d), 0);
	assert_true(ip_dt_irq_matches(&irq, "SiFive PLIC", "74"));
	assert_int_equal(ip_dt_translate("riscv,aplic", 12, 2, spec, &irq, &d), 0);
	assert_true(ip_dt_irq_matches(&irq, "APLIC-DIRECT", "74"));
	assert_int_equal(ip_dt_translate("riscv,aplic", 12, 1, spec, &irq, &d), -EINVAL);
	assert_int_equal(ip_dt_translate("riscv,plic0", 12, 0, spec, &irq, &d), -EINVAL);

	/* stacked on the GIC, passing SPIs on: their chip, the SPI as hwirq
	 * (a Jetson Nano's sdhci-tegra, an i.MX6Q's esdhc, an i.MX8MQ's) */
	spec[0] = 0, spec[1] = 14, spec[2] = 4;
	assert_int_equal(ip_dt_translate("nvidia,tegra210-ictlr", 22, 3, spec, &irq, &d), 0);
	assert_true(ip_dt_irq_matches(&irq, "LIC", "14"));
	assert_false(ip_dt_irq_matches(&irq, "LIC", "46"));
	assert_false(ip_dt_irq_matches(&irq, "GICv2", "14"));
	assert_int_equal(ip_dt_translate("fsl,imx6q-gpc", 14, 3, spec, &irq, &d), 0);
	assert_true(ip_dt_irq_matches(&irq, "GPC", "14"));
	assert_false(ip_dt_irq_matches(&irq, "GPCv2", "14"));
	assert_int_equal(ip_dt_translate("fsl,imx8mq-gpc", 15, 3, spec, &irq, &d), 0);
	assert_true(ip_dt_irq_matches(&irq, "GPCv2", "14"));
	assert_int_equal(ip_dt_translate("mediatek,mt6577-sysirq", 23, 3, spec, &irq, &d), 0);
	assert_true(ip_dt_irq_matches(&irq, "MT_SYSIRQ", "14"));
	spec[0] = 1;
	assert_int_equal(ip_dt_translate("nvidia,tegra30-ictlr", 21, 3, spec, &irq, &d), -EINVAL);
	assert_string_equal(d.msg, "nvidia,tegra30-ictlr specifier is not a 3-cell SPI");
	spec[0] = 0;
	assert_int_equal(ip_dt_translate("fsl,imx7d-gpc", 14, 2, spec, &irq, &d), -EINVAL);

	/* Apple's AIC: type 0 is a hardware IRQ, hwirq die << 24 | 1 << 16 | n
	 * (an M1's "apple,t8103-aic", "apple,aic"; an M1 Pro's AIC2, 4 cells) */
	spec[0] = 0, spec[1] = 590, spec[2] = 4;
	assert_int_equal(ip_dt_translate(m1, sizeof(m1), 3, spec, &irq, &d), 0);
	assert_int_equal(irq.hwirq, 65536 + 590);
	assert_true(ip_dt_irq_matches(&irq, "AIC", "66126"));
	assert_false(ip_dt_irq_matches(&irq, "AIC2", "66126"));
	spec[1] = 1, spec[2] = 590, spec[3] = 4;
	assert_int_equal(ip_dt_translate(m1pro, sizeof(m1pro), 4, spec, &irq, &d), 0);
	assert_true(ip_dt_irq_matches(&irq, "AIC2", "16843342"));
	assert_false(ip_dt_irq_matches(&irq, "AIC", "16843342"));
	spec[0] = 1;
	assert_int_equal(ip_dt_translate(m1, sizeof(m1), 3, spec, &irq, &d), -EINVAL);
	spec[0] = 0;
	assert_int_equal(ip_dt_translate(m1, sizeof(m1), 2, spec, &irq, &d), -EINVAL);

	/* a Raspberry Pi 3's armctrl: bank << 5 | bit (bcm2835-sdhost is
	 * bank 2 bit 24 in bcm283x.dtsi) */
	spec[0] = 2, spec[1] = 24;
	assert_int_equal(ip_dt_translate("brcm,bcm2836-armctrl-ic", 24, 2, spec, &irq, &d), 0);
	assert_true(ip_dt_irq_matches(&irq, "ARMCTRL-level", "88"));
	spec[0] = 3;
	assert_int_equal(ip_dt_translate("brcm,bcm2835-armctrl-ic", 24, 2, spec, &irq, &d), -EINVAL);

	assert_int_equal(ip_parse_hwirq("564\n", &hw), 0);
	assert_int_equal(hw, 564);
	assert_int_equal(ip_parse_hwirq("81920-edge", &hw), 0);
	assert_int_equal(hw, 81920);
	assert_int_equal(ip_parse_hwirq("", &hw), -EINVAL);
	assert_int_equal(ip_parse_hwirq("12x", &hw), -EINVAL);
}

/* mpi3mr with 36 HDDs: msix0 is the admin queue, msixQ+1 serves queue Q. */
static void test_mpi3mr_36_hdds(void **state)
{
	struct scan sc;

	scan_tree(&sc, FIXTURES "server-mpi3mr-36hdd", true);
	assert_int_equal(sc.s.nr_devs, 36);
	for (int i = 0; i < sc.s.nr_devs; i++) {
		const struct ip_blockdev *b = &sc.s.devs[i];

		assert_string_equal(b->driver, "mpi3mr");
		assert_true(b->rotational);
		assert_int_equal(b->route, IP_ROUTE_MSI);
		assert_int_equal(b->nr_queues, 16);
		assert_int_equal(b->nr_vectors, 17);
		assert_true(vec_by_irq(b, 60)->admin);
		for (int q = 0; q < 16; q++) {
			assert_int_equal(b->vectors[b->queues[q].vector].irq, 61 + q);
			assert_int_equal(vec_by_irq(b, 61 + q)->queue, q);
		}
	}
	assert_non_null(dev(&sc, "sdaj"));
	scan_free(&sc);
}

/*
 * megaraid_sas and mpt3sas with 8 high-IOPS vectors ahead of the queue
 * vectors and 2 poll queues after them; NVMe with 2 poll queues. The
 * offset comes from the affinities the kernel mapped the queues by.
 */
static void test_high_iops_and_poll_queues(void **state)
{
	static const struct {
		const char *disk;
		unsigned first;
	} hbas[] = { { "sda", 100 }, { "sdb", 100 }, { "sdc", 130 }, { "sdd", 130 } };
	struct scan sc;
	const struct ip_blockdev *b;

	scan_tree(&sc, FIXTURES "server-hba-highiops", true);
	for (size_t k = 0; k < ARRAY_SIZE(hbas); k++) {
		b = must_dev(&sc, hbas[k].disk);
		assert_int_equal(b->nr_queues, 18);
		assert_int_equal(b->nr_vectors, 24);
		for (unsigned m = 0; m < 8; m++) {
			const struct ip_vector *v = vec_by_irq(b, hbas[k].first + m);

			/* on the I/O path for every queue, not admin */
			assert_false(v->admin);
			assert_int_equal(v->queue, -1);
		}
		for (int q = 0; q < 16; q++) {
			assert_int_equal(b->vectors[b->queues[q].vector].irq, hbas[k].first + 8 + q);
			assert_int_equal(vec_by_irq(b, hbas[k].first + 8 + q)->queue, q);
		}
		/* poll queues have no vector */
		assert_int_equal(b->queues[16].vector, -1);
		assert_int_equal(b->queues[17].vector, -1);
		/* what the policy reads of each: one queue's CPUs, or none */
		for (int q = 0; q < 16; q++) {
			const struct ip_vec_serves *sv = &vec_by_irq(b, hbas[k].first + 8 + q)->serves;

			assert_int_equal(sv->nr, 1);
			assert_true(cpuset_equal(&sv->cpus, &b->queues[q].cpus));
			assert_int_equal(sv->lo, cpuset_first(&b->queues[q].cpus));
			assert_int_equal(sv->hi, cpuset_last(&b->queues[q].cpus));
		}
		assert_int_equal(vec_by_irq(b, hbas[k].first)->serves.nr, 0);
		assert_int_equal(vec_by_irq(b, hbas[k].first)->serves.lo, -1);
	}
	b = must_dev(&sc, "nvme0n1");
	assert_int_equal(b->nr_queues, 18);
	assert_int_equal(b->nr_vectors, 17);
	assert_true(vec_by_irq(b, 160)->admin);
	for (int q = 0; q < 16; q++)
		assert_int_equal(b->vectors[b->queues[q].vector].irq, 161 + q);
	assert_int_equal(b->queues[16].vector, -1);
	assert_int_equal(b->queues[17].vector, -1);
	scan_free(&sc);
}

/* interrupts-extended: <&controller spec...> instead of interrupts. */
static void test_interrupts_extended(void **state)
{
	static const unsigned char ext[] = { 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, 0x14, 0, 0, 0, 4, 0, 0, 0, 0 };
	char *t = mktree();
	struct scan sc;
	const struct ip_blockdev *b;
	char path[4096];
	FILE *f;

	copy_tree(FIXTURES "pixel6-gs101", t);
	unlink_in(t, "sys/firmware/devicetree/base/soc@0/ufs@14700000/interrupts");
	snprintf(path, sizeof(path), "%s/sys/firmware/devicetree/base/soc@0/ufs@14700000/interrupts-extended", t);
	f = fopen(path, "wb");
	assert_non_null(f);
	fwrite(ext, 1, sizeof(ext), f);
	fclose(f);
	scan_tree(&sc, t, true);
	b = must_dev(&sc, "sda");
	assert_int_equal(b->route, IP_ROUTE_DT);
	assert_int_equal(b->nr_vectors, 1);
	assert_int_equal(b->vectors[0].irq, 231);
	scan_free(&sc);

	/* a phandle that names no node is said, and the next route used */
	f = fopen(path, "wb");
	assert_non_null(f);
	fwrite("\0\0\0\x09", 1, 4, f);
	fwrite(ext + 4, 1, sizeof(ext) - 4, f);
	fclose(f);
	scan_tree(&sc, t, true);
	b = must_dev(&sc, "sda");
	assert_non_null(strstr(b->route_note, "names phandle <0x9>, no such node"));
	assert_int_equal(b->route, IP_ROUTE_KNAME);
	scan_free(&sc);
	rmtree(t);
}

/*
 * An IRQ whose /proc/interrupts line shows no hwirq (kernel/irq/proc.c
 * prints blanks when the IRQ has no domain at show time): its chip and
 * hwirq come from /sys/kernel/irq/N (kernel/irq/irqdesc.c).
 */
static void test_sys_kernel_irq_fallback(void **state)
{
	char *t = mktree();
	struct scan sc;

	copy_tree(FIXTURES "pixel6-gs101", t);
	put(t, "proc/interrupts",
	    "           CPU0       CPU1       CPU2       CPU3       CPU4       CPU5       CPU6       CPU7       \n"
	    "231:     318822          0          0          0          0          0          0          0     GICv3     Level     ufshcd\n");
	put(t, "sys/kernel/irq/231/chip_name", "GICv3\n");
	put(t, "sys/kernel/irq/231/hwirq", "564\n");
	scan_tree(&sc, t, true);
	assert_int_equal(must_dev(&sc, "sda")->route, IP_ROUTE_DT);
	assert_int_equal(must_dev(&sc, "sda")->vectors[0].irq, 231);
	scan_free(&sc);
	/* without it the devicetree cannot match, and the next route does */
	unlink_in(t, "sys/kernel/irq/231/hwirq");
	scan_tree(&sc, t, true);
	assert_int_equal(must_dev(&sc, "sda")->route, IP_ROUTE_KNAME);
	scan_free(&sc);
	rmtree(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_queue_from_name),
		cmocka_unit_test(test_is_virtual),
		cmocka_unit_test(test_phone),
		cmocka_unit_test(test_laptop),
		cmocka_unit_test(test_nvme_mpath),
		cmocka_unit_test(test_nvme_mpath_head_alone),
		cmocka_unit_test(test_server),
		cmocka_unit_test(test_ahci_multi_msi),
		cmocka_unit_test(test_qemu_intx_shared),
		cmocka_unit_test(test_capture_ahci),
		cmocka_unit_test(test_odd_devices_skipped),
		cmocka_unit_test(test_numa_files),
		cmocka_unit_test(test_no_sys_block),
		cmocka_unit_test(test_share),
		cmocka_unit_test(test_class_block_fallback),
		cmocka_unit_test(test_vector_mapping),
		cmocka_unit_test(test_virtio),
		cmocka_unit_test(test_platform_without_irq),
		cmocka_unit_test(test_dt_parsers),
		cmocka_unit_test(test_pixel6),
		cmocka_unit_test(test_pixel6_routes_fall_back),
		cmocka_unit_test(test_unknown_interrupt_controller),
		cmocka_unit_test(test_interrupts_extended),
		cmocka_unit_test(test_sys_kernel_irq_fallback),
		cmocka_unit_test(test_exynos_dwmmc),
		cmocka_unit_test(test_rk3399),
		cmocka_unit_test(test_rk3399_dwmci_ambiguous),
		cmocka_unit_test(test_sc7180_sdhci_msm),
		cmocka_unit_test(test_a64_sunxi_mmc),
		cmocka_unit_test(test_mt8195_unnamed_irq),
		cmocka_unit_test(test_dt_line_made_up),
		cmocka_unit_test(test_usb_xhci_primary_interrupter),
		cmocka_unit_test(test_usb_platform_xhci),
		cmocka_unit_test(test_two_ufs_hosts_by_name),
		cmocka_unit_test(test_qcom_mcq_esi),
		cmocka_unit_test(test_mtk_mcq),
		cmocka_unit_test(test_virtio_mmio_arm64),
		cmocka_unit_test(test_virtio_mmio_riscv64),
		cmocka_unit_test(test_mpi3mr_36_hdds),
		cmocka_unit_test(test_high_iops_and_poll_queues),
		cmocka_unit_test(test_xen_blkfront),
		cmocka_unit_test(test_hyperv_storvsc),
		cmocka_unit_test(test_vmd_nvme),
		cmocka_unit_test(test_rpi4_brcmstb),
		cmocka_unit_test(test_m1_apple_nvme),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
