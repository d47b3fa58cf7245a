/* hbone_server.h — one inbound HBONE connection after its TLS handshake: an HTTP/2 server session
 * (nghttp2) whose CONNECT streams are relayed to the pod's applications, as ztunnel's inbound
 * does (../reference/hbone.md §4):
 *   - settings: 200 streams at once, a 4 MiB stream window and 16 MiB for the connection, frames
 *     of up to 1 MiB, header lists of up to 64 KiB;
 *   - a request that is not CONNECT, or whose :authority is not IP:port of the address the
 *     connection came in on: 400; a port of the tunnel's own (15001, 15006, 15008): 503;
 *   - the destination's authorization policies, with the client's principal (ops.authorize):
 *     401 when they deny;
 *   - then a TCP connection from inside the pod to that address (a socket the map writer made
 *     there): 503 when refused, else 200 (with the destination's `baggage`) and the bytes both
 *     ways, reported at open and at close (ops.report); END_STREAM is a half-close
 *     each way, RST_STREAM or a reset connection resets the other side.
 *   - Flow control never buffers without bound: the client's DATA is acknowledged (its window
 *     given back) only once written to the application; at most KM_HBONE_STREAM_BUF bytes of
 *     the application's are held per stream (reading it stops until they are sent), and nothing
 *     more is framed while more than KM_HBONE_CONN_UNSENT bytes wait for the client's TCP.
 *   - A client silent for a while is sent a PING, and dropped when it does not answer
 *     (km_hbone_conn_tick). */
#ifndef KM_TUNNEL_HBONE_SERVER_H
#define KM_TUNNEL_HBONE_SERVER_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "services/tunnel/h2_relay.h"
#include "services/tunnel/turn_queue.h"
#include "shared/tls/tls_stream.h"

#define KM_HBONE_MAX_STREAMS 200
#define KM_HBONE_STREAM_BUF KM_H2_RELAY_BUF
#define KM_HBONE_CONN_UNSENT (1u << 20)
#define KM_HBONE_CORK_MAX (256u << 10) /* sealed bytes gathered for one write to the client */
#define KM_HBONE_BAGGAGE_MAX 1024 /* a longer request `baggage` header is not kept */

struct km_hbone_conn;


/* A socket inside the destination pod, asked for a stream: given later to cb (tcp NULL with why
 * when none can be had); tcp is then the stream's, uv_tcp_init'ed on the loop and heap-allocated
 * (closed with free as its close callback). */
typedef void (*km_hbone_socket_cb)(void *arg, uv_tcp_t *tcp, const char *why);
/* The decision on a stream: allowed 1, or 0 with why; dst_baggage (NULL or "": none) describes
 * the destination for the 200's `baggage` header, as ztunnel's does. */
typedef void (*km_hbone_authz_cb)(void *arg, int allowed, const char *why,
				  const char *dst_baggage);

/* A stream relayed (it got its 200): at open, while open (km_hbone_conn_progress) and at close,
 * with its bytes so far. */
enum km_hbone_report_kind { KM_HBONE_OPENED, KM_HBONE_PROGRESS, KM_HBONE_CLOSED };

struct km_hbone_report {
	enum km_hbone_report_kind kind;
	const struct sockaddr_storage *to; /* the application's address */
	uint64_t cookie;                   /* the socket to the application (SO_COOKIE) */
	uint64_t to_app, from_app;         /* bytes written to it, read from it */
	const char *baggage;               /* the request's `baggage` header, or NULL */
};

struct km_hbone_ops {
	/* May the client (h->principal, from h->peer) reach to? Answered later through cb. */
	int (*authorize)(struct km_hbone_conn *h, const struct sockaddr_storage *to,
			 km_hbone_authz_cb cb, void *arg);
	int (*get_socket)(struct km_hbone_conn *h, int family, km_hbone_socket_cb cb, void *arg);
	void (*on_closed)(struct km_hbone_conn *h); /* every stream and handle closed: free h */
	void (*report)(struct km_hbone_conn *h, const struct km_hbone_report *r); /* may be NULL */
};

struct hb_stream;

struct km_hbone_conn {
	uv_loop_t *loop;
	uv_tcp_t tcp;                 /* the client's connection (the owner accepted it) */
	struct km_tls_stream tls;
	void *session;                /* nghttp2_session */
	struct km_hbone_ops ops;
	struct sockaddr_storage local; /* the address the connection came in on */
	struct sockaddr_storage peer;  /* the client's */
	char principal[300];          /* the client's, from its certificate */
	struct hb_stream *streams;
	unsigned n_streams;
	uint64_t streams_total, refused_400, refused_401, refused_503;
	uint64_t last_recv_ms, ping_sent_ms; /* the client's last bytes; an unanswered PING (0: none) */
	int closing, tcp_closed, flushing;
	/* Set by the owner after init: connect to the application from the client's address (bound
	 * on the transparent socket the map writer made, docs/tunnel.md), else from the pod's side
	 * (127.0.0.6 for IPv4); and where to count which was done ([0] the caller's, [1] not). */
	int app_from_caller;
	uint64_t *app_sources;
	/* Set by the owner after init (may stay NULL: everything written at once): what a loop turn
	 * produced is written at its end, one write to the client and one per stream to the
	 * application (turn_queue.h; flush_turn is this connection's place in it). */
	struct km_turn_queue *turns;
	struct km_turn_item flush_turn;
	void *data; /* owner's */
};

/* Before accepting into h->tcp: zero h and keep ops (data is kept). */
void km_hbone_conn_init(struct km_hbone_conn *h, uv_loop_t *loop, const struct km_hbone_ops *ops);
/* After the TLS handshake (tls ready, principal set): start the HTTP/2 session. Returns 0, or -1
 * (the owner closes). */
int km_hbone_conn_start(struct km_hbone_conn *h);
/* Plaintext from the client (the TLS stream's on_data). */
void km_hbone_conn_data(struct km_hbone_conn *h, const uint8_t *data, size_t len);
/* The TLS stream drained (more may be framed). */
void km_hbone_conn_drained(struct km_hbone_conn *h);
/* Report every relayed stream's bytes so far (ops.report, KM_HBONE_PROGRESS). */
void km_hbone_conn_progress(struct km_hbone_conn *h);
/* Every stream the policies allowed and still open (asking for its socket, connecting or
 * relaying): for asking again when the policies change. */
typedef void (*km_hbone_stream_cb)(void *arg, int32_t id, const struct sockaddr_storage *to);
void km_hbone_conn_each_authorized(struct km_hbone_conn *h, km_hbone_stream_cb cb, void *arg);
/* The policies deny stream id now: reset it (RST_STREAM CONNECT_ERROR) and the application's
 * connection. Returns 1 if it was still open. */
int km_hbone_conn_deny(struct km_hbone_conn *h, int32_t id, const char *why);
/* Keepalive, as ztunnel's: a client silent for ping_ms is sent a PING; one that has not answered
 * it within 2 x ping_ms is dead (a vanished peer's half-open connection): returns 1, the owner
 * closes it. Call it periodically with the loop's time. */
int km_hbone_conn_tick(struct km_hbone_conn *h, uint64_t now_ms, uint64_t ping_ms);
/* Close everything: streams reset, upstreams closed, the client's connection closed; then
 * ops.on_closed. Any time after init (before the handshake too). */
void km_hbone_conn_close(struct km_hbone_conn *h);

#endif
