/* test_options.c — the generated --help (shared/options.c): each option's default is printed
 * once, from its target, unless its help line already says it, and never as an empty
 * "(default: )". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "shared/options.h"

/* What km_options_usage prints for opts. */
static char *usage_of(const struct km_option *opts)
{
	char path[] = "/tmp/km-test-options-XXXXXX", *out;
	int fd = mkstemp(path), saved;
	long n;
	FILE *f;

	assert_true(fd >= 0);
	fflush(stdout);
	saved = dup(1);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, 1), 1);
	km_options_usage(opts, "prog", "[OPTIONS]", "A test.");
	fflush(stdout);
	assert_int_equal(dup2(saved, 1), 1);
	close(saved);
	f = fdopen(fd, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	out = calloc(1, (size_t)n + 1);
	assert_non_null(out);
	assert_int_equal(fread(out, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	unlink(path);
	return out;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void defaults_printed_once(void **state)
{
	uint64_t port = 53, depth = 7;
	const char *name = "kmesh", *empty = "", *unset = NULL;
	const struct km_option opts[] = {
		{ "port", KM_OPT_UINT, &port, "PORT", "the resolver's port (default 53)" },
		{ "depth", KM_OPT_UINT, &depth, "N", "how deep" },
		{ "name", KM_OPT_STRING, &name, "NAME", "a name" },
		{ "filter", KM_OPT_STRING, &empty, "EXPR", "an optional filter" },
		{ "other", KM_OPT_STRING, &unset, "X", "an unset one" },
		{ 0 },
	};
	char *out;

	(void)state;
	out = usage_of(opts);
	assert_int_equal(count(out, "(default 53)"), 1);
	assert_int_equal(count(out, "(default: 53)"), 0); /* said once, by the help line */
	assert_int_equal(count(out, "(default: 7)"), 1);
	assert_int_equal(count(out, "(default: kmesh)"), 1);
	assert_int_equal(count(out, "(default: )"), 0);
	assert_int_equal(count(out, "default"), 3);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_printed_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
