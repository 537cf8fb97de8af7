// SPDX-License-Identifier: GPL-2.0-or-later
#include <math.h>
#include <stdio.h>

#include "irqpilot/json.h"

void ip_json_init(struct ip_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->first[0] = true;
}

int ip_utf8_len(const unsigned char *p)
{
	int n;
	unsigned cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	for (int i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates and values past U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void ip_json_write_escaped(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; p && *p;) {
		int n;

		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\b':
			fputs("\\b", f);
			break;
		case '\f':
			fputs("\\f", f);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				fprintf(f, "\\u%04x", *p);
				break;
			}
			/* Names from /proc are bytes, not always UTF-8: a broken
			 * sequence becomes U+FFFD so every JSON reader accepts
			 * the document. */
			n = ip_utf8_len(p);
			if (!n) {
				fputs("\\ufffd", f);
				break;
			}
			/* C1 controls (U+0085 NEL, U+009B CSI) and U+2028/U+2029
			 * are valid in a JSON string, but a reader that splits
			 * text into lines (Python's splitlines()) cut the one
			 * document a line of --json at them, and a terminal
			 * takes CSI for a command: they go out escaped. */
			if ((n == 2 && p[0] == 0xc2 && p[1] < 0xa0) ||
			    (n == 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9))) {
				fprintf(f, "\\u%04x", n == 2 ? p[1] : 0x2000 | (p[2] - 0x80));
				p += n;
				continue;
			}
			fwrite(p, 1, n, f);
			p += n;
			continue;
		}
		p++;
	}
	fputc('"', f);
}

static void sep(struct ip_json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
	if (key) {
		ip_json_write_escaped(j->f, key);
		fputc(':', j->f);
	}
}

static void open_(struct ip_json *j, const char *key, char c)
{
	sep(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < IP_JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

static void close_(struct ip_json *j, char c)
{
	if (j->depth > 0)
		j->depth--;
	fputc(c, j->f);
}

void ip_json_object_begin(struct ip_json *j, const char *key)
{
	open_(j, key, '{');
}

void ip_json_object_end(struct ip_json *j)
{
	close_(j, '}');
}

void ip_json_array_begin(struct ip_json *j, const char *key)
{
	open_(j, key, '[');
}

void ip_json_array_end(struct ip_json *j)
{
	close_(j, ']');
}

void ip_json_string(struct ip_json *j, const char *key, const char *value)
{
	sep(j, key);
	if (value)
		ip_json_write_escaped(j->f, value);
	else
		fputs("null", j->f);
}

void ip_json_int(struct ip_json *j, const char *key, long long value)
{
	sep(j, key);
	fprintf(j->f, "%lld", value);
}

void ip_json_uint(struct ip_json *j, const char *key, unsigned long long value)
{
	sep(j, key);
	fprintf(j->f, "%llu", value);
}

void ip_json_double(struct ip_json *j, const char *key, double value)
{
	sep(j, key);
	if (isfinite(value))
		fprintf(j->f, "%.6g", value);
	else
		fputs("null", j->f);
}

void ip_json_bool(struct ip_json *j, const char *key, bool value)
{
	sep(j, key);
	fputs(value ? "true" : "false", j->f);
}

void ip_json_null(struct ip_json *j, const char *key)
{
	sep(j, key);
	fputs("null", j->f);
}

void ip_json_cpuset(struct ip_json *j, const char *key, const ip_cpuset *s)
{
	ip_json_string(j, key, cpuset_str(s));
}
