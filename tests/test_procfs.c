// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "irqpilot/procfs.h"

#define DATA TOP_SRCDIR "/tests/data/procfs/"

/*
 * Inputs are copied into buffers of exactly their length, without a NUL
 * after them, so that ASan catches any read of text[len].
 */
struct buf {
	char *p;
	size_t len;
};

static struct buf load(const char *name)
{
	char path[512];
	struct stat st;
	struct buf b;
	int fd;

	snprintf(path, sizeof(path), DATA "%s", name);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	b.len = st.st_size;
	b.p = malloc(b.len ? b.len : 1);
	assert_non_null(b.p);
	assert_int_equal(read(fd, b.p, b.len), (ssize_t)b.len);
	close(fd);
	return b;
}

static struct buf mem(const char *s)
{
	struct buf b = { malloc(strlen(s) ? strlen(s) : 1), strlen(s) };

	assert_non_null(b.p);
	memcpy(b.p, s, b.len);
	return b;
}

static struct buf memn(const char *s, size_t n)
{
	struct buf b = { malloc(n ? n : 1), n };

	assert_non_null(b.p);
	memcpy(b.p, s, n);
	return b;
}

#define assert_msg_has(d, word)                                            \
	do {                                                               \
		if (!strstr((d).msg, (word)))                              \
			fail_msg("diag '%s' lacks '%s'", (d).msg, (word)); \
	} while (0)

/* ---- /proc/interrupts ---------------------------------------------- */

#define MAXL 64
struct irq_rec {
	unsigned irq;
	int lineno;
	int ncounts;
	uint64_t counts[16];
	char chip[64], hwirq[32], trigger[16], actions[128];
	bool unnamed_action;
};

struct irq_log {
	int n;
	struct irq_rec r[MAXL];
	int stop_at; /* IRQ number at which the callback fails, or -1 */
};

static int irq_collect(void *ctx, const struct ip_irq_line *l)
{
	struct irq_log *log = ctx;
	struct irq_rec *r;
	int k;

	if ((int)l->irq == log->stop_at)
		return -ECANCELED;
	assert_true(log->n < MAXL);
	r = &log->r[log->n++];
	r->irq = l->irq;
	r->lineno = l->lineno;
	r->ncounts = l->ncounts;
	for (int i = 0; i < l->ncounts && i < 16; i++)
		r->counts[i] = l->counts[i];
	/* the columns that are not 0, each once, ascending */
	k = 0;
	for (int i = 0; i < l->ncounts; i++)
		if (l->counts[i]) {
			assert_true(k < l->nr_nonzero);
			assert_int_equal(l->nonzero[k++], i);
		}
	assert_int_equal(k, l->nr_nonzero);
	snprintf(r->chip, sizeof(r->chip), "%s", l->chip);
	snprintf(r->hwirq, sizeof(r->hwirq), "%s", l->hwirq);
	snprintf(r->trigger, sizeof(r->trigger), "%s", l->trigger);
	snprintf(r->actions, sizeof(r->actions), "%s", l->actions);
	r->unnamed_action = l->unnamed_action;
	return 0;
}

static struct ip_irq_header hdr;

static int parse_irqs(struct buf b, struct irq_log *log, struct ip_diag *d)
{
	int r;

	memset(log, 0, sizeof(*log));
	log->stop_at = -1;
	d->msg[0] = '\0';
	r = ip_parse_interrupts(b.p, b.len, &hdr, irq_collect, log, d);
	free(b.p);
	return r;
}

static const struct irq_rec *find_irq(const struct irq_log *log, unsigned irq)
{
	for (int i = 0; i < log->n; i++)
		if (log->r[i].irq == irq)
			return &log->r[i];
	fail_msg("IRQ %u not parsed", irq);
	return NULL;
}

static void assert_counts(const struct irq_rec *r, int n, const uint64_t *want)
{
	assert_int_equal(r->ncounts, n);
	for (int i = 0; i < n; i++)
		assert_int_equal(r->counts[i], want[i]);
}

#define COUNTS(r, ...)                                               \
	assert_counts((r), ARRAY_LEN(((uint64_t[]){ __VA_ARGS__ })), \
		      (const uint64_t[]){ __VA_ARGS__ })
#define ARRAY_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void assert_irq(const struct irq_rec *r, const char *chip, const char *hwirq,
		       const char *trigger, const char *actions)
{
	assert_string_equal(r->chip, chip);
	assert_string_equal(r->hwirq, hwirq);
	assert_string_equal(r->trigger, trigger);
	assert_string_equal(r->actions, actions);
}

