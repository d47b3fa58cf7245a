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

/* Decode an istio.workload.Address from bytes: exactly one of *svc / *wl is set on success.
 * *name is the resource's own name when it could be read (even on failure; the caller frees
 * it when alloc is NULL, else it is the scratch block's).
 * alloc: where the message is decoded (NULL: malloc, freed before returning; the results are
 * malloc'd too). With a pb_scratch allocator the message and the results are the scratch
 * block's, left to its reset: the results are marked scratch (resources.h), to be packed
 * before the next resource is decoded, never kept as they are. */
int km_pb_address(ProtobufCAllocator *alloc, const uint8_t *data, size_t len,
		  struct km_service_res **svc, struct km_workload_res **wl, char **name, char *err,
		  size_t errlen);

#endif
