/* dns_server.h — the node's DNS proxy, on the xDS agent's loop: UDP and TCP on one address
 * (--dns-address; the map writer's redirect sends enrolled pods' port-53 traffic there with
 * --dns-resolver and --dns-port, so the agent needs no capability: a port above 1024 on the
 * node's address). Each query is answered from the mesh's names (dns_answer.h) or forwarded to
 * the upstream resolver (--dns-upstream, else the first nameserver of /etc/resolv.conf): over
 * UDP as it came (a truncated upstream answer goes back truncated, and the client asks again
 * over TCP), over TCP on a connection of its own per query. Bounds: KM_DNS_PENDING_MAX UDP
 * queries waiting for upstream (the rest dropped and counted), each at most
 * KM_DNS_UPSTREAM_TIMEOUT_MS; KM_DNS_TCP_MAX client connections, each closed after
 * KM_DNS_TCP_IDLE_MS without a query, a message at most 65535 bytes (DNS's own bound), its
 * unread answers at most KM_DNS_TCP_UNSENT_MAX (a client that asks and never reads is closed).
 * On demand (km_dns_server_wait_for_demand): an upstream UDP answer that made the agent demand a
 * service waits until the service's rows are written, at most wait_ms and KM_DNS_WAITING_MAX
 * answers at a time (past it, sent at once), so the pod's first connection is balanced. */
#ifndef KM_XDS_DNS_SERVER_H
#define KM_XDS_DNS_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <uv.h>

#include "services/xds-agent/dns/dns_answer.h"

#define KM_DNS_PENDING_MAX 4096
#define KM_DNS_UPSTREAM_TIMEOUT_MS 5000
#define KM_DNS_TCP_MAX 256
#define KM_DNS_TCP_IDLE_MS 10000
#define KM_DNS_UDP_MAX 4096 /* the largest UDP answer this proxy sends */
#define KM_DNS_TCP_UNSENT_MAX (256u << 10) /* answers a TCP client leaves unread: past it, closed */
#define KM_DNS_WAITING_MAX 256 /* answers waiting for a demanded service's rows */
#define KM_DNS_WAIT_TICK_MS 2  /* how often they look */

struct dns_pending;
struct dns_tcp_client;
struct dns_waiting;

struct km_dns_server {
	uv_loop_t *loop;
	struct km_dns_resolver *resolver;
	uv_udp_t udp;          /* clients */
	uv_udp_t up_udp;       /* to the upstream */
	uv_tcp_t tcp;          /* clients */
	uv_timer_t sweep;      /* expires pending upstream queries */
	struct sockaddr_storage upstream;
	struct dns_pending *pending; /* by the id sent upstream */
	size_t n_pending;
	size_t n_tcp;
	int started;
	/* answers waiting for a demanded service (on demand; wait_ms 0: none wait) */
	struct dns_waiting *waiting;
	size_t n_waiting;
	uv_timer_t wait_tick;
	uint32_t wait_ms;
	int (*rows_written)(void *arg); /* every row the agent made so far is in the tables */
	void *rows_arg;
	/* counts, for metrics */
	uint64_t udp_queries, tcp_queries, upstream_timeouts, pending_full, tcp_refused,
		upstream_errors, tcp_slow_closed;
	uint64_t waited, wait_expired, wait_full;
	char listen_text[64];
};

/* Listen on address "ADDR:PORT" ("[v6]:PORT") and forward to upstream "ADDR[:PORT]" (NULL: the
 * first nameserver in /etc/resolv.conf). Returns 0, or -1 with err filled. */
int km_dns_server_start(struct km_dns_server *s, uv_loop_t *loop, struct km_dns_resolver *r,
			const char *address, const char *upstream, char *err, size_t errlen);
void km_dns_server_stop(struct km_dns_server *s);
/* On demand: an answer that made the agent demand a service waits until the model holds the
 * service and rows_written(arg) says its rows are in the tables, at most wait_ms (0: none waits).
 * TCP answers never wait. */
void km_dns_server_wait_for_demand(struct km_dns_server *s, uint32_t wait_ms,
				   int (*rows_written)(void *arg), void *arg);

/* "ADDR:PORT", "[ADDR]:PORT" or (default_port) "ADDR" into sa. Returns 0, or -1. */
int km_dns_parse_endpoint(const char *text, uint16_t default_port, struct sockaddr_storage *sa);

#endif
