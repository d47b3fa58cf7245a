/* signals.c — graceful shutdown and log-level signals (see signals.h). */
#include "shared/signals.h"

#include <signal.h>
#include <unistd.h>

#include "shared/log.h"

static void on_signal(uv_signal_t *h, int signum)
{
	struct km_signals *s = h->data;
	enum km_log_level lvl = km_log_get_level();

	if (signum == SIGUSR1 || signum == SIGUSR2) {
		if (signum == SIGUSR1 && lvl < KM_LOG_DEBUG)
			lvl++;
		else if (signum == SIGUSR2 && lvl > KM_LOG_ERROR)
			lvl--;
		km_log_set_level(lvl);
		km_log(KM_LOG_WARN, "log level set to %s by signal", km_log_level_name(lvl));
		return;
	}
	if (s->fired) {
		km_warn("second termination signal: exiting now");
		_exit(1);
	}
	s->fired = 1;
	km_info("received %s: shutting down", signum == SIGINT ? "SIGINT" : "SIGTERM");
	s->cb(s->arg, signum);
}

int km_signals_init(uv_loop_t *loop, struct km_signals *s, km_shutdown_cb cb, void *arg)
{
	uv_signal_t *hs[] = { &s->sigint, &s->sigterm, &s->sigusr1, &s->sigusr2 };
	int sigs[] = { SIGINT, SIGTERM, SIGUSR1, SIGUSR2 };
	int err;

	signal(SIGPIPE, SIG_IGN);
	s->cb = cb;
	s->arg = arg;
	s->fired = 0;
	for (int i = 0; i < 4; i++) {
		err = uv_signal_init(loop, hs[i]);
		if (err)
			return err;
		hs[i]->data = s;
		err = uv_signal_start(hs[i], on_signal, sigs[i]);
		if (err)
			return err;
		uv_unref((uv_handle_t *)hs[i]); /* signals alone do not keep the loop alive */
	}
	return 0;
}

void km_signals_close(struct km_signals *s)
{
	uv_signal_t *hs[] = { &s->sigint, &s->sigterm, &s->sigusr1, &s->sigusr2 };

	for (int i = 0; i < 4; i++)
		if (!uv_is_closing((uv_handle_t *)hs[i]))
			uv_close((uv_handle_t *)hs[i], NULL);
}
