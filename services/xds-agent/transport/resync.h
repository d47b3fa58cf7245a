/* resync.h — when the agent rewrites the whole model after the map writer refused rows (a table
 * full, memory short): first after `min_ms`, and after each rewrite that was refused again twice
 * as long, up to `max_ms`. Without the backoff a table that stays full makes the agent rewrite
 * everything every few seconds for ever; at a million endpoints each rewrite is millions of ops,
 * and single changes wait behind them. A rewrite that goes through without a refusal resets the
 * wait. The owner reports refusals and the start and end of each full rewrite; this module owns
 * the timer and calls `run` when a rewrite is due. */
#ifndef KM_XDS_RESYNC_H
#define KM_XDS_RESYNC_H

#include <stdint.h>
#include <uv.h>

struct km_resync {
	uv_timer_t timer;
	uint64_t min_ms, max_ms;
	uint64_t delay_ms;         /* the wait armed after the next refusal */
	uint64_t armed_ms;         /* the wait armed now (0: no rewrite due) */
	uint64_t rewrites;         /* rewrites run because of refusals */
	uint64_t refusals;         /* km_resync_refused calls */
	uint64_t refused_at_start; /* `refusals` when the last full rewrite began */
	int started;               /* a full rewrite began and has not been answered in full yet */
	void (*run)(void *arg);    /* write the whole model again (then call km_resync_started) */
	void *arg;
};

void km_resync_init(struct km_resync *r, uv_loop_t *loop, uint64_t min_ms, uint64_t max_ms,
		    void (*run)(void *arg), void *arg);
/* Rows were refused (or ops dropped): arm a rewrite (unless one is armed), and double the next wait. */
void km_resync_refused(struct km_resync *r);
/* A full rewrite was queued. */
void km_resync_started(struct km_resync *r);
/* Every queued op was answered: if a full rewrite was among them and nothing was refused since
 * it began, the tables hold the whole model and the wait starts again from min_ms. */
void km_resync_synced(struct km_resync *r);
void km_resync_close(struct km_resync *r);

#endif
