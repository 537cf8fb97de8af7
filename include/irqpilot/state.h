/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_STATE_H
#define IRQPILOT_STATE_H

#include "irqpilot/diag.h"
#include "irqpilot/policy.h"

/*
 * The original settings of everything irqpilotd changed, kept in a file
 * under the runtime directory so that `irqpilotd --restore` can put them
 * back after a crash or kill -9, when the daemon's memory is gone.
 *
 *   # irqpilot state 1
 *   irq 45 0-3
 *   thread 812 28 affinity 0-3
 *   thread 812 28 sched 1 50
 *   rq sda 1
 *   cq sda 8:0        (attached to irqpilot_cq by us: detached on restore)
 */

/* Written to a temporary file and renamed over @path. Removes @path when
 * nothing is recorded. */
int ip_state_save(const struct ip_history *h, const char *path, struct ip_diag *d);
/* Adds the recorded originals to @h. -ENOENT when there is no file. */
int ip_state_load(const char *path, struct ip_history *h, struct ip_diag *d);

#endif
