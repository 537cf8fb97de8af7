/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_DEVTREE_H
#define IRQPILOT_DEVTREE_H

/*
 * Pure parsers for the devicetree as the kernel shows it under
 * /sys/firmware/devicetree/base (drivers/of/kobj.c: one file per property,
 * holding the property's raw bytes; cells are big-endian u32), and for
 * the /sys/kernel/irq/N/ files they are matched against. No I/O; bad input
 * gives a negative errno and a reason in the diag.
 */

#include <stddef.h>
#include <stdint.h>

#include "irqpilot/diag.h"

/* The most cells one property is read as: 64 interrupts of 4 cells. */
#define IP_DT_MAX_CELLS 256

/* Big-endian u32 cells of a property; -EINVAL if @len is not a multiple of 4. */
int ip_dt_cells(const void *buf, size_t len, uint32_t *cells, int max, int *n, struct ip_diag *d);

/* Whether the NUL-separated string list @list (a "compatible") holds @s. */
int ip_dt_compatible(const char *list, size_t len, const char *s);

/*
 * One interrupt specifier turned into what /proc/interrupts shows for it:
 * the chip name (or its prefix, for chips whose printed name carries an
 * instance number) and the hwirq of the controller's irq domain.
 */
struct ip_dt_irq {
	char chip[16];     /* "GICv3"; "GIC" matches "GIC-0" and "GICv2" */
	int chip_is_prefix;
	unsigned long hwirq;
};

/*
 * Translates the @ncells cells of @spec for a controller whose compatible
 * is @compat (@clen bytes, NUL-separated) and #interrupt-cells @ncells, as
 * that controller's irq_domain_ops.translate does. -EPROTONOSUPPORT for a
 * controller it has no rule for (the diag names its first compatible),
 * -EINVAL for a specifier the controller would reject.
 */
int ip_dt_translate(const char *compat, size_t clen, unsigned ncells, const uint32_t *spec,
		    struct ip_dt_irq *out, struct ip_diag *d);

/* Whether a chip name and hwirq from /proc/interrupts or /sys/kernel/irq/N
 * ("GICv3", "564") are what @want names. */
int ip_dt_irq_matches(const struct ip_dt_irq *want, const char *chip, const char *hwirq);

/*
 * The leading decimal of a hwirq column or /sys/kernel/irq/N/hwirq ("564",
 * "564\n", x86's "81920-edge"); -EINVAL if there is none.
 */
int ip_parse_hwirq(const char *s, unsigned long *out);

#endif
