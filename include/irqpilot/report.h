/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_REPORT_H
#define IRQPILOT_REPORT_H

#include <stdio.h>

#include "irqpilot/apply.h"
#include "irqpilot/json.h"
#include "irqpilot/model.h"
#include "irqpilot/policy.h"

/* The version of the JSON document; bumped on incompatible changes. */
#define IP_JSON_SCHEMA 1

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

#endif
