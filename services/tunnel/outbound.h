/* outbound.h — HBONE outbound (issue 49): the tunnel's listener on the node's link-local address
 * (KM_TUNNEL_OUTBOUND_PORT), where the kernel sends the enrolled pods' connections that must
 * leave over HBONE (kmesh_maps.h, "HBONE outbound"). For each connection accepted:
 *   - where it was for, from the kernel (getsockopt(SOL_IP, KM_SO_TUNNEL_ORIGIN), answered by the
 *     map writer's program on this process's cgroup): the original destination and the workload
 *     the kernel picked with its target port; none: reset at once;
 *   - who sends it: the pod whose address the connection comes from (the CNI agent's pods,
 *     pods.h), so a pod can only ever speak as itself; none: reset;
 *   - the source identity's certificate (certs.h): none in date yet: reset;
 *   - the destination's identity, asked of the xDS agent (Destination, role tunnel on its admin
 *     socket): the SAN the server must carry; no such workload, or the agent away: reset;
 *   - then a CONNECT to podIP:targetPort on a pooled connection to podIP:15008 (hbone_client.h),
 *     pooled by (source identity, destination identity, destination address) with at most
 *     KM_HBONE_CLIENT_MAX_STREAMS streams each, as ztunnel pools; idle ones close after idle_ms.
 * Each relayed stream is reported to the agent at its 200 and its end (stream_reports.h) for
 * Istio's metrics with reporter "source" and mutual_tls; the kernel reports none of these
 * connections. Any answer but 200, and any failure, resets the application's connection; each is counted by
 * reason (km_outbound_stats). Bounded: at most KM_OUTBOUND_MAX_PENDING connections waiting for
 * the agent's answer, KM_OUTBOUND_MAX_STREAMS relayed (or being opened) at once,
 * KM_OUTBOUND_MAX_CONNS pooled connections. */
#ifndef KM_TUNNEL_OUTBOUND_H
#define KM_TUNNEL_OUTBOUND_H

#include <jansson.h>
#include <stdint.h>
#include <uv.h>

#include "ipc/peer_link.h"
#include "services/tunnel/certs.h"
#include "services/tunnel/pods.h"
#include "services/tunnel/stream_reports.h"
#include "services/tunnel/turn_queue.h"

#define KM_OUTBOUND_MAX_PENDING 4096
#define KM_OUTBOUND_MAX_CONNS 4096
#define KM_OUTBOUND_MAX_STREAMS 16384 /* application connections relayed at once, all pooled
				       * connections together (as inbound's 16,384 connections) */
#define KM_OUTBOUND_CONNECT_MS 10000
#define KM_OUTBOUND_IDLE_MS 60000
#define KM_OUTBOUND_CERT_WAIT_MS 5000 /* a connection whose pod's certificate is still being
				       * fetched waits this long at most (0: not at all) */
#define KM_OUTBOUND_CERT_TICK_MS 20   /* how often the waiting ones look again */
#define KM_OUTBOUND_PING_MS 10000     /* a pooled server silent this long gets a PING (ztunnel) */
#define KM_OUTBOUND_PING_TICK_MS 250  /* how often the pool's keepalive looks */

/* Why a connection was reset instead of relayed (kmesh_tunnel_outbound_refused_total{reason}). */
enum km_outbound_refusal {
	KM_OB_NO_ORIGIN,      /* the kernel had no record of where it was for */
	KM_OB_UNKNOWN_SOURCE, /* it does not come from a pod enrolled here */
	KM_OB_NO_CERTIFICATE, /* the source identity has no certificate in date */
	KM_OB_NO_DESTINATION, /* the agent knows no workload at the address, or is away */
	KM_OB_FULL,           /* too many waiting, or pooled connections */
	KM_OB_CONNECT,        /* the HBONE connection failed (TCP, TLS, the server's identity) */
	KM_OB_STATUS_400,
	KM_OB_STATUS_401,
	KM_OB_STATUS_503,
	KM_OB_STATUS_OTHER,
	KM_OB_RESET,          /* reset by the server, or the connection lost, before an answer */
	KM_OB_REFUSALS
};

struct km_outbound_stats {
	uint64_t accepted, relayed, refused[KM_OB_REFUSALS];
	uint64_t conns_opened, conns_failed;
	uint64_t bytes_out, bytes_in; /* the applications' bytes sent and received, ended streams */
	uint64_t cert_waits;          /* connections that waited for their pod's certificate */
	uint64_t conns_ping;          /* pooled connections closed: a PING unanswered */
};

struct ob_pool;
struct ob_pending;

struct km_outbound {
	uv_loop_t *loop;
	struct km_certs *certs;
	struct km_tunnel_pods *pods;
	uv_tcp_t listener;
	int listening;
	struct km_peer_link xds;
	int xds_on;
	struct km_peer_link mw; /* the map writer: where this process's cgroup is (TunnelCgroup) */
	int mw_on;
	uint64_t cgroup_id;     /* this process's cgroup (0: unknown) */
	struct km_stream_reports reports; /* each relayed stream, to the agent (reporter source) */
	struct km_turn_queue turns;
	struct ob_pool *pool; /* the pooled connections */
	unsigned n_pool;
	unsigned n_pending;
	unsigned n_streams; /* streams open on the pool (km_outbound_streams) */
	/* connections waiting for their pod's certificate (counted in n_pending), oldest first */
	struct ob_pending *cert_head, *cert_tail;
	uv_timer_t cert_timer;
	uv_timer_t ping_timer; /* the pool's keepalive, every KM_OUTBOUND_PING_TICK_MS */
	unsigned connect_ms, idle_ms, cert_wait_ms, ping_ms;
	uint16_t hbone_port; /* the servers' (15008) */
	struct km_outbound_stats stats;
	int stopping;
};

extern const char *const km_outbound_refusal_names[KM_OB_REFUSALS];

/* Listen on address:KM_TUNNEL_OUTBOUND_PORT (an IPv4 address), ask the agent at xds_socket, and
 * tell the map writer at mw_socket (may be NULL) this process's cgroup at each link up.
 * Returns 0, or -1 (logged). */
int km_outbound_start(struct km_outbound *ob, uv_loop_t *loop, struct km_certs *certs,
		      struct km_tunnel_pods *pods, const char *address, const char *xds_socket,
		      const char *mw_socket);
void km_outbound_stop(struct km_outbound *ob);
/* The pool, as kmeshctl dump tunnels shows it: each connection's peer, identities, streams, age
 * and bytes (a new reference). */
json_t *km_outbound_dump(const struct km_outbound *ob);
/* Streams open now (the others are in stats). */
unsigned km_outbound_streams(const struct km_outbound *ob);

#endif
