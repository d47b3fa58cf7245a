/* tls_conn.h — a client byte stream (the xDS agent's to istiod; the tunnel's to istiod's CA,
 * issue 48): resolves and connects over TCP on the libuv loop and, unless insecure, runs TLS
 * (wolfSSL, tls_stream.h) with the given CA file, SNI and hostname check, offering ALPN "h2"
 * and requiring it; a certificate must name the server in a DNS subjectAltName.
 *
 * Ownership follows libuv: the caller owns the struct until on_closed has run. */
#ifndef KM_SHARED_TLS_TLS_CONN_H
#define KM_SHARED_TLS_TLS_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "shared/tls/tls_stream.h"

/* The cipher suites offered, in order of preference (wolfSSL's names). */
#define KM_TLS_CIPHERS                                                                        \
	"TLS13-CHACHA20-POLY1305-SHA256:TLS13-AES128-GCM-SHA256:TLS13-AES256-GCM-SHA384:"     \
	"ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"                          \
	"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"                          \
	"ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384"

struct km_tls_conn;

struct km_tls_conn_cbs {
	void (*on_ready)(struct km_tls_conn *c);      /* connected (and TLS done): write away */
	void (*on_data)(struct km_tls_conn *c, const uint8_t *data, size_t len); /* plaintext */
	void (*on_error)(struct km_tls_conn *c, const char *what); /* any failure; then close */
	void (*on_closed)(struct km_tls_conn *c);     /* after km_tls_conn_close */
};

struct km_tls_conn_config {
	const char *host; /* DNS name or IP to connect to */
	uint16_t port;
	int insecure;            /* plaintext TCP (h2c) */
	const char *ca_file;     /* PEM trust roots (TLS) */
	const char *server_name; /* SNI and the name the certificate must carry */
	unsigned connect_timeout_ms;
};

struct km_tls_conn {
	uv_loop_t *loop;
	uv_tcp_t tcp;
	uv_getaddrinfo_t resolve;
	uv_connect_t connect;
	uv_timer_t timer;
	struct km_tls_conn_config cfg;
	struct km_tls_conn_cbs cbs;
	void *ssl_ctx; /* WOLFSSL_CTX */
	void *ssl;     /* WOLFSSL: the stream's */
	struct km_tls_stream ts;
	int state;
	int handles; /* open libuv handles */
	int closing;
	int tcp_inited;
	char error[256];
	void *data; /* owner's pointer */
};

int km_tls_conn_start(struct km_tls_conn *c, uv_loop_t *loop, const struct km_tls_conn_config *cfg,
		      const struct km_tls_conn_cbs *cbs);
/* Write plaintext (encrypted if TLS). Returns 0 or -1 (connection failing). */
int km_tls_conn_write(struct km_tls_conn *c, const uint8_t *data, size_t len);
/* Close; on_closed runs once every handle is closed. Idempotent. */
void km_tls_conn_close(struct km_tls_conn *c);
/* What the connection is doing, for a log saying what took too long: "name resolution",
 * "TCP connect", "TLS handshake", or NULL once it is ready (or has failed). */
const char *km_tls_conn_stage(const struct km_tls_conn *c);
/* The negotiated protocol and cipher for logs ("h2c" when insecure). */
const char *km_tls_conn_describe(const struct km_tls_conn *c, char *buf, size_t len);

#endif
