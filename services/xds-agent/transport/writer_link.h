/* writer_link.h — the xDS agent's connection to the map writer: connects (and reconnects with
 * backoff), says hello as the xds role, and sends table operations as batches, a few in flight
 * (replies come back in order), in submission order. When the connection is (re)established the owner is asked to
 * replay its whole state; while it is down, submitted ops are dropped (the replay covers them). */
#ifndef KM_XDS_WRITER_LINK_H
#define KM_XDS_WRITER_LINK_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "ipc/conn.h"
#include "ipc/message.h"
#include "services/xds-agent/core/oplist.h"

struct km_batch;

/* The reply to a query, or NULL when the link dropped before it came. */
typedef void (*km_writer_link_reply_cb)(void *arg, const Kmesh__Ipc__Reply *reply);

struct km_writer_link_cbs {
	void (*on_ready)(void *arg);   /* hello accepted: replay everything now */
	void (*on_synced)(void *arg);  /* every submitted batch has been acknowledged */
	void (*on_refused)(void *arg); /* the map writer refused an op: state may differ */
	void (*on_progress)(void *arg); /* a batch was answered (ops_done moved) */
	/* optional: connection reports, once subscribed (a Subscribe sent with km_writer_link_query) */
	void (*on_conn_events)(void *arg, const Kmesh__Ipc__ConnEvents *events);
};

struct km_writer_link {
	uv_loop_t *loop;
	struct km_conn conn;
	uv_timer_t timer;
	uv_connect_t connect_req;
	char path[108];
	int state;
	int conn_open;
	int stopping;
	uint64_t next_id;
	uint64_t hello_id;
	uint64_t backoff_ms;
	size_t batch_ops;
	struct km_batch *head, *tail; /* oldest first; the first `inflight` are sent */
	struct km_batch *unsent;      /* first batch not sent yet */
	int inflight;
	struct km_writer_link_cbs cbs;
	void *arg;
	uint32_t features; /* the map writer's HelloReply features (Kmesh__Ipc__Feature bits) */
	uint64_t ops_acked, ops_refused, batches_sent;
	uint64_t ops_queued; /* ever queued; an op is done once answered (applied or refused) */
	uint64_t ops_done;
};

int km_writer_link_start(struct km_writer_link *l, uv_loop_t *loop, const char *path,
			 size_t batch_ops, const struct km_writer_link_cbs *cbs, void *arg);
int km_writer_link_ready(const struct km_writer_link *l);
/* Queue ops (copied, split into batches of at most batch_ops). Dropped if not ready. */
void km_writer_link_submit(struct km_writer_link *l, const struct km_oplist *ops);
/* Queue a Sync BEGIN (end == 0) or END, in order with the batches: after BEGIN the map writer
 * marks the rows written; END removes the routing rows not written since (see kmesh_ipc.proto).
 * Dropped if not ready (the next connection begins again). */
void km_writer_link_sync(struct km_writer_link *l, int end);
/* Send a request (a dump) in order with the batches; its request_id is set here. Returns 0, and
 * cb is then called exactly once, or -ENOTCONN / -ENOMEM (cb is not called). */
int km_writer_link_query(struct km_writer_link *l, km_envelope *req, km_writer_link_reply_cb cb,
			 void *arg);
/* Close everything; the loop ends once the handles are closed. */
void km_writer_link_stop(struct km_writer_link *l);

#endif
