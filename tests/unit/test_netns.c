/* test_netns.c — a namespace path is opened without blocking and must be a namespace: a FIFO
 * put where a pod's netns path should be (CNI_NETNS, or an enrolled pod's path the map writer
 * enters) hung the caller in open() until someone wrote it (issue 25, item 7). An alarm fails
 * the test instead of hanging. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "shared/netns.h"

static int called(void *arg, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	(*(int *)arg)++;
	return 0;
}

static void test_fifo_is_refused_at_once(void **state)
{
	char dir[] = "/tmp/km-netns-XXXXXX", path[64], err[256];
	int n = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(5); /* the old code blocked here forever */
	assert_int_equal(km_netns_call(path, called, &n, err, sizeof(err)), -EINVAL);
	alarm(0);
	assert_int_equal(n, 0);
	assert_non_null(strstr(err, "is not a namespace"));
	unlink(path);
	rmdir(dir);
}

static void test_regular_file_is_refused(void **state)
{
	char dir[] = "/tmp/km-netns-XXXXXX", path[64], err[256];
	int n = 0, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/file", dir);
	assert_true((fd = open(path, O_CREAT | O_WRONLY, 0600)) >= 0);
	close(fd);
	assert_int_equal(km_netns_call(path, called, &n, err, sizeof(err)), -EINVAL);
	assert_int_equal(n, 0);
	unlink(path);
	rmdir(dir);
}

static void test_missing_is_gone(void **state)
{
	char err[256];
	int n = 0;

	(void)state;
	assert_int_equal(km_netns_call("/tmp/km-netns-none/nothing", called, &n, err, sizeof(err)),
			 -ENOENT);
	assert_int_equal(n, 0);
}

/* A real namespace (this thread's own) is entered and left. */
static void test_namespace_is_entered(void **state)
{
	char err[256];
	int n = 0;

	(void)state;
	if (geteuid() != 0)
		skip(); /* setns needs CAP_SYS_ADMIN */
	assert_int_equal(km_netns_call("/proc/thread-self/ns/net", called, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo_is_refused_at_once),
		cmocka_unit_test(test_regular_file_is_refused),
		cmocka_unit_test(test_missing_is_gone),
		cmocka_unit_test(test_namespace_is_entered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
