/* hbone_server.c — see hbone_server.h. */
#include "services/tunnel/hbone_server.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "shared/h2_frames.h"
#include "shared/log.h"

struct hb_stream {
	struct km_hbone_conn *h;
	struct hb_stream *next;
	int32_t id;
	char method[16];
	char authority[80];
	struct sockaddr_storage to;
	uv_tcp_t *up;         /* the application's side (heap; NULL until given) */
	uv_connect_t connect;
	int asking;           /* a socket is being asked for */
	int authorized;       /* the policies allowed it (then a socket, the 200, bytes) */
	int connected;        /* 200 sent, bytes flow */
	int h2_closed;        /* nghttp2 closed the stream */
	int up_eof;           /* the application half-closed: END_STREAM once buf is sent */
	int up_reading;
	int down_eof;         /* the client's END_STREAM: shut the application's side down */
	int shutdown_sent;
	size_t buf_off, buf_len; /* the application's bytes not yet framed: buf[buf_off..buf_len) */
	uint8_t *buf;
	size_t writing;       /* the client's bytes being written to the application (gathered
			       * in pend, then in libuv's queue) */
	struct hb_write *pend; /* gathered this loop turn, written at its end (one write, not one
				* per DATA frame) */
	uint8_t *early;       /* the client's bytes before the application answered (kept, their
			       * window not given back, up to KM_HBONE_STREAM_BUF) */
	size_t early_len;
	uv_shutdown_t shutdown_req;
	char *baggage;        /* the request's header (NULL: none, or longer than allowed) */
	char *dst_baggage;    /* for the 200 */
	uint64_t cookie;      /* the application's socket, for the reports */
	uint64_t to_app, from_app;
};

struct hb_write {
	uv_write_t req;
	struct hb_stream *st;
	size_t len, cap;
	uint8_t bytes[];
};

static void flush(struct km_hbone_conn *h);
static void maybe_done(struct km_hbone_conn *h);
static int write_up(struct hb_stream *st, const uint8_t *data, size_t len);
static void write_pending(struct hb_stream *st);
static void shut_up_if_done(struct hb_stream *st);

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
	struct km_hbone_report r = { kind, &st->to, st->cookie, st->to_app, st->from_app,
				     st->baggage };

	if (st->h->ops.report)
		st->h->ops.report(st->h, &r);
}

static void stream_free_if_done(struct hb_stream *st)
{
	struct km_hbone_conn *h = st->h;

	if (!st->h2_closed || st->up || st->asking || st->writing)
		return;
	for (struct hb_stream **pp = &h->streams; *pp; pp = &(*pp)->next)
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	h->n_streams--;
	if (st->connected)
		report(st, KM_HBONE_CLOSED);
	free(st->pend);
	free(st->buf);
	free(st->early);
	free(st->baggage);
	free(st->dst_baggage);
	free(st);
	maybe_done(h);
}

static void up_closed(uv_handle_t *handle)
{
	struct hb_stream *st = handle->data;

	free(handle);
	if (st) {
		st->up = NULL;
		stream_free_if_done(st);
	}
}

/* Close the application's side (reset: RST instead of FIN). */
static void up_close(struct hb_stream *st, int reset)
{
	if (!st->up || uv_is_closing((uv_handle_t *)st->up))
		return;
	if (reset)
		uv_tcp_close_reset(st->up, up_closed);
	else
		uv_close((uv_handle_t *)st->up, up_closed);
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
	up_close(st, 1);
}

/* ---- the application's side -------------------------------------------------------------- */

static void up_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *b)
{
	struct hb_stream *st = handle->data;

	(void)suggested;
	if (!st->buf)
		st->buf = malloc(KM_HBONE_STREAM_BUF);
	if (st->buf_off) { /* what is left to the front: a copy per read, not per frame */
		memmove(st->buf, st->buf + st->buf_off, st->buf_len - st->buf_off);
		st->buf_len -= st->buf_off;
		st->buf_off = 0;
	}
	b->base = st->buf ? (char *)st->buf + st->buf_len : NULL;
	b->len = st->buf ? KM_HBONE_STREAM_BUF - st->buf_len : 0;
}

