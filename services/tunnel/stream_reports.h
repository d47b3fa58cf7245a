/* stream_reports.h — the HBONE streams' reports for Istio's metrics and the access log: the
 * tunnel tells the xDS agent (ConnEvents on its link, role tunnel) when a stream it relays to an
 * application opens and closes (with its bytes, its client's principal and baggage), and the
 * agent counts them with the kernel's own reports (services/xds-agent/telemetry/telemetry.h).
 * Batched: sent every KM_REPORTS_FLUSH_MS, or at once when KM_REPORTS_BATCH wait. Bounded: at
 * most KM_REPORTS_MAX wait (while the agent is away, or slow); more are counted lost, and the
 * count goes with the next batch so that the agent says its metrics undercount. */
#ifndef KM_TUNNEL_STREAM_REPORTS_H
#define KM_TUNNEL_STREAM_REPORTS_H

#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "ipc/peer_link.h"

#define KM_REPORTS_FLUSH_MS 200
/* A batch is packed and sent on the loop between streams' events: 512 at once held the streams
 * behind it ~1 ms (bench/hbone.sh setup p99 1.3x nghttpx's); 64 spreads the same work. */
#define KM_REPORTS_BATCH 64
#define KM_REPORTS_MAX 8192

struct sr_report;

struct km_stream_reports {
	struct km_peer_link *link; /* NULL: reports are not kept */
	uv_timer_t timer;
	struct sr_report *q;
	size_t n, cap;
	uint64_t lost, lost_unsaid; /* all, and not yet told to the agent */
	uint64_t sent;
	int stopping;
};

/* Start (link NULL: every report is dropped, uncounted: there is no agent to count them). */
void km_stream_reports_start(struct km_stream_reports *r, uv_loop_t *loop,
			     struct km_peer_link *link);
/* One stream's report. */
struct km_stream_report {
	unsigned kind;      /* KM_CONN_OPEN, KM_CONN_PROGRESS or KM_CONN_CLOSE */
	unsigned direction; /* KM_CONN_INBOUND (the pod is the server: HBONE inbound) or
			     * KM_CONN_OUTBOUND (the pod is the client: HBONE outbound) */
	const struct sockaddr_storage *client, *server;
	const struct sockaddr_storage *orig; /* outbound: what the application asked (NULL: none) */
	uint64_t cookie;    /* pairs the reports of one stream */
	uint64_t client_bytes, server_bytes; /* sent so far by each */
	const char *principal; /* the client's, "<td>/ns/<ns>/sa/<sa>" */
	const char *baggage;   /* the request's, or NULL */
};

/* One stream opened, still open (its bytes so far) or closed. */
void km_stream_reports_add(struct km_stream_reports *r, const struct km_stream_report *rep);
/* Send what waits, if the link is up. */
void km_stream_reports_flush(struct km_stream_reports *r);
/* Drop what waits, close the timer. */
void km_stream_reports_stop(struct km_stream_reports *r);

#endif
