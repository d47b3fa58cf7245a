/* test_log.c — km_log_safe: a peer's string cannot forge a log line or hide text; the line
 * formats: text, JSON (one valid object per line, whatever the message holds), and the syslog
 * priority prefix journald reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

static void test_text_line(void **state)
{
	char line[256];

	(void)state;
	km_log_init("kmesh-test");
	km_log_set_priority_prefix(0);
	km_log_set_format(KM_LOG_TEXT);
	km_log_format_line(line, sizeof(line), KM_LOG_WARN, 1796000000LL, 123456789, "a \"b\"");
	assert_string_equal(line, "2026-11-30T00:53:20.123Z warn  kmesh-test: a \"b\"");
}

static void test_json_line(void **state)
{
	char line[256], small[120], big[300];
	enum km_log_format f;

	(void)state;
	km_log_init("kmesh-test");
	km_log_set_priority_prefix(0);
	assert_int_equal(km_log_parse_format("json", &f), 0);
	assert_int_equal(f, KM_LOG_JSON);
	assert_int_equal(km_log_parse_format("JSON", &f), -1);
	km_log_set_format(f);
	km_log_format_line(line, sizeof(line), KM_LOG_ERROR, 1796000000LL, 5000000,
			   "pod \"a\\b\"\nnext\x01 done");
	assert_string_equal(line, "{\"time\":\"2026-11-30T00:53:20.005Z\",\"level\":\"error\","
				  "\"scope\":\"kmesh-test\",\"msg\":\"pod \\\"a\\\\b\\\"\\nnext\\u0001 done\"}");
	/* a message longer than the line is cut, and the line is still one closed object */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	big[10] = '"';
	km_log_format_line(small, sizeof(small), KM_LOG_INFO, 0, 0, big);
	assert_true(strlen(small) < sizeof(small));
	assert_memory_equal(small + strlen(small) - 2, "\"}", 2);
	km_log_set_format(KM_LOG_TEXT);
}

static void test_priority_prefix(void **state)
{
	char line[256];

	(void)state;
	km_log_init("kmesh-test"); /* stderr is not the journal here */
	km_log_set_format(KM_LOG_TEXT);
	km_log_format_line(line, sizeof(line), KM_LOG_ERROR, 0, 0, "x");
	assert_int_not_equal(line[0], '<');
	km_log_set_priority_prefix(1);
	km_log_format_line(line, sizeof(line), KM_LOG_ERROR, 0, 0, "x");
	assert_memory_equal(line, "<3>1970-", 8);
	km_log_format_line(line, sizeof(line), KM_LOG_WARN, 0, 0, "x");
	assert_memory_equal(line, "<4>", 3);
	km_log_format_line(line, sizeof(line), KM_LOG_INFO, 0, 0, "x");
	assert_memory_equal(line, "<6>", 3);
	km_log_set_format(KM_LOG_JSON);
	km_log_format_line(line, sizeof(line), KM_LOG_DEBUG, 0, 0, "x");
	assert_memory_equal(line, "<7>{\"time\":", 11);
	km_log_set_format(KM_LOG_TEXT);
	km_log_set_priority_prefix(0);
}

/* systemd names the journal's stream in JOURNAL_STREAM (dev:inode of stderr): the prefix goes on
 * only when stderr is that stream, not for a child whose stderr went elsewhere. */
static void test_journal_detected(void **state)
{
	char js[64], line[64];
	struct stat st;

	(void)state;
	assert_int_equal(fstat(2, &st), 0);
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", js, 1);
	km_log_init("kmesh-test");
	km_log_format_line(line, sizeof(line), KM_LOG_ERROR, 0, 0, "x");
	assert_memory_equal(line, "<3>", 3);
	snprintf(js, sizeof(js), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino + 1);
	setenv("JOURNAL_STREAM", js, 1);
	km_log_init("kmesh-test");
	km_log_format_line(line, sizeof(line), KM_LOG_ERROR, 0, 0, "x");
	assert_int_not_equal(line[0], '<');
	unsetenv("JOURNAL_STREAM");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_printable_kept),
		cmocka_unit_test(test_control_bytes_escaped),
		cmocka_unit_test(test_truncated_whole),
		cmocka_unit_test(test_text_line),
		cmocka_unit_test(test_json_line),
		cmocka_unit_test(test_priority_prefix),
		cmocka_unit_test(test_journal_detected),
	};

	return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
