/* writer_link.c — connection and batching to the map writer (see writer_link.h). */
#include "services/xds-agent/transport/writer_link.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/message.h"
#include "kmesh_maps.h"
#include "shared/backoff.h"
#include "shared/log.h"

enum { LINK_IDLE, LINK_CONNECTING, LINK_HELLO, LINK_READY };

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define IN_FLIGHT 4 /* batches sent before their replies: encoding overlaps with applying */

struct km_batch {
	struct km_batch *next;
	uint64_t id;
	size_t n_ops;
	int sync; /* a Sync request (its phase), not ops */
	km_writer_link_reply_cb on_reply; /* a query: told its reply (NULL if the link drops) */
	void *reply_arg;
	size_t len;
	uint8_t *payload;
};

static void connect_now(struct km_writer_link *l);

static void drop_queue(struct km_writer_link *l)
{
	while (l->head) {
		struct km_batch *b = l->head;

		l->ops_done += b->n_ops; /* lost with the connection: the replay covers them */
		l->head = b->next;
		if (b->on_reply)
			b->on_reply(b->reply_arg, NULL);
		free(b->payload);
		free(b);
	}
	l->tail = NULL;
	l->unsent = NULL;
	l->inflight = 0;
}

static void on_timer(uv_timer_t *t)
{
	connect_now(t->data);
}

static void schedule_reconnect(struct km_writer_link *l)
{
	if (l->stopping)
		return;
	uv_timer_start(&l->timer, on_timer, km_backoff_delay(&l->backoff_ms, BACKOFF_MAX_MS,
							     (uint32_t)rand()), 0);
}

static void conn_closed(struct km_conn *c)
{
	struct km_writer_link *l = c->data;

	l->conn_open = 0;
	schedule_reconnect(l);
}

static void disconnect(struct km_writer_link *l, const char *why)
{
	if (l->state == LINK_READY)
		km_warn("lost the map writer at %s: %s; reconnecting", l->path, why);
	else
		km_debug("map writer at %s: %s", l->path, why);
	l->state = LINK_IDLE;
	drop_queue(l);
	km_conn_close(&l->conn, conn_closed);
}

/* Send queued batches while fewer than IN_FLIGHT await their reply. */
static void send_next(struct km_writer_link *l)
{
	while (l->unsent && l->inflight < IN_FLIGHT && l->state == LINK_READY) {
		int err = km_conn_send(&l->conn, l->unsent->payload, l->unsent->len);

		if (err) {
			disconnect(l, uv_strerror(err));
			return;
		}
		/* the bytes are copied into the write request: the payload is no longer needed */
		free(l->unsent->payload);
		l->unsent->payload = NULL;
		l->unsent = l->unsent->next;
		l->inflight++;
		l->batches_sent++;
	}
}

/* Every batch and sync sent has been answered (queries may still wait). */
static int only_queries_left(const struct km_writer_link *l)
{
	for (const struct km_batch *b = l->head; b; b = b->next)
		if (!b->on_reply)
			return 0;
	return 1;
}

static void on_reply(struct km_writer_link *l, const km_envelope *env)
{
	const Kmesh__Ipc__Reply *r = env->reply;

	if (env->request_id == 0 && r->code != KMESH__IPC__CODE__OK) { /* refused at accept */
		km_error("the map writer at %s refused the connection: %s: %s", l->path,
			 km_msg_code_name(r->code), r->message);
		disconnect(l, "connection refused");
		return;
	}
	if (l->state == LINK_HELLO && env->request_id == l->hello_id) {
		if (r->code != KMESH__IPC__CODE__OK) {
			km_error("the map writer at %s refused this agent: %s: %s", l->path,
				 km_msg_code_name(r->code), r->message);
			l->backoff_ms = BACKOFF_MAX_MS;
			disconnect(l, "hello refused");
			return;
		}
		l->state = LINK_READY;
		l->features = r->hello ? r->hello->features : 0;
		l->backoff_ms = BACKOFF_MIN_MS;
		km_info("connected to the map writer at %s", l->path);
		l->cbs.on_ready(l->arg);
		return;
	}
	if (!l->inflight || !l->head || env->request_id != l->head->id) {
		disconnect(l, "reply to an unknown request");
		return;
	}
	{
		struct km_batch *b = l->head;
		int query = b->on_reply != NULL;

		l->inflight--;
		l->head = b->next;
		if (!l->head)
			l->tail = NULL;
		if (query) {
			b->on_reply(b->reply_arg, r);
		} else if (b->sync) {
			if (b->sync == KMESH__IPC__SYNC__PHASE__END && r->code == KMESH__IPC__CODE__OK)
				km_info("in sync with the map writer: %u stale rows removed", r->applied);
			else if (r->code != KMESH__IPC__CODE__OK)
				km_warn("the map writer could not sync: %s", r->message);
		} else {
			l->ops_acked += r->applied;
			l->ops_done += b->n_ops;
			if (r->code != KMESH__IPC__CODE__OK) {
				l->ops_refused += b->n_ops - r->applied;
				km_error("the map writer applied %u of %zu ops and refused the rest: %s: %s",
					 r->applied, b->n_ops, km_msg_code_name(r->code), r->message);
				if (l->cbs.on_refused)
					l->cbs.on_refused(l->arg);
			}
		}
		free(b->payload);
		free(b);
		if (l->head)
			send_next(l);
		if (query)
			return; /* a dump's answer says nothing about the tables being applied */
	}
	if (l->cbs.on_progress)
		l->cbs.on_progress(l->arg);
	if (only_queries_left(l) && l->cbs.on_synced)
		l->cbs.on_synced(l->arg);
}

