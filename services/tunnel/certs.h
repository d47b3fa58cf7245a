/* certs.h — the tunnel's workload certificates: one per identity with an enrolled pod on this node
 * (pods.h), asked of istiod's CA for that identity by impersonation, as ztunnel in node mode asks
 * (ca_client.h; ../reference/hbone.md §3).
 *   - Fetched as soon as the identity's first pod is enrolled (km_certs_want), before the pod
 *     runs, so its first inbound connection finds it.
 *   - Renewed at half of the life it has left when it arrives (its lifetime, unless the CA
 *     back-dated it) less a random part of a tenth of that (renewals of many identities spread
 *     out, and none comes later than the half); the certificate in hand is
 *     served until the new one is taken. A failed call is tried again after a backoff (1 s
 *     doubling to 60 s, jittered), never later than the certificate's expiry.
 *   - Dropped, its key wiped, when the identity's last pod leaves (km_certs_drop); a call in
 *     flight is cancelled.
 *   - At most max_inflight calls at once (others wait their turn, in order): a node starting
 *     with a hundred identities does not open a hundred connections to istiod together.
 * Keys live in memory only: never logged, never in a dump. */
#ifndef KM_TUNNEL_CERTS_H
#define KM_TUNNEL_CERTS_H

#include <jansson.h>
#include <stdint.h>
#include <uv.h>

#include "shared/tls/ca_client.h"

#define KM_CERTS_RETRY_MIN_MS 1000u
#define KM_CERTS_RETRY_MAX_MS 60000u

struct km_certs_config {
	struct km_grpc_stream_config grpc; /* istiod's CA: address, root, token, cluster id */
	int64_t ttl_seconds;               /* asked of the CA (0: its default) */
	unsigned timeout_ms;               /* one call, at most */
	unsigned max_inflight;             /* calls at once (0: 8) */
	int impersonate;                   /* ask as a node proxy (1), or as the identity itself */
};

enum km_cert_state {
	KM_CERT_PENDING,  /* none yet: a call is in flight or waits its turn */
	KM_CERT_FAILED,   /* none yet: the last call failed; tried again after a backoff */
	KM_CERT_VALID,    /* held and in date */
	KM_CERT_RENEWING, /* held, and a new one is being asked for */
	KM_CERT_EXPIRED,  /* held but past its not_after: every renewal so far failed */
};

struct km_cert {
	char identity[KM_CSR_MAX_ID + 1];
	struct km_workload_cert cert; /* has_cert: the one served */
	int has_cert;
	struct km_ca_call *call;      /* in flight (owned; freed in its done) */
	int queued;                   /* waiting for a call slot */
	struct km_cert *qnext;
	uv_timer_t timer;             /* the next renewal or retry */
	int64_t next_at;              /* Unix seconds of that (0: none planned) */
	uint64_t backoff_ms;
	uint64_t fetches, failures;   /* calls that brought a certificate, and that did not */
	char last_error[256];
	void *server_ctx;             /* SSL_CTX serving HBONE with cert (km_certs_server_ctx) */
	void *client_ctx;             /* SSL_CTX presenting it to HBONE servers (outbound) */
	int dropped;                  /* the last pod left: closing */
	int handles;                  /* open: the timer, and the call while in flight */
	struct km_certs *owner;
};

struct km_certs_stats {
	uint64_t fetched, renewed, failed, dropped;
};

struct km_certs {
	uv_loop_t *loop;
	struct km_certs_config cfg;
	struct km_cert **by_id; /* sorted by identity */
	size_t n, cap;
	struct km_cert *qhead, *qtail; /* waiting for a call slot */
	unsigned inflight;
	struct km_certs_stats stats;
	int stopping;
	void (*on_stopped)(struct km_certs *c); /* km_certs_stop: everything closed */
};

void km_certs_init(struct km_certs *c, uv_loop_t *loop, const struct km_certs_config *cfg);
/* The identity's first pod came: fetch its certificate (nothing if it is held already). Returns
 * 0, or -1 out of memory (logged). */
int km_certs_want(struct km_certs *c, const char *identity);
/* Its last pod left: cancel, wipe, forget. */
void km_certs_drop(struct km_certs *c, const char *identity);
/* A TLS 1.3 server context with the identity's certificate and key, requiring a client
 * certificate chained to the mesh root (the chain's last certificate), made once per
 * certificate (a renewal makes a new one; sessions keep the one they began with). NULL when no
 * certificate in date is held. The context is the entry's: a session takes its own reference. */
void *km_certs_server_ctx(struct km_certs *c, const char *identity, char *why, size_t whylen);
/* The same for HBONE outbound: a TLS 1.3 client context presenting the identity's certificate,
 * verifying servers against the mesh root (client_tls.h). */
void *km_certs_client_ctx(struct km_certs *c, const char *identity, char *why, size_t whylen);
/* The identity's certificate if one is held and in date, else NULL. */
const struct km_workload_cert *km_certs_get(const struct km_certs *c, const char *identity);
enum km_cert_state km_cert_state(const struct km_cert *e, int64_t now);
const char *km_cert_state_name(enum km_cert_state s);
/* Every certificate as kmeshctl shows it: identity, state, serial, validity, next renewal,
 * calls and the last error; never the key. A new reference. */
json_t *km_certs_dump(const struct km_certs *c);
/* Drop everything; on_stopped runs once every handle is closed. */
void km_certs_stop(struct km_certs *c, void (*on_stopped)(struct km_certs *c));

/* When to renew a certificate received at `received` and valid until not_after (Unix seconds):
 * at half the time between less rnd's share of a tenth of it; at least a second later. */
int64_t km_certs_renew_at(int64_t received, int64_t not_after, uint32_t rnd);

#endif
