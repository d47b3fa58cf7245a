/* hbone_server.c — see hbone_server.h. */
#include "services/tunnel/hbone_server.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "services/tunnel/h2_relay.h"
#include "shared/log.h"

struct hb_stream {
	struct km_h2_relay relay; /* the bytes to and from the application (h2_relay.h); relay.up
				   * is its socket (NULL until given); relay.relaying: 200 sent */
	struct km_hbone_conn *h;
	struct hb_stream *next;
	int32_t id;
	char method[16];
	char authority[80];
	struct sockaddr_storage to;
	uv_connect_t connect;
	int asking;           /* a socket is being asked for */
	int authorized;       /* the policies allowed it (then a socket, the 200, bytes) */
	uint8_t *early;       /* the client's bytes before the application answered (kept, their
			       * window not given back, up to KM_HBONE_STREAM_BUF) */
	size_t early_len;
	char *baggage;        /* the request's header (NULL: none, or longer than allowed) */
	char *dst_baggage;    /* for the 200 */
	uint64_t cookie;      /* the application's socket, for the reports */
};

static void flush(struct km_hbone_conn *h);
static void maybe_done(struct km_hbone_conn *h);
static void stream_free_if_done(struct hb_stream *st);

static void relay_flush(struct km_h2_relay *r)
{
	flush(((struct hb_stream *)r)->h);
}

static void relay_released(struct km_h2_relay *r)
{
	stream_free_if_done((struct hb_stream *)r);
}

/* writes gathered per loop turn when the connection has a turn queue (hb_ops_gather) */
static const struct km_h2_relay_ops hb_ops = { relay_flush, relay_released, 0 };
static const struct km_h2_relay_ops hb_ops_gather = { relay_flush, relay_released, 1 };

/* ---- streams ----------------------------------------------------------------------------- */

