/* hostname_resolver.h — workloads istiod names by hostname and no address (a ServiceEntry with
 * resolution DNS): their names resolved on the agent's loop with c-ares (no call ever blocks the
 * loop, so xDS processing never waits for DNS), A and AAAA, every address kept on the workload
 * (at most KM_RES_MAX_ADDRESSES). An answer is refreshed before its TTL runs out (at 90% of the
 * smallest TTL, at least every KM_HOSTNAME_MIN_REFRESH_S and at most every
 * KM_HOSTNAME_MAX_REFRESH_S); a failed resolution keeps the last good addresses and tries again
 * after KM_HOSTNAME_RETRY_S. The model asks it through km_model_watch_hostnames: a workload
 * that arrives without addresses gets the last good ones at once; when an answer changes, the
 * workload is put again with the new addresses and on_change is called (the agent sends the
 * table operations). At most KM_HOSTNAME_MAX workloads are resolved; the rest are logged and
 * counted. */
#ifndef KM_XDS_HOSTNAME_RESOLVER_H
#define KM_XDS_HOSTNAME_RESOLVER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "services/xds-agent/model/model.h"

#define KM_HOSTNAME_MIN_REFRESH_S 1
#define KM_HOSTNAME_MAX_REFRESH_S 3600
#define KM_HOSTNAME_RETRY_S 5
#define KM_HOSTNAME_MAX 65536

struct hn_entry;
struct hn_poll;

struct km_hostname_resolver {
	uv_loop_t *loop;
	struct km_model *model;
	void *channel; /* ares_channel */
	uv_timer_t tick;
	struct hn_entry *entries; /* by workload uid */
	size_t n;
	struct hn_poll *polls;    /* c-ares's sockets */
	void (*on_change)(void *arg);
	void *arg;
	int started;
	/* counts, for metrics */
	uint64_t resolutions, failures, changes, over_limit;
};

/* Resolve with the system's resolver configuration, or with server "IP[:PORT]" when given. Also
 * registers with the model. Returns 0, or -1 with err filled. */
int km_hostname_resolver_start(struct km_hostname_resolver *r, uv_loop_t *loop,
			       struct km_model *m, const char *server,
			       void (*on_change)(void *arg), void *arg, char *err, size_t errlen);
void km_hostname_resolver_stop(struct km_hostname_resolver *r);

#endif
