/* mw_link.c — see mw_link.h. */
#include "services/ipsec-agent/mw_link.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/client_sync.h"
#include "ipc/message.h"
#include "services/ipsec-agent/node_spec.h"
#include "shared/addr.h"
#include "shared/grow.h"
#include "shared/log.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 10000

enum { IDLE, CONNECTING, HELLO, DUMP_PEER, DUMP_CIDR, DATAPLANE, READY, BATCH };

static void connect_now(struct km_ipsec_mw_link *l);

static int same_key(const struct km_ipsec_row *a, const struct km_ipsec_row *b)
{
	return a->cidr == b->cidr && a->len == b->len && !memcmp(&a->addr, &b->addr, sizeof(a->addr));
}

static const struct km_ipsec_row *find(const struct km_ipsec_row *rows, size_t n,
				       const struct km_ipsec_row *r)
{
	for (size_t i = 0; i < n; i++)
		if (same_key(&rows[i], r))
			return &rows[i];
	return NULL;
}

static int add_row(struct km_ipsec_row **rows, size_t *n, size_t *cap, const struct km_ipsec_row *r)
{
	if (km_grow((void **)rows, cap, *n + 1, sizeof(**rows)) != 0)
		return -1;
	(*rows)[(*n)++] = *r;
	return 0;
}

/* What the tables should hold now: every peer's addresses and pod CIDRs with its id. */
static int desired(const struct km_ipsec_mw_link *l, struct km_ipsec_row **rows, size_t *n,
		   size_t *cap)
{
	*n = 0;
	for (size_t i = 0; i < l->plan->n_peers; i++) {
		const struct km_ipsec_peer *p = &l->plan->peers[i];

		for (size_t a = 0; a < p->node.n_addrs; a++) {
			struct km_ipsec_row r = { .peer_id = p->id };

			if (km_addr_parse(p->node.addrs[a], &r.addr) == 0 && add_row(rows, n, cap, &r))
				return -1;
		}
		for (size_t c = 0; c < p->node.n_cidrs; c++) {
			struct km_ipsec_row r = { .addr = p->node.cidrs[c].net, .len = p->node.cidrs[c].len,
						  .cidr = 1, .peer_id = p->id };

			if (add_row(rows, n, cap, &r))
				return -1;
		}
	}
	return 0;
}

static void disconnect(struct km_ipsec_mw_link *l, const char *why);

static int send_env(struct km_ipsec_mw_link *l, km_envelope *env, int state)
{
	env->request_id = l->waiting_id = ++l->next_id; /* from 1: id 0 is the server's own */
	if (km_msg_send(&l->conn, env) != 0) {
		disconnect(l, "cannot send a request");
		return -1;
	}
	l->state = state;
	return 0;
}

static void send_dump(struct km_ipsec_mw_link *l, int cidr)
{
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__DumpRequest d = KMESH__IPC__DUMP_REQUEST__INIT;

	d.table = cidr ? KMESH__IPC__TABLE__TABLE_IPSEC_CIDR : KMESH__IPC__TABLE__TABLE_IPSEC_PEER;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_DUMP;
	env.dump = &d;
	send_env(l, &env, cidr ? DUMP_CIDR : DUMP_PEER);
}

/* The tc programs on, on the interfaces holding this node's addresses. */
static void send_dataplane(struct km_ipsec_mw_link *l)
{
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__IpsecDataplane d = KMESH__IPC__IPSEC_DATAPLANE__INIT;
	ProtobufCBinaryData bytes[KM_IPSEC_ADDRS_MAX];
	uint8_t raw[KM_IPSEC_ADDRS_MAX][16];

	d.enabled = 1;
	for (size_t i = 0; i < l->plan->self.n_addrs; i++) {
		struct km_addr a;

		if (km_addr_parse(l->plan->self.addrs[i], &a) != 0)
			continue;
		bytes[d.n_node_addresses].len = km_addr_to_bytes(&a, raw[d.n_node_addresses]);
		bytes[d.n_node_addresses].data = raw[d.n_node_addresses];
		d.n_node_addresses++;
	}
	d.node_addresses = bytes;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_IPSEC_DATAPLANE;
	env.ipsec_dataplane = &d;
	send_env(l, &env, DATAPLANE);
}

