/* inbound.h — HBONE inbound on each enrolled pod's port 15008: a listener per pod, made inside
 * the pod by the map writer (PodSockets over ipc/peer_link.h, role tunnel; asked again whenever
 * the link comes back for pods still without one), closed when the pod leaves. Each connection:
 * TLS 1.3 with the certificate of the pod's identity (server_tls.h; no certificate yet: closed),
 * the client checked (ALPN h2, one SPIFFE id of our trust domain), then HTTP/2 CONNECT
 * (hbone_server.h), each stream authorized by the xDS agent with the client's principal
 * (Authorize, role tunnel on its admin socket; the agent away: 401, never let through) and
 * reaching the application through a socket the map writer made inside the pod (from a small
 * pool made ahead); each stream
 * relayed is reported to the agent for the metrics and access log (stream_reports.h). Bounded: at most KM_INBOUND_MAX_CONNS connections at once (more are closed at
 * accept), a handshake must finish within handshake_ms (default KM_INBOUND_HANDSHAKE_MS). */
#ifndef KM_TUNNEL_INBOUND_H
#define KM_TUNNEL_INBOUND_H

#include <stdint.h>
#include <uv.h>

#include "ipc/peer_link.h"
#include "services/tunnel/authz_cache.h"
#include "services/tunnel/hbone_server.h"
#include "services/tunnel/certs.h"
#include "services/tunnel/pods.h"
#include "services/tunnel/stream_reports.h"

#define KM_HBONE_PORT 15008
#define KM_INBOUND_MAX_CONNS 16384
#define KM_INBOUND_HANDSHAKE_MS 10000
#define KM_INBOUND_PING_MS 10000
#define KM_INBOUND_REPORT_MS 5000 /* as the map writer's --conn-report-interval */ /* ztunnel's: a PING after 10 s of silence, dropped at 20 more */
/* Sockets to reach a pod's applications, made inside it ahead of the streams that need them: up
 * to KM_SOCKET_POOL per pod and family once a stream has reached it, asked again (one request)
 * when KM_SOCKET_POOL_LOW or fewer are left; a stream finding none asks for its own. */
#define KM_SOCKET_POOL 16
#define KM_SOCKET_POOL_LOW 4
/* Open streams asked again at once after a policy change (the agent link queues 4096). */
#define KM_INBOUND_RECHECK_INFLIGHT 1024
#define KM_INBOUND_ASKS_INFLIGHT 64   /* streams' sockets asked of the map writer at once */
#define KM_INBOUND_ASK_AGAIN_MS 5     /* a socket the map writer could not send now: asked again */
#define KM_INBOUND_ASK_AGAIN_TRIES 200 /* ... this many times at most (a second), then 503 */
struct ib_ask;

struct ib_pod;
struct ib_conn;

struct km_inbound_stats {
	uint64_t accepted, refused_full, no_certificate, handshake_failed, handshake_timeouts,
		 client_refused, streams, refused_400, refused_401, refused_503, sockets_asked,
		 sockets_failed, sockets_pooled, sockets_asked_again, ping_timeouts;
	uint64_t app_sources[2]; /* connections to applications: from the caller's address, not */
	uint64_t streams_rechecked, streams_policy_closed; /* asked again after a policy change */
	uint64_t decisions_asked; /* streams the agent was asked for (the others: authz_cache) */
};

struct km_inbound {
	uv_loop_t *loop;
	struct km_certs *certs;
	const char *trust_domain;
	struct km_peer_link mw, xds;
	int mw_on, xds_on;
	struct km_stream_reports reports; /* to the xDS agent, over xds */
	int reports_on;
	struct ib_pod *pods;
	struct ib_conn *conns;
	unsigned n_conns, listeners;
	uv_timer_t sweep;
	/* streams' socket asks: KM_INBOUND_ASKS_INFLIGHT at most at the map writer, the others
	 * queued in order (and those it could not send at once, again after ask_again) */
	uv_timer_t ask_again;
	struct ib_ask *again_head, *again_tail;
	unsigned asks_inflight;
	struct km_turn_queue turns; /* the connections' writes, once per loop turn */
	unsigned handshake_ms;
	unsigned ping_ms;
	unsigned report_ms;        /* open streams' bytes reported this often (0: at their end) */
	int app_from_caller;       /* applications see the HBONE caller's address (else the pod's) */
	uint64_t policy_gen;       /* the xDS agent's policy generation, last told or polled */
	int gen_asking;
	int notified;              /* the agent tells its changes (then decisions are cached) */
	struct km_authz_cache authz_cache;
	unsigned recheck_inflight; /* streams being asked again */
	uint64_t last_progress_ms;
	struct km_inbound_stats stats;
	int stopping;
};

/* Start; mw_socket NULL or "": no map writer (no listener is ever made); xds_socket NULL or "":
 * streams are not authorized by principal (every one allowed). Returns 0 or -1. */
int km_inbound_start(struct km_inbound *ib, uv_loop_t *loop, struct km_certs *certs,
		     const char *trust_domain, const char *mw_socket, const char *xds_socket);
/* A pod enrolled (its listener asked for) or gone (its listener closed; open connections end
 * on their own). */
void km_inbound_pod(struct km_inbound *ib, const struct km_tunnel_pod *pod, int added);
void km_inbound_stop(struct km_inbound *ib);
/* Add the open connections' stream counts (closed ones are in stats already). */
void km_inbound_open_streams(const struct km_inbound *ib, uint64_t *streams, uint64_t *r400,
			     uint64_t *r401, uint64_t *r503);

#endif
