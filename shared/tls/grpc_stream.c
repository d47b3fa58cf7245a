/* grpc_stream.c — a bidirectional gRPC call over nghttp2 (see grpc_stream.h). */
#include "shared/tls/grpc_stream.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "shared/log.h"
#include "shared/msgbuf.h"

#define GRPC_HDR 5

static void on_ping_send(uv_timer_t *t);

static void end_call(struct km_grpc_stream *g, int status, const char *message)
{
	if (g->ended)
		return;
	g->ended = 1;
	g->cbs.on_end(g, status, message, g->got_goaway);
}

/* ---- sending ------------------------------------------------------------------------------- */

/* Hand whatever nghttp2 wants to send to the connection. */
static void flush(struct km_grpc_stream *g)
{
	for (;;) {
		const uint8_t *data;
		ssize_t n = nghttp2_session_mem_send(g->session, &data);

		if (n < 0) {
			end_call(g, KM_GRPC_INTERNAL, nghttp2_strerror((int)n));
			return;
		}
		if (n == 0)
			return;
		if (km_tls_conn_write(&g->conn, data, (size_t)n) != 0)
			return;
	}
}

static ssize_t read_out(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t length,
			uint32_t *flags, nghttp2_data_source *src, void *user)
{
	struct km_grpc_stream *g = user;
	size_t n = g->out_len - g->out_off;

	(void)s;
	(void)stream_id;
	(void)src;
	(void)flags;
	if (n == 0 && g->out_last) {
		*flags |= NGHTTP2_DATA_FLAG_EOF; /* the request side ends (a unary call's) */
		return 0;
	}
	if (n == 0)
		return NGHTTP2_ERR_DEFERRED; /* a bidi call never half-closes on its own */
	if (n > length)
		n = length;
	memcpy(buf, g->out + g->out_off, n);
	g->out_off += n;
	if (g->out_off == g->out_len) {
		g->out_off = g->out_len = 0;
		if (g->out_last)
			*flags |= NGHTTP2_DATA_FLAG_EOF;
	}
	return (ssize_t)n;
}

void km_grpc_stream_finish(struct km_grpc_stream *g)
{
	if (g->ended || g->closing || g->stream_id <= 0 || g->out_last)
		return;
	g->out_last = 1;
	nghttp2_session_resume_data(g->session, g->stream_id);
	flush(g);
}

int km_grpc_stream_send(struct km_grpc_stream *g, const uint8_t *msg, size_t len)
{
	size_t need = g->out_len + GRPC_HDR + len;
	uint8_t *p;

	if (g->ended || g->closing || g->stream_id <= 0 || g->out_last)
		return -1;
	if (need > g->out_cap) {
		size_t cap = g->out_cap ? g->out_cap : 65536;

		while (cap < need)
			cap *= 2;
		p = realloc(g->out, cap);
		if (!p)
			return -1;
		g->out = p;
		g->out_cap = cap;
	}
	p = g->out + g->out_len;
	p[0] = 0; /* not compressed */
	p[1] = (uint8_t)(len >> 24);
	p[2] = (uint8_t)(len >> 16);
	p[3] = (uint8_t)(len >> 8);
	p[4] = (uint8_t)len;
	memcpy(p + GRPC_HDR, msg, len);
	g->out_len = need;
	nghttp2_session_resume_data(g->session, g->stream_id);
	flush(g);
	return 0;
}

