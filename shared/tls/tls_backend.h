/* tls_backend.h — what a TLS library provides to tls_stream.c (the libuv side, which knows no
 * library): a session on the stream, its handshake, plaintext in and out, and its end. Ciphertext
 * reaches the library from s->in (km_tls_stream_take_in) and leaves through
 * km_tls_stream_send, so both libraries' sessions are driven the same way, without blocking.
 *   - tls_wolfssl.c (km_tls_wolfssl): wolfSSL, which the xDS agent's istiod client and the CA
 *     client use;
 *   - services/tunnel/tls_openssl.c (km_tls_openssl): OpenSSL, for the tunnel's HBONE server,
 *     where every byte of the mesh is decrypted and ztunnel offers only AES-GCM, which Debian's
 *     wolfSSL runs without AES-NI (docs/decisions.md). */
#ifndef KM_SHARED_TLS_TLS_BACKEND_H
#define KM_SHARED_TLS_TLS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

struct km_tls_stream;

/* Results of handshake, read and write. */
enum {
	KM_TLS_DONE = 1,     /* handshake: finished */
	KM_TLS_WANT = 0,     /* more ciphertext is needed */
	KM_TLS_CLOSED = -1,  /* read: the peer closed the session */
	KM_TLS_FAILED = -2,  /* s->error says why */
};

struct km_tls_backend {
	const char *name;
	/* A session of ctx on s (s->ssl), server or client (server_name: SNI and the name the
	 * server's certificate must carry; alpn: the one protocol offered or taken). 0, or -1 with
	 * s->error. */
	int (*session)(struct km_tls_stream *s, void *ctx, int server, const char *server_name,
		       const char *alpn);
	int (*handshake)(struct km_tls_stream *s);
	/* Plaintext into buf: bytes (> 0), KM_TLS_WANT, KM_TLS_CLOSED or KM_TLS_FAILED. */
	int (*read)(struct km_tls_stream *s, uint8_t *buf, size_t len);
	/* Plaintext out, all of it (sealed records go to km_tls_stream_send, or while s->corked
	 * may be held by the library until push): 0 or KM_TLS_FAILED. */
	int (*write)(struct km_tls_stream *s, const uint8_t *data, size_t len);
	/* The sealed records held (corked) to km_tls_stream_send in one piece: 0 or KM_TLS_FAILED.
	 * NULL: the library holds none. */
	int (*push)(struct km_tls_stream *s);
	void (*describe)(const struct km_tls_stream *s, char *buf, size_t len);
	void (*free)(struct km_tls_stream *s);
};

/* Ciphertext for the peer (copied): 0, or -1 (the stream failed). */
int km_tls_stream_send(struct km_tls_stream *s, const uint8_t *data, size_t len);
/* Up to len bytes of the ciphertext received, consumed: how many (0: none waiting). */
size_t km_tls_stream_take_in(struct km_tls_stream *s, uint8_t *buf, size_t len);

#endif
