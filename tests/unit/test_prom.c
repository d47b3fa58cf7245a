/* test_prom.c — grouping a page assembled from several processes' texts into one block per
 * family (HELP and TYPE once), and the /proc/PID/stat fields the process_* metrics read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "shared/process_metrics.h"
#include "shared/prom.h"

static void test_group_families(void **state)
{
	struct km_prom p;
	const char *page =
		"# HELP process_cpu_seconds_total CPU.\n"
		"# TYPE process_cpu_seconds_total counter\n"
		"process_cpu_seconds_total{component=\"xds-agent\"} 1.5\n"
		"# HELP kmesh_apply_seconds apply.\n"
		"# TYPE kmesh_apply_seconds histogram\n"
		"kmesh_apply_seconds_bucket{le=\"1\"} 2\n"
		"kmesh_apply_seconds_bucket{le=\"+Inf\"} 3\n"
		"kmesh_apply_seconds_sum 0.5\n"
		"kmesh_apply_seconds_count 3\n"
		"# a comment of the map writer's file\n"
		"# HELP kmesh_table_entries rows.\n"
		"# TYPE kmesh_table_entries gauge\n"
		"kmesh_table_entries{table=\"backend\"} 2\n"
		"# HELP process_cpu_seconds_total CPU.\n"
		"# TYPE process_cpu_seconds_total counter\n"
		"process_cpu_seconds_total{component=\"map-writer\"} 0.25\n"
		"kmesh_table_entries{table=\"service\"} 1\n"
		"kmesh_loose_total 7\n";
	const char *want =
		"# HELP process_cpu_seconds_total CPU.\n"
		"# TYPE process_cpu_seconds_total counter\n"
		"process_cpu_seconds_total{component=\"xds-agent\"} 1.5\n"
		"process_cpu_seconds_total{component=\"map-writer\"} 0.25\n"
		"# HELP kmesh_apply_seconds apply.\n"
		"# TYPE kmesh_apply_seconds histogram\n"
		"kmesh_apply_seconds_bucket{le=\"1\"} 2\n"
		"kmesh_apply_seconds_bucket{le=\"+Inf\"} 3\n"
		"kmesh_apply_seconds_sum 0.5\n"
		"kmesh_apply_seconds_count 3\n"
		"# a comment of the map writer's file\n"
		"# HELP kmesh_table_entries rows.\n"
		"# TYPE kmesh_table_entries gauge\n"
		"kmesh_table_entries{table=\"backend\"} 2\n"
		"kmesh_table_entries{table=\"service\"} 1\n"
		"kmesh_loose_total 7\n";

	(void)state;
	km_prom_init(&p);
	km_prom_append(&p, page, strlen(page));
	assert_int_equal(km_prom_group(&p), 0);
	assert_string_equal(p.buf, want);
	assert_int_equal(km_prom_group(&p), 0); /* grouped already: unchanged */
	assert_string_equal(p.buf, want);
	km_prom_free(&p);
	km_prom_init(&p); /* an empty page stays empty */
	assert_int_equal(km_prom_group(&p), 0);
	km_prom_free(&p);
}

/* A family whose name is a prefix of another's does not take the other's samples. */
static void test_group_prefix_names(void **state)
{
	struct km_prom p;
	const char *page = "# TYPE kmesh_ipc gauge\nkmesh_ipc 1\n"
			   "# TYPE kmesh_ipc_connections gauge\nkmesh_ipc_connections 2\n"
			   "kmesh_ipc 3\n";

	(void)state;
	km_prom_init(&p);
	km_prom_append(&p, page, strlen(page));
	assert_int_equal(km_prom_group(&p), 0);
	assert_string_equal(p.buf, "# TYPE kmesh_ipc gauge\nkmesh_ipc 1\nkmesh_ipc 3\n"
				   "# TYPE kmesh_ipc_connections gauge\nkmesh_ipc_connections 2\n");
	km_prom_free(&p);
}

static void test_stat_parse(void **state)
{
	struct km_process_stat st;
	/* a process name with spaces and parentheses, as a peer could choose */
	const char *line = "4242 (kmesh) x (y) S 1 4242 4242 0 -1 4194560 900 0 0 0 150 25 0 0 20 0 "
			   "3 0 123456 56789012 3456 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";

	(void)state;
	assert_int_equal(km_process_stat_parse(line, &st), 0);
	assert_int_equal(st.utime_ticks, 150);
	assert_int_equal(st.stime_ticks, 25);
	assert_int_equal(st.start_ticks, 123456);
	assert_int_equal(st.vsize_bytes, 56789012);
	assert_int_equal(st.rss_pages, 3456);
	assert_int_equal(km_process_stat_parse("4242 kmesh S 1", &st), -1);
	assert_int_equal(km_process_stat_parse("4242 (kmesh) S 1 2 3", &st), -1);
}

/* This process's own metrics: every family once, labelled, with plausible values. */
static void test_own_process(void **state)
{
	struct km_prom p;

	(void)state;
	km_prom_init(&p);
	km_process_metrics(&p, "test");
	assert_non_null(p.buf);
	assert_non_null(strstr(p.buf, "# TYPE process_cpu_seconds_total counter\n"));
	assert_non_null(strstr(p.buf, "process_resident_memory_bytes{component=\"test\"} "));
	assert_non_null(strstr(p.buf, "process_open_fds{component=\"test\"} "));
	assert_non_null(strstr(p.buf, "process_start_time_seconds{component=\"test\"} 1"));
	assert_null(strstr(p.buf, "process_resident_memory_bytes{component=\"test\"} 0\n"));
	km_prom_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group_families),
		cmocka_unit_test(test_group_prefix_names),
		cmocka_unit_test(test_stat_parse),
		cmocka_unit_test(test_own_process),
	};

	return cmocka_run_group_tests_name("prom", tests, NULL, NULL);
}
