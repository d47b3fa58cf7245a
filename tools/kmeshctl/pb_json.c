/* pb_json.c — see pb_json.h. */
#include "tools/kmeshctl/pb_json.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "shared/addr.h"

static json_t *bytes_json(const ProtobufCBinaryData *b)
{
	struct km_addr a;
	char text[KM_ADDR_STRLEN];

	if ((b->len == 4 || b->len == 16) && km_addr_from_bytes(b->data, b->len, &a) == 0)
		return json_string(km_addr_format(&a, text));
	if (b->len > 256)
		return json_sprintf("(%zu bytes)", b->len);
	{
		char hex[2 * 256 + 1];

		for (size_t i = 0; i < b->len; i++)
			snprintf(hex + 2 * i, 3, "%02x", b->data[i]);
		hex[2 * b->len] = '\0';
		return json_string(hex);
	}
}

/* One value of field f stored at p. */
static json_t *value_json(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		return json_integer(*(const int32_t *)p);
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return json_integer(*(const uint32_t *)p);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		return json_integer(*(const int64_t *)p);
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64: { /* JSON numbers here are signed 64-bit: beyond, as text */
		uint64_t u = *(const uint64_t *)p;

		return u <= INT64_MAX ? json_integer((json_int_t)u) : json_sprintf("%llu",
									    (unsigned long long)u);
	}
	case PROTOBUF_C_TYPE_FLOAT:
		return json_real(*(const float *)p);
	case PROTOBUF_C_TYPE_DOUBLE:
		return json_real(*(const double *)p);
	case PROTOBUF_C_TYPE_BOOL:
		return json_boolean(*(const protobuf_c_boolean *)p);
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumValue *ev =
			protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)p);

		return ev ? json_string(ev->name) : json_integer(*(const int *)p);
	}
	case PROTOBUF_C_TYPE_STRING:
		return json_string(*(char *const *)p ? *(char *const *)p : "");
	case PROTOBUF_C_TYPE_BYTES:
		return bytes_json(p);
	case PROTOBUF_C_TYPE_MESSAGE:
		return *(ProtobufCMessage *const *)p ? km_pb_json(*(ProtobufCMessage *const *)p)
						      : json_null();
	}
	return json_null();
}

static size_t value_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	default:
		return 4;
	}
}

json_t *km_pb_json(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	json_t *o = json_object();

	for (unsigned i = 0; o && i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *base = (const char *)m;

		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			if (*(const uint32_t *)(base + f->quantifier_offset) != f->id)
				continue; /* another member of the oneof is set */
			json_object_set_new(o, f->name, value_json(f, base + f->offset));
		} else if (f->label == PROTOBUF_C_LABEL_OPTIONAL &&
			   ((f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE &&
			     !*(const protobuf_c_boolean *)(base + f->quantifier_offset)) ||
			    ((f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE) &&
			     !*(void *const *)(base + f->offset)))) {
			continue; /* an optional field that is not set */
		} else if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			const char *arr = *(char *const *)(base + f->offset);
			json_t *a = json_array();

			for (size_t k = 0; a && k < n; k++)
				json_array_append_new(a, value_json(f, arr + k * value_size(f)));
			json_object_set_new(o, f->name, a);
		} else {
			json_object_set_new(o, f->name, value_json(f, base + f->offset));
		}
	}
	return o;
}
