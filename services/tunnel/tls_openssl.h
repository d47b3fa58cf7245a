/* tls_openssl.h — the OpenSSL backend of shared/tls/tls_stream.h, for the tunnel's HBONE server
 * (server_tls.h makes its contexts): see tls_openssl.c. */
#ifndef KM_TUNNEL_TLS_OPENSSL_H
#define KM_TUNNEL_TLS_OPENSSL_H

#include "shared/tls/tls_backend.h"

extern const struct km_tls_backend km_tls_openssl;

#endif