static void test_interrupts_x86_capture(void **state)
{
	struct irq_log log;
	struct ip_diag d;
	const struct irq_rec *r;

	assert_int_equal(parse_irqs(load("interrupts-x86-qemu-ahci"), &log, &d), 0);
	assert_int_equal(hdr.ncols, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(hdr.col_cpu[i], i);
	/* 0 1 4 8 9 12 and 24..33; NMI: LOC: ERR: ... are not IRQ lines */
	assert_int_equal(log.n, 16);
	assert_int_equal(log.r[0].irq, 0);
	assert_int_equal(log.r[15].irq, 33);

	r = find_irq(&log, 0);
	assert_int_equal(r->lineno, 2);
	COUNTS(r, 86, 0, 0, 0);
	assert_irq(r, "IO-APIC", "2-edge", "", "timer");
	r = find_irq(&log, 9);
	assert_irq(r, "IO-APIC", "9-fasteoi", "", "acpi");
	r = find_irq(&log, 12);
	COUNTS(r, 0, 0, 3, 0);
	assert_irq(r, "IO-APIC", "12-edge", "", "i8042");
	r = find_irq(&log, 25);
	COUNTS(r, 0, 0, 0, 8051);
	assert_irq(r, "PCI-MSI", "65537-edge", "", "virtio0-requests");
	r = find_irq(&log, 28);
	COUNTS(r, 0, 0, 6, 0);
	assert_irq(r, "PCI-MSI", "98304-edge", "", "ahci[0000:00:06.0]");
	r = find_irq(&log, 29);
	assert_int_equal(r->lineno, 13);
	COUNTS(r, 0, 0, 0, 16);
	assert_irq(r, "PCI-MSI", "114688-edge", "", "nvme0q0");
}

/* This machine's own file: long per-device MSI chip names are followed by
 * a single space only. */
static void test_interrupts_x86_msix_long_chip(void **state)
{
	struct irq_log log;
	struct ip_diag d;
	const struct irq_rec *r;

	assert_int_equal(parse_irqs(load("interrupts-x86-virtio"), &log, &d), 0);
	assert_int_equal(hdr.ncols, 2);
	assert_int_equal(log.n, 19);
	r = find_irq(&log, 24);
	COUNTS(r, 1, 0);
	assert_irq(r, "IO-APIC", "5-edge", "", "ACPI:Ged");
	r = find_irq(&log, 36);
	COUNTS(r, 0, 37987);
	assert_irq(r, "PCI-MSIX-0000:00:02.0", "1-edge", "", "virtio1-req.0");
	r = find_irq(&log, 43);
	COUNTS(r, 1, 0);
	assert_irq(r, "PCI-MSIX-0000:00:04.0", "3-edge", "", "virtio3-event");
}

static void test_interrupts_arm64_phone(void **state)
{
	struct irq_log log;
	struct ip_diag d;
	const struct irq_rec *r;

	assert_int_equal(parse_irqs(load("interrupts-arm64-phone-gicv3"), &log, &d), 0);
	assert_int_equal(hdr.ncols, 8);
	assert_int_equal(hdr.col_cpu[7], 7);
	/* IPI0..IPI6 and Err: are skipped */
	assert_int_equal(log.n, 12);
	assert_int_equal(log.r[11].irq, 201);

	r = find_irq(&log, 3);
	COUNTS(r, 2391044, 1720933, 1503322, 1398871, 612455, 580021, 301178, 98234);
	assert_irq(r, "GICv3", "30", "Level", "arch_timer");
	r = find_irq(&log, 13);
	COUNTS(r, 48211, 0, 0, 0, 0, 0, 0, 0);
	assert_irq(r, "GICv3", "297", "Level", "ufshcd");
	assert_irq(find_irq(&log, 15), "GICv3", "165", "Level", "dwc3");
	assert_irq(find_irq(&log, 17), "GICv3", "483", "Edge", "soc:qcom,smp2p-modem");
	r = find_irq(&log, 18);
	assert_int_equal(r->counts[4], 201);
	assert_irq(r, "GICv3", "233", "Level", "i2c_geni, hid-over-i2c");
	/* a chained line with counts but no action */
	r = find_irq(&log, 20);
	COUNTS(r, 5, 0, 0, 0, 0, 0, 0, 0);
	assert_irq(r, "GICv3", "210", "Level", "");
	assert_irq(find_irq(&log, 165), "pmic_arb", "8388709", "Edge", "Volume Up");
	assert_irq(find_irq(&log, 166), "pmic_arb", "8388710", "Edge", "Volume Down");
	r = find_irq(&log, 201);
	assert_int_equal(r->counts[1], 77);
	assert_irq(r, "msmgpio", "96", "Edge", "ACPI:Ged");
}

static void test_interrupts_arm64_server_its(void **state)
{
	struct irq_log log;
	struct ip_diag d;
	const struct irq_rec *r;

	assert_int_equal(parse_irqs(load("interrupts-arm64-server-its"), &log, &d), 0);
	assert_int_equal(hdr.ncols, 16);
	assert_int_equal(hdr.col_cpu[15], 15);
	assert_int_equal(log.n, 11);
	r = find_irq(&log, 10);
	assert_int_equal(r->counts[0], 81234);
	assert_int_equal(r->counts[15], 60111);
	assert_irq(r, "GICv3", "27", "Level", "arch_timer");
	assert_irq(find_irq(&log, 20), "ITS-pMSI", "16384", "Edge", "arm-smmu-v3-evtq");
	assert_irq(find_irq(&log, 25), "ITS-MSI", "1572864", "Edge", "PCIe PME, aerdrv");
	assert_irq(find_irq(&log, 60), "ITS-MSI", "524288", "Edge", "nvme0q0");
	for (unsigned q = 1; q <= 4; q++) {
		char name[16];

		snprintf(name, sizeof(name), "nvme0q%u", q);
		r = find_irq(&log, 60 + q);
		assert_int_equal(r->counts[(q - 1) * 4], 100000 * q + 17);
		assert_int_equal(r->counts[(q - 1) * 4 + 1], 0);
		assert_string_equal(r->actions, name);
		assert_string_equal(r->chip, "ITS-MSI");
		assert_string_equal(r->trigger, "Edge");
	}
	r = find_irq(&log, 1200);
	assert_int_equal(r->counts[7], 4294967295u);
	assert_irq(r, "ITS-MSI", "134742016", "Edge", "mlx5_comp0@pci:0000:01:00.0");
}

/*
 * A QEMU riscv64 "virt" guest: chip names with a space, "SiFive PLIC"
 * (drivers/irqchip/irq-sifive-plic.c) and "RISC-V INTC"
 * (irq-riscv-intc.c), printed " %8s" and followed by the hwirq. Cut at the
 * first blank, "PLIC   8 Edge      virtio0" was taken for the action.
 */
static void test_interrupts_riscv64_plic(void **state)
{
	struct irq_log log;
	struct ip_diag d;

	assert_int_equal(parse_irqs(load("interrupts-riscv64-qemu-plic"), &log, &d), 0);
	assert_int_equal(log.n, 5);
	assert_irq(find_irq(&log, 10), "RISC-V INTC", "5", "Edge", "riscv-timer");
	assert_irq(find_irq(&log, 12), "SiFive PLIC", "11", "Edge", "101000.rtc");
	COUNTS(find_irq(&log, 14), 81123, 0, 0, 0);
	assert_irq(find_irq(&log, 14), "SiFive PLIC", "8", "Edge", "virtio0");
}

/*
 * The Raspberry Pi 4's PCIe MSI chip, "BRCM STB PCIe MSI"
 * (drivers/pci/controller/pcie-brcmstb.c brcm_msi_irq_chip), carries an
 * NVMe drive's queues; a one-word chip before an action whose name has
 * spaces must stay one word ("pmic_arb 8388709 Edge  Volume Up").
 */
static void test_interrupts_multiword_chip_edges(void **state)
{
	static const char text[] =
		"           CPU0       CPU1       CPU2       CPU3       \n"
		" 39:          0          0          0          0 BRCM STB PCIe MSI 524288 Edge      nvme0q0\n"
		" 40:        811          0          0          0 BRCM STB PCIe MSI 524289 Edge      nvme0q1\n"
		" 41:          3          0          0          0 pmic_arb 8388709 Edge      Volume Up\n"
		" 42:          3          0          0          0 IO-APIC   9-fasteoi   acpi\n";
	struct buf b = { strdup(text), sizeof(text) - 1 };
	struct irq_log log;
	struct ip_diag d;

	assert_non_null(b.p);
	assert_int_equal(parse_irqs(b, &log, &d), 0);
	assert_irq(find_irq(&log, 39), "BRCM STB PCIe MSI", "524288", "Edge", "nvme0q0");
	assert_irq(find_irq(&log, 40), "BRCM STB PCIe MSI", "524289", "Edge", "nvme0q1");
	assert_irq(find_irq(&log, 41), "pmic_arb", "8388709", "Edge", "Volume Up");
	assert_irq(find_irq(&log, 42), "IO-APIC", "9-fasteoi", "", "acpi");
}

/*
 * 5.4 and 5.10 print the hwirq " %*d" of (int)irq_data.hwirq
 * (kernel/irq/proc.c show_interrupts(), up to 5.14): after "%*d: " and
 * "%10u " counts, " %8s" the chip, " %*d" the hwirq, "-%-8s" desc->name
 * and "  %s" the action. A Hyper-V guest's NVMe sits on vPCI domain
 * 0xc05b here; pci_msi_domain_calc_hwirq() (drivers/pci/msi.c) puts the
 * domain's low bits at 27, 0xd8000000, which "%d" prints negative.
 */
static void test_interrupts_negative_hwirq_5_10(void **state)
{
	static const char text[] =
		"           CPU0       CPU1       \n"
		" 24:          0        211  Hyper-V PCIe MSI -671088640-edge      nvme0q0\n"
		" 25:      48113          0  Hyper-V PCIe MSI -671088639-edge      nvme0q1\n"
		" 26:          0      50232  Hyper-V PCIe MSI -671088638-edge      nvme0q2\n"
		" 27:          9          0  Hyper-V PCIe MSI 134217728-edge      mlx5_async0\n";
	struct buf b = { strdup(text), sizeof(text) - 1 };
	struct irq_log log;
	struct ip_diag d;

	(void)state;
	assert_non_null(b.p);
	assert_int_equal(parse_irqs(b, &log, &d), 0);
	assert_irq(find_irq(&log, 24), "Hyper-V PCIe MSI", "-671088640-edge", "", "nvme0q0");
	COUNTS(find_irq(&log, 25), 48113, 0);
	assert_irq(find_irq(&log, 25), "Hyper-V PCIe MSI", "-671088639-edge", "", "nvme0q1");
	assert_irq(find_irq(&log, 26), "Hyper-V PCIe MSI", "-671088638-edge", "", "nvme0q2");
	assert_irq(find_irq(&log, 27), "Hyper-V PCIe MSI", "134217728-edge", "", "mlx5_async0");
}

/*
 * A Xen guest's event channel IRQs have no irq_domain, so
 * show_interrupts() (kernel/irq/proc.c) prints a blank hwirq and then
 * x86's "-%-8s" flow name (drivers/xen/events/events_base.c: "event",
 * "virq", "ipi"). The flow name is no part of the action.
 */
static void test_interrupts_xen_event_channels(void **state)
{
	static const char text[] =
		"           CPU0       CPU1       \n"
		" 24:      51021          0  xen-percpu    -virq      timer0\n"
		" 25:      20112          0  xen-percpu    -ipi       resched0\n"
		" 33:      90122          0  xen-dyn-lateeoi    -event     blkif\n"
		" 37:      40221          0  xen-dyn-lateeoi    -event     eth0-q0-tx\n"
		" 40:          0          0   xen-pirq    -pirq      \n";
	struct buf b = { strdup(text), sizeof(text) - 1 };
	struct irq_log log;
	struct ip_diag d;

	(void)state;
	assert_non_null(b.p);
	assert_int_equal(parse_irqs(b, &log, &d), 0);
	assert_irq(find_irq(&log, 24), "xen-percpu", "-virq", "", "timer0");
	assert_irq(find_irq(&log, 25), "xen-percpu", "-ipi", "", "resched0");
	assert_irq(find_irq(&log, 33), "xen-dyn-lateeoi", "-event", "", "blkif");
	assert_irq(find_irq(&log, 37), "xen-dyn-lateeoi", "-event", "", "eth0-q0-tx");
	assert_irq(find_irq(&log, 40), "xen-pirq", "-pirq", "", "");
	assert_true(find_irq(&log, 40)->unnamed_action);
}

/*
 * arm64's IPI lines with prec 3 (fewer than 1,000 IRQs):
 * arch/arm64/kernel/smp.c arch_show_interrupts() prints "%*s%u:%s" with
 * prec - 1, "IPI", i and "" (the blank only from prec 4), then "%10u "
 * per CPU, then "      %s" the name. A ten-digit count is glued to the
 * label; it is a counter line, not the rest of an IRQ name.
 */
static void test_interrupts_arm64_ipi_glued_count(void **state)
{
	static const char text[] =
		"           CPU0       CPU1       \n"
		" 11:     812345     734511     GICv3  27 Level     arch_timer\n"
		" 60:      48211          0   ITS-MSI 524289 Edge      nvme0q1\n"
		"IPI0:1234567890   98765432       Rescheduling interrupts\n"
		"IPI1:      1204 4000000001       Function call interrupts\n"
		"IPI2:         0          0       CPU stop interrupts\n"
		"Err:          0\n";
	struct buf b = { strdup(text), sizeof(text) - 1 };
	struct irq_log log;
	struct ip_diag d;

	(void)state;
	assert_non_null(b.p);
	assert_int_equal(parse_irqs(b, &log, &d), 0);
	assert_int_equal(log.n, 2);
	assert_int_equal(hdr.name_tails, 0);
	assert_irq(find_irq(&log, 60), "ITS-MSI", "524289", "Edge", "nvme0q1");
}

/*
 * Mainline after 6.18, as torvalds/linux reads now (kernel/irq/proc.c
 * irq_seq_show(), with irq_proc_constraints): the IRQ number seq_put_decimal_ull_width() to
 * num_prec (at least 4), counts " %10u" (runs of zeros as ZSTR1), a
 * two-blank gap, the chip LEFT-justified "%-*s" to chip_width, the
 * longest chip name registered (here arm64's per-device
 * "ITS-PCI-MSIX-0000:01:00.0"), ' ', the hwirq right-justified to
 * num_prec, " %-8s" the trigger (GENERIC_IRQ_SHOW_LEVEL), "  %s" the
 * action; IPI lines get their blank as num_prec >= 4.
 */
static void test_interrupts_left_justified_chip(void **state)
{
	static const char text[] =
		"            CPU0       CPU1       \n"
		"  11:     812345     734511  GICv3                       27 Level     arch_timer\n"
		"  60:          0          0  ITS-PCI-MSIX-0000:01:00.0    0 Edge      nvme0q0\n"
		"  61:      48211          0  ITS-PCI-MSIX-0000:01:00.0    1 Edge      nvme0q1\n"
		"IPI0:       1204       9911       Rescheduling interrupts\n"
		" Err:          0\n";
	struct buf b = { strdup(text), sizeof(text) - 1 };
	struct irq_log log;
	struct ip_diag d;

	(void)state;
	assert_non_null(b.p);
	assert_int_equal(parse_irqs(b, &log, &d), 0);
	assert_int_equal(log.n, 3);
	assert_int_equal(hdr.name_tails, 0);
	assert_irq(find_irq(&log, 11), "GICv3", "27", "Level", "arch_timer");
	assert_irq(find_irq(&log, 60), "ITS-PCI-MSIX-0000:01:00.0", "0", "Edge", "nvme0q0");
	COUNTS(find_irq(&log, 61), 48211, 0);
	assert_irq(find_irq(&log, 61), "ITS-PCI-MSIX-0000:01:00.0", "1", "Edge", "nvme0q1");
}

static void test_interrupts_arm64_gicv2(void **state)
{
	struct irq_log log;
	struct ip_diag d;

	assert_int_equal(parse_irqs(load("interrupts-arm64-qemu-gicv2"), &log, &d), 0);
	assert_int_equal(log.n, 5);
	COUNTS(find_irq(&log, 11), 1201, 998, 1042, 870);
	assert_irq(find_irq(&log, 14), "GIC-0", "79", "Edge", "virtio0");
	assert_irq(find_irq(&log, 15), "GIC-0", "37", "Level", "mmc0");
	COUNTS(find_irq(&log, 45), 0, 0, 0, 2000);
	assert_irq(find_irq(&log, 45), "MSI", "32768", "Edge", "ahci[0000:00:01.0]");
}

static void test_interrupts_hotplug(void **state)
{
	struct irq_log log;
	struct ip_diag d;
	const struct irq_rec *r;

	assert_int_equal(parse_irqs(load("interrupts-x86-hotplug"), &log, &d), 0);
	/* CPU1 offline: three columns for CPUs 0, 2 and 3 */
	assert_int_equal(hdr.ncols, 3);
	assert_int_equal(hdr.col_cpu[0], 0);
	assert_int_equal(hdr.col_cpu[1], 2);
	assert_int_equal(hdr.col_cpu[2], 3);
	assert_int_equal(log.n, 9);
	r = find_irq(&log, 10);
	COUNTS(r, 150, 0, 2331);
	assert_irq(r, "IO-APIC", "10-fasteoi", "", "mmc0, sym53c8xx");
	r = find_irq(&log, 7);
	COUNTS(r, 0, 3, 0);
	assert_irq(r, "IO-APIC", "7-fasteoi", "", "");
	assert_irq(find_irq(&log, 16), "IO-APIC", "16-fasteoi", "", "idma64.0, i2c_designware.0");
	assert_irq(find_irq(&log, 51), "intel-gpio", "18-level", "", "hid-over-i2c");
	assert_irq(find_irq(&log, 122), "PCI-MSI", "458752-edge", "", "PCIe PME, pciehp");
	COUNTS(find_irq(&log, 124), 4294967295u, 12, 1);
	assert_irq(find_irq(&log, 125), "DMAR-MSI", "0-edge", "", "dmar0");
}

static void test_interrupts_edge_cases(void **state)
{
	struct irq_log log;
	struct ip_diag d;
	const struct irq_rec *r;

	/* 2^64-1 is the largest count; trailing blanks after an action go */
	assert_int_equal(
		parse_irqs(mem("  CPU0 CPU1\n"
			       "  5: 18446744073709551615 0 IO-APIC 5-edge hid-over-i2c  \n"
			       "  6: 1 2\n"
			       "  7: 1 2   None\n"
			       "  8: 3 4 PCI-MSI 1-edge a,b, c d"),
			   &log, &d),
		0);
	assert_int_equal(log.n, 4);
	r = find_irq(&log, 5);
	COUNTS(r, UINT64_MAX, 0);
	assert_irq(r, "IO-APIC", "5-edge", "", "hid-over-i2c");
	assert_irq(find_irq(&log, 6), "", "", "", "");
	assert_irq(find_irq(&log, 7), "None", "", "", "");
	/* no newline at the end of the last line */
	assert_irq(find_irq(&log, 8), "PCI-MSI", "1-edge", "", "a,b, c d");

	/* show_interrupts()' own " %10u" zeros: before the chip, at the end
	 * of a line, before a tab; a '0' that goes on is not a zero */
	assert_int_equal(parse_irqs(mem("           CPU0       CPU1       CPU2\n"
					"  5:          0          0          0   IO-APIC   5-edge  x\n"
					"  6:          0         10          0\n"
					"  7:          0          0          7\t\n"
					"  8:          0          01          0 y\n"),
				    &log, &d),
			 0);
	assert_int_equal(log.n, 4);
	COUNTS(find_irq(&log, 5), 0, 0, 0);
	assert_irq(find_irq(&log, 5), "IO-APIC", "5-edge", "", "x");
	COUNTS(find_irq(&log, 6), 0, 10, 0);
	COUNTS(find_irq(&log, 7), 0, 0, 7);
	COUNTS(find_irq(&log, 8), 0, 1, 0);
	assert_int_equal(parse_irqs(mem("           CPU0       CPU1\n"
					"  5:          0x         0   IO-APIC   5-edge  x\n"),
				    &log, &d),
			 -EINVAL);
	assert_msg_has(d, "line 2: IRQ 5 count column 0 '0x' is not a number");

	/* nine columns: runs of four zeros, a count inside and at the end */
#define C0 "          0"
#define HDR9                                                                     \
	"      CPU0       CPU1       CPU2       CPU3       CPU4       CPU5       " \
	"CPU6       CPU7       CPU8\n"
	assert_int_equal(parse_irqs(mem(HDR9 "  5:" C0 C0 C0 C0 C0 C0 C0 C0 C0 "   IO-APIC   5-edge  x\n"
					     "  6:" C0 C0 C0 C0 "          7" C0 C0 C0 C0 "\n"
					     "  7:" C0 C0 C0 C0 C0 C0 C0 C0 "         12\t\n"),
				    &log, &d),
			 0);
	assert_int_equal(log.n, 3);
	COUNTS(find_irq(&log, 5), 0, 0, 0, 0, 0, 0, 0, 0, 0);
	assert_irq(find_irq(&log, 5), "IO-APIC", "5-edge", "", "x");
	COUNTS(find_irq(&log, 6), 0, 0, 0, 0, 7, 0, 0, 0, 0);
	COUNTS(find_irq(&log, 7), 0, 0, 0, 0, 0, 0, 0, 0, 12);
	assert_int_equal(
		parse_irqs(mem(HDR9 "  8:" C0 C0 C0 C0 C0 C0 C0 "          0x         0 y\n"), &log, &d),
		-EINVAL);
	assert_msg_has(d, "line 2: IRQ 8 count column 7 '0x' is not a number");
#undef HDR9
#undef C0

	/* the tail is checked for control bytes eight at a time: a tab in
	 * a word of them, bytes above 0x7f (a UTF-8 name) and a tail of
	 * whole words pass */
	assert_int_equal(parse_irqs(mem("           CPU0\n"
					"  9:          1  IR-PCI-MSI\t1-edge\tdrv\xc3\xa9-q0\n"
					" 10:          2  ABCDEFGH 12345678 abcdefgh\n"),
				    &log, &d),
			 0);
	assert_irq(find_irq(&log, 9), "IR-PCI-MSI", "1-edge", "", "drv\xc3\xa9-q0");
	assert_irq(find_irq(&log, 10), "ABCDEFGH", "12345678", "", "abcdefgh");

	/* header only */
	assert_int_equal(parse_irqs(mem("           CPU0       CPU1\n"), &log, &d), 0);
	assert_int_equal(hdr.ncols, 2);
	assert_int_equal(log.n, 0);
}

/*
 * An action named "" (mtk-sd requests its IRQ under pdev->name, "" for a
 * devicetree device) against none, told apart only by the blanks
 * show_interrupts() leaves: the last field padded to 8, then "  " and the
 * name. Lines as kernel/irq/proc.c writes them, arm64 (" %-8s" trigger)
 * and x86 ("-%-8s" handler in the hwirq column).
 */
static void test_interrupts_unnamed_action(void **state)
{
	struct irq_log log;
	struct ip_diag d;

	(void)state;
	assert_int_equal(
		parse_irqs(mem("           CPU0       CPU1       \n"
			       "129:     120311          0     GICv3 163 Level     \n"
			       "130:         31          0     GICv3 167 Level   \n"
			       "131:          1          0     GICv3 168 Edge      \n"
			       "132:          1          0     GICv3 169 Edge    \n"
			       " 24:          0          0  IR-PCI-MSI 524288-edge      \n"
			       " 25:          0          0  IR-PCI-MSI 524289-edge    \n"
			       " 26:          0          0   IO-APIC  26-fasteoi   \n"
			       " 27:          0          0   IO-APIC  27-fasteoi \n"
			       " 28:          0          0     GICv3 170 Level\n"
			       " 29:          0          0     GICv3 171 Level     mmc0\n"),
			   &log, &d),
		0);
	assert_true(find_irq(&log, 129)->unnamed_action);
	assert_false(find_irq(&log, 130)->unnamed_action);
	assert_true(find_irq(&log, 131)->unnamed_action);
	assert_false(find_irq(&log, 132)->unnamed_action);
	assert_true(find_irq(&log, 24)->unnamed_action);
	assert_false(find_irq(&log, 25)->unnamed_action);
	assert_true(find_irq(&log, 26)->unnamed_action);
	assert_false(find_irq(&log, 27)->unnamed_action);
	/* its blanks cut (a file edited by hand): not known, read as none */
	assert_false(find_irq(&log, 28)->unnamed_action);
	assert_false(find_irq(&log, 29)->unnamed_action);
	assert_irq(find_irq(&log, 129), "GICv3", "163", "Level", "");
}

static void test_interrupts_callback_stops(void **state)
{
	struct buf b = load("interrupts-x86-qemu-ahci");
	struct irq_log log = { .stop_at = 25 };
	struct ip_diag d;

	assert_int_equal(ip_parse_interrupts(b.p, b.len, &hdr, irq_collect, &log, &d), -ECANCELED);
	assert_int_equal(log.n, 7);
	/* NULL header and callback: validation only */
	assert_int_equal(ip_parse_interrupts(b.p, b.len, NULL, NULL, NULL, &d), 0);
	assert_int_equal(ip_parse_interrupts(b.p, b.len, NULL, NULL, NULL, NULL), 0);
	free(b.p);
}

struct bad_case {
	const char *text;
	size_t len; /* 0: strlen */
	int err;
	const char *word;
};

/*
 * request_irq() takes any string for the name, and dev_name() comes from
 * firmware: a control byte in one driver's name is that line's, not a
 * damaged file, and refusing the file for it stopped every cycle. The
 * name is kept as the kernel printed it (outputs clean it); only a NUL,
 * which seq_printf("%s") cannot print, is a damaged read. Each at the
 * last byte of the tail's first word, after a tab in a word, and the last
 * byte of a tail of whole words (find_control() reads 8 at a time).
 */
static void test_interrupts_control_in_name(void **state)
{
	static const char text[] = "CPU0 CPU1\n"
				   " 0: 1 2 IR-PCI-\x01MSI 1-edge t\n"
				   " 1: 3 4 X\t1-edge\tabcdefgh\x1fij\n"
				   " 2: 5 6 ABCDEFG\x1b\n"
				   " 3: 7 8 GICv3 190 Level \x1b[31mufshcd\x1b[0m\n";
	struct irq_log log;
	struct ip_diag d;

	(void)state;
	assert_int_equal(parse_irqs(memn(text, strlen(text)), &log, &d), 0);
	assert_int_equal(log.n, 4);
	assert_string_equal(find_irq(&log, 0)->chip, "IR-PCI-\x01MSI");
	assert_string_equal(find_irq(&log, 1)->actions, "abcdefgh\x1fij");
	assert_string_equal(find_irq(&log, 2)->chip, "ABCDEFG\x1b");
	assert_string_equal(find_irq(&log, 3)->actions, "\x1b[31mufshcd\x1b[0m");
	assert_int_equal(find_irq(&log, 3)->counts[1], 8);
}

/* A name holding a newline (a GPIO line's consumer label, gpiolib-cdev.c)
 * leaves its rest on lines of their own, with no label: skipped and
 * counted, where they stopped the parse; the line after the header has no
 * name before it and stays garbage (test_interrupts_malformed). */
static void test_interrupts_newline_in_name(void **state)
{
	static const char text[] = "CPU0 CPU1\n"
				   " 0: 1 2 IO-APIC 2-edge timer\n"
				   " 1: 3 4 gpio-mockup 3 Edge  my\n"
				   "label with blanks\n"
				   "\n"
				   "and more\n"
				   " 2: 5 6 PCI-MSI 512000-edge ahci[0000:00:1f.2]\n"
				   "NMI: 0 0 Non-maskable interrupts\n";
	struct ip_irq_header h;
	static const char plain[] = "CPU0 CPU1\n 0: 1 2 X 1-edge t\n";
	struct irq_log log = { .stop_at = -1 };
	struct ip_diag d = { "" };
	struct buf b = memn(text, strlen(text));

	(void)state;
	assert_int_equal(ip_parse_interrupts(b.p, b.len, &h, irq_collect, &log, &d), 0);
	assert_int_equal(log.n, 3);
	assert_string_equal(find_irq(&log, 1)->actions, "my");
	assert_string_equal(find_irq(&log, 2)->actions, "ahci[0000:00:1f.2]");
	assert_int_equal(find_irq(&log, 2)->counts[1], 6);
	assert_int_equal(h.name_tails, 2);
	assert_int_equal(h.first_tail, 4);
	/* in chunks, as the sampler streams it: the count goes on */
	assert_int_equal(ip_parse_interrupts_body(b.p + 10, b.len - 10, &h, 2, NULL, NULL, &d), 0);
	assert_int_equal(h.name_tails, 4);
	/* a fresh header starts the count again */
	assert_int_equal(ip_parse_interrupts(plain, strlen(plain), &h, NULL, NULL, &d), 0);
	assert_int_equal(h.name_tails, 0);
	free(b.p);
}

static void test_interrupts_malformed(void **state)
{
	static const struct bad_case cases[] = {
		{ "", 0, -EINVAL, "empty" },
		{ "  0:  86  0  IO-APIC   2-edge  timer\n", 0, -EINVAL, "line 1: expected a CPU" },
		{ "NMI: 0 0\n", 0, -EINVAL, "line 1" },
		{ "\n  CPU0\n", 0, -EINVAL, "line 1" },
		{ "CPU0 CPU1\n 0: 1 2 X 1-edge t\n 1: 1\n", 0, -EINVAL,
		  "line 3: IRQ 1 has 1 count columns, header has 2" },
		{ "CPU0 CPU1\n 0: 1 IO-APIC 2-edge timer\n", 0, -EINVAL,
		  "line 2: IRQ 0 has 1 count" },
		{ "CPU0 CPU1\n 0: 1 18446744073709551616 X\n", 0, -ERANGE,
		  "line 2: IRQ 0 count column 1" },
		{ "CPU0 CPU1\n 0: 1 99999999999999999999999999 X\n", 0, -ERANGE, "above 2^64-1" },
		{ "CPU0 CPU1\n 0: 1 2\n 1: 1 \xff\xff X\n", 0, -EINVAL, "line 3" },
		{ "CPU0 CPU1\n 0: 1 2x X\n", 0, -EINVAL, "not a number" },
		{ "CPU0 CPU1\n 0: 1 2 X 1-edge ti\0mer\n", 32, -EINVAL,
		  "line 2: control byte 0x00" },
		/* a NUL after another control byte, in a later word */
		{ "CPU0 CPU1\n 0: 1 2 X 1-edge a\x1b b\0c\n", 34, -EINVAL,
		  "line 2: control byte 0x00" },
		{ "CPU0 CPU1\n 99999999999: 1 2 X\n", 0, -ERANGE, "line 2: bad IRQ number" },
		{ "CPU0 CPU1\n 12x: 1 2 X\n", 0, -EINVAL, "line 2: bad IRQ number" },
		{ "CPU0 CPU1\n 12 1 2 X\n", 0, -EINVAL, "line 2" },
		{ "CPU0 CPU1\n garbage here\n", 0, -EINVAL, "line 2: expected 'IRQ:'" },
		{ "CPU0 CPU0\n", 0, -EINVAL, "not ascending" },
		{ "CPU0 CPU99999\n", 0, -ERANGE, "beyond" },
		{ "CPU0 CPUx\n", 0, -EINVAL, "bad CPU column" },
		{ "CPU0 CPU\n", 0, -EINVAL, "line 1: expected a CPU column header, got 'CPU'" },
		{ "\xff\xfe\0\0CPU0\n", 8, -EINVAL, "line 1" },
	};

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const struct bad_case *c = &cases[i];
		struct irq_log log;
		struct ip_diag d;
		int r = parse_irqs(memn(c->text, c->len ? c->len : strlen(c->text)), &log, &d);

		if (r != c->err)
			fail_msg("case %zu: got %d want %d (%s)", i, r, c->err, d.msg);
		assert_msg_has(d, c->word);
	}
}

