/* resource_json.h — decoding of Istio workload-API resources from their proto3 JSON mapping
 * (the embedded-config file). Accepts lowerCamelCase and original field names, enums as names
 * or numbers, integers as numbers or strings, and addresses as IP text or base64 bytes.
 * A name defined twice is decoded twice; the consumer keeps the last.
 * Document forms: {"resources": [Address, ...]} or [Address, ...], where an Address is
 * {"service": {...}} or {"workload": {...}}. Every size and count is bounded. */
#ifndef KM_XDS_RESOURCE_JSON_H
#define KM_XDS_RESOURCE_JSON_H

#include <stddef.h>

#include <jansson.h>

#include "services/xds-agent/core/resources.h"
#include "workload.pb-c.h"

#define KM_JSON_MAX_RESOURCES 4000000

struct km_resource_set {
	struct km_service_res **services;
	size_t n_services, cap_services;
	struct km_workload_res **workloads;
	size_t n_workloads, cap_workloads;
	/* Names of resources that failed to decode: the previous version of each is kept, not
	 * removed (a bad edit must not take a service down). */
	char **failed;
	size_t n_failed, cap_failed;
	size_t n_errors; /* including resources whose name could not be read */
};

/* Decode a document. Returns 0 when the document is usable (bad resources are logged, counted
 * and listed in failed); -1 when it is not (err says why; nothing was decoded). */
int km_json_decode_document(const char *text, size_t len, struct km_resource_set *out, char *err,
			    size_t errlen);
/* One Address ({"service": {...}} or {"workload": {...}}) mapped onto the message istiod would
 * send, not yet validated. Returns 0, or -1 with err (KM_JERR_LEN bytes) filled; *out is set
 * either way when allocated (free with kmesh__workload__address__free_unpacked). */
int km_json_address_pb(const json_t *item, const char *path, Kmesh__Workload__Address **out,
		       char *err);
void km_resource_set_free(struct km_resource_set *set);

#endif
