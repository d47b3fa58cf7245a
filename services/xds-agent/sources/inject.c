/* inject.c — an injected event turned into Delta xDS responses and applied (see inject.h). */
#include "services/xds-agent/sources/inject.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "services/xds-agent/sources/json_pb.h"
#include "services/xds-agent/sources/policy_json.h"
#include "services/xds-agent/sources/resource_json.h"
#include "services/xds-agent/ads/response_view.h"
#include "services/xds-agent/ads/xds_apply.h"
#include "shared/log.h"
#include "xds.pb-c.h"

/* One response being built: its resources (each owning its packed payload) and removed names. */
struct response {
	Kmesh__Xds__DeltaDiscoveryResponse msg;
	Kmesh__Xds__Resource *res;
	Kmesh__Xds__Any *any;
	size_t cap;
};

static void note(struct km_inject_result *r, const char *what)
{
	size_t used = strlen(r->message);

	if (used < sizeof(r->message) - 1)
		snprintf(r->message + used, sizeof(r->message) - used, "%s%s", used ? "; " : "", what);
}

static int response_init(struct response *resp, const char *type, size_t cap, size_t n_removed)
{
	memset(resp, 0, sizeof(*resp));
	kmesh__xds__delta_discovery_response__init(&resp->msg);
	resp->msg.type_url = (char *)type;
	resp->msg.nonce = (char *)"kmeshctl-inject";
	resp->cap = cap;
	resp->res = calloc(cap ? cap : 1, sizeof(*resp->res));
	resp->any = calloc(cap ? cap : 1, sizeof(*resp->any));
	resp->msg.resources = calloc(cap ? cap : 1, sizeof(*resp->msg.resources));
	resp->msg.removed_resources = calloc(n_removed ? n_removed : 1, sizeof(char *));
	return resp->res && resp->any && resp->msg.resources && resp->msg.removed_resources ? 0 : -1;
}

/* Adds a resource whose payload is msg, packed (the response owns the bytes). */
static int response_add(struct response *resp, const ProtobufCMessage *msg)
{
	size_t i = resp->msg.n_resources, len = protobuf_c_message_get_packed_size(msg);
	uint8_t *bytes = malloc(len ? len : 1);

	if (!bytes || i == resp->cap) {
		free(bytes);
		return -1;
	}
	protobuf_c_message_pack(msg, bytes);
	kmesh__xds__resource__init(&resp->res[i]);
	kmesh__xds__any__init(&resp->any[i]);
	resp->any[i].type_url = resp->msg.type_url;
	resp->any[i].value.data = bytes;
	resp->any[i].value.len = len;
	resp->res[i].version = (char *)KM_INJECT_VERSION;
	resp->res[i].resource = &resp->any[i];
	resp->msg.resources[i] = &resp->res[i];
	resp->msg.n_resources++;
	return 0;
}

static void response_free(struct response *resp)
{
	for (size_t i = 0; i < resp->msg.n_resources; i++)
		free(resp->any[i].value.data);
	free(resp->res);
	free(resp->any);
	free(resp->msg.resources);
	free(resp->msg.removed_resources);
}

/* Each applied resource keeps the version it came with, as with istiod's (see inject.h). */
static void address_version(void *model, const char *name, const char *version)
{
	if (name && *name)
		km_model_set_version(model, name, version);
}

static void policy_version(void *store, const char *name, const char *version)
{
	if (name && *name)
		km_policy_store_set_version(store, name, version);
}

/* Packs the response and hands it to apply, as the ADS client does with istiod's. */
static int response_apply(struct response *resp, struct km_model *m, struct km_policy_store *ps,
			  struct km_inject_result *r)
{
	size_t len = protobuf_c_message_get_packed_size(&resp->msg.base);
	uint8_t *wire = malloc(len ? len : 1);
	struct km_response_view v;
	struct km_xds_result res;
	char line[160];
	int is_address = strcmp(resp->msg.type_url, KM_TYPE_ADDRESS) == 0;

	if (!wire)
		return -1;
	protobuf_c_message_pack(&resp->msg.base, wire);
	if (km_response_view_init(&v, wire, len) != 0) {
		free(wire);
		return -1;
	}
	if (is_address)
		km_xds_apply_address(m, &v, address_version, m, &res);
	else
		km_xds_apply_authorization(ps, &v, policy_version, ps, &res);
	km_response_view_free(&v);
	free(wire);
	r->applied += res.applied;
	r->rejected += res.rejected;
	r->removed += res.removed;
	snprintf(line, sizeof(line), "%s: %zu applied, %zu refused, %zu removed",
		 is_address ? "Address" : "Authorization", res.applied, res.rejected, res.removed);
	note(r, line);
	if (res.rejected)
		note(r, res.error);
	return 0;
}

static int names(const json_t *root, const char *key, json_t **out, char *err)
{
	if (km_jarray(root, key, NULL, KM_INJECT_MAX_ITEMS, out, "event", err))
		return -1;
	for (size_t i = 0; *out && i < json_array_size(*out); i++)
		if (!json_is_string(json_array_get(*out, i)))
			return km_jbad(err, "event", "'%s'[%zu] must be a string", key, i);
	return 0;
}

