/* client_tls.h — the TLS side of HBONE outbound, as ztunnel's client speaks it
 * (../reference/hbone.md §4): a TLS 1.3 client context (OpenSSL) per source workload certificate,
 * presenting it, verifying the server's chain against the mesh root (the last certificate of
 * istiod's chain), no session resumption, no SNI; and, after a handshake, the checks of the
 * server: ALPN h2, and a URI SAN that is one of the destination's identities. */
#ifndef KM_TUNNEL_CLIENT_TLS_H
#define KM_TUNNEL_CLIENT_TLS_H

#include <stddef.h>

#include "shared/tls/ca_client.h"

/* An OpenSSL SSL_CTX presenting w, or NULL with why. Free with km_client_tls_ctx_free (sessions
 * made from it keep it alive until they are freed). */
void *km_client_tls_ctx(const struct km_workload_cert *w, char *why, size_t whylen);
void km_client_tls_ctx_free(void *ctx);
/* One more reference to ctx (dropped with km_client_tls_ctx_free): a connection being made keeps
 * the context it started with across a renewal. */
void km_client_tls_ctx_hold(void *ctx);
/* After the handshake: 0 when the server agreed to h2 and its certificate carries one of the n
 * SPIFFE ids (URI SANs) in ids; else -1 with why (naming what it carried). */
int km_client_tls_peer(void *ssl, const char *const *ids, size_t n, char *why, size_t whylen);

#endif
