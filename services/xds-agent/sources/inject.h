/* inject.h — kmeshctl inject: an event for the xDS agent, as JSON, applied exactly as istiod's
 * Delta xDS responses are. The event becomes one Address response and one Authorization response
 * (each only if it has something in it), packed as istiod would send them and applied through
 * xds_apply.h: each resource validated on its own, a bad one refused with its previous version
 * kept, the others applied. Applied resources carry the version "kmeshctl-inject", so a
 * reconnect to istiod makes it send its own version again.
 *
 * The event:
 *   {"resources": [{"service": {...}} | {"workload": {...}} | {"authorization": {...}}, ...],
 *    "removedResources": ["<ns>/<hostname>" | "<workload uid>", ...],
 *    "removedPolicies": ["<ns>/<name>", ...]}
 * every key optional (so an embedded-config file is an event too); nothing else allowed. */
#ifndef KM_XDS_INJECT_H
#define KM_XDS_INJECT_H

#include <stddef.h>

#include "services/xds-agent/model/model.h"
#include "services/xds-agent/authz/policy_store.h"

#define KM_INJECT_VERSION "kmeshctl-inject"
#define KM_INJECT_MAX_ITEMS 100000 /* resources plus removals in one event */

struct km_inject_result {
	size_t applied, rejected, removed;
	char message[1536]; /* a summary, then the first rejections */
};

/* Returns 0 when the event was applied (some resources may have been refused: see rejected), or
 * -1 when it could not be read at all (message says why; nothing changed). Table ops are left in
 * the model's op list for the caller to send. */
int km_inject_apply(struct km_model *m, struct km_policy_store *ps, const char *json, size_t len,
		    struct km_inject_result *r);

#endif