/* The resource's name as far as it can be read ("" if not), for refusals. */
static void resource_name(const json_t *item, char *out, size_t len)
{
	const json_t *w = json_object_get(item, "workload"), *sv = json_object_get(item, "service");
	const json_t *p = json_object_get(item, "authorization");
	const char *a = json_string_value(json_object_get(w ? w : sv ? sv : p, w ? "uid" : "namespace"));
	const char *b = w ? NULL : json_string_value(json_object_get(sv ? sv : p, sv ? "hostname" : "name"));

	if (a && (w || b))
		snprintf(out, len, "%.160s%s%.160s: ", a, b ? "/" : "", b ? b : "");
	else
		snprintf(out, len, "%s", "");
}

int km_inject_apply(struct km_model *m, struct km_policy_store *ps, const char *json, size_t len,
		    struct km_inject_result *r)
{
	struct response addr, pol;
	json_error_t jerr;
	json_t *root, *list = NULL, *removed = NULL, *removed_pol = NULL, *item;
	const char *key;
	char err[KM_JERR_LEN], first_error[KM_JERR_LEN + 400] = "";
	size_t i, mapping_errors = 0;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	memset(&addr, 0, sizeof(addr));
	memset(&pol, 0, sizeof(pol));
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		snprintf(r->message, sizeof(r->message), "not valid JSON: %s at line %d column %d",
			 jerr.text, jerr.line, jerr.column);
		return -1;
	}
	if (!json_is_object(root)) {
		snprintf(r->message, sizeof(r->message),
			 "the event must be an object with resources, removedResources or "
			 "removedPolicies");
		goto out;
	}
	json_object_foreach(root, key, item)
		if (strcmp(key, "resources") && strcmp(key, "removedResources") &&
		    strcmp(key, "removedPolicies")) {
			snprintf(r->message, sizeof(r->message),
				 "unknown key '%.64s' (an event has resources, removedResources, "
				 "removedPolicies)", key);
			goto out;
		}
	if (km_jarray(root, "resources", NULL, KM_INJECT_MAX_ITEMS, &list, "event", err) ||
	    names(root, "removedResources", &removed, err) ||
	    names(root, "removedPolicies", &removed_pol, err)) {
		snprintf(r->message, sizeof(r->message), "%s", err);
		goto out;
	}
	if (response_init(&addr, KM_TYPE_ADDRESS, json_array_size(list), json_array_size(removed)) ||
	    response_init(&pol, KM_TYPE_AUTHORIZATION, json_array_size(list),
			  json_array_size(removed_pol)))
		goto oom;
	json_array_foreach(list, i, item) {
		char path[48];
		ProtobufCMessage *msg = NULL;
		json_t *p = json_is_object(item) ? km_jfield(item, "authorization", NULL) : NULL;
		int bad;

		snprintf(path, sizeof(path), "resources[%zu]", i);
		if (p) {
			if (json_object_size(item) != 1)
				bad = km_jbad(err, path, "'authorization' goes alone");
			else
				bad = km_json_policy_pb(p, path, (Kmesh__Security__Authorization **)&msg, err);
		} else {
			bad = km_json_address_pb(item, path, (Kmesh__Workload__Address **)&msg, err);
		}
		if (!bad && response_add(p ? &pol : &addr, msg) != 0)
			bad = km_jbad(err, path, "out of memory");
		if (msg)
			protobuf_c_message_free_unpacked(msg, NULL);
		if (bad) {
			km_warn("inject: refused %s", err);
			mapping_errors++;
			if (mapping_errors == 1) {
				char name[400];

				resource_name(item, name, sizeof(name));
				snprintf(first_error, sizeof(first_error), "%s%s", name, err);
			}
		}
	}
	json_array_foreach(removed, i, item)
		addr.msg.removed_resources[addr.msg.n_removed_resources++] = (char *)json_string_value(item);
	json_array_foreach(removed_pol, i, item)
		pol.msg.removed_resources[pol.msg.n_removed_resources++] = (char *)json_string_value(item);
	if ((addr.msg.n_resources || addr.msg.n_removed_resources) &&
	    response_apply(&addr, m, ps, r) != 0)
		goto oom;
	if ((pol.msg.n_resources || pol.msg.n_removed_resources) &&
	    response_apply(&pol, m, ps, r) != 0)
		goto oom;
	if (mapping_errors) {
		snprintf(err, sizeof(err), "%zu refused as JSON", mapping_errors);
		note(r, err);
		note(r, first_error);
	}
	if (!r->message[0])
		note(r, "nothing to apply");
	r->rejected += mapping_errors;
	rc = 0;
	goto out;
oom:
	snprintf(r->message, sizeof(r->message), "out of memory");
out:
	response_free(&addr);
	response_free(&pol);
	json_decref(root);
	return rc;
}
