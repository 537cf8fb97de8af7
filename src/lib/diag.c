// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "irqpilot/diag.h"

int ip_diag_set(struct ip_diag *d, int err, const char *fmt, ...)
{
	va_list ap;

	if (!d)
		return err;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	return err;
}

int ip_diag_prefix(struct ip_diag *d, int err, const char *fmt, ...)
{
	char prefix[256], old[sizeof(d->msg)];
	va_list ap;

	if (!d)
		return err;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, d->msg, sizeof(old));
	/* Truncation is acceptable for a diagnostic; build it piecewise so the
	 * compiler need not prove it cannot happen. */
	size_t n = strlen(prefix);

	if (n >= sizeof(d->msg))
		n = sizeof(d->msg) - 1;
	memcpy(d->msg, prefix, n);
	d->msg[n] = '\0';
	if (old[0] && n + 2 < sizeof(d->msg)) {
		size_t room = sizeof(d->msg) - n - 3;
		size_t k = strlen(old);

		if (k > room)
			k = room;
		memcpy(d->msg + n, ": ", 2);
		memcpy(d->msg + n + 2, old, k);
		d->msg[n + 2 + k] = '\0';
	}
	return err;
}
