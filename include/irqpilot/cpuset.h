/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef IRQPILOT_CPUSET_H
#define IRQPILOT_CPUSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A fixed-size CPU bitmap. Fixed so that sets can be copied by value and
 * embedded in model structures without allocation; 1024 CPUs keeps one set
 * at 128 bytes, which matters when thousands of IRQs each hold two of them.
 * Machines with more possible CPUs are refused at sampling time with a
 * clear error rather than silently truncated.
 */
#ifndef IP_CPU_MAX
#define IP_CPU_MAX 1024
#endif
#define IP_CPUSET_WORDS (IP_CPU_MAX / 64)

typedef struct {
	uint64_t w[IP_CPUSET_WORDS];
} ip_cpuset;

static inline void cpuset_zero(ip_cpuset *s)
{
	for (size_t i = 0; i < IP_CPUSET_WORDS; i++)
		s->w[i] = 0;
}

static inline bool cpuset_valid_cpu(int cpu)
{
	return cpu >= 0 && cpu < IP_CPU_MAX;
}

static inline void cpuset_set(ip_cpuset *s, int cpu)
{
	if (cpuset_valid_cpu(cpu))
		s->w[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}

static inline void cpuset_clear(ip_cpuset *s, int cpu)
{
	if (cpuset_valid_cpu(cpu))
		s->w[cpu / 64] &= ~(UINT64_C(1) << (cpu % 64));
}

static inline bool cpuset_test(const ip_cpuset *s, int cpu)
{
	return cpuset_valid_cpu(cpu) && (s->w[cpu / 64] >> (cpu % 64)) & 1;
}

int cpuset_count(const ip_cpuset *s);
bool cpuset_empty(const ip_cpuset *s);
bool cpuset_equal(const ip_cpuset *a, const ip_cpuset *b);
/* a is a subset of b */
bool cpuset_subset(const ip_cpuset *a, const ip_cpuset *b);
bool cpuset_intersects(const ip_cpuset *a, const ip_cpuset *b);
void cpuset_and(ip_cpuset *dst, const ip_cpuset *a, const ip_cpuset *b);
void cpuset_or(ip_cpuset *dst, const ip_cpuset *a, const ip_cpuset *b);
/* dst = a & ~b */
void cpuset_andnot(ip_cpuset *dst, const ip_cpuset *a, const ip_cpuset *b);
/* The first CPU in words @i and up, or -1: cpuset_next()'s slow path. */
int cpuset_next_word(const ip_cpuset *s, int i);

/* First CPU at or after @from, or -1. Inline: the parsers and derive
 * walk every CPU of a vector's counts with it each cycle, and the word
 * that holds @from nearly always answers. */
static inline int cpuset_next(const ip_cpuset *s, int from)
{
	uint64_t w;

	if (from < 0)
		from = 0;
	if (from >= IP_CPU_MAX)
		return -1;
	w = s->w[from / 64] & (~UINT64_C(0) << (from % 64));
	if (w)
		return from / 64 * 64 + __builtin_ctzll(w);
	return cpuset_next_word(s, from / 64 + 1);
}

static inline int cpuset_first(const ip_cpuset *s)
{
	return cpuset_next(s, 0);
}

int cpuset_last(const ip_cpuset *s);

#define CPUSET_FOREACH(cpu, s) \
	for (int cpu = cpuset_first(s); cpu >= 0; cpu = cpuset_next((s), cpu + 1))

/*
 * Kernel cpulist syntax ("0-3,6,8-15:2"), as in smp_affinity_list and
 * cpu_list. Also accepts the ", " separator of blk-mq's mq/N/cpu_list and a
 * trailing newline. Returns 0 or -EINVAL (syntax) / -ERANGE (CPU >= IP_CPU_MAX).
 */
int cpuset_parse_list(ip_cpuset *s, const char *text);
/* Kernel hex mask syntax ("ff,00000000") as in smp_affinity. */
int cpuset_parse_mask(ip_cpuset *s, const char *text);
/* Writes "0-3,6" (or "" for an empty set). Returns the length it needed. */
size_t cpuset_format_list(const ip_cpuset *s, char *buf, size_t size);
/* Enough for any list of IP_CPU_MAX CPUs in the worst case ("0,2,4,..."). */
#define IP_CPULIST_MAX (IP_CPU_MAX * 5 + 1)

/* Convenience for logging: formats into a static per-thread ring buffer. */
const char *cpuset_str(const ip_cpuset *s);

#endif
