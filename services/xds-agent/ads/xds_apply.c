/* xds_apply.c — one Delta xDS response into the model or the policy store (see xds_apply.h). */
#include "services/xds-agent/ads/xds_apply.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/authz/authz_compile.h"
#include "services/xds-agent/ads/resource_pb.h"
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

/* Removed names that cannot name anything (empty, or over KM_XDS_NAME_MAX): ignored, and the
 * response NACKed saying how many. */
static void reject_removals(struct km_xds_result *res, size_t n)
{
	char why[96];

	snprintf(why, sizeof(why), "%zu removed name(s) empty or over %u bytes, ignored", n,
		 KM_XDS_NAME_MAX);
	reject(res, "removed_resources", why);
	res->rejected += n - 1;
}

/* A rejected resource keeps its previous version: istiod still has it. */
static void keep_address(struct km_model *m, struct km_xds_result *res, const char *name)
{
	if (name && *name)
		km_model_confirm(m, name);
	else
		res->unnamed++;
}

static void keep_policy(struct km_policy_store *ps, struct km_xds_result *res, const char *name)
{
	if (name && *name)
		km_policy_store_confirm(ps, name);
	else
		res->unnamed++;
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

int km_xds_apply_address_some(struct km_model *m, struct km_response_view *v, size_t max,
			      km_xds_accepted_cb cb, void *arg, struct km_xds_result *res)
{
	Kmesh__Xds__Resource *r;

	for (size_t done = 0; done < max; done++) {
		int got = km_response_view_next(v, &r);

		if (got != 1)
			return got == KM_VIEW_WAIT ? KM_XDS_APPLY_WAIT : KM_XDS_APPLY_DONE;
		const char *why = NULL;
		const ProtobufCBinaryData *p = r ? payload(r, KM_TYPE_ADDRESS, &why) : NULL;
		struct km_service_res *svc;
		struct km_workload_res *wl;
		char *name = NULL, err[256];

		if (!r) {
			reject(res, NULL, "not a valid Resource message");
			res->unnamed++;
			continue;
		}
		if (!p) {
			reject(res, r->name, why);
			keep_address(m, res, r->name);
		} else if (km_pb_address(km_response_view_allocator(v), p->data, p->len, &svc, &wl,
					 &name, err, sizeof(err)) != 0) {
			reject(res, name ? name : r->name, err);
			keep_address(m, res, name ? name : r->name);
		} else if (r->name && *r->name && strcmp(r->name, name) != 0) {
			snprintf(err, sizeof(err), "resource name does not match its payload (%.100s)", name);
			reject(res, r->name, err);
			keep_address(m, res, r->name);
			km_service_res_free(svc);
			km_workload_res_free(wl);
		} else {
			if (svc)
				km_model_upsert_service(m, svc);
			else
				km_model_upsert_workload(m, wl);
			res->applied++;
			if (cb)
				cb(arg, name, r->version);
		}
		/* r and name are the view's scratch block's, gone at the next resource */
	}
	return v->next_off < v->scanned || v->scanned < v->total ? KM_XDS_APPLY_MORE
								  : KM_XDS_APPLY_DONE;
}

void km_xds_apply_address_end(struct km_model *m, struct km_response_view *v,
			      struct km_xds_result *res)
{
	/* A removed name is a workload uid or a service "<ns>/<hostname>"; look it up rather than
	 * guess from its shape. Names never sent are ignored. */
	char name[KM_XDS_NAME_MAX + 1];
	size_t skipped = 0;

	while (km_response_view_next_removed(v, name, &skipped)) {
		if (km_model_find_workload(m, name)) {
			km_model_remove_workload(m, name);
			res->removed++;
		} else if (km_model_find_service(m, name)) {
			km_model_remove_service(m, name);
			res->removed++;
		}
	}
	if (skipped) /* one line for all: there may be millions */
		reject_removals(res, skipped);
	km_model_flush(m);
}

void km_xds_apply_address(struct km_model *m, struct km_response_view *v, km_xds_accepted_cb cb,
			  void *arg, struct km_xds_result *res)
{
	memset(res, 0, sizeof(*res));
	km_xds_apply_address_some(m, v, SIZE_MAX, cb, arg, res);
	km_xds_apply_address_end(m, v, res);
}

void km_xds_apply_authorization(struct km_policy_store *ps, struct km_response_view *v,
				km_xds_accepted_cb cb, void *arg, struct km_xds_result *res)
{
	Kmesh__Xds__Resource *r;

	memset(res, 0, sizeof(*res));
	while (km_response_view_next(v, &r) == 1) { /* a whole message: never KM_VIEW_WAIT */
		const char *why = NULL;
		const ProtobufCBinaryData *p = r ? payload(r, KM_TYPE_AUTHORIZATION, &why) : NULL;
		char *name = NULL, err[256];

		if (!r) {
			reject(res, NULL, "not a valid Resource message");
			res->unnamed++;
			continue;
		}
		if (!p) {
			reject(res, r->name, why);
			keep_policy(ps, res, r->name);
		} else if (km_policy_store_put(ps, p->data, p->len, &name, err, sizeof(err)) != 0) {
			reject(res, name ? name : r->name, err);
			keep_policy(ps, res, name ? name : r->name);
		} else {
			res->applied++;
			if (cb)
				cb(arg, r->name && *r->name ? r->name : name, r->version);
		}
		free(name); /* r is the view's */
	}
	{
		char rname[KM_XDS_NAME_MAX + 1];
		size_t skipped = 0;

		while (km_response_view_next_removed(v, rname, &skipped))
			res->removed += (size_t)km_policy_store_remove(ps, rname);
		if (skipped)
			reject_removals(res, skipped);
	}
	if (ps->authz) {
		km_authz_flush(ps->authz);
		km_oplist_settle(ps->authz->out);
	}
}
