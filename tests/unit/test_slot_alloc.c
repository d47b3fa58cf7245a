/* test_slot_alloc.c — the buddy allocator of km_slot ranges: blocks are aligned and disjoint,
 * freed buddies merge back, reserving recovers exactly the named blocks, and a random run
 * against a plain bitmap never hands out a slot twice or loses one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "services/map-writer/slot_alloc.h"

#define NONE KM_SLOT_ALLOC_NONE

static void test_order_for(void **state)
{
	(void)state;
	assert_int_equal(km_slot_order_for(0), 0);
	assert_int_equal(km_slot_order_for(1), 0);
	assert_int_equal(km_slot_order_for(2), 1);
	assert_int_equal(km_slot_order_for(3), 2);
	assert_int_equal(km_slot_order_for(4), 2);
	assert_int_equal(km_slot_order_for(5), 3);
	assert_int_equal(km_slot_order_for(1u << 20), 20);
	assert_int_equal(km_slot_order_for((1u << 20) + 1), 21);
}

static void test_split_and_merge(void **state)
{
	struct km_slot_alloc a;
	uint32_t b0, b1, b2, big;

	(void)state;
	assert_int_equal(km_slot_alloc_init(&a, 20), 0); /* 16 usable: the power of two below */
	assert_int_equal(a.size, 16);
	assert_int_equal(a.free_slots, 16);
	b0 = km_slot_alloc_get(&a, 0);
	b1 = km_slot_alloc_get(&a, 0);
	b2 = km_slot_alloc_get(&a, 2);
	assert_int_equal(b0, 0);
	assert_int_equal(b1, 1);
	assert_int_equal(b2, 4); /* 2..3 is the free order-1 buddy; order 2 starts at 4 */
	assert_int_equal(a.free_slots, 10);
	assert_int_equal(km_slot_alloc_get(&a, 4), NONE); /* no 16 left */
	big = km_slot_alloc_get(&a, 3);
	assert_int_equal(big, 8);
	assert_int_equal(km_slot_alloc_get(&a, 3), NONE);
	km_slot_alloc_put(&a, b0, 0);
	km_slot_alloc_put(&a, b2, 2);
	km_slot_alloc_put(&a, big, 3);
	assert_int_equal(km_slot_alloc_get(&a, 4), NONE); /* b1 still holds the first half */
	km_slot_alloc_put(&a, b1, 0);
	assert_int_equal(a.free_slots, 16);
	assert_int_equal(km_slot_alloc_get(&a, 4), 0); /* every buddy merged back */
	km_slot_alloc_free(&a);
}

static void test_reserve(void **state)
{
	struct km_slot_alloc a;

	(void)state;
	assert_int_equal(km_slot_alloc_init(&a, 64), 0);
	assert_int_equal(km_slot_alloc_reserve(&a, 8, 3), 0);
	assert_int_equal(km_slot_alloc_reserve(&a, 40, 2), 0);
	assert_int_equal(km_slot_alloc_reserve(&a, 8, 3), -1);  /* taken */
	assert_int_equal(km_slot_alloc_reserve(&a, 12, 2), -1); /* inside a taken block */
	assert_int_equal(km_slot_alloc_reserve(&a, 0, 4), -1);  /* overlaps one */
	assert_int_equal(km_slot_alloc_reserve(&a, 6, 2), -1);  /* misaligned */
	assert_int_equal(km_slot_alloc_reserve(&a, 64, 0), -1); /* out of range */
	assert_int_equal(km_slot_alloc_reserve(&a, 0, 7), -1);  /* bigger than the array */
	assert_int_equal(a.free_slots, 64 - 8 - 4);
	/* what is left is handed out around the reserved blocks */
	for (int i = 0; i < 64 - 12; i++) {
		uint32_t o = km_slot_alloc_get(&a, 0);

		assert_int_not_equal(o, NONE);
		assert_false(o >= 8 && o < 16);
		assert_false(o >= 40 && o < 44);
	}
	assert_int_equal(km_slot_alloc_get(&a, 0), NONE);
	km_slot_alloc_free(&a);
}

/* A random mix against a bitmap of what is allocated. */
static void test_random_against_bitmap(void **state)
{
	enum { SIZE = 1024, LIVE = 256 };
	struct km_slot_alloc a;
	uint8_t used[SIZE] = { 0 };
	struct {
		uint32_t base;
		uint8_t order;
	} live[LIVE];
	size_t n = 0;
	uint64_t in_use = 0;

	(void)state;
	srand(7);
	assert_int_equal(km_slot_alloc_init(&a, SIZE), 0);
	for (int step = 0; step < 200000; step++) {
		if (n < LIVE && (n == 0 || rand() % 2)) {
			uint8_t order = (uint8_t)(rand() % 6);
			uint32_t o = km_slot_alloc_get(&a, order);

			if (o == NONE) {
				/* only when no free block of that size exists */
				assert_true(a.free_slots < SIZE);
				continue;
			}
			assert_int_equal(o % (1u << order), 0);
			assert_true(o + (1u << order) <= SIZE);
			for (uint32_t i = o; i < o + (1u << order); i++) {
				assert_int_equal(used[i], 0);
				used[i] = 1;
			}
			live[n].base = o;
			live[n].order = order;
			n++;
			in_use += 1u << order;
		} else {
			size_t k = (size_t)rand() % n;

			for (uint32_t i = live[k].base; i < live[k].base + (1u << live[k].order); i++)
				used[i] = 0;
			km_slot_alloc_put(&a, live[k].base, live[k].order);
			in_use -= 1u << live[k].order;
			live[k] = live[--n];
		}
		assert_int_equal(a.free_slots + in_use, SIZE);
	}
	while (n) {
		n--;
		km_slot_alloc_put(&a, live[n].base, live[n].order);
	}
	assert_int_equal(km_slot_alloc_get(&a, 10), 0); /* all merged into one block again */
	km_slot_alloc_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_for),
		cmocka_unit_test(test_split_and_merge),
		cmocka_unit_test(test_reserve),
		cmocka_unit_test(test_random_against_bitmap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
