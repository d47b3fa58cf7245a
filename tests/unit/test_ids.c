/* test_ids.c — stable u32 ids: FNV-1a vectors, collisions probed, 0 never used, release. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "services/xds-agent/ids.h"

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

static void test_stable_and_distinct(void **state)
{
	struct km_ids ids;
	uint32_t a, b;

	(void)state;
	km_ids_init(&ids, NULL);
	a = km_ids_get(&ids, "demo/web.demo.svc.cluster.local");
	b = km_ids_get(&ids, "Kubernetes//Pod/demo/web-1");
	assert_int_equal(a, km_ids_fnv1a("demo/web.demo.svc.cluster.local"));
	assert_int_not_equal(a, b);
	assert_int_equal(km_ids_get(&ids, "demo/web.demo.svc.cluster.local"), a);
	assert_int_equal(km_ids_find(&ids, "Kubernetes//Pod/demo/web-1"), b);
	assert_string_equal(km_ids_name(&ids, b), "Kubernetes//Pod/demo/web-1");
	assert_int_equal(ids.count, 2);
	km_ids_free(&ids);
}

static void test_collisions_probe(void **state)
{
	struct km_ids ids;

	(void)state;
	km_ids_init(&ids, constant_hash);
	assert_int_equal(km_ids_get(&ids, "a"), 7);
	assert_int_equal(km_ids_get(&ids, "b"), 8);
	assert_int_equal(km_ids_get(&ids, "c"), 9);
	km_ids_release(&ids, "b");
	assert_int_equal(km_ids_find(&ids, "b"), 0);
	assert_null(km_ids_name(&ids, 8));
	/* the freed id is found again by the next probe; existing ids do not move */
	assert_int_equal(km_ids_get(&ids, "d"), 8);
	assert_int_equal(km_ids_find(&ids, "c"), 9);
	km_ids_free(&ids);
}

static void test_zero_is_never_an_id(void **state)
{
	struct km_ids ids;

	(void)state;
	km_ids_init(&ids, top_hash);
	assert_int_equal(km_ids_get(&ids, "x"), 0xffffffffu);
	assert_int_equal(km_ids_get(&ids, "y"), 1); /* wraps past 0 */
	km_ids_free(&ids);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fnv1a_vectors),
		cmocka_unit_test(test_stable_and_distinct),
		cmocka_unit_test(test_collisions_probe),
		cmocka_unit_test(test_zero_is_never_an_id),
	};

	return cmocka_run_group_tests_name("ids", tests, NULL, NULL);
}