/* One op for row r (delete: the key fields are enough). */
struct op_buf {
	Kmesh__Ipc__TableOp op;
	Kmesh__Ipc__IpsecPeerRow peer;
	Kmesh__Ipc__IpsecCidrRow cidr;
	uint8_t bytes[16];
};

static void fill_op(struct op_buf *b, const struct km_ipsec_row *r, int del)
{
	ProtobufCBinaryData addr;

	kmesh__ipc__table_op__init(&b->op);
	addr.len = km_addr_to_bytes(&r->addr, b->bytes);
	addr.data = b->bytes;
	b->op.kind = del ? KMESH__IPC__TABLE_OP__KIND__DELETE : KMESH__IPC__TABLE_OP__KIND__UPSERT;
	if (r->cidr) {
		kmesh__ipc__ipsec_cidr_row__init(&b->cidr);
		b->cidr.address = addr;
		b->cidr.length = r->len;
		b->cidr.peer_id = r->peer_id;
		b->op.row_case = KMESH__IPC__TABLE_OP__ROW_IPSEC_CIDR;
		b->op.ipsec_cidr = &b->cidr;
	} else {
		kmesh__ipc__ipsec_peer_row__init(&b->peer);
		b->peer.address = addr;
		b->peer.peer_id = r->peer_id;
		b->op.row_case = KMESH__IPC__TABLE_OP__ROW_IPSEC_PEER;
		b->op.ipsec_peer = &b->peer;
	}
}

/* Send the differences between what is held and what is wanted, if any. */
static void sync_rows(struct km_ipsec_mw_link *l)
{
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__TableBatch batch = KMESH__IPC__TABLE_BATCH__INIT;
	struct op_buf *bufs = NULL;
	Kmesh__Ipc__TableOp **ops = NULL;
	size_t n = 0;

	l->dirty = 0;
	if (desired(l, &l->sent, &l->n_sent, &l->cap_sent) != 0) {
		km_error("out of memory listing the IPsec rows");
		return;
	}
	bufs = calloc(l->n_held + l->n_sent + 1, sizeof(*bufs));
	ops = calloc(l->n_held + l->n_sent + 1, sizeof(*ops));
	if (!bufs || !ops) {
		km_error("out of memory building the IPsec rows");
		goto done;
	}
	for (size_t i = 0; i < l->n_held; i++) /* deletes first: a CIDR may move to another peer */
		if (!find(l->sent, l->n_sent, &l->held[i])) {
			fill_op(&bufs[n], &l->held[i], 1);
			ops[n] = &bufs[n].op;
			n++;
		}
	for (size_t i = 0; i < l->n_sent; i++) {
		const struct km_ipsec_row *h = find(l->held, l->n_held, &l->sent[i]);

		if (!h || h->peer_id != l->sent[i].peer_id) {
			fill_op(&bufs[n], &l->sent[i], 0);
			ops[n] = &bufs[n].op;
			n++;
		}
	}
	if (!n)
		goto done;
	batch.ops = ops;
	batch.n_ops = n;
	env.body_case = KMESH__IPC__ENVELOPE__BODY_BATCH;
	env.batch = &batch;
	if (send_env(l, &env, BATCH) == 0) {
		l->batches++;
		km_debug("map writer: %zu IPsec row changes sent", n);
	}
done:
	free(bufs);
	free(ops);
}

static void rows_from_dump(struct km_ipsec_mw_link *l, const Kmesh__Ipc__DumpReply *d)
{
	for (size_t i = 0; i < d->n_rows; i++) {
		const Kmesh__Ipc__TableOp *op = d->rows[i];
		struct km_ipsec_row r = { 0 };

		if (op->row_case == KMESH__IPC__TABLE_OP__ROW_IPSEC_PEER &&
		    km_addr_from_bytes(op->ipsec_peer->address.data, op->ipsec_peer->address.len,
				       &r.addr) == 0) {
			r.peer_id = (uint16_t)op->ipsec_peer->peer_id;
		} else if (op->row_case == KMESH__IPC__TABLE_OP__ROW_IPSEC_CIDR &&
			   km_addr_from_bytes(op->ipsec_cidr->address.data, op->ipsec_cidr->address.len,
					      &r.addr) == 0) {
			r.cidr = 1;
			r.len = (uint8_t)op->ipsec_cidr->length;
			r.peer_id = (uint16_t)op->ipsec_cidr->peer_id;
		} else {
			continue;
		}
		add_row(&l->held, &l->n_held, &l->cap_held, &r);
	}
}

