/* ca_client.h — one workload certificate from istiod's CA: the unary gRPC call
 * /istio.v1.auth.IstioCertificateService/CreateCertificate on grpc_stream (TLS to istiod's 15012
 * with the mesh root, `authorization: Bearer` with a token of audience istio-ca, `clusterid`),
 * as ztunnel makes it (../reference/hbone.md §3): a fresh key and CSR (csr.h), the TTL asked,
 * and for another identity than the caller's own `ImpersonatedIdentity` in the metadata. The
 * answer is checked before it is taken: a chain of PEM certificates whose leaf carries exactly the
 * identity asked for as its URI SAN (istiod writes the identity itself; a leaf naming another is
 * refused) and whose public key is the request's.
 *
 * Ownership follows libuv: the caller owns the struct until `done` has run (once, after every
 * handle is closed); then it may take the certificate (km_ca_call_take) and free the call. */
#ifndef KM_SHARED_TLS_CA_CLIENT_H
#define KM_SHARED_TLS_CA_CLIENT_H

#include <stdint.h>
#include <uv.h>

#include "shared/tls/csr.h"
#include "shared/tls/grpc_stream.h"

#define KM_CA_PATH "/istio.v1.auth.IstioCertificateService/CreateCertificate"
#define KM_CA_MAX_CHAIN (64u << 10) /* the PEM chain istiod returns, at most */

/* A workload's certificate: its key (in memory only), the chain as istiod sent it, and what
 * kmeshctl shows of it. */
struct km_workload_cert {
	struct km_csr key;                /* key.key_der: the private key */
	char *chain;                      /* PEM, leaf first, root last (malloc) */
	size_t chain_len;
	char identity[KM_CSR_MAX_ID + 1]; /* the leaf's URI SAN */
	char serial[80];                  /* hex */
	int64_t not_before, not_after;    /* Unix seconds */
};

struct km_ca_call_config {
	struct km_grpc_stream_config grpc; /* path, user agent and windows set by the call */
	const char *identity;              /* spiffe://TD/ns/NS/sa/SA */
	int impersonate;                   /* ask for identity as a node proxy does */
	int64_t ttl_seconds;               /* 0: istiod's default */
	unsigned timeout_ms;               /* the whole call, at most (0: 30 s) */
};

struct km_ca_call;
/* The call is over: ok 1 (the certificate is in c->cert), or 0 with why (gRPC status and
 * message, a transport error, or what was wrong with the answer). */
typedef void (*km_ca_done_cb)(struct km_ca_call *c, int ok, const char *why);

struct km_ca_call {
	struct km_grpc_stream g;
	uv_timer_t timer;
	int handles;
	char identity[KM_CSR_MAX_ID + 1];
	int impersonate;
	int64_t ttl_seconds;
	struct km_workload_cert cert;
	int ok;
	char why[512];
	km_ca_done_cb done;
	void *data; /* owner's pointer */
};

/* Returns 0, or -1 with why set and nothing started (done is not called). */
int km_ca_call_start(struct km_ca_call *c, uv_loop_t *loop, const struct km_ca_call_config *cfg,
		     km_ca_done_cb done);
/* Give up (done follows with ok 0 unless it already ran). */
void km_ca_call_cancel(struct km_ca_call *c);
/* Move the certificate out of a finished call into out. */
void km_ca_call_take(struct km_ca_call *c, struct km_workload_cert *out);
/* Wipe the key, free the chain. */
void km_workload_cert_free(struct km_workload_cert *w);

/* Check a chain (PEM, leaf first) for identity and key: the leaf's only URI SAN is identity, its
 * public key is key's. Fills w's identity, serial and validity. Returns 0, or -1 with why. */
int km_workload_cert_check(struct km_workload_cert *w, const char *chain, size_t len,
			   const char *identity, char *why, size_t whylen);

#endif