/* The daemon's real load is 8,000 lines of 1,024 columns; this checks a
 * big file parses right without per-line state leaking between lines. */
static void test_interrupts_large(void **state)
{
	const int ncpu = IP_CPU_MAX < 256 ? IP_CPU_MAX : 256, nirq = 2000;
	size_t cap = (size_t)(nirq + 1) * (ncpu * 11 + 80), len = 0;
	char *t = malloc(cap);
	struct ip_irq_header *h = malloc(sizeof(*h));
	struct ip_diag d;
	int r;

	assert_non_null(t);
	for (int c = 0; c < ncpu; c++)
		len += sprintf(t + len, c ? " CPU%-8d" : "      CPU%-8d", c);
	t[len++] = '\n';
	for (int i = 0; i < nirq; i++) {
		len += sprintf(t + len, "%5d: ", i);
		for (int c = 0; c < ncpu; c++)
			len += sprintf(t + len, "%10u ", (unsigned)(i * 7 + c));
		len += sprintf(t + len, " PCI-MSI %d-edge      nvme%dq%d\n", 524288 + i, i / 64,
			       i % 64);
	}
	assert_true(len <= cap);
	r = ip_parse_interrupts(t, len, h, NULL, NULL, &d);
	assert_int_equal(r, 0);
	assert_int_equal(h->ncols, ncpu);
	assert_int_equal(h->col_cpu[ncpu - 1], ncpu - 1);
	free(t);
	free(h);
}

