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
	IP_VEC_MAP_ORDER,    /* n-th I/O vector of msi_irqs or of the devicetree's interrupts */
};

/*
 * Where the kernel told which IRQs belong to the device, in the order they
 * are tried: the first that finds any vector is the device's route.
 */
enum ip_vec_route {
	IP_ROUTE_NONE = 0,
	IP_ROUTE_MSI,        /* <dev>/msi_irqs/N, PCI and platform MSI */
	IP_ROUTE_INTX,       /* a PCI function's irq file */
	IP_ROUTE_DT,         /* of_node interrupts matched to chip and hwirq */
	IP_ROUTE_ACPI,       /* ACPI resources (sysfs shows none: never matches) */
	IP_ROUTE_KNAME,      /* a name the kernel gives: proc_name, mmcN, virtioN */
	IP_ROUTE_HEURISTIC,  /* a driver's own IRQ name, or the device's name */
	IP_ROUTE_COUNT
};

/*
 * The hw queues a vector serves: those whose vector it is (ip_hwqueue.vector)
 * and the one its own queue index names, each queue once. Derived from the
 * scan by ip_blockdev_link_serves(), since the policy asks it of every
 * storage vector every cycle and the scan alone changes it.
 */
struct ip_vec_serves {
	int nr;          /* how many queues */
	int lo, hi;      /* first and last CPU of cpus, -1 if none */
	ip_cpuset cpus;  /* their cpu_lists, joined */
};

struct ip_vector {
	unsigned irq;
	bool admin;          /* nvme0q0, virtioN-config: not on the I/O path */
	int queue;           /* hw queue index it serves, -1 = all/unknown */
	enum ip_vec_map map;
	enum ip_vec_route route;
	int dt_index;        /* position in the of_node's interrupts, -1 if not from it */
	struct ip_vec_serves serves;
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
	char numa_note[160];  /* why local_cpulist or numa_node could not be read, "" */
	enum ip_vec_route route;  /* the route that found the vectors, NONE if none did */
	unsigned routes_tried;    /* 1 << IP_ROUTE_* of every route looked at */
	char route_note[160];     /* why a route could not be read ("unknown interrupt controller X") */
	/* the routes found why no interrupt of the device can be steered
	 * (a Hyper-V channel, a chained MSI): route_note says it, and there
	 * is no bug to report */
	bool route_known;
	/*
	 * An NVMe multipath path disk (nvme0c1n1) carries the queues and its
	 * controller's vectors, but the I/O is submitted to, and counted on,
	 * the subsystem's head disk (nvme0n1), which has neither: its name
	 * and dev_t, so submissions and diskstats of the head are the
	 * path's too. "" and 0:0 for any other disk.
	 */
	char mpath_head[32];
	unsigned head_major, head_minor;
};

/*
 * What the scan found. Read-only once returned: every snapshot shares the
 * scan's devices (ip_storage_share()) until the next scan, as copying them
 * each cycle was a twentieth of a steady cycle at 64 CPUs.
 */
struct ip_storage {
	int nr_devs;
	struct ip_blockdev *devs;
	int *users; /* how many share devs; NULL: one owner (one built by hand) */
};

/*
 * An IRQ as /proc/interrupts names it; the storage scan needs the action
 * names for the routes that go by name (SCSI proc_name, mmcN, virtioN,
 * driver names) and to tie named vectors (nvme0q3, mpi3mr0-msix5) to queues.
 */
struct ip_irq_name {
	unsigned irq;
	const char *actions; /* "mmc0, sym53c8xx" */
};

/*
 * Finds every block device backed by hardware under sys/block (loop, ram,
 * zram, dm-, md, nbd, sr are skipped), its bus device, driver, hw queues,
 * rq_affinity and IRQ vectors, from the routes of enum ip_vec_route in
 * their order (msi_irqs/, the PCI irq file, the devicetree, the kernel's
 * names, then driver-name guesses). @names lists every IRQ in
 * /proc/interrupts; the devicetree route reads its chip and hwirq columns
 * itself, only when a device has an of_node.
 */
int ip_storage_sample(struct ip_root *r, const struct ip_irq_name *names, int nr_names,
		      struct ip_storage *s, struct ip_diag *d);
/* Drops @s's share; the last one frees the devices. @s is empty after. */
void ip_storage_free(struct ip_storage *s);

/* @dst shares @src's devices, till ip_storage_free(@dst). -ENOMEM if @src has
 * one owner and cannot be counted. */
int ip_storage_share(struct ip_storage *dst, struct ip_storage *src);

/*
 * Fills each vector's serves from @bd's queues and vectors, as the scan
 * does for every device it returns; for a device built otherwise (a test's).
 * -ENOMEM, with every serves empty.
 */
int ip_blockdev_link_serves(struct ip_blockdev *bd);

/* Whether a device name is virtual (loop0, dm-1, zram0, md127, ram0, nbd0, sr0). */
bool ip_blockdev_is_virtual(const char *name);

/* "msi_irqs", "devicetree", ...: how reports name a route. */
const char *ip_vec_route_name(enum ip_vec_route r);

/*
 * The routes set in @mask, as "msi_irqs, devicetree, kernel names" into
 * @buf. Returns @buf.
 */
const char *ip_vec_routes_str(unsigned mask, char *buf, size_t size);

/*
 * A disk on real hardware for which no route found a vector: the policy
 * cannot steer it, and the user should be told (once) with what to send.
 */
bool ip_blockdev_unsteerable(const struct ip_blockdev *bd);

/*
 * From an IRQ action name, the hw queue it serves: "nvme0q3" -> 2 (q0 is the
 * admin queue), "virtio1-req.2" -> 2, "mpi3mr0-msix5" -> 5. Returns -1 when
 * the name carries no queue number, and sets *admin for admin/config vectors.
 */
int ip_vector_queue_from_name(const char *action, bool *admin);

#endif
