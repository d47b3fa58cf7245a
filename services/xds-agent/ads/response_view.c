/* response_view.c — walking a DeltaDiscoveryResponse's wire bytes (see response_view.h). */
#include "services/xds-agent/ads/response_view.h"

#include "ipc/pb_wire.h"

#include <stdlib.h>
#include <string.h>

/* DeltaDiscoveryResponse field numbers (istio-wire §3.4) */
#define F_RESOURCES 2
#define F_TYPE_URL 4
#define F_NONCE 5
#define F_REMOVED 6

/* field()'s answers besides 0 */
#define BAD (-1)      /* not a well-formed field */
#define NEED_MORE 1   /* the field has not arrived whole (avail < total) */

/* A varint at p[*off] of bytes [0, avail) received out of total. */
static int varint(const uint8_t *p, size_t avail, size_t total, size_t *off, uint64_t *out)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (*off >= avail)
			return avail < total ? NEED_MORE : BAD;
		b = p[(*off)++];
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return BAD;
}

/* Skip n bytes of a field whose bytes may still be arriving. */
static int skip(size_t avail, size_t total, size_t *off, uint64_t n)
{
	if (n > total - *off)
		return BAD;
	if (n > avail - *off)
		return NEED_MORE;
	*off += (size_t)n;
	return 0;
}

/* One top-level field: its number and, for length-delimited ones, where its bytes are. On
 * NEED_MORE, *off is left at the field's start. */
static int field(const uint8_t *p, size_t avail, size_t total, size_t *off, uint32_t *num,
		 const uint8_t **val, size_t *vlen)
{
	size_t at = *off;
	uint64_t key, n = 0;
	int rc = varint(p, avail, total, off, &key);

	*val = NULL;
	*vlen = 0;
	if (rc == 0 && (key >> 3) == 0)
		rc = BAD;
	if (rc == 0) {
		*num = (uint32_t)(key >> 3);
		switch (key & 7) {
		case 0:
			rc = varint(p, avail, total, off, &n);
			break;
		case 1:
			rc = skip(avail, total, off, 8);
			break;
		case 5:
			rc = skip(avail, total, off, 4);
			break;
		case 2:
			rc = varint(p, avail, total, off, &n);
			if (rc == 0) {
				*val = p + *off;
				*vlen = (size_t)n;
				rc = skip(avail, total, off, n);
			}
			break;
		default:
			rc = BAD;
		}
	}
	if (rc == NEED_MORE)
		*off = at;
	return rc;
}

static char *copy_string(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

void km_response_view_begin(struct km_response_view *v, const uint8_t *data, size_t total)
{
	memset(v, 0, sizeof(*v));
	km_pb_scratch_init(&v->scratch);
	v->data = data;
	v->total = total;
	v->first_removed_off = total;
}

int km_response_view_grow(struct km_response_view *v, size_t len)
{
	if (len > v->total || len < v->len)
		return -1;
	v->len = len;
	while (v->scanned < len) {
		size_t off = v->scanned;
		uint32_t num = 0;
		const uint8_t *val;
		size_t vlen;
		int rc = field(v->data, len, v->total, &off, &num, &val, &vlen);

		if (rc == NEED_MORE)
			break;
		if (rc != 0)
			return -1;
		if (num == F_RESOURCES && val) {
			v->n_resources++;
		} else if ((num == F_TYPE_URL || num == F_NONCE) && val) {
			char **dst = num == F_TYPE_URL ? &v->type_url : &v->nonce;

			free(*dst); /* the last occurrence wins, as protobuf decoders do */
			if (!(*dst = copy_string(val, vlen)))
				return -1;
		} else if (num == F_REMOVED && val) {
			if (!v->n_removed++)
				v->first_removed_off = v->scanned;
		}
		v->scanned = off;
	}
	if (len == v->total) { /* field() cannot want more of a whole message */
		if (!v->type_url && !(v->type_url = copy_string((const uint8_t *)"", 0)))
			return -1;
		if (!v->nonce && !(v->nonce = copy_string((const uint8_t *)"", 0)))
			return -1;
	}
	return 0;
}

int km_response_view_init(struct km_response_view *v, const uint8_t *data, size_t len)
{
	km_response_view_begin(v, data, len);
	if (km_response_view_grow(v, len) != 0) {
		km_response_view_free(v);
		return -1;
	}
	return 0;
}

/* A Resource and its Any read by hand, accepting what protobuf-c would (pb_wire.h): version 1,
 * resource 2 (Any: type_url 1, value 2), name 3; any other field checked. The payload's bytes
 * are not copied: they are the response's own, read before km_response_view_consumed passes
 * them. A resource given twice is merged as protobuf-c merges it (its type_url and payload where
 * the later one has none). NULL if protobuf-c would refuse the bytes. */
static Kmesh__Xds__Any *any_read(ProtobufCAllocator *a, const uint8_t *p, size_t n)
{
	Kmesh__Xds__Any *m = km_pbw_zalloc(a, sizeof(*m));

	if (!m)
		return NULL;
	kmesh__xds__any__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_STR(m->type_url); break;
		case 2:
			if (f.type != KM_PBW_LEN)
				return NULL;
			m->value.len = f.len; /* in place, read only */
			m->value.data = f.len ? (uint8_t *)f.val : NULL;
			break;
		default: PBW_OTHER(kmesh__xds__any__descriptor);
		}
	}
	PBW_END(m);
}