static int large_check(void *ctx, const struct ip_irq_line *l)
{
	int *n = ctx;

	int last = (IP_CPU_MAX < 256 ? IP_CPU_MAX : 256) - 1;

	if (l->ncounts != last + 1 || l->counts[last] != l->irq * 7 + last || l->irq != (unsigned)*n)
		return -EBADMSG;
	(*n)++;
	return 0;
}

static void test_interrupts_large_values(void **state)
{
	const int ncpu = IP_CPU_MAX < 256 ? IP_CPU_MAX : 256, nirq = 500;
	size_t cap = (size_t)(nirq + 1) * (ncpu * 11 + 80), len = 0;
	char *t = malloc(cap);
	struct ip_diag d;
	int n = 0;

	assert_non_null(t);
	for (int c = 0; c < ncpu; c++)
		len += sprintf(t + len, " CPU%d", c);
	t[len++] = '\n';
	for (int i = 0; i < nirq; i++) {
		len += sprintf(t + len, "%5d: ", i);
		for (int c = 0; c < ncpu; c++)
			len += sprintf(t + len, "%10u ", (unsigned)(i * 7 + c));
		len += sprintf(t + len, " PCI-MSI %d-edge      q%d\n", i, i);
	}
	assert_int_equal(ip_parse_interrupts(t, len, &hdr, large_check, &n, &d), 0);
	assert_int_equal(n, nirq);
	free(t);
}

