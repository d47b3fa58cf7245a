/* hbone_client.c — see hbone_client.h. */
#include "services/tunnel/hbone_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "services/tunnel/client_tls.h"
#include "services/tunnel/h2_relay.h"
#include "services/tunnel/tls_openssl.h"
#include "shared/log.h"

#define HC_CORK_MAX (256u << 10)   /* sealed bytes gathered for one write to the server */
#define HC_CONN_UNSENT (1u << 20)  /* nothing more framed while this much waits */

struct hc_stream {
	struct km_h2_relay relay; /* first: the relay's pointer is the stream's */
	struct km_hbone_client *c;
	struct hc_stream *next;
	int status;
	int answered;
	char why[160];
	void *arg;
};

static void flush(struct km_hbone_client *c);
static void free_handle(uv_handle_t *h)
{
	free(h);
}

int km_hbone_client_tick(struct km_hbone_client *c, uint64_t now_ms, uint64_t ping_ms)
{
	if (!c->ready || !c->session || c->closing || !ping_ms)
		return 0;
	if (c->ping_sent_ms) {
		if (now_ms - c->ping_sent_ms < 2 * ping_ms)
			return 0;
		snprintf(c->error, sizeof(c->error), "no answer to a PING in %llu ms: gone",
			 (unsigned long long)(2 * ping_ms));
		km_hbone_client_close(c);
		return 1;
	}
	if (now_ms - c->last_recv_ms >= ping_ms &&
	    nghttp2_submit_ping(c->session, NGHTTP2_FLAG_NONE, NULL) == 0) {
		c->ping_sent_ms = now_ms ? now_ms : 1;
		flush(c);
	}
	return 0;
}

static void maybe_done(struct km_hbone_client *c);
static void stream_free_if_done(struct hc_stream *st);

static void relay_flush(struct km_h2_relay *r)
{
	flush(((struct hc_stream *)r)->c);
}

static void relay_released(struct km_h2_relay *r)
{
	stream_free_if_done((struct hc_stream *)r);
}

static const struct km_h2_relay_ops hc_ops = { relay_flush, relay_released, 0 };
static const struct km_h2_relay_ops hc_ops_gather = { relay_flush, relay_released, 1 };

/* ---- streams ----------------------------------------------------------------------------- */

static struct hc_stream *stream_of(struct km_hbone_client *c, int32_t id)
{
	for (struct hc_stream *s = c->streams; s; s = s->next)
		if (s->relay.id == id)
			return s;
	return NULL;
}

static void idle_close(uv_timer_t *t)
{
	struct km_hbone_client *c = t->data;

	if (c->n_streams || c->closing)
		return;
	km_debug("HBONE outbound: the connection to the server is idle: closed");
	if (c->session && nghttp2_session_terminate_session(c->session, NGHTTP2_NO_ERROR) == 0)
		flush(c); /* the GOAWAY goes out; the server closes, or the flush below ends it */
	km_hbone_client_close(c);
}

static void stream_free_if_done(struct hc_stream *st)
{
	struct km_hbone_client *c = st->c;
	struct km_hbone_stream_end e;

	if (!st->relay.h2_closed || km_h2_relay_busy(&st->relay))
		return;
	for (struct hc_stream **pp = &c->streams; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	c->n_streams--;
	e.status = st->status;
	e.why = st->why[0] ? st->why : NULL;
	e.to_peer = st->relay.from_up;
	e.from_peer = st->relay.to_up;
	e.arg = st->arg;
	if (c->ops.on_stream_end)
		c->ops.on_stream_end(c, &e); /* (e.why is the stream's: before it goes) */
	km_h2_relay_free(&st->relay);
	free(st);
	if (!c->n_streams && c->ready && !c->closing && c->idle_ms)
		uv_timer_start(&c->timer, idle_close, c->idle_ms, 0);
	maybe_done(c);
}

static void answered(struct hc_stream *st, int status)
{
	struct km_hbone_client *c = st->c;

	st->answered = 1;
	st->status = status;
	if (c->ops.on_answer)
		c->ops.on_answer(c, st->arg, status);
	if (status == 200) {
		km_h2_relay_start(&st->relay);
		return;
	}
	snprintf(st->why, sizeof(st->why), "the server answered %d", status);
	km_h2_relay_close_up(&st->relay, 1);
	if (c->session)
		nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, st->relay.id, NGHTTP2_CANCEL);
}

