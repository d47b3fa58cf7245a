/* dump_queue.h — table dumps off the map writer's loop (issue 47): a page of rows is read and
 * packed on libuv's thread pool while the loop goes on serving every other request, so an
 * enrollment (a pod waiting to start) never waits for a dump, however large the table.
 *
 * One page at a time for the whole process, in the order asked: a peer's dump waits behind the
 * others' pages, not beside them. The asking session is held (km_conn_hold: nothing more is read
 * from it) until its reply is sent, so its replies keep the order of its requests and one peer
 * has at most one dump queued; a peer pipelining forty dumps gets them one after another, each
 * behind whatever the others asked meanwhile.
 *
 * Bounded: one page in memory at a time, as its packed bytes (at most 100,000 rows, and a page
 * ends early rather than outgrow the asker's frames: dump.c), and at most one waiting dump per
 * session (the server's connection limit). Stopping cancels the page being read within 1,024
 * rows.
 *
 * Only the tables read from BPF alone go through here; TABLE_AUTHZ_STATS joins rows the loop
 * keeps (authz_denials.c) and is answered on the loop, as before (it is small). */
#ifndef KM_MW_DUMP_QUEUE_H
#define KM_MW_DUMP_QUEUE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "ipc/server.h"
#include "services/map-writer/tables.h"

struct km_dump_job;

struct km_dump_queue {
	uv_loop_t *loop;
	struct km_tables *tables;
	struct km_ipc_server *server;
	struct km_dump_job *running;     /* on the thread pool */
	struct km_dump_job *head, *tail; /* waiting, oldest first */
	size_t waiting;
	int cancel; /* read by the running page (atomically): stop early */
	int stopping;
	void (*on_stopped)(struct km_dump_queue *q);
	/* for metrics and dumps */
	uint64_t pages, rows, failed;
	uint64_t busy_us; /* time pages spent on the thread pool */
};

void km_dump_queue_init(struct km_dump_queue *q, uv_loop_t *loop, struct km_tables *t,
			struct km_ipc_server *srv);
/* env is a Dump request of session s for any table but TABLE_AUTHZ_STATS: its page is read
 * when its turn comes and the reply (with a copy of stats) sent then. Holds s until then. */
void km_dump_queue_submit(struct km_dump_queue *q, struct km_ipc_session *s,
			  const km_envelope *env, const Kmesh__Ipc__TableStats *stats);
/* Forget the waiting dumps (their sessions are closing) and cancel the running page; cb (may be
 * NULL) runs once the thread pool has given it back, at once when none runs. */
void km_dump_queue_stop(struct km_dump_queue *q, void (*cb)(struct km_dump_queue *q));

#endif