static struct hb_stream *stream_of(struct km_hbone_conn *h, int32_t id)
{
	for (struct hb_stream *s = h->streams; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

static void report(struct hb_stream *st, enum km_hbone_report_kind kind)
{
	struct km_hbone_report r = { kind, &st->to, st->cookie, st->relay.to_up,
				     st->relay.from_up, st->baggage };

	if (st->h->ops.report)
		st->h->ops.report(st->h, &r);
}

static void stream_free_if_done(struct hb_stream *st)
{
	struct km_hbone_conn *h = st->h;

	if (!st->relay.h2_closed || km_h2_relay_busy(&st->relay) || st->asking)
		return;
	for (struct hb_stream **pp = &h->streams; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	h->n_streams--;
	if (st->relay.relaying)
		report(st, KM_HBONE_CLOSED);
	km_h2_relay_free(&st->relay);
	free(st->early);
	free(st->baggage);
	free(st->dst_baggage);
	free(st);
	maybe_done(h);
}

/* The response's headers (baggage: NULL or "" for none). */
static int respond(struct km_hbone_conn *h, int32_t id, const char *status, const char *baggage,
		   nghttp2_data_provider *dp)
{
	nghttp2_nv nv[] = {
		{ (uint8_t *)":status", (uint8_t *)status, 7, strlen(status), NGHTTP2_NV_FLAG_NONE },
		{ (uint8_t *)"baggage", (uint8_t *)baggage, 7, baggage ? strlen(baggage) : 0,
		  NGHTTP2_NV_FLAG_NONE },
	};

	return nghttp2_submit_response(h->session, id, nv, baggage && *baggage ? 2 : 1, dp);
}

/* An error answer: the status, END_STREAM. */
static void refuse(struct hb_stream *st, const char *status, const char *why)
{
	struct km_hbone_conn *h = st->h;

	if (!strcmp(status, "400"))
		h->refused_400++;
	else if (!strcmp(status, "401"))
		h->refused_401++;
	else
		h->refused_503++;
	km_debug("HBONE from %s: stream %d to %s refused %s: %s", h->principal, st->id,
		 st->authority, status, why);
	respond(h, st->id, status, NULL, NULL);
	km_h2_relay_close_up(&st->relay, 1);
}

/* ---- the application's side -------------------------------------------------------------- */

static void on_up_connected(uv_connect_t *req, int status)
{
	struct hb_stream *st = req->data;
	nghttp2_data_provider dp;

	if (st->relay.h2_closed || st->h->closing || !st->authorized) {
		km_h2_relay_close_up(&st->relay, 1);
		return;
	}
	if (status < 0) {
		refuse(st, "503", uv_strerror(status));
		flush(st->h);
		return;
	}
	uv_tcp_nodelay(st->relay.up, 1);
	st->cookie = km_h2_relay_cookie(&st->relay);
	km_h2_relay_provider(&st->relay, &dp);
	respond(st->h, st->id, "200", st->dst_baggage, &dp);
	free(st->dst_baggage);
	st->dst_baggage = NULL;
	if (st->early_len) { /* what the client sent before the 200, in order, first */
		km_h2_relay_data(&st->relay, st->early, st->early_len);
		free(st->early);
		st->early = NULL;
		st->early_len = 0;
	}
	km_h2_relay_start(&st->relay);
	report(st, KM_HBONE_OPENED);
	flush(st->h);
}

/* The client's address in the family of the application's, port 0, into *out: 0, or -1 when the
 * families differ (an IPv4 client of an IPv6 address, or the other way). */
static int caller_as(const struct sockaddr_storage *peer, int family, struct sockaddr_storage *out)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	const struct sockaddr_in6 *p6 = (const struct sockaddr_in6 *)peer;
	int mapped = peer->ss_family == AF_INET6 && !memcmp(p6->sin6_addr.s6_addr, v4mapped, 12);

	memset(out, 0, sizeof(*out));
	if (family == AF_INET && (peer->ss_family == AF_INET || mapped)) {
		struct sockaddr_in *o = (struct sockaddr_in *)out;

		o->sin_family = AF_INET;
		if (mapped)
			memcpy(&o->sin_addr, p6->sin6_addr.s6_addr + 12, 4);
		else
			o->sin_addr = ((const struct sockaddr_in *)peer)->sin_addr;
		return 0;
	}
	if (family == AF_INET6 && peer->ss_family == AF_INET6 && !mapped) {
		struct sockaddr_in6 *o = (struct sockaddr_in6 *)out;

		o->sin6_family = AF_INET6;
		o->sin6_addr = p6->sin6_addr;
		return 0;
	}
	return -1;
}

/* Where the connection to the application comes from. As ztunnel: the HBONE client's address,
 * bound on the socket the map writer made transparent and marked (kmesh_maps.h,
 * KM_TUNNEL_APP_MARK: its packets never leave the pod, the application's replies come back over
 * loopback); the kernel's authorization and reports leave it to this process, which decided the
 * stream and reports it. When that cannot be (the families differ, or the pod was not set up:
 * bind refuses a foreign address): IPv4 from 127.0.0.6, as Istio's sidecars reach their
 * application, a source only the pod itself has; IPv6 from the pod's own address. */
static void bind_source(struct hb_stream *st, uv_tcp_t *tcp)
{
	struct sockaddr_storage from;
	uv_os_fd_t fd;
	int one = 1, caller;

	/* the port chosen at connect(), unique per 4-tuple: a busy caller (a waypoint) is not held
	 * to one port per connection across every application port of the pod */
	if (uv_fileno((uv_handle_t *)tcp, &fd) == 0)
		(void)setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	caller = st->h->app_from_caller && caller_as(&st->h->peer, st->to.ss_family, &from) == 0 &&
		 uv_tcp_bind(tcp, (struct sockaddr *)&from, 0) == 0;

	if (st->h->app_sources)
		st->h->app_sources[caller ? 0 : 1]++;
	if (!caller && st->to.ss_family == AF_INET) {
		struct sockaddr_in *lo = (struct sockaddr_in *)&from;

		memset(&from, 0, sizeof(from));
		lo->sin_family = AF_INET;
		lo->sin_addr.s_addr = htonl(0x7f000006);
		uv_tcp_bind(tcp, (struct sockaddr *)&from, 0);
	}
}

static void got_socket(void *arg, uv_tcp_t *tcp, const char *why)
{
	struct hb_stream *st = arg;

	st->asking = 0;
	if (!tcp) {
		if (!st->relay.h2_closed && !st->h->closing) {
			refuse(st, "503", why);
			flush(st->h);
		}
		stream_free_if_done(st);
		return;
	}
	km_h2_relay_set_up(&st->relay, tcp);
	if (st->relay.h2_closed || st->h->closing || !st->authorized) {
		km_h2_relay_close_up(&st->relay, 1);
		return;
	}
	st->connect.data = st;
	bind_source(st, tcp);
	if (uv_tcp_connect(&st->connect, tcp, (struct sockaddr *)&st->to, on_up_connected) != 0) {
		refuse(st, "503", "cannot connect");
		flush(st->h);
	}
}

/* ---- requests ---------------------------------------------------------------------------- */

static int same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	const uint8_t *pa, *pb;
	uint8_t ma[16], mb[16];

	/* compare as IPv6 (an IPv4 address v4-mapped) */
	for (int k = 0; k < 2; k++) {
		const struct sockaddr_storage *s = k ? b : a;
		uint8_t *m = k ? mb : ma;

		if (s->ss_family == AF_INET) {
			memset(m, 0, 10);
			m[10] = m[11] = 0xff;
			memcpy(m + 12, &((const struct sockaddr_in *)s)->sin_addr, 4);
		} else {
			memcpy(m, &((const struct sockaddr_in6 *)s)->sin6_addr, 16);
		}
	}
	pa = ma;
	pb = mb;
	return !memcmp(pa, pb, 16);
}

/* :authority "IP:port" or "[IPv6]:port" into to. Returns 0, or -1. */
static int parse_authority(const char *a, struct sockaddr_storage *to, unsigned *port)
{
	char host[64];
	const char *colon = strrchr(a, ':');
	size_t n;
	char *end;
	unsigned long p;

	if (!colon || colon == a)
		return -1;
	n = (size_t)(colon - a);
	if (a[0] == '[') {
		if (n < 3 || a[n - 1] != ']')
			return -1;
		a++;
		n -= 2;
	}
	if (n >= sizeof(host))
		return -1;
	memcpy(host, a, n);
	host[n] = '\0';
	p = strtoul(colon + 1, &end, 10);
	if (*end || !colon[1] || p == 0 || p > 65535)
		return -1;
	memset(to, 0, sizeof(*to));
	if (inet_pton(AF_INET, host, &((struct sockaddr_in *)to)->sin_addr) == 1) {
		to->ss_family = AF_INET;
		((struct sockaddr_in *)to)->sin_port = htons((uint16_t)p);
	} else if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)to)->sin6_addr) == 1) {
		to->ss_family = AF_INET6;
		((struct sockaddr_in6 *)to)->sin6_port = htons((uint16_t)p);
	} else {
		return -1;
	}
	*port = (unsigned)p;
	return 0;
}