/* ---- nghttp2 callbacks ------------------------------------------------------------------- */

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
		     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *user)
{
	struct hc_stream *st = stream_of(user, frame->hd.stream_id);

	(void)session;
	(void)flags;
	if (st && frame->hd.type == NGHTTP2_HEADERS && namelen == 7 &&
	    !memcmp(name, ":status", 7) && valuelen == 3)
		st->status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
	return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user)
{
	struct hc_stream *st = stream_of(user, frame->hd.stream_id);

	(void)session;
	if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK))
		((struct km_hbone_client *)user)->ping_sent_ms = 0; /* our PING answered */
	if (!st)
		return 0;
	if (frame->hd.type == NGHTTP2_HEADERS && !st->answered && st->status >= 200)
		answered(st, st->status);
	if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
	    (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
		km_h2_relay_peer_eof(&st->relay);
	return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *data,
			 size_t len, void *user)
{
	struct hc_stream *st = stream_of(user, id);

	(void)flags;
	if (!st || st->status != 200) {
		nghttp2_session_consume(session, id, len); /* nobody to give it to */
		return 0;
	}
	km_h2_relay_data(&st->relay, data, len); /* (given back at once if it cannot be kept) */
	return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t id, uint32_t code, void *user)
{
	struct hc_stream *st = stream_of(user, id);

	(void)session;
	if (!st)
		return 0;
	if (!st->answered && !st->why[0])
		snprintf(st->why, sizeof(st->why), "the server reset the stream before answering "
			 "(%s)", nghttp2_http2_strerror(code));
	km_h2_relay_stream_closed(&st->relay, code);
	stream_free_if_done(st);
	return 0;
}

/* ---- writing ----------------------------------------------------------------------------- */

/* Frame what nghttp2 has and write it, gathered; nothing before the server is checked (the
 * session's first frames wait in it). */
static void flush_now(struct km_hbone_client *c)
{
	int broken;

	km_turn_queue_remove(&c->flush_turn);
	if (!c->session || c->closing || c->flushing)
		return;
	for (struct hc_stream *st = c->streams, *next; st; st = next) {
		next = st->next; /* may free st, never c (it is not closing) */
		km_h2_relay_write_pending(&st->relay);
	}
	if (c->closing || !c->ready)
		return;
	c->flushing = 1;
	broken = km_h2_send(c->session, &c->tls, HC_CONN_UNSENT, HC_CORK_MAX) != 0;
	c->flushing = 0;
	if (broken) {
		snprintf(c->error, sizeof(c->error), "HTTP/2 framing failed");
		km_hbone_client_close(c);
	} else if (!c->closing && !nghttp2_session_want_read(c->session) &&
		   !nghttp2_session_want_write(c->session)) {
		km_hbone_client_close(c); /* a GOAWAY either way, and nothing left */
	}
}

static void flush_turn(struct km_turn_item *item)
{
	flush_now((struct km_hbone_client *)((char *)item -
					     offsetof(struct km_hbone_client, flush_turn)));
}

static void flush(struct km_hbone_client *c)
{
	if (!c->turns)
		flush_now(c);
	else if (c->session && !c->closing)
		km_turn_queue_add(c->turns, &c->flush_turn, flush_turn);
}

/* ---- the connection ---------------------------------------------------------------------- */

static void fail(struct km_hbone_client *c, const char *why)
{
	if (c->closing)
		return;
	c->failed = 1;
	snprintf(c->error, sizeof(c->error), "%.290s", why);
	if (c->ops.on_failed)
		c->ops.on_failed(c);
	km_hbone_client_close(c);
}

static void tls_ready(struct km_tls_stream *s)
{
	struct km_hbone_client *c = s->data;
	const char *ids[KM_HBONE_CLIENT_IDS];
	char why[400];

	for (size_t i = 0; i < c->n_ids; i++)
		ids[i] = c->ids[i];
	if (km_client_tls_peer(s->ssl, ids, c->n_ids, why, sizeof(why)) != 0) {
		fail(c, why);
		return;
	}
	c->ready = 1;
	c->last_recv_ms = uv_now(c->loop);
	uv_timer_stop(&c->timer);
	if (c->ops.on_ready)
		c->ops.on_ready(c);
	flush(c);
}

