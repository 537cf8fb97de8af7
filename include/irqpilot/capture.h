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

/* Record one sample as step @step of the directory open at @dirfd, which
 * messages call @dir (used by the daemon's `irqctl capture`, which samples
 * on its own timer). The step directory is never opened through a link. */
int ip_capture_step(struct ip_root *r, struct ip_sampler *s, int dirfd, const char *dir, int step,
		    struct ip_snapshot *out, struct ip_diag *d);

/*
 * `irqctl capture` runs as root on behalf of a client, so it writes only
 * below @base (the daemon's state directory): @path must be @base/NAME...,
 * without "." or ".." components. Each component is made when missing and
 * opened with O_NOFOLLOW, @base's last one included, so no symlink is
 * followed anywhere below it. Returns 0 with *dirfd open on the last one,
 * or -EPERM (outside, "..") / -ELOOP, -ENOTDIR (a link) ... with @d saying
 * which.
 */
int ip_capture_open_below(const char *base, const char *path, int *dirfd, struct ip_diag *d);

/* The step directories of a series, sorted ("0000", "0001", ...). */
int ip_replay_steps(const char *dir, char ***steps, size_t *n, struct ip_diag *d);

#endif