/* The policies' answer: a socket inside the pod, or 401. */
static void authorized(void *arg, int allowed, const char *why, const char *dst_baggage)
{
	struct hb_stream *st = arg;
	struct km_hbone_conn *h = st->h;

	st->asking = 0;
	if (st->relay.h2_closed || h->closing) {
		stream_free_if_done(st);
		return;
	}
	if (!allowed) {
		refuse(st, "401", why);
		flush(h);
		return;
	}
	st->authorized = 1;
	if (dst_baggage && *dst_baggage && strlen(dst_baggage) <= KM_HBONE_BAGGAGE_MAX)
		st->dst_baggage = strdup(dst_baggage); /* none, out of memory: a 200 without it */
	st->asking = 1;
	if (h->ops.get_socket(h, st->to.ss_family == AF_INET6 ? 6 : 4, got_socket, st) != 0) {
		st->asking = 0;
		refuse(st, "503", "no socket inside the pod");
		flush(h);
	}
}

/* The request's headers are in: decide, then ask for a socket inside the pod. */
static void request(struct hb_stream *st)
{
	struct km_hbone_conn *h = st->h;
	unsigned port = 0;

	if (strcmp(st->method, "CONNECT")) {
		refuse(st, "400", "not a CONNECT");
		return;
	}
	if (parse_authority(st->authority, &st->to, &port) != 0) {
		refuse(st, "400", "the :authority is not IP:port");
		return;
	}
	if (!same_addr(&st->to, &h->local)) {
		refuse(st, "400", "the :authority is not the address the connection came to");
		return;
	}
	if (port == 15001 || port == 15006 || port == 15008) {
		refuse(st, "503", "a port of the tunnel's own");
		return;
	}
	if (st->to.ss_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&st->to)->sin6_addr)) {
		/* an IPv4 pod reached on a dual-stack listener: an IPv4 socket */
		struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

		memcpy(&v4.sin_addr, &((struct sockaddr_in6 *)&st->to)->sin6_addr.s6_addr[12], 4);
		memset(&st->to, 0, sizeof(st->to));
		memcpy(&st->to, &v4, sizeof(v4));
	}
	st->asking = 1;
	if (h->ops.authorize(h, &st->to, authorized, st) != 0) {
		st->asking = 0;
		refuse(st, "401", "authorization could not be asked");
	}
}

