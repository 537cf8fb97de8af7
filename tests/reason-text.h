/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_TESTS_REASON_TEXT_H
#define IRQPILOT_TESTS_REASON_TEXT_H

/*
 * The line a user reads for a plan record (report.c's wording), for tests
 * that check what the daemon would log. REASON(rec) takes a pointer to any
 * record; a few buffers rotate so that one assertion may hold several.
 */
#include "irqpilot/report.h"

static inline char *reason_buf(void)
{
	static char bufs[8][IP_REASON_MAX];
	static unsigned next;

	return bufs[next++ % 8];
}

static inline const char *reason_move(const struct ip_move *r) { return r ? ip_report_move_line(reason_buf(), IP_REASON_MAX, r) : ""; }
static inline const char *reason_thread(const struct ip_thread_action *r) { return r ? ip_report_thread_line(reason_buf(), IP_REASON_MAX, r) : ""; }
static inline const char *reason_kept(const struct ip_kept *r) { return r ? ip_report_kept_line(reason_buf(), IP_REASON_MAX, r) : ""; }
static inline const char *reason_rq(const struct ip_rq_action *r) { return r ? ip_report_rq_line(reason_buf(), IP_REASON_MAX, r) : ""; }
static inline const char *reason_cq(const struct ip_cq_action *r) { return r ? ip_report_cq_line(reason_buf(), IP_REASON_MAX, r) : ""; }
static inline const char *reason_note(const struct ip_note *r) { return r ? ip_report_note_line(reason_buf(), IP_REASON_MAX, r) : ""; }

#define REASON(rec)                                                        \
	_Generic((rec),                                                    \
		struct ip_move *: reason_move,                             \
		const struct ip_move *: reason_move,                       \
		struct ip_thread_action *: reason_thread,                  \
		const struct ip_thread_action *: reason_thread,            \
		struct ip_kept *: reason_kept,                             \
		const struct ip_kept *: reason_kept,                       \
		struct ip_rq_action *: reason_rq,                          \
		const struct ip_rq_action *: reason_rq,                    \
		struct ip_cq_action *: reason_cq,                          \
		const struct ip_cq_action *: reason_cq,                    \
		struct ip_note *: reason_note,                             \
		const struct ip_note *: reason_note)(rec)

#endif