/* libuv reports the end when the socket hung up during a read that returned bytes, also when the
 * hang-up was a reset that arrived behind them (the reset's error is still on the socket then):
 * the error if there is one, else the end. */
static ssize_t pending_error(uv_stream_t *s)
{
	uv_os_fd_t fd;
	int err = 0;
	socklen_t len = sizeof(err);

	if (uv_fileno((uv_handle_t *)s, &fd) != 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || !err)
		return UV_EOF;
	return -err;
}

static void up_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct hb_stream *st = s->data;

	(void)b;
	if (n > 0) {
		st->buf_len += (size_t)n;
		st->from_app += (uint64_t)n;
		if (st->buf_len >= KM_HBONE_STREAM_BUF) { /* full: until it is framed */
			uv_read_stop(s);
			st->up_reading = 0;
		}
		nghttp2_session_resume_data(st->h->session, st->id);
	} else if (n == UV_EOF && (n = pending_error(s)) == UV_EOF) {
		st->up_eof = 1;
		uv_read_stop(s);
		st->up_reading = 0;
		nghttp2_session_resume_data(st->h->session, st->id);
	} else if (n < 0) { /* reset, or failed: the client's stream is reset */
		nghttp2_submit_rst_stream(st->h->session, NGHTTP2_FLAG_NONE, st->id,
					  n == UV_ECONNRESET ? NGHTTP2_CONNECT_ERROR
							     : NGHTTP2_INTERNAL_ERROR);
		up_close(st, 1);
	}
	flush(st->h);
}

/* DATA frames as large as the client takes and the windows allow, up to a stream's buffer (ztunnel
 * takes 1 MiB): fewer frames than nghttp2's 16 KiB default. */
static ssize_t frame_length(nghttp2_session *session, uint8_t type, int32_t id, int32_t session_window,
			    int32_t stream_window, uint32_t remote_max_frame, void *user)
{
	(void)session;
	(void)type;
	(void)id;
	(void)user;
	return km_h2_frame_length(session_window, stream_window, remote_max_frame,
				  KM_HBONE_STREAM_BUF);
}

/* What the application sent, framed as DATA (END_STREAM after its FIN). */
static ssize_t provide(nghttp2_session *session, int32_t id, uint8_t *out, size_t len,
		       uint32_t *flags, nghttp2_data_source *src, void *user)
{
	struct hb_stream *st = src->ptr;
	size_t held = st->buf_len - st->buf_off, n = held < len ? held : len;

	(void)session;
	(void)id;
	(void)user;
	if (n) {
		memcpy(out, st->buf + st->buf_off, n);
		st->buf_off += n;
		if (st->buf_off == st->buf_len)
			st->buf_off = st->buf_len = 0;
		if (st->up && !st->up_reading && !st->up_eof &&
		    !uv_is_closing((uv_handle_t *)st->up) && held - n < KM_HBONE_STREAM_BUF / 2 &&
		    uv_read_start((uv_stream_t *)st->up, up_alloc, up_read) == 0)
			st->up_reading = 1;
	}
	if (st->up_eof && st->buf_len == st->buf_off)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	else if (!n)
		return NGHTTP2_ERR_DEFERRED;
	return (ssize_t)n;
}

