/* service_manager.c — readiness, status and watchdog for systemd (see service_manager.h). */
#include "shared/daemon/service_manager.h"

#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include "shared/log.h"

static void on_watchdog(uv_timer_t *t)
{
	(void)t;
	sd_notify(0, "WATCHDOG=1");
}

void km_sm_ready(struct km_service_manager *sm, uv_loop_t *loop, const char *status)
{
	char msg[512];
	uint64_t usec = 0;
	int rc;

	memset(sm, 0, sizeof(*sm));
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", status);
	rc = sd_notify(0, msg);
	if (rc < 0)
		km_warn("cannot tell the service manager it is ready: %s", strerror(-rc));
	if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
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
	sd_notify(0, msg);
}

void km_sm_stopping(struct km_service_manager *sm)
{
	sd_notify(0, "STOPPING=1");
	if (sm->watchdog_on) {
		sm->watchdog_on = 0;
		uv_close((uv_handle_t *)&sm->watchdog, NULL);
	}
}
