/* test_keyset.c — the map writer's present-row key set: membership after adds and deletes
 * matches a plain reference array through growth and long probe runs (deletion by backward shift
 * must keep every remaining key findable). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "services/map-writer/keyset.h"

struct key12 {
	uint32_t a, b, c;
};

static void test_add_has_del(void **state)
{
	struct km_keyset s;
	struct key12 k = { 1, 2, 3 }, other = { 1, 2, 4 };

	(void)state;
	km_keyset_init(&s, sizeof(k));
	assert_false(km_keyset_has(&s, &k)); /* empty, no memory yet */
	km_keyset_del(&s, &k);               /* deleting from an empty set is fine */
	assert_int_equal(km_keyset_add(&s, &k), 0);
	assert_int_equal(km_keyset_add(&s, &k), 0);
	assert_int_equal(s.count, 1);
	assert_true(km_keyset_has(&s, &k));
	assert_false(km_keyset_has(&s, &other));
	km_keyset_del(&s, &k);
	assert_false(km_keyset_has(&s, &k));
	assert_int_equal(s.count, 0);
	km_keyset_free(&s);
}

/* Random adds and deletes over a small key space (dense probe runs), checked against a bitmap
 * after every step; a backward shift that moved a key past its home would be caught. */
static void test_random_against_reference(void **state)
{
	enum { SPACE = 3000, STEPS = 60000 };
	static uint8_t in[SPACE];
	struct km_keyset s;

	(void)state;
	memset(in, 0, sizeof(in));
	srand(7);
	km_keyset_init(&s, sizeof(uint32_t));
	for (int step = 0; step < STEPS; step++) {
		uint32_t k = (uint32_t)rand() % SPACE;

		if (rand() % 3) {
			assert_int_equal(km_keyset_add(&s, &k), 0);
			in[k] = 1;
		} else {
			km_keyset_del(&s, &k);
			in[k] = 0;
		}
		if (step % 997 == 0) {
			size_t n = 0;

			for (uint32_t i = 0; i < SPACE; i++) {
				assert_int_equal(km_keyset_has(&s, &i), in[i]);
				n += in[i];
			}
			assert_int_equal(s.count, n);
		}
	}
	km_keyset_clear(&s);
	for (uint32_t i = 0; i < SPACE; i++)
		assert_false(km_keyset_has(&s, &i));
	km_keyset_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_has_del),
		cmocka_unit_test(test_random_against_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