static void on_up_connected(uv_connect_t *req, int status)
{
	struct hb_stream *st = req->data;
	nghttp2_data_provider dp = { .source.ptr = st, .read_callback = provide };
	uv_os_fd_t fd;
	socklen_t cl = sizeof(st->cookie);

	if (st->h2_closed || st->h->closing || !st->authorized) {
		up_close(st, 1);
		return;
	}
	if (status < 0) {
		refuse(st, "503", uv_strerror(status));
		flush(st->h);
		return;
	}
	st->connected = 1;
	uv_tcp_nodelay(st->up, 1);
	if (uv_fileno((uv_handle_t *)st->up, &fd) == 0 &&
	    getsockopt(fd, SOL_SOCKET, SO_COOKIE, &st->cookie, &cl) != 0)
		st->cookie = 0;
	respond(st->h, st->id, "200", st->dst_baggage, &dp);
	free(st->dst_baggage);
	st->dst_baggage = NULL;
	report(st, KM_HBONE_OPENED);
	if (st->early_len) { /* what the client sent before the 200, in order, first */
		if (write_up(st, st->early, st->early_len) != 0)
			nghttp2_session_consume(st->h->session, st->id, st->early_len);
		free(st->early);
		st->early = NULL;
		st->early_len = 0;
	}
	shut_up_if_done(st);
	if (uv_read_start((uv_stream_t *)st->up, up_alloc, up_read) == 0)
		st->up_reading = 1;
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
		if (!st->h2_closed && !st->h->closing) {
			refuse(st, "503", why);
			flush(st->h);
		}
		stream_free_if_done(st);
		return;
	}
	st->up = tcp;
	tcp->data = st;
	if (st->h2_closed || st->h->closing || !st->authorized) {
		up_close(st, 1);
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
	if (st->h2_closed || h->closing) {
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
	if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) {
		st->down_eof = 1;
		shut_up_if_done(st);
	}
	return 0;
}

static void up_written(uv_write_t *req, int status)
{
	struct hb_write *w = (struct hb_write *)req;
	struct hb_stream *st = w->st;
	struct km_hbone_conn *h = st->h;

	st->writing -= w->len;
	if (status == 0)
		st->to_app += w->len;
	if (status == 0 && !st->h2_closed && h->session) /* the window back once the bytes are out */
		nghttp2_session_consume(h->session, st->id, w->len);
	free(w);
	shut_up_if_done(st);
	flush(h);
	stream_free_if_done(st);
}

/* The client's END_STREAM, once everything before it is written: the application's side is
 * shut down for writing (a half-close). */
static void shut_up_if_done(struct hb_stream *st)
{
	if (st->down_eof && st->connected && !st->writing && st->up && !st->shutdown_sent &&
	    !uv_is_closing((uv_handle_t *)st->up) &&
	    uv_shutdown(&st->shutdown_req, (uv_stream_t *)st->up, NULL) == 0)
		st->shutdown_sent = 1;
}

/* Write the client's bytes to the application; their window is given back once written. The
 * bytes of one loop turn's DATA frames are gathered and written at its end (write_pending): a
 * client's 16 KiB frames cost one write a turn, not one each. At most the stream's window is
 * ever held (nothing is given back before it is written). */
static int write_up(struct hb_stream *st, const uint8_t *data, size_t len)
{
	struct hb_write *w = st->pend;

	if (!w || w->len + len > w->cap) {
		size_t have = w ? w->len : 0, cap = have + len < (64u << 10) ? (64u << 10)
								 : 2 * (have + len);
		struct hb_write *n = realloc(w, sizeof(*n) + cap);

		if (!n)
			return -1;
		if (!w)
			n->len = 0;
		n->st = st;
		n->cap = cap;
		w = st->pend = n;
	}
	memcpy(w->bytes + w->len, data, len);
	w->len += len;
	st->writing += len;
	if (st->h->turns)
		flush(st->h); /* the turn's end writes it */
	else
		write_pending(st); /* no turns (a test's connection): at once */
	return 0;
}

/* A stream's gathered bytes to libuv, or dropped (their window given back) when the application's
 * side is gone. */
