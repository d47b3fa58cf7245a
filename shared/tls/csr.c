/* csr.c — a workload's key and its certificate signing request (see csr.h). */
#include "shared/tls/csr.h"

#include <stdio.h>
#include <string.h>

#include <wolfssl/options.h>
#include <wolfssl/wolfcrypt/asn_public.h>
#include <wolfssl/wolfcrypt/ecc.h>
#include <wolfssl/wolfcrypt/random.h>

/* "spiffe://" then a trust domain, "/ns/", a namespace, "/sa/", an account: printable, no
 * spaces, each part non-empty. */
static int spiffe_id_valid(const char *id)
{
	size_t n = strlen(id);
	const char *td = id + 9, *ns, *sa;

	if (n <= 9 || n > KM_CSR_MAX_ID || strncmp(id, "spiffe://", 9))
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)id[i] <= 0x20 || (unsigned char)id[i] >= 0x7f)
			return 0;
	ns = strstr(td, "/ns/");
	sa = ns ? strstr(ns + 4, "/sa/") : NULL;
	return ns && ns > td && sa && sa > ns + 4 && sa[4] && !strchr(sa + 4, '/');
}

/* A DER length at p (at most 3 bytes: values under 65,536). Returns its bytes. */
static size_t der_len(uint8_t *p, size_t v)
{
	if (v < 128) {
		p[0] = (uint8_t)v;
		return 1;
	}
	if (v < 256) {
		p[0] = 0x81;
		p[1] = (uint8_t)v;
		return 2;
	}
	p[0] = 0x82;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
	return 3;
}

/* The subjectAltName's GeneralNames: SEQUENCE { [6] IMPLICIT IA5String uri }. Returns its
 * length, or 0 when out won't hold it. */
static size_t uri_general_names(const char *uri, uint8_t *out, size_t cap)
{
	uint8_t uri_len[3], seq_len[3];
	size_t n = strlen(uri), a = der_len(uri_len, n), inner = 1 + a + n;
	size_t b = der_len(seq_len, inner);

	if (1 + b + inner > cap)
		return 0;
	out[0] = 0x30; /* SEQUENCE */
	memcpy(out + 1, seq_len, b);
	out[1 + b] = 0x86; /* [6] uniformResourceIdentifier */
	memcpy(out + 2 + b, uri_len, a);
	memcpy(out + 2 + b + a, uri, n);
	return 1 + b + inner;
}

int km_csr_make(struct km_csr *c, const char *spiffe_id, char *err, size_t errlen)
{
	uint8_t der[4096];
	WC_RNG rng;
	ecc_key key;
	Cert req;
	int rc, n;

	memset(c, 0, sizeof(*c));
	if (!spiffe_id_valid(spiffe_id)) {
		snprintf(err, errlen, "not a SPIFFE id of a service account (spiffe://TD/ns/NS/sa/SA, "
				      "at most %d bytes)", KM_CSR_MAX_ID);
		return -1;
	}
	if (wc_InitRng(&rng) != 0) {
		snprintf(err, errlen, "no random numbers (wolfSSL's RNG)");
		return -1;
	}
	if ((rc = wc_ecc_init(&key)) != 0) {
		wc_FreeRng(&rng);
		snprintf(err, errlen, "ECC key init: wolfSSL error %d", rc);
		return -1;
	}
	if ((rc = wc_ecc_make_key_ex(&rng, 32, &key, ECC_SECP256R1)) != 0 ||
	    (rc = wc_InitCert(&req)) != 0) {
		snprintf(err, errlen, "making a P-256 key: wolfSSL error %d", rc);
		goto fail;
	}
	req.version = 0; /* PKCS#10 v1 */
	req.sigType = CTC_SHA256wECDSA;
	req.altNamesSz = (int)uri_general_names(spiffe_id, req.altNames, sizeof(req.altNames));
	if (req.altNamesSz == 0) {
		snprintf(err, errlen, "the SPIFFE id does not fit a subjectAltName");
		goto fail;
	}
	if ((n = wc_MakeCertReq_ex(&req, der, sizeof(der), ECC_TYPE, &key)) < 0 ||
	    (n = wc_SignCert_ex(req.bodySz, req.sigType, der, sizeof(der), ECC_TYPE, &key, &rng)) < 0) {
		snprintf(err, errlen, "making the request: wolfSSL error %d", n);
		goto fail;
	}
	rc = wc_DerToPem(der, (word32)n, (byte *)c->pem, sizeof(c->pem) - 1, CERTREQ_TYPE);
	if (rc <= 0) {
		snprintf(err, errlen, "the request as PEM: wolfSSL error %d", rc);
		goto fail;
	}
	c->pem_len = (size_t)rc;
	c->pem[c->pem_len] = '\0';
	rc = wc_EccPrivateKeyToDer(&key, c->key_der, sizeof(c->key_der));
	if (rc <= 0) {
		snprintf(err, errlen, "the key as DER: wolfSSL error %d", rc);
		goto fail;
	}
	c->key_der_len = (size_t)rc;
	rc = wc_EccPublicKeyToDer(&key, c->spki, sizeof(c->spki), 1);
	if (rc <= 0) {
		snprintf(err, errlen, "the public key as DER: wolfSSL error %d", rc);
		goto fail;
	}
	c->spki_len = (size_t)rc;
	wc_ecc_free(&key);
	wc_FreeRng(&rng);
	return 0;
fail:
	wc_ecc_free(&key);
	wc_FreeRng(&rng);
	km_csr_free(c);
	return -1;
}

void km_csr_free(struct km_csr *c)
{
	explicit_bzero(c, sizeof(*c)); /* the key: not left behind in memory */
}
