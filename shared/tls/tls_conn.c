/* tls_conn.c — TCP + optional wolfSSL client stream on libuv (see tls_conn.h). */
#include "shared/tls/tls_conn.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/ssl.h>
#include <wolfssl/wolfcrypt/ecc.h>

#include "shared/log.h"

enum { TC_RESOLVING, TC_CONNECTING, TC_HANDSHAKE, TC_READY, TC_FAILED };

struct tc_write {
	uv_write_t req;
	uint8_t bytes[];
};

static void fail(struct km_tls_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(struct km_tls_conn *c, const char *fmt, ...)
{
	va_list ap;

	if (c->state == TC_FAILED || c->closing)
		return;
	c->state = TC_FAILED;
	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
	c->cbs.on_error(c, c->error);
}

/* ---- raw TCP writes ------------------------------------------------------------------------ */

static void on_written(uv_write_t *req, int status)
{
	struct km_tls_conn *c = req->handle->data;

	free(req);
	if (status < 0 && status != UV_ECANCELED)
		fail(c, "write: %s", uv_strerror(status));
}

static int tcp_write(struct km_tls_conn *c, const uint8_t *data, size_t len)
{
	struct tc_write *w = malloc(sizeof(*w) + len);
	uv_buf_t buf;
	int err;

	if (!w)
		return -1;
	memcpy(w->bytes, data, len);
	buf = uv_buf_init((char *)w->bytes, (unsigned)len);
	err = uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, on_written);
	if (err) {
		free(w);
		fail(c, "write: %s", uv_strerror(err));
		return -1;
	}
	return 0;
}

/* ---- TLS: tls_stream.h, with istiod's checks ------------------------------------------------ */

static void ts_error(struct km_tls_stream *ts, const char *what, int eof)
{
	struct km_tls_conn *c = ts->data;

	if (c->state == TC_HANDSHAKE)
		fail(c, "TLS handshake with %s failed: %s", c->cfg.server_name, what);
	else
		fail(c, "%s", eof ? "server closed the connection" : what);
}

static void ts_data(struct km_tls_stream *ts, const uint8_t *data, size_t len)
{
	struct km_tls_conn *c = ts->data;

	if (!c->closing)
		c->cbs.on_data(c, data, len);
}

static void ts_ready(struct km_tls_stream *ts);

static int tls_setup(struct km_tls_conn *c)
{
	static const struct km_tls_stream_cbs cbs = { ts_ready, ts_data, ts_error, NULL };
	WOLFSSL_CTX *ctx;

	wolfSSL_Init();
	ctx = wolfSSL_CTX_new(wolfSSLv23_client_method());
	if (!ctx) {
		fail(c, "TLS: cannot create a context");
		return -1;
	}
	c->ssl_ctx = ctx;
	wolfSSL_CTX_SetMinVersion(ctx, WOLFSSL_TLSV1_2);
	/* AEAD suites only (HTTP/2 forbids the others, RFC 9113 9.2.2), ChaCha20-Poly1305 first:
	 * the wolfSSL Debian ships has no AES-NI, and decrypting a push with its AES-GCM was a
	 * quarter of the agent's CPU (156 MB/s against 390 for ChaCha20-Poly1305 on the test
	 * machine, bench/tls_cipher_bench.c). istiod (Go) and BoringSSL servers follow a client
	 * that lists ChaCha20 first. */
	if (wolfSSL_CTX_set_cipher_list(ctx, KM_TLS_CIPHERS) != WOLFSSL_SUCCESS) {
		fail(c, "TLS: cannot set the cipher suites %s", KM_TLS_CIPHERS);
		return -1;
	}
	if (wolfSSL_CTX_load_verify_locations(ctx, c->cfg.ca_file, NULL) != WOLFSSL_SUCCESS) {
		fail(c, "TLS: cannot load the CA file %s", c->cfg.ca_file);
		return -1;
	}
	wolfSSL_CTX_set_verify(ctx, WOLFSSL_VERIFY_PEER, NULL);
	c->ts.data = c;
	c->ssl = NULL;
	if (km_tls_stream_start(&c->ts, &km_tls_wolfssl, (uv_stream_t *)&c->tcp, ctx, 0,
				c->cfg.server_name, "h2", &cbs) != 0) {
		fail(c, "%s", c->ts.error);
		return -1;
	}
	c->ssl = c->ts.ssl;
	return 0;
}

