/* tls_openssl.c — the OpenSSL backend of tls_stream.h (shared/tls/tls_backend.h), for the
 * tunnel's HBONE server: the session reads ciphertext from a memory BIO fed from the stream's
 * input, and writes its records into another, drained after each call into one libuv write (all
 * the records one call sealed go out together). OpenSSL, not wolfSSL, because every byte of the
 * mesh is decrypted here, ztunnel offers only AES-GCM, and Debian's wolfSSL runs AES-GCM without
 * AES-NI (docs/decisions.md). */
#include "services/tunnel/tls_openssl.h"

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "shared/tls/tls_stream.h"

/* The stream's input into the session's read BIO. */
static void feed(struct km_tls_stream *s)
{
	uint8_t buf[65536];
	size_t n;

	while ((n = km_tls_stream_take_in(s, buf, sizeof(buf))) > 0)
		BIO_write(SSL_get_rbio(s->ssl), buf, (int)n);
}

/* What the session sealed, to the peer in one write. Returns 0, or -1. */
static int flush_out(struct km_tls_stream *s)
{
	BIO *w = SSL_get_wbio(s->ssl);
	char *p;
	long n = BIO_get_mem_data(w, &p);
	int rc = 0;

	if (n > 0) {
		rc = km_tls_stream_send(s, (const uint8_t *)p, (size_t)n);
		(void)BIO_reset(w);
	}
	return rc;
}

static void error_text(struct km_tls_stream *s, const char *what, int err)
{
	unsigned long e = ERR_get_error();
	char msg[200];

	if (e)
		ERR_error_string_n(e, msg, sizeof(msg));
	else
		snprintf(msg, sizeof(msg), "SSL error %d", err);
	ERR_clear_error();
	snprintf(s->error, sizeof(s->error), "%s: %s", what, msg);
}

static int session(struct km_tls_stream *s, void *ctx, int server, const char *server_name,
		   const char *alpn)
{
	SSL *ssl = SSL_new(ctx);
	BIO *r = BIO_new(BIO_s_mem()), *w = BIO_new(BIO_s_mem());

	if (!ssl || !r || !w) {
		SSL_free(ssl);
		BIO_free(r);
		BIO_free(w);
		snprintf(s->error, sizeof(s->error), "TLS: cannot create a session");
		return -1;
	}
	BIO_set_mem_eof_return(r, -1); /* empty: "want more", not an end */
	SSL_set_bio(ssl, r, w);
	s->ssl = ssl;
	if (server) {
		SSL_set_accept_state(ssl); /* ALPN: the context's callback takes h2 alone */
		return 0;
	}
	SSL_set_connect_state(ssl);
	if (server_name && (SSL_set_tlsext_host_name(ssl, server_name) != 1 ||
			    SSL_set1_host(ssl, server_name) != 1)) {
		snprintf(s->error, sizeof(s->error), "TLS: cannot set SNI and the name check");
		return -1;
	}
	if (alpn) {
		unsigned char proto[32];
		size_t n = strlen(alpn);

		if (n >= sizeof(proto) || (proto[0] = (unsigned char)n, memcpy(proto + 1, alpn, n),
					   SSL_set_alpn_protos(ssl, proto, (unsigned)n + 1) != 0)) {
			snprintf(s->error, sizeof(s->error), "TLS: cannot set ALPN %s", alpn);
			return -1;
		}
	}
	return 0;
}

static int handshake(struct km_tls_stream *s)
{
	int rc, err;

	feed(s);
	rc = SSL_do_handshake(s->ssl);
	if (flush_out(s) != 0) {
		snprintf(s->error, sizeof(s->error), "TLS handshake: cannot write");
		return KM_TLS_FAILED;
	}
	if (rc == 1)
		return KM_TLS_DONE;
	err = SSL_get_error(s->ssl, rc);
	if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
		return KM_TLS_WANT;
	error_text(s, "TLS handshake failed", err);
	return KM_TLS_FAILED;
}

static int read_plain(struct km_tls_stream *s, uint8_t *buf, size_t len)
{
	int n, err;

	feed(s);
	n = SSL_read(s->ssl, buf, (int)len);
	if (flush_out(s) != 0) { /* what reading made it send (alerts, key updates) */
		snprintf(s->error, sizeof(s->error), "TLS: cannot write");
		return KM_TLS_FAILED;
	}
	if (n > 0)
		return n;
	err = SSL_get_error(s->ssl, n);
	if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
		return KM_TLS_WANT;
	if (err == SSL_ERROR_ZERO_RETURN)
		return KM_TLS_CLOSED;
	error_text(s, "TLS read error", err);
	return KM_TLS_FAILED;
}

static int push(struct km_tls_stream *s)
{
	if (flush_out(s) != 0) {
		snprintf(s->error, sizeof(s->error), "TLS: cannot write");
		return KM_TLS_FAILED;
	}
	return 0;
}

static int write_plain(struct km_tls_stream *s, const uint8_t *data, size_t len)
{
	while (len > 0) {
		int n = SSL_write(s->ssl, data, (int)(len > (1u << 30) ? (1u << 30) : len));

		if (n <= 0) {
			error_text(s, "TLS write error", SSL_get_error(s->ssl, n));
			return KM_TLS_FAILED;
		}
		data += n;
		len -= (size_t)n;
	}
	return s->corked ? 0 : push(s); /* corked: the records wait in the memory BIO */
}

static void describe(const struct km_tls_stream *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s", SSL_get_version(s->ssl), SSL_get_cipher_name(s->ssl));
}

static void free_session(struct km_tls_stream *s)
{
	SSL_free(s->ssl); /* and its BIOs */
}

const struct km_tls_backend km_tls_openssl = {
	.name = "OpenSSL",
	.session = session,
	.handshake = handshake,
	.read = read_plain,
	.write = write_plain,
	.push = push,
	.describe = describe,
	.free = free_session,
};