static Kmesh__Xds__Resource *resource_read(ProtobufCAllocator *a, const uint8_t *p, size_t n)
{
	Kmesh__Xds__Resource *m = km_pbw_zalloc(a, sizeof(*m));
	Kmesh__Xds__Any *any;

	if (!m)
		return NULL;
	kmesh__xds__resource__init(m);
	PBW_EACH_FIELD(p, n)
	{
		switch (f.num) {
		case 1: PBW_STR(m->version); break;
		case 2:
			PBW_MSG(any, any_read);
			if (m->resource && any->type_url == protobuf_c_empty_string)
				any->type_url = m->resource->type_url;
			if (m->resource && !any->value.data)
				any->value = m->resource->value;
			m->resource = any;
			break;
		case 3: PBW_STR(m->name); break;
		default: PBW_OTHER(kmesh__xds__resource__descriptor);
		}
	}
	PBW_END(m);
}

/* The next length-delimited field numbered want from *off on, among the fields checked so far:
 * 1 with its bytes, or 0 at the end of them. */
static int next_field(const struct km_response_view *v, size_t *off, uint32_t want,
		      const uint8_t **val, size_t *vlen)
{
	uint32_t num;

	while (*off < v->scanned) {
		if (field(v->data, v->scanned, v->scanned, off, &num, val, vlen) != 0)
			return 0; /* cannot happen: checked by km_response_view_grow */
		if (num == want && *val)
			return 1;
	}
	return 0;
}

int km_response_view_next(struct km_response_view *v, Kmesh__Xds__Resource **out)
{
	const uint8_t *val;
	size_t vlen;

	*out = NULL;
	km_pb_scratch_reset(&v->scratch); /* the previous resource goes */
	if (!next_field(v, &v->next_off, F_RESOURCES, &val, &vlen))
		return v->scanned < v->total ? KM_VIEW_WAIT : 0;
	*out = resource_read(km_pb_scratch_allocator(&v->scratch), val, vlen);
	return 1;
}

int km_response_view_first_type(struct km_response_view *v, const char **type)
{
	size_t off = 0;
	const uint8_t *val;
	size_t vlen;
	Kmesh__Xds__Resource *r;

	*type = NULL;
	km_pb_scratch_reset(&v->scratch);
	if (!next_field(v, &off, F_RESOURCES, &val, &vlen))
		return v->scanned < v->total ? KM_VIEW_WAIT : 0;
	r = resource_read(km_pb_scratch_allocator(&v->scratch), val, vlen);
	if (!r || !r->resource)
		return 0;
	*type = r->resource->type_url;
	return 1;
}

ProtobufCAllocator *km_response_view_allocator(struct km_response_view *v)
{
	return km_pb_scratch_allocator(&v->scratch);
}

int km_response_view_next_removed(struct km_response_view *v, char *buf, size_t *skipped)
{
	const uint8_t *val;
	size_t vlen;

	/* from the first removed name on: the bytes before it may have been given back */
	if (v->next_removed_off < v->first_removed_off)
		v->next_removed_off = v->first_removed_off;
	while (next_field(v, &v->next_removed_off, F_REMOVED, &val, &vlen)) {
		if (vlen == 0 || vlen > KM_XDS_NAME_MAX || memchr(val, '\0', vlen)) {
			(*skipped)++;
			continue;
		}
		memcpy(buf, val, vlen);
		buf[vlen] = '\0';
		return 1;
	}
	return 0;
}

size_t km_response_view_consumed(const struct km_response_view *v)
{
	return v->next_off < v->first_removed_off ? v->next_off : v->first_removed_off;
}

void km_response_view_free(struct km_response_view *v)
{
	free(v->type_url);
	free(v->nonce);
	km_pb_scratch_free(&v->scratch);
	memset(v, 0, sizeof(*v));
}