/* wolfSSL built with FP_ECC (Debian's is) keeps a table of precomputed multiples for each ECC
 * point it has multiplied, up to 15 of ~0.8 MB each, until the thread ends: every reconnect to
 * istiod added one (its ephemeral key), so the agent grew ~0.8 MB per reconnect up to ~12 MB
 * (found by `make chaos`). Handshakes are rare, so the cache buys nothing: drop it after each. */
static void release_ecc_cache(void)
{
#ifdef FP_ECC
	wc_ecc_fp_free();
#endif
}

static int has_dns_san(WOLFSSL *ssl)
{
	WOLFSSL_X509 *x = wolfSSL_get_peer_certificate(ssl);
	int any = x && wolfSSL_X509_get_next_altname(x) != NULL;

	wolfSSL_X509_free(x);
	return any;
}

static void ts_ready(struct km_tls_stream *ts)
{
	struct km_tls_conn *c = ts->data;
	WOLFSSL *ssl = ts->ssl;
	char *proto = NULL;
	unsigned short plen = 0;

	/* the name was checked against the certificate's DNS names, or, when it has none, its
	 * common name: a fallback RFC 6125 deprecates (any CA-signed certificate with that CN
	 * would pass). An istiod certificate names itself in its SAN. */
	if (!has_dns_san(ssl)) {
		fail(c, "TLS: %s's certificate has no DNS subjectAltName; a name only in its common "
		     "name is not accepted (RFC 6125)", c->cfg.server_name);
		return;
	}
	if (wolfSSL_ALPN_GetProtocol(ssl, &proto, &plen) != WOLFSSL_SUCCESS || plen != 2 ||
	    memcmp(proto, "h2", 2) != 0) {
		fail(c, "TLS: the server did not agree to ALPN h2");
		return;
	}
	release_ecc_cache();
	c->state = TC_READY;
	c->cbs.on_ready(c);
}

/* ---- libuv plumbing ------------------------------------------------------------------------ */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	buf->base = malloc(suggested < 65536 ? 65536 : suggested);
	buf->len = buf->base ? (suggested < 65536 ? 65536 : suggested) : 0;
}

/* Plaintext TCP (h2c): the bytes as they come. */
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct km_tls_conn *c = s->data;

	if (n < 0)
		fail(c, "%s", n == UV_EOF ? "server closed the connection" : uv_strerror((int)n));
	else if (n > 0 && !c->closing)
		c->cbs.on_data(c, (const uint8_t *)buf->base, (size_t)n);
	free(buf->base);
}

static void on_connected(uv_connect_t *req, int status)
{
	struct km_tls_conn *c = req->data;

	if (c->closing)
		return;
	if (status < 0) {
		fail(c, "connect to %s:%u: %s", c->cfg.host, c->cfg.port, uv_strerror(status));
		return;
	}
	uv_timer_stop(&c->timer);
	uv_tcp_nodelay(&c->tcp, 1);
	uv_tcp_keepalive(&c->tcp, 1, 300);
	if (c->cfg.insecure) {
		uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
		c->state = TC_READY;
		c->cbs.on_ready(c);
		return;
	}
	c->state = TC_HANDSHAKE;
	tls_setup(c); /* the stream reads and shakes hands; a failure is said there */
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	struct km_tls_conn *c = req->data;
	int err;

	if (c->closing) {
		uv_freeaddrinfo(res);
		return;
	}
	if (status < 0) {
		fail(c, "cannot resolve %s: %s", c->cfg.host, uv_strerror(status));
		uv_freeaddrinfo(res);
		return;
	}
	uv_tcp_init(c->loop, &c->tcp);
	c->tcp.data = c;
	c->tcp_inited = 1;
	c->handles++;
	c->state = TC_CONNECTING;
	c->connect.data = c;
	err = uv_tcp_connect(&c->connect, &c->tcp, res->ai_addr, on_connected);
	uv_freeaddrinfo(res);
	if (err)
		fail(c, "connect to %s:%u: %s", c->cfg.host, c->cfg.port, uv_strerror(err));
}

