/* test_service_manager.c — systemd's notify protocol as the daemons speak it
 * (shared/daemon/service_manager.c): a datagram to the socket NOTIFY_SOCKET names, a path or an
 * abstract name; nothing without one; a form it cannot reach refused clearly; the watchdog's
 * interval only when it is this process's; pings from the loop at half the interval, and
 * STOPPING=1. The daemons under a real listener: tests/integration/service_manager_test.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "shared/daemon/service_manager.h"

/* A datagram socket playing the manager, bound to name ("@x": abstract); NOTIFY_SOCKET set. */
static int manager(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	assert_true(fd >= 0);
	memcpy(sa.sun_path, name, n);
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	else
		unlink(name);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)), 0);
	setenv("NOTIFY_SOCKET", name, 1);
	return fd;
}

static void expect(int fd, const char *msg)
{
	char buf[600];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);

	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, msg);
}

static void notify_reaches_path_and_abstract(void **state)
{
	char path[64], abstract[64];
	int fd;

	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(km_sm_notify("READY=1"), 0); /* no manager: nothing to do */
	snprintf(path, sizeof(path), "/tmp/kmsm-%d.sock", (int)getpid());
	fd = manager(path);
	assert_int_equal(km_sm_notify("READY=1\nSTATUS=up"), 1);
	expect(fd, "READY=1\nSTATUS=up");
	close(fd);
	unlink(path);
	assert_true(km_sm_notify("READY=1") < 0); /* gone: an error, not silence */
	snprintf(abstract, sizeof(abstract), "@kmsm-%d", (int)getpid());
	fd = manager(abstract);
	km_sm_status("tables written");
	expect(fd, "STATUS=tables written");
	close(fd);
	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	assert_int_equal(km_sm_notify("READY=1"), -EAFNOSUPPORT);
	setenv("NOTIFY_SOCKET", "@", 1);
	assert_int_equal(km_sm_notify("READY=1"), -EAFNOSUPPORT);
	unsetenv("NOTIFY_SOCKET");
}

static void watchdog_only_when_ours(void **state)
{
	char pid[32];

	(void)state;
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	assert_int_equal(km_sm_watchdog_usec(), 0);
	setenv("WATCHDOG_USEC", "4000000", 1);
	assert_int_equal(km_sm_watchdog_usec(), 4000000);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	assert_int_equal(km_sm_watchdog_usec(), 4000000);
	setenv("WATCHDOG_PID", "1", 1); /* the parent's */
	assert_int_equal(km_sm_watchdog_usec(), 0);
	unsetenv("WATCHDOG_PID");
	setenv("WATCHDOG_USEC", "20s", 1);
	assert_int_equal(km_sm_watchdog_usec(), 0);
	setenv("WATCHDOG_USEC", "-5", 1);
	assert_int_equal(km_sm_watchdog_usec(), 0);
	unsetenv("WATCHDOG_USEC");
}

static void stop_loop(uv_timer_t *t)
{
	uv_stop(t->loop);
}

static void pings_from_the_loop(void **state)
{
	struct km_service_manager sm;
	uv_loop_t loop;
	uv_timer_t stop;
	char path[64], buf[64];
	int fd, pings = 0;
	ssize_t n;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/kmsm-w-%d.sock", (int)getpid());
	fd = manager(path);
	setenv("WATCHDOG_USEC", "20000", 1); /* 20 ms: a ping every 10 */
	assert_int_equal(uv_loop_init(&loop), 0);
	km_sm_ready(&sm, &loop, "ready");
	expect(fd, "READY=1\nSTATUS=ready");
	uv_timer_init(&loop, &stop);
	uv_timer_start(&stop, stop_loop, 100, 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	while ((n = recv(fd, buf, sizeof(buf) - 1, 0)) > 0) {
		buf[n] = '\0';
		assert_string_equal(buf, "WATCHDOG=1");
		pings++;
	}
	assert_true(pings >= 3);
	km_sm_stopping(&sm);
	expect(fd, "STOPPING=1");
	uv_close((uv_handle_t *)&stop, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
	close(fd);
	unlink(path);
	unsetenv("WATCHDOG_USEC");
	unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(notify_reaches_path_and_abstract),
		cmocka_unit_test(watchdog_only_when_ours),
		cmocka_unit_test(pings_from_the_loop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
