/* events.c — the programs' ring buffers read on the loop, reports streamed (see events.h). */
#include "services/map-writer/events.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kmesh_maps.h"
#include "shared/addr.h"
#include "shared/log.h"

/* One report as a message, with room for its addresses. */
struct km_mw_event_slot {
	Kmesh__Ipc__ConnEvent msg;
	uint8_t src[16], dst[16], orig[16];
};

static void set_bytes(ProtobufCBinaryData *b, uint8_t *buf, const struct km_addr *a)
{
	b->data = buf;
	b->len = km_addr_to_bytes(a, buf);
}

/* Send the batch to every subscriber; forget subscribers whose session has closed. */
static void flush(struct km_mw_events *ev)
{
	Kmesh__Ipc__ConnEvent *ptrs[KM_EVENTS_BATCH];
	Kmesh__Ipc__ConnEvents batch = KMESH__IPC__CONN_EVENTS__INIT;
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	size_t kept = 0;
	int lost = 0;

	if (!ev->n_batch)
		return;
	for (size_t i = 0; i < ev->n_batch; i++)
		ptrs[i] = &ev->batch[i].msg;
	batch.events = ptrs;
	batch.n_events = ev->n_batch;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_CONN_EVENTS;
	env.conn_events = &batch;
	for (size_t i = 0; i < ev->n_subs; i++) {
		struct km_ipc_session *s = km_ipc_server_session(ev->srv, ev->subs[i].serial);

		if (!s)
			continue; /* gone */
		ev->subs[kept] = ev->subs[i];
		if (km_conn_write_queue(&s->conn) > KM_EVENTS_QUEUE_MAX) {
			if (!ev->subs[kept].lost)
				km_warn("subscriber pid %d reads connection reports too slowly; dropping "
					"them until it catches up", (int)s->pid);
			ev->subs[kept].lost += ev->n_batch;
			lost = 1;
		} else {
			batch.lost = ev->subs[kept].lost;
			if (km_msg_send(&s->conn, &env) == 0)
				ev->subs[kept].lost = 0;
			else {
				ev->subs[kept].lost += ev->n_batch;
				lost = 1;
			}
		}
		kept++;
	}
	if (lost) /* each report once, however many subscribers missed it */
		ev->lost_slow += ev->n_batch;
	ev->n_subs = kept;
	ev->n_batch = 0;
}

/* The three kinds of record in km_conn_events are told apart by their sizes. */
_Static_assert(sizeof(struct km_conn_dial) != sizeof(struct km_conn_open) &&
		       sizeof(struct km_conn_dial) != sizeof(struct km_conn_close) &&
		       sizeof(struct km_conn_open) != sizeof(struct km_conn_close),
	       "record sizes");

/* The next message of the batch, or NULL when nobody subscribed. */
static struct km_mw_event_slot *next_slot(struct km_mw_events *ev, uint32_t kind, uint8_t direction,
					  uint64_t cookie, uint64_t ts_ns, const struct km_addr *src,
					  const struct km_addr *dst, uint16_t sport, uint16_t dport)
{
	struct km_mw_event_slot *slot;

	ev->conn_reports++;
	if (!ev->n_subs)
		return NULL;
	slot = &ev->batch[ev->n_batch++];
	kmesh__ipc__conn_event__init(&slot->msg);
	slot->msg.kind = kind;
	slot->msg.direction = direction;
	slot->msg.cookie = cookie;
	slot->msg.mono_ns = ts_ns;
	set_bytes(&slot->msg.src, slot->src, src);
	set_bytes(&slot->msg.dst, slot->dst, dst);
	slot->msg.sport = sport;
	slot->msg.dport = dport;
	return slot;
}

/* An outbound connection's original destination, from its dial, into its first report. Taken
 * even with nobody to tell: the entry is done with. */
static void join_dial(struct km_mw_events *ev, struct km_mw_event_slot *slot, uint8_t direction,
		      uint64_t cookie)
{
	struct km_addr orig;
	uint16_t port;

	if (direction == KM_CONN_OUTBOUND && km_dial_cache_take(&ev->dials_pending, cookie, &orig, &port) &&
	    slot) {
		set_bytes(&slot->msg.orig_dst, slot->orig, &orig);
		slot->msg.orig_dport = port;
	}
}

