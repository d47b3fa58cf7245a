/* response_view.h — a DeltaDiscoveryResponse read in place: its scalar fields and removed names
 * are found by walking the top level of the wire bytes, and its resources are unpacked one at a
 * time, so a push of the whole mesh is never held twice (bytes and a decoded copy of every
 * resource) in memory. Removed names are read in place too, one at a time into the caller's
 * buffer: a response of N bytes costs N bytes and one resource, whatever it holds (a response
 * of 120 MB of empty removals took 2.4 GB when each name was copied). */
#ifndef KM_XDS_RESPONSE_VIEW_H
#define KM_XDS_RESPONSE_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "services/xds-agent/core/pb_scratch.h"
#include "xds.pb-c.h"

struct km_response_view {
	const uint8_t *data;
	size_t len;
	char *type_url; /* malloc'd copies */
	char *nonce;
	size_t n_removed; /* removed_resources */
	size_t n_resources;
	size_t next_off;         /* iteration over resources */
	size_t next_removed_off; /* ... and over removed names */
	struct km_pb_scratch scratch; /* the current resource, and what is decoded from it */
};

/* The longest removed name read (a workload uid or "<namespace>/<hostname>" is far shorter); a
 * longer one is skipped and counted in skipped. */
#define KM_XDS_NAME_MAX 1024

/* Returns 0, or -1 if the bytes are not a well-formed DeltaDiscoveryResponse. */
int km_response_view_init(struct km_response_view *v, const uint8_t *data, size_t len);
/* The next resource: returns 1 with *out decoded, or NULL if its bytes do not decode; returns 0
 * at the end. *out belongs to the view and lasts until the next call (not to be freed), as does
 * whatever the caller decodes with km_response_view_allocator. */
int km_response_view_next(struct km_response_view *v, Kmesh__Xds__Resource **out);
ProtobufCAllocator *km_response_view_allocator(struct km_response_view *v);
/* The next removed name, NUL-terminated in buf (KM_XDS_NAME_MAX + 1 bytes): returns 1, or 0 at the
 * end. Empty names and names over KM_XDS_NAME_MAX are skipped (*skipped counts them). */
int km_response_view_next_removed(struct km_response_view *v, char *buf, size_t *skipped);
void km_response_view_free(struct km_response_view *v);

#endif