static void test_split_actions(void **state)
{
	const char *names[8];
	char buf[64];

	assert_int_equal(ip_split_actions("mmc0, sym53c8xx", buf, sizeof(buf), names, 8), 2);
	assert_string_equal(names[0], "mmc0");
	assert_string_equal(names[1], "sym53c8xx");
	assert_int_equal(ip_split_actions("PCIe PME, pciehp", buf, sizeof(buf), names, 8), 2);
	assert_string_equal(names[0], "PCIe PME");
	assert_string_equal(names[1], "pciehp");
	assert_int_equal(ip_split_actions("soc:qcom,smp2p-modem", buf, sizeof(buf), names, 8), 1);
	assert_string_equal(names[0], "soc:qcom,smp2p-modem");
	assert_int_equal(ip_split_actions("hid-over-i2c  , x  ", buf, sizeof(buf), names, 8), 2);
	assert_string_equal(names[0], "hid-over-i2c");
	assert_string_equal(names[1], "x");
	assert_int_equal(ip_split_actions("", buf, sizeof(buf), names, 8), 0);
	assert_int_equal(ip_split_actions("a, b, c", buf, sizeof(buf), names, 2), 2);
	assert_string_equal(names[1], "b");
	/* only what fits in the buffer */
	assert_int_equal(ip_split_actions("abc, defgh", buf, 6, names, 8), 1);
	assert_string_equal(names[0], "abc");
	assert_int_equal(ip_split_actions("abc, defgh", buf, 0, names, 8), 0);
}

/* ---- /proc/softirqs ------------------------------------------------ */

static uint64_t by_cpu[IP_CPU_MAX];

static void test_softirqs_capture(void **state)
{
	struct buf b = load("softirqs-x86-qemu-ahci");
	struct ip_diag d;
	int n = -1;

	assert_int_equal(ip_parse_softirqs(b.p, b.len, "BLOCK", by_cpu, &n, &d), 0);
	assert_int_equal(n, 4);
	assert_int_equal(by_cpu[0], 1);
	assert_int_equal(by_cpu[1], 8);
	assert_int_equal(by_cpu[2], 27);
	assert_int_equal(by_cpu[3], 31);
	assert_int_equal(by_cpu[4], 0);
	assert_int_equal(ip_parse_softirqs(b.p, b.len, "TIMER", by_cpu, &n, &d), 0);
	assert_int_equal(by_cpu[2], 326);
	assert_int_equal(ip_parse_softirqs(b.p, b.len, "RCU", by_cpu, &n, &d), 0);
	assert_int_equal(by_cpu[0], 1753);
	assert_int_equal(ip_parse_softirqs(b.p, b.len, "BLOCK_IOPOLL", by_cpu, &n, &d), -ENOENT);
	assert_msg_has(d, "BLOCK_IOPOLL");
	assert_int_equal(by_cpu[0], 0);
	free(b.p);

	b = load("softirqs-x86-virtio");
	assert_int_equal(ip_parse_softirqs(b.p, b.len, "BLOCK", by_cpu, &n, &d), 0);
	assert_int_equal(n, 2);
	assert_int_equal(by_cpu[1], 38040);
	free(b.p);
}

/* Only the asked row's counts are parsed: every label up to it is
 * checked, the other rows' counts are not, and nothing after it is read. */
static void test_softirqs_row_only(void **state)
{
	static const char text[] = "  CPU0 CPU1\n HI: 1 x y z\n BLOCK: 5 6\n RCU junk\n";
	struct ip_diag d = { "" };
	int n;

	(void)state;
	assert_int_equal(ip_parse_softirqs(text, strlen(text), "BLOCK", by_cpu, &n, &d), 0);
	assert_int_equal(by_cpu[0], 5);
	assert_int_equal(by_cpu[1], 6);
	/* the row asked for is checked as before */
	assert_int_equal(ip_parse_softirqs(text, strlen(text), "HI", by_cpu, &n, &d), -EINVAL);
	assert_msg_has(d, "line 2");
	/* a line before it without its label is still an error */
	assert_int_equal(ip_parse_softirqs(text, strlen(text), "TIMER", by_cpu, &n, &d), -EINVAL);
	assert_msg_has(d, "line 4: expected 'NAME:'");
}

static void test_softirqs_malformed(void **state)
{
	static const struct bad_case cases[] = {
		{ "", 0, -EINVAL, "empty" },
		{ "   BLOCK: 1 2\n", 0, -EINVAL, "line 1" },
		{ "  CPU0 CPU1\n HI: 0 0\n BLOCK: 1\n", 0, -EINVAL, "line 3: BLOCK has 1 columns" },
		{ "  CPU0 CPU1\n BLOCK: 1 2 3\n", 0, -EINVAL, "line 2: more columns" },
		{ "  CPU0 CPU1\n BLOCK: 1 18446744073709551616\n", 0, -ERANGE, "line 2" },
		{ "  CPU0 CPU1\n BLOCK 1 2\n", 0, -EINVAL, "line 2: expected 'NAME:'" },
		{ "  CPU0 CPU1\n BLOCK: 1 \xff\n", 0, -EINVAL, "not a number" },
		{ "  CPU0 CPU1\n BLOCK: 1 2\0\n", 16, -EINVAL, "line 2" },
	};

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const struct bad_case *c = &cases[i];
		struct buf b = memn(c->text, c->len ? c->len : strlen(c->text));
		struct ip_diag d = { "" };
		int n, r = ip_parse_softirqs(b.p, b.len, "BLOCK", by_cpu, &n, &d);

		if (r != c->err)
			fail_msg("case %zu: got %d want %d (%s)", i, r, c->err, d.msg);
		assert_msg_has(d, c->word);
		free(b.p);
	}
}

/* ---- /proc/PID/stat, status, io ------------------------------------ */

static void test_pid_stat_capture(void **state)
{
	struct buf b = load("pid-stat-irq28-ahci");
	struct ip_pid_stat s;
	struct ip_diag d;

	assert_int_equal(ip_parse_pid_stat(b.p, b.len, &s, &d), 0);
	free(b.p);
	assert_int_equal(s.pid, 134);
	assert_string_equal(s.comm, "irq/28-ahci[0000:00:06.0]");
	assert_int_equal(s.state, 'S');
	assert_int_equal(s.ppid, 2);
	assert_int_equal(s.utime, 0);
	assert_int_equal(s.stime, 0);
	assert_int_equal(s.priority, -51);
	assert_int_equal(s.nice, 0);
	assert_int_equal(s.starttime, 591);
	assert_true(s.has_processor);
	assert_int_equal(s.processor, 2);
	assert_int_equal(s.rt_priority, 50);
	assert_int_equal(s.policy, 1); /* SCHED_FIFO */
	assert_int_equal(s.delayacct_blkio, 0);

	b = load("pid-stat-irq25-virtio");
	assert_int_equal(ip_parse_pid_stat(b.p, b.len, &s, &d), 0);
	free(b.p);
	assert_int_equal(s.pid, 120);
	assert_string_equal(s.comm, "irq/25-virtio0-requests");
	assert_int_equal(s.stime, 75);
	assert_int_equal(s.processor, 3);
}

static void test_pid_stat_variants(void **state)
{
	struct ip_pid_stat s;
	struct ip_diag d;
	struct buf b;

	/* comm holding ") " and spaces; only the last ')' closes it */
	b = mem("4242 (fio x) (y) R 4200 1 1 0 -1 4194304 10 0 0 0 123 456 0 0 20 -5 1 0 98765 "
		"1000 20 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 7 0 0 33 0 0\n");
	assert_int_equal(ip_parse_pid_stat(b.p, b.len, &s, &d), 0);
	free(b.p);
	assert_string_equal(s.comm, "fio x) (y");
	assert_int_equal(s.state, 'R');
	assert_int_equal(s.ppid, 4200);
	assert_int_equal(s.utime, 123);
	assert_int_equal(s.stime, 456);
	assert_int_equal(s.priority, 20);
	assert_int_equal(s.nice, -5);
	assert_int_equal(s.starttime, 98765);
	assert_int_equal(s.processor, 7);
	assert_int_equal(s.policy, 0);
	assert_int_equal(s.delayacct_blkio, 33);

	/* unused fields of 19 and 20 digits take the checked path and pass */
	b = mem("9 (k) S 2 0 0 0 -9223372036854775808 18446744073709551615 0 0 0 0 1 2 0 0 20 0 1 0 "
		"5\n");
	assert_int_equal(ip_parse_pid_stat(b.p, b.len, &s, &d), 0);
	free(b.p);
	assert_int_equal(s.utime, 1);
	assert_int_equal(s.starttime, 5);

	/* truncated after starttime (field 22): fine, no processor */
	b = mem("7 (kworker/0:1H) I 2 0 0 0 -1 69238880 0 0 0 0 0 5 0 0 0 -20 1 0 12");
	s.has_processor = true;
	assert_int_equal(ip_parse_pid_stat(b.p, b.len, &s, &d), 0);
	free(b.p);
	assert_false(s.has_processor);
	assert_int_equal(s.nice, -20);
	assert_int_equal(s.starttime, 12);
	assert_int_equal(s.delayacct_blkio, 0);

	/* 39 present, 40.. missing */
	b = mem("7 (k) I 2 0 0 0 -1 69238880 0 0 0 0 0 5 0 0 0 -20 1 0 12 0 0 18446744073709551615 "
		"0 0 0 0 0 0 0 0 0 0 0 0 17 5\n");
	assert_int_equal(ip_parse_pid_stat(b.p, b.len, &s, &d), 0);
	free(b.p);
	assert_true(s.has_processor);
	assert_int_equal(s.processor, 5);
	assert_int_equal(s.rt_priority, 0);
}