static void tls_data(struct km_tls_stream *s, const uint8_t *data, size_t len)
{
	km_hbone_client_data(s->data, data, len);
}

void km_hbone_client_data(struct km_hbone_client *c, const uint8_t *data, size_t len)
{
	ssize_t n;

	if (!c->session || c->closing)
		return;
	c->last_recv_ms = uv_now(c->loop);
	n = nghttp2_session_mem_recv(c->session, data, len);
	if (n < 0) {
		snprintf(c->error, sizeof(c->error), "HTTP/2: %s", nghttp2_strerror((int)n));
		flush_now(c); /* a GOAWAY, when nghttp2 made one */
		km_hbone_client_close(c);
		return;
	}
	flush(c);
}

static void tls_error(struct km_tls_stream *s, const char *what, int eof)
{
	struct km_hbone_client *c = s->data;

	if (!c->ready) {
		fail(c, eof ? "the server closed the connection during the handshake" : what);
		return;
	}
	snprintf(c->error, sizeof(c->error), "%s", eof ? "the server closed the connection" : what);
	km_hbone_client_close(c);
}

static void tls_drained(struct km_tls_stream *s)
{
	flush(s->data);
}

static void on_connected(uv_connect_t *req, int status)
{
	static const struct km_tls_stream_cbs cbs = { tls_ready, tls_data, tls_error, tls_drained };
	struct km_hbone_client *c = req->data;
	char why[300];

	if (c->closing)
		return;
	if (status < 0) {
		snprintf(why, sizeof(why), "cannot connect: %s", uv_strerror(status));
		fail(c, why);
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	c->tls.data = c;
	if (km_tls_stream_start(&c->tls, &km_tls_openssl, (uv_stream_t *)&c->tcp, c->ssl_ctx, 0,
				NULL, "h2", &cbs) != 0) {
		c->tls_started = 1;
		fail(c, c->tls.error);
		return;
	}
	c->tls_started = 1;
}

static void connect_deadline(uv_timer_t *t)
{
	struct km_hbone_client *c = t->data;

	if (!c->ready)
		fail(c, "the connection and handshake took too long");
}

static int session_new(struct km_hbone_client *c)
{
	nghttp2_session_callbacks *cbs;
	nghttp2_option *opt;
	nghttp2_session *s = NULL;
	nghttp2_settings_entry iv[] = {
		{ NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 4u << 20 },
		{ NGHTTP2_SETTINGS_MAX_FRAME_SIZE, 1u << 20 },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 16u << 10 },
	};
	int rc;

	if (nghttp2_session_callbacks_new(&cbs) != 0)
		return -1;
	nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
	nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
	nghttp2_session_callbacks_set_data_source_read_length_callback(cbs,
								      km_h2_relay_frame_length);
	if (nghttp2_option_new(&opt) != 0) {
		nghttp2_session_callbacks_del(cbs);
		return -1;
	}
	nghttp2_option_set_no_auto_window_update(opt, 1);
	rc = nghttp2_session_client_new2(&s, cbs, c, opt);
	nghttp2_option_del(opt);
	nghttp2_session_callbacks_del(cbs);
	if (rc != 0)
		return -1;
	c->session = s;
	if (nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0])) != 0 ||
	    nghttp2_session_set_local_window_size(s, NGHTTP2_FLAG_NONE, 0, 16u << 20) != 0)
		return -1;
	return 0;
}

int km_hbone_client_connect(struct km_hbone_client *c, uv_loop_t *loop, void *ctx,
			    const struct sockaddr_storage *peer, const char *const *ids, size_t n_ids,
			    const struct km_hbone_client_ops *ops, unsigned connect_ms,
			    unsigned idle_ms, struct km_turn_queue *turns)
{
	void *data = c->data;

	memset(c, 0, sizeof(*c));
	c->data = data;
	c->loop = loop;
	c->ops = *ops;
	c->peer = *peer;
	c->connect_ms = connect_ms;
	c->idle_ms = idle_ms;
	c->turns = turns;
	c->opened_ms = uv_now(loop);
	for (size_t i = 0; i < n_ids && i < KM_HBONE_CLIENT_IDS; i++)
		snprintf(c->ids[c->n_ids++], KM_HBONE_CLIENT_ID_MAX, "%s", ids[i]);
	if (session_new(c) != 0) {
		if (c->session)
			nghttp2_session_del(c->session);
		c->session = NULL;
		return -1;
	}
	c->ssl_ctx = ctx;
	uv_tcp_init(loop, &c->tcp);
	uv_timer_init(loop, &c->timer);
	c->timer.data = c;
	c->connect_req.data = c;
	if (uv_tcp_connect(&c->connect_req, &c->tcp, (const struct sockaddr *)peer,
			   on_connected) != 0) {
		fail(c, "cannot connect"); /* on_closed follows */
		return 0;
	}
	uv_timer_start(&c->timer, connect_deadline, connect_ms, 0);
	return 0;
}

