/* test_dial_cache.c — the map writer's dial-to-open join: a dial is found once by its cookie,
 * a second dial of a socket replaces the first, a full set gives up its oldest entry (counted),
 * and thousands of in-flight dials spread over the sets lose none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "services/map-writer/dial_cache.h"

static struct km_addr addr_of(uint32_t v4)
{
	struct km_addr a;

	memset(&a, 0, sizeof(a));
	a.bytes[10] = a.bytes[11] = 0xff;
	memcpy(&a.bytes[12], &v4, 4);
	return a;
}

static void test_found_once(void **state)
{
	struct km_dial_cache c;
	struct km_addr vip = addr_of(0x0160600a), got;
	uint16_t port = 0;

	(void)state;
	assert_int_equal(km_dial_cache_init(&c), 0);
	km_dial_cache_put(&c, 42, &vip, 80);
	assert_int_equal(km_dial_cache_take(&c, 7, &got, &port), 0);
	assert_int_equal(km_dial_cache_take(&c, 42, &got, &port), 1);
	assert_memory_equal(&got, &vip, sizeof(vip));
	assert_int_equal(port, 80);
	assert_int_equal(km_dial_cache_take(&c, 42, &got, &port), 0); /* taken */
	assert_int_equal(km_dial_cache_take(&c, 0, &got, &port), 0);
	km_dial_cache_free(&c);
}

static void test_second_dial_replaces_first(void **state)
{
	struct km_dial_cache c;
	struct km_addr a = addr_of(1), b = addr_of(2), got;
	uint16_t port = 0;

	(void)state;
	assert_int_equal(km_dial_cache_init(&c), 0);
	km_dial_cache_put(&c, 9, &a, 80);
	km_dial_cache_put(&c, 9, &b, 81); /* connect() again after a failure */
	assert_int_equal(km_dial_cache_take(&c, 9, &got, &port), 1);
	assert_memory_equal(&got, &b, sizeof(b));
	assert_int_equal(port, 81);
	assert_int_equal(km_dial_cache_take(&c, 9, &got, &port), 0); /* one entry, not two */
	assert_int_equal(c.evicted, 0);
	km_dial_cache_free(&c);
}

/* Cookies of one set: the multiplicative hash's top bits, searched for. */
static size_t same_set(uint64_t *out, size_t n)
{
	size_t k = 0;
	uint64_t want = (1ull * 0x9e3779b97f4a7c15ull) >> 54;

	for (uint64_t ck = 1; k < n && ck < 50000000; ck++)
		if (((ck * 0x9e3779b97f4a7c15ull) >> 54) % KM_DIAL_SETS == want % KM_DIAL_SETS)
			out[k++] = ck;
	return k;
}

static void test_full_set_gives_up_its_oldest(void **state)
{
	struct km_dial_cache c;
	uint64_t ck[KM_DIAL_WAYS + 1];
	struct km_addr a = addr_of(3), got;
	uint16_t port;

	(void)state;
	assert_int_equal(same_set(ck, KM_DIAL_WAYS + 1), KM_DIAL_WAYS + 1);
	assert_int_equal(km_dial_cache_init(&c), 0);
	for (int i = 0; i <= KM_DIAL_WAYS; i++)
		km_dial_cache_put(&c, ck[i], &a, (uint16_t)(1000 + i));
	assert_int_equal(c.evicted, 1);
	assert_int_equal(km_dial_cache_take(&c, ck[0], &got, &port), 0); /* the oldest went */
	for (int i = 1; i <= KM_DIAL_WAYS; i++) {
		assert_int_equal(km_dial_cache_take(&c, ck[i], &got, &port), 1);
		assert_int_equal(port, 1000 + i);
	}
	km_dial_cache_free(&c);
}

/* Sequential cookies, as the kernel hands them out: 2,000 dials in flight lose none. */
static void test_many_in_flight(void **state)
{
	struct km_dial_cache c;
	struct km_addr a = addr_of(4), got;
	uint16_t port;

	(void)state;
	assert_int_equal(km_dial_cache_init(&c), 0);
	for (uint64_t round = 0; round < 50; round++) {
		uint64_t base = 1 + round * 2000;

		for (uint64_t i = 0; i < 2000; i++)
			km_dial_cache_put(&c, base + i, &a, (uint16_t)(i & 0xffff));
		for (uint64_t i = 0; i < 2000; i++) {
			assert_int_equal(km_dial_cache_take(&c, base + i, &got, &port), 1);
			assert_int_equal(port, i & 0xffff);
		}
	}
	assert_int_equal(c.evicted, 0);
	km_dial_cache_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found_once),
		cmocka_unit_test(test_second_dial_replaces_first),
		cmocka_unit_test(test_full_set_gives_up_its_oldest),
		cmocka_unit_test(test_many_in_flight),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
