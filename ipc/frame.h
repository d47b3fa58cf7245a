/* frame.h — the wire framing shared by every kmesh process: a 4-byte big-endian length followed
 * by that many bytes of payload (one protobuf Envelope). Pure code, no I/O: the decoder is fed
 * whatever a read returned (partial frames, several frames at once) and emits whole frames. */
#ifndef KM_IPC_FRAME_H
#define KM_IPC_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define KM_FRAME_HEADER 4u
#define KM_FRAME_MAX_DEFAULT (16u << 20) /* 16 MiB */
#define KM_FRAME_MAX_LIMIT (256u << 20)  /* no configuration may go above this */
#define KM_FRAME_BODY_STEP (64u << 10)   /* a partial frame's buffer grows with what arrived */

enum km_frame_err {
	KM_FRAME_OK = 0,
	KM_FRAME_ETOOBIG = -1, /* announced length above the decoder's maximum */
	KM_FRAME_EEMPTY = -2,  /* zero-length frame: never valid */
	KM_FRAME_ENOMEM = -3,
	KM_FRAME_ESTOPPED = -4, /* the callback asked to stop */
	KM_FRAME_EBUDGET = -5,  /* the budget shared by the process's decoders is spent */
	KM_FRAME_EPAUSED = -6,  /* the callback asked to pause: not sticky, see *consumed */
};

/* Bytes of partial frames buffered by every decoder that shares it (one per process): a peer
 * that sends the start of large frames on many connections cannot hold more than max. */
struct km_frame_budget {
	size_t used, max;
};

/* Called for each complete frame. The payload is valid only during the call.
 * Return 0 to go on, KM_FRAME_CB_PAUSE to pause (km_frame_decoder_feed_some), anything else to
 * stop feeding (the decoder then reports KM_FRAME_ESTOPPED). */
#define KM_FRAME_CB_PAUSE 2
typedef int (*km_frame_cb)(void *arg, const uint8_t *payload, size_t len);

struct km_frame_decoder {
	size_t max_frame;
	uint8_t header[KM_FRAME_HEADER];
	size_t header_have;
	uint8_t *body; /* grown as the frame's bytes arrive, never past the announced length */
	size_t body_cap;
	size_t body_len;
	size_t body_have;
	struct km_frame_budget *budget; /* NULL: none */
	int failed; /* sticky: once a stream is out of sync it stays so */
};

void km_frame_decoder_init(struct km_frame_decoder *d, size_t max_frame);
/* The largest frame from now on (e.g. raised once a peer authenticated). */
void km_frame_decoder_set_max(struct km_frame_decoder *d, size_t max_frame);
/* Charge this decoder's partial frames to budget (shared; NULL: none). Before the first feed. */
void km_frame_decoder_set_budget(struct km_frame_decoder *d, struct km_frame_budget *budget);
/* Feed bytes; emits every complete frame through cb. Returns KM_FRAME_OK or an error; after an
 * error the stream is out of sync and every later call returns the same error. */
int km_frame_decoder_feed(struct km_frame_decoder *d, const uint8_t *data, size_t len,
			  km_frame_cb cb, void *arg);
/* The same, but a callback may pause: then it returns KM_FRAME_EPAUSED with *consumed the bytes
 * of data used (the rest is to be fed again later); the stream stays in sync. Otherwise
 * *consumed is len. */
int km_frame_decoder_feed_some(struct km_frame_decoder *d, const uint8_t *data, size_t len,
			       km_frame_cb cb, void *arg, size_t *consumed);
void km_frame_decoder_free(struct km_frame_decoder *d);

/* Writes the 4-byte header for a payload of len bytes. */
void km_frame_header(uint8_t out[KM_FRAME_HEADER], uint32_t len);

const char *km_frame_strerror(int err);

#endif