static void write_pending(struct hb_stream *st)
{
	struct hb_write *w = st->pend;
	uv_buf_t b;

	if (!w)
		return;
	st->pend = NULL;
	b = uv_buf_init((char *)w->bytes, (unsigned)w->len);
	if (st->up && !uv_is_closing((uv_handle_t *)st->up) &&
	    uv_write(&w->req, (uv_stream_t *)st->up, &b, 1, up_written) == 0)
		return;
	st->writing -= w->len;
	if (!st->h2_closed && st->h->session)
		nghttp2_session_consume(st->h->session, st->id, w->len);
	free(w);
	stream_free_if_done(st);
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *data,
			 size_t len, void *user)
{
	struct km_hbone_conn *h = user;
	struct hb_stream *st = stream_of(h, id);

	(void)flags;
	if (st && !st->connected && !st->h2_closed) { /* before the 200: kept for the application */
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
	if (!st || !st->up || uv_is_closing((uv_handle_t *)st->up)) {
		nghttp2_session_consume(session, id, len); /* nobody to give it to */
		return 0;
	}
	if (write_up(st, data, len) != 0)
		nghttp2_session_consume(session, id, len);
	return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t id, uint32_t code, void *user)
{
	struct hb_stream *st = stream_of(user, id);

	(void)session;
	if (!st)
		return 0;
	st->h2_closed = 1;
	/* a reset by the client (or ours) resets the application's side; a clean end has closed
	 * both ways already */
	up_close(st, code != NGHTTP2_NO_ERROR || !st->up_eof || !st->down_eof);
	stream_free_if_done(st);
	return 0;
}

/* ---- the connection ---------------------------------------------------------------------- */

/* Frame what nghttp2 has and write it, gathered: at most KM_HBONE_CORK_MAX bytes a write. */
static void flush_now(struct km_hbone_conn *h)
{
	size_t held = 0;
	int broken = 0;

	km_turn_queue_remove(&h->flush_turn);
	if (!h->session || h->closing || h->flushing)
		return;
	for (struct hb_stream *st = h->streams, *next; st; st = next) {
		next = st->next; /* write_pending may free st (never h: it is not closing) */
		write_pending(st);
	}
	if (h->closing)
		return;
	h->flushing = 1;
	km_tls_stream_cork(&h->tls);
	while (h->tls.unwritten + held < KM_HBONE_CONN_UNSENT) {
		const uint8_t *p;
		ssize_t n = nghttp2_session_mem_send(h->session, &p);

		if (n <= 0) {
			broken = n < 0;
			break;
		}
		if (km_tls_stream_write(&h->tls, p, (size_t)n) != 0)
			break; /* the TLS stream said why; its owner closes */
		held += (size_t)n;
		if (held >= KM_HBONE_CORK_MAX) {
			if (km_tls_stream_uncork(&h->tls) != 0)
				break;
			held = 0;
			km_tls_stream_cork(&h->tls);
		}
	}
	km_tls_stream_uncork(&h->tls);
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
	nghttp2_session_callbacks_set_data_source_read_length_callback(cbs, frame_length);
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
		if (st->connected && !st->h2_closed)
			report(st, KM_HBONE_PROGRESS);
}

void km_hbone_conn_each_authorized(struct km_hbone_conn *h, km_hbone_stream_cb cb, void *arg)
{
	for (struct hb_stream *st = h->streams; st; st = st->next)
		if (st->authorized && !st->h2_closed)
			cb(arg, st->id, &st->to);
}

int km_hbone_conn_deny(struct km_hbone_conn *h, int32_t id, const char *why)
{
	struct hb_stream *st = h->streams;

	while (st && st->id != id)
		st = st->next;
	if (!st || !st->authorized || st->h2_closed || h->closing)
		return 0;
	km_info("HBONE from %s: stream %d to %s closed: the policies deny it now (%s)", h->principal,
		id, st->authority, why);
	st->authorized = 0; /* a socket or a connection still on its way is closed on arrival */
	nghttp2_submit_rst_stream(h->session, NGHTTP2_FLAG_NONE, id, NGHTTP2_CONNECT_ERROR);
	up_close(st, 1); /* the application sees a reset, as the kernel's re-check gives it */
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
		st->h2_closed = 1;
		if (st->pend) { /* gathered, never to be written */
			st->writing -= st->pend->len;
			free(st->pend);
			st->pend = NULL;
		}
		up_close(st, 1);
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
