/* events.h — what the programs report, read from their ring buffers on the loop thread (libbpf's
 * epoll fd, polled by libuv):
 *   - connection reports (km_conn_events; read every KM_CONN_EVENTS_POLL_MS, and when the
 *     programs wake the reader as the ring fills) streamed to the sessions that subscribed, as ConnEvents
 *     messages with request_id 0, up to KM_EVENTS_BATCH per message. A subscriber whose unsent
 *     data exceeds KM_EVENTS_QUEUE_MAX loses reports rather than grow the map writer's memory;
 *     the count lost goes in its next message, so the loss is never silent.
 *   - open connections' counters so far (conn_progress.c), streamed the same way;
 *   - BPF log lines (km_bpf_log), logged as "bpf: ..." whatever this process's own level (the
 *     BPF log level chose them). */
#ifndef KM_MW_EVENTS_H
#define KM_MW_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "ipc/server.h"
#include "kmesh_maps.h"
#include "services/map-writer/cookie_set.h"
#include "services/map-writer/dial_cache.h"

#define KM_EVENTS_BATCH 256
#define KM_EVENTS_QUEUE_MAX (4u << 20)
#define KM_EVENTS_MAX_SUBSCRIBERS 8
/* closes read during one pass over open connections that are remembered (past half of it, that
 * pass's reports are dropped: their connections are counted at close or by the next pass) */
#define KM_EVENTS_CLOSED_IN_PASS 65536

struct ring_buffer;
struct km_mw_event_slot;

struct km_mw_events {
	uv_loop_t *loop;
	struct km_ipc_server *srv;
	struct ring_buffer *rb;
	uv_poll_t poll;
	uv_timer_t timer; /* reads every KM_CONN_EVENTS_POLL_MS: the programs wake the reader rarely */
	int polling, timing;
	int fd_drops;
	struct {
		uint64_t serial; /* the session */
		uint64_t lost;   /* reports it has not been told about yet */
		int opens;       /* it wants open reports (Subscribe.opens) */
	} subs[KM_EVENTS_MAX_SUBSCRIBERS];
	size_t n_subs;
	struct km_mw_event_slot *batch; /* KM_EVENTS_BATCH */
	size_t n_batch;
	struct km_dial_cache dials_pending; /* original destinations until their first report */
	struct km_cookie_set closed_in_pass; /* closes read while a pass is under way */
	int in_pass;
	uint64_t progress_after_close; /* a pass's reports of connections closed meanwhile: dropped */
	uint64_t dials;                     /* connect-time reports read (joined, not streamed) */
	uint64_t conn_reports, log_records; /* read */
	uint64_t lost_slow;                 /* reports some subscriber did not get */
};

/* Start reading (fds owned by the dataplane). Returns 0, or a negative errno (logged). */
int km_mw_events_start(struct km_mw_events *ev, uv_loop_t *loop, struct km_ipc_server *srv,
		       int fd_conn_events, int fd_bpf_log, int fd_drops);
/* This session gets the connection reports from now on, with open reports if it asks (a session
 * subscribed already only changes that). Returns 0, or -1 with err filled. */
int km_mw_events_subscribe(struct km_mw_events *ev, struct km_ipc_session *s, int opens, char *err,
			   size_t errlen);
/* Does a connected subscriber (other than except_serial, one that is leaving) want open reports? */
int km_mw_events_opens_wanted(struct km_mw_events *ev, uint64_t except_serial);
/* Subscribers still connected. */
size_t km_mw_events_subscribers(struct km_mw_events *ev);
/* Read the ring buffers now and send what they held. */
void km_mw_events_read(struct km_mw_events *ev);
/* A pass over open connections (conn_progress.c) starts: closes read from now are remembered until
 * km_mw_events_pass_end, so that km_mw_events_progress never sends a connection's counters after
 * its close. */
void km_mw_events_pass_begin(struct km_mw_events *ev);
/* Queue an open connection's counters so far as a KM_CONN_PROGRESS report (dropped when its close
 * was read since the pass began); km_mw_events_flush sends what is queued. */
void km_mw_events_progress(struct km_mw_events *ev, const struct km_conn_close *c);
void km_mw_events_pass_end(struct km_mw_events *ev);
void km_mw_events_flush(struct km_mw_events *ev);
/* Reports lost so far: the programs' (ring buffer full) plus slow subscribers'. */
void km_mw_events_lost(const struct km_mw_events *ev, uint64_t *conn, uint64_t *log);
void km_mw_events_stop(struct km_mw_events *ev);

#endif