/* CLOCK_MONOTONIC, as bpf_ktime_get_ns: the time of a report the kernel did not stamp
 * (KM_CFG_F_OPEN_REPORTS off), read at most KM_CONN_EVENTS_POLL_MS after it was made. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A report with the byte counters: a close, or an open connection's counters so far. Without an
 * open report (sockops is attached only while something needs it: docs/map-writer.md) the first
 * of these carries the dial. */
static void add_counted(struct km_mw_events *ev, uint32_t kind, const struct km_conn_close *c)
{
	struct km_mw_event_slot *slot = next_slot(ev, kind, c->direction, c->cookie,
						  c->ts_ns ? c->ts_ns : now_ns(), &c->src, &c->dst,
						  c->sport, c->dport);

	join_dial(ev, slot, c->direction, c->cookie);
	if (slot) {
		slot->msg.sent_bytes = c->sent_bytes;
		slot->msg.received_bytes = c->received_bytes;
		slot->msg.retrans = c->retrans;
		slot->msg.srtt_us = c->srtt_us;
	}
	if (ev->n_batch == KM_EVENTS_BATCH)
		flush(ev);
}

static int on_conn_event(void *ctx, void *data, size_t size)
{
	struct km_mw_events *ev = ctx;
	struct km_mw_event_slot *slot;

	if (size == sizeof(struct km_conn_dial)) {
		const struct km_conn_dial *d = data;

		ev->dials++;
		km_dial_cache_put(&ev->dials_pending, d->cookie, &d->orig_dst, d->orig_dport);
		return 0;
	}
	if (size == sizeof(struct km_conn_open)) {
		const struct km_conn_open *o = data;

		slot = next_slot(ev, KM_CONN_OPEN, o->direction, o->cookie, o->ts_ns, &o->src, &o->dst,
				 o->sport, o->dport);
		join_dial(ev, slot, o->direction, o->cookie);
	} else if (size == sizeof(struct km_conn_close)) {
		const struct km_conn_close *c = data;

		if (ev->in_pass)
			km_cookie_set_add(&ev->closed_in_pass, c->cookie);
		add_counted(ev, KM_CONN_CLOSE, c);
		return 0;
	} else {
		return 0; /* not a record this build knows */
	}
	if (ev->n_batch == KM_EVENTS_BATCH)
		flush(ev);
	return 0;
}

void km_mw_events_pass_begin(struct km_mw_events *ev)
{
	km_cookie_set_clear(&ev->closed_in_pass);
	ev->in_pass = 1;
}

void km_mw_events_progress(struct km_mw_events *ev, const struct km_conn_close *c)
{
	/* read before it closed, and its close already sent: a report after the close would make
	 * a subscriber count a connection that is gone (it counts one opened at its first report) */
	if (km_cookie_set_may_have(&ev->closed_in_pass, c->cookie)) {
		ev->progress_after_close++;
		return;
	}
	add_counted(ev, KM_CONN_PROGRESS, c);
}

void km_mw_events_pass_end(struct km_mw_events *ev)
{
	ev->in_pass = 0;
	km_cookie_set_clear(&ev->closed_in_pass);
}

void km_mw_events_flush(struct km_mw_events *ev)
{
	flush(ev);
}

static int on_log_record(void *ctx, void *data, size_t size)
{
	struct km_mw_events *ev = ctx;
	const struct km_bpf_log_record *r = data;
	char msg[KM_BPF_LOG_MSG];

	if (size < sizeof(*r))
		return 0;
	ev->log_records++;
	memcpy(msg, r->msg, sizeof(msg));
	msg[sizeof(msg) - 1] = '\0';
	km_log_always(r->level <= KM_BPF_LOG_DEBUG ? (enum km_log_level)r->level : KM_LOG_DEBUG,
		      "bpf: %s", msg);
	return 0;
}

void km_mw_events_read(struct km_mw_events *ev)
{
	int n = ring_buffer__consume(ev->rb);

	if (n < 0)
		km_warn("reading the programs' reports: %s", strerror(-n));
	flush(ev);
}

static void on_readable(uv_poll_t *p, int status, int events)
{
	(void)events;
	if (status < 0) {
		km_error("reading the programs' reports: %s", uv_strerror(status));
		return;
	}
	km_mw_events_read(p->data);
}

static void on_timer(uv_timer_t *t)
{
	km_mw_events_read(t->data);
}

