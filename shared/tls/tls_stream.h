/* tls_stream.h — TLS over a connected libuv TCP handle, either side: the istiod client
 * (tls_conn.h) and the tunnel's HBONE server. The library (a backend: tls_backend.h) does no I/O
 * itself: ciphertext moves through memory, fed from libuv reads and drained into libuv writes, so
 * nothing blocks. The stream reads the handle once started; it never closes it (its owner does,
 * after km_tls_stream_free).
 *
 * Bounded: ciphertext not yet taken by the library is kept up to KM_TLS_STREAM_IN_MAX bytes (a
 * peer that sends more than that ahead of us is an error), and the owner sees plaintext in chunks
 * of at most 16 KiB. km_tls_stream_pause stops reading the peer (the owner's consumer is full). */
#ifndef KM_SHARED_TLS_TLS_STREAM_H
#define KM_SHARED_TLS_TLS_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define KM_TLS_STREAM_IN_MAX (1u << 20)

struct km_tls_stream;
struct km_tls_backend;

/* wolfSSL (tls_wolfssl.c): the istiod and CA clients' */
extern const struct km_tls_backend km_tls_wolfssl;

struct km_tls_stream_cbs {
	/* the handshake is done (the owner checks the peer: km_tls_stream_ssl) */
	void (*on_ready)(struct km_tls_stream *s);
	void (*on_data)(struct km_tls_stream *s, const uint8_t *data, size_t len); /* plaintext */
	/* any failure, or the peer's close (eof set): the owner closes */
	void (*on_error)(struct km_tls_stream *s, const char *what, int eof);
	/* bytes the stream has handed to libuv and not yet written (after each write done) */
	void (*on_drained)(struct km_tls_stream *s); /* may be NULL */
};

struct km_tls_stream {
	uv_stream_t *tcp;  /* the owner's; its data is set to this stream */
	const struct km_tls_backend *be;
	void *ssl;         /* the backend's session (WOLFSSL, SSL) */
	void *be_data;     /* the backend's own */
	struct km_tls_stream_cbs cbs;
	uint8_t *in;       /* ciphertext received, not yet taken by the library: in[in_off..in_len) */
	size_t in_off, in_len, in_cap;
	size_t unwritten;  /* ciphertext queued in libuv */
	int server, ready, failed, reading, paused, corked;
	char error[256];
	void *data;        /* owner's pointer */
};

/* Start on tcp (connected, not reading) with a session of ctx, a context of backend be's library
 * (WOLFSSL_CTX, SSL_CTX) the caller keeps alive until km_tls_stream_free; server 1 accepts, 0
 * connects (server_name: SNI and the name the certificate must carry, may be NULL). alpn (may be
 * NULL): the one protocol offered (a client) or taken (a server), the handshake failing on
 * another. Returns 0, or -1 with s->error set. */
int km_tls_stream_start(struct km_tls_stream *s, const struct km_tls_backend *be, uv_stream_t *tcp,
			void *ctx, int server, const char *server_name, const char *alpn,
			const struct km_tls_stream_cbs *cbs);
/* Write plaintext. Returns 0, or -1 (the stream failed: on_error follows or came). */
int km_tls_stream_write(struct km_tls_stream *s, const uint8_t *data, size_t len);
/* Cork: the writes that follow are sealed as they come but sent in one piece (one write to
 * the socket) at uncork, which returns 0 or -1 (the stream failed). A backend that cannot hold
 * its records sends them as it goes. The owner bounds what it writes while corked. */
void km_tls_stream_cork(struct km_tls_stream *s);
int km_tls_stream_uncork(struct km_tls_stream *s);
/* Stop / resume reading the peer. */
void km_tls_stream_pause(struct km_tls_stream *s, int pause);
/* The backend's session (WOLFSSL, SSL), for the owner's checks of the peer. */
void *km_tls_stream_ssl(const struct km_tls_stream *s);
/* The negotiated version and cipher, e.g. "TLSv1.3 TLS13-AES128-GCM-SHA256". */
const char *km_tls_stream_describe(const struct km_tls_stream *s, char *buf, size_t len);
/* Free the session and buffers (after the owner closed tcp, or before: reading stops). */
void km_tls_stream_free(struct km_tls_stream *s);

#endif
