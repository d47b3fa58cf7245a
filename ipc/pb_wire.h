/* pb_wire.h — reading protobuf wire bytes field by field, accepting exactly what protobuf-c 1.4
 * accepts (the decoder the agent used before, and the oracle its fuzz target compares with):
 * tags of at most 5 bytes (a first byte without tag bits refused, any other 32-bit number taken:
 * numbers the schema lacks are unknown fields), varints of at most 10 bytes, length prefixes of
 * at most 5 bytes and INT_MAX, wire types 0, 1, 2 and 5 (groups refused). The hand-written
 * readers (the xDS agent's address_wire.c and response_view.c's Resource, the map writer's
 * batch_wire.c) read the fields they use with it and hand every other field to km_pbw_check,
 * which checks it against the message's descriptor the way protobuf-c's unpack would. */
#ifndef KM_IPC_PB_WIRE_H
#define KM_IPC_PB_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

enum km_pbw_type {
	KM_PBW_VARINT = 0,
	KM_PBW_I64 = 1,
	KM_PBW_LEN = 2,
	KM_PBW_I32 = 5,
};

/* One field as scanned. */
struct km_pbw {
	uint32_t num;
	uint8_t type;       /* enum km_pbw_type */
	const uint8_t *val; /* KM_PBW_LEN: the payload; else the value's own bytes */
	size_t len;         /* KM_PBW_LEN: the payload's length; else the value's byte count */
};

/* km_pbw_next for any field (the inline one takes the common short ones itself). */
int km_pbw_next_any(const uint8_t **at, const uint8_t *end, struct km_pbw *f);

/* The next field of [*at, end): 1 with *f set and *at past it, 0 at the end, -1 if the bytes are
 * not a field protobuf-c would scan. Fields numbered below 16 with a short length are taken
 * here, inline: nearly every field of the messages read by hand. */
static inline int km_pbw_next(const uint8_t **at, const uint8_t *end, struct km_pbw *f)
{
	const uint8_t *p = *at;
	size_t rem = (size_t)(end - p), n;

	if (rem == 0)
		return 0;
	if (rem < 2 || p[0] >= 0x80 || p[0] < 8)
		return km_pbw_next_any(at, end, f);
	f->num = p[0] >> 3;
	f->type = p[0] & 7;
	f->val = p + 1;
	switch (f->type) {
	case KM_PBW_VARINT:
		for (n = 1; n <= 10 && n < rem; n++)
			if (!(p[n] & 0x80)) {
				f->len = n;
				*at = p + 1 + n;
				return 1;
			}
		return -1; /* not ended within 10 bytes or the message */
	case KM_PBW_LEN:
		if (p[1] >= 0x80 || p[1] > rem - 2)
			break;
		f->val = p + 2;
		f->len = p[1];
		*at = p + 2 + p[1];
		return 1;
	case KM_PBW_I32:
	case KM_PBW_I64:
		f->len = f->type == KM_PBW_I32 ? 4 : 8;
		if (rem - 1 < f->len)
			return -1;
		*at = p + 1 + f->len;
		return 1;
	}
	return km_pbw_next_any(at, end, f);
}

/* A varint field's value, its low 32 bits (what protobuf-c stores in a 32-bit field). */
static inline uint32_t km_pbw_u32(const struct km_pbw *f)
{
	uint32_t v = 0;

	for (size_t i = 0; i < f->len && i < 5; i++)
		v |= (uint32_t)(f->val[i] & 0x7f) << (7 * i);
	return v;
}

/* A varint field's value, 64 bits (bits past them fall off, as in protobuf-c). */
static inline uint64_t km_pbw_u64(const struct km_pbw *f)
{
	uint64_t v = 0;

	for (size_t i = 0; i < f->len; i++)
		v |= (uint64_t)(f->val[i] & 0x7f) << (7 * i);
	return v;
}

/* A 32-bit field's value (little-endian on the wire). */
static inline uint32_t km_pbw_fixed32(const struct km_pbw *f)
{
	return (uint32_t)f->val[0] | (uint32_t)f->val[1] << 8 | (uint32_t)f->val[2] << 16 |
	       (uint32_t)f->val[3] << 24;
}

/* A field that the caller does not read: 0 if protobuf-c would accept it in a message of type
 * desc (unknown numbers are kept by protobuf-c, so accepted; a known one must have its type's
 * wire type, a message its own valid bytes, a packed run whole values), else -1. */
int km_pbw_check(const ProtobufCMessageDescriptor *desc, const struct km_pbw *f,
		 ProtobufCAllocator *a);

/* A string field's bytes, copied NUL-terminated into a (NULL when out of memory, or when f is
 * not length-delimited). */
