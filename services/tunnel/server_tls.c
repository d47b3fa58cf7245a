/* server_tls.c — see server_tls.h. OpenSSL (tls_openssl.h says why). */
#include "services/tunnel/server_tls.h"

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/* ALPN: h2 alone; a client that offers only others is refused in the handshake. */
static int select_h2(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		     const unsigned char *in, unsigned int inlen, void *arg)
{
	(void)ssl;
	(void)arg;
	for (unsigned i = 0; i + 1 <= inlen && i + 1 + in[i] <= inlen; i += 1u + in[i])
		if (in[i] == 2 && !memcmp(in + i + 1, "h2", 2)) {
			*out = in + i + 1;
			*outlen = 2;
			return SSL_TLSEXT_ERR_OK;
		}
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/* The chain (PEM: leaf first, the mesh root last) into ctx: the leaf and the rest as its chain,
 * the last one also as the only root peers are verified against. Returns 0, or -1. */
static int use_chain(SSL_CTX *ctx, const char *chain, size_t len)
{
	BIO *b = BIO_new_mem_buf(chain, (int)len);
	X509 *x, *last = NULL;
	int n = 0, rc = -1;

	if (!b)
		return -1;
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
		if (n++ == 0) {
			if (SSL_CTX_use_certificate(ctx, x) != 1) {
				X509_free(x);
				goto out;
			}
			X509_free(x);
			continue;
		}
		if (SSL_CTX_add1_chain_cert(ctx, x) != 1) {
			X509_free(x);
			goto out;
		}
		X509_free(last);
		last = x;
	}
	ERR_clear_error(); /* the end of the PEM */
	if (last && X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), last) == 1)
		rc = 0;
out:
	X509_free(last);
	BIO_free(b);
	return rc;
}

void *km_tls_ctx_of(const struct km_workload_cert *w, int server, char *why, size_t whylen)
{
	SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	const unsigned char *p = w->key.key_der;
	EVP_PKEY *key = NULL;

	if (!ctx) {
		snprintf(why, whylen, "TLS: cannot create a context");
		return NULL;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
	    SSL_CTX_set_ciphersuites(ctx, KM_HBONE_CIPHERS) != 1) {
		snprintf(why, whylen, "TLS: cannot set TLS 1.3 and the suites %s", KM_HBONE_CIPHERS);
	} else if (use_chain(ctx, w->chain, w->chain_len) != 0) {
		snprintf(why, whylen, "TLS: the certificate chain of %s is not usable (a leaf, and "
			 "the mesh root last)", w->identity);
	} else if (!(key = d2i_PrivateKey(EVP_PKEY_EC, NULL, &p, (long)w->key.key_der_len)) ||
		   SSL_CTX_use_PrivateKey(ctx, key) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
		snprintf(why, whylen, "TLS: the key of %s is not usable", w->identity);
	} else {
		EVP_PKEY_free(key);
		return ctx;
	}
	EVP_PKEY_free(key);
	ERR_clear_error();
	SSL_CTX_free(ctx);
	return NULL;
}

void *km_server_tls_ctx(const struct km_workload_cert *w, char *why, size_t whylen)
{
	SSL_CTX *ctx = km_tls_ctx_of(w, 1, why, whylen);

	if (ctx) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
		SSL_CTX_set_alpn_select_cb(ctx, select_h2, NULL);
		/* as ztunnel: no resumption. Our order of the suites, not the client's: a ztunnel
		 * (rustls) and OpenSSL clients list AES-256 first; AES-128-GCM costs both ends less
		 * per byte for a security margin nobody lacks (nghttpx does the same). */
		SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_CIPHER_SERVER_PREFERENCE);
		SSL_CTX_set_num_tickets(ctx, 0);
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
		/* an idle connection gives its read and write buffers back (~34 KB each) */
		SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	}
	return ctx;
}

void km_server_tls_ctx_free(void *ctx)
{
	SSL_CTX_free(ctx);
}

int km_server_tls_peer(void *ssl, const char *trust_domain, char *principal, size_t len, char *why,
		       size_t whylen)
{
	X509 *x = SSL_get0_peer_certificate(ssl);
	GENERAL_NAMES *names = NULL;
	const unsigned char *proto = NULL;
	unsigned plen = 0;
	int uris = 0, rc = -1;
	size_t td = strlen(trust_domain);

	SSL_get0_alpn_selected(ssl, &proto, &plen);
	if (plen != 2 || memcmp(proto, "h2", 2) != 0) {
		snprintf(why, whylen, "the client did not ask for ALPN h2");
		goto out;
	}
	if (!x) {
		snprintf(why, whylen, "the client sent no certificate");
		goto out;
	}
	names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	for (int i = 0; names && i < sk_GENERAL_NAME_num(names); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
		const char *uri;
		int n;

		if (g->type != GEN_URI)
			continue;
		uri = (const char *)ASN1_STRING_get0_data(g->d.uniformResourceIdentifier);
		n = ASN1_STRING_length(g->d.uniformResourceIdentifier);
		if (n < 9 || strncmp(uri, "spiffe://", 9) || memchr(uri, '\0', (size_t)n))
			continue;
		if (++uris == 1 && (size_t)(n - 9) < len)
			snprintf(principal, len, "%.*s", n - 9, uri + 9);
	}
	if (uris != 1) {
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
	GENERAL_NAMES_free(names);
	return rc;
}
