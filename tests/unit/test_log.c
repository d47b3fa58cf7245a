/* test_log.c — km_log_safe: a peer's string cannot forge a log line or hide text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "shared/log.h"

static void test_printable_kept(void **state)
{
	char out[64];

	(void)state;
	km_log_safe(out, sizeof(out), "ns/pod-1 (kmesh-cni)");
	assert_string_equal(out, "ns/pod-1 (kmesh-cni)");
}

static void test_control_bytes_escaped(void **state)
{
	char out[128];

	(void)state;
	km_log_safe(out, sizeof(out), "x\n2026-01-01T00:00:00Z error forged\r\x1b[2K\\");
	assert_string_equal(out, "x\\x0a2026-01-01T00:00:00Z error forged\\x0d\\x1b[2K\\x5c");
	km_log_safe(out, sizeof(out), "caf\xc3\xa9");
	assert_string_equal(out, "caf\\xc3\\xa9");
}

static void test_truncated_whole(void **state)
{
	char out[8];

	(void)state;
	km_log_safe(out, sizeof(out), "abcd\nefgh");
	assert_string_equal(out, "abcd"); /* never half an escape */
	km_log_safe(out, 1, "abc");
	assert_string_equal(out, "");
	km_log_safe(out, sizeof(out), NULL);
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_printable_kept),
		cmocka_unit_test(test_control_bytes_escaped),
		cmocka_unit_test(test_truncated_whole),
	};

	return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
