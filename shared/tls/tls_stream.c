/* tls_stream.c — TLS over a libuv TCP handle (see tls_stream.h). */
#include "shared/tls/tls_stream.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/ssl.h>

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

static int io_recv(WOLFSSL *ssl, char *buf, int sz, void *ctx)
{
	struct km_tls_stream *s = ctx;
	size_t n = s->in_len < (size_t)sz ? s->in_len : (size_t)sz;

	(void)ssl;
	if (n == 0)
		return WOLFSSL_CBIO_ERR_WANT_READ;
	memcpy(buf, s->in, n);
	memmove(s->in, s->in + n, s->in_len - n);
	s->in_len -= n;
	return (int)n;
}

static int io_send(WOLFSSL *ssl, char *buf, int sz, void *ctx)
{
	struct km_tls_stream *s = ctx;
	struct ts_write *w = malloc(sizeof(*w) + (size_t)sz);
	uv_buf_t b;

	(void)ssl;
	if (!w || s->failed) {
		free(w);
		return WOLFSSL_CBIO_ERR_GENERAL;
	}
	memcpy(w->bytes, buf, (size_t)sz);
	w->s = s;
	w->len = (size_t)sz;
	b = uv_buf_init((char *)w->bytes, (unsigned)sz);
	if (uv_write(&w->req, s->tcp, &b, 1, on_written) != 0) {
		free(w);
		return WOLFSSL_CBIO_ERR_GENERAL;
	}
	s->unwritten += (size_t)sz;
	return sz;
}

static void handshake(struct km_tls_stream *s, int server)
{
	WOLFSSL *ssl = s->ssl;
	int rc = server ? wolfSSL_accept(ssl) : wolfSSL_connect(ssl);

	if (rc != WOLFSSL_SUCCESS) {
		int err = wolfSSL_get_error(ssl, rc);
		char msg[WOLFSSL_MAX_ERROR_SZ];

		if (err == WOLFSSL_ERROR_WANT_READ || err == WOLFSSL_ERROR_WANT_WRITE)
			return;
		wolfSSL_ERR_error_string_n((unsigned long)err, msg, sizeof(msg));
		fail(s, 0, "TLS handshake failed: %s%s", msg,
		     err == DOMAIN_NAME_MISMATCH ? " (certificate is not for this name)" : "");
		return;
	}
	s->ready = 1;
	s->cbs.on_ready(s);
}

/* Plaintext out of what arrived, to the owner, until wolfSSL wants more (or the owner paused). */
static void drain_plaintext(struct km_tls_stream *s)
{
	uint8_t buf[16384];

	while (s->ready && !s->failed && !s->paused) {
		int n = wolfSSL_read(s->ssl, buf, sizeof(buf));
		int err;

		if (n > 0) {
			s->cbs.on_data(s, buf, (size_t)n);
			continue;
		}
		err = wolfSSL_get_error(s->ssl, n);
		if (err == WOLFSSL_ERROR_WANT_READ)
			return;
		if (err == WOLFSSL_ERROR_ZERO_RETURN)
			fail(s, 1, "the peer closed the TLS session");
		else
			fail(s, 0, "TLS read error %d", err);
		return;
	}
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	buf->base = malloc(65536);
	buf->len = buf->base ? 65536 : 0;
}

