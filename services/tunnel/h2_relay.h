/* h2_relay.h — one HTTP/2 CONNECT stream's bytes relayed to and from a TCP socket, for both
 * halves of HBONE: inbound (hbone_server.c: the socket to the pod's application) and outbound
 * (hbone_client.c: the application's connection the kernel handed to the tunnel). Either way
 * the socket is called "up" here and the HTTP/2 peer "the peer".
 *   - The peer's DATA is written to the socket, the bytes of one loop turn gathered into one
 *     write; their window is given back (nghttp2_session_consume) only once written, so at most
 *     the stream's window is ever held.
 *   - The socket's bytes are read into a buffer of KM_H2_RELAY_BUF and framed as DATA by the
 *     provider; reading stops while it is full.
 *   - END_STREAM from the peer is a half-close of the socket (once everything before it is
 *     written); the socket's FIN is END_STREAM once its bytes are framed.
 *   - A reset of the socket resets the stream (RST_STREAM CONNECT_ERROR), and the stream's reset
 *     resets the socket (RST, not FIN).
 * The relay is embedded in the owner's stream; the owner keeps the nghttp2 session (session
 * points at the owner's pointer, NULL once the connection is closed) and is told when its
 * connection should frame and write (ops->flush) and when the relay let go of its socket and
 * writes (ops->released: the stream may be freed if the owner is done with it too). */
#ifndef KM_TUNNEL_H2_RELAY_H
#define KM_TUNNEL_H2_RELAY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <nghttp2/nghttp2.h>
#include <uv.h>

#define KM_H2_RELAY_BUF (256u << 10)

struct km_h2_relay;

struct km_h2_relay_ops {
	void (*flush)(struct km_h2_relay *r);    /* frame and write the connection (soon) */
	void (*released)(struct km_h2_relay *r); /* the socket closed or the last write done */
	int gather;                              /* writes wait for km_h2_relay_write_pending */
};

struct km_h2_relay_write;

struct km_h2_relay {
	const struct km_h2_relay_ops *ops;
	void **session;   /* the owner's nghttp2_session pointer */
	int32_t id;
	uv_tcp_t *up;     /* heap; its data is this relay; freed when closed */
	int h2_closed;    /* nghttp2 closed the stream (the owner sets it) */
	int relaying;     /* bytes flow both ways (km_h2_relay_start) */
	int up_eof;       /* the socket half-closed: END_STREAM once buf is sent */
	int up_reading;
	int down_eof;     /* the peer's END_STREAM: shut the socket's side down */
	int shutdown_sent;
	size_t buf_off, buf_len; /* the socket's bytes not yet framed: buf[buf_off..buf_len) */
	uint8_t *buf;
	size_t writing;   /* the peer's bytes being written to the socket */
	struct km_h2_relay_write *pend; /* gathered this loop turn */
	uv_shutdown_t shutdown_req;
	uint64_t to_up, from_up; /* bytes written to the socket, read from it */
};

struct km_tls_stream;

/* Frame what an HTTP/2 session (nghttp2) has and write it through tls, corked into writes of
 * at most cork_max bytes, while less than max_unsent bytes wait in the TLS stream. Returns -1
 * when nghttp2 failed to frame (the caller closes), 0 otherwise (a failure of the TLS stream is
 * its own to report). Both HBONE halves' connections write this way. */
int km_h2_send(void *session, struct km_tls_stream *tls, size_t max_unsent, size_t cork_max);

/* nghttp2's data_source_read_length_callback for relayed streams: DATA frames as large as the
 * peer takes and the windows allow, up to a stream's buffer (ztunnel sends 1 MiB frames); the
 * session's user data is not read. */
ssize_t km_h2_relay_frame_length(nghttp2_session *session, uint8_t type, int32_t id, int32_t session_window,
				 int32_t stream_window, uint32_t remote_max_frame, void *user);

/* Close a TCP handle with a reset (RST, not FIN); a plain close when the reset cannot be set (a
 * socket never connected). */
void km_tcp_close_reset(uv_tcp_t *tcp, uv_close_cb cb);
/* Zero r and set what it needs; up (may be NULL, given later with km_h2_relay_set_up). */
void km_h2_relay_init(struct km_h2_relay *r, const struct km_h2_relay_ops *ops, void **session,
		      int32_t id);
void km_h2_relay_set_up(struct km_h2_relay *r, uv_tcp_t *up);
/* Bytes flow: the socket is read (and its bytes framed by the provider). */
void km_h2_relay_start(struct km_h2_relay *r);
/* The nghttp2 data provider reading the socket's bytes (source.ptr: r). */
void km_h2_relay_provider(struct km_h2_relay *r, void *nghttp2_data_provider);
/* The peer's DATA: written to the socket (gathered). Returns 0, or -1 (its window was given
 * back: nobody to take it). */
int km_h2_relay_data(struct km_h2_relay *r, const uint8_t *data, size_t len);
/* The peer's END_STREAM. */
void km_h2_relay_peer_eof(struct km_h2_relay *r);
/* The turn's gathered bytes to libuv (ops->gather). */
void km_h2_relay_write_pending(struct km_h2_relay *r);
/* The connection closed: gathered bytes dropped, the socket reset. */
void km_h2_relay_abort(struct km_h2_relay *r);
/* Close the socket (reset: RST instead of FIN). */
void km_h2_relay_close_up(struct km_h2_relay *r, int reset);
/* The stream closed with code (nghttp2's error code; 0: a clean end): the socket is closed,
 * reset unless both sides ended cleanly. */
void km_h2_relay_stream_closed(struct km_h2_relay *r, uint32_t code);
/* Still holding a socket or a write: the owner must not free the stream yet. */
int km_h2_relay_busy(const struct km_h2_relay *r);
/* Free the buffers (after busy is 0). */
void km_h2_relay_free(struct km_h2_relay *r);
/* The socket's cookie (SO_COOKIE), 0 when unknown. */
uint64_t km_h2_relay_cookie(const struct km_h2_relay *r);

#endif
