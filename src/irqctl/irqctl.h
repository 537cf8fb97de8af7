/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQCTL_H
#define IRQCTL_H

#include <stdbool.h>
#include <stdio.h>

#include <json-c/json.h>

#include "irqpilot/protocol.h"

enum {
	EXIT_OK = 0,
	EXIT_FAILED = 1,      /* the daemon refused or failed the request */
	EXIT_USAGE = 2,
	EXIT_UNREACHABLE = 3, /* not running, socket unreachable, no answer */
	EXIT_DENIED = 4,
};

struct ctl {
	const char *socket;
	bool json, no_pager, once, once_set, interval_set;
	double interval_s;
};

/* irqctl --help, its command lines made from the protocol's command table. */
void ctl_help(FILE *f);
/* Prints "irqctl: MESSAGE" and the hint to try help; returns EXIT_USAGE. */
int ctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Builds the request from the command words @argv (the command first).
 * Returns EXIT_OK, -1 when the command is "help", or EXIT_USAGE with the
 * message printed on stderr.
 */
int ctl_build_request(const struct ctl *c, int argc, char **argv, struct ip_request *r);

/* A decoded reply; @root owns every pointer in it. */
struct ctl_reply {
	json_object *root;
	bool ok;
	int err;		/* positive errno when !ok */
	const char *error;	/* !ok */
	const char *text;	/* ok, from a daemon that still sends text */
	json_object *data;	/* ok: an object, or NULL */
};

/* Parses and checks the envelope {"v":1,"ok":...}. Returns 0 or -EPROTO
 * (@d says why). */
int ctl_reply_parse(const char *buf, size_t len, struct ctl_reply *out, struct ip_diag *d);
void ctl_reply_free(struct ctl_reply *r);
/* The text view of the data of an ok reply to @r. Fields it does not know
 * are printed too where a record may gain them (explain). */
void ctl_render(FILE *f, const struct ip_request *r, json_object *data);
/* @v as JSON with a 2-space indent and a newline. */
void ctl_print_json(FILE *f, json_object *v);

#endif
