/* test_grow.c — array capacities (shared/grow.c): km_grow doubles from 8, km_grow32 grows by half
 * from 4; both reach any need at once, keep the contents, leave the array as it was on failure,
 * and km_grow32 refuses a need past 32 bits (and makes progress from any capacity it is given). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "shared/grow.h"

static void grow_doubles(void **state)
{
	int *a = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(km_grow((void **)&a, &cap, 1, sizeof(*a)), 0);
	assert_int_equal(cap, 8);
	for (int i = 0; i < 8; i++)
		a[i] = i;
	assert_int_equal(km_grow((void **)&a, &cap, 9, sizeof(*a)), 0);
	assert_int_equal(cap, 16);
	assert_int_equal(km_grow((void **)&a, &cap, 100, sizeof(*a)), 0);
	assert_int_equal(cap, 128);
	for (int i = 0; i < 8; i++)
		assert_int_equal(a[i], i);
	free(a);
}

static void grow32_by_half(void **state)
{
	static const uint32_t steps[] = { 4, 6, 9, 13, 19, 28 };
	uint32_t *a = NULL, cap = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		assert_int_equal(km_grow32((void **)&a, &cap, (size_t)cap + 1, sizeof(*a)), 0);
		assert_int_equal(cap, steps[i]);
		a[cap - 1] = cap;
	}
	assert_int_equal(km_grow32((void **)&a, &cap, 1000, sizeof(*a)), 0);
	assert_true(cap >= 1000 && cap < 1500);
	assert_int_equal(a[27], 28);
	assert_int_equal(km_grow32((void **)&a, &cap, 10, sizeof(*a)), 0); /* room already */
	assert_true(cap >= 1000);
	assert_int_equal(km_grow32((void **)&a, &cap, (size_t)UINT32_MAX + 1, sizeof(*a)), -1);
	assert_true(cap >= 1000 && a[27] == 28); /* unchanged */
	free(a);
	for (uint32_t c = 1; c < 4; c++) { /* a capacity set elsewhere still grows */
		a = malloc(c * sizeof(*a));
		cap = c;
		assert_int_equal(km_grow32((void **)&a, &cap, (size_t)c + 1, sizeof(*a)), 0);
		assert_true(cap > c);
		free(a);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(grow_doubles),
		cmocka_unit_test(grow32_by_half),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
