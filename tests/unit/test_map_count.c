/* test_map_count.c — row counts from the map-count iterator against real BPF hash maps (needs
 * CAP_BPF and PERFMON, and kernel 6.6; skipped otherwise): inserts, updates and deletes are
 * counted in on-demand and preallocated maps, several maps are read in one pass, and a closed fd
 * is unknown rather than zero. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <cmocka.h>

#include <bpf/bpf.h>

#include "services/map-writer/map_count.h"
#include "shared/log.h"

static int hash_map(uint32_t flags, uint32_t max)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = flags);

	return bpf_map_create(BPF_MAP_TYPE_HASH, NULL, sizeof(uint32_t), sizeof(uint64_t), max, &o);
}

static void fill(int fd, uint32_t from, uint32_t to)
{
	for (uint32_t k = from; k < to; k++) {
		uint64_t v = k;

		assert_int_equal(bpf_map_update_elem(fd, &k, &v, BPF_ANY), 0);
	}
}

static void test_counts_rows(void **state)
{
	struct km_map_count c;
	char err[256];
	int fds[3];
	uint64_t n[3];

	(void)state;
	if (km_map_count_open(&c, err, sizeof(err)) != 0) {
		print_message("skipped: %s\n", err);
		skip();
	}
	fds[0] = hash_map(BPF_F_NO_PREALLOC, 1000);
	fds[1] = hash_map(0, 1000); /* --preallocate-tables */
	fds[2] = -1;
	assert_true(fds[0] >= 0 && fds[1] >= 0);
	assert_int_equal(km_map_count_read(&c, fds, n, 3), 0);
	assert_int_equal(n[0], 0);
	assert_int_equal(n[1], 0);
	assert_true(n[2] == KM_MAP_COUNT_UNKNOWN);

	fill(fds[0], 0, 700);
	fill(fds[1], 0, 40);
	fill(fds[0], 600, 800); /* 100 updates, 100 inserts */
	for (uint32_t k = 0; k < 250; k++)
		assert_int_equal(bpf_map_delete_elem(fds[0], &k), 0);
	assert_int_equal(km_map_count_read(&c, fds, n, 3), 0);
	assert_int_equal(n[0], 800 - 250);
	assert_int_equal(n[1], 40);

	close(fds[1]);
	fds[1] = hash_map(0, 10); /* a map that never held rows */
	assert_int_equal(km_map_count_read(&c, fds, n, 2), 0);
	assert_int_equal(n[0], 550);
	assert_int_equal(n[1], 0);
	close(fds[0]);
	close(fds[1]);
	km_map_count_close(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_rows),
	};

	km_log_set_level(KM_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
