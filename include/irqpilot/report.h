/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_REPORT_H
#define IRQPILOT_REPORT_H

#include <stdio.h>

#include "irqpilot/json.h"
#include "irqpilot/model.h"

/* The version of the JSON document; bumped on incompatible changes. */
#define IP_JSON_SCHEMA 1

/* The "model" object of the JSON document (see irqpilotd(8), JSON OUTPUT). */
void ip_report_model_json(struct ip_json *j, const char *key, const struct ip_model *m,
			  const char *submit_source);
/* The human-readable summary of --oneshot --dry-run. */
void ip_report_model_text(FILE *f, const struct ip_model *m, const char *submit_source);

#endif