/* ---- receiving ----------------------------------------------------------------------------- */

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t stream_id, const uint8_t *data,
			 size_t len, void *user)
{
	struct km_grpc_stream *g = user;

	(void)s;
	(void)flags;
	if (stream_id != g->stream_id)
		return 0;
	while (len > 0 && !g->ended) {
		if (g->hdr_have < GRPC_HDR) {
			size_t take = GRPC_HDR - g->hdr_have < len ? GRPC_HDR - g->hdr_have : len;

			memcpy(g->hdr + g->hdr_have, data, take);
			g->hdr_have += take;
			data += take;
			len -= take;
			if (g->hdr_have < GRPC_HDR)
				break;
			if (g->hdr[0] != 0) {
				end_call(g, KM_GRPC_INTERNAL, "compressed message, none was negotiated");
				return 0;
			}
			g->msg_len = ((size_t)g->hdr[1] << 24) | ((size_t)g->hdr[2] << 16) |
				     ((size_t)g->hdr[3] << 8) | g->hdr[4];
			if (g->msg_len > g->cfg.max_message) {
				km_error("istiod sent a message of %zu bytes, over --xds-max-message (%zu): "
					 "raise it for a mesh this large (about 400 bytes per workload)",
					 g->msg_len, g->cfg.max_message);
				end_call(g, KM_GRPC_RESOURCE_EXHAUSTED, "message larger than the limit");
				return 0;
			}
			g->msg = km_msgbuf_alloc(g->msg_len);
			g->msg_have = 0;
			if (!g->msg) {
				end_call(g, KM_GRPC_RESOURCE_EXHAUSTED, "out of memory for a message");
				return 0;
			}
		}
		{
			size_t take = g->msg_len - g->msg_have < len ? g->msg_len - g->msg_have : len;

			memcpy(g->msg + g->msg_have, data, take);
			g->msg_have += take;
			data += take;
			len -= take;
		}
		if (g->msg_have < g->msg_len) {
			if (g->cbs.on_message_part)
				g->cbs.on_message_part(g, g->msg, g->msg_have, g->msg_len);
			continue; /* len is 0 here */
		}
		if (g->msg_have == g->msg_len) {
			uint8_t *m = g->msg;

			g->msg = NULL;
			g->hdr_have = 0;
			g->cbs.on_message(g, m, g->msg_len);
		}
	}
	return 0;
}

/* grpc-message is percent-encoded; decode leniently. */
static void percent_decode(char *out, size_t cap, const uint8_t *in, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < cap; i++) {
		if (in[i] == '%' && i + 2 < len && isxdigit(in[i + 1]) && isxdigit(in[i + 2])) {
			char hex[3] = { (char)in[i + 1], (char)in[i + 2], 0 };

			out[o++] = (char)strtol(hex, NULL, 16);
			i += 2;
		} else {
			out[o++] = (char)in[i];
		}
	}
	out[o] = '\0';
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
		     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *user)
{
	struct km_grpc_stream *g = user;

	(void)s;
	(void)flags;
	if (frame->hd.stream_id != g->stream_id)
		return 0;
	if (namelen == 7 && memcmp(name, ":status", 7) == 0)
		g->http_status = atoi((const char *)value);
	else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0)
		g->grpc_status = atoi((const char *)value);
	else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0)
		percent_decode(g->grpc_message, sizeof(g->grpc_message), value, valuelen);
	return 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *frame, void *user)
{
	struct km_grpc_stream *g = user;

	(void)s;
	if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK))
		g->ping_outstanding = 0;
	else if (frame->hd.type == NGHTTP2_SETTINGS && !(frame->hd.flags & NGHTTP2_FLAG_ACK) &&
		 !g->setup_done) {
		g->setup_done = 1; /* the server speaks HTTP/2: the setup is over */
		uv_timer_stop(&g->setup_timer);
	} else if (frame->hd.type == NGHTTP2_GOAWAY) {
		g->got_goaway = 1;
		km_info("istiod sent GOAWAY (error %u, last stream %d): will reconnect",
			frame->goaway.error_code, frame->goaway.last_stream_id);
		if (frame->goaway.last_stream_id < g->stream_id)
			end_call(g, KM_GRPC_UNAVAILABLE, "GOAWAY before the call was accepted");
	}
	return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t stream_id, uint32_t error_code, void *user)
{
	struct km_grpc_stream *g = user;
	char msg[320];

	(void)s;
	if (stream_id != g->stream_id)
		return 0;
	if (g->http_status && g->http_status != 200) {
		snprintf(msg, sizeof(msg), "HTTP status %d (not a gRPC server?)", g->http_status);
		end_call(g, KM_GRPC_UNKNOWN, msg);
	} else if (g->grpc_status >= 0) {
		end_call(g, g->grpc_status, g->grpc_message[0] ? g->grpc_message : "call ended");
	} else if (error_code == NGHTTP2_REFUSED_STREAM) {
		end_call(g, KM_GRPC_UNAVAILABLE, "stream refused");
	} else if (error_code == NGHTTP2_CANCEL) {
		end_call(g, KM_GRPC_CANCELLED, "stream cancelled");
	} else {
		snprintf(msg, sizeof(msg), "stream reset (%s) without grpc-status",
			 nghttp2_http2_strerror(error_code));
		end_call(g, error_code == NGHTTP2_ENHANCE_YOUR_CALM ? KM_GRPC_RESOURCE_EXHAUSTED
								     : KM_GRPC_INTERNAL, msg);
	}
	return 0;
}

