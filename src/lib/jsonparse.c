// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/json.h"
#include "irqpilot/jsonparse.h"
#include "irqpilot/macro.h"

struct ip_jv {
	enum ip_jv_type type;
	union {
		bool b;
		double num;
		char *str;
		struct {
			struct ip_jv **items;
			char **keys; /* objects only */
			size_t n, cap;
		} c;
	};
};

struct parser {
	const unsigned char *p;
	size_t len, pos;
	int depth;
	struct ip_diag *d;
};

/* A JSON number longer than this is refused rather than copied around. */
#define NUMBER_MAX 320

static int fail(struct parser *ps, int err, const char *what)
{
	size_t line = 1, col = 1;

	/* Positions are only needed on failure, so count lines here. */
	for (size_t i = 0; i < ps->pos && i < ps->len; i++) {
		if (ps->p[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	return ip_diag_set(ps->d, err, "JSON line %zu column %zu: %s", line, col, what);
}

static void skip_ws(struct parser *ps)
{
	while (ps->pos < ps->len) {
		unsigned char c = ps->p[ps->pos];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		ps->pos++;
	}
}

static int peek(struct parser *ps)
{
	return ps->pos < ps->len ? ps->p[ps->pos] : -1;
}

static struct ip_jv *node(enum ip_jv_type t)
{
	struct ip_jv *v = calloc(1, sizeof(*v));

	if (v)
		v->type = t;
	return v;
}

void ip_jv_free(struct ip_jv *v)
{
	if (!v)
		return;
	if (v->type == IP_JV_STRING) {
		free(v->str);
	} else if (v->type == IP_JV_ARRAY || v->type == IP_JV_OBJECT) {
		for (size_t i = 0; i < v->c.n; i++) {
			ip_jv_free(v->c.items[i]);
			if (v->c.keys)
				free(v->c.keys[i]);
		}
		free(v->c.items);
		free(v->c.keys);
	}
	free(v);
}

static int literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);

	for (size_t i = 0; i < n; i++, ps->pos++) {
		if (ps->pos >= ps->len)
			return fail(ps, -EINVAL, "unexpected end of input");
		if (ps->p[ps->pos] != (unsigned char)word[i])
			return fail(ps, -EINVAL, "unexpected character");
	}
	return 0;
}

size_t ip_utf8_char_len(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned char c;
	size_t k;
	uint32_t cp;

	if (n == 0)
		return 0;
	c = s[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		k = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		k = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		k = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < k)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return k;
}

static int hex4(struct parser *ps, uint32_t *out)
{
	uint32_t v = 0;

	if (ps->len - ps->pos < 4)
		return fail(ps, -EINVAL, "truncated \\u escape");
	for (int i = 0; i < 4; i++) {
		unsigned char c = ps->p[ps->pos + i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return fail(ps, -EINVAL, "bad hex digit in \\u escape");
	}
	ps->pos += 4;
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static int escape(struct parser *ps, char *o, size_t *k)
{
	uint32_t cp, lo;
	int r;

	if (ps->pos >= ps->len)
		return fail(ps, -EINVAL, "truncated escape");
	switch (ps->p[ps->pos++]) {
	case '"':
		o[(*k)++] = '"';
		return 0;
	case '\\':
		o[(*k)++] = '\\';
		return 0;
	case '/':
		o[(*k)++] = '/';
		return 0;
	case 'b':
		o[(*k)++] = '\b';
		return 0;
	case 'f':
		o[(*k)++] = '\f';
		return 0;
	case 'n':
		o[(*k)++] = '\n';
		return 0;
	case 'r':
		o[(*k)++] = '\r';
		return 0;
	case 't':
		o[(*k)++] = '\t';
		return 0;
	case 'u':
		break;
	default:
		ps->pos--;
		return fail(ps, -EINVAL, "unknown escape");
	}
	r = hex4(ps, &cp);
	if (r < 0)
		return r;
	if (cp == 0)
		return fail(ps, -EINVAL, "\\u0000 is not accepted");
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return fail(ps, -EINVAL, "lone low surrogate in \\u escape");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (ps->len - ps->pos < 2 || ps->p[ps->pos] != '\\' || ps->p[ps->pos + 1] != 'u')
			return fail(ps, -EINVAL, "high surrogate without a low surrogate");
		ps->pos += 2;
		r = hex4(ps, &lo);
		if (r < 0)
			return r;
		if (lo < 0xdc00 || lo > 0xdfff)
			return fail(ps, -EINVAL, "high surrogate without a low surrogate");
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	*k += put_utf8(o + *k, cp);
	return 0;
}

static int parse_string(struct parser *ps, char **out)
{
	size_t start, end, k = 0;
	_cleanup_free_ char *o = NULL;
	int r;

	ps->pos++; /* the opening quote */
	start = ps->pos;
	/* Find the closing quote first, so one allocation is enough. */
	for (end = start; end < ps->len && ps->p[end] != '"'; end++)
		if (ps->p[end] == '\\')
			end++;
	if (end >= ps->len) {
		ps->pos = ps->len;
		return fail(ps, -EINVAL, "unterminated string");
	}
	/* Each invalid byte may become a 3-byte U+FFFD. */
	o = malloc(3 * (end - start) + 1);
	if (!o)
		return -ENOMEM;
	while (ps->pos < end) {
		unsigned char c = ps->p[ps->pos];
		size_t n;

		if (c == '\\') {
			ps->pos++;
			r = escape(ps, o, &k);
			if (r < 0)
				return r;
			continue;
		}
		if (c < 0x20)
			return fail(ps, -EINVAL, "control character in string");
		n = ip_utf8_char_len((const char *)ps->p + ps->pos, end - ps->pos);
		if (n == 0) {
			k += put_utf8(o + k, 0xfffd);
			ps->pos++;
			continue;
		}
		memcpy(o + k, ps->p + ps->pos, n);
		k += n;
		ps->pos += n;
	}
	ps->pos = end + 1;
	o[k] = '\0';
	*out = TAKE_PTR(o);
	return 0;
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int parse_number(struct parser *ps, double *out)
{
	size_t start = ps->pos;
	char tmp[NUMBER_MAX + 1];
	char *end;
	double v;

	if (peek(ps) == '-')
		ps->pos++;
	if (peek(ps) == '0') {
		ps->pos++;
		if (is_digit(peek(ps)))
			return fail(ps, -EINVAL, "leading zero in number");
	} else if (is_digit(peek(ps))) {
		while (is_digit(peek(ps)))
			ps->pos++;
	} else {
		return fail(ps, -EINVAL, "bad number");
	}
	if (peek(ps) == '.') {
		ps->pos++;
		if (!is_digit(peek(ps)))
			return fail(ps, -EINVAL, "digit expected after decimal point");
		while (is_digit(peek(ps)))
			ps->pos++;
	}
	if (peek(ps) == 'e' || peek(ps) == 'E') {
		ps->pos++;
		if (peek(ps) == '+' || peek(ps) == '-')
			ps->pos++;
		if (!is_digit(peek(ps)))
			return fail(ps, -EINVAL, "digit expected in exponent");
		while (is_digit(peek(ps)))
			ps->pos++;
	}
	if (ps->pos - start > NUMBER_MAX)
		return fail(ps, -EINVAL, "number too long");
	memcpy(tmp, ps->p + start, ps->pos - start);
	tmp[ps->pos - start] = '\0';
	errno = 0;
	v = strtod(tmp, &end);
	if (*end != '\0')
		return fail(ps, -EINVAL, "bad number");
	if (!isfinite(v))
		return fail(ps, -ERANGE, "number out of range");
	*out = v;
	return 0;
}

static int parse_value(struct parser *ps, struct ip_jv **out);

static int push(struct ip_jv *c, struct ip_jv *item, char *key)
{
	if (c->c.n == c->c.cap) {
		size_t cap = c->c.cap ? c->c.cap * 2 : 4;
		struct ip_jv **items = realloc(c->c.items, cap * sizeof(*items));

		if (!items)
			return -ENOMEM;
		c->c.items = items;
		if (c->type == IP_JV_OBJECT) {
			char **keys = realloc(c->c.keys, cap * sizeof(*keys));

			if (!keys)
				return -ENOMEM;
			c->c.keys = keys;
		}
		c->c.cap = cap;
	}
	c->c.items[c->c.n] = item;
	if (c->type == IP_JV_OBJECT)
		c->c.keys[c->c.n] = key;
	c->c.n++;
	return 0;
}

static int parse_container(struct parser *ps, struct ip_jv *c)
{
	bool obj = c->type == IP_JV_OBJECT;
	char close = obj ? '}' : ']';
	int r;

	if (++ps->depth > IP_JV_MAX_DEPTH)
		return fail(ps, -E2BIG, "nested deeper than 64 levels");
	ps->pos++;
	skip_ws(ps);
	if (peek(ps) == close) {
		ps->pos++;
		ps->depth--;
		return 0;
	}
	for (;;) {
		_cleanup_free_ char *key = NULL;
		struct ip_jv *item = NULL;

		skip_ws(ps);
		if (obj) {
			if (peek(ps) != '"')
				return fail(ps, -EINVAL, "object key expected");
			r = parse_string(ps, &key);
			if (r < 0)
				return r;
			skip_ws(ps);
			if (peek(ps) != ':')
				return fail(ps, -EINVAL, "':' expected after object key");
			ps->pos++;
		}
		r = parse_value(ps, &item);
		if (r < 0)
			return r;
		r = push(c, item, key);
		if (r < 0) {
			ip_jv_free(item);
			return r;
		}
		key = NULL; /* owned by c now */
		skip_ws(ps);
		if (peek(ps) == ',') {
			ps->pos++;
			continue;
		}
		if (peek(ps) == close) {
			ps->pos++;
			ps->depth--;
			return 0;
		}
		return fail(ps, -EINVAL, obj ? "',' or '}' expected" : "',' or ']' expected");
	}
}

static int parse_value(struct parser *ps, struct ip_jv **out)
{
	struct ip_jv *v = NULL;
	int r = 0, c;

	skip_ws(ps);
	c = peek(ps);
	switch (c) {
	case -1:
		return fail(ps, -EINVAL, "unexpected end of input");
	case '{':
	case '[':
		v = node(c == '{' ? IP_JV_OBJECT : IP_JV_ARRAY);
		if (!v)
			return -ENOMEM;
		r = parse_container(ps, v);
		break;
	case '"':
		v = node(IP_JV_STRING);
		if (!v)
			return -ENOMEM;
		r = parse_string(ps, &v->str);
		break;
	case 't':
	case 'f':
		v = node(IP_JV_BOOL);
		if (!v)
			return -ENOMEM;
		v->b = c == 't';
		r = literal(ps, c == 't' ? "true" : "false");
		break;
	case 'n':
		v = node(IP_JV_NULL);
		if (!v)
			return -ENOMEM;
		r = literal(ps, "null");
		break;
	default:
		if (c != '-' && !is_digit(c))
			return fail(ps, -EINVAL, "unexpected character");
		v = node(IP_JV_NUMBER);
		if (!v)
			return -ENOMEM;
		r = parse_number(ps, &v->num);
	}
	if (r < 0) {
		ip_jv_free(v);
		return r;
	}
	*out = v;
	return 0;
}

int ip_jv_parse(const char *buf, size_t len, struct ip_jv **out, struct ip_diag *d)
{
	struct parser ps = { .p = (const unsigned char *)buf, .len = len, .d = d };
	struct ip_jv *v = NULL;
	int r;

	*out = NULL;
	if (len > IP_JV_MAX_INPUT)
		return ip_diag_set(d, -E2BIG,
				   "JSON document of %zu bytes exceeds the %u byte limit", len,
				   IP_JV_MAX_INPUT);
	if (!buf && len)
		return ip_diag_set(d, -EINVAL, "no JSON input");
	r = parse_value(&ps, &v);
	if (r < 0)
		return r;
	skip_ws(&ps);
	if (ps.pos != ps.len) {
		ip_jv_free(v);
		return fail(&ps, -EINVAL, "trailing characters after the JSON value");
	}
	*out = v;
	return 0;
}

enum ip_jv_type ip_jv_type(const struct ip_jv *v)
{
	return v ? v->type : IP_JV_NULL;
}

const char *ip_jv_type_name(enum ip_jv_type t)
{
	static const char *const names[] = {
		[IP_JV_NULL] = "null",
		[IP_JV_BOOL] = "boolean",
		[IP_JV_NUMBER] = "number",
		[IP_JV_STRING] = "string",
		[IP_JV_ARRAY] = "array",
		[IP_JV_OBJECT] = "object",
	};

	return (unsigned)t < ARRAY_SIZE(names) ? names[t] : "?";
}

bool ip_jv_is(const struct ip_jv *v, enum ip_jv_type t)
{
	return v && v->type == t;
}

const struct ip_jv *ip_jv_get(const struct ip_jv *obj, const char *key)
{
	if (!ip_jv_is(obj, IP_JV_OBJECT) || !key)
		return NULL;
	for (size_t i = 0; i < obj->c.n; i++)
		if (strcmp(obj->c.keys[i], key) == 0)
			return obj->c.items[i];
	return NULL;
}

size_t ip_jv_len(const struct ip_jv *v)
{
	return v && (v->type == IP_JV_ARRAY || v->type == IP_JV_OBJECT) ? v->c.n : 0;
}

const struct ip_jv *ip_jv_at(const struct ip_jv *v, size_t i)
{
	return i < ip_jv_len(v) ? v->c.items[i] : NULL;
}

const char *ip_jv_key(const struct ip_jv *obj, size_t i)
{
	return ip_jv_is(obj, IP_JV_OBJECT) && i < obj->c.n ? obj->c.keys[i] : NULL;
}

const char *ip_jv_str(const struct ip_jv *v)
{
	return ip_jv_is(v, IP_JV_STRING) ? v->str : NULL;
}

double ip_jv_num(const struct ip_jv *v, double fallback)
{
	return ip_jv_is(v, IP_JV_NUMBER) ? v->num : fallback;
}

bool ip_jv_bool(const struct ip_jv *v, bool fallback)
{
	return ip_jv_is(v, IP_JV_BOOL) ? v->b : fallback;
}

int ip_jv_int(const struct ip_jv *v, long long min, long long max, long long *out)
{
	double x;

	if (!ip_jv_is(v, IP_JV_NUMBER))
		return -EINVAL;
	x = v->num;
	if (x != floor(x))
		return -EINVAL;
	/* Compare as doubles first: converting an out-of-range double to
	 * long long is undefined. */
	if (x < (double)min || x > (double)max || x >= 0x1p63 || x < -0x1p63)
		return -ERANGE;
	if ((long long)x < min || (long long)x > max)
		return -ERANGE;
	*out = (long long)x;
	return 0;
}

static void print_number(FILE *f, double x)
{
	char buf[64];

	if (x == floor(x) && fabs(x) < 0x1p53) {
		fprintf(f, "%.0f", x);
		return;
	}
	snprintf(buf, sizeof(buf), "%.15g", x);
	if (strtod(buf, NULL) != x)
		snprintf(buf, sizeof(buf), "%.17g", x);
	fputs(buf, f);
}

static void newline(FILE *f, bool indent, int level)
{
	if (!indent)
		return;
	fputc('\n', f);
	for (int i = 0; i < level; i++)
		fputs("  ", f);
}

static void print_value(FILE *f, const struct ip_jv *v, bool indent, int level)
{
	bool obj;

	switch (ip_jv_type(v)) {
	case IP_JV_NULL:
		fputs("null", f);
		return;
	case IP_JV_BOOL:
		fputs(v->b ? "true" : "false", f);
		return;
	case IP_JV_NUMBER:
		print_number(f, v->num);
		return;
	case IP_JV_STRING:
		ip_json_write_escaped(f, v->str);
		return;
	case IP_JV_ARRAY:
	case IP_JV_OBJECT:
		break;
	}
	obj = v->type == IP_JV_OBJECT;
	fputc(obj ? '{' : '[', f);
	for (size_t i = 0; i < v->c.n; i++) {
		if (i)
			fputc(',', f);
		newline(f, indent, level + 1);
		if (obj) {
			ip_json_write_escaped(f, v->c.keys[i]);
			fputs(indent ? ": " : ":", f);
		}
		print_value(f, v->c.items[i], indent, level + 1);
	}
	if (v->c.n)
		newline(f, indent, level);
	fputc(obj ? '}' : ']', f);
}

void ip_jv_print(FILE *f, const struct ip_jv *v, bool indent)
{
	print_value(f, v, indent, 0);
}