static void test_pid_stat_malformed(void **state)
{
	static const struct bad_case cases[] = {
		{ "", 0, -EINVAL, "empty" },
		{ "12 (a) S 2 0 0 0 -1 1 0 0 0 0 0 0 0 0 0 0 1 0", 0, -EINVAL, "truncated" },
		{ "12 (a) S 2", 0, -EINVAL, "truncated" },
		{ "12 (a S 2 0 0 0 -1 1 0 0 0 0 0 0 0 0 0 0 1 0 9", 0, -EINVAL, "no ')'" },
		{ "12 a) S 2 0 0 0 -1 1 0 0 0 0 0 0 0 0 0 0 1 0 9", 0, -EINVAL, "no '('" },
		{ "x (a) S 2 0 0 0 -1 1 0 0 0 0 0 0 0 0 0 0 1 0 9", 0, -EINVAL, "pid" },
		{ "12 (a) S 2 0 0 0 -1 1 0 0 0 0 184467440737095516150 0 0 0 0 0 1 0 9", 0, -ERANGE,
		  "field 14" },
		{ "12 (a) S 2 0 0 0 -1 1 0 0 0 0 0 0 0 0 0 0 1 0 9 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 4096",
		  0, -ERANGE, "field 39" },
		{ "12 (a) 7 2 0 0 0 -1 1 0 0 0 0 0 0 0 0 0 0 1 0 9", 0, -EINVAL, "field 3" },
		{ "12 (a) S 2 0 0 0 -1 1 0 0 0 0 0 \xff 0 0 0 0 1 0 9", 0, -EINVAL, "field 15" },
		{ "12 (a) S 2 0 0 0 -1 1 0 0 0 0 0 0 0 0 0 0 1 0 9\0", 48, -EINVAL, "NUL" },
		{ "12 (a)S 2 0 0 0 -1 1 0 0 0 0 0 0 0 0 0 0 1 0 9", 0, -EINVAL, "junk" },
		/* fields no caller keeps are checked as strictly */
		{ "12 (a) S 2 0 0 0 -1 1x 0 0 0 0 0 0 0 0 0 0 1 0 9", 0, -EINVAL, "field 9 '1x'" },
		{ "12 (a) S 2 0 0 0 - 1 0 0 0 0 0 0 0 0 0 0 1 0 9", 0, -EINVAL, "field 8 '-'" },
		{ "12 (a) S 2 0 0 0 -1 1 184467440737095516150 0 0 0 0 0 0 0 0 0 1 0 9", 0, -ERANGE,
		  "field 10" },
		/* RLIM_INFINITY's own path: only its exact digits, as a whole token */
		{ "12 (a) S 2 0 0 0 -1 1 18446744073709551616 0 0 0 0 0 0 0 0 0 1 0 9", 0, -ERANGE,
		  "field 10" },
		{ "12 (a) S 2 0 0 0 -1 1 184467440737095516151 0 0 0 0 0 0 0 0 0 1 0 9", 0, -ERANGE,
		  "field 10" },
		{ "12 (a) S 2 0 0 0 -1 1 18446744073709551615x 0 0 0 0 0 0 0 0 0 1 0 9", 0, -EINVAL,
		  "field 10" },
		{ "12 (a) S 2 0 0 0 -1 1 0x 0 0 0 0 0 0 0 0 0 1 0 9", 0, -EINVAL, "field 10 '0x'" },
	};

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const struct bad_case *c = &cases[i];
		struct buf b = memn(c->text, c->len ? c->len : strlen(c->text));
		struct ip_pid_stat s;
		struct ip_diag d = { "" };
		int r = ip_parse_pid_stat(b.p, b.len, &s, &d);

		if (r != c->err)
			fail_msg("case %zu: got %d want %d (%s)", i, r, c->err, d.msg);
		assert_msg_has(d, c->word);
		free(b.p);
	}
}

static void test_pid_status(void **state)
{
	struct buf b = load("pid-status-irq28-ahci");
	struct ip_pid_status s;
	struct ip_diag d;

	assert_int_equal(ip_parse_pid_status(b.p, b.len, &s, &d), 0);
	free(b.p);
	assert_int_equal(s.ppid, 2);
	assert_int_equal(s.state, 'S');
	/* a 6.1 kthread's whole name (proc_task_name()), not comm's 15 bytes */
	assert_string_equal(s.name, "irq/28-ahci[0000:00:06.0]");
	assert_true(s.has_cpus_allowed);
	assert_int_equal(cpuset_count(&s.cpus_allowed), 1);
	assert_true(cpuset_test(&s.cpus_allowed, 2));
	assert_true(s.has_ctxt);
	assert_int_equal(s.voluntary_ctxt_switches, 8);
	assert_int_equal(s.nonvoluntary_ctxt_switches, 0);

	b = load("pid-status-irq25-virtio");
	assert_int_equal(ip_parse_pid_status(b.p, b.len, &s, &d), 0);
	free(b.p);
	assert_true(cpuset_test(&s.cpus_allowed, 3));
	assert_int_equal(s.voluntary_ctxt_switches, 8057);
	assert_int_equal(s.nonvoluntary_ctxt_switches, 1);
	assert_string_equal(s.name, "irq/25-virtio0-requests");
	/* task_state_array[] (fs/proc/array.c): a letter, a blank, a word */
	b = mem("State:\tD (disk sleep)\n");
	assert_int_equal(ip_parse_pid_status(b.p, b.len, &s, &d), 0);
	free(b.p);
	assert_int_equal(s.state, 'D');
	b = mem("State:\tI\n");
	assert_int_equal(ip_parse_pid_status(b.p, b.len, &s, &d), 0);
	free(b.p);
	assert_int_equal(s.state, 'I');
	/* a name longer than the field: cut, not refused */
	b = mem("Name:\tirq/123456-0123456789012345678901234567890123456789012345678901234567890123\n");
	assert_int_equal(ip_parse_pid_status(b.p, b.len, &s, &d), 0);
	free(b.p);
	assert_int_equal(strlen(s.name), sizeof(s.name) - 1);
	assert_memory_equal(s.name, "irq/123456-0123", 15);

	/* Tgid has PPid's length, Umask State's: only the wanted keys'
	 * values are read */
	b = mem("Name:\tfio: a b\nUmask:\tz\nTgid:\tx y\nPPid:\t77\nCpus_allowed_list:\t0-3,8-11\n");
	assert_int_equal(ip_parse_pid_status(b.p, b.len, &s, &d), 0);
	free(b.p);
	assert_int_equal(s.ppid, 77);
	assert_string_equal(s.name, "fio: a b");
	assert_int_equal(s.state, '\0');
	assert_false(s.has_ctxt);
	assert_int_equal(cpuset_count(&s.cpus_allowed), 8);
	assert_true(cpuset_test(&s.cpus_allowed, 11));
}

static void test_pid_status_malformed(void **state)
{
	static const struct bad_case cases[] = {
		{ "", 0, -EINVAL, "empty" },
		{ "Name:\ta\nPPid\t2\n", 0, -EINVAL, "line 2: no ':'" },
		{ "Name:\ta\nPPid:\tx\n", 0, -EINVAL, "line 2: PPid" },
		{ "PPid:\t99999999999\n", 0, -ERANGE, "line 1" },
		{ "Cpus_allowed_list:\t0-4096\n", 0, -ERANGE, "line 1: Cpus_allowed_list" },
		{ "Cpus_allowed_list:\t0-,\n", 0, -EINVAL, "not a CPU list" },
		{ "a:1\nvoluntary_ctxt_switches:\t18446744073709551616\n", 0, -ERANGE, "line 2" },
		{ "voluntary_ctxt_switches:\t1 2\n", 0, -EINVAL, "not a number" },
		{ "Name:\ta\0\n", 9, -EINVAL, "NUL" },
		{ "State:\t\n", 0, -EINVAL, "line 1: State '' is not a state letter" },
		{ "Name:\ta\nState:\tSleeping\n", 0, -EINVAL, "line 2: State 'Sleeping'" },
		{ "State:\t? (unknown)\n", 0, -EINVAL, "not a state letter" },
	};

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const struct bad_case *c = &cases[i];
		struct buf b = memn(c->text, c->len ? c->len : strlen(c->text));
		struct ip_pid_status s;
		struct ip_diag d = { "" };
		int r = ip_parse_pid_status(b.p, b.len, &s, &d);

		if (r != c->err)
			fail_msg("case %zu: got %d want %d (%s)", i, r, c->err, d.msg);
		assert_msg_has(d, c->word);
		free(b.p);
	}
}

static void test_pid_io(void **state)
{
	struct buf b = load("pid-io-cat");
	struct ip_pid_io io = { 1, 1 };
	struct ip_diag d;

	assert_int_equal(ip_parse_pid_io(b.p, b.len, &io, &d), 0);
	free(b.p);
	assert_int_equal(io.read_bytes, 0);
	assert_int_equal(io.write_bytes, 0);

	b = mem("rchar: 823401928\nwchar: 12001\nsyscr: 20110\nsyscw: 12\n"
		"read_bytes: 819200000\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n");
	assert_int_equal(ip_parse_pid_io(b.p, b.len, &io, &d), 0);
	free(b.p);
	assert_int_equal(io.read_bytes, 819200000);
	assert_int_equal(io.write_bytes, 4096);

	b = mem("rchar: 1\nread_bytes: 2\n");
	assert_int_equal(ip_parse_pid_io(b.p, b.len, &io, &d), -EINVAL);
	assert_msg_has(d, "write_bytes");
	free(b.p);
	b = mem("read_bytes: 2\nwrite_bytes: 18446744073709551616\n");
	assert_int_equal(ip_parse_pid_io(b.p, b.len, &io, &d), -ERANGE);
	assert_msg_has(d, "line 2: write_bytes");
	free(b.p);
	b = mem("read_bytes 2\n");
	assert_int_equal(ip_parse_pid_io(b.p, b.len, &io, &d), -EINVAL);
	assert_msg_has(d, "line 1");
	free(b.p);
}

/* ---- /proc/diskstats ---------------------------------------------- */

struct disk_log {
	int n;
	struct ip_diskstat s[16];
	char names[16][32];
};

static int disk_collect(void *ctx, const struct ip_diskstat *s)
{
	struct disk_log *l = ctx;

	assert_true(l->n < 16);
	l->s[l->n] = *s;
	snprintf(l->names[l->n], sizeof(l->names[0]), "%s", s->name);
	l->s[l->n].name = l->names[l->n];
	l->n++;
	return 0;
}

static int parse_disks(struct buf b, struct disk_log *l, struct ip_diag *d)
{
	int r;

	memset(l, 0, sizeof(*l));
	d->msg[0] = '\0';
	r = ip_parse_diskstats(b.p, b.len, disk_collect, l, d);
	free(b.p);
	return r;
}