int km_hbone_client_has_room(const struct km_hbone_client *c)
{
	return !c->closing && c->session && c->n_streams < KM_HBONE_CLIENT_MAX_STREAMS &&
	       nghttp2_session_get_remote_settings(c->session,
						   NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS) >
		       c->n_streams;
}

int km_hbone_client_open(struct km_hbone_client *c, uv_tcp_t *app,
			 const struct km_hbone_request *req, void *arg)
{
	nghttp2_nv nv[5];
	size_t n = 0;
	nghttp2_data_provider dp;
	struct hc_stream *st;
	int32_t id;

#define HC_NV(k, v)                                                                               \
	nv[n++] = (nghttp2_nv){ (uint8_t *)(k), (uint8_t *)(v), sizeof(k) - 1, strlen(v),        \
				NGHTTP2_NV_FLAG_NONE }
	if (c->closing || !c->session || !(st = calloc(1, sizeof(*st)))) {
		km_tcp_close_reset(app, free_handle);
		return -1;
	}
	st->c = c;
	st->arg = arg;
	km_h2_relay_init(&st->relay, c->turns ? &hc_ops_gather : &hc_ops, &c->session, 0);
	km_h2_relay_set_up(&st->relay, app);
	km_h2_relay_provider(&st->relay, &dp);
	HC_NV(":method", "CONNECT");
	HC_NV(":authority", req->authority);
	if (req->baggage && *req->baggage)
		HC_NV("baggage", req->baggage);
	if (req->forwarded && *req->forwarded)
		HC_NV("forwarded", req->forwarded);
	if (req->traceparent && *req->traceparent)
		HC_NV("traceparent", req->traceparent);
#undef HC_NV
	id = nghttp2_submit_request(c->session, NULL, nv, n, &dp, st);
	if (id < 0) {
		km_tcp_close_reset(app, free_handle); /* nothing to tell: the stream never was */
		free(st);
		return -1;
	}
	st->relay.id = id;
	st->next = c->streams;
	c->streams = st;
	c->n_streams++;
	c->streams_total++;
	if (c->ready)
		uv_timer_stop(&c->timer); /* not idle (before ready: the connect deadline runs) */
	flush(c);
	return 0;
}

static void maybe_done(struct km_hbone_client *c)
{
	if (c->closing && c->tcp_closed && c->timer_closed && !c->streams && c->ops.on_closed)
		c->ops.on_closed(c);
}

static void tcp_closed(uv_handle_t *h)
{
	struct km_hbone_client *c = (struct km_hbone_client *)((char *)h -
								offsetof(struct km_hbone_client, tcp));

	c->tcp_closed = 1;
	if (c->tls_started)
		km_tls_stream_free(&c->tls);
	maybe_done(c);
}

static void timer_closed(uv_handle_t *h)
{
	struct km_hbone_client *c = h->data;

	c->timer_closed = 1;
	maybe_done(c);
}

void km_hbone_client_close(struct km_hbone_client *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	km_turn_queue_remove(&c->flush_turn);
	for (struct hc_stream *st = c->streams; st; st = st->next) {
		if (!st->why[0])
			snprintf(st->why, sizeof(st->why), "%.150s",
				 c->error[0] ? c->error : "the connection to the server closed");
		km_h2_relay_abort(&st->relay);
	}
	if (c->session) {
		nghttp2_session_del(c->session);
		c->session = NULL;
	}
	uv_close((uv_handle_t *)&c->tcp, tcp_closed);
	uv_close((uv_handle_t *)&c->timer, timer_closed);
	for (struct hc_stream *st = c->streams, *next; st; st = next) {
		next = st->next;
		stream_free_if_done(st);
	}
}
