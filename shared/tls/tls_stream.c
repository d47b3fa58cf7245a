/* tls_stream.c — TLS over a libuv TCP handle (see tls_stream.h): the libuv side, the same for
 * every backend (tls_backend.h). */
#include "shared/tls/tls_stream.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/tls/tls_backend.h"

struct ts_write {
	uv_write_t req;
	struct km_tls_stream *s;
	size_t len;
	uint8_t bytes[];
};

static void fail(struct km_tls_stream *s, int eof, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(struct km_tls_stream *s, int eof, const char *fmt, ...)
{
	va_list ap;

	if (s->failed)
		return;
	s->failed = 1;
	va_start(ap, fmt);
	vsnprintf(s->error, sizeof(s->error), fmt, ap);
	va_end(ap);
	if (s->reading)
		uv_read_stop(s->tcp);
	s->reading = 0;
	s->cbs.on_error(s, s->error, eof);
}

/* A backend's failure: it wrote s->error. */
static void failed(struct km_tls_stream *s)
{
	char why[sizeof(s->error)];

	memcpy(why, s->error, sizeof(why));
	fail(s, 0, "%s", why);
}

static void on_written(uv_write_t *req, int status)
{
	struct ts_write *w = (struct ts_write *)req;
	struct km_tls_stream *s = w->s;

	if (s) {
		s->unwritten -= w->len;
		if (status < 0 && status != UV_ECANCELED)
			fail(s, 0, "write: %s", uv_strerror(status));
		else if (!s->failed && s->cbs.on_drained)
			s->cbs.on_drained(s);
	}
	free(w);
}

int km_tls_stream_send(struct km_tls_stream *s, const uint8_t *data, size_t len)
{
	struct ts_write *w;
	uv_buf_t b;

	if (s->failed || !(w = malloc(sizeof(*w) + len)))
		return -1;
	memcpy(w->bytes, data, len);
	w->s = s;
	w->len = len;
	b = uv_buf_init((char *)w->bytes, (unsigned)len);
	if (uv_write(&w->req, s->tcp, &b, 1, on_written) != 0) {
		free(w);
		return -1;
	}
	s->unwritten += len;
	return 0;
}

size_t km_tls_stream_take_in(struct km_tls_stream *s, uint8_t *buf, size_t len)
{
	size_t n = s->in_len - s->in_off < len ? s->in_len - s->in_off : len;

	if (!n)
		return 0;
	memcpy(buf, s->in + s->in_off, n);
	s->in_off += n;
	if (s->in_off == s->in_len)
		s->in_off = s->in_len = 0;
	return n;
}

static void handshake(struct km_tls_stream *s)
{
	int rc = s->be->handshake(s);

	if (rc == KM_TLS_FAILED) {
		failed(s);
	} else if (rc == KM_TLS_DONE) {
		s->ready = 1;
		s->cbs.on_ready(s);
	}
}

/* Plaintext out of what arrived, to the owner, until the library wants more (or the owner
 * paused). */
static void drain_plaintext(struct km_tls_stream *s)
{
	uint8_t buf[16384];

	while (s->ready && !s->failed && !s->paused) {
		int n = s->be->read(s, buf, sizeof(buf));

		if (n > 0)
			s->cbs.on_data(s, buf, (size_t)n);
		else if (n == KM_TLS_CLOSED)
			fail(s, 1, "the peer closed the TLS session");
		else if (n == KM_TLS_FAILED)
			failed(s);
		if (n <= 0)
			return;
	}
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct km_tls_stream *s = h->data;
	size_t room;

	(void)suggested;
	/* straight into the input buffer: compacted, grown to 64 KiB free (within the bound) */
	if (s->in_off) {
		memmove(s->in, s->in + s->in_off, s->in_len - s->in_off);
		s->in_len -= s->in_off;
		s->in_off = 0;
	}
	if (s->in_cap - s->in_len < 65536 && s->in_cap < KM_TLS_STREAM_IN_MAX) {
		size_t cap = s->in_cap ? s->in_cap * 2 : 65536;
		uint8_t *q;

		while (cap - s->in_len < 65536 && cap < KM_TLS_STREAM_IN_MAX)
			cap *= 2;
		if (cap > KM_TLS_STREAM_IN_MAX)
			cap = KM_TLS_STREAM_IN_MAX;
		if ((q = realloc(s->in, cap))) {
			s->in = q;
			s->in_cap = cap;
		}
	}
	room = s->in_cap - s->in_len;
	buf->base = room ? (char *)s->in + s->in_len : NULL;
	buf->len = room;
}

static void on_read(uv_stream_t *tcp, ssize_t n, const uv_buf_t *buf)
{
	struct km_tls_stream *s = tcp->data;

	(void)buf;
	if (n == UV_ENOBUFS) {
		fail(s, 0, "more than %u bytes of TLS records waiting", KM_TLS_STREAM_IN_MAX);
	} else if (n < 0) {
		fail(s, n == UV_EOF, "%s", n == UV_EOF ? "the peer closed the connection"
						       : uv_strerror((int)n));
	} else if (n > 0 && !s->failed) {
		s->in_len += (size_t)n;
		if (!s->ready)
			handshake(s);
		drain_plaintext(s); /* application data may come with the last flight */
	}
}

int km_tls_stream_start(struct km_tls_stream *s, const struct km_tls_backend *be, uv_stream_t *tcp,
			void *ctx, int server, const char *server_name, const char *alpn,
			const struct km_tls_stream_cbs *cbs)
{
	void *owner = s->data;

	memset(s, 0, sizeof(*s));
	s->data = owner;
	s->tcp = tcp;
	s->be = be;
	s->cbs = *cbs;
	s->server = server;
	tcp->data = s;
	if (be->session(s, ctx, server, server_name, alpn) != 0)
		return -1;
	if (uv_read_start(tcp, on_alloc, on_read) != 0) {
		snprintf(s->error, sizeof(s->error), "cannot read the connection");
		return -1;
	}
	s->reading = 1;
	if (!server)
		handshake(s);
	return 0;
}

int km_tls_stream_write(struct km_tls_stream *s, const uint8_t *data, size_t len)
{
	if (!s->ready || s->failed)
		return -1;
	if (s->be->write(s, data, len) != 0) {
		failed(s);
		return -1;
	}
	return 0;
}

void km_tls_stream_cork(struct km_tls_stream *s)
{
	s->corked = s->be && s->be->push;
}

int km_tls_stream_uncork(struct km_tls_stream *s)
{
	if (!s->corked)
		return s->failed ? -1 : 0;
	s->corked = 0;
	if (s->failed)
		return -1;
	if (s->be->push(s) != 0) {
		failed(s);
		return -1;
	}
	return 0;
}

void km_tls_stream_pause(struct km_tls_stream *s, int pause)
{
	if (s->failed || s->paused == pause)
		return;
	s->paused = pause;
	if (pause && s->reading) {
		uv_read_stop(s->tcp);
		s->reading = 0;
	} else if (!pause && !s->reading) {
		if (uv_read_start(s->tcp, on_alloc, on_read) == 0)
			s->reading = 1;
		drain_plaintext(s); /* what arrived before the pause */
	}
}

void *km_tls_stream_ssl(const struct km_tls_stream *s)
{
	return s->ssl;
}

const char *km_tls_stream_describe(const struct km_tls_stream *s, char *buf, size_t len)
{
	if (s->ssl)
		s->be->describe(s, buf, len);
	else
		snprintf(buf, len, "- -");
	return buf;
}

void km_tls_stream_free(struct km_tls_stream *s)
{
	if (s->reading && !uv_is_closing((uv_handle_t *)s->tcp))
		uv_read_stop(s->tcp);
	s->reading = 0;
	s->failed = 1;
	if (s->ssl)
		s->be->free(s);
	s->ssl = NULL;
	free(s->in);
	s->in = NULL;
	s->in_off = s->in_len = s->in_cap = 0;
}
