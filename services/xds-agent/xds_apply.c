/* xds_apply.c — one Delta xDS response into the model or the policy store (see xds_apply.h). */
#include "services/xds-agent/xds_apply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/resource_pb.h"
#include "shared/log.h"

static void reject(struct km_xds_result *res, const char *name, const char *why)
{
	size_t used = strlen(res->error);

	res->rejected++;
	km_warn("xds: rejected %s: %s (keeping its previous version)", name ? name : "a resource", why);
	if (used < sizeof(res->error) - 1)
		snprintf(res->error + used, sizeof(res->error) - used, "%s%s: %s", used ? "; " : "",
			 name ? name : "?", why);
}

/* The payload of a resource, if it is of the expected type. */
static const ProtobufCBinaryData *payload(const Kmesh__Xds__Resource *r, const char *type,
					  const char **why)
{
	if (!r->resource) {
		*why = "resource without a payload";
		return NULL;
	}
	if (strcmp(r->resource->type_url, type) != 0) {
		*why = "payload type does not match the response type";
		return NULL;
	}
	return &r->resource->value;
}

void km_xds_apply_address(struct km_model *m, const Kmesh__Xds__DeltaDiscoveryResponse *r,
			  uint8_t *accepted, struct km_xds_result *res)
{
	memset(res, 0, sizeof(*res));
	for (size_t i = 0; i < r->n_resources; i++) {
		const char *why = NULL;
		const ProtobufCBinaryData *p = payload(r->resources[i], KM_TYPE_ADDRESS, &why);
		struct km_service_res *svc;
		struct km_workload_res *wl;
		char *name = NULL, err[256];

		accepted[i] = 0;
		if (!p) {
			reject(res, r->resources[i]->name, why);
			continue;
		}
		if (km_pb_address(p->data, p->len, &svc, &wl, &name, err, sizeof(err)) != 0) {
			reject(res, name ? name : r->resources[i]->name, err);
			free(name);
			continue;
		}
		if (r->resources[i]->name && *r->resources[i]->name &&
		    strcmp(r->resources[i]->name, name) != 0) {
			snprintf(err, sizeof(err), "resource name does not match its payload (%.100s)", name);
			reject(res, r->resources[i]->name, err);
			km_service_res_free(svc);
			km_workload_res_free(wl);
			free(name);
			continue;
		}
		if (svc)
			km_model_upsert_service(m, svc);
		else
			km_model_upsert_workload(m, wl);
		accepted[i] = 1;
		res->applied++;
		free(name);
	}
	/* A removed name is a workload uid or a service "<ns>/<hostname>"; look it up rather than
	 * guess from its shape. Names never sent are ignored. */
	for (size_t i = 0; i < r->n_removed_resources; i++) {
		const char *name = r->removed_resources[i];

		if (km_model_find_workload(m, name)) {
			km_model_remove_workload(m, name);
			res->removed++;
		} else if (km_model_find_service(m, name)) {
			km_model_remove_service(m, name);
			res->removed++;
		}
	}
	km_model_flush(m);
}

void km_xds_apply_authorization(struct km_policy_store *ps, const Kmesh__Xds__DeltaDiscoveryResponse *r,
				uint8_t *accepted, struct km_xds_result *res)
{
	memset(res, 0, sizeof(*res));
	for (size_t i = 0; i < r->n_resources; i++) {
		const char *why = NULL;
		const ProtobufCBinaryData *p = payload(r->resources[i], KM_TYPE_AUTHORIZATION, &why);
		char *name = NULL, err[256];

		accepted[i] = 0;
		if (!p) {
			reject(res, r->resources[i]->name, why);
			continue;
		}
		if (km_policy_store_put(ps, p->data, p->len, &name, err, sizeof(err)) != 0) {
			reject(res, name ? name : r->resources[i]->name, err);
			free(name);
			continue;
		}
		accepted[i] = 1;
		res->applied++;
		free(name);
	}
	for (size_t i = 0; i < r->n_removed_resources; i++)
		res->removed += (size_t)km_policy_store_remove(ps, r->removed_resources[i]);
}