static void on_reply(struct km_ipsec_mw_link *l, const Kmesh__Ipc__Reply *r)
{
	int ok = r->code == KMESH__IPC__CODE__OK;

	switch (l->state) {
	case HELLO:
		if (!ok) {
			km_error("the map writer at %s refused the IPsec agent: %s", l->path, r->message);
			l->backoff_ms = BACKOFF_MAX_MS;
			disconnect(l, "hello refused");
			return;
		}
		l->n_held = 0;
		send_dump(l, 0);
		return;
	case DUMP_PEER:
	case DUMP_CIDR:
		if (!ok || r->body_case != KMESH__IPC__REPLY__BODY_DUMP) {
			km_error("the map writer would not show its IPsec tables: %s", r->message);
			disconnect(l, "dump refused");
			return;
		}
		rows_from_dump(l, r->dump);
		if (l->state == DUMP_PEER)
			send_dump(l, 1);
		else
			send_dataplane(l);
		return;
	case DATAPLANE:
		/* refused: peers' ESP arrives without the mark that selects their states, so nothing
		 * decrypts; said loudly, and asked again at the next connection */
		l->tc_on = ok;
		snprintf(l->tc_status, sizeof(l->tc_status), "%s", r->message);
		if (ok)
			km_info("map writer: IPsec tc programs on (%s)", r->message);
		else
			km_error("the map writer cannot put the IPsec tc programs on: %s; traffic from "
				 "peers will not be decrypted", r->message);
		l->state = READY;
		l->backoff_ms = BACKOFF_MIN_MS;
		km_info("connected to the map writer at %s (%zu IPsec rows there)", l->path, l->n_held);
		sync_rows(l);
		return;
	case BATCH:
		if (!ok) {
			l->refused++;
			km_error("the map writer refused IPsec rows: %s; reading its tables again",
				 r->message);
			disconnect(l, "rows refused"); /* reconnect (backoff), dump, diff again */
			return;
		}
		/* held = sent: swap the buffers */
		{
			struct km_ipsec_row *t = l->held;
			size_t cap = l->cap_held;

			l->held = l->sent;
			l->n_held = l->n_sent;
			l->cap_held = l->cap_sent;
			l->sent = t;
			l->cap_sent = cap;
			l->n_sent = 0;
		}
		l->state = READY;
		if (l->dirty)
			sync_rows(l);
		return;
	default:
		disconnect(l, "a reply nobody waited for");
	}
}

static void on_frame(struct km_conn *c, const uint8_t *payload, size_t len)
{
	struct km_ipsec_mw_link *l = c->data;
	km_envelope *env = km_msg_unpack(payload, len);

	if (env && env->body_case == KMESH__IPC__ENVELOPE__BODY_REPLY && env->request_id == 0 &&
	    env->reply->code != KMESH__IPC__CODE__OK) {
		km_error("the map writer refused the connection: %s: %s",
			 km_msg_code_name(env->reply->code), env->reply->message);
		disconnect(l, "connection refused");
	} else if (!env || env->body_case != KMESH__IPC__ENVELOPE__BODY_REPLY ||
		   env->request_id != l->waiting_id)
		disconnect(l, "unexpected message");
	else
		on_reply(l, env->reply);
	km_msg_free(env);
}

static void on_error(struct km_conn *c, int err, const char *what)
{
	(void)err;
	disconnect(c->data, what);
}

static void on_timer(uv_timer_t *t)
{
	connect_now(t->data);
}

static void conn_closed(struct km_conn *c)
{
	struct km_ipsec_mw_link *l = c->data;

	l->conn_open = 0;
	if (l->stopping)
		return;
	uv_timer_start(&l->timer, on_timer, l->backoff_ms, 0);
	l->backoff_ms = l->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : l->backoff_ms * 2;
}

