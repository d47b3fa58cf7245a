/* h2_relay.c — see h2_relay.h. */
#include "services/tunnel/h2_relay.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <nghttp2/nghttp2.h>

#include "shared/h2_frames.h"
#include "shared/tls/tls_stream.h"

struct km_h2_relay_write {
	uv_write_t req;
	struct km_h2_relay *r;
	size_t len, cap;
	uint8_t bytes[];
};

static nghttp2_session *session_of(const struct km_h2_relay *r)
{
	return r->h2_closed ? NULL : *r->session;
}

static void shut_up_if_done(struct km_h2_relay *r);

void km_h2_relay_init(struct km_h2_relay *r, const struct km_h2_relay_ops *ops, void **session,
		      int32_t id)
{
	memset(r, 0, sizeof(*r));
	r->ops = ops;
	r->session = session;
	r->id = id;
}

void km_h2_relay_set_up(struct km_h2_relay *r, uv_tcp_t *up)
{
	r->up = up;
	up->data = r;
}

static int up_open(const struct km_h2_relay *r)
{
	return r->up && !uv_is_closing((uv_handle_t *)r->up);
}

static void up_closed(uv_handle_t *handle)
{
	struct km_h2_relay *r = handle->data;

	free(handle);
	if (r) {
		r->up = NULL;
		r->ops->released(r);
	}
}

ssize_t km_h2_relay_frame_length(nghttp2_session *session, uint8_t type, int32_t id, int32_t session_window,
				 int32_t stream_window, uint32_t remote_max_frame, void *user)
{
	(void)session;
	(void)type;
	(void)id;
	(void)user;
	return km_h2_frame_length(session_window, stream_window, remote_max_frame, KM_H2_RELAY_BUF);
}

int km_h2_send(void *session, struct km_tls_stream *tls, size_t max_unsent, size_t cork_max)
{
	size_t held = 0;
	int broken = 0;

	km_tls_stream_cork(tls);
	while (tls->unwritten + held < max_unsent) {
		const uint8_t *p;
		ssize_t n = nghttp2_session_mem_send(session, &p);

		if (n <= 0) {
			broken = n < 0;
			break;
		}
		if (km_tls_stream_write(tls, p, (size_t)n) != 0)
			break; /* the TLS stream said why: its error callback closes */
		held += (size_t)n;
		if (held >= cork_max) {
			if (km_tls_stream_uncork(tls) != 0)
				break;
			held = 0;
			km_tls_stream_cork(tls);
		}
	}
	km_tls_stream_uncork(tls);
	return broken ? -1 : 0;
}

void km_tcp_close_reset(uv_tcp_t *tcp, uv_close_cb cb)
{
	if (uv_tcp_close_reset(tcp, cb) != 0)
		uv_close((uv_handle_t *)tcp, cb);
}

void km_h2_relay_close_up(struct km_h2_relay *r, int reset)
{
	if (!up_open(r))
		return;
	if (reset)
		km_tcp_close_reset(r->up, up_closed);
	else
		uv_close((uv_handle_t *)r->up, up_closed);
}

/* ---- the socket's bytes to the peer ------------------------------------------------------- */

static void up_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *b)
{
	struct km_h2_relay *r = handle->data;

	(void)suggested;
	if (!r->buf)
		r->buf = malloc(KM_H2_RELAY_BUF);
	if (r->buf_off) { /* what is left to the front: a copy per read, not per frame */
		memmove(r->buf, r->buf + r->buf_off, r->buf_len - r->buf_off);
		r->buf_len -= r->buf_off;
		r->buf_off = 0;
	}
	b->base = r->buf ? (char *)r->buf + r->buf_len : NULL;
	b->len = r->buf ? KM_H2_RELAY_BUF - r->buf_len : 0;
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
	struct km_h2_relay *r = s->data;
	nghttp2_session *session = session_of(r);

	(void)b;
	if (n > 0) {
		r->buf_len += (size_t)n;
		r->from_up += (uint64_t)n;
		if (r->buf_len >= KM_H2_RELAY_BUF) { /* full: until it is framed */
			uv_read_stop(s);
			r->up_reading = 0;
		}
		if (session)
			nghttp2_session_resume_data(session, r->id);
	} else if (n == UV_EOF && (n = pending_error(s)) == UV_EOF) {
		r->up_eof = 1;
		uv_read_stop(s);
		r->up_reading = 0;
		if (session)
			nghttp2_session_resume_data(session, r->id);
	} else if (n < 0) { /* reset, or failed: the peer's stream is reset */
		if (session)
			nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, r->id,
						  n == UV_ECONNRESET ? NGHTTP2_CONNECT_ERROR
								     : NGHTTP2_INTERNAL_ERROR);
		km_h2_relay_close_up(r, 1);
	}
	r->ops->flush(r);
}

