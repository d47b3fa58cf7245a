/* conn.h — a framed, message-oriented connection over a libuv Unix stream (uv_pipe_t).
 *
 * Ownership follows libuv: the caller owns the km_conn memory; it must stay valid until the close
 * callback has run. Sends copy the payload. A framing error (oversize, zero-length frame) or a
 * read error closes nothing by itself: the error callback is told and the owner decides (normally
 * km_conn_close).
 *
 * Backpressure: with pause_above set, a peer whose replies are not read stops being read: once
 * a frame was handled and more than pause_above bytes wait to be written, the connection stops
 * reading (keeping what it had read but not handled) until the queue is down to half of it. Its
 * owner sees `paused` and `paused_ms` and decides how long to wait. With a send budget, every
 * connection sharing it together queues at most its max bytes; a send over it is refused and
 * `send_refused` stays set.
 *
 * Holding: an owner that answers a frame later (work off the loop) may km_conn_hold the
 * connection from its frame callback; no further frame is delivered (the bytes are kept, the
 * peer is not read) until km_conn_release, so replies keep the order of the requests. A held
 * connection is not `paused`: it waits for its owner, not for its peer. */
#ifndef KM_IPC_CONN_H
#define KM_IPC_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "ipc/frame.h"

struct km_conn;
/* A complete frame arrived. The payload is valid only during the call. */
typedef void (*km_conn_frame_cb)(struct km_conn *c, const uint8_t *payload, size_t len);
/* The stream ended (UV_EOF) or failed (uv error, or a KM_FRAME_* error). */
typedef void (*km_conn_error_cb)(struct km_conn *c, int err, const char *what);
typedef void (*km_conn_close_cb)(struct km_conn *c);

struct km_conn {
	uv_pipe_t pipe; /* first member: the handle's data points back to the conn */
	struct km_frame_decoder decoder; /* what the peer may send (its limit may change) */
	size_t max_send;                 /* the largest frame sent to it: km_conn_init's max_frame */
	km_conn_frame_cb on_frame;
	km_conn_error_cb on_error;
	km_conn_close_cb on_close;
	int closing;
	int reading;
	size_t pause_above;                  /* 0: never pause */
	int paused;                          /* not read: its replies wait for it */
	int hold;                            /* not read: its owner answers a request later */
	uint64_t paused_ms;                  /* uv_now when it paused */
	uint8_t *held;                       /* read but not handled when it paused */
	size_t held_len;
	struct km_frame_budget *send_budget; /* NULL: none */
	int send_refused;                    /* a send went over the budget */
	uv_shutdown_t shutdown_req;
	void *data; /* owner's pointer */
};

/* Initialise the pipe handle on loop (before uv_accept / uv_pipe_connect on &c->pipe). max_frame
 * bounds the frames both ways; the decoder's (incoming) limit may be changed later on its own. */
int km_conn_init(uv_loop_t *loop, struct km_conn *c, size_t max_frame);
/* The same for a connection that receives sockets from its peer (SCM_RIGHTS, km_conn_send_fds):
 * libuv keeps each one received until km_conn_take_socket. Only for a peer trusted with this
 * process's descriptor table: a server never takes descriptors from its clients. */
int km_conn_init_receiving(uv_loop_t *loop, struct km_conn *c, size_t max_frame);

#define KM_CONN_MAX_FDS 64
/* Send one frame with n sockets (at most KM_CONN_MAX_FDS) attached, over SCM_RIGHTS, written
 * now (sendmsg on the socket: libuv writes fds only on its IPC pipes, and a server's pipes must
 * not read them). Only when nothing else waits to be written: returns UV_EAGAIN then, or when
 * the peer's socket buffer is full, and nothing is sent; the caller answers without sockets.
 * A partial write queues the rest (the sockets went with its first byte). The fds stay the
 * caller's to close. Returns 0 or a negative uv error. */
int km_conn_send_fds(struct km_conn *c, const void *payload, size_t len, const int *fds, size_t n);
/* The next socket received (km_conn_init_receiving), into tcp (uv_tcp_init'ed, not yet used).
 * Returns 0, UV_EAGAIN when none is waiting, or another uv error (tcp is then unused). */
int km_conn_take_socket(struct km_conn *c, uv_tcp_t *tcp);
/* Start reading frames. */
int km_conn_start(struct km_conn *c, km_conn_frame_cb on_frame, km_conn_error_cb on_error);
/* Queue one frame. Returns 0 or a negative uv error. */
int km_conn_send(struct km_conn *c, const void *payload, size_t len);
/* The same without a copy: payload lies in buf, at least KM_FRAME_HEADER bytes in (the header
 * is written there); buf is the connection's from now on, freed once written or refused. For a
 * large reply built off the loop: the loop neither copies it nor faults in a second copy. */
int km_conn_send_owned(struct km_conn *c, void *buf, uint8_t *payload, size_t len);
/* Deliver no frame after the current one until km_conn_release (see "Holding" above). */
void km_conn_hold(struct km_conn *c);
/* Deliver again: the frames kept meanwhile first (from the loop, not from inside this call's
 * caller's frame callback), then read the peer again unless it is paused. */
void km_conn_release(struct km_conn *c);
/* Bytes queued for writing and not yet written. */
size_t km_conn_write_queue(const struct km_conn *c);
/* Stop reading, let queued writes finish (e.g. a final error reply), then close. */
void km_conn_close_after_writes(struct km_conn *c, km_conn_close_cb cb);
/* Close; cb (may be NULL) runs from the loop once the handle is closed. Idempotent. */
void km_conn_close(struct km_conn *c, km_conn_close_cb cb);
/* The connected peer's credentials (SO_PEERCRED). Returns 0 or -errno. */
int km_conn_peer_cred(const struct km_conn *c, pid_t *pid, uid_t *uid, gid_t *gid);

#endif
