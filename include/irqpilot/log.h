/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_LOG_H
#define IRQPILOT_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

/*
 * irqpilotd's logging: the journal with structured fields, and stderr in
 * the foreground. Errors that repeat are rate-limited per object.
 */
struct ip_log {
	bool to_stderr;
	bool to_journal;
	int level; /* LOG_ERR .. LOG_DEBUG */
	struct ip_log_limit {
		char key[96];
		uint64_t window_start_ns;
		unsigned count, suppressed;
	} limits[64];
	unsigned next;
};

void ip_log_init(struct ip_log *l, bool to_stderr, int level);
/*
 * @fields: NULL, or a NULL-terminated list of "KEY=value" journal fields
 * (IRQPILOT_IRQ=45 ...). The message is one line.
 */
void ip_log_fields(struct ip_log *l, int prio, const char *const *fields, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define ip_log(l, prio, ...) ip_log_fields((l), (prio), NULL, __VA_ARGS__)
/*
 * True when a message about @key may be logged now: at most @burst per
 * minute per key; the next one allowed says how many were suppressed
 * (*suppressed).
 */
bool ip_log_ratelimit(struct ip_log *l, const char *key, uint64_t now_ns, unsigned burst,
		      unsigned *suppressed);

#endif
