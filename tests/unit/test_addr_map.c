/* test_addr_map.c — the flat address map against a plain array doing the same operations:
 * random puts and deletes over a few thousand IPv4 and IPv6 addresses (runs of colliding
 * probes, backward-shift deletes, growth and shrinking, each family in its own array), then
 * every address looked up and every entry visited. */
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

static size_t cap_of(const struct km_addr_map *m)
{
	return m->v4.cap + m->v6.cap;
}

/* Each family's array at most 3/4 full and, unless at its smallest, at least a quarter. */
static void fill_bounded(const struct km_addr_table *t)
{
	assert_true(t->n * 4 <= t->cap * 3);
	assert_true(t->n * 4 >= t->cap || t->cap <= 16);
}

/* A visit sees each live entry once, with its address and value. */
static void visit_matches(const struct km_addr_map *m, const uintptr_t *ref, size_t live)
{
	static uint8_t seen[N_ADDRS];
	struct km_addr a;
	size_t pos = 0, n = 0;
	void *val;

	memset(seen, 0, sizeof(seen));
	while (km_addr_map_next(m, &pos, &a, &val)) {
		uint32_t i = (uint32_t)a.bytes[14] << 8 | a.bytes[15];
		struct km_addr want;

		assert_true(i < N_ADDRS);
		want = addr_of(i);
		assert_memory_equal(&a, &want, sizeof(a));
		assert_int_equal((uintptr_t)val, ref[i]);
		assert_int_equal(seen[i]++, 0);
		n++;
	}
	assert_int_equal(n, live);
}

static void matches_reference(void **state)
{
	static uintptr_t ref[N_ADDRS]; /* 0: absent, else the value stored */
	struct km_addr_map m;
	size_t live = 0, peak_cap = 0, peak4 = 0, peak6 = 0;

	(void)state;
	km_addr_map_init(&m);
	assert_null(km_addr_map_find(&m, &(struct km_addr){ 0 }));
	km_addr_map_prefetch(&m, &(struct km_addr){ 0 }); /* an empty map has no slots to load */
	for (int round = 0; round < 200000; round++) {
		uint32_t i = rnd(N_ADDRS);
		struct km_addr a = addr_of(i);
		void **slot;

		km_addr_map_prefetch(&m, &a); /* a hint, whatever the map holds: nothing changes */

		if (rnd(3) != 0 && round < 120000) {
			slot = km_addr_map_put(&m, &a);
			assert_non_null(slot);
			if (!*slot)
				live++;
			*slot = (void *)(uintptr_t)(round + 1);
			ref[i] = (uintptr_t)(round + 1);
		} else if ((slot = km_addr_map_find(&m, &a))) {
			assert_int_equal((uintptr_t)*slot, ref[i]);
			km_addr_map_delete(&m, &a);
			assert_null(km_addr_map_find(&m, &a));
			ref[i] = 0;
			live--;
		} else {
			assert_int_equal(ref[i], 0);
		}
		assert_int_equal(m.n, live);
		if (cap_of(&m) > peak_cap)
			peak_cap = cap_of(&m);
		if (round == 119999) /* at the fullest, before the rounds that only delete */
			visit_matches(&m, ref, live);
		peak4 = m.v4.n > peak4 ? m.v4.n : peak4;
		peak6 = m.v6.n > peak6 ? m.v6.n : peak6;
	}
	for (uint32_t i = 0; i < N_ADDRS; i++) {
		struct km_addr a = addr_of(i);
		void **slot = km_addr_map_find(&m, &a);

		if (!ref[i]) {
			assert_null(slot);
			continue;
		}
		assert_non_null(slot);
		assert_int_equal((uintptr_t)*slot, ref[i]);
	}
	visit_matches(&m, ref, live);
	/* both families were used, each in its own array (a third of the addresses are IPv6) */
	assert_true(peak4 > 1000 && peak6 > 500);
	/* the later rounds only deleted: the arrays shrank from their peak */
	assert_true(cap_of(&m) < peak_cap);
	fill_bounded(&m.v4);
	fill_bounded(&m.v6);
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