static void test_diskstats(void **state)
{
	struct disk_log l;
	struct ip_diag d;

	assert_int_equal(parse_disks(load("diskstats-6.1-qemu"), &l, &d), 0);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.s[0].major, 8);
	assert_int_equal(l.s[0].minor, 0);
	assert_string_equal(l.s[0].name, "sda");
	assert_int_equal(l.s[0].rd_ios, 3);
	assert_int_equal(l.s[0].wr_ios, 0);
	assert_int_equal(l.s[0].io_ticks, 8);
	assert_int_equal(l.s[1].major, 259);
	assert_string_equal(l.s[1].name, "nvme0n1");

	/* 6.18, 20 fields with discard and flush counts */
	assert_int_equal(parse_disks(load("diskstats-6.18-virtio"), &l, &d), 0);
	assert_int_equal(l.n, 10);
	assert_string_equal(l.s[8].name, "vda");
	assert_int_equal(l.s[8].major, 254);
	assert_int_equal(l.s[8].rd_ios, 32120);
	assert_int_equal(l.s[8].wr_ios, 7765);
	assert_int_equal(l.s[8].in_flight, 0);
	assert_int_equal(l.s[8].io_ticks, 4640);
	assert_int_equal(l.s[8].discard_ios, 4837);
	assert_int_equal(l.s[8].flush_ios, 779);
	assert_string_equal(l.s[9].name, "zram0");

	/* 4.14 (14 fields) and 4.19 (18 fields) */
	assert_int_equal(
		parse_disks(mem("   8       0 sda 101 102 103 104 105 106 107 108 3 110 111\n"
				" 179       1 mmcblk0p1 201 202 203 204 205 206 207 208 0 210 211 "
				"212 213 214 215\n"),
			    &l, &d),
		0);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.s[0].rd_ios, 101);
	assert_int_equal(l.s[0].wr_ios, 105);
	assert_int_equal(l.s[0].in_flight, 3);
	assert_int_equal(l.s[0].io_ticks, 110);
	assert_int_equal(l.s[0].discard_ios, 0);
	assert_string_equal(l.s[1].name, "mmcblk0p1");
	assert_int_equal(l.s[1].minor, 1);
	assert_int_equal(l.s[1].discard_ios, 212);
	assert_int_equal(l.s[1].flush_ios, 0);

	/* what the kernel does not print reads the same by the checked
	 * path: a tab, a blank and '\r' at the end, a count of 20 digits;
	 * and 19 digits, the most parse_u64() adds up unchecked */
	assert_int_equal(parse_disks(mem("8 0 sda 9999999999999999999 2\t3 4 18446744073709551615 "
					 "6 7 8 9 10 11 \r\n"),
				     &l, &d),
			 0);
	assert_int_equal(l.n, 1);
	assert_true(l.s[0].rd_ios == UINT64_C(9999999999999999999));
	assert_true(l.s[0].wr_ios == UINT64_MAX);
	assert_int_equal(l.s[0].io_ticks, 10);
	assert_int_equal(
		parse_disks(mem("8 0 sda 9999999999999999999 2 3 4 5 6 7 8 9 10 11\n"), &l, &d), 0);
	assert_true(l.s[0].rd_ios == UINT64_C(9999999999999999999));
	assert_int_equal(l.s[0].wr_ios, 5);
	/* 20 digits in a count nothing keeps (field 5): in range, accepted */
	assert_int_equal(
		parse_disks(mem("8 0 sda 1 18446744073709551615 3 4 5 6 7 8 9 10 11\n"), &l, &d), 0);
	assert_int_equal(l.s[0].rd_ios, 1);
	assert_int_equal(l.s[0].wr_ios, 5);
	assert_int_equal(l.s[0].io_ticks, 10);
}

static void test_diskstats_malformed(void **state)
{
	static const struct bad_case cases[] = {
		{ "8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n8 1 sda1 1 2 3 4 5 6 7 8 9 10\n", 0, -EINVAL,
		  "line 2: 13 fields, expected 14, 18 or 20" },
		{ "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12\n", 0, -EINVAL, "15 fields" },
		{ "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\n", 0, -EINVAL,
		  "more than 20" },
		{ "8 0 sda 1 2 3 4 5 6 7 8 9 10 18446744073709551616\n", 0, -ERANGE,
		  "line 1: field 14" },
		{ "8 0\n", 0, -EINVAL, "no device name" },
		{ "8x 0 sda 1 2 3 4 5 6 7 8 9 10 11\n", 0, -EINVAL, "major" },
		{ "8 4294967296 sda 1 2 3 4 5 6 7 8 9 10 11\n", 0, -ERANGE, "minor" },
		{ "8 0 sda 1 2 3 4 \xff 6 7 8 9 10 11\n", 0, -EINVAL, "field 8" },
		/* counts no caller keeps are checked as strictly */
		{ "8 0 sda 1 2y 3 4 5 6 7 8 9 10 11\n", 0, -EINVAL, "field 5 '2y' is not a number" },
		{ "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 99999999999999999999 15 16 17\n", 0,
		  -ERANGE, "field 17" },
		{ "8 0 s\x01 1 2 3 4 5 6 7 8 9 10 11\n", 0, -EINVAL, "control byte" },
	};

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const struct bad_case *c = &cases[i];
		struct disk_log l;
		struct ip_diag d;
		int r = parse_disks(memn(c->text, c->len ? c->len : strlen(c->text)), &l, &d);

		if (r != c->err)
			fail_msg("case %zu: got %d want %d (%s)", i, r, c->err, d.msg);
		assert_msg_has(d, c->word);
	}
}

/* ---- /proc/stat --------------------------------------------------- */

static struct ip_cpu_times times[IP_CPU_MAX];

static void test_stat(void **state)
{
	struct buf b = load("stat-x86-qemu-ahci");
	struct ip_diag d;
	ip_cpuset present;

	assert_int_equal(ip_parse_stat(b.p, b.len, times, &present, &d), 0);
	free(b.p);
	assert_string_equal(cpuset_str(&present), "0-3");
	assert_int_equal(times[0].user, 58);
	assert_int_equal(times[0].system, 221);
	assert_int_equal(times[0].idle, 831);
	assert_int_equal(times[0].softirq, 8);
	assert_int_equal(times[2].user, 15);
	assert_int_equal(times[3].system, 134);
	assert_int_equal(times[3].idle, 926);
	assert_int_equal(times[3].softirq, 6);
	assert_int_equal(times[4].idle, 0);

	/* an old kernel with 4 columns, CPU 1 offline, no trailing newline */
	b = mem("cpu  10 0 20 30\ncpu0 1 2 3 4\ncpu2 5 6 7 8");
	assert_int_equal(ip_parse_stat(b.p, b.len, times, &present, &d), 0);
	free(b.p);
	assert_string_equal(cpuset_str(&present), "0,2");
	assert_int_equal(times[2].idle, 8);
	assert_int_equal(times[2].steal, 0);
	assert_int_equal(times[3].idle, 0);
}

static void test_stat_malformed(void **state)
{
	static const struct bad_case cases[] = {
		{ "", 0, -EINVAL, "no cpuN" },
		{ "cpu  1 2 3 4\nintr 5\n", 0, -EINVAL, "no cpuN" },
		{ "cpu0 1 2 3\n", 0, -EINVAL, "line 1: cpu0 has 3 columns" },
		{ "cpu0 1 2 3 4\ncpu1 1 2 3 18446744073709551616\n", 0, -ERANGE,
		  "line 2: cpu1 column 4" },
		{ "cpu4096 1 2 3 4\n", 0, -ERANGE, "beyond" },
		{ "cpu0 1 2 3 4\ncpu0 1 2 3 4\n", 0, -EINVAL, "twice" },
		{ "cpu0x 1 2 3 4\n", 0, -EINVAL, "line 1" },
		{ "cpu0 1 2 \xff 4\n", 0, -EINVAL, "not a number" },
	};

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const struct bad_case *c = &cases[i];
		struct buf b = memn(c->text, c->len ? c->len : strlen(c->text));
		struct ip_diag d = { "" };
		ip_cpuset present;
		int r = ip_parse_stat(b.p, b.len, times, &present, &d);

		if (r != c->err)
			fail_msg("case %zu: got %d want %d (%s)", i, r, c->err, d.msg);
		assert_msg_has(d, c->word);
		free(b.p);
	}
}

/* ---- replay counters ---------------------------------------------- */

struct ctr_log {
	int n;
	char dev[8][16];
	int cpu[8];
	uint64_t count[8];
};

static int ctr_collect(void *ctx, const char *device, int cpu, uint64_t count)
{
	struct ctr_log *l = ctx;

	assert_true(l->n < 8);
	snprintf(l->dev[l->n], sizeof(l->dev[0]), "%s", device);
	l->cpu[l->n] = cpu;
	l->count[l->n] = count;
	l->n++;
	return 0;
}

static void test_counters(void **state)
{
	struct buf b = load("counters-submit-ahci");
	struct ctr_log l = { 0 };
	struct ip_diag d;

	assert_int_equal(ip_parse_counters(b.p, b.len, ctr_collect, &l, &d), 0);
	free(b.p);
	assert_int_equal(l.n, 4);
	assert_string_equal(l.dev[3], "sda");
	assert_int_equal(l.cpu[3], 3);
	assert_int_equal(l.count[3], 8010);
	assert_int_equal(l.count[0], 10);

	memset(&l, 0, sizeof(l));
	char text[128];

	snprintf(text, sizeof(text), "\nnvme0n1 %d 18446744073709551615\n   \n\tmmcblk0  0  7",
		 IP_CPU_MAX - 1);
	b = mem(text);
	assert_int_equal(ip_parse_counters(b.p, b.len, ctr_collect, &l, &d), 0);
	free(b.p);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.dev[0], "nvme0n1");
	assert_int_equal(l.cpu[0], IP_CPU_MAX - 1);
	assert_int_equal(l.count[0], UINT64_MAX);
	assert_string_equal(l.dev[1], "mmcblk0");
	assert_int_equal(l.count[1], 7);
	assert_int_equal(ip_parse_counters("", 0, ctr_collect, &l, &d), 0);
}

