/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_JSONPARSE_H
#define IRQPILOT_JSONPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "irqpilot/diag.h"

/*
 * A strict, bounded JSON (RFC 8259) reader for the replies of irqpilotd.
 * The input comes from another process, so it is treated as hostile:
 * nesting deeper than IP_JV_MAX_DEPTH, inputs over IP_JV_MAX_INPUT, raw
 * control characters in strings, bad escapes, lone surrogates, leading
 * zeros and trailing garbage are all refused with the line and column in
 * the diag. "\u0000" is refused too, so every string is also a C string.
 * Bytes of invalid UTF-8 inside strings become U+FFFD instead of failing
 * the document: they come from names any user can give a thread or
 * device, and one such name must not make a whole reply unreadable.
 * Numbers are kept as doubles. Objects keep their members in document order;
 * with duplicate keys, lookups return the first.
 */
#define IP_JV_MAX_DEPTH 64
#define IP_JV_MAX_INPUT (2u << 20)

enum ip_jv_type {
	IP_JV_NULL,
	IP_JV_BOOL,
	IP_JV_NUMBER,
	IP_JV_STRING,
	IP_JV_ARRAY,
	IP_JV_OBJECT,
};

struct ip_jv;

/* Parses exactly @len bytes of @buf (no NUL needed). Returns 0 or -EINVAL
 * (syntax), -E2BIG (input or nesting over the limits), -ENOMEM. */
int ip_jv_parse(const char *buf, size_t len, struct ip_jv **out, struct ip_diag *d);
void ip_jv_free(struct ip_jv *v);

/* All getters accept NULL and values of the wrong type, and then return
 * the stated fallback, so a lookup chain needs one check at the end. */
enum ip_jv_type ip_jv_type(const struct ip_jv *v); /* IP_JV_NULL for NULL */
const char *ip_jv_type_name(enum ip_jv_type t);
bool ip_jv_is(const struct ip_jv *v, enum ip_jv_type t); /* false for NULL */
/* Object member by key, or NULL. */
const struct ip_jv *ip_jv_get(const struct ip_jv *obj, const char *key);
/* Number of array elements or object members; 0 otherwise. */
size_t ip_jv_len(const struct ip_jv *v);
/* Array element, or object member value, by position; NULL out of range. */
const struct ip_jv *ip_jv_at(const struct ip_jv *v, size_t i);
/* Object member key by position; NULL out of range or not an object. */
const char *ip_jv_key(const struct ip_jv *obj, size_t i);
/* NULL when not a string. */
const char *ip_jv_str(const struct ip_jv *v);
double ip_jv_num(const struct ip_jv *v, double fallback);
bool ip_jv_bool(const struct ip_jv *v, bool fallback);
/* A number that is an integer in [min, max]: 0, else -EINVAL / -ERANGE. */
int ip_jv_int(const struct ip_jv *v, long long min, long long max, long long *out);

/* Length of the valid UTF-8 sequence at @s (at most @n bytes), 0 if it is
 * not one (overlong, surrogate, above U+10FFFF, truncated). */
size_t ip_utf8_char_len(const char *s, size_t n);

/* Writes @v as JSON, pretty-printed with 2-space indent when @indent, on
 * one line otherwise; no trailing newline. Integral numbers print as
 * integers, others with the fewest digits that read back the same. */
void ip_jv_print(FILE *f, const struct ip_jv *v, bool indent);

#endif
