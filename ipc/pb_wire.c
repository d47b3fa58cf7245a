/* pb_wire.c — protobuf wire fields as protobuf-c 1.4 scans them (see pb_wire.h). */
#include "ipc/pb_wire.h"

#include <limits.h>
#include <string.h>

/* The tag: at most 5 bytes (4 + 4 * 7 bits of number); a first byte with no tag bits is refused
 * (a zero number in more bytes is not: an unknown field there). */
static size_t tag(const uint8_t *p, size_t rem, uint32_t *num, uint8_t *type)
{
	size_t max = rem > 5 ? 5 : rem;
	uint32_t t = (uint32_t)(p[0] & 0x7f) >> 3;
	unsigned shift = 4;

	if ((p[0] & 0xf8) == 0)
		return 0;
	*type = p[0] & 7;
	if (!(p[0] & 0x80)) {
		*num = t;
		return 1;
	}
	for (size_t i = 1; i < max; i++, shift += 7) {
		t |= (uint32_t)(p[i] & 0x7f) << shift;
		if (!(p[i] & 0x80)) {
			*num = t;
			return i + 1;
		}
	}
	return 0;
}

size_t km_pbw_varint_len(const uint8_t *p, size_t rem)
{
	size_t max = rem > 10 ? 10 : rem;

	for (size_t i = 0; i < max; i++)
		if (!(p[i] & 0x80))
			return i + 1;
	return 0;
}

int km_pbw_next_any(const uint8_t **at, const uint8_t *end, struct km_pbw *f)
{
	const uint8_t *p = *at;
	size_t rem = (size_t)(end - p), used;

	if (rem == 0)
		return 0;
	if (!(used = tag(p, rem, &f->num, &f->type)))
		return -1;
	p += used;
	rem -= used;
	f->val = p;
	switch (f->type) {
	case KM_PBW_VARINT:
		if (!(f->len = km_pbw_varint_len(p, rem)))
			return -1;
		break;
	case KM_PBW_I64:
	case KM_PBW_I32:
		f->len = f->type == KM_PBW_I64 ? 8 : 4;
		if (rem < f->len)
			return -1;
		break;
	case KM_PBW_LEN: {
		size_t max = rem > 5 ? 5 : rem, n = 0, i;

		for (i = 0; i < max; i++) {
			n |= (size_t)(p[i] & 0x7f) << (7 * i);
			if (!(p[i] & 0x80))
				break;
		}
		if (i == max || n > INT_MAX || i + 1 + n > rem)
			return -1;
		f->val = p + i + 1;
		f->len = n;
		*at = f->val + n;
		return 1;
	}
	default: /* groups (3, 4) and 6, 7 */
		return -1;
	}
	*at = p + f->len;
	return 1;
}

static int packable(ProtobufCType t)
{
	return t != PROTOBUF_C_TYPE_STRING && t != PROTOBUF_C_TYPE_BYTES &&
	       t != PROTOBUF_C_TYPE_MESSAGE;
}

/* A packed run of t: fixed-size values fill it exactly, varints each end within it. */
static int packed_ok(ProtobufCType t, const struct km_pbw *f)
{
	const uint8_t *p = f->val;
	size_t rem = f->len, n;

	switch (t) {
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
		return rem % 4 ? -1 : 0;
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return rem % 8 ? -1 : 0;
	default: /* varints, bool included */
		for (; rem; p += n, rem -= n)
			if (!(n = km_pbw_varint_len(p, rem)))
				return -1;
		return 0;
	}
}

int km_pbw_check(const ProtobufCMessageDescriptor *desc, const struct km_pbw *f,
		 ProtobufCAllocator *a)
{
	const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(desc, f->num);
	ProtobufCMessage *m;

	if (!fd)
		return 0; /* unknown: protobuf-c keeps it */
	if (fd->label == PROTOBUF_C_LABEL_REPEATED && f->type == KM_PBW_LEN && packable(fd->type))
		return packed_ok(fd->type, f);
	switch (fd->type) {
	case PROTOBUF_C_TYPE_BOOL: /* protobuf-c reads a bool from any wire type */
		return 0;
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
		return f->type == KM_PBW_I32 ? 0 : -1;
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return f->type == KM_PBW_I64 ? 0 : -1;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_BYTES:
		return f->type == KM_PBW_LEN ? 0 : -1;
	case PROTOBUF_C_TYPE_MESSAGE:
		if (f->type != KM_PBW_LEN)
			return -1;
		if (!(m = protobuf_c_message_unpack(fd->descriptor, a, f->len, f->val)))
			return -1;
		protobuf_c_message_free_unpacked(m, a);
		return 0;
	default: /* the varint types */
		return f->type == KM_PBW_VARINT ? 0 : -1;
	}
}

void *km_pbw_zalloc(ProtobufCAllocator *a, size_t n)
{
	void *p = a->alloc(a->allocator_data, n);

	if (p)
		memset(p, 0, n);
	return p;
}

char *km_pbw_string(ProtobufCAllocator *a, const struct km_pbw *f)
{
	char *s;

	if (f->type != KM_PBW_LEN || !(s = a->alloc(a->allocator_data, f->len + 1)))
		return NULL;
	memcpy(s, f->val, f->len);
	s[f->len] = '\0';
	return s;
}

int km_pbw_bytes(ProtobufCAllocator *a, const struct km_pbw *f, ProtobufCBinaryData *out)
{
	if (f->type != KM_PBW_LEN)
		return -1;
	out->len = f->len;
	out->data = NULL;
	if (f->len && !(out->data = a->alloc(a->allocator_data, f->len)))
		return -1;
	if (f->len)
		memcpy(out->data, f->val, f->len);
	return 0;
}

int km_pbw_append(ProtobufCAllocator *a, void *arrayp, size_t *n, size_t elsz, const void *el)
{
	char **array = arrayp;

	if ((*n & (*n - 1)) == 0) { /* 0 or a power of two: full */
		size_t cap = *n ? *n * 2 : 1;
		char *grown = a->alloc(a->allocator_data, cap * elsz);

		if (!grown)
			return -1;
		if (*n)
			memcpy(grown, *array, *n * elsz);
		if (*array)
			a->free(a->allocator_data, *array);
		*array = grown;
	}
	memcpy(*array + *n * elsz, el, elsz);
	(*n)++;
	return 0;
}

static int append_number(ProtobufCAllocator *a, void *arrayp, size_t *n, size_t elsz, uint64_t v)
{
	uint32_t v32 = (uint32_t)v; /* a 32-bit field keeps the low bits, as in protobuf-c */

	return km_pbw_append(a, arrayp, n, elsz, elsz == 8 ? (const void *)&v : (const void *)&v32);
}

int km_pbw_varints(ProtobufCAllocator *a, const struct km_pbw *f, void *arrayp, size_t *n,
		   size_t elsz)
{
	struct km_pbw one = { .type = KM_PBW_VARINT };
	size_t rem = f->len;

	if (f->type == KM_PBW_VARINT)
		return append_number(a, arrayp, n, elsz, km_pbw_u64(f));
	if (f->type != KM_PBW_LEN)
		return -1;
	for (one.val = f->val; rem; one.val += one.len, rem -= one.len)
		if (!(one.len = km_pbw_varint_len(one.val, rem)) ||
		    append_number(a, arrayp, n, elsz, km_pbw_u64(&one)))
			return -1;
	return 0;
}
