/* dump_queue.c — table dumps off the loop (see dump_queue.h). */
#include "services/map-writer/dump_queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/pb_wire.h"
#include "shared/log.h"

struct km_dump_job {
	uv_work_t work; /* first member: the request is the job */
	struct km_dump_queue *q;
	struct km_dump_job *next;
	uint64_t serial, request_id;
	pid_t pid;
	Kmesh__Ipc__Table table;
	uint32_t max_rows;
	uint8_t *after;
	size_t after_len;
	Kmesh__Ipc__TableStats stats;
	size_t max_bytes; /* the rows of a page fit the asker's frames */
	/* the worker's results */
	uint8_t *packed;  /* the allocation; NULL: out of memory */
	uint8_t *payload; /* the reply envelope, in it */
	size_t payload_len, rows;
	Kmesh__Ipc__Code code;
	uint64_t took_us;
	char err[256];
};

void km_dump_queue_init(struct km_dump_queue *q, uv_loop_t *loop, struct km_tables *t,
			struct km_ipc_server *srv)
{
	memset(q, 0, sizeof(*q));
	q->loop = loop;
	q->tables = t;
	q->server = srv;
}

static void job_free(struct km_dump_job *j)
{
	free(j->after);
	free(j->packed);
	free(j);
}

#define HEADROOM 64 /* the envelope and reply around a page: at most 31 bytes */

static uint32_t field_id(const ProtobufCMessageDescriptor *d, const char *name)
{
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);

	return f ? f->id : 0;
}

/* The Envelope{request_id, Reply{OK, dump}} around the DumpReply's len bytes that start
 * HEADROOM bytes into buf, written just before them. Returns where the envelope starts. */
static uint8_t *wrap(uint8_t *buf, size_t len, uint64_t request_id, size_t *out_len)
{
	km_envelope env = KMESH__IPC__ENVELOPE__INIT;
	Kmesh__Ipc__Reply reply = KMESH__IPC__REPLY__INIT;
	uint8_t rhead[32], ehead[32], *start;
	size_t rh, eh;

	reply.code = KMESH__IPC__CODE__OK;
	rh = kmesh__ipc__reply__pack(&reply, rhead); /* no body: the dump follows */
	rh += km_pbw_put_varint(rhead + rh,
				KM_PBW_TAG_LEN(field_id(&kmesh__ipc__reply__descriptor, "dump")));
	rh += km_pbw_put_varint(rhead + rh, len);
	env.request_id = request_id;
	eh = kmesh__ipc__envelope__pack(&env, ehead);
	eh += km_pbw_put_varint(ehead + eh,
				KM_PBW_TAG_LEN(field_id(&kmesh__ipc__envelope__descriptor, "reply")));
	eh += km_pbw_put_varint(ehead + eh, rh + len);
	start = buf + HEADROOM - rh - eh;
	memcpy(start, ehead, eh);
	memcpy(start + eh, rhead, rh);
	*out_len = eh + rh + len;
	return start;
}

/* On the thread pool: read the page and pack the whole reply. Touches nothing of the loop's
 * but the maps (km_tables_dump_pack) and q->cancel. */
static void work(uv_work_t *req)
{
	struct km_dump_job *j = (struct km_dump_job *)req;
	uint64_t t0 = uv_hrtime();
	uint8_t *buf;
	size_t len;

	j->code = km_tables_dump_pack(j->q->tables, j->table, j->max_rows, j->max_bytes, j->after,
				      j->after_len, &j->q->cancel, &j->stats, HEADROOM, &buf, &len,
				      &j->rows, j->err, sizeof(j->err));
	if (j->code == KMESH__IPC__CODE__OK) {
		j->packed = buf;
		j->payload = wrap(buf, len, j->request_id, &j->payload_len);
	} else {
		km_envelope out = KMESH__IPC__ENVELOPE__INIT;
		Kmesh__Ipc__Reply reply = KMESH__IPC__REPLY__INIT;

		reply.code = j->code;
		reply.message = j->err;
		out.request_id = j->request_id;
		out.body_case = KMESH__IPC__ENVELOPE__BODY_REPLY;
		out.reply = &reply;
		j->payload = j->packed = km_msg_pack(&out, &j->payload_len);
	}
	j->took_us = (uv_hrtime() - t0) / 1000;
}

static void after_work(uv_work_t *req, int status);

