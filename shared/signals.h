/* signals.h — process signal handling on the libuv loop: SIGINT/SIGTERM ask for a graceful
 * shutdown (the callback runs once), SIGUSR1/SIGUSR2 raise/lower the log level, SIGPIPE ignored. */
#ifndef KM_SHARED_SIGNALS_H
#define KM_SHARED_SIGNALS_H

#include <uv.h>

typedef void (*km_shutdown_cb)(void *arg, int signum);

struct km_signals {
	uv_signal_t sigint, sigterm, sigusr1, sigusr2;
	km_shutdown_cb cb;
	void *arg;
	int fired;
};

int km_signals_init(uv_loop_t *loop, struct km_signals *s, km_shutdown_cb cb, void *arg);
/* Closes the signal handles (call from the shutdown path so the loop can end). */
void km_signals_close(struct km_signals *s);

#endif
