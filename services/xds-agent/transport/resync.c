/* resync.c — backoff of the full rewrites that follow refusals (see resync.h). */
#include "services/xds-agent/transport/resync.h"

#include "shared/log.h"

static void on_timer(uv_timer_t *t)
{
	struct km_resync *r = t->data;

	r->armed_ms = 0;
	r->rewrites++;
	r->run(r->arg);
}

void km_resync_init(struct km_resync *r, uv_loop_t *loop, uint64_t min_ms, uint64_t max_ms,
		    void (*run)(void *arg), void *arg)
{
	uv_timer_init(loop, &r->timer);
	r->timer.data = r;
	r->min_ms = min_ms;
	r->max_ms = max_ms < min_ms ? min_ms : max_ms;
	r->delay_ms = min_ms;
	r->armed_ms = 0;
	r->rewrites = 0;
	r->refusals = 0;
	r->refused_at_start = 0;
	r->started = 0;
	r->run = run;
	r->arg = arg;
}

void km_resync_refused(struct km_resync *r)
{
	r->refusals++;
	if (r->armed_ms)
		return;
	r->armed_ms = r->delay_ms;
	uv_timer_start(&r->timer, on_timer, r->armed_ms, 0);
	if (r->armed_ms > r->min_ms)
		km_warn("rows refused again after a full rewrite: the next one in %.1f s (the wait "
			"doubles, up to %.0f s, until one goes through)",
			(double)r->armed_ms / 1000.0, (double)r->max_ms / 1000.0);
	else
		km_info("rows refused: writing the whole model again in %llu ms",
			(unsigned long long)r->armed_ms);
	r->delay_ms = r->delay_ms * 2 > r->max_ms ? r->max_ms : r->delay_ms * 2;
}

void km_resync_started(struct km_resync *r)
{
	r->refused_at_start = r->refusals;
	r->started = 1;
}

void km_resync_synced(struct km_resync *r)
{
	if (!r->started || r->refusals != r->refused_at_start)
		return;
	r->started = 0;
	if (r->delay_ms != r->min_ms)
		km_info("a full rewrite went through: the tables hold the whole model again");
	r->delay_ms = r->min_ms;
}

void km_resync_close(struct km_resync *r)
{
	uv_close((uv_handle_t *)&r->timer, NULL);
}