/* ---- connection events --------------------------------------------------------------------- */

static void read_token(struct km_grpc_stream *g)
{
	int fd;
	ssize_t n;

	g->token[0] = '\0';
	if (!g->cfg.token_file)
		return;
	fd = open(g->cfg.token_file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		km_warn("cannot read the token file %s: %s; connecting without a token",
			g->cfg.token_file, strerror(errno));
		return;
	}
	n = read(fd, g->token, sizeof(g->token) - 1);
	close(fd);
	if (n < 0)
		n = 0;
	while (n > 0 && isspace((unsigned char)g->token[n - 1]))
		n--;
	g->token[n] = '\0';
	if ((size_t)n == sizeof(g->token) - 1)
		km_warn("the token in %s is longer than %zu bytes; it was cut", g->cfg.token_file,
			sizeof(g->token) - 1);
}

#define NV(n, v) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE }

static void on_conn_ready(struct km_tls_conn *c)
{
	struct km_grpc_stream *g = c->data;
	nghttp2_settings_entry settings[] = {
		{ NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, g->cfg.window },
		{ NGHTTP2_SETTINGS_MAX_FRAME_SIZE, 1 << 20 },
	};
	char bearer[8200];
	nghttp2_nv hdrs[9] = {
		NV(":method", "POST"),
		NV(":scheme", g->cfg.conn.insecure ? "http" : "https"),
		NV(":path", g->cfg.path),
		NV(":authority", g->cfg.authority),
		NV("content-type", "application/grpc"),
		NV("te", "trailers"),
		NV("user-agent", g->cfg.user_agent ? g->cfg.user_agent : "kmesh-xds-agent"),
	};
	size_t n = 7;
	nghttp2_data_provider dp = { .read_callback = read_out };
	char desc[160];

	read_token(g);
	if (g->token[0]) {
		snprintf(bearer, sizeof(bearer), "Bearer %s", g->token);
		hdrs[n++] = (nghttp2_nv)NV("authorization", bearer);
	}
	if (g->cfg.cluster_id && *g->cfg.cluster_id)
		hdrs[n++] = (nghttp2_nv)NV("clusterid", g->cfg.cluster_id);
	nghttp2_submit_settings(g->session, NGHTTP2_FLAG_NONE, settings,
				sizeof(settings) / sizeof(settings[0]));
	nghttp2_session_set_local_window_size(g->session, NGHTTP2_FLAG_NONE, 0, (int32_t)g->cfg.window);
	g->stream_id = nghttp2_submit_request(g->session, NULL, hdrs, n, &dp, g);
	if (g->stream_id < 0) {
		end_call(g, KM_GRPC_INTERNAL, nghttp2_strerror(g->stream_id));
		return;
	}
	km_info("connected to %s:%u (%s)", g->cfg.conn.host, g->cfg.conn.port,
		km_tls_conn_describe(&g->conn, desc, sizeof(desc)));
	flush(g);
	if (g->cfg.ping_interval_ms)
		uv_timer_start(&g->ping_timer, on_ping_send, g->cfg.ping_interval_ms, 0);
	g->cbs.on_open(g);
}

static void on_conn_data(struct km_tls_conn *c, const uint8_t *data, size_t len)
{
	struct km_grpc_stream *g = c->data;
	ssize_t n = nghttp2_session_mem_recv(g->session, data, len);

	if (n < 0) {
		end_call(g, KM_GRPC_INTERNAL, nghttp2_strerror((int)n));
		return;
	}
	flush(g); /* acks, window updates, pings */
	if (!nghttp2_session_want_read(g->session) && !nghttp2_session_want_write(g->session))
		end_call(g, KM_GRPC_UNAVAILABLE, "the HTTP/2 session ended");
}

static void on_conn_error(struct km_tls_conn *c, const char *what)
{
	struct km_grpc_stream *g = c->data;

	end_call(g, KM_GRPC_UNAVAILABLE, what);
}

