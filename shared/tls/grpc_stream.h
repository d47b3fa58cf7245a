/* grpc_stream.h — one gRPC call over HTTP/2 (nghttp2) on a tls_conn, long-lived and bidirectional
 * (the xDS agent's ADS) or unary (km_grpc_stream_finish after its request: the tunnel's CA calls):
 * request headers (with `authorization: Bearer` read from a token file at every call, and
 * `clusterid`), 5-byte length-prefixed messages both ways reassembled across DATA frames, large
 * flow-control windows for multi-megabyte pushes, client keepalive pings within istiod's policy,
 * a bound on the whole setup (TCP, TLS, until the server's HTTP/2 SETTINGS), and the call's end
 * reported once with its grpc-status (from trailers, RST_STREAM, GOAWAY or the
 * connection failing). */
#ifndef KM_SHARED_TLS_GRPC_STREAM_H
#define KM_SHARED_TLS_GRPC_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "shared/tls/tls_conn.h"

/* gRPC status codes used here */
#define KM_GRPC_OK 0
#define KM_GRPC_CANCELLED 1
#define KM_GRPC_UNKNOWN 2
#define KM_GRPC_PERMISSION_DENIED 7
#define KM_GRPC_RESOURCE_EXHAUSTED 8
#define KM_GRPC_INTERNAL 13
#define KM_GRPC_UNAVAILABLE 14
#define KM_GRPC_UNAUTHENTICATED 16

struct km_grpc_stream;

struct km_grpc_stream_cbs {
	void (*on_open)(struct km_grpc_stream *g);  /* the call is open: send the first messages */
	/* One whole message; msg is the callee's to release with km_msgbuf_free(msg, len)
	 * (shared/msgbuf.h; it may outlive this call). */
	void (*on_message)(struct km_grpc_stream *g, uint8_t *msg, size_t len);
	/* The call ended (once). goaway: the server is rotating the connection (reconnect at once). */
	void (*on_end)(struct km_grpc_stream *g, int status, const char *message, int goaway);
	void (*on_closed)(struct km_grpc_stream *g); /* every resource released */
	/* Optional: part of a message has arrived (have of its len bytes, have < len); on_message
	 * follows with the same msg once it is whole. msg is the stream's until then: the callee
	 * may read [0, have) and give pages of it back (km_msgbuf_release) but not keep it past
	 * on_end. */
	void (*on_message_part)(struct km_grpc_stream *g, const uint8_t *msg, size_t have,
				size_t len);
};

struct km_grpc_stream_config {
	struct km_tls_conn_config conn;
	const char *authority;  /* :authority, e.g. istiod.istio-system.svc:15012 */
	const char *path;       /* the method path */
	const char *token_file; /* NULL: no authorization header */
	const char *cluster_id; /* NULL: no clusterid header */
	size_t max_message;     /* largest message accepted */
	uint32_t window;        /* stream and connection receive window */
	unsigned ping_interval_ms, ping_timeout_ms;
	/* from the start until the server's SETTINGS arrive (0: no bound): a server that accepts
	 * TCP and never answers ends the call rather than holding it forever */
	unsigned setup_timeout_ms;
	const char *user_agent; /* NULL: kmesh-xds-agent */
};

struct km_grpc_stream {
	struct km_tls_conn conn;
	struct km_grpc_stream_config cfg;
	struct km_grpc_stream_cbs cbs;
	void *session; /* nghttp2_session */
	int32_t stream_id;
	uv_timer_t ping_timer;
	int ping_outstanding;
	uv_timer_t setup_timer;
	int setup_done; /* the server's SETTINGS came */
	/* outgoing gRPC bytes not yet taken by nghttp2 */
	uint8_t *out;
	size_t out_len, out_off, out_cap;
	int out_last; /* km_grpc_stream_finish: END_STREAM once out is sent */
	/* incoming message reassembly */
	uint8_t hdr[5];
	size_t hdr_have;
	uint8_t *msg;
	size_t msg_len, msg_have;
	/* response state */
	int http_status;
	int grpc_status; /* -1 until seen */
	char grpc_message[256];
	int got_goaway;
	int ended;
	int closing;
	int handles;
	int conn_started; /* km_tls_conn_start was called: its close counts in handles */
	char token[8192];
	void *data; /* owner's pointer */
};

int km_grpc_stream_start(struct km_grpc_stream *g, uv_loop_t *loop,
			 const struct km_grpc_stream_config *cfg, const struct km_grpc_stream_cbs *cbs);
/* Queue one message (copied). Returns 0 or -1 (the call is ending). */
int km_grpc_stream_send(struct km_grpc_stream *g, const uint8_t *msg, size_t len);
/* No more messages: the request side ends (END_STREAM) once what is queued is sent, as a unary
 * call's does after its one request; the response still comes, then on_end. */
void km_grpc_stream_finish(struct km_grpc_stream *g);
/* Tear down: on_end (if not yet) then on_closed. */
void km_grpc_stream_close(struct km_grpc_stream *g);

#endif