static void on_read(uv_stream_t *tcp, ssize_t n, const uv_buf_t *buf)
{
	struct km_tls_stream *s = tcp->data;

	if (n < 0) {
		fail(s, n == UV_EOF, "%s", n == UV_EOF ? "the peer closed the connection"
						       : uv_strerror((int)n));
	} else if (n > 0 && !s->failed) {
		if (s->in_len + (size_t)n > KM_TLS_STREAM_IN_MAX) {
			fail(s, 0, "more than %u bytes of TLS records waiting", KM_TLS_STREAM_IN_MAX);
		} else {
			if (s->in_len + (size_t)n > s->in_cap) {
				size_t cap = s->in_cap ? s->in_cap : 32768;
				uint8_t *q;

				while (cap < s->in_len + (size_t)n)
					cap *= 2;
				if (!(q = realloc(s->in, cap))) {
					fail(s, 0, "out of memory");
					free(buf->base);
					return;
				}
				s->in = q;
				s->in_cap = cap;
			}
			memcpy(s->in + s->in_len, buf->base, (size_t)n);
			s->in_len += (size_t)n;
			if (!s->ready)
				handshake(s, wolfSSL_is_server(s->ssl));
			drain_plaintext(s); /* application data may come with the last flight */
		}
	}
	free(buf->base);
}

int km_tls_stream_start(struct km_tls_stream *s, uv_stream_t *tcp, void *ctx, int server,
			const char *server_name, const char *alpn,
			const struct km_tls_stream_cbs *cbs)
{
	void *owner = s->data;
	WOLFSSL *ssl;

	memset(s, 0, sizeof(*s));
	s->data = owner;
	s->tcp = tcp;
	s->cbs = *cbs;
	tcp->data = s;
	wolfSSL_CTX_SetIORecv(ctx, io_recv);
	wolfSSL_CTX_SetIOSend(ctx, io_send);
	if (!(ssl = wolfSSL_new(ctx))) {
		snprintf(s->error, sizeof(s->error), "TLS: cannot create a session");
		return -1;
	}
	s->ssl = ssl;
	wolfSSL_SetIOReadCtx(ssl, s);
	wolfSSL_SetIOWriteCtx(ssl, s);
	if (!server && server_name &&
	    (wolfSSL_UseSNI(ssl, WOLFSSL_SNI_HOST_NAME, server_name,
			    (unsigned short)strlen(server_name)) != WOLFSSL_SUCCESS ||
	     wolfSSL_check_domain_name(ssl, server_name) != WOLFSSL_SUCCESS)) {
		snprintf(s->error, sizeof(s->error), "TLS: cannot set SNI and the name check");
		return -1;
	}
	if (alpn) {
		char proto[32];

		snprintf(proto, sizeof(proto), "%s", alpn);
		if (wolfSSL_UseALPN(ssl, proto, (unsigned)strlen(proto),
				    WOLFSSL_ALPN_FAILED_ON_MISMATCH) != WOLFSSL_SUCCESS) {
			snprintf(s->error, sizeof(s->error), "TLS: cannot set ALPN %s", alpn);
			return -1;
		}
	}
	if (uv_read_start(tcp, on_alloc, on_read) != 0) {
		snprintf(s->error, sizeof(s->error), "cannot read the connection");
		return -1;
	}
	s->reading = 1;
	if (!server)
		handshake(s, 0);
	return 0;
}

int km_tls_stream_write(struct km_tls_stream *s, const uint8_t *data, size_t len)
{
	if (!s->ready || s->failed)
		return -1;
	while (len > 0) {
		int n = wolfSSL_write(s->ssl, data, (int)(len > 16384 ? 16384 : len));

		if (n <= 0) {
			fail(s, 0, "TLS write error %d", wolfSSL_get_error(s->ssl, n));
			return -1;
		}
		data += n;
		len -= (size_t)n;
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
	snprintf(buf, len, "%s %s", s->ssl ? wolfSSL_get_version(s->ssl) : "-",
		 s->ssl ? wolfSSL_get_cipher_name(s->ssl) : "-");
	return buf;
}

void km_tls_stream_free(struct km_tls_stream *s)
{
	if (s->reading && !uv_is_closing((uv_handle_t *)s->tcp))
		uv_read_stop(s->tcp);
	s->reading = 0;
	s->failed = 1;
	if (s->ssl)
		wolfSSL_free(s->ssl);
	s->ssl = NULL;
	free(s->in);
	s->in = NULL;
	s->in_len = s->in_cap = 0;
}
