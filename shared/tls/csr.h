/* csr.h — a workload's key and its certificate signing request, as istiod's CA takes them
 * (IstioCertificateService/CreateCertificate; ../reference/hbone.md §3, as ztunnel makes them):
 * an ECDSA P-256 key made in memory, and a PKCS#10 request signed with it (SHA-256) whose only
 * name is one URI subjectAltName, the SPIFFE id, with no subject at all. istiod uses the
 * request's public key and writes the identity itself; the SAN says which identity is asked for.
 *
 * The private key stays in this struct's memory (never a file, never a log line): it is handed to
 * TLS as DER (key_der) and wiped by km_csr_free. wolfSSL does the cryptography. */
#ifndef KM_SHARED_TLS_CSR_H
#define KM_SHARED_TLS_CSR_H

#include <stddef.h>
#include <stdint.h>

#define KM_CSR_MAX_ID 1024 /* a SPIFFE id's length, at most (trust domain, namespace, account) */
#define KM_CSR_KEY_DER_MAX 256
#define KM_CSR_PEM_MAX 4096
#define KM_CSR_SPKI_MAX 128

struct km_csr {
	uint8_t key_der[KM_CSR_KEY_DER_MAX]; /* the private key, SEC 1 DER (ECPrivateKey) */
	size_t key_der_len;
	uint8_t spki[KM_CSR_SPKI_MAX]; /* its public key, SubjectPublicKeyInfo DER (what a
					* certificate for it carries) */
	size_t spki_len;
	char pem[KM_CSR_PEM_MAX]; /* the request, PEM ("-----BEGIN CERTIFICATE REQUEST-----") */
	size_t pem_len;
};

/* Make a key and a request for spiffe_id ("spiffe://<trust domain>/ns/<ns>/sa/<account>":
 * checked to be one, printable, at most KM_CSR_MAX_ID bytes). Returns 0, or -1 with err set
 * (c then holds no key). */
int km_csr_make(struct km_csr *c, const char *spiffe_id, char *err, size_t errlen);
/* Wipe the key and the request. */
void km_csr_free(struct km_csr *c);

#endif
