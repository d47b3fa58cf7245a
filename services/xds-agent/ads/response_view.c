/* response_view.c — walking a DeltaDiscoveryResponse's wire bytes (see response_view.h). */
#include "services/xds-agent/ads/response_view.h"

#include <stdlib.h>
#include <string.h>

/* DeltaDiscoveryResponse field numbers (istio-wire §3.4) */
#define F_RESOURCES 2
#define F_TYPE_URL 4
#define F_NONCE 5
#define F_REMOVED 6

static int varint(const uint8_t *p, size_t len, size_t *off, uint64_t *out)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (*off >= len)
			return -1;
		b = p[(*off)++];
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

/* One top-level field: its number and, for length-delimited ones, where its bytes are. */
static int field(const uint8_t *p, size_t len, size_t *off, uint32_t *num, const uint8_t **val,
		 size_t *vlen)
{
	uint64_t key, n;

	if (varint(p, len, off, &key) != 0 || (key >> 3) == 0)
		return -1;
	*num = (uint32_t)(key >> 3);
	*val = NULL;
	*vlen = 0;
	switch (key & 7) {
	case 0:
		return varint(p, len, off, &n);
	case 1:
		if (len - *off < 8)
			return -1;
		*off += 8;
		return 0;
	case 5:
		if (len - *off < 4)
			return -1;
		*off += 4;
		return 0;
	case 2:
		if (varint(p, len, off, &n) != 0 || n > len - *off)
			return -1;
		*val = p + *off;
		*vlen = (size_t)n;
		*off += (size_t)n;
		return 0;
	default:
		return -1;
	}
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

int km_response_view_init(struct km_response_view *v, const uint8_t *data, size_t len)
{
	size_t off = 0;

	memset(v, 0, sizeof(*v));
	km_pb_scratch_init(&v->scratch);
	v->data = data;
	v->len = len;
	while (off < len) {
		uint32_t num;
		const uint8_t *val;
		size_t vlen;

		if (field(data, len, &off, &num, &val, &vlen) != 0)
			goto bad;
		if (num == F_RESOURCES && val) {
			v->n_resources++;
		} else if ((num == F_TYPE_URL || num == F_NONCE) && val) {
			char **dst = num == F_TYPE_URL ? &v->type_url : &v->nonce;

			free(*dst); /* the last occurrence wins, as protobuf decoders do */
			if (!(*dst = copy_string(val, vlen)))
				goto bad;
		} else if (num == F_REMOVED && val) {
			v->n_removed++;
		}
	}
	if (!v->type_url)
		v->type_url = copy_string((const uint8_t *)"", 0);
	if (!v->nonce)
		v->nonce = copy_string((const uint8_t *)"", 0);
	if (!v->type_url || !v->nonce)
		goto bad;
	return 0;
bad:
	km_response_view_free(v);
	return -1;
}

/* The next length-delimited field numbered want from *off on: 1 with its bytes, or 0 at the end. */
static int next_field(const struct km_response_view *v, size_t *off, uint32_t want,
		      const uint8_t **val, size_t *vlen)
{
	uint32_t num;

	while (*off < v->len) {
		if (field(v->data, v->len, off, &num, val, vlen) != 0)
			return 0; /* cannot happen after a successful init */
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
		return 0;
	*out = kmesh__xds__resource__unpack(km_pb_scratch_allocator(&v->scratch), vlen, val);
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

void km_response_view_free(struct km_response_view *v)
{
	free(v->type_url);
	free(v->nonce);
	km_pb_scratch_free(&v->scratch);
	memset(v, 0, sizeof(*v));
}
