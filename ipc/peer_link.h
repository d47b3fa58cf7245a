/* peer_link.h — a daemon's lasting connection to another daemon's socket, on its libuv loop:
 * connect, hello as a role, then requests answered in order; when the peer goes away (or refuses
 * the hello) it is reconnected after a backoff (100 ms doubling to 5 s). Requests wait in a queue
 * of at most KM_PEER_LINK_QUEUE while it is down or busy; each gets its answer through its
 * callback exactly once: the peer's reply, or none (reply NULL) when the connection broke first
 * or the link stopped. With `receiving`, sockets the peer attaches to a reply (SCM_RIGHTS) are
 * taken in the callback with km_peer_link_take_socket; what a callback leaves is closed.
 * Ownership as libuv: the struct lives until on_stopped. */
#ifndef KM_IPC_PEER_LINK_H
#define KM_IPC_PEER_LINK_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "ipc/conn.h"
#include "ipc/message.h"

#define KM_PEER_LINK_QUEUE 4096

struct km_peer_link;
/* The answer to a request (reply NULL: none came). */
typedef void (*km_peer_reply_cb)(struct km_peer_link *l, void *arg, const Kmesh__Ipc__Reply *reply);

struct km_peer_link_config {
	const char *path;
	Kmesh__Ipc__Role role;
	const char *process; /* sent at hello */
	const char *peer;    /* for logs, e.g. "the map writer" */
	int receiving;       /* takes sockets from the peer */
	/* the link is up (hello accepted) or down (may be NULL) */
	void (*on_up)(struct km_peer_link *l);
	void (*on_down)(struct km_peer_link *l, const char *why);
	/* a reply with request id 0 and code OK once up: a notice the peer was asked to send
	 * (e.g. the xDS agent's generations, tunnel_notices.h); NULL: such a message ends the link
	 * as a reply nobody waited for */
	void (*on_notice)(struct km_peer_link *l, const Kmesh__Ipc__Reply *reply);
};

struct km_peer_request;

struct km_peer_link {
	uv_loop_t *loop;
	struct km_peer_link_config cfg;
	char path[108];
	struct km_conn conn;
	uv_timer_t timer;
	uv_connect_t connect_req;
	int conn_open, up, stopping, handles;
	uint64_t next_id, backoff_ms;
	struct km_peer_request *head, *tail; /* sent first, waiting after */
	struct km_peer_request *sent_end;    /* the first not yet sent */
	size_t queued;
	uint32_t sockets_left; /* of the reply being handled: attached and not taken yet */
	uint64_t connects, refused; /* counters */
	void (*on_stopped)(struct km_peer_link *l);
	void *data; /* owner's */
};

/* Start connecting. Returns 0, or -1 (the path is too long: logged). */
int km_peer_link_start(struct km_peer_link *l, uv_loop_t *loop, const struct km_peer_link_config *cfg);
/* Queue env (packed now; its request id is the link's). Returns 0, or -1 when the queue is full
 * or the link stops (cb is not called then). */
int km_peer_link_send(struct km_peer_link *l, const km_envelope *env, km_peer_reply_cb cb, void *arg);
/* In a reply callback: the next socket the peer attached to that reply (Reply.sockets), into tcp
 * (uv_tcp_init'ed). Returns 0, or UV_EAGAIN when none of its own is left (a later frame's
 * sockets, already received, are never handed out here). */
int km_peer_link_take_socket(struct km_peer_link *l, uv_tcp_t *tcp);
/* In a reply callback that knows its reply carries sockets, for a peer older than
 * Reply.sockets (0 there; it counted them in `applied`): let n of them be taken. */
void km_peer_link_reply_sockets(struct km_peer_link *l, uint32_t n);
/* Answer every request with none, close; on_stopped (may be NULL) once all is closed. */
void km_peer_link_stop(struct km_peer_link *l, void (*on_stopped)(struct km_peer_link *l));

#endif
