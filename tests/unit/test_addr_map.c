/* test_addr_map.c — the flat address map against a plain array doing the same operations:
 * random puts and deletes over a few thousand IPv4 and IPv6 addresses (runs of colliding
 * probes, backward-shift deletes, growth and shrinking), then every address looked up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "services/xds-agent/core/addr_map.h"

#define N_ADDRS 3000

static uint64_t rng = 0x1234567;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static struct km_addr addr_of(uint32_t i)
{
	struct km_addr a = { 0 };

	if (i % 3 == 0) { /* IPv6 */
		a.bytes[0] = 0xfd;
		a.bytes[14] = (uint8_t)(i >> 8);
		a.bytes[15] = (uint8_t)i;
	} else { /* v4-mapped, as the agent keeps IPv4 */
		a.bytes[10] = a.bytes[11] = 0xff;
		a.bytes[12] = 10;
		a.bytes[14] = (uint8_t)(i >> 8);
		a.bytes[15] = (uint8_t)i;
	}
	return a;
}

static void matches_reference(void **state)
{
	static uintptr_t ref[N_ADDRS]; /* 0: absent, else the value stored */
	struct km_addr_map m;
	size_t live = 0, peak_cap = 0;

	(void)state;
	km_addr_map_init(&m);
	assert_null(km_addr_map_find(&m, &(struct km_addr){ 0 }));
	for (int round = 0; round < 200000; round++) {
		uint32_t i = rnd(N_ADDRS);
		struct km_addr a = addr_of(i);
		struct km_addr_map_entry *e;

		if (rnd(3) != 0 && round < 120000) {
			e = km_addr_map_put(&m, &a);
			assert_non_null(e);
			if (!e->val)
				live++;
			e->val = (void *)(uintptr_t)(round + 1);
			ref[i] = (uintptr_t)(round + 1);
		} else if ((e = km_addr_map_find(&m, &a))) {
			assert_int_equal((uintptr_t)e->val, ref[i]);
			km_addr_map_delete(&m, e);
			ref[i] = 0;
			live--;
		} else {
			assert_int_equal(ref[i], 0);
		}
		assert_int_equal(m.n, live);
		if (m.cap > peak_cap)
			peak_cap = m.cap;
	}
	for (uint32_t i = 0; i < N_ADDRS; i++) {
		struct km_addr a = addr_of(i);
		struct km_addr_map_entry *e = km_addr_map_find(&m, &a);

		if (!ref[i]) {
			assert_null(e);
			continue;
		}
		assert_non_null(e);
		assert_int_equal((uintptr_t)e->val, ref[i]);
		assert_memory_equal(&e->addr, &a, sizeof(a));
	}
	/* a visit sees each live entry once */
	{
		size_t seen = 0;

		for (struct km_addr_map_entry *e = km_addr_map_next(&m, NULL); e; e = km_addr_map_next(&m, e))
			seen++;
		assert_int_equal(seen, live);
	}
	/* the later rounds only deleted: the array shrank from its peak */
	assert_true(m.cap < peak_cap);
	assert_true(m.n * 4 <= m.cap * 3);
	assert_true(m.n * 4 >= m.cap || m.cap == 16); /* at least a quarter full */
	km_addr_map_free(&m);
	assert_int_equal(m.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(matches_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
