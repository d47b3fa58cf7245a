/* xds_apply.h — applying one DeltaDiscoveryResponse to the agent's state: every resource of an
 * Address response decoded and validated on its own (a bad one is reported and its previous
 * version kept, the good ones applied), removals by name, then one model flush; Authorization
 * responses likewise into the policy store. The caller ACKs or NACKs from the result. */
#ifndef KM_XDS_XDS_APPLY_H
#define KM_XDS_XDS_APPLY_H

#include <stddef.h>
#include <stdint.h>

#include "services/xds-agent/model/model.h"
#include "services/xds-agent/authz/policy_store.h"
#include "services/xds-agent/ads/response_view.h"

#define KM_TYPE_ADDRESS "type.googleapis.com/istio.workload.Address"
#define KM_TYPE_AUTHORIZATION "type.googleapis.com/istio.security.Authorization"

struct km_xds_result {
	size_t applied;  /* resources accepted */
	size_t rejected; /* resources refused (previous version kept) */
	size_t removed;  /* names removed that were known */
	size_t unnamed;  /* rejected resources whose name could not be read */
	char error[1024]; /* the first rejections, for error_detail and the log */
};

/* A rejected resource whose name is known is confirmed in the model or the store (istiod still
 * has it: a sweep must not remove it, see km_model_mark_unconfirmed); one without is counted in
 * unnamed. */
/* Called for each resource applied, with its name and version (the caller records it). */
typedef void (*km_xds_accepted_cb)(void *arg, const char *name, const char *version);

void km_xds_apply_address(struct km_model *m, struct km_response_view *v, km_xds_accepted_cb cb,
			  void *arg, struct km_xds_result *res);
/* The same in steps, so a large response does not hold the event loop, and from a response still
 * arriving (km_response_view_begin): zero res, call km_xds_apply_address_some (at most max
 * resources each) until it returns KM_XDS_APPLY_DONE (KM_XDS_APPLY_WAIT: the next resource has
 * not arrived yet; call again once the view has grown), then, with the view complete,
 * km_xds_apply_address_end (removals and the flush). Ops emitted in between are final. */
enum { KM_XDS_APPLY_DONE = 0, KM_XDS_APPLY_MORE = 1, KM_XDS_APPLY_WAIT = 2 };
int km_xds_apply_address_some(struct km_model *m, struct km_response_view *v, size_t max,
			      km_xds_accepted_cb cb, void *arg, struct km_xds_result *res);
void km_xds_apply_address_end(struct km_model *m, struct km_response_view *v,
			      struct km_xds_result *res);
void km_xds_apply_authorization(struct km_policy_store *ps, struct km_response_view *v,
				km_xds_accepted_cb cb, void *arg, struct km_xds_result *res);

#endif