static void on_frame(struct km_conn *c, const uint8_t *payload, size_t len)
{
	struct km_writer_link *l = c->data;
	km_envelope *env = km_msg_unpack(payload, len);

	if (env && env->body_case == KMESH__IPC__ENVELOPE__BODY_CONN_EVENTS &&
	    l->state == LINK_READY) {
		if (l->cbs.on_conn_events) /* a subscription's report, not a reply */
			l->cbs.on_conn_events(l->arg, env->conn_events);
	} else if (!env || env->body_case != KMESH__IPC__ENVELOPE__BODY_REPLY) {
		disconnect(l, "unexpected message");
	} else {
		on_reply(l, env);
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
	struct km_writer_link *l = req->data;
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Hello hello = KMESH__IPC__HELLO__INIT;

	if (l->stopping) {
		km_conn_close(&l->conn, conn_closed);
		return;
	}
	if (status < 0) {
		if (l->backoff_ms >= BACKOFF_MAX_MS)
			km_warn("cannot reach the map writer at %s: %s; retrying", l->path,
				uv_strerror(status));
		l->state = LINK_IDLE;
		km_conn_close(&l->conn, conn_closed);
		return;
	}
	km_conn_start(&l->conn, on_frame, on_error);
	hello.role = KMESH__IPC__ROLE__ROLE_XDS;
	hello.protocol_version = KM_IPC_PROTOCOL_VERSION;
	hello.layout_version = 0; /* rows travel as protobuf: the kernel layout is the map writer's own */
	hello.process = "kmesh-xds-agent";
	env.request_id = l->hello_id = l->next_id++;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_HELLO;
	env.hello = &hello;
	l->state = LINK_HELLO;
	if (km_msg_send(&l->conn, &env) != 0)
		disconnect(l, "cannot send hello");
}

static void connect_now(struct km_writer_link *l)
{
	if (l->stopping || l->conn_open)
		return;
	l->conn.data = l;
	if (km_conn_init(l->loop, &l->conn, KM_FRAME_MAX_DEFAULT) != 0) {
		schedule_reconnect(l);
		return;
	}
	l->conn_open = 1;
	l->state = LINK_CONNECTING;
	l->connect_req.data = l;
	uv_pipe_connect(&l->connect_req, &l->conn.pipe, l->path, on_connect);
}

int km_writer_link_start(struct km_writer_link *l, uv_loop_t *loop, const char *path,
			 size_t batch_ops, const struct km_writer_link_cbs *cbs, void *arg)
{
	memset(l, 0, sizeof(*l));
	if (strlen(path) >= sizeof(l->path)) {
		km_error("map writer socket path %s is too long", path);
		return -1;
	}
	strcpy(l->path, path);
	l->loop = loop;
	l->batch_ops = batch_ops ? batch_ops : 4096;
	l->cbs = *cbs;
	l->arg = arg;
	l->next_id = 1;
	l->backoff_ms = BACKOFF_MIN_MS;
	uv_timer_init(loop, &l->timer);
	l->timer.data = l;
	connect_now(l);
	return 0;
}

int km_writer_link_ready(const struct km_writer_link *l)
{
	return l->state == LINK_READY;
}

static void enqueue(struct km_writer_link *l, struct km_batch *b)
{
	if (l->tail)
		l->tail->next = b;
	else
		l->head = b;
	l->tail = b;
	if (!l->unsent)
		l->unsent = b;
}

void km_writer_link_submit(struct km_writer_link *l, const struct km_oplist *ops)
{
	if (l->state != LINK_READY || ops->n == 0)
		return;
	for (size_t off = 0; off < ops->n; off += l->batch_ops) {
		size_t n = ops->n - off < l->batch_ops ? ops->n - off : l->batch_ops;
		struct km_batch *b = calloc(1, sizeof(*b));

		if (b) {
			b->id = l->next_id++;
			b->n_ops = n;
			b->payload = km_oplist_encode(ops->ops + off, n, b->id, &b->len);
		}
		if (!b || !b->payload) {
			free(b);
			disconnect(l, "out of memory encoding a batch");
			return;
		}
		enqueue(l, b);
		l->ops_queued += n;
	}
	send_next(l);
}

void km_writer_link_sync(struct km_writer_link *l, int end)
{
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Sync sync = KMESH__IPC__SYNC__INIT;
	struct km_batch *b;

	if (l->state != LINK_READY)
		return;
	b = calloc(1, sizeof(*b));
	sync.phase = end ? KMESH__IPC__SYNC__PHASE__END : KMESH__IPC__SYNC__PHASE__BEGIN;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_SYNC;
	env.sync = &sync;
	if (b) {
		b->id = env.request_id = l->next_id++;
		b->sync = sync.phase;
		b->payload = km_msg_pack(&env, &b->len);
	}
	if (!b || !b->payload) {
		free(b);
		disconnect(l, "out of memory encoding a sync request");
		return;
	}
	enqueue(l, b);
	send_next(l);
}

int km_writer_link_query(struct km_writer_link *l, km_envelope *req, km_writer_link_reply_cb cb,
			 void *arg)
{
	struct km_batch *b;

	if (l->state != LINK_READY)
		return -ENOTCONN;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->id = req->request_id = l->next_id++;
	b->on_reply = cb;
	b->reply_arg = arg;
	b->payload = km_msg_pack(req, &b->len);
	if (!b->payload) {
		free(b);
		return -ENOMEM;
	}
	enqueue(l, b);
	send_next(l);
	return 0;
}

void km_writer_link_stop(struct km_writer_link *l)
{
	l->stopping = 1;
	drop_queue(l);
	uv_close((uv_handle_t *)&l->timer, NULL);
	if (l->conn_open)
		km_conn_close(&l->conn, conn_closed);
}
