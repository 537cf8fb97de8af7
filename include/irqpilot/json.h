/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_JSON_H
#define IRQPILOT_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "irqpilot/cpuset.h"

/*
 * A minimal streaming JSON writer: enough for the model, the plan and the
 * control protocol's replies. @key is NULL for array elements.
 */
#define IP_JSON_MAX_DEPTH 32

struct ip_json {
	FILE *f;
	int depth;
	bool first[IP_JSON_MAX_DEPTH];
};

void ip_json_init(struct ip_json *j, FILE *f);
void ip_json_object_begin(struct ip_json *j, const char *key);
void ip_json_object_end(struct ip_json *j);
void ip_json_array_begin(struct ip_json *j, const char *key);
void ip_json_array_end(struct ip_json *j);
void ip_json_string(struct ip_json *j, const char *key, const char *value);
void ip_json_int(struct ip_json *j, const char *key, long long value);
void ip_json_uint(struct ip_json *j, const char *key, unsigned long long value);
void ip_json_double(struct ip_json *j, const char *key, double value);
void ip_json_bool(struct ip_json *j, const char *key, bool value);
void ip_json_null(struct ip_json *j, const char *key);
/* A CPU set in the kernel's list syntax, "0-3,6". */
void ip_json_cpuset(struct ip_json *j, const char *key, const ip_cpuset *s);
/* Writes a JSON string literal with escapes. */
void ip_json_write_escaped(FILE *f, const char *s);
/* Length of the valid UTF-8 sequence at @p (1 for an ASCII byte), or 0 if
 * it is none: a stray or missing continuation byte, an overlong form, a
 * surrogate, past U+10FFFF. Stops at a NUL, which is no continuation. */
int ip_utf8_len(const unsigned char *p);

#endif
