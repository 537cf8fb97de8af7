// SPDX-License-Identifier: GPL-2.0-or-later
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "irqpilot/devtree.h"
#include "irqpilot/macro.h"

int ip_dt_cells(const void *buf, size_t len, uint32_t *cells, int max, int *n, struct ip_diag *d)
{
	const unsigned char *b = buf;
	size_t cnt = len / 4;

	*n = 0;
	if (len % 4)
		return ip_diag_set(d, -EINVAL, "property of %zu bytes is not a list of 32-bit cells", len);
	if (cnt > (size_t)max)
		return ip_diag_set(d, -E2BIG, "property of %zu cells, at most %d are read", cnt, max);
	for (size_t i = 0; i < cnt; i++)
		cells[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
			   (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
	*n = (int)cnt;
	return 0;
}

int ip_dt_compatible(const char *list, size_t len, const char *s)
{
	size_t sl = strlen(s);

	while (len > 0) {
		size_t n = strnlen(list, len);

		if (n == sl && memcmp(list, s, n) == 0)
			return 1;
		if (n == len)
			break;
		list += n + 1;
		len -= n + 1;
	}
	return 0;
}

static void set_chip(struct ip_dt_irq *out, const char *chip, int prefix)
{
	snprintf(out->chip, sizeof(out->chip), "%s", chip);
	out->chip_is_prefix = prefix;
}

/* A GICv2 (v2) or GICv3 interrupt specifier. */
static int gic_translate(int v2, unsigned ncells, const uint32_t *spec, struct ip_dt_irq *out,
			 struct ip_diag *d)
{
	/*
	 * drivers/irqchip/irq-gic.c gic_irq_domain_translate and
	 * irq-gic-v3.c gic_irq_domain_translate: cell 0 is the type
	 * (0 SPI, 1 PPI; v3 adds 2 ESPI, 3 EPPI), cell 1 the number,
	 * cell 2 the flags; a 4th cell (gs101, RK3399) is a PPI
	 * partition phandle and does not change the hwirq. The SPI
	 * hwirq is n + 32 and the PPI hwirq n + 16, as GIC INTIDs
	 * are numbered.
	 */
	if (ncells < 3)
		return ip_diag_set(d, -EINVAL, "GIC with #interrupt-cells %u (needs 3 or more)", ncells);
	switch (spec[0]) {
	case 0:
		if (spec[1] > 987)
			return ip_diag_set(d, -EINVAL, "GIC SPI %u out of range", spec[1]);
		out->hwirq = spec[1] + 32;
		break;
	case 1:
		if (spec[1] > 15)
			return ip_diag_set(d, -EINVAL, "GIC PPI %u out of range", spec[1]);
		out->hwirq = spec[1] + 16;
		break;
	case 2: /* ESPI: INTID 4096 + n */
		if (v2 || spec[1] > 1023)
			return ip_diag_set(d, -EINVAL, "GIC extended SPI %u not valid here", spec[1]);
		out->hwirq = spec[1] + 4096;
		break;
	case 3: /* EPPI: INTID 1056 + n */
		if (v2 || spec[1] > 63)
			return ip_diag_set(d, -EINVAL, "GIC extended PPI %u not valid here", spec[1]);
		out->hwirq = spec[1] + 1056;
		break;
	default:
		return ip_diag_set(d, -EINVAL, "GIC interrupt type %u unknown", spec[0]);
	}
	/*
	 * irq-gic-v3.c names its chip "GICv3"; irq-gic.c prints the
	 * primary GIC as "GIC-0" (gic_irq_print_chip) and names it
	 * "GIC" or "GICv2" in chip_name, so for v2 the prefix is
	 * what is sure.
	 */
	if (v2)
		set_chip(out, "GIC", 1);
	else
		set_chip(out, "GICv3", 0);
	return 0;
}

/*
 * RISC-V platform interrupt controllers. Without them every RISC-V
 * board's devicetree route stopped at "unknown interrupt controller", and
 * hosts whose IRQ names cannot tell them apart (two dw_mmc hosts, both
 * "dw-mci", on a StarFive JH7110) were left unsteerable.
 * - PLIC: drivers/irqchip/irq-sifive-plic.c declares these compatibles;
 *   plic_irq_domain_translate takes cell 0 as the hwirq (onecell, or
 *   twocell for the edge-quirk T-Head and Andes PLICs), and both its
 *   chips are named "SiFive PLIC".
 * - APLIC: irq-riscv-aplic-main.c riscv_aplic_irqdomain_translate takes
 *   cell 0 of two as the source, the hwirq. Direct mode names its chip
 *   "APLIC-DIRECT" (irq-riscv-aplic-direct.c); MSI mode has its own
 *   "APLIC"-prefixed MSI domain, so the prefix is what is matched.
 * Returns 1 when @compat is one of them.
 */
static int riscv_translate(const char *compat, size_t clen, unsigned ncells, const uint32_t *spec,
			   struct ip_dt_irq *out, struct ip_diag *d)
{
	static const char *const plic[] = { "sifive,plic-1.0.0", "riscv,plic0", "thead,c900-plic",
					    "andestech,nceplic100" };
	int is_plic = 0;

	for (size_t i = 0; i < ARRAY_SIZE(plic); i++)
		is_plic |= ip_dt_compatible(compat, clen, plic[i]);
	if (!is_plic && !ip_dt_compatible(compat, clen, "riscv,aplic"))
		return 0;
	if (ncells < (is_plic ? 1u : 2u))
		return ip_diag_set(d, -EINVAL, "%s with #interrupt-cells %u (needs %d)",
				   is_plic ? "PLIC" : "APLIC", ncells, is_plic ? 1 : 2);
	out->hwirq = spec[0];
	if (is_plic)
		set_chip(out, "SiFive PLIC", 0);
	else
		set_chip(out, "APLIC", 1);
	return 1;
}

/*
 * Controllers stacked on a GIC that take its 3-cell SPI specifiers and
 * pass each SPI on: /proc/interrupts shows the outermost domain's chip and
 * hwirq (kernel/irq/proc.c show_interrupts() prints desc->irq_data), which
 * is theirs, with the SPI number as the hwirq, not the GIC's n + 32. A
 * board's devicetree sets them as the interrupt-parent of every device
 * (tegra210.dtsi's lic, imx6qdl.dtsi's gpc): without them its route
 * stopped at "unknown interrupt controller". Each translate function
 * takes param[1] when param_count is 3 and param[0] is 0 (GIC_SPI):
 * - irq-mtk-sysirq.c mtk_sysirq_domain_translate, chip "MT_SYSIRQ";
 * - irq-tegra.c tegra_ictlr_domain_translate, chip "LIC", the compatibles
 *   of its ictlr_matches;
 * - irq-imx-gpc.c imx_gpc_domain_translate, chip "GPC";
 * - irq-imx-gpcv2.c imx_gpcv2_domain_translate, chip "GPCv2", declared
 *   for "fsl,imx7d-gpc" and "fsl,imx8mq-gpc".
 * Returns 1 when @compat is one of them.
 */
static int spi_forwarder_translate(const char *compat, size_t clen, unsigned ncells, const uint32_t *spec,
				   struct ip_dt_irq *out, struct ip_diag *d)
{
	static const struct {
		const char *compat, *chip;
	} fw[] = {
		{ "mediatek,mt6577-sysirq", "MT_SYSIRQ" }, { "nvidia,tegra20-ictlr", "LIC" },
		{ "nvidia,tegra30-ictlr", "LIC" },	   { "nvidia,tegra210-ictlr", "LIC" },
		{ "fsl,imx6q-gpc", "GPC" },		   { "fsl,imx7d-gpc", "GPCv2" },
		{ "fsl,imx8mq-gpc", "GPCv2" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(fw); i++) {
		if (!ip_dt_compatible(compat, clen, fw[i].compat))
			continue;
		if (ncells != 3 || spec[0] != 0)
			return ip_diag_set(d, -EINVAL, "%s specifier is not a 3-cell SPI", fw[i].compat);
		out->hwirq = spec[1];
		set_chip(out, fw[i].chip, 0);
		return 1;
	}
	return 0;
}

/*
 * Apple's AIC and AIC2 (drivers/irqchip/irq-apple-aic.c; M1 and later
 * Macs, whose NVMe came with nvme-apple in 5.19): aic_irq_domain_translate
 * takes 3 cells (type, irq, flags) or 4 (type, die, irq, flags). Type 0,
 * AIC_IRQ (dt-bindings/interrupt-controller/apple-aic.h), is a hardware
 * IRQ, hwirq AIC_IRQ_HWIRQ(die, irq): the die in bits 31-24, the event
 * type AIC_EVENT_TYPE_IRQ (1) in 23-16, the number in 15-0, as
 * /proc/interrupts prints it (65536 + n on die 0). Type 1 is a per-CPU FIQ
 * (timers, PMUs), nothing a disk uses. The chips are "AIC" (aic_chip) and
 * "AIC2" (aic2_chip). Returns 1 when @compat is one of them.
 */
static int apple_aic_translate(const char *compat, size_t clen, unsigned ncells, const uint32_t *spec,
			       struct ip_dt_irq *out, struct ip_diag *d)
{
	int v2 = ip_dt_compatible(compat, clen, "apple,aic2");
	uint32_t die = 0, irq;

	if (!v2 && !ip_dt_compatible(compat, clen, "apple,aic"))
		return 0;
	if (ncells != 3 && ncells != 4)
		return ip_diag_set(d, -EINVAL, "AIC with #interrupt-cells %u (needs 3 or 4)", ncells);
	if (spec[0] != 0)
		return ip_diag_set(d, -EINVAL, "AIC interrupt type %u is no hardware IRQ", spec[0]);
	if (ncells == 4)
		die = spec[1];
	irq = spec[ncells - 2];
	if (die > 0xff || irq > 0xffff)
		return ip_diag_set(d, -EINVAL, "AIC die %u IRQ %u out of range", die, irq);
	out->hwirq = (unsigned long)die << 24 | 1UL << 16 | irq;
	set_chip(out, v2 ? "AIC2" : "AIC", 0);
	return 1;
}

/*
 * The BCM2835 ARM interrupt controller of the Raspberry Pi 1-3
 * (drivers/irqchip/irq-bcm2835.c; on the BCM2836/7 it is chained under
 * the per-CPU irq-bcm2836.c): armctrl_xlate takes 2 cells, a bank (0-2)
 * and a bit (0-31), and the hwirq is MAKE_HWIRQ(bank, bit), bank << 5 |
 * bit, of the "ARMCTRL-level" chip. Returns 1 when @compat is it.
 */
static int bcm2835_translate(const char *compat, size_t clen, unsigned ncells, const uint32_t *spec,
			     struct ip_dt_irq *out, struct ip_diag *d)
{
	if (!ip_dt_compatible(compat, clen, "brcm,bcm2835-armctrl-ic") &&
	    !ip_dt_compatible(compat, clen, "brcm,bcm2836-armctrl-ic"))
		return 0;
	if (ncells != 2)
		return ip_diag_set(d, -EINVAL, "bcm2835 armctrl with #interrupt-cells %u (needs 2)", ncells);
	if (spec[0] > 2 || spec[1] > 31)
		return ip_diag_set(d, -EINVAL, "bcm2835 armctrl bank %u bit %u out of range", spec[0], spec[1]);
	out->hwirq = spec[0] << 5 | spec[1];
	set_chip(out, "ARMCTRL-level", 0);
	return 1;
}

int ip_dt_translate(const char *compat, size_t clen, unsigned ncells, const uint32_t *spec,
		    struct ip_dt_irq *out, struct ip_diag *d)
{
	/* each says 1 when @compat is its controller's, 0 when not, or why not */
	static int (*const by_compat[])(const char *, size_t, unsigned, const uint32_t *, struct ip_dt_irq *,
					struct ip_diag *) = { spi_forwarder_translate, riscv_translate,
							      apple_aic_translate, bcm2835_translate };
	static const char *const gicv2[] = { "arm,gic-400", "arm,cortex-a15-gic", "arm,cortex-a9-gic",
					     "arm,cortex-a7-gic", "arm,arm11mp-gic", "qcom,msm-qgic2" };
	char first[64];
	int v2 = 0, ret;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < ARRAY_SIZE(gicv2); i++)
		v2 |= ip_dt_compatible(compat, clen, gicv2[i]);

	if (v2 || ip_dt_compatible(compat, clen, "arm,gic-v3"))
		return gic_translate(v2, ncells, spec, out, d);
	if (ip_dt_compatible(compat, clen, "qcom,pdc")) {
		/* drivers/irqchip/qcom-pdc.c qcom_pdc_translate: the PDC pin is
		 * the hwirq, the chip is named "PDC". */
		if (ncells < 2)
			return ip_diag_set(d, -EINVAL, "PDC with #interrupt-cells %u (needs 2)", ncells);
		out->hwirq = spec[0];
		set_chip(out, "PDC", 0);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(by_compat); i++) {
		ret = by_compat[i](compat, clen, ncells, spec, out, d);
		if (ret != 0)
			return ret < 0 ? ret : 0;
	}
	snprintf(first, sizeof(first), "%.*s", (int)strnlen(compat, MIN(clen, sizeof(first) - 1)),
		 compat);
	for (char *p = first; *p; p++)
		if (!isprint((unsigned char)*p))
			*p = '?';
	return ip_diag_set(d, -EPROTONOSUPPORT, "unknown interrupt controller %s",
			   first[0] ? first : "(no compatible)");
}

int ip_parse_hwirq(const char *s, unsigned long *out)
{
	unsigned long v = 0;
	int n = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	for (; isdigit((unsigned char)*s); s++, n++) {
		if (v > 0xffffffffUL)
			return -ERANGE;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	if (!n || (*s && *s != '\n' && *s != '-' && *s != ' '))
		return -EINVAL;
	*out = v;
	return 0;
}

int ip_dt_irq_matches(const struct ip_dt_irq *want, const char *chip, const char *hwirq)
{
	unsigned long h;
	size_t n = strlen(want->chip);

	if (!chip || !hwirq || ip_parse_hwirq(hwirq, &h) < 0 || h != want->hwirq)
		return 0;
	while (*chip == ' ')
		chip++;
	if (want->chip_is_prefix)
		return strncmp(chip, want->chip, n) == 0 && strncmp(chip, "GICv3", 5) != 0;
	return strncmp(chip, want->chip, n) == 0 && (chip[n] == '\0' || chip[n] == '\n');
}
