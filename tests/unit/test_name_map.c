/* test_name_map.c — the flat string map against a plain array doing the same operations: random
 * adds and deletes over a few thousand names (probe runs, backward-shift deletes, growth), keys
 * matched by pointer or by content, then every name looked up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "services/xds-agent/core/name_map.h"

#define N_NAMES 3000

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void matches_reference(void **state)
{
	static char names[N_NAMES][32];
	static uintptr_t ref[N_NAMES];
	struct km_name_map m;
	char probe[32];

	(void)state;
	km_name_map_init(&m);
	assert_null(km_name_map_find(&m, "absent"));
	km_name_map_prefetch(&m, "absent"); /* an empty map has no slots to load */
	km_name_map_delete(&m, "absent");
	for (int i = 0; i < N_NAMES; i++)
		snprintf(names[i], sizeof(names[i]), "ns-%d/svc-%d.ns", i % 7, i);
	for (int round = 0; round < 100000; round++) {
		uint32_t i = rnd(N_NAMES);

		km_name_map_prefetch(&m, names[i]); /* a hint: nothing changes */
		if (rnd(3) != 0) {
			if (!ref[i]) {
				assert_int_equal(km_name_map_add(&m, names[i], (void *)(uintptr_t)(round + 1)), 0);
				ref[i] = (uintptr_t)(round + 1);
			}
		} else {
			snprintf(probe, sizeof(probe), "%s", names[i]); /* another copy of the name */
			km_name_map_delete(&m, probe);
			ref[i] = 0;
		}
	}
	for (uint32_t i = 0; i < N_NAMES; i++) {
		snprintf(probe, sizeof(probe), "%s", names[i]);
		assert_int_equal((uintptr_t)km_name_map_find(&m, names[i]), ref[i]); /* same pointer */
		assert_int_equal((uintptr_t)km_name_map_find(&m, probe), ref[i]);   /* same bytes */
	}
	{
		size_t live = 0;

		for (int i = 0; i < N_NAMES; i++)
			live += ref[i] != 0;
		assert_int_equal(m.n, live);
	}
	km_name_map_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(matches_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
