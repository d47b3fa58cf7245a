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

/* A view of a whole message (km_response_view_init), or of one still arriving
 * (km_response_view_begin, then km_response_view_grow as bytes come): its top-level fields are
 * checked as each arrives whole, and its resources can be taken before the rest has come. */
struct km_response_view {
	const uint8_t *data;
	size_t len;     /* bytes received so far */
	size_t total;   /* the message's length (len, once complete) */
	size_t scanned; /* whole top-level fields checked up to here */
	char *type_url; /* malloc'd copies, set once complete ("" if absent) */
	char *nonce;
	size_t n_removed; /* removed_resources (so far) */
	size_t n_resources;
	size_t first_removed_off; /* where the first removed name is; total if none */
	size_t next_off;          /* iteration over resources */
	size_t next_removed_off;  /* ... and over removed names */
	struct km_pb_scratch scratch; /* the current resource, and what is decoded from it */
};

/* The longest removed name read (a workload uid or "<namespace>/<hostname>" is far shorter); a
 * longer one is skipped and counted in skipped. */
#define KM_XDS_NAME_MAX 1024

/* km_response_view_next's answer when the next resource has not arrived whole yet. */
#define KM_VIEW_WAIT 2

/* A whole message. Returns 0, or -1 if the bytes are not a well-formed DeltaDiscoveryResponse. */
int km_response_view_init(struct km_response_view *v, const uint8_t *data, size_t len);
/* A message of total bytes at data, of which none is counted as received yet. */
void km_response_view_begin(struct km_response_view *v, const uint8_t *data, size_t total);
/* The first len bytes have arrived (len only grows, up to total). Returns 0, or -1 if what has
 * arrived is not a well-formed DeltaDiscoveryResponse (then only km_response_view_free). */
int km_response_view_grow(struct km_response_view *v, size_t len);
static inline int km_response_view_complete(const struct km_response_view *v)
{
	return v->len == v->total && v->type_url;
}
/* The next resource: returns 1 with *out decoded, or NULL if its bytes do not decode; returns 0
 * at the end, KM_VIEW_WAIT when it has not arrived whole yet. *out belongs to the view and lasts
 * until the next call (not to be freed), as does whatever the caller decodes with
 * km_response_view_allocator. It is read by hand (pb_wire.h), accepting what protobuf-c would;
 * its payload (resource->value) is not copied: it points into the response's bytes. */
int km_response_view_next(struct km_response_view *v, Kmesh__Xds__Resource **out);
/* The payload type (Any.type_url) of the message's first resource, without taking it: 1 with
 * *type set (valid until the view's next call), 0 if it has no resource or the first has no
 * payload, KM_VIEW_WAIT when the first has not arrived whole. */
int km_response_view_first_type(struct km_response_view *v, const char **type);
ProtobufCAllocator *km_response_view_allocator(struct km_response_view *v);
/* The next removed name, NUL-terminated in buf (KM_XDS_NAME_MAX + 1 bytes): returns 1, or 0 at the
 * end (call once complete). Empty names and names over KM_XDS_NAME_MAX are skipped (*skipped
 * counts them). */
int km_response_view_next_removed(struct km_response_view *v, char *buf, size_t *skipped);
/* Bytes before this offset will not be read again: their pages may be given back
 * (km_msgbuf_release) while the rest is read. */
size_t km_response_view_consumed(const struct km_response_view *v);
void km_response_view_free(struct km_response_view *v);

#endif
