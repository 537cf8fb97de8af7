/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_REPORT_H
#define IRQPILOT_REPORT_H

#include <stdio.h>

#include "irqpilot/apply.h"
#include "irqpilot/json.h"
#include "irqpilot/metrics.h"
#include "irqpilot/model.h"
#include "irqpilot/policy.h"

/* The version of the JSON document; bumped on incompatible changes. */
#define IP_JSON_SCHEMA 2 /* 2: reasons as code + numbers, notes as objects */

/* The "model" object of the JSON document (see irqpilotd(8), JSON OUTPUT). */
void ip_report_model_json(struct ip_json *j, const char *key, const struct ip_model *m,
			  const char *submit_source);
/* Parts of the model object, for the control socket's replies. */
void ip_report_json_cpus(struct ip_json *j, const struct ip_model *m); /* "cpus", "domains" */
void ip_report_json_devices(struct ip_json *j, const struct ip_model *m);
void ip_report_json_irqs(struct ip_json *j, const struct ip_model *m);
/* "irq_threads", then "completion_threads" (irqpilot_cq). */
void ip_report_json_threads(struct ip_json *j, const struct ip_model *m);
void ip_report_json_cq(struct ip_json *j, const struct ip_model *m);
/* Submissions/s of the I/O that IRQ @irq completes, per domain
 * (nr_domains entries); returns the busiest domain or -1. */
int ip_report_submit_by_domain(const struct ip_model *m, unsigned irq, double *by_domain, double *total);
/* Completion locality of IRQ @irq: the share of its submissions whose
 * interrupt fired in the submitter's domain, 0..1; -1 when unknown. */
double ip_report_locality(const struct ip_model *m, unsigned irq);

/*
 * How the device's vectors were found: "devicetree (tried msi_irqs,
 * devicetree)", or, for a device ip_blockdev_unsteerable() names, the one
 * warning that says which device, which routes were tried, and what to
 * send: "sda (exynos-ufshc on 14700000.ufs): no IRQ vector found ...".
 * Returns @buf.
 */
const char *ip_report_discovery(const struct ip_blockdev *b, char *buf, size_t size);
/* The warnings of every unsteerable device, one per line, each starting
 * with @indent; nothing when there are none. */
void ip_report_unsteerable_text(FILE *f, const struct ip_storage *s, const char *indent);

/* ---- reasons: the only place a plan record becomes words --------------- */

/* The stable name of a code ("submitters-elsewhere", "dwell"), JSON "code". */
const char *ip_reason_code(enum ip_reason r);
/* The MESSAGE_ID (log.h's IP_MESSAGE_*) a record of this code is logged
 * with, or NULL. */
const char *ip_reason_message_id(enum ip_reason r);
/* The reason alone, in words: "managed by the kernel". Returns @buf. */
const char *ip_report_why(char *buf, size_t size, const struct ip_why *w);
/* A scheduling policy (SCHED_*) as replies name it: "fifo", "rr", "other". */
const char *ip_report_sched_name(int policy);
/* "code", "reason" and the numbers behind it, into the current object. */
void ip_report_why_json(struct ip_json *j, const struct ip_why *w);
/* One record as one line, as the log and the text plan say it:
 * "moved 37 ufshcd 0 → 6: all of sda submissions on ...". Return @buf. */
const char *ip_report_move_line(char *buf, size_t size, const struct ip_move *m);
const char *ip_report_thread_line(char *buf, size_t size, const struct ip_thread_action *t);
const char *ip_report_kept_line(char *buf, size_t size, const struct ip_kept *k);
const char *ip_report_rq_line(char *buf, size_t size, const struct ip_rq_action *r);
const char *ip_report_cq_line(char *buf, size_t size, const struct ip_cq_action *a);
const char *ip_report_note_line(char *buf, size_t size, const struct ip_note *n);
/* What act did with one action, as the log, --restore and the text plan
 * say it: "wrote 7 to proc/irq/45/smp_affinity_list". Returns @buf. */