static void maybe_closed(struct km_grpc_stream *g)
{
	if (--g->handles > 0)
		return;
	nghttp2_session_del(g->session);
	g->session = NULL;
	free(g->out);
	km_msgbuf_free(g->msg, g->msg_len);
	g->out = g->msg = NULL;
	if (g->cbs.on_closed)
		g->cbs.on_closed(g);
}

static void on_conn_closed(struct km_tls_conn *c)
{
	maybe_closed(c->data);
}

static void on_timer_closed(uv_handle_t *h)
{
	maybe_closed(h->data);
}

/* The setup took too long: say where it stuck (the connection's stage, or waiting for the
 * server's HTTP/2 SETTINGS after it), and end the call so the owner backs off and retries. */
static void on_setup_timeout(uv_timer_t *t)
{
	struct km_grpc_stream *g = t->data;
	const char *stage = km_tls_conn_stage(&g->conn);
	char msg[256];

	if (g->setup_done || g->ended)
		return;
	snprintf(msg, sizeof(msg), "%s:%u: the %s did not complete within %u ms", g->cfg.conn.host,
		 g->cfg.conn.port, stage ? stage : "HTTP/2 setup (no SETTINGS from the server)",
		 g->cfg.setup_timeout_ms);
	km_error("connection to %s; giving up on it", msg);
	end_call(g, KM_GRPC_UNAVAILABLE, msg);
}

/* Keepalive: a ping every interval (istiod tolerates one per 15 s at most), and the call ends if
 * its ack has not come within the timeout. */
static void on_ping_due(uv_timer_t *t)
{
	struct km_grpc_stream *g = t->data;

	if (g->ping_outstanding) {
		end_call(g, KM_GRPC_UNAVAILABLE, "keepalive ping not answered");
		return;
	}
	uv_timer_start(&g->ping_timer, on_ping_send,
		       g->cfg.ping_interval_ms > g->cfg.ping_timeout_ms
			       ? g->cfg.ping_interval_ms - g->cfg.ping_timeout_ms
			       : g->cfg.ping_interval_ms, 0);
}

static void on_ping_send(uv_timer_t *t)
{
	struct km_grpc_stream *g = t->data;

	g->ping_outstanding = 1;
	nghttp2_submit_ping(g->session, NGHTTP2_FLAG_NONE, NULL);
	flush(g);
	uv_timer_start(&g->ping_timer, on_ping_due, g->cfg.ping_timeout_ms, 0);
}

int km_grpc_stream_start(struct km_grpc_stream *g, uv_loop_t *loop,
			 const struct km_grpc_stream_config *cfg, const struct km_grpc_stream_cbs *cbs)
{
	nghttp2_session_callbacks *cb;
	const struct km_tls_conn_cbs ccbs = { on_conn_ready, on_conn_data, on_conn_error,
					      on_conn_closed };
	void *owner = g->data;
	int rc;

	memset(g, 0, sizeof(*g));
	g->data = owner;
	g->cfg = *cfg;
	g->cbs = *cbs;
	g->grpc_status = -1;
	/* the timers first: a failure below is then closed like any stream (km_grpc_stream_close),
	 * its on_closed coming from the timers' close callbacks */
	uv_timer_init(loop, &g->ping_timer);
	g->ping_timer.data = g;
	uv_timer_init(loop, &g->setup_timer);
	g->setup_timer.data = g;
	g->handles = 2;
	if (nghttp2_session_callbacks_new(&cb) != 0)
		return -1;
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
	rc = nghttp2_session_client_new((nghttp2_session **)&g->session, cb, g);
	nghttp2_session_callbacks_del(cb);
	if (rc != 0)
		return -1;
	if (cfg->setup_timeout_ms)
		uv_timer_start(&g->setup_timer, on_setup_timeout, cfg->setup_timeout_ms, 0);
	g->handles = 3; /* and the connection's */
	g->conn_started = 1;
	g->conn.data = g;
	return km_tls_conn_start(&g->conn, loop, &cfg->conn, &ccbs);
}

void km_grpc_stream_close(struct km_grpc_stream *g)
{
	if (g->closing)
		return;
	g->closing = 1;
	end_call(g, KM_GRPC_CANCELLED, "closed by the agent");
	uv_close((uv_handle_t *)&g->ping_timer, on_timer_closed);
	uv_close((uv_handle_t *)&g->setup_timer, on_timer_closed);
	if (g->conn_started)
		km_tls_conn_close(&g->conn);
}
