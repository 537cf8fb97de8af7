// SPDX-License-Identifier: GPL-2.0-or-later
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "irqpilot/cpuset.h"

int cpuset_count(const ip_cpuset *s)
{
	int n = 0;

	/* Most words are 0 below 1,024 CPUs, and without -mpopcnt each
	 * popcount is a libgcc call. */
	for (size_t i = 0; i < IP_CPUSET_WORDS; i++)
		if (s->w[i])
			n += __builtin_popcountll(s->w[i]);
	return n;
}

bool cpuset_empty(const ip_cpuset *s)
{
	for (size_t i = 0; i < IP_CPUSET_WORDS; i++)
		if (s->w[i])
			return false;
	return true;
}

bool cpuset_equal(const ip_cpuset *a, const ip_cpuset *b)
{
	return memcmp(a->w, b->w, sizeof(a->w)) == 0;
}

bool cpuset_subset(const ip_cpuset *a, const ip_cpuset *b)
{
	for (size_t i = 0; i < IP_CPUSET_WORDS; i++)
		if (a->w[i] & ~b->w[i])
			return false;
	return true;
}

bool cpuset_intersects(const ip_cpuset *a, const ip_cpuset *b)
{
	for (size_t i = 0; i < IP_CPUSET_WORDS; i++)
		if (a->w[i] & b->w[i])
			return true;
	return false;
}

void cpuset_and(ip_cpuset *dst, const ip_cpuset *a, const ip_cpuset *b)
{
	for (size_t i = 0; i < IP_CPUSET_WORDS; i++)
		dst->w[i] = a->w[i] & b->w[i];
}

void cpuset_or(ip_cpuset *dst, const ip_cpuset *a, const ip_cpuset *b)
{
	for (size_t i = 0; i < IP_CPUSET_WORDS; i++)
		dst->w[i] = a->w[i] | b->w[i];
}

void cpuset_andnot(ip_cpuset *dst, const ip_cpuset *a, const ip_cpuset *b)
{
	for (size_t i = 0; i < IP_CPUSET_WORDS; i++)
		dst->w[i] = a->w[i] & ~b->w[i];
}

int cpuset_next_word(const ip_cpuset *s, int i)
{
	for (; i < (int)IP_CPUSET_WORDS; i++)
		if (s->w[i])
			return i * 64 + __builtin_ctzll(s->w[i]);
	return -1;
}

int cpuset_last(const ip_cpuset *s)
{
	for (int i = IP_CPUSET_WORDS - 1; i >= 0; i--)
		if (s->w[i])
			return i * 64 + 63 - __builtin_clzll(s->w[i]);
	return -1;
}

static int parse_cpu(const char **p, int *out)
{
	long v = 0;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	while (isdigit((unsigned char)**p)) {
		v = v * 10 + (**p - '0');
		if (v >= IP_CPU_MAX)
			return -ERANGE;
		(*p)++;
	}
	*out = (int)v;
	return 0;
}

static const char *skip_blank(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

int cpuset_parse_list(ip_cpuset *s, const char *text)
{
	const char *p = skip_blank(text);
	ip_cpuset r;
	int ret;

	cpuset_zero(&r);
	while (*p && *p != '\n') {
		int a, b, stride = 1;

		ret = parse_cpu(&p, &a);
		if (ret < 0)
			return ret;
		b = a;
		if (*p == '-') {
			p++;
			ret = parse_cpu(&p, &b);
			if (ret < 0)
				return ret;
			if (b < a)
				return -EINVAL;
			if (*p == ':') {
				p++;
				ret = parse_cpu(&p, &stride);
				if (ret < 0)
					return ret;
				if (stride == 0)
					return -EINVAL;
			}
		}
		for (int c = a; c <= b; c += stride)
			cpuset_set(&r, c);
		p = skip_blank(p);
		if (*p == ',') {
			p = skip_blank(p + 1);
			if (!*p || *p == '\n')
				return -EINVAL;
		} else if (*p && *p != '\n') {
			return -EINVAL;
		}
	}
	if (*p == '\n' && p[1] != '\0')
		return -EINVAL;
	*s = r;
	return 0;
}

int cpuset_parse_mask(ip_cpuset *s, const char *text)
{
	size_t len = strlen(text);
	ip_cpuset r;
	int bit = 0;

	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
		len--;
	if (len == 0)
		return -EINVAL;
	cpuset_zero(&r);
	/* Walk from the least significant nibble; commas separate 32-bit words. */
	for (size_t i = len; i-- > 0;) {
		char c = text[i];
		int v;

		if (c == ',')
			continue;
		if (!isxdigit((unsigned char)c))
			return -EINVAL;
		v = isdigit((unsigned char)c) ? c - '0' : (tolower((unsigned char)c) - 'a' + 10);
		for (int k = 0; k < 4; k++, bit++) {
			if (!(v & (1 << k)))
				continue;
			if (bit >= IP_CPU_MAX)
				return -ERANGE;
			cpuset_set(&r, bit);
		}
	}
	*s = r;
	return 0;
}

size_t cpuset_format_list(const ip_cpuset *s, char *buf, size_t size)
{
	size_t len = 0;
	bool first = true;

	if (size)
		buf[0] = '\0';
	for (int c = cpuset_first(s); c >= 0;) {
		int end = c;
		char tmp[32];
		int n;

		while (cpuset_test(s, end + 1))
			end++;
		if (end == c)
			n = snprintf(tmp, sizeof(tmp), "%s%d", first ? "" : ",", c);
		else
			n = snprintf(tmp, sizeof(tmp), "%s%d-%d", first ? "" : ",", c, end);
		if (len + n < size)
			memcpy(buf + len, tmp, n + 1);
		len += n;
		first = false;
		c = cpuset_next(s, end + 1);
	}
	return len;
}

const char *cpuset_str(const ip_cpuset *s)
{
	static __thread char ring[4][IP_CPULIST_MAX];
	static __thread unsigned idx;
	char *b = ring[idx++ % 4];

	cpuset_format_list(s, b, IP_CPULIST_MAX);
	return b;
}
