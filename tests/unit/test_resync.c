/* test_resync.c — the backoff of whole-model rewrites after refusals, on a real libuv loop: the
 * first after the least wait, each refused again twice as long up to the most, refusals while one
 * is armed arm nothing more, and a rewrite answered without a refusal starts again from the
 * least; a refusal during the rewrite keeps the doubled wait. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <uv.h>

#include "services/xds-agent/transport/resync.h"
#include "shared/log.h"

struct fixture {
	uv_loop_t loop;
	struct km_resync r;
	int runs;
};

static void run(void *arg)
{
	struct fixture *f = arg;

	f->runs++;
	km_resync_started(&f->r);
}

static int setup(void **state)
{
	static struct fixture f;

	f.runs = 0;
	assert_int_equal(uv_loop_init(&f.loop), 0);
	km_resync_init(&f.r, &f.loop, 10, 40, run, &f);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	km_resync_close(&f->r);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&f->loop), 0);
	return 0;
}

/* Refuse, check the wait armed, let the timer fire. */
static void refuse_and_wait(struct fixture *f, uint64_t want_ms)
{
	int before = f->runs;

	km_resync_refused(&f->r);
	assert_int_equal(f->r.armed_ms, want_ms);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(f->runs, before + 1);
	assert_int_equal(f->r.armed_ms, 0);
}

static void test_doubles_up_to_the_most(void **state)
{
	struct fixture *f = *state;

	refuse_and_wait(f, 10);
	refuse_and_wait(f, 20);
	refuse_and_wait(f, 40);
	refuse_and_wait(f, 40);
	assert_int_equal(f->r.rewrites, 4);
}

static void test_one_rewrite_per_armed_wait(void **state)
{
	struct fixture *f = *state;

	km_resync_refused(&f->r);
	km_resync_refused(&f->r); /* the rest of the same batch run, another batch */
	km_resync_refused(&f->r);
	assert_int_equal(f->r.armed_ms, 10);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	assert_int_equal(f->runs, 1);
	refuse_and_wait(f, 20); /* doubled once, not three times */
}

static void test_clean_rewrite_resets(void **state)
{
	struct fixture *f = *state;

	refuse_and_wait(f, 10);
	refuse_and_wait(f, 20);
	km_resync_synced(&f->r); /* the last rewrite answered with nothing refused */
	refuse_and_wait(f, 10);
}

static void test_refused_rewrite_keeps_the_wait(void **state)
{
	struct fixture *f = *state;

	refuse_and_wait(f, 10);
	km_resync_refused(&f->r); /* refused during the rewrite: arms the next at 20 */
	km_resync_synced(&f->r);  /* answered in full, but not clean */
	assert_int_equal(f->r.armed_ms, 20);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	refuse_and_wait(f, 40);
}

static void test_synced_without_rewrite_changes_nothing(void **state)
{
	struct fixture *f = *state;

	refuse_and_wait(f, 10);
	refuse_and_wait(f, 20);
	km_resync_synced(&f->r); /* clean: reset */
	km_resync_synced(&f->r); /* no rewrite since: nothing to say */
	refuse_and_wait(f, 10);
	assert_int_equal(f->r.rewrites, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_doubles_up_to_the_most, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_rewrite_per_armed_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clean_rewrite_resets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_rewrite_keeps_the_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_synced_without_rewrite_changes_nothing, setup,
						teardown),
	};

	km_log_set_level(KM_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