static void test_counters_malformed(void **state)
{
	static const struct bad_case cases[] = {
		{ "sda 0 1\nsda x 1\n", 0, -EINVAL, "line 2: CPU 'x' is not a number" },
		{ "sda 99999 1\n", 0, -ERANGE, "line 1: CPU '99999' is out of range" },
		{ "sda -1 1\n", 0, -EINVAL, "line 1" },
		{ "sda 0\n", 0, -EINVAL, "line 1: expected 'DEVICE CPU COUNT'" },
		{ "sda\n", 0, -EINVAL, "line 1: expected" },
		{ "sda 0 1 2\n", 0, -EINVAL, "line 1: junk" },
		{ "sda 0 18446744073709551616\n", 0, -ERANGE, "above 2^64-1" },
		{ "\n\n# comment\n", 0, -EINVAL, "line 3" },
		{ "sd\0 0 1\n", 7, -EINVAL, "control byte" },
		{ "sda 0 1\xff\n", 0, -EINVAL, "line 1" },
	};

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const struct bad_case *c = &cases[i];
		struct buf b = memn(c->text, c->len ? c->len : strlen(c->text));
		struct ip_diag d = { "" };
		struct ctr_log l = { 0 };
		int r = ip_parse_counters(b.p, b.len, ctr_collect, &l, &d);

		if (r != c->err)
			fail_msg("case %zu: got %d want %d (%s)", i, r, c->err, d.msg);
		assert_msg_has(d, c->word);
		free(b.p);
	}
}

/* ---- per_cpu_count ------------------------------------------------ */

static ip_cpuset set_of(const char *list)
{
	ip_cpuset s;

	cpuset_zero(&s);
	assert_int_equal(cpuset_parse_list(&s, list), 0);
	return s;
}

/* kernel/irq/irqdesc.c per_cpu_count_show(): one field per possible CPU */
static void test_per_cpu_count_real(void **state)
{
	ip_cpuset possible = set_of("0-31");
	const char *text = "0,0,1829311,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,77\n";
	uint32_t pc[32];
	struct ip_diag d = { "" };

	(void)state;
	assert_int_equal(ip_parse_per_cpu_count(text, strlen(text), &possible, pc, 32, &d), 0);
	assert_int_equal(pc[2], 1829311);
	assert_int_equal(pc[31], 77);
	assert_int_equal(pc[0] + pc[30], 0);
}

/* Field i is the i-th possible CPU, not the i-th /proc/interrupts column:
 * with CPU 1 offline, /proc/interrupts' second column is CPU 2. */
static void test_per_cpu_count_possible_not_online(void **state)
{
	ip_cpuset possible = set_of("0,2,5,7");
	const char *text = "1,2,3,4\n";
	uint32_t pc[8];
	struct ip_diag d = { "" };

	(void)state;
	assert_int_equal(ip_parse_per_cpu_count(text, strlen(text), &possible, pc, 8, &d), 0);
	assert_int_equal(pc[0], 1);
	assert_int_equal(pc[1], 0);
	assert_int_equal(pc[2], 2);
	assert_int_equal(pc[5], 3);
	assert_int_equal(pc[7], 4);
	/* four possible CPUs want four fields */
	assert_int_equal(ip_parse_per_cpu_count("1,2,3\n", 6, &possible, pc, 8, &d), -EINVAL);
	assert_non_null(strstr(d.msg, "3 counts for 4 possible CPUs"));
	assert_int_equal(ip_parse_per_cpu_count("1,2,3,4,5\n", 10, &possible, pc, 8, &d), -EINVAL);
}

/* scnprintf into PAGE_SIZE: 1,024 CPUs of big counts are cut, mid-number
 * and without the newline. The cut text must not pass for counts. */
static void test_per_cpu_count_truncated(void **state)
{
	ip_cpuset possible = set_of("0-1023");
	char *buf = malloc(16384);
	size_t n = 0;
	uint32_t *pc = calloc(1024, sizeof(*pc));
	struct ip_diag d = { "" };

	(void)state;
	assert_non_null(buf);
	assert_non_null(pc);
	for (int c = 0; c < 1024; c++)
		n += (size_t)sprintf(buf + n, "%s%u", c ? "," : "", 1000000u + (unsigned)c);
	assert_true(n > 4095);
	assert_int_equal(ip_parse_per_cpu_count(buf, 4095, &possible, pc, 1024, &d), -EMSGSIZE);
	assert_non_null(strstr(d.msg, "truncated"));
	for (int c = 0; c < 1024; c++)
		assert_int_equal(pc[c], 0);
	/* the whole text with its newline is fine */
	buf[n++] = '\n';
	assert_int_equal(ip_parse_per_cpu_count(buf, n, &possible, pc, 1024, &d), 0);
	assert_int_equal(pc[1023], 1001023);
	free(buf);
	free(pc);
}

static void test_per_cpu_count_junk(void **state)
{
	static const char *const bad[] = {
		"", "\n", "1,,2,3\n", "1,2,3,\n", " 1,2,3,4\n", "1,2,3,4 \n", "1,2,x,4\n",
		"1,2,3,4\n\n", "-1,2,3,4\n", "1;2;3;4\n",
		/* the zeros' own path */
		"0,,0,0\n", "0,0,0,\n", "0,0,0,0,\n", "0 ,0,0,0\n", "0,0,0,0x\n",
	};
	ip_cpuset possible = set_of("0-3");
	uint32_t pc[4];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ip_diag d = { "" };
		int r = ip_parse_per_cpu_count(bad[i], strlen(bad[i]), &possible, pc, 4, &d);

		if (r != -EINVAL && r != -EMSGSIZE)
			fail_msg("'%s': %d", bad[i], r);
		assert_true(d.msg[0] != '\0');
	}
	{
		struct ip_diag d = { "" };

		assert_int_equal(ip_parse_per_cpu_count("1,2,4294967296,4\n", 17, &possible, pc, 4, &d),
				 -ERANGE);
		assert_int_equal(ip_parse_per_cpu_count("1,2,4294967295,4\n", 17, &possible, pc, 4, &d), 0);
		/* zeros, a leading 0, and nothing left of the last call */
		assert_int_equal(ip_parse_per_cpu_count("0,007,0,0\n", 10, &possible, pc, 4, &d), 0);
		assert_true(pc[0] == 0 && pc[1] == 7 && pc[2] == 0 && pc[3] == 0);
	}
}

/* Runs of zeros, as a big machine's file is: their fields still count,
 * to the CPU, and too many or too few, or junk after them, still fail. */
static void test_per_cpu_count_zero_runs(void **state)
{
	static const char *const bad[] = {
		"0,0,0,0,0,0,0,0,0,0,0,0,0\n",	  /* 13 fields */
		"0,0,0,0,0,0,0,0,0,0,0\n",	  /* 11 */
		"0,0,0,0,0,0,0,0,x,0,0,0\n",
		"0,0,0,0,0,0,0,0,,0,0,0\n",
		"0,0,0,0,0,0,0,0,0,0,0,0,\n",
	};
	ip_cpuset possible = set_of("0-11"), holed = set_of("0-5,7-12");
	uint32_t pc[16];
	struct ip_diag d = { "" };

	(void)state;
	assert_int_equal(ip_parse_per_cpu_count("0,0,0,0,0,0,0,0,0,5,0,6\n", 24, &possible, pc, 16, &d), 0);
	for (int c = 0; c < 12; c++)
		assert_int_equal(pc[c], c == 9 ? 5 : c == 11 ? 6 : 0);
	assert_int_equal(ip_parse_per_cpu_count("0,0,0,0,3,0,0,0,0,0,0,0\n", 24, &possible, pc, 16, &d), 0);
	assert_int_equal(pc[4], 3);
	assert_int_equal(pc[11], 0);
	/* with a hole, field 7 is CPU 8 */
	assert_int_equal(ip_parse_per_cpu_count("0,0,0,0,0,0,0,9,0,0,0,0\n", 24, &holed, pc, 16, &d), 0);
	assert_int_equal(pc[6] + pc[7], 0);
	assert_int_equal(pc[8], 9);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		d.msg[0] = '\0';
		if (ip_parse_per_cpu_count(bad[i], strlen(bad[i]), &possible, pc, 16, &d) != -EINVAL)
			fail_msg("'%s' passed", bad[i]);
		assert_true(d.msg[0] != '\0');
	}
	assert_non_null(strstr(d.msg, "field 13"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_cpu_count_real),
		cmocka_unit_test(test_per_cpu_count_possible_not_online),
		cmocka_unit_test(test_per_cpu_count_truncated),
		cmocka_unit_test(test_per_cpu_count_junk),
		cmocka_unit_test(test_per_cpu_count_zero_runs),
		cmocka_unit_test(test_interrupts_x86_capture),
		cmocka_unit_test(test_interrupts_x86_msix_long_chip),
		cmocka_unit_test(test_interrupts_arm64_phone),
		cmocka_unit_test(test_interrupts_arm64_server_its),
		cmocka_unit_test(test_interrupts_arm64_gicv2),
		cmocka_unit_test(test_interrupts_riscv64_plic),
		cmocka_unit_test(test_interrupts_multiword_chip_edges),
		cmocka_unit_test(test_interrupts_negative_hwirq_5_10),
		cmocka_unit_test(test_interrupts_xen_event_channels),
		cmocka_unit_test(test_interrupts_arm64_ipi_glued_count),
		cmocka_unit_test(test_interrupts_left_justified_chip),
		cmocka_unit_test(test_interrupts_hotplug),
		cmocka_unit_test(test_interrupts_edge_cases),
		cmocka_unit_test(test_interrupts_unnamed_action),
		cmocka_unit_test(test_interrupts_callback_stops),
		cmocka_unit_test(test_interrupts_control_in_name),
		cmocka_unit_test(test_interrupts_newline_in_name),
		cmocka_unit_test(test_interrupts_malformed),
		cmocka_unit_test(test_interrupts_large),
		cmocka_unit_test(test_interrupts_large_values),
		cmocka_unit_test(test_split_actions),
		cmocka_unit_test(test_softirqs_capture),
		cmocka_unit_test(test_softirqs_malformed),
		cmocka_unit_test(test_softirqs_row_only),
		cmocka_unit_test(test_pid_stat_capture),
		cmocka_unit_test(test_pid_stat_variants),
		cmocka_unit_test(test_pid_stat_malformed),
		cmocka_unit_test(test_pid_status),
		cmocka_unit_test(test_pid_status_malformed),
		cmocka_unit_test(test_pid_io),
		cmocka_unit_test(test_diskstats),
		cmocka_unit_test(test_diskstats_malformed),
		cmocka_unit_test(test_stat),
		cmocka_unit_test(test_stat_malformed),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_counters_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
