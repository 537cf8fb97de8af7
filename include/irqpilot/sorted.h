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
#include <stdlib.h>
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

/*
 * ip_sorted_pos() for keys asked in ascending order, as when two arrays
 * sorted by IRQ are walked side by side (a snapshot's lines against the
 * last one's, or against the history): *@cursor, 0 at the start, is where
 * the last key was. A few steps forward find the next one, where a search
 * of the whole array cost log2(n) steps for every line (a tenth of a
 * 64-CPU cycle). A key below the last one, or far ahead, is searched for;
 * the answer is always ip_sorted_pos()'s.
 */
static inline size_t ip_sorted_next(const void *base, size_t n, size_t size, size_t off, unsigned key,
				    size_t *cursor, bool *found)
{
	size_t i = *cursor < n ? *cursor : n;
	unsigned k = 0;

	if (i > 0) {
		memcpy(&k, (const char *)base + (i - 1) * size + off, sizeof(k));
		if (k >= key)
			i = 0; /* out of order: the whole array */
	}
	for (int step = 0; i < n && step < 8; step++, i++) {
		memcpy(&k, (const char *)base + i * size + off, sizeof(k));
		if (k >= key)
			break;
	}
	if (i < n && k < key)
		i += ip_lower_bound((const char *)base + i * size, n - i, size, off, key);
	k = 0;
	if (i < n)
		memcpy(&k, (const char *)base + i * size + off, sizeof(k));
	*found = i < n && k == key;
	*cursor = *found ? i + 1 : i;
	return i;
}

/* ip_sorted_next() over @arr[0..n) by its member @field, as IP_SORTED_POS(). */
#define IP_SORTED_NEXT(arr, n, field, key, cursor, found)                                     \
	((void)sizeof(char[sizeof((arr)->field) == sizeof(unsigned) ? 1 : -1]),             \
	 ip_sorted_next((arr), (size_t)(n), sizeof(*(arr)), offsetof(__typeof__(*(arr)), field), \
			(key), (cursor), (found)))

/*
 * qsort() unless @base is in @cmp's order already, as the kernel's lists
 * mostly are (queues by index, a device's vectors by IRQ) and a settled
 * plan's candidates are: glibc's merge sort still compares n log n times
 * and moves every record (at 1.5 KB a candidate, most of a sort's cost).
 * For a total order (@cmp breaks every tie) the result is the same.
 */
static inline void ip_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	for (size_t i = 1; i < n; i++)
		if (cmp((const char *)base + (i - 1) * size, (const char *)base + i * size) > 0) {
			qsort(base, n, size, cmp);
			return;
		}
}

#endif
