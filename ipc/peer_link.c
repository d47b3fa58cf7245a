/* peer_link.c — see peer_link.h. */
#include "ipc/peer_link.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/log.h"

#define BACKOFF_MIN_MS 100u
#define BACKOFF_MAX_MS 5000u

struct km_peer_request {
	struct km_peer_request *next;
	km_peer_reply_cb cb;
	void *arg;
	uint64_t id; /* 0 until sent */
	size_t len;
	uint8_t *packed;
};

static void connect_now(struct km_peer_link *l);

static void handle_closed(struct km_peer_link *l)
{
	if (--l->handles == 0 && l->stopping && l->on_stopped)
		l->on_stopped(l);
}

/* Answer the request at the head with reply (NULL: none) and drop it. */
static void finish_head(struct km_peer_link *l, const Kmesh__Ipc__Reply *reply)
{
	struct km_peer_request *r = l->head;

	l->head = r->next;
	if (!l->head)
		l->tail = NULL;
	if (l->sent_end == r)
		l->sent_end = r->next;
	l->queued--;
	r->cb(l, r->arg, reply);
	free(r->packed);
	free(r);
}

static void free_socket(uv_handle_t *h)
{
	free(h);
}

/* Sockets a reply's callback did not take (sockets_left of them): closed; the descriptors a
 * later frame brought stay for it. An fd of another kind ends the link. */
static int drain_sockets(struct km_peer_link *l)
{
	for (; l->sockets_left && l->cfg.receiving && uv_pipe_pending_count(&l->conn.pipe) > 0;
	     l->sockets_left--) {
		uv_tcp_t *tcp;

		if (uv_pipe_pending_type(&l->conn.pipe) != UV_TCP || !(tcp = malloc(sizeof(*tcp))))
			return -1;
		uv_tcp_init(l->loop, tcp);
		if (uv_accept((uv_stream_t *)&l->conn.pipe, (uv_stream_t *)tcp) != 0) {
			uv_close((uv_handle_t *)tcp, free_socket);
			return -1;
		}
		uv_close((uv_handle_t *)tcp, free_socket);
	}
	l->sockets_left = 0;
	return 0;
}

static void disconnect(struct km_peer_link *l, const char *why);

/* Send every request queued and not sent yet. */
static void flush(struct km_peer_link *l)
{
	while (l->up && l->sent_end) {
		struct km_peer_request *r = l->sent_end;
		km_envelope *env = km_msg_unpack(r->packed, r->len);
		int err;

		if (!env) { /* cannot happen: packed by us */
			disconnect(l, "a request could not be read back");
			return;
		}
		env->request_id = r->id = ++l->next_id;
		err = km_msg_send(&l->conn, env);
		km_msg_free(env);
		if (err) {
			disconnect(l, "cannot send a request");
			return;
		}
		l->sent_end = r->next;
	}
}

static void on_timer(uv_timer_t *t)
{
	connect_now(t->data);
}

static void conn_closed(struct km_conn *c)
{
	struct km_peer_link *l = c->data;

	l->conn_open = 0;
	if (l->stopping) {
		handle_closed(l);
		return;
	}
	l->handles--;
	uv_timer_start(&l->timer, on_timer, l->backoff_ms, 0);
	l->backoff_ms = l->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : l->backoff_ms * 2;
}

static void disconnect(struct km_peer_link *l, const char *why)
{
	int was_up = l->up;

	if (was_up)
		km_warn("lost %s at %s: %s; reconnecting", l->cfg.peer, l->path, why);
	else
		km_debug("%s at %s: %s", l->cfg.peer, l->path, why);
	l->up = 0;
	/* the requests sent get no answer; those not sent wait for the next connection */
	while (l->head && l->head != l->sent_end)
		finish_head(l, NULL);
	for (struct km_peer_request *r = l->head; r; r = r->next)
		r->id = 0;
	if (l->conn_open && !l->conn.closing)
		km_conn_close(&l->conn, conn_closed);
	if (was_up && l->cfg.on_down)
		l->cfg.on_down(l, why);
}

static void on_frame(struct km_conn *c, const uint8_t *payload, size_t len)
{
	struct km_peer_link *l = c->data;
	km_envelope *env = km_msg_unpack(payload, len);

	if (!env || env->body_case != KMESH__IPC__ENVELOPE__BODY_REPLY) {
		disconnect(l, "a message that is not a reply");
	} else if (env->request_id == 0 && env->reply->code != KMESH__IPC__CODE__OK) {
		km_error("%s at %s refused the connection: %s: %s", l->cfg.peer, l->path,
			 km_msg_code_name(env->reply->code), env->reply->message);
		l->refused++;
		disconnect(l, "connection refused");
	} else if (!l->up) { /* the hello's answer */
		if (env->reply->code != KMESH__IPC__CODE__OK) {
			km_error("%s at %s refused our hello as %s: %s", l->cfg.peer, l->path,
				 km_msg_role_name(l->cfg.role), env->reply->message);
			l->refused++;
			l->backoff_ms = BACKOFF_MAX_MS;
			disconnect(l, "hello refused");
		} else {
			l->up = 1;
			l->backoff_ms = BACKOFF_MIN_MS;
			km_info("connected to %s at %s as %s", l->cfg.peer, l->path,
				km_msg_role_name(l->cfg.role));
			if (l->cfg.on_up)
				l->cfg.on_up(l);
			flush(l);
		}
	} else if (env->request_id == 0 && l->cfg.on_notice) {
		l->cfg.on_notice(l, env->reply);
	} else if (!l->head || l->head == l->sent_end || env->request_id != l->head->id) {
		disconnect(l, "a reply nobody waited for");
	} else {
		l->sockets_left = env->reply->sockets;
		finish_head(l, env->reply);
		if (drain_sockets(l) != 0)
			disconnect(l, "it sent a descriptor that is not a TCP socket");
	}
	km_msg_free(env);
}

