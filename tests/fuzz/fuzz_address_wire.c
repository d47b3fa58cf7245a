/* fuzz_address_wire.c — differential libFuzzer target: the agent's hand-written readers of what
 * istiod sends (address_wire.h for an Address, response_view.c's for a Resource) against
 * protobuf-c's generic unpack, the decoder they replaced. Arbitrary bytes read as an Address must
 * be refused by both or by neither; what both accept must convert to the same resource (every
 * field the model reads), the same name and the same error. The same bytes read as a Resource
 * (wrapped in a DeltaDiscoveryResponse) must be refused by both or neither, and what both accept
 * must have the same version, name, payload type and payload bytes. Any difference aborts. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/ads/resource_pb.h"
#include "services/xds-agent/ads/response_view.h"
#include "services/xds-agent/core/pb_scratch.h"
#include "tests/fuzz/differential.h"
#include "xds.pb-c.h"

static int str_same(const char *a, const char *b)
{
	return (!a || !*a) ? (!b || !*b) : (b && strcmp(a, b) == 0);
}

static void compare_address(const uint8_t *data, size_t size)
{
	struct km_pb_scratch ref_s, wire_s;
	struct km_service_res *ref_svc = NULL, *wire_svc;
	struct km_workload_res *ref_wl = NULL, *wire_wl;
	char *ref_name = NULL, *wire_name, ref_err[256] = "", wire_err[256] = "";
	Kmesh__Workload__Address *ref;
	int ref_rc = -1, wire_rc;

	km_pb_scratch_init(&ref_s);
	km_pb_scratch_init(&wire_s);
	ref = kmesh__workload__address__unpack(km_pb_scratch_allocator(&ref_s), size, data);
	if (ref)
		ref_rc = km_pb_address_convert(km_pb_scratch_allocator(&ref_s), ref, &ref_svc, &ref_wl,
					       &ref_name, ref_err, sizeof(ref_err));
	else
		snprintf(ref_err, sizeof(ref_err), "not a valid istio.workload.Address message");
	wire_rc = km_pb_address(km_pb_scratch_allocator(&wire_s), data, size, &wire_svc, &wire_wl,
				&wire_name, wire_err, sizeof(wire_err));
	same(ref_rc == wire_rc);
	if (strcmp(ref_err, wire_err) != 0)
		fprintf(stderr, "protobuf-c: %s\nby hand: %s\n", ref_err, wire_err);
	same(strcmp(ref_err, wire_err) == 0);
	same(str_same(ref_name, wire_name) && !ref_name == !wire_name);
	same(!ref_svc == !wire_svc && !ref_wl == !wire_wl);
	if (ref_svc)
		same(km_service_res_equal(ref_svc, wire_svc) &&
		     str_same(ref_svc->svc_name, wire_svc->svc_name) &&
		     str_same(ref_svc->namespace, wire_svc->namespace) &&
		     str_same(ref_svc->hostname, wire_svc->hostname));
	if (ref_wl)
		same(km_workload_res_equal(ref_wl, wire_wl));
	km_pb_scratch_free(&ref_s);
	km_pb_scratch_free(&wire_s);
}

/* The bytes as the one resource of a DeltaDiscoveryResponse (field 2, length-delimited). */
static void compare_resource(const uint8_t *data, size_t size)
{
	struct km_pb_scratch s;
	struct km_response_view v;
	Kmesh__Xds__Resource *ref, *wire = NULL;
	uint8_t *msg = malloc(size + 6);
	size_t n = 0;

	if (!msg)
		return;
	msg[n++] = 2 << 3 | 2;
	for (size_t left = size;; left >>= 7) {
		msg[n++] = (uint8_t)(left & 0x7f) | (left >= 0x80 ? 0x80 : 0);
		if (left < 0x80)
			break;
	}
	memcpy(msg + n, data, size);
	km_pb_scratch_init(&s);
	ref = kmesh__xds__resource__unpack(km_pb_scratch_allocator(&s), size, data);
	same(km_response_view_init(&v, msg, n + size) == 0);
	same(km_response_view_next(&v, &wire) == 1);
	same(!ref == !wire);
	if (ref) {
		same(strcmp(ref->version, wire->version) == 0 && strcmp(ref->name, wire->name) == 0);
		same(!ref->resource == !wire->resource);
		if (ref->resource)
			same(strcmp(ref->resource->type_url, wire->resource->type_url) == 0 &&
			     ref->resource->value.len == wire->resource->value.len &&
			     (!ref->resource->value.len ||
			      memcmp(ref->resource->value.data, wire->resource->value.data,
				     ref->resource->value.len) == 0));
	}
	km_response_view_free(&v);
	km_pb_scratch_free(&s);
	free(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	compare_address(size ? data : NULL, size); /* an empty payload has no pointer in the agent */
	compare_resource(data, size);
	return 0;
}
