/* resource_pb.h — the one place where workload-API messages become resources: every field the
 * model uses is validated and bounded here (addresses 4 or 16 bytes, ports 1..65535, names and
 * counts bounded, waypoints well-formed), whether the message came from istiod or from the JSON
 * file. Errors say which field is wrong. */
#ifndef KM_XDS_RESOURCE_PB_H
#define KM_XDS_RESOURCE_PB_H

#include <stddef.h>
#include <stdint.h>

#include "services/xds-agent/core/resources.h"
#include "workload.pb-c.h"

/* Each returns 0 with *out set, or -1 with err filled (and *out NULL). */
int km_pb_service(const Kmesh__Workload__Service *m, struct km_service_res **out, char *err,
		  size_t errlen);
int km_pb_workload(const Kmesh__Workload__Workload *m, struct km_workload_res **out, char *err,
		   size_t errlen);

/* Decode an istio.workload.Address from bytes (address_wire.h) and convert it: exactly one of
 * *svc / *wl is set on success. *name is the resource's own name when it could be read (even on
 * failure). alloc is a pb_scratch allocator: the message, the results and *name are the scratch
 * block's, left to its reset; the results are marked scratch (resources.h), to be packed before
 * the next resource is decoded, never kept as they are. */
int km_pb_address(ProtobufCAllocator *alloc, const uint8_t *data, size_t len,
		  struct km_service_res **svc, struct km_workload_res **wl, char **name, char *err,
		  size_t errlen);
/* The conversion alone, of a message decoded into alloc's scratch block by either decoder (the
 * fuzz target compares address_wire.h's with protobuf-c's through it). */
int km_pb_address_convert(ProtobufCAllocator *alloc, const Kmesh__Workload__Address *a,
			  struct km_service_res **svc, struct km_workload_res **wl, char **name,
			  char *err, size_t errlen);

#endif
