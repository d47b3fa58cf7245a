/* hbone_client.h — one outbound HBONE connection, as ztunnel's client makes it
 * (../reference/hbone.md §4): TCP to a peer's HBONE port, TLS 1.3 presenting the source
 * workload's certificate (client_tls.h) with ALPN h2, the server's certificate checked against
 * the destination's identities, then HTTP/2 with ztunnel's client settings (stream window 4 MiB,
 * connection window 16 MiB, frames up to 1 MiB, a 16 KiB header list, no push) carrying CONNECT
 * streams. Each stream relays one application connection (h2_relay.h) once the peer answered
 * 200; any other answer, a reset or the connection's failure resets the application's
 * connection. Streams may be opened while the connection is still being made (their requests
 * go out once the server is checked). The owner pools connections (outbound.c): this file knows
 * one. A connection with no stream for idle_ms is closed; a connection or handshake not done
 * within connect_ms fails. */
#ifndef KM_TUNNEL_HBONE_CLIENT_H
#define KM_TUNNEL_HBONE_CLIENT_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "services/tunnel/turn_queue.h"
#include "shared/tls/tls_stream.h"

#define KM_HBONE_CLIENT_MAX_STREAMS 100 /* ztunnel's pool opens another connection past that */
#define KM_HBONE_CLIENT_IDS 4           /* identities a server may carry, at most */
#define KM_HBONE_CLIENT_ID_MAX 600

struct km_hbone_client;
struct hc_stream;

/* A stream's end, for the owner's counts and reports. status: the peer's answer (0: none came:
 * the connection failed or the stream was reset first); why says what went wrong (NULL for a
 * 200 that ended normally). */
struct km_hbone_stream_end {
	int status;
	const char *why;
	uint64_t to_peer, from_peer; /* the application's bytes sent, the peer's received */
	void *arg;                   /* km_hbone_client_open's */
};

struct km_hbone_client_ops {
	/* the server is checked: streams flow (may be NULL) */
	void (*on_ready)(struct km_hbone_client *c);
	/* the connection could not be made or failed; c->error says why (streams end after it) */
	void (*on_failed)(struct km_hbone_client *c);
	/* a stream answered (status) or ended */
	void (*on_answer)(struct km_hbone_client *c, void *arg, int status);
	void (*on_stream_end)(struct km_hbone_client *c, const struct km_hbone_stream_end *e);
	/* every handle and stream closed: the owner frees c */
	void (*on_closed)(struct km_hbone_client *c);
};

/* The request a stream sends, as ztunnel does: :authority (the CONNECT target), and the headers
 * that may be NULL. */
struct km_hbone_request {
	const char *authority;
	const char *baggage;
	const char *forwarded;
	const char *traceparent;
};

struct km_hbone_client {
	uv_loop_t *loop;
	uv_tcp_t tcp;
	uv_connect_t connect_req;
	uv_timer_t timer; /* the connect deadline, then the idle close */
	struct km_tls_stream tls;
	void *ssl_ctx;    /* the caller's SSL_CTX */
	void *session;    /* nghttp2_session */
	struct km_hbone_client_ops ops;
	struct sockaddr_storage peer;
	char ids[KM_HBONE_CLIENT_IDS][KM_HBONE_CLIENT_ID_MAX];
	size_t n_ids;
	unsigned connect_ms, idle_ms;
	struct hc_stream *streams;
	unsigned n_streams;
	uint64_t streams_total;
	uint64_t opened_ms;
	uint64_t last_recv_ms, ping_sent_ms; /* keepalive (km_hbone_client_tick) */
	int ready, failed, closing, tcp_closed, timer_closed, flushing, tls_started;
	struct km_turn_queue *turns; /* may be NULL: written at once */
	struct km_turn_item flush_turn;
	char error[300];
	void *data; /* owner's */
};

/* Connect to peer with the client context ctx (SSL_CTX, kept alive by the caller until
 * on_closed), expecting one of ids in the server's certificate. Returns 0, or -1 (nothing to
 * close: c is not started). */
int km_hbone_client_connect(struct km_hbone_client *c, uv_loop_t *loop, void *ctx,
			    const struct sockaddr_storage *peer, const char *const *ids, size_t n_ids,
			    const struct km_hbone_client_ops *ops, unsigned connect_ms,
			    unsigned idle_ms, struct km_turn_queue *turns);
/* A CONNECT stream relaying app (heap-allocated, uv_tcp_init'ed, connected; the stream's from
 * now on: closed and freed when the stream ends). arg comes back in the callbacks. Returns 0,
 * or -1 (app was reset and freed; no callback follows). */
int km_hbone_client_open(struct km_hbone_client *c, uv_tcp_t *app,
			 const struct km_hbone_request *req, void *arg);
/* The server's plaintext (the TLS stream's on_data; a fuzz target's input). */
void km_hbone_client_data(struct km_hbone_client *c, const uint8_t *data, size_t len);
/* May another stream go on this connection? */
int km_hbone_client_has_room(const struct km_hbone_client *c);
/* Keepalive, as ztunnel keeps its pooled connections: a PING once the server has been silent
 * ping_ms, and the connection closed (its streams reset) when that PING is not answered within
 * twice that. Call it every so often (a fraction of ping_ms). Returns 1 when it closed c. */
int km_hbone_client_tick(struct km_hbone_client *c, uint64_t now_ms, uint64_t ping_ms);
/* Close everything (the streams' applications reset); then on_closed. */
void km_hbone_client_close(struct km_hbone_client *c);

#endif
