// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "irqpilot/cpuset.h"
#include "irqpilot/sorted.h"

static ip_cpuset list(const char *s)
{
	ip_cpuset c;

	assert_int_equal(cpuset_parse_list(&c, s), 0);
	return c;
}

static void test_parse_list_kernel_forms(void **state)
{
	ip_cpuset s = list("0-3,6,8-15:2\n");

	assert_string_equal(cpuset_str(&s), "0-3,6,8,10,12,14");
	assert_int_equal(cpuset_count(&s), 9);
	/* blk-mq's mq/N/cpu_list separator */
	s = list("0, 1, 2, 3, 4, 5, 6, 7\n");
	assert_string_equal(cpuset_str(&s), "0-7");
	s = list("\n");
	assert_true(cpuset_empty(&s));
	s = list("1023");
	assert_int_equal(cpuset_first(&s), 1023);
	assert_int_equal(cpuset_last(&s), 1023);
}

static void test_parse_list_rejects(void **state)
{
	ip_cpuset s;

	assert_int_equal(cpuset_parse_list(&s, "3-1"), -EINVAL);
	assert_int_equal(cpuset_parse_list(&s, "1,"), -EINVAL);
	assert_int_equal(cpuset_parse_list(&s, "a"), -EINVAL);
	assert_int_equal(cpuset_parse_list(&s, "0-4:0"), -EINVAL);
	assert_int_equal(cpuset_parse_list(&s, "1-2x"), -EINVAL);
	assert_int_equal(cpuset_parse_list(&s, "1024"), -ERANGE);
	assert_int_equal(cpuset_parse_list(&s, "99999999999999999999"), -ERANGE);
	assert_int_equal(cpuset_parse_list(&s, "1\n2"), -EINVAL);
}

static void test_parse_mask(void **state)
{
	ip_cpuset s;

	assert_int_equal(cpuset_parse_mask(&s, "f\n"), 0);
	assert_string_equal(cpuset_str(&s), "0-3");
	/* 32-bit words separated by commas, most significant first */
	assert_int_equal(cpuset_parse_mask(&s, "00000001,00000000,80000000"), 0);
	assert_string_equal(cpuset_str(&s), "31,64");
	assert_int_equal(cpuset_parse_mask(&s, "xyz"), -EINVAL);
	assert_int_equal(cpuset_parse_mask(&s, ""), -EINVAL);
}

static void test_set_ops(void **state)
{
	ip_cpuset a = list("0-7"), b = list("4-11"), r;

	cpuset_and(&r, &a, &b);
	assert_string_equal(cpuset_str(&r), "4-7");
	cpuset_or(&r, &a, &b);
	assert_string_equal(cpuset_str(&r), "0-11");
	cpuset_andnot(&r, &a, &b);
	assert_string_equal(cpuset_str(&r), "0-3");
	assert_true(cpuset_intersects(&a, &b));
	assert_false(cpuset_subset(&a, &b));
	r = list("5-6");
	assert_true(cpuset_subset(&r, &a));
	assert_int_equal(cpuset_next(&a, 8), -1);
	assert_int_equal(cpuset_next(&b, 64), -1);
	r = list("63-64,200");
	assert_int_equal(cpuset_next(&r, 64), 64);
	assert_int_equal(cpuset_next(&r, 65), 200);
}

static void test_format_truncates_safely(void **state)
{
	ip_cpuset s = list("0,2,4,6,8");
	char buf[4];

	assert_int_equal(cpuset_format_list(&s, buf, sizeof(buf)), strlen("0,2,4,6,8"));
	assert_true(strlen(buf) < sizeof(buf));
}

/*
 * sorted.h's walk gives ip_sorted_pos()'s answer for every key, in order
 * or not: a snapshot's lines against the last one's, with lines gone,
 * new, far apart, and a key asked twice or out of order.
 */
struct rec {
	unsigned irq;
	int val;
};

static void test_sorted_next_matches_search(void **state)
{
	struct rec arr[300];
	unsigned keys[700];
	int n = 0, nk = 0;
	size_t cursor = 0;

	(void)state;
	for (unsigned irq = 0; n < 300; irq++)
		if (irq % 3 != 1 && !(irq > 100 && irq < 180)) { /* gaps, and a wide hole */
			arr[n] = (struct rec){ irq, n };
			n++;
		}
	for (unsigned k = 0; k < 620; k++)
		keys[nk++] = k;
	keys[nk++] = 5;	    /* back to the start */
	keys[nk++] = 5;	    /* the same key twice */
	keys[nk++] = 4000;  /* past the end */
	keys[nk++] = 0;
	for (int i = 0; i < nk; i++) {
		bool f1, f2;
		size_t want = IP_SORTED_POS(arr, n, irq, keys[i], &f1);
		size_t got = IP_SORTED_NEXT(arr, n, irq, keys[i], &cursor, &f2);

		assert_int_equal(got, want);
		assert_int_equal(f1, f2);
		if (f2)
			assert_int_equal(arr[got].irq, keys[i]);
	}
	/* an empty array finds nothing, wherever the cursor was */
	cursor = 7;
	{
		bool f;

		assert_int_equal(IP_SORTED_NEXT(arr, 0, irq, 3, &cursor, &f), 0);
		assert_false(f);
	}
}

static int calls;

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	calls++;
	if (x->irq != y->irq)
		return x->irq < y->irq ? -1 : 1;
	return x->val - y->val;
}

/* ip_sort(): an ordered array is only looked at (n - 1 comparisons), a
 * disordered one comes out as qsort() leaves it. */
static void test_sort_only_when_needed(void **state)
{
	struct rec arr[64];

	(void)state;
	for (int i = 0; i < 64; i++)
		arr[i] = (struct rec){ (unsigned)i * 2, 0 };
	calls = 0;
	ip_sort(arr, 64, sizeof(*arr), cmp_rec);
	assert_int_equal(calls, 63);
	arr[10].irq = 999;
	arr[50].irq = 1;
	ip_sort(arr, 64, sizeof(*arr), cmp_rec);
	for (int i = 1; i < 64; i++)
		assert_true(cmp_rec(&arr[i - 1], &arr[i]) <= 0);
	assert_int_equal(arr[1].irq, 1);
	assert_int_equal(arr[63].irq, 999);
	ip_sort(arr, 0, sizeof(*arr), cmp_rec); /* nothing to do */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_list_kernel_forms),
		cmocka_unit_test(test_parse_list_rejects),
		cmocka_unit_test(test_parse_mask),
		cmocka_unit_test(test_set_ops),
		cmocka_unit_test(test_format_truncates_safely),
		cmocka_unit_test(test_sorted_next_matches_search),
		cmocka_unit_test(test_sort_only_when_needed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
