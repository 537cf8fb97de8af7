/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_SORTED_H
#define IRQPILOT_SORTED_H

/*
 * Arrays of records sorted by an unsigned key (an IRQ number): the model's
 * lines, the sampler's caches, the policy's history, the originals. One
 * search for all of them, so that each is not a loop of its own.
 */

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The first of @n records of @size bytes, sorted by the unsigned at @off,
 * whose key is not below @key: where @key is, or where it would go. */
static inline size_t ip_lower_bound(const void *base, size_t n, size_t size, size_t off,
				    unsigned key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		unsigned k;

		memcpy(&k, (const char *)base + mid * size + off, sizeof(k));
		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ip_lower_bound(), and *@found: whether the record there has @key. */
static inline size_t ip_sorted_pos(const void *base, size_t n, size_t size, size_t off, unsigned key,
				   bool *found)
{
	size_t i = ip_lower_bound(base, n, size, off, key);
	unsigned k = 0;

	if (i < n)
		memcpy(&k, (const char *)base + i * size + off, sizeof(k));
	*found = i < n && k == key;
	return i;
}

/* ip_sorted_pos() over @arr[0..n) by its member @field, which must be an
 * unsigned (a negative array size stops the build otherwise). */
#define IP_SORTED_POS(arr, n, field, key, found)                                              \
	((void)sizeof(char[sizeof((arr)->field) == sizeof(unsigned) ? 1 : -1]),             \
	 ip_sorted_pos((arr), (size_t)(n), sizeof(*(arr)), offsetof(__typeof__(*(arr)), field), \
		       (key), (found)))

#endif
