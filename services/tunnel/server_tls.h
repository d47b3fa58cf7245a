/* server_tls.h — the TLS side of HBONE inbound, as ztunnel serves it (../reference/hbone.md §4):
 * a TLS 1.3 server context (OpenSSL) per workload certificate (its chain and in-memory key),
 * no session resumption, requiring the
 * client's certificate chained to the mesh root (the last certificate istiod's chain carries),
 * AES-GCM or ChaCha20-Poly1305; and, after a handshake, the checks of the client: ALPN h2, one
 * SPIFFE id in its certificate, in our trust domain. */
#ifndef KM_TUNNEL_SERVER_TLS_H
#define KM_TUNNEL_SERVER_TLS_H

#include <stddef.h>

#include "shared/tls/ca_client.h"

/* The suites a server takes, TLS 1.3 only, in the order it prefers them: ztunnel offers the
 * AES-GCM ones. */
#define KM_HBONE_CIPHERS "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

/* An SSL_CTX (server or client) with w's chain and key, TLS 1.3 only with KM_HBONE_CIPHERS, the
 * chain's last certificate as the only root peers are verified against; or NULL with why. The
 * server's and the client's (client_tls.c) contexts start from it. */
void *km_tls_ctx_of(const struct km_workload_cert *w, int server, char *why, size_t whylen);

/* An OpenSSL SSL_CTX for w (sessions of it: km_tls_openssl), or NULL with why. Free with km_server_tls_ctx_free (sessions made from it
 * keep it alive until they are freed). */
void *km_server_tls_ctx(const struct km_workload_cert *w, char *why, size_t whylen);
void km_server_tls_ctx_free(void *ctx);
/* After the handshake: the client's principal ("<td>/ns/<ns>/sa/<sa>", its SPIFFE id without the
 * scheme) into principal, or -1 with why: no h2, no or several SPIFFE ids, another trust domain. */
int km_server_tls_peer(void *ssl, const char *trust_domain, char *principal, size_t len, char *why,
		       size_t whylen);

#endif
