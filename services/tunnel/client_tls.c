/* client_tls.c — see client_tls.h. OpenSSL, as the server side (tls_openssl.h says why). */
#include "services/tunnel/client_tls.h"

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "services/tunnel/server_tls.h"

void *km_client_tls_ctx(const struct km_workload_cert *w, char *why, size_t whylen)
{
	SSL_CTX *ctx = km_tls_ctx_of(w, 0, why, whylen);

	if (ctx) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL); /* the chain to the mesh root */
		SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
		SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	}
	return ctx;
}

void km_client_tls_ctx_free(void *ctx)
{
	SSL_CTX_free(ctx);
}

void km_client_tls_ctx_hold(void *ctx)
{
	SSL_CTX_up_ref(ctx);
}

int km_client_tls_peer(void *ssl, const char *const *ids, size_t n, char *why, size_t whylen)
{
	X509 *x = SSL_get0_peer_certificate(ssl);
	GENERAL_NAMES *names = NULL;
	const unsigned char *proto = NULL;
	unsigned plen = 0;
	int rc = -1;
	char seen[300] = "";

	SSL_get0_alpn_selected(ssl, &proto, &plen);
	if (plen != 2 || memcmp(proto, "h2", 2) != 0) {
		snprintf(why, whylen, "the server did not agree to ALPN h2");
		return -1;
	}
	if (!x) {
		snprintf(why, whylen, "the server sent no certificate");
		return -1;
	}
	names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	for (int i = 0; rc != 0 && names && i < sk_GENERAL_NAME_num(names); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
		const char *uri;
		int len;

		if (g->type != GEN_URI)
			continue;
		uri = (const char *)ASN1_STRING_get0_data(g->d.uniformResourceIdentifier);
		len = ASN1_STRING_length(g->d.uniformResourceIdentifier);
		if (len <= 0 || memchr(uri, '\0', (size_t)len))
			continue;
		if (!seen[0])
			snprintf(seen, sizeof(seen), "%.*s", len, uri);
		for (size_t k = 0; k < n; k++)
			if (strlen(ids[k]) == (size_t)len && !memcmp(ids[k], uri, (size_t)len))
				rc = 0;
	}
	GENERAL_NAMES_free(names);
	if (rc != 0)
		snprintf(why, whylen, "the server's certificate names %.200s, not %.200s%s",
			 seen[0] ? seen : "no URI", n ? ids[0] : "(no identity known)",
			 n > 1 ? " or the others" : "");
	return rc;
}
