/* conn_progress.c — see conn_progress.h. */
#include "services/map-writer/conn_progress.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shared/log.h"

static void on_record(void *arg, uint64_t netns_cookie, const void *data)
{
	struct km_conn_progress *p = arg;

	(void)netns_cookie;
	if (p->n == KM_CONN_PROGRESS_MAX) {
		p->pass_skipped++;
		return;
	}
	memcpy(&p->recs[p->n++], data, sizeof(*p->recs));
}

static void run_pass(uv_work_t *req)
{
	struct km_conn_progress *p = req->data;

	km_pod_iter_walk(&p->env, p->link_fd, sizeof(struct km_conn_close), on_record, p,
			 &p->closing, &p->pass);
}

static void pass_done(uv_work_t *req, int status)
{
	struct km_conn_progress *p = req->data;

	p->busy = 0;
	if (status == UV_ECANCELED || p->closing) {
		if (!p->closing)
			km_mw_events_pass_end(p->events);
		if (uv_is_closing((uv_handle_t *)&p->timer)) { /* its close callback left them */
			free(p->recs);
			p->recs = NULL;
		}
		return;
	}
	p->passes++;
	p->skipped += p->pass_skipped;
	/* the opens still in the ring buffer first: a subscriber counts a connection's progress
	 * only once it knows the connection */
	km_mw_events_read(p->events);
	for (size_t i = 0; i < p->n; i++)
		km_mw_events_progress(p->events, &p->recs[i]);
	km_mw_events_pass_end(p->events);
	km_mw_events_flush(p->events);
	p->reported += p->n;
	if (p->pass_skipped)
		km_warn("connection reports: %llu open connections past the first %d not reported "
			"this pass (their close still is)", (unsigned long long)p->pass_skipped,
			KM_CONN_PROGRESS_MAX);
	/* an error that repeats every pass is logged when it starts, not every pass */
	if (p->pass.errors && !p->warned_errors)
		km_warn("connection reports: open connections of %u of %u pods not read; the first: "
			"%s", p->pass.errors, p->pass.pods, p->pass.error);
	p->warned_errors = p->pass.errors;
	km_debug("connection reports: pass over %u pods (%u gone, %u without their netns mount): "
		 "%zu open connections", p->pass.pods, p->pass.gone, p->pass.missing, p->n);
}

static void on_timer(uv_timer_t *t)
{
	struct km_conn_progress *p = t->data;

	if (p->busy || !(*p->flags & KM_CFG_F_MONITORING) ||
	    !km_mw_events_subscribers(p->events))
		return; /* nothing to report, or nobody to tell */
	p->n = 0;
	p->pass_skipped = 0;
	p->work.data = p;
	km_mw_events_pass_begin(p->events); /* before the pass reads a socket */
	if (uv_queue_work(p->loop, &p->work, run_pass, pass_done) != 0) {
		km_warn("connection reports: cannot queue the pass over open connections");
		km_mw_events_pass_end(p->events);
		return;
	}
	p->busy = 1;
}

int km_conn_progress_start(struct km_conn_progress *p, uv_loop_t *loop, int link_fd,
			   uint64_t interval_ms, int fd_manage, int fd_pod_netns,
			   struct km_mw_events *events, const uint16_t *flags)
{
	int err;

	memset(p, 0, sizeof(*p));
	p->loop = loop;
	p->link_fd = link_fd;
	p->events = events;
	p->flags = flags;
	km_pod_iter_env_init(&p->env, fd_manage, fd_pod_netns);
	if ((err = uv_timer_init(loop, &p->timer)) != 0)
		return err;
	p->timer.data = p;
	if (link_fd < 0 || !interval_ms)
		return 0;
	if (!(p->recs = malloc(KM_CONN_PROGRESS_MAX * sizeof(*p->recs))))
		return -ENOMEM;
	return uv_timer_start(&p->timer, on_timer, interval_ms, interval_ms);
}

static void on_timer_closed(uv_handle_t *h)
{
	struct km_conn_progress *p = h->data;

	if (!p->busy) {
		free(p->recs);
		p->recs = NULL;
	}
}

void km_conn_progress_stop(struct km_conn_progress *p)
{
	__atomic_store_n(&p->closing, 1, __ATOMIC_RELAXED);
	if (p->loop && !uv_is_closing((uv_handle_t *)&p->timer))
		uv_close((uv_handle_t *)&p->timer, on_timer_closed);
}
