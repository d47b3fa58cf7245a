/* server_tls.c — see server_tls.h. */
#include "services/tunnel/server_tls.h"

#include <stdio.h>
#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/ssl.h>

/* The last PEM certificate of a chain: the root. */
static const char *last_cert(const char *chain, size_t len, size_t *out_len)
{
	static const char begin[] = "-----BEGIN CERTIFICATE-----";
	const char *p = chain, *last = NULL, *end = chain + len;

	while (p < end && (p = memmem(p, (size_t)(end - p), begin, sizeof(begin) - 1))) {
		last = p;
		p += sizeof(begin) - 1;
	}
	if (last)
		*out_len = (size_t)(end - last);
	return last;
}

void *km_server_tls_ctx(const struct km_workload_cert *w, char *why, size_t whylen)
{
	WOLFSSL_CTX *ctx;
	const char *root;
	size_t root_len = 0;

	wolfSSL_Init();
	if (!(ctx = wolfSSL_CTX_new(wolfTLSv1_3_server_method()))) {
		snprintf(why, whylen, "TLS: cannot create a server context");
		return NULL;
	}
	root = last_cert(w->chain, w->chain_len, &root_len);
	if (wolfSSL_CTX_set_cipher_list(ctx, KM_HBONE_CIPHERS) != WOLFSSL_SUCCESS) {
		snprintf(why, whylen, "TLS: cannot set the suites %s", KM_HBONE_CIPHERS);
	} else if (wolfSSL_CTX_use_certificate_chain_buffer_format(
			   ctx, (const unsigned char *)w->chain, (long)w->chain_len,
			   WOLFSSL_FILETYPE_PEM) != WOLFSSL_SUCCESS) {
		snprintf(why, whylen, "TLS: the certificate chain of %s is not usable", w->identity);
	} else if (wolfSSL_CTX_use_PrivateKey_buffer(ctx, w->key.key_der, (long)w->key.key_der_len,
						     WOLFSSL_FILETYPE_ASN1) != WOLFSSL_SUCCESS) {
		snprintf(why, whylen, "TLS: the key of %s is not usable", w->identity);
	} else if (!root || wolfSSL_CTX_load_verify_buffer(ctx, (const unsigned char *)root,
							   (long)root_len, WOLFSSL_FILETYPE_PEM) !=
				    WOLFSSL_SUCCESS) {
		snprintf(why, whylen, "TLS: no mesh root at the end of %s's chain", w->identity);
	} else {
		wolfSSL_CTX_set_verify(ctx, WOLFSSL_VERIFY_PEER | WOLFSSL_VERIFY_FAIL_IF_NO_PEER_CERT,
				       NULL);
		return ctx;
	}
	wolfSSL_CTX_free(ctx);
	return NULL;
}

void km_server_tls_ctx_free(void *ctx)
{
	if (ctx)
		wolfSSL_CTX_free(ctx);
}

int km_server_tls_peer(void *ssl, const char *trust_domain, char *principal, size_t len, char *why,
		       size_t whylen)
{
	WOLFSSL_X509 *x = wolfSSL_get_peer_certificate(ssl);
	char *proto = NULL;
	unsigned short plen = 0;
	const char *name, *id = NULL;
	int uris = 0, rc = -1;
	size_t td = strlen(trust_domain);

	if (wolfSSL_ALPN_GetProtocol(ssl, &proto, &plen) != WOLFSSL_SUCCESS || plen != 2 ||
	    memcmp(proto, "h2", 2) != 0) {
		snprintf(why, whylen, "the client did not ask for ALPN h2");
		goto out;
	}
	if (!x) {
		snprintf(why, whylen, "the client sent no certificate");
		goto out;
	}
	while ((name = wolfSSL_X509_get_next_altname(x)))
		if (!strncmp(name, "spiffe://", 9)) {
			uris++;
			if (uris == 1 && strlen(name) - 9 < len)
				snprintf(principal, len, "%s", name + 9);
			id = name;
		}
	if (uris != 1 || !id) {
		snprintf(why, whylen, "the client's certificate carries %d SPIFFE ids, not one", uris);
		goto out;
	}
	if (strncmp(principal, trust_domain, td) || principal[td] != '/') {
		snprintf(why, whylen, "the client %.200s is not of trust domain %.100s", principal,
			 trust_domain);
		goto out;
	}
	rc = 0;
out:
	wolfSSL_X509_free(x);
	return rc;
}
