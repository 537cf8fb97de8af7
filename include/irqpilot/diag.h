/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_DIAG_H
#define IRQPILOT_DIAG_H

/*
 * A one-line, human-readable reason for a failure, filled in by the code
 * that knows what went wrong (a parser knows the line, a sampler knows the
 * path). Functions still return a negative errno; the diag says why.
 */
struct ip_diag {
	char msg[512];
};

/* Formats into d (if non-NULL) and returns err (a negative errno). */
int ip_diag_set(struct ip_diag *d, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prefixes the existing message with "prefix: ". */
int ip_diag_prefix(struct ip_diag *d, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