static void on_timeout(uv_timer_t *t)
{
	struct km_tls_conn *c = t->data;

	if (c->state < TC_HANDSHAKE)
		fail(c, "connect to %s:%u timed out", c->cfg.host, c->cfg.port);
}

int km_tls_conn_start(struct km_tls_conn *c, uv_loop_t *loop, const struct km_tls_conn_config *cfg,
		      const struct km_tls_conn_cbs *cbs)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	char port[8];
	void *owner = c->data;

	memset(c, 0, sizeof(*c));
	c->data = owner;
	c->loop = loop;
	c->cfg = *cfg;
	c->cbs = *cbs;
	c->state = TC_RESOLVING;
	uv_timer_init(loop, &c->timer);
	c->timer.data = c;
	c->handles = 1;
	uv_timer_start(&c->timer, on_timeout, cfg->connect_timeout_ms ? cfg->connect_timeout_ms : 5000, 0);
	snprintf(port, sizeof(port), "%u", cfg->port);
	c->resolve.data = c;
	if (uv_getaddrinfo(loop, &c->resolve, on_resolved, cfg->host, port, &hints) != 0) {
		fail(c, "cannot resolve %s", cfg->host);
		return -1;
	}
	return 0;
}

int km_tls_conn_write(struct km_tls_conn *c, const uint8_t *data, size_t len)
{
	if (c->state != TC_READY || c->closing)
		return -1;
	if (c->cfg.insecure)
		return tcp_write(c, data, len);
	return km_tls_stream_write(&c->ts, data, len);
}

/* The timer's data is the conn; the TCP handle's, once TLS started, its stream's. */
static struct km_tls_conn *conn_of(uv_handle_t *h)
{
	if (h->type == UV_TIMER)
		return h->data;
	return (struct km_tls_conn *)((char *)h - offsetof(struct km_tls_conn, tcp));
}

static void handle_closed(uv_handle_t *h)
{
	struct km_tls_conn *c = conn_of(h);

	if (--c->handles > 0)
		return;
	km_tls_stream_free(&c->ts);
	if (c->ssl_ctx)
		wolfSSL_CTX_free(c->ssl_ctx);
	c->ssl = c->ssl_ctx = NULL;
	release_ecc_cache(); /* a failed or cut-short handshake may have filled it too */
	if (c->cbs.on_closed)
		c->cbs.on_closed(c);
}

void km_tls_conn_close(struct km_tls_conn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	if (c->state == TC_RESOLVING)
		uv_cancel((uv_req_t *)&c->resolve);
	uv_close((uv_handle_t *)&c->timer, handle_closed);
	if (c->tcp_inited)
		uv_close((uv_handle_t *)&c->tcp, handle_closed);
}

const char *km_tls_conn_stage(const struct km_tls_conn *c)
{
	switch (c->state) {
	case TC_RESOLVING: return "name resolution";
	case TC_CONNECTING: return "TCP connect";
	case TC_HANDSHAKE: return "TLS handshake";
	default: return NULL;
	}
}

const char *km_tls_conn_describe(const struct km_tls_conn *c, char *buf, size_t len)
{
	if (c->cfg.insecure || !c->ssl)
		snprintf(buf, len, "plaintext h2c");
	else
		snprintf(buf, len, "%s %s, ALPN h2, verified as %s", wolfSSL_get_version(c->ssl),
			 wolfSSL_get_cipher_name(c->ssl), c->cfg.server_name);
	return buf;
}