/* ---- nghttp2 callbacks ------------------------------------------------------------------- */

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user)
{
	struct km_hbone_conn *h = user;
	struct hb_stream *st;

	(void)session;
	if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	if (!(st = calloc(1, sizeof(*st))))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	km_h2_relay_init(&st->relay, h->turns ? &hb_ops_gather : &hb_ops, &h->session,
			 frame->hd.stream_id);
	st->h = h;
	st->id = frame->hd.stream_id;
	st->next = h->streams;
	h->streams = st;
	h->n_streams++;
	h->streams_total++;
	return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
		     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *user)
{
	struct hb_stream *st = stream_of(user, frame->hd.stream_id);

	(void)session;
	(void)flags;
	if (!st || frame->hd.type != NGHTTP2_HEADERS)
		return 0;
	if (namelen == 7 && !memcmp(name, ":method", 7))
		snprintf(st->method, sizeof(st->method), "%.*s", (int)valuelen, value);
	else if (namelen == 10 && !memcmp(name, ":authority", 10))
		snprintf(st->authority, sizeof(st->authority), "%.*s", (int)valuelen, value);
	else if (namelen == 7 && !memcmp(name, "baggage", 7) && !st->baggage &&
		 valuelen <= KM_HBONE_BAGGAGE_MAX && !memchr(value, '\0', valuelen))
		st->baggage = strndup((const char *)value, valuelen); /* the first; for the reports */
	return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user)
{
	struct hb_stream *st = stream_of(user, frame->hd.stream_id);
	struct km_hbone_conn *h = user;

	(void)session;
	if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK))
		h->ping_sent_ms = 0; /* our PING answered */
	if (!st)
		return 0;
	if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
		request(st);
	if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
		km_h2_relay_peer_eof(&st->relay);
	return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *data,
			 size_t len, void *user)
{
	struct km_hbone_conn *h = user;
	struct hb_stream *st = stream_of(h, id);

	(void)flags;
	if (st && !st->relay.relaying && !st->relay.h2_closed) { /* before the 200: kept */
		uint8_t *n = st->early_len + len <= KM_HBONE_STREAM_BUF
				     ? realloc(st->early, st->early_len + len) : NULL;

		if (!n) {
			nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, id,
						  NGHTTP2_FLOW_CONTROL_ERROR);
			return 0;
		}
		memcpy(n + st->early_len, data, len);
		st->early = n;
		st->early_len += len;
		return 0;
	}
	if (!st) {
		nghttp2_session_consume(session, id, len); /* nobody to give it to */
		return 0;
	}
	km_h2_relay_data(&st->relay, data, len); /* (given back at once if it cannot be kept) */
	return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t id, uint32_t code, void *user)
{
	struct hb_stream *st = stream_of(user, id);

	(void)session;
	if (!st)
		return 0;
	km_h2_relay_stream_closed(&st->relay, code);
	stream_free_if_done(st);
	return 0;
}

/* ---- the connection ---------------------------------------------------------------------- */

/* Frame what nghttp2 has and write it, gathered: at most KM_HBONE_CORK_MAX bytes a write. */
static void flush_now(struct km_hbone_conn *h)
{
	int broken;

	km_turn_queue_remove(&h->flush_turn);
	if (!h->session || h->closing || h->flushing)
		return;
	for (struct hb_stream *st = h->streams, *next; st; st = next) {
		next = st->next; /* write_pending may free st (never h: it is not closing) */
		km_h2_relay_write_pending(&st->relay);
	}
	if (h->closing)
		return;
	h->flushing = 1;
	broken = km_h2_send(h->session, &h->tls, KM_HBONE_CONN_UNSENT, KM_HBONE_CORK_MAX) != 0;
	h->flushing = 0;
	if (broken)
		km_hbone_conn_close(h);
	else if (!h->closing && !nghttp2_session_want_read(h->session) &&
		 !nghttp2_session_want_write(h->session))
		km_hbone_conn_close(h);
}

static void flush_turn(struct km_turn_item *item)
{
	flush_now((struct km_hbone_conn *)((char *)item - offsetof(struct km_hbone_conn, flush_turn)));
}

/* Written at the end of the loop's turn (at once without a turn queue). */
static void flush(struct km_hbone_conn *h)
{
	if (!h->turns)
		flush_now(h);
	else if (h->session && !h->closing)
		km_turn_queue_add(h->turns, &h->flush_turn, flush_turn);
}

void km_hbone_conn_init(struct km_hbone_conn *h, uv_loop_t *loop, const struct km_hbone_ops *ops)
{
	void *data = h->data;

	memset(h, 0, sizeof(*h));
	h->data = data;
	h->loop = loop;
	h->ops = *ops;
}

