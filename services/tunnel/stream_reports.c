/* stream_reports.c — see stream_reports.h. */
#include "services/tunnel/stream_reports.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kmesh_maps.h"
#include "shared/addr.h"
#include "shared/log.h"

struct sr_report {
	Kmesh__Ipc__ConnEvent e;
	uint8_t src[16], dst[16], orig[16];
	char *principal, *baggage; /* owned */
};

static void report_free(struct sr_report *p)
{
	free(p->principal);
	free(p->baggage);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_timer(uv_timer_t *t)
{
	km_stream_reports_flush(t->data);
}

void km_stream_reports_start(struct km_stream_reports *r, uv_loop_t *loop,
			     struct km_peer_link *link)
{
	memset(r, 0, sizeof(*r));
	r->link = link;
	uv_timer_init(loop, &r->timer);
	r->timer.data = r;
	uv_timer_start(&r->timer, on_timer, KM_REPORTS_FLUSH_MS, KM_REPORTS_FLUSH_MS);
}

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

void km_stream_reports_add(struct km_stream_reports *r, const struct km_stream_report *rep)
{
	struct sr_report *p;
	uint16_t sport = 0, dport = 0, oport = 0;

	if (!r->link || r->stopping)
		return;
	if (r->n >= KM_REPORTS_MAX) {
		r->lost++;
		r->lost_unsaid++;
		return;
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct sr_report *q = realloc(r->q, cap * sizeof(*q));

		if (!q) {
			r->lost++;
			r->lost_unsaid++;
			return;
		}
		r->q = q;
		r->cap = cap;
	}
	p = &r->q[r->n];
	memset(p, 0, sizeof(*p));
	kmesh__ipc__conn_event__init(&p->e);
	p->e.kind = rep->kind;
	p->e.direction = rep->direction;
	p->e.src.len = km_sockaddr_to_bytes(rep->client, p->src, &sport);
	p->e.dst.len = km_sockaddr_to_bytes(rep->server, p->dst, &dport);
	p->e.orig_dst.len = rep->orig ? km_sockaddr_to_bytes(rep->orig, p->orig, &oport) : 0;
	p->e.sport = sport;
	p->e.dport = dport;
	p->e.orig_dport = oport;
	p->e.cookie = rep->cookie;
	p->e.mono_ns = mono_ns();
	/* the counters are the pod's: a server receives the client's bytes, a client sends them */
	p->e.received_bytes = rep->direction == KM_CONN_INBOUND ? rep->client_bytes : rep->server_bytes;
	p->e.sent_bytes = rep->direction == KM_CONN_INBOUND ? rep->server_bytes : rep->client_bytes;
	p->principal = dup_or_null(rep->principal);
	/* a close's too: its access log line names the source */
	p->baggage = dup_or_null(rep->baggage);
	r->n++;
	if (r->n >= KM_REPORTS_BATCH)
		km_stream_reports_flush(r);
}

static void sent(struct km_peer_link *l, void *arg, const Kmesh__Ipc__Reply *reply)
{
	(void)l;
	(void)arg;
	if (reply && reply->code != KMESH__IPC__CODE__OK)
		km_warn("the xDS agent refused the HBONE streams' reports: %s", reply->message);
}

void km_stream_reports_flush(struct km_stream_reports *r)
{
	while (r->link && r->link->up && r->n) {
		size_t n = r->n < KM_REPORTS_BATCH ? r->n : KM_REPORTS_BATCH;
		Kmesh__Ipc__ConnEvent *ev[KM_REPORTS_BATCH];
		Kmesh__Ipc__ConnEvents b = KMESH__IPC__CONN_EVENTS__INIT;
		km_envelope env = KMESH__IPC__ENVELOPE__INIT;

		for (size_t i = 0; i < n; i++) {
			struct sr_report *p = &r->q[i];

			p->e.src.data = p->src;
			p->e.dst.data = p->dst;
			p->e.orig_dst.data = p->orig;
			p->e.principal = p->principal ? p->principal : "";
			p->e.baggage = p->baggage ? p->baggage : "";
			ev[i] = &p->e;
		}
		b.events = ev;
		b.n_events = n;
		b.lost = r->lost_unsaid;
		env.body_case = KMESH__IPC__ENVELOPE__BODY_CONN_EVENTS;
		env.conn_events = &b;
		if (km_peer_link_send(r->link, &env, sent, NULL) != 0)
			return; /* the link's queue is full: later */
		r->lost_unsaid = 0;
		r->sent += n;
		for (size_t i = 0; i < n; i++)
			report_free(&r->q[i]);
		memmove(r->q, r->q + n, (r->n - n) * sizeof(*r->q));
		r->n -= n;
	}
}

void km_stream_reports_stop(struct km_stream_reports *r)
{
	r->stopping = 1;
	for (size_t i = 0; i < r->n; i++)
		report_free(&r->q[i]);
	free(r->q);
	r->q = NULL;
	r->n = r->cap = 0;
	uv_close((uv_handle_t *)&r->timer, NULL);
}
