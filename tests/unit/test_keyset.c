/* test_keyset.c — the map writer's present-row key set: membership after adds and deletes
 * matches a plain reference array through growth and long probe runs (deletion by backward shift
 * must keep every remaining key findable), for key lengths from 1 to KM_KEYSET_MAX_KEY, values
 * kept with their keys through growth and shifts. */
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
	km_keyset_prefetch(&s, &k);          /* so is a prefetch (no slots to point into) */
	assert_int_equal(km_keyset_add(&s, &k), 0);
	assert_int_equal(km_keyset_add(&s, &k), 0);
	assert_int_equal(s.count, 1);
	km_keyset_prefetch(&s, &k);
	km_keyset_prefetch(&s, &other);
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

/* Key i of length len: a pattern of the length, its last (up to) four bytes i's. */
static void make_key(uint8_t *key, size_t len, uint32_t i)
{
	size_t n = len < 4 ? len : 4;

	for (size_t b = 0; b < len; b++)
		key[b] = (uint8_t)(b * 7 + len);
	memcpy(key + len - n, &i, n);
}

/* Keys of each length (whole words, a tail, both), random adds and deletes, each key's value
 * written at its add and checked against the reference after growth and backward shifts. */
static void test_key_lengths_and_values(void **state)
{
	enum { SPACE = 2000, STEPS = 20000 };
	static const size_t lens[] = { 1, 4, 7, 8, 13, 20, 24, 28 };
	static uint8_t in[SPACE];

	(void)state;
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		size_t len = lens[l];
		struct km_keyset s;

		memset(in, 0, sizeof(in));
		srand((unsigned)len);
		km_keyset_init_values(&s, len, sizeof(uint32_t));
		for (int step = 0; step < STEPS; step++) {
			uint32_t i = (uint32_t)rand() % (len == 1 ? 256 : SPACE);
			uint8_t key[KM_KEYSET_MAX_KEY] = { 0 };
			uint8_t *v;
			uint32_t x;

			make_key(key, len, i);
			if (rand() % 3) {
				assert_int_equal(km_keyset_add(&s, key), 0);
				v = km_keyset_value(&s, key);
				assert_non_null(v);
				x = i ^ 0x5a5a5a5a;
				if (!in[i])
					memcpy(v, &x, sizeof(x)); /* values are not aligned */
				in[i] = 1;
			} else {
				km_keyset_del(&s, key);
				in[i] = 0;
			}
			if (step % 499 == 0) {
				for (uint32_t j = 0; j < (len == 1 ? 256 : SPACE); j++) {
					uint8_t k2[KM_KEYSET_MAX_KEY] = { 0 };

					make_key(k2, len, j);
					v = km_keyset_value(&s, k2);
					assert_int_equal(v != NULL, in[j]);
					if (v) {
						memcpy(&x, v, sizeof(x));
						assert_int_equal(x, j ^ 0x5a5a5a5a);
					}
				}
			}
		}
		km_keyset_free(&s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_has_del),
		cmocka_unit_test(test_random_against_reference),
		cmocka_unit_test(test_key_lengths_and_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