const char *ip_report_apply_line(char *buf, size_t size, const struct ip_apply_result *r);

/*
 * A record as one journal entry: its MESSAGE_ID (its reason code's, see
 * systemd/irqpilot.catalog; NULL for a code that has none), the message,
 * and "KEY=value" fields in fields[], NULL-terminated, ready for
 * ip_log_id(): the record's (IRQPILOT_IRQ, IRQPILOT_DEVICE, IRQPILOT_FROM,
 * IRQPILOT_TO, IRQPILOT_QUEUE, IRQPILOT_PID), IRQPILOT_REASON=code,
 * IRQPILOT_DETAIL=code, and the numbers behind the reason under the names
 * of its JSON keys (IRQPILOT_SHARE, IRQPILOT_THRESHOLD, IRQPILOT_CPU ...),
 * which the catalog's texts quote.
 */
#define IP_JOURNAL_FIELDS 32
struct ip_journal {
	const char *message_id;
	char message[IP_REASON_MAX];
	const char *fields[IP_JOURNAL_FIELDS + 1];
	int nr;
	size_t used;
	char buf[5 * IP_CPULIST_MAX + 1024]; /* up to five CPU lists */
};
void ip_report_move_journal(struct ip_journal *jf, const struct ip_move *m);
void ip_report_thread_journal(struct ip_journal *jf, const struct ip_thread_action *t);
void ip_report_kept_journal(struct ip_journal *jf, const struct ip_kept *k);
void ip_report_rq_journal(struct ip_journal *jf, const struct ip_rq_action *r);
void ip_report_cq_journal(struct ip_journal *jf, const struct ip_cq_action *a);
void ip_report_note_journal(struct ip_journal *jf, const struct ip_note *n);
/* What act did, as a journal entry: IRQPILOT_ACTION (the JSON results'
 * "what"), IRQPILOT_OUTCOME, IRQPILOT_OUTCOME_DETAIL, IRQPILOT_ERRNO (its
 * name), IRQPILOT_IRQ, _PID, _DEVICE and _TO (the CPUs written); the
 * catalog's MESSAGE_ID of a restore or of a vector found managed. */
void ip_report_apply_journal(struct ip_journal *jf, const struct ip_apply_result *r);

/* The human-readable summary of --oneshot --dry-run. */
void ip_report_model_text(FILE *f, const struct ip_model *m, const char *submit_source);

/*
 * The plan's keys of the JSON document, written into the enclosing object:
 * "moves", "threads", "kept", "rq_affinity", "attach", "detach", "notes"
 * and "results".
 * @res may be NULL.
 */
void ip_report_plan_json(struct ip_json *j, const struct ip_plan *p, const struct ip_apply_results *res);
/* The plan, one line a decision, and what applying it did. */
void ip_report_plan_text(FILE *f, const struct ip_plan *p, const struct ip_apply_results *res,
			 bool dry_run);

/*
 * Whether all written to @f reached it: 0, or the errno (negative) of the
 * flush or -EIO for an earlier write that failed. A report that went
 * nowhere (a full disk, a closed descriptor) is its program's failure:
 * `irqpilotd --replay --json >file` and `irqctl -j show irqs >file` on a
 * full disk exited 0 with an empty file.
 */
int ip_report_flush(FILE *f);

/* ---- metrics ------------------------------------------------------------ */

/*
 * @mx in the Prometheus text exposition format 0.0.4, the text of irqctl
 * metrics and of [daemon] metrics_textfile: a HELP and a TYPE line per
 * family, counters named *_total, seconds and ratios 0..1, label values
 * escaped (ip_report_prom_escape).
 */
void ip_report_metrics_text(FILE *f, const struct ip_metrics *mx);
/* A label value as the format writes it between its double quotes:
 * backslash, double quote and newline as \\, \" and \n. Returns @buf,
 * which is cut at @size (at a whole escape). */
const char *ip_report_prom_escape(const char *s, char *buf, size_t size);

#endif
