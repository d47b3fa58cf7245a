/* response_view.h — a DeltaDiscoveryResponse read in place: its scalar fields and removed names
 * are found by walking the top level of the wire bytes, and its resources are unpacked one at a
 * time, so a push of the whole mesh is never held twice (bytes and a decoded copy of every
 * resource) in memory. */
#ifndef KM_XDS_RESPONSE_VIEW_H
#define KM_XDS_RESPONSE_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "xds.pb-c.h"

struct km_response_view {
	const uint8_t *data;
	size_t len;
	char *type_url; /* malloc'd copies */
	char *nonce;
	char **removed; /* removed_resources */
	size_t n_removed;
	size_t n_resources;
	size_t next_off; /* iteration */
};

/* Returns 0, or -1 if the bytes are not a well-formed DeltaDiscoveryResponse. */
int km_response_view_init(struct km_response_view *v, const uint8_t *data, size_t len);
/* The next resource: returns 1 with *out decoded (free with kmesh__xds__resource__free_unpacked)
 * or NULL if its bytes do not decode; returns 0 at the end. */
int km_response_view_next(struct km_response_view *v, Kmesh__Xds__Resource **out);
void km_response_view_free(struct km_response_view *v);

#endif
