/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_STORAGE_H
#define IRQPILOT_STORAGE_H

#include <stdbool.h>
#include <sys/types.h>

#include "irqpilot/cpuset.h"
#include "irqpilot/diag.h"
#include "irqpilot/procfs.h"
#include "irqpilot/root.h"

enum ip_bus {
	IP_BUS_OTHER = 0,
	IP_BUS_PCI,
	IP_BUS_PLATFORM,
	IP_BUS_VIRTIO_MMIO,
};

struct ip_hwqueue {
	int index;     /* N of mq/N */
	ip_cpuset cpus; /* mq/N/cpu_list */
	int vector;    /* index into ip_blockdev.vectors serving it, -1 if unknown */
};

/* How a vector was tied to the device and to its queues. */
enum ip_vec_map {
	IP_VEC_MAP_NONE = 0, /* serves every queue, or the mapping is unknown */
	IP_VEC_MAP_NAME,     /* nvme0q3, virtio1-req.2, mpi3mr0-msix5 */
	IP_VEC_MAP_ORDER,    /* n-th I/O vector of msi_irqs */
};

struct ip_vector {
	unsigned irq;
	bool admin;          /* nvme0q0, virtioN-config: not on the I/O path */
	int queue;           /* hw queue index it serves, -1 = all/unknown */
	enum ip_vec_map map;
};

struct ip_blockdev {
	char name[32];       /* sda, nvme0n1, mmcblk0 */
	unsigned major, minor;
	char driver[32];     /* ahci, nvme, ufshcd-qcom, sdhci-pci, virtio_blk, mpi3mr */
	char bus_id[64];     /* 0000:00:1f.2, 1d84000.ufshc */
	enum ip_bus bus;
	char *syspath;       /* resolved sys/devices/... path of the disk */
	int rq_affinity;     /* -1 if unreadable */
	bool rotational;
	int nr_queues;
	struct ip_hwqueue *queues;
	int nr_vectors;
	struct ip_vector *vectors;
	ip_cpuset local_cpus; /* the bus device's local_cpulist, empty if none */
	int numa_node;        /* -1 if none */
};

struct ip_storage {
	int nr_devs;
	struct ip_blockdev *devs;
};

/*
 * An IRQ as /proc/interrupts names it; the storage scan needs the action
 * names to tie vectors to devices whose vectors are not in msi_irqs
 * (platform UFS/eMMC, INTx lines).
 */
struct ip_irq_name {
	unsigned irq;
	const char *actions; /* "mmc0, sym53c8xx" */
};

/*
 * Finds every block device backed by hardware under sys/block (loop, ram,
 * zram, dm-, md, nbd, sr are skipped), its bus device, driver, hw queues,
 * rq_affinity and IRQ vectors (msi_irqs/, the irq file, and IRQ names).
 * @names lists every IRQ in /proc/interrupts.
 */
int ip_storage_sample(struct ip_root *r, const struct ip_irq_name *names, int nr_names,
		      struct ip_storage *s, struct ip_diag *d);
void ip_storage_free(struct ip_storage *s);

/* Whether a device name is virtual (loop0, dm-1, zram0, md127, ram0, nbd0, sr0). */
bool ip_blockdev_is_virtual(const char *name);

/*
 * From an IRQ action name, the hw queue it serves: "nvme0q3" -> 2 (q0 is the
 * admin queue), "virtio1-req.2" -> 2, "mpi3mr0-msix5" -> 5. Returns -1 when
 * the name carries no queue number, and sets *admin for admin/config vectors.
 */
int ip_vector_queue_from_name(const char *action, bool *admin);

#endif