int km_hbone_conn_start(struct km_hbone_conn *h)
{
	nghttp2_session_callbacks *cbs;
	nghttp2_option *opt;
	nghttp2_session *s = NULL;
	nghttp2_settings_entry iv[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, KM_HBONE_MAX_STREAMS },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 4u << 20 },
		{ NGHTTP2_SETTINGS_MAX_FRAME_SIZE, 1u << 20 },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 64u << 10 },
	};
	int rc;

	if (nghttp2_session_callbacks_new(&cbs) != 0)
		return -1;
	nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
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
	nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
	rc = nghttp2_session_server_new2(&s, cbs, h, opt);
	nghttp2_option_del(opt);
	nghttp2_session_callbacks_del(cbs);
	if (rc != 0)
		return -1;
	h->session = s;
	h->last_recv_ms = uv_now(h->loop);
	if (nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0])) != 0 ||
	    nghttp2_session_set_local_window_size(s, NGHTTP2_FLAG_NONE, 0, 16u << 20) != 0)
		return -1;
	flush(h);
	return 0;
}

void km_hbone_conn_data(struct km_hbone_conn *h, const uint8_t *data, size_t len)
{
	ssize_t n;

	if (!h->session || h->closing)
		return;
	h->last_recv_ms = uv_now(h->loop);
	n = nghttp2_session_mem_recv(h->session, data, len);
	if (n < 0) {
		km_debug("HBONE from %s: %s", h->principal, nghttp2_strerror((int)n));
		flush_now(h); /* a GOAWAY, when nghttp2 made one */
		km_hbone_conn_close(h);
		return;
	}
	flush(h);
}

void km_hbone_conn_drained(struct km_hbone_conn *h)
{
	flush(h);
}

void km_hbone_conn_progress(struct km_hbone_conn *h)
{
	for (struct hb_stream *st = h->streams; st; st = st->next)
		if (st->relay.relaying && !st->relay.h2_closed)
			report(st, KM_HBONE_PROGRESS);
}

void km_hbone_conn_each_authorized(struct km_hbone_conn *h, km_hbone_stream_cb cb, void *arg)
{
	for (struct hb_stream *st = h->streams; st; st = st->next)
		if (st->authorized && !st->relay.h2_closed)
			cb(arg, st->id, &st->to);
}

int km_hbone_conn_deny(struct km_hbone_conn *h, int32_t id, const char *why)
{
	struct hb_stream *st = h->streams;

	while (st && st->id != id)
		st = st->next;
	if (!st || !st->authorized || st->relay.h2_closed || h->closing)
		return 0;
	km_info("HBONE from %s: stream %d to %s closed: the policies deny it now (%s)", h->principal,
		id, st->authority, why);
	st->authorized = 0; /* a socket or a connection still on its way is closed on arrival */
	nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, id, NGHTTP2_CONNECT_ERROR);
	km_h2_relay_close_up(&st->relay, 1); /* a reset, as the kernel's re-check gives it */
	flush(h);
	return 1;
}

int km_hbone_conn_tick(struct km_hbone_conn *h, uint64_t now_ms, uint64_t ping_ms)
{
	if (!h->session || h->closing)
		return 0;
	if (h->ping_sent_ms)
		return now_ms - h->ping_sent_ms >= 2 * ping_ms;
	if (now_ms - h->last_recv_ms >= ping_ms &&
	    nghttp2_submit_ping(h->session, NGHTTP2_FLAG_NONE, NULL) == 0) {
		h->ping_sent_ms = now_ms ? now_ms : 1;
		flush(h);
	}
	return 0;
}

static void maybe_done(struct km_hbone_conn *h)
{
	if (h->closing && h->tcp_closed && !h->streams && h->ops.on_closed)
		h->ops.on_closed(h);
}

static void tcp_closed(uv_handle_t *handle)
{
	struct km_hbone_conn *h = (struct km_hbone_conn *)((char *)handle -
							    offsetof(struct km_hbone_conn, tcp));

	h->tcp_closed = 1;
	km_tls_stream_free(&h->tls);
	maybe_done(h);
}

void km_hbone_conn_close(struct km_hbone_conn *h)
{
	if (h->closing)
		return;
	h->closing = 1;
	km_turn_queue_remove(&h->flush_turn);
	for (struct hb_stream *st = h->streams, *next; st; st = next) {
		next = st->next;
		km_h2_relay_abort(&st->relay);
	}
	if (h->session) {
		nghttp2_session_del(h->session);
		h->session = NULL;
	}
	uv_close((uv_handle_t *)&h->tcp, tcp_closed);
	for (struct hb_stream *st = h->streams, *next; st; st = next) {
		next = st->next;
		stream_free_if_done(st);
	}
}
