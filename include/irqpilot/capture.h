/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_CAPTURE_H
#define IRQPILOT_CAPTURE_H

#include <stddef.h>

#include "irqpilot/diag.h"
#include "irqpilot/model.h"
#include "irqpilot/root.h"
#include "irqpilot/sample.h"

/*
 * A replay series: DIR/0000/, DIR/0001/, ... each a root tree holding only
 * the files one sample read (with their modes and relative symlinks), and
 * DIR/NNNN/irqpilot/{time_ns,submit,complete} for what is not a file there.
 */

/* Take @samples samples @interval_s apart through @s (on root @r) and
 * record them under @dir, which must not exist or be empty. */
int ip_capture_run(struct ip_root *r, struct ip_sampler *s, const char *dir, int samples,
		   double interval_s, struct ip_diag *d);

/* Record one sample as step @step of @dir (used by the daemon's
 * `irqctl capture`, which samples on its own timer). */
int ip_capture_step(struct ip_root *r, struct ip_sampler *s, const char *dir, int step,
		    struct ip_snapshot *out, struct ip_diag *d);

/* The step directories of a series, sorted ("0000", "0001", ...). */
int ip_replay_steps(const char *dir, char ***steps, size_t *n, struct ip_diag *d);

#endif
