/* authz_metrics.h — denials and allows on the metrics page: the map writer's per-policy decision
 * counters (km_authz_stats), asked for when the page is scraped and shown at the next scrape
 * (no timer, no traffic while nobody scrapes). Series are bounded: totals by decision, the
 * connections no policy decided, and per policy (its name and action) for at most
 * KM_AUTHZ_METRICS_POLICIES policies that decided anything; the rest are counted together.
 * Denials also by destination workload and policy: authz_denials.h. */
#ifndef KM_XDS_AUTHZ_METRICS_H
#define KM_XDS_AUTHZ_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "services/xds-agent/authz/authz_compile.h"
#include "services/xds-agent/model/model.h"
#include "services/xds-agent/telemetry/authz_denials.h"
#include "services/xds-agent/transport/writer_link.h"
#include "shared/prom.h"

#define KM_AUTHZ_METRICS_POLICIES 256
#define KM_AUTHZ_METRICS_MAX_AGE_US 2000000 /* older counters are asked for again */

struct km_authz_tally {
	uint32_t stat_id;
	uint64_t allowed, denied;
};

struct km_authz_metrics {
	struct km_writer_link *link;
	const struct km_authz *authz;
	const struct km_model *model; /* names the denials' workloads */
	struct km_authz_tally *rows; /* sorted by stat id */
	size_t n;
	struct km_authz_denials denials;
	uint64_t asked_us, answered_us; /* monotonic */
	int in_flight;
	uint64_t refreshes;
};

void km_authz_metrics_init(struct km_authz_metrics *m, struct km_writer_link *link,
			   const struct km_authz *authz, const struct km_model *model);
/* Ask the map writer for the counters if the last answer is older than the max age. */
void km_authz_metrics_refresh(struct km_authz_metrics *m, uint64_t now_us);
/* The series, from the last answer (none before the first). */
void km_authz_metrics_render(const struct km_authz_metrics *m, struct km_prom *p);
void km_authz_metrics_free(struct km_authz_metrics *m);
/* Take a dump reply's rows (tests call it directly). */
void km_authz_metrics_take(struct km_authz_metrics *m, const Kmesh__Ipc__DumpReply *reply,
			   uint64_t now_us);

#endif
