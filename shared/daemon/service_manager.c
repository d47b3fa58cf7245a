/* service_manager.c — readiness, status and watchdog for systemd (see service_manager.h). The
 * notify protocol is spoken here, not through libsystemd: it is one datagram per message, which
 * sd_notify(3) documents as stable and meant to be reimplemented, and libsystemd brought six
 * libraries (libgcrypt, libgpg-error, liblzma, libzstd, liblz4, libcap) into every daemon:
 * ~0.8 MB of resident pages each. */
#include "shared/daemon/service_manager.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "shared/log.h"

int km_sm_notify(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n;
	int fd, rc = 1;

	if (!path || !*path)
		return 0;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n < 2 || n > sizeof(sa.sun_path))
		return -EAFNOSUPPORT; /* e.g. systemd's vsock form, for a VM's own manager */
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = '\0'; /* the abstract namespace */
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

uint64_t km_sm_watchdog_usec(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	unsigned long long v;
	char *end;

	if (!usec || !*usec)
		return 0;
	errno = 0;
	v = strtoull(usec, &end, 10);
	if (errno || *end || *usec == '-')
		return 0;
	if (pid && *pid) { /* meant for another process (a parent that exec'd us keeps it) */
		long p = strtol(pid, &end, 10);

		if (*end || p != (long)getpid())
			return 0;
	}
	return v;
}

static void on_watchdog(uv_timer_t *t)
{
	(void)t;
	km_sm_notify("WATCHDOG=1");
}

void km_sm_ready(struct km_service_manager *sm, uv_loop_t *loop, const char *status)
{
	char msg[512];
	uint64_t usec = 0;
	int rc;

	memset(sm, 0, sizeof(*sm));
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", status);
	rc = km_sm_notify(msg);
	if (rc < 0)
		km_warn("cannot tell the service manager (NOTIFY_SOCKET=%s) it is ready: %s",
			getenv("NOTIFY_SOCKET"), strerror(-rc));
	if ((usec = km_sm_watchdog_usec()) == 0)
		return;
	if (uv_timer_init(loop, &sm->watchdog) != 0)
		return;
	sm->watchdog_on = 1;
	uv_unref((uv_handle_t *)&sm->watchdog); /* the loop ends when the process's work does */
	uv_timer_start(&sm->watchdog, on_watchdog, 0, usec / 2000 ? usec / 2000 : 1);
	km_info("service manager watchdog: pinged every %llu ms", (unsigned long long)(usec / 2000));
}

void km_sm_status(const char *status)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "STATUS=%s", status);
	km_sm_notify(msg);
}

void km_sm_stopping(struct km_service_manager *sm)
{
	km_sm_notify("STOPPING=1");
	if (sm->watchdog_on) {
		sm->watchdog_on = 0;
		uv_close((uv_handle_t *)&sm->watchdog, NULL);
	}
}