/* The oldest waiting dump whose session is still there goes to the thread pool. */
static void start_next(struct km_dump_queue *q)
{
	struct km_dump_job *j;

	while (!q->running && (j = q->head)) {
		q->head = j->next;
		if (!q->head)
			q->tail = NULL;
		q->waiting--;
		if (!km_ipc_server_session(q->server, j->serial)) {
			job_free(j); /* the asker left */
			continue;
		}
		if (uv_queue_work(q->loop, &j->work, work, after_work) != 0) {
			/* cannot happen with a valid loop and callbacks; answer rather than hang */
			struct km_ipc_session *s = km_ipc_server_session(q->server, j->serial);

			km_msg_reply(&s->conn, j->request_id, KMESH__IPC__CODE__INTERNAL,
				     "the dump could not be queued", 0);
			km_conn_release(&s->conn);
			job_free(j);
			continue;
		}
		q->running = j;
	}
}

static void after_work(uv_work_t *req, int status)
{
	struct km_dump_job *j = (struct km_dump_job *)req;
	struct km_dump_queue *q = j->q;
	struct km_ipc_session *s = km_ipc_server_session(q->server, j->serial);

	(void)status;
	q->running = NULL;
	q->pages++;
	q->rows += j->rows;
	q->busy_us += j->took_us;
	if (j->code != KMESH__IPC__CODE__OK)
		q->failed++;
	if (s && !q->stopping) {
		int err;

		if (!j->packed) {
			err = km_msg_reply(&s->conn, j->request_id, KMESH__IPC__CODE__INTERNAL,
					   "out of memory packing the dump", 0);
		} else if (j->code != KMESH__IPC__CODE__OK) {
			err = km_conn_send(&s->conn, j->payload, j->payload_len); /* a short error */
		} else {
			/* the page as the worker packed it, no copy on the loop: the connection's
			 * buffer from now on */
			err = km_conn_send_owned(&s->conn, j->packed, j->payload, j->payload_len);
			j->packed = NULL;
		}
		if (err) {
			/* every request gets one reply, or the asker waits forever */
			km_warn("dump reply to pid %d (%zu bytes) not sent", (int)j->pid, j->payload_len);
			km_msg_reply(&s->conn, j->request_id, KMESH__IPC__CODE__INTERNAL,
				     "the dump reply could not be sent", 0);
		}
		km_debug("dump of table %d for pid %d: %zu rows in %llu us", (int)j->table, (int)j->pid,
			 j->rows, (unsigned long long)j->took_us);
		km_conn_release(&s->conn); /* may submit its next dump at once: it queues */
	}
	job_free(j);
	if (q->stopping) {
		if (q->on_stopped)
			q->on_stopped(q);
		return;
	}
	start_next(q);
}

void km_dump_queue_submit(struct km_dump_queue *q, struct km_ipc_session *s,
			  const km_envelope *env, const Kmesh__Ipc__TableStats *stats)
{
	const Kmesh__Ipc__DumpRequest *d = env->dump;
	struct km_dump_job *j;

	if (q->stopping) {
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__INTERNAL,
			     "the map writer is stopping", 0);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j || (d->after.len && !(j->after = malloc(d->after.len)))) {
		free(j);
		km_msg_reply(&s->conn, env->request_id, KMESH__IPC__CODE__INTERNAL,
			     "out of memory queueing the dump", 0);
		return;
	}
	j->q = q;
	j->serial = s->serial;
	j->request_id = env->request_id;
	j->pid = s->pid;
	j->table = d->table;
	j->max_rows = d->max_rows;
	if (d->after.len)
		memcpy(j->after, d->after.data, d->after.len);
	j->after_len = d->after.len;
	j->stats = *stats;
	j->max_bytes = s->conn.max_send > HEADROOM ? s->conn.max_send - HEADROOM : 0;
	j->work.data = j;
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	q->waiting++;
	km_conn_hold(&s->conn); /* its next request waits for this reply */
	start_next(q);
}

void km_dump_queue_stop(struct km_dump_queue *q, void (*cb)(struct km_dump_queue *q))
{
	struct km_dump_job *j;

	while ((j = q->head)) {
		q->head = j->next;
		job_free(j);
	}
	q->tail = NULL;
	q->waiting = 0;
	q->stopping = 1;
	__atomic_store_n(&q->cancel, 1, __ATOMIC_RELAXED);
	q->on_stopped = cb;
	if (q->running)
		return; /* after_work calls cb */
	if (cb)
		cb(q);
}