char *km_pbw_string(ProtobufCAllocator *a, const struct km_pbw *f);
/* A bytes field, copied into a (an empty value is {0, NULL}, as protobuf-c leaves it): 0, or -1
 * when out of memory or f is not length-delimited. */
int km_pbw_bytes(ProtobufCAllocator *a, const struct km_pbw *f, ProtobufCBinaryData *out);

/* Append el (elsz bytes) to an array of *n elements allocated from a, growing it by doubling:
 * 0, or -1 when out of memory. */
int km_pbw_append(ProtobufCAllocator *a, void *arrayp, size_t *n, size_t elsz, const void *el);

/* n zeroed bytes from a, or NULL. */
void *km_pbw_zalloc(ProtobufCAllocator *a, size_t n);

/* A repeated number field of varints (elsz 4: 32-bit values and enums; 8: 64-bit), one value or
 * a packed run of them, appended to the array: 0, or -1 when protobuf-c would refuse the field
 * (another wire type, a packed varint cut short) or out of memory. */
int km_pbw_varints(ProtobufCAllocator *a, const struct km_pbw *f, void *arrayp, size_t *n,
		   size_t elsz);

/* ---- the kit of the hand-written readers ----------------------------------------------------
 * A reader is a function of (ProtobufCAllocator *a, const uint8_t *p, size_t n) returning its
 * message m, allocated from a, or NULL when protobuf-c would refuse the bytes. Its body is
 * PBW_EACH_FIELD(p, n) { switch (f.num) { case 1: PBW_U32(m->x); break; ...
 * default: PBW_OTHER(descriptor); } } PBW_END(m); each field macro leaves the reader (NULL) when
 * the field is not of its kind. */

/* Walk the fields of [p, p + n) with f (p may be NULL when n is 0: an empty payload). */
#define PBW_EACH_FIELD(p, n)                                                                       \
	const uint8_t *at_ = (p), *end_ = (n) ? (p) + (n) : (p);                                   \
	struct km_pbw f;                                                                           \
	int rc_;                                                                                   \
	while ((rc_ = km_pbw_next(&at_, end_, &f)) == 1)
#define PBW_END(m) return rc_ == 0 ? (m) : NULL
#define PBW_NUMBER(dst, wire_type, value)                                                          \
	do {                                                                                       \
		if (f.type != (wire_type))                                                         \
			return NULL;                                                               \
		(dst) = (value);                                                                   \
	} while (0)
#define PBW_U32(dst) PBW_NUMBER(dst, KM_PBW_VARINT, km_pbw_u32(&f))
#define PBW_U64(dst) PBW_NUMBER(dst, KM_PBW_VARINT, km_pbw_u64(&f))
#define PBW_FIXED32(dst) PBW_NUMBER(dst, KM_PBW_I32, km_pbw_fixed32(&f))
/* an enum is a 32-bit int in protobuf-c */
#define PBW_ENUM(dst) PBW_NUMBER(dst, KM_PBW_VARINT, (__typeof__(dst))(int32_t)km_pbw_u32(&f))
#define PBW_STR(dst)                                                                               \
	do {                                                                                       \
		if (!((dst) = km_pbw_string(a, &f)))                                               \
			return NULL;                                                               \
	} while (0)
#define PBW_BYTES(dst)                                                                             \
	do {                                                                                       \
		if (km_pbw_bytes(a, &f, &(dst)))                                                   \
			return NULL;                                                               \
	} while (0)
#define PBW_MSG(dst, reader)                                                                       \
	do {                                                                                       \
		if (f.type != KM_PBW_LEN || !((dst) = reader(a, f.val, f.len)))                    \
			return NULL;                                                               \
	} while (0)
#define PBW_APPEND(array, n_array, value)                                                          \
	do {                                                                                       \
		if (km_pbw_append(a, &(array), &(n_array), sizeof(*(array)), &(value)))            \
			return NULL;                                                               \
	} while (0)
#define PBW_VARINTS(array, n_array)                                                                \
	do {                                                                                       \
		if (km_pbw_varints(a, &f, &(array), &(n_array), sizeof(*(array))))                 \
			return NULL;                                                               \
	} while (0)
/* Writing, for the hand-packed messages (the xDS agent's full-sync rows, the map writer's dump
 * pages): a varint at p (at most 10 bytes), and the tag of a length-delimited field. */
static inline size_t km_pbw_put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}
#define KM_PBW_TAG_LEN(field) ((uint64_t)(field) << 3 | KM_PBW_LEN)

#define PBW_OTHER(desc)                                                                            \
	do {                                                                                       \
		if (km_pbw_check(&(desc), &f, a))                                                  \
			return NULL;                                                               \
	} while (0)

#endif