static void on_error(struct km_conn *c, int err, const char *what)
{
	(void)err;
	disconnect(c->data, what);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct km_peer_link *l = req->data;
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Hello hello = KMESH__IPC__HELLO__INIT;

	if (l->stopping || status < 0) {
		if (!l->stopping && l->backoff_ms >= BACKOFF_MAX_MS)
			km_warn("cannot reach %s at %s: %s; retrying", l->cfg.peer, l->path,
				uv_strerror(status));
		km_conn_close(&l->conn, conn_closed);
		return;
	}
	l->connects++;
	km_conn_start(&l->conn, on_frame, on_error);
	hello.role = l->cfg.role;
	hello.protocol_version = KM_IPC_PROTOCOL_VERSION;
	hello.process = (char *)l->cfg.process;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_HELLO;
	env.hello = &hello;
	env.request_id = ++l->next_id;
	if (km_msg_send(&l->conn, &env) != 0)
		disconnect(l, "cannot send the hello");
}

static void connect_now(struct km_peer_link *l)
{
	int err;

	if (l->stopping || l->conn_open)
		return;
	l->conn.data = l;
	err = l->cfg.receiving ? km_conn_init_receiving(l->loop, &l->conn, KM_FRAME_MAX_DEFAULT)
			       : km_conn_init(l->loop, &l->conn, KM_FRAME_MAX_DEFAULT);
	if (err) {
		uv_timer_start(&l->timer, on_timer, BACKOFF_MAX_MS, 0);
		return;
	}
	l->conn_open = 1;
	l->handles++;
	l->connect_req.data = l;
	uv_pipe_connect(&l->connect_req, &l->conn.pipe, l->path, on_connect);
}

int km_peer_link_start(struct km_peer_link *l, uv_loop_t *loop, const struct km_peer_link_config *cfg)
{
	void *data = l->data;

	memset(l, 0, sizeof(*l));
	l->data = data;
	if (!cfg->path || strlen(cfg->path) >= sizeof(l->path)) {
		km_error("the socket path of %s is too long", cfg->peer);
		return -1;
	}
	snprintf(l->path, sizeof(l->path), "%s", cfg->path);
	l->cfg = *cfg;
	l->cfg.path = l->path;
	l->loop = loop;
	l->backoff_ms = BACKOFF_MIN_MS;
	uv_timer_init(loop, &l->timer);
	l->timer.data = l;
	l->handles = 1; /* the timer */
	connect_now(l);
	return 0;
}

int km_peer_link_send(struct km_peer_link *l, const km_envelope *env, km_peer_reply_cb cb, void *arg)
{
	struct km_peer_request *r;

	if (l->stopping || l->queued >= KM_PEER_LINK_QUEUE || !(r = calloc(1, sizeof(*r))))
		return -1;
	if (!(r->packed = km_msg_pack(env, &r->len))) {
		free(r);
		return -1;
	}
	r->cb = cb;
	r->arg = arg;
	if (l->tail)
		l->tail->next = r;
	else
		l->head = r;
	l->tail = r;
	if (!l->sent_end)
		l->sent_end = r;
	l->queued++;
	flush(l);
	return 0;
}

int km_peer_link_take_socket(struct km_peer_link *l, uv_tcp_t *tcp)
{
	int err;

	if (!l->sockets_left)
		return UV_EAGAIN;
	if ((err = km_conn_take_socket(&l->conn, tcp)) == 0)
		l->sockets_left--;
	return err;
}

void km_peer_link_reply_sockets(struct km_peer_link *l, uint32_t n)
{
	if (!l->sockets_left)
		l->sockets_left = n;
}

static void timer_closed(uv_handle_t *h)
{
	handle_closed(h->data);
}

void km_peer_link_stop(struct km_peer_link *l, void (*on_stopped)(struct km_peer_link *l))
{
	if (l->stopping)
		return;
	l->stopping = 1;
	l->on_stopped = on_stopped;
	l->up = 0;
	while (l->head)
		finish_head(l, NULL);
	uv_close((uv_handle_t *)&l->timer, timer_closed);
	if (l->conn_open && !l->conn.closing)
		km_conn_close(&l->conn, conn_closed);
}
