/* telemetry.h — Istio's TCP metrics and the access log, from the map writer's connection reports
 * (ConnEvents; bpf/lib/conn_events.h) and the tunnel's reports of the HBONE streams it relays to
 * the node's pods (the kernel does not report a pod's loopback connections, the tunnel's to the
 * application among them). Each report is named through the model's address indexes:
 *   - the client and server workloads by address;
 *   - the destination service by the VIP the application asked for (outbound, rewritten), else
 *     the server workload's service whose target port is the port connected to, else its first.
 * Series carry Istio's CommonTrafficLabels in Istio's order, values Istio's (missing: "unknown");
 * reporter is source for a pod's outbound connections and destination for its inbound ones.
 * An HBONE stream carries its client's principal (its certificate's): source_principal is that,
 * connection_security_policy is mutual_tls, and the source's labels are the workload's at the
 * client's address if it has that principal, else the stream's `baggage` (baggage.h) when its
 * namespace is the certificate's; the access log adds src.identity and dst.identity.
 * opened counts at establishment, closed at close, and the byte counters (sent: the response,
 * server to client; received: the request) as they grow: an open connection's reports
 * (KM_CONN_PROGRESS, every --conn-report-interval of the map writer) add what it moved since the
 * last, its close the rest; all with the labels the connection was opened with.
 * Series of a workload gone from the model are removed KM_TELEMETRY_GONE_TTL_S after it went.
 * Both tables are bounded: series beyond KM_TELEMETRY_MAX_SERIES are counted, not kept; past
 * KM_TELEMETRY_MAX_OPEN open connections the oldest is forgotten (its close lost, most likely). The access log (off by default) is one line per
 * open and per close on out, text or JSON. */
#ifndef KM_XDS_TELEMETRY_H
#define KM_XDS_TELEMETRY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ipc/message.h"
#include "services/xds-agent/model/model.h"
#include "shared/prom.h"

#define KM_TELEMETRY_MAX_SERIES 20000
#define KM_TELEMETRY_MAX_OPEN 262144

/* Who sent a batch: the map writer (the kernel's reports) or the tunnel (HBONE streams). */
enum km_conn_origin {
	KM_CONN_FROM_KERNEL = 0,
	KM_CONN_FROM_TUNNEL = 1,
};

enum km_access_log_format {
	KM_ACCESS_LOG_TEXT = 0,
	KM_ACCESS_LOG_JSON = 1,
};

struct tm_series;
struct tm_open;

struct km_telemetry {
	struct km_model *model; /* its address indexes are turned on by init */
	struct tm_series *series;
	size_t n_series;
	struct tm_open *open;
	size_t n_open;
	int access_log;
	enum km_access_log_format format;
	FILE *out;
	uint64_t reports, lost, series_dropped, open_dropped, closes_unmatched, log_lines;
	uint64_t progress, progress_unmatched; /* open connections' reports; of ones not known open */
	uint64_t series_expired;
};

/* Returns 0, or -1 when the address indexes could not be built (out of memory). */
int km_telemetry_init(struct km_telemetry *t, struct km_model *m, FILE *out);
void km_telemetry_events(struct km_telemetry *t, const Kmesh__Ipc__ConnEvents *batch,
			 enum km_conn_origin origin);
/* A new connection to the map writer, or the tunnel's gone: reports from it may have been lost
 * meanwhile, so the connections it reported open are forgotten (their closes then count as
 * unmatched). */
void km_telemetry_forget_open(struct km_telemetry *t, enum km_conn_origin origin);
/* Remove the series that name a workload gone from the model for ttl_s seconds or more (first
 * seen gone by an earlier call), unless a connection counted into it is still open: the last
 * values stay scrapeable for ttl_s, and series of workloads that are gone do not pile up.
 * Returns how many went. Call it periodically (now_s: a monotonic clock in seconds). */
size_t km_telemetry_expire(struct km_telemetry *t, uint64_t now_s, uint64_t ttl_s);
#define KM_TELEMETRY_GONE_TTL_S 300
#define KM_TELEMETRY_EXPIRE_EVERY_S 30
/* The TCP metrics and telemetry's own counters. */
void km_telemetry_render(const struct km_telemetry *t, struct km_prom *p);
/* "text" or "json"; returns 0, or -1 for another name. */
int km_access_log_format_parse(const char *name, enum km_access_log_format *out);
const char *km_access_log_format_name(enum km_access_log_format f);
void km_telemetry_free(struct km_telemetry *t);

#endif
