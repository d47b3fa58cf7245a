/* test_ids.c — stable u32 ids: FNV-1a vectors, collisions probed, 0 never used, release and
 * reuse, owners found after many inserts and deletes (backward-shift deletion). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "services/xds-agent/core/ids.h"

static uint32_t constant_hash(const char *name)
{
	(void)name;
	return 7;
}

static uint32_t top_hash(const char *name)
{
	(void)name;
	return 0xffffffffu;
}

static void test_fnv1a_vectors(void **state)
{
	(void)state;
	/* Published FNV-1a 32-bit test vectors. */
	assert_int_equal(km_ids_fnv1a(""), 0x811c9dc5u);
	assert_int_equal(km_ids_fnv1a("a"), 0xe40c292cu);
	assert_int_equal(km_ids_fnv1a("foobar"), 0xbf9cf968u);
}

static void test_ids_are_the_name_hash(void **state)
{
	struct km_ids ids;
	int owner_a, owner_b;
	uint32_t a, b;

	(void)state;
	km_ids_init(&ids, NULL);
	a = km_ids_alloc(&ids, "demo/web.demo.svc.cluster.local", &owner_a);
	b = km_ids_alloc(&ids, "Kubernetes//Pod/demo/web-1", &owner_b);
	assert_int_equal(a, km_ids_fnv1a("demo/web.demo.svc.cluster.local"));
	assert_int_not_equal(a, b);
	assert_ptr_equal(km_ids_owner(&ids, a), &owner_a);
	assert_ptr_equal(km_ids_owner(&ids, b), &owner_b);
	assert_null(km_ids_owner(&ids, a + 1));
	assert_null(km_ids_owner(&ids, 0));
	assert_int_equal(ids.count, 2);
	km_ids_free(&ids);
}

static void test_collisions_probe(void **state)
{
	struct km_ids ids;
	int o[4];

	(void)state;
	km_ids_init(&ids, constant_hash);
	assert_int_equal(km_ids_alloc(&ids, "a", &o[0]), 7);
	assert_int_equal(km_ids_alloc(&ids, "b", &o[1]), 8);
	assert_int_equal(km_ids_alloc(&ids, "c", &o[2]), 9);
	km_ids_release(&ids, 8);
	assert_null(km_ids_owner(&ids, 8));
	/* the freed id is found again by the next probe; existing ids do not move */
	assert_int_equal(km_ids_alloc(&ids, "d", &o[3]), 8);
	assert_ptr_equal(km_ids_owner(&ids, 9), &o[2]);
	assert_ptr_equal(km_ids_owner(&ids, 8), &o[3]);
	km_ids_free(&ids);
}

static void test_zero_is_never_an_id(void **state)
{
	struct km_ids ids;
	int o;

	(void)state;
	km_ids_init(&ids, top_hash);
	assert_int_equal(km_ids_alloc(&ids, "x", &o), 0xffffffffu);
	assert_int_equal(km_ids_alloc(&ids, "y", &o), 1); /* wraps past 0 */
	km_ids_free(&ids);
}

/* ids that are multiples of 2^16 all land in one slot of the table: one long probe run, so
 * every deletion has to shift the rest of the run back correctly */
static uint32_t clustered_hash(const char *name)
{
	return (uint32_t)(atoi(name + 4) + 1) << 16;
}

/* Many ids in and out, checked against a plain array: the table's runs must stay findable. */
static void test_churn(void **state)
{
	enum { N = 1000 };
	static uint32_t id[N];
	static int live[N];
	struct km_ids ids;
	char name[32];

	(void)state;
	srand(7);
	km_ids_init(&ids, clustered_hash);
	for (int step = 0; step < 20000; step++) {
		int k = rand() % N;

		if (live[k]) {
			km_ids_release(&ids, id[k]);
			live[k] = 0;
		} else {
			snprintf(name, sizeof(name), "obj-%d", k);
			id[k] = km_ids_alloc(&ids, name, &live[k]);
			assert_int_not_equal(id[k], 0);
			live[k] = 1;
		}
	}
	for (int k = 0; k < N; k++)
		if (live[k])
			assert_ptr_equal(km_ids_owner(&ids, id[k]), &live[k]);
		else
			assert_true(km_ids_owner(&ids, id[k]) != &live[k]);
	km_ids_free(&ids);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fnv1a_vectors),
		cmocka_unit_test(test_ids_are_the_name_hash),
		cmocka_unit_test(test_collisions_probe),
		cmocka_unit_test(test_zero_is_never_an_id),
		cmocka_unit_test(test_churn),
	};

	return cmocka_run_group_tests_name("ids", tests, NULL, NULL);
}
