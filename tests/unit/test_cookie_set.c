/* test_cookie_set.c — the map writer's set of connections closed during a pass over open
 * connections: a cookie added is found until the set is cleared, one never added is not, and a
 * set past half full says it cannot tell (so its user drops rather than guesses). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "services/map-writer/cookie_set.h"

static void test_found_until_cleared(void **state)
{
	struct km_cookie_set s;

	(void)state;
	assert_int_equal(km_cookie_set_init(&s, 1000), -22); /* not a power of two */
	assert_int_equal(km_cookie_set_init(&s, 1024), 0);
	for (uint64_t c = 1; c <= 500; c++)
		km_cookie_set_add(&s, c * 7919);
	km_cookie_set_add(&s, 7919); /* twice: once */
	assert_int_equal(s.n, 500);
	for (uint64_t c = 1; c <= 500; c++)
		assert_true(km_cookie_set_may_have(&s, c * 7919));
	for (uint64_t c = 1; c <= 500; c++)
		assert_false(km_cookie_set_may_have(&s, c * 7919 + 1));
	km_cookie_set_clear(&s);
	assert_false(km_cookie_set_may_have(&s, 7919));
	km_cookie_set_free(&s);
}

static void test_overflow_cannot_tell(void **state)
{
	struct km_cookie_set s;

	(void)state;
	assert_int_equal(km_cookie_set_init(&s, 64), 0);
	for (uint64_t c = 1; c <= 33; c++)
		km_cookie_set_add(&s, c);
	assert_true(s.overflowed);
	assert_true(km_cookie_set_may_have(&s, 1000)); /* never added, but it cannot tell */
	km_cookie_set_clear(&s);
	assert_false(km_cookie_set_may_have(&s, 1000));
	assert_false(km_cookie_set_may_have(&s, 1));
	km_cookie_set_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found_until_cleared),
		cmocka_unit_test(test_overflow_cannot_tell),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
