/* service_manager.h — telling systemd (or any manager speaking its notify protocol, through
 * sd_notify(3)'s protocol, spoken here) that a daemon is ready, alive and stopping. Without NOTIFY_SOCKET in
 * the environment (containers, a shell) every call does nothing. The units are Type=notify with
 * WatchdogSec=: the watchdog is pinged from the event loop, so a loop that stops turning gets
 * the process restarted, where a process that is merely alive would not. */
#ifndef KM_SHARED_SERVICE_MANAGER_H
#define KM_SHARED_SERVICE_MANAGER_H

#include <stdint.h>

#include <uv.h>

struct km_service_manager {
	uv_timer_t watchdog;
	int watchdog_on;
};

/* READY=1 with a STATUS= line, then, when the manager asked for a watchdog (WATCHDOG_USEC),
 * WATCHDOG=1 every half of its interval from loop. */
void km_sm_ready(struct km_service_manager *sm, uv_loop_t *loop, const char *status);
/* STATUS=text: what `systemctl status` shows. */
void km_sm_status(const char *status);
/* One message (newline-separated assignments) to the manager NOTIFY_SOCKET names: a socket path,
 * or "@name" in the abstract namespace. Returns 1 when sent, 0 when there is no manager, or
 * -errno. */
int km_sm_notify(const char *msg);
/* The watchdog interval the manager asked for (WATCHDOG_USEC, when WATCHDOG_PID is unset or this
 * process), or 0. */
uint64_t km_sm_watchdog_usec(void);
/* STOPPING=1, and the watchdog timer closed (before the loop is left to close its handles). */
void km_sm_stopping(struct km_service_manager *sm);

#endif
