/* agent_metrics.h — the page the node's metrics endpoint serves (metrics_http.h): this agent's
 * own metrics (istiod connection, responses, ACKs and NACKs by type, the apply-latency
 * histogram, the map-writer link, the model's size), Istio's TCP metrics (telemetry.h), then
 * the other processes' metrics as they write them into the metrics directory (every regular
 * file *.prom there or in a subdirectory of it, at most KM_METRICS_FILES files of
 * KM_METRICS_FILE_MAX bytes each: the map writer, the IPsec agent, the tunnel, the CNI plugin's
 * counters; one not rewritten for KM_METRICS_FILE_STALE_S is left out, its writer gone). */
#ifndef KM_XDS_AGENT_METRICS_H
#define KM_XDS_AGENT_METRICS_H

#include <stddef.h>

#include "services/xds-agent/admin.h"
#include "services/xds-agent/telemetry/telemetry.h"

#define KM_METRICS_FILES 16
#define KM_METRICS_FILE_MAX (1u << 20)
#define KM_METRICS_FILE_STALE_S 120 /* a file not rewritten for this long is left out */

/* malloc'd text, or NULL when out of memory. metrics_dir may be NULL. */
char *km_agent_metrics(const struct km_agent_state *st, const struct km_telemetry *t,
		       const char *metrics_dir, size_t *len);

#endif
