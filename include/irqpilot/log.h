/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_LOG_H
#define IRQPILOT_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

/*
 * irqpilotd's logging: the journal with structured fields, and stderr in
 * the foreground. Errors that repeat are rate-limited per object. Where
 * stderr is itself the journal (a systemd service: $JOURNAL_STREAM names
 * it), a message goes to the journal once, with its fields.
 */
struct ip_log {
	bool to_stderr;
	bool to_journal;
	bool stderr_is_journal;
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
 * MESSAGE_ID of each kind of event that systemd/irqpilot.catalog explains
 * (journalctl -x, journalctl MESSAGE_ID=...). An ID is forever: a new kind
 * of event gets a new one (systemd-id128 new), never a reused one;
 * tests/check-docs.sh checks that each is in the catalog.
 */
#define IP_MESSAGE_MOVE "0115d0df1e6449cbb0064e255218dfdf"
#define IP_MESSAGE_MANAGED "cb0053020118441fb360b3b0147a9666"
#define IP_MESSAGE_STALL "2009e34d5b1f49b2badc948e004de25c"
#define IP_MESSAGE_REFUSAL "522d9fca7ff74cbea138520d8aeda3b3"
#define IP_MESSAGE_RESTORE "5c8ae501a221467781814d5dfb1d4bcd"

/*
 * @message_id: NULL or one of IP_MESSAGE_*. @fields: NULL, or a
 * NULL-terminated list of "KEY=value" journal fields (IRQPILOT_IRQ=45 ...).
 * @file, @line, @func: the caller, for CODE_FILE, CODE_LINE and CODE_FUNC;
 * the macros below pass them, as systemd's log_*() do. The message is one
 * line.
 */
void ip_log_at(struct ip_log *l, bool tell, int prio, const char *message_id,
	       const char *const *fields, const char *file, int line, const char *func,
	       const char *fmt, ...) __attribute__((format(printf, 9, 10)));
#define ip_log_id(l, prio, message_id, fields, ...) \
	ip_log_at((l), false, (prio), (message_id), (fields), __FILE__, __LINE__, __func__, \
		  __VA_ARGS__)
/*
 * What the person who started irqpilotd must read (why it refused to
 * start): on stderr also without --foreground, and in the journal; once
 * where stderr is the journal.
 */
#define ip_log_tell(l, prio, message_id, ...) \
	ip_log_at((l), true, (prio), (message_id), NULL, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define ip_log_fields(l, prio, fields, ...) ip_log_id((l), (prio), NULL, (fields), __VA_ARGS__)
#define ip_log(l, prio, ...) ip_log_id((l), (prio), NULL, NULL, __VA_ARGS__)
/*
 * True when a message about @key may be logged now: at most @burst per
 * minute per key; the next one allowed says how many were suppressed
 * (*suppressed).
 */
bool ip_log_ratelimit(struct ip_log *l, const char *key, uint64_t now_ns, unsigned burst,
		      unsigned *suppressed);

#endif