/* What the socket sent, framed as DATA (END_STREAM after its FIN). */
static ssize_t provide(nghttp2_session *session, int32_t id, uint8_t *out, size_t len,
		       uint32_t *flags, nghttp2_data_source *src, void *user)
{
	struct km_h2_relay *r = src->ptr;
	size_t held = r->buf_len - r->buf_off, n = held < len ? held : len;

	(void)session;
	(void)id;
	(void)user;
	if (n) {
		memcpy(out, r->buf + r->buf_off, n);
		r->buf_off += n;
		if (r->buf_off == r->buf_len)
			r->buf_off = r->buf_len = 0;
		if (up_open(r) && r->relaying && !r->up_reading && !r->up_eof &&
		    held - n < KM_H2_RELAY_BUF / 2 &&
		    uv_read_start((uv_stream_t *)r->up, up_alloc, up_read) == 0)
			r->up_reading = 1;
	}
	if (r->up_eof && r->buf_len == r->buf_off)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	else if (!n)
		return NGHTTP2_ERR_DEFERRED;
	return (ssize_t)n;
}

void km_h2_relay_provider(struct km_h2_relay *r, void *provider)
{
	nghttp2_data_provider *dp = provider;

	dp->source.ptr = r;
	dp->read_callback = provide;
}

void km_h2_relay_start(struct km_h2_relay *r)
{
	r->relaying = 1;
	shut_up_if_done(r);
	if (up_open(r) && !r->up_reading && !r->up_eof &&
	    uv_read_start((uv_stream_t *)r->up, up_alloc, up_read) == 0)
		r->up_reading = 1;
}

/* ---- the peer's bytes to the socket ------------------------------------------------------- */

static void up_written(uv_write_t *req, int status)
{
	struct km_h2_relay_write *w = (struct km_h2_relay_write *)req;
	struct km_h2_relay *r = w->r;
	nghttp2_session *session = session_of(r);

	r->writing -= w->len;
	if (status == 0)
		r->to_up += w->len;
	if (status == 0 && session) /* the window back once the bytes are out */
		nghttp2_session_consume(session, r->id, w->len);
	free(w);
	shut_up_if_done(r);
	r->ops->flush(r);
	r->ops->released(r);
}

/* The peer's END_STREAM, once everything before it is written: the socket is shut down for
 * writing (a half-close). */
static void shut_up_if_done(struct km_h2_relay *r)
{
	if (r->down_eof && r->relaying && !r->writing && up_open(r) && !r->shutdown_sent &&
	    uv_shutdown(&r->shutdown_req, (uv_stream_t *)r->up, NULL) == 0)
		r->shutdown_sent = 1;
}

void km_h2_relay_write_pending(struct km_h2_relay *r)
{
	struct km_h2_relay_write *w = r->pend;
	nghttp2_session *session;
	uv_buf_t b;

	if (!w)
		return;
	r->pend = NULL;
	b = uv_buf_init((char *)w->bytes, (unsigned)w->len);
	if (up_open(r) && uv_write(&w->req, (uv_stream_t *)r->up, &b, 1, up_written) == 0)
		return;
	r->writing -= w->len;
	if ((session = session_of(r)))
		nghttp2_session_consume(session, r->id, w->len);
	free(w);
	r->ops->released(r);
}

int km_h2_relay_data(struct km_h2_relay *r, const uint8_t *data, size_t len)
{
	struct km_h2_relay_write *w = r->pend;

	if (!up_open(r))
		goto drop;
	if (!w || w->len + len > w->cap) {
		size_t have = w ? w->len : 0,
		       cap = have + len < (64u << 10) ? (64u << 10) : 2 * (have + len);
		struct km_h2_relay_write *n = realloc(w, sizeof(*n) + cap);

		if (!n)
			goto drop;
		if (!w)
			n->len = 0;
		n->r = r;
		n->cap = cap;
		w = r->pend = n;
	}
	memcpy(w->bytes + w->len, data, len);
	w->len += len;
	r->writing += len;
	if (r->ops->gather)
		r->ops->flush(r); /* the turn's end writes it */
	else
		km_h2_relay_write_pending(r);
	return 0;
drop: {
	nghttp2_session *session = session_of(r);

	if (session)
		nghttp2_session_consume(session, r->id, len); /* nobody to give it to */
	return -1;
}
}

void km_h2_relay_peer_eof(struct km_h2_relay *r)
{
	r->down_eof = 1;
	shut_up_if_done(r);
}

/* ---- the end ------------------------------------------------------------------------------ */

void km_h2_relay_abort(struct km_h2_relay *r)
{
	r->h2_closed = 1;
	if (r->pend) { /* gathered, never to be written */
		r->writing -= r->pend->len;
		free(r->pend);
		r->pend = NULL;
	}
	km_h2_relay_close_up(r, 1);
}

void km_h2_relay_stream_closed(struct km_h2_relay *r, uint32_t code)
{
	r->h2_closed = 1;
	/* a reset by the peer (or ours) resets the socket; a clean end has closed both ways */
	km_h2_relay_close_up(r, code != NGHTTP2_NO_ERROR || !r->up_eof || !r->down_eof);
}

int km_h2_relay_busy(const struct km_h2_relay *r)
{
	return r->up != NULL || r->writing != 0;
}

void km_h2_relay_free(struct km_h2_relay *r)
{
	free(r->pend);
	free(r->buf);
	r->pend = NULL;
	r->buf = NULL;
}

uint64_t km_h2_relay_cookie(const struct km_h2_relay *r)
{
	uv_os_fd_t fd;
	uint64_t cookie = 0;
	socklen_t cl = sizeof(cookie);

	if (!r->up || uv_fileno((uv_handle_t *)r->up, &fd) != 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &cl) != 0)
		return 0;
	return cookie;
}