int km_mw_events_start(struct km_mw_events *ev, uv_loop_t *loop, struct km_ipc_server *srv,
		       int fd_conn_events, int fd_bpf_log, int fd_drops)
{
	int err;

	memset(ev, 0, sizeof(*ev));
	ev->loop = loop;
	ev->srv = srv;
	ev->fd_drops = fd_drops;
	ev->batch = calloc(KM_EVENTS_BATCH, sizeof(*ev->batch));
	if (!ev->batch || km_dial_cache_init(&ev->dials_pending) != 0 ||
	    km_cookie_set_init(&ev->closed_in_pass, KM_EVENTS_CLOSED_IN_PASS) != 0) {
		km_mw_events_stop(ev);
		return -ENOMEM;
	}
	ev->rb = ring_buffer__new(fd_conn_events, on_conn_event, ev, NULL);
	if (!ev->rb || ring_buffer__add(ev->rb, fd_bpf_log, on_log_record, ev) != 0) {
		err = -errno;
		km_error("cannot read the programs' ring buffers: %s", strerror(-err));
		km_mw_events_stop(ev);
		return err;
	}
	if ((err = uv_poll_init(loop, &ev->poll, ring_buffer__epoll_fd(ev->rb))) != 0) {
		km_error("cannot poll the programs' ring buffers: %s", uv_strerror(err));
		km_mw_events_stop(ev);
		return err;
	}
	ev->poll.data = ev;
	ev->polling = 1;
	if ((err = uv_poll_start(&ev->poll, UV_READABLE, on_readable)) != 0) {
		km_error("cannot poll the programs' ring buffers: %s", uv_strerror(err));
		km_mw_events_stop(ev);
		return err;
	}
	uv_timer_init(loop, &ev->timer);
	ev->timer.data = ev;
	ev->timing = 1;
	uv_timer_start(&ev->timer, on_timer, KM_CONN_EVENTS_POLL_MS, KM_CONN_EVENTS_POLL_MS);
	return 0;
}

int km_mw_events_subscribe(struct km_mw_events *ev, struct km_ipc_session *s, int opens, char *err,
			   size_t errlen)
{
	km_mw_events_subscribers(ev); /* forget closed sessions first */
	for (size_t i = 0; i < ev->n_subs; i++)
		if (ev->subs[i].serial == s->serial) {
			ev->subs[i].opens = !!opens;
			return 0;
		}
	if (ev->n_subs == KM_EVENTS_MAX_SUBSCRIBERS) {
		snprintf(err, errlen, "already %d subscribers", KM_EVENTS_MAX_SUBSCRIBERS);
		return -1;
	}
	ev->subs[ev->n_subs].serial = s->serial;
	ev->subs[ev->n_subs].lost = 0;
	ev->subs[ev->n_subs].opens = !!opens;
	ev->n_subs++;
	km_info("pid %d (%s) subscribed to connection reports%s", (int)s->pid, s->process,
		opens ? ", with open reports" : "");
	return 0;
}

int km_mw_events_opens_wanted(struct km_mw_events *ev, uint64_t except_serial)
{
	km_mw_events_subscribers(ev);
	for (size_t i = 0; i < ev->n_subs; i++)
		if (ev->subs[i].opens && ev->subs[i].serial != except_serial)
			return 1;
	return 0;
}

size_t km_mw_events_subscribers(struct km_mw_events *ev)
{
	size_t kept = 0;

	for (size_t i = 0; i < ev->n_subs; i++)
		if (km_ipc_server_session(ev->srv, ev->subs[i].serial))
			ev->subs[kept++] = ev->subs[i];
	ev->n_subs = kept;
	return kept;
}

void km_mw_events_lost(const struct km_mw_events *ev, uint64_t *conn, uint64_t *log)
{
	struct km_event_drops_value d = { 0 };
	__u32 key = 0;

	if (ev->fd_drops >= 0)
		bpf_map_lookup_elem(ev->fd_drops, &key, &d);
	*conn = d.conn_events + ev->lost_slow;
	*log = d.log_records;
}

static void on_poll_closed(uv_handle_t *h)
{
	(void)h;
}

void km_mw_events_stop(struct km_mw_events *ev)
{
	if (ev->polling) {
		uv_close((uv_handle_t *)&ev->poll, on_poll_closed);
		ev->polling = 0;
	}
	if (ev->timing) {
		uv_close((uv_handle_t *)&ev->timer, on_poll_closed);
		ev->timing = 0;
	}
	ring_buffer__free(ev->rb); /* the poll handle's fd is libbpf's: closed after uv_close */
	ev->rb = NULL;
	free(ev->batch);
	ev->batch = NULL;
	km_dial_cache_free(&ev->dials_pending);
	km_cookie_set_free(&ev->closed_in_pass);
}
