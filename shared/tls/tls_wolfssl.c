/* tls_wolfssl.c — the wolfSSL backend of tls_stream.h (tls_backend.h): wolfSSL's I/O callbacks
 * take ciphertext from the stream's input and hand sealed records to the stream's writes. */
#include <stdio.h>
#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/ssl.h>

#include "shared/tls/tls_backend.h"
#include "shared/tls/tls_stream.h"

static int io_recv(WOLFSSL *ssl, char *buf, int sz, void *ctx)
{
	size_t n = km_tls_stream_take_in(ctx, (uint8_t *)buf, (size_t)sz);

	(void)ssl;
	return n ? (int)n : WOLFSSL_CBIO_ERR_WANT_READ;
}

static int io_send(WOLFSSL *ssl, char *buf, int sz, void *ctx)
{
	(void)ssl;
	return km_tls_stream_send(ctx, (const uint8_t *)buf, (size_t)sz) == 0
		       ? sz : WOLFSSL_CBIO_ERR_GENERAL;
}

static int session(struct km_tls_stream *s, void *ctx, int server, const char *server_name,
		   const char *alpn)
{
	WOLFSSL *ssl;

	(void)server;
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
	return 0;
}

static int handshake(struct km_tls_stream *s)
{
	WOLFSSL *ssl = s->ssl;
	int rc = s->server ? wolfSSL_accept(ssl) : wolfSSL_connect(ssl);
	int err;
	char msg[WOLFSSL_MAX_ERROR_SZ];

	if (rc == WOLFSSL_SUCCESS)
		return KM_TLS_DONE;
	err = wolfSSL_get_error(ssl, rc);
	if (err == WOLFSSL_ERROR_WANT_READ || err == WOLFSSL_ERROR_WANT_WRITE)
		return KM_TLS_WANT;
	wolfSSL_ERR_error_string_n((unsigned long)err, msg, sizeof(msg));
	snprintf(s->error, sizeof(s->error), "TLS handshake failed: %s%s", msg,
		 err == DOMAIN_NAME_MISMATCH ? " (certificate is not for this name)" : "");
	return KM_TLS_FAILED;
}

static int read_plain(struct km_tls_stream *s, uint8_t *buf, size_t len)
{
	int n = wolfSSL_read(s->ssl, buf, (int)len);
	int err;

	if (n > 0)
		return n;
	err = wolfSSL_get_error(s->ssl, n);
	if (err == WOLFSSL_ERROR_WANT_READ)
		return KM_TLS_WANT;
	if (err == WOLFSSL_ERROR_ZERO_RETURN)
		return KM_TLS_CLOSED;
	snprintf(s->error, sizeof(s->error), "TLS read error %d", err);
	return KM_TLS_FAILED;
}

static int write_plain(struct km_tls_stream *s, const uint8_t *data, size_t len)
{
	while (len > 0) {
		int n = wolfSSL_write(s->ssl, data, (int)(len > 16384 ? 16384 : len));

		if (n <= 0) {
			snprintf(s->error, sizeof(s->error), "TLS write error %d",
				 wolfSSL_get_error(s->ssl, n));
			return KM_TLS_FAILED;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

static void describe(const struct km_tls_stream *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s %s", wolfSSL_get_version(s->ssl), wolfSSL_get_cipher_name(s->ssl));
}

static void free_session(struct km_tls_stream *s)
{
	wolfSSL_free(s->ssl);
}

const struct km_tls_backend km_tls_wolfssl = {
	.name = "wolfSSL",
	.session = session,
	.handshake = handshake,
	.read = read_plain,
	.write = write_plain,
	.describe = describe,
	.free = free_session,
};