static void disconnect(struct km_ipsec_mw_link *l, const char *why)
{
	if (l->state >= READY)
		km_warn("lost the map writer at %s: %s; reconnecting", l->path, why);
	else
		km_debug("map writer at %s: %s", l->path, why);
	l->state = IDLE;
	l->n_held = 0;
	l->tc_on = 0; /* as far as we know: asked again at the next connection */
	snprintf(l->tc_status, sizeof(l->tc_status), "not connected to the map writer");
	if (l->conn_open)
		km_conn_close(&l->conn, conn_closed);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct km_ipsec_mw_link *l = req->data;
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Hello hello = KMESH__IPC__HELLO__INIT;

	if (l->stopping || status < 0) {
		if (!l->stopping && l->backoff_ms >= BACKOFF_MAX_MS)
			km_warn("cannot reach the map writer at %s: %s; retrying", l->path,
				uv_strerror(status));
		l->state = IDLE;
		km_conn_close(&l->conn, conn_closed);
		return;
	}
	km_conn_start(&l->conn, on_frame, on_error);
	hello.role = KMESH__IPC__ROLE__ROLE_IPSEC;
	hello.protocol_version = KM_IPC_PROTOCOL_VERSION;
	hello.process = "kmesh-ipsec-agent";
	env.body_case = KMESH__IPC__ENVELOPE__BODY_HELLO;
	env.hello = &hello;
	send_env(l, &env, HELLO);
}

static void connect_now(struct km_ipsec_mw_link *l)
{
	if (l->stopping || l->conn_open)
		return;
	l->conn.data = l;
	if (km_conn_init(l->loop, &l->conn, KM_FRAME_MAX_DEFAULT) != 0) {
		uv_timer_start(&l->timer, on_timer, BACKOFF_MAX_MS, 0);
		return;
	}
	l->conn_open = 1;
	l->state = CONNECTING;
	l->connect_req.data = l;
	uv_pipe_connect(&l->connect_req, &l->conn.pipe, l->path, on_connect);
}

int km_ipsec_mw_link_start(struct km_ipsec_mw_link *l, uv_loop_t *loop, const char *path,
			   const struct km_ipsec_plan *plan)
{
	memset(l, 0, sizeof(*l));
	if (strlen(path) >= sizeof(l->path)) {
		km_error("map writer socket path %s is too long", path);
		return -1;
	}
	snprintf(l->path, sizeof(l->path), "%s", path);
	l->loop = loop;
	l->plan = plan;
	l->backoff_ms = BACKOFF_MIN_MS;
	uv_timer_init(loop, &l->timer);
	l->timer.data = l;
	connect_now(l);
	return 0;
}

void km_ipsec_mw_link_changed(struct km_ipsec_mw_link *l)
{
	if (l->state == READY)
		sync_rows(l);
	else
		l->dirty = 1; /* after the batch in flight; a (re)connection diffs everything anyway */
}

int km_ipsec_mw_link_ready(const struct km_ipsec_mw_link *l)
{
	return l->state >= READY;
}

int km_ipsec_mw_link_turn_off(const char *path, int timeout_ms)
{
	struct km_sync_client cl;
	km_envelope req = KMESH__IPC__ENVELOPE__INIT, *rep = NULL;
	Kmesh__Ipc__IpsecDataplane d = KMESH__IPC__IPSEC_DATAPLANE__INIT;
	Kmesh__Ipc__Code code;
	char msg[256] = "";
	int rc;

	rc = km_sync_connect(&cl, path, KMESH__IPC__ROLE__ROLE_IPSEC, "kmesh-ipsec-agent",
			     timeout_ms, &code, msg, sizeof(msg));
	if (rc == 0) {
		req.body_case = KMESH__IPC__ENVELOPE__BODY_IPSEC_DATAPLANE;
		req.ipsec_dataplane = &d;
		rc = km_sync_call(&cl, &req, &rep);
		km_sync_close(&cl);
	}
	if (rc == 0 && rep->reply->code == KMESH__IPC__CODE__OK)
		km_info("map writer: IPsec off (%s)", rep->reply->message);
	else
		km_error("the map writer at %s did not turn IPsec off: %s%s%s", path,
			 rc ? strerror(-rc) : rep->reply->message, *msg ? ": " : "", msg);
	rc = rc == 0 && rep->reply->code == KMESH__IPC__CODE__OK ? 0 : -1;
	km_msg_free(rep);
	return rc;
}

void km_ipsec_mw_link_stop(struct km_ipsec_mw_link *l)
{
	if (!l->loop)
		return;
	l->stopping = 1;
	uv_close((uv_handle_t *)&l->timer, NULL);
	if (l->conn_open)
		km_conn_close(&l->conn, NULL);
	free(l->held);
	free(l->sent);
	l->held = l->sent = NULL;
	l->loop = NULL;
}
