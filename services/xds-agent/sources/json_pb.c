/* json_pb.c — proto3 JSON field mapping shared by the decoders (see json_pb.h). */
#include "services/xds-agent/sources/json_pb.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/xds-agent/core/resources.h"
#include "shared/addr.h"
#include "shared/base64.h"

int km_jbad(char *err, const char *path, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(err, KM_JERR_LEN, "%s: %s", path, what);
	return -1;
}

/* A field by its JSON name or its proto name; JSON null counts as absent. */
json_t *km_jfield(const json_t *obj, const char *json_name, const char *proto_name)
{
	json_t *v = json_object_get(obj, json_name);

	if (!v && proto_name)
		v = json_object_get(obj, proto_name);
	return json_is_null(v) ? NULL : v;
}

/* String field into a malloc'd copy (absent: left as the message default). */
int km_jstring(const json_t *obj, const char *jn, const char *pn, char **out, const char *path,
		    char *err)
{
	json_t *v = km_jfield(obj, jn, pn);

	if (!v)
		return 0;
	if (!json_is_string(v))
		return km_jbad(err, path, "'%s' must be a string", jn);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return km_jbad(err, path, "'%s' contains a NUL byte", jn);
	if (json_string_length(v) > KM_RES_MAX_STRING)
		return km_jbad(err, path, "'%s' is longer than %d bytes", jn, KM_RES_MAX_STRING);
	*out = strdup(json_string_value(v));
	return *out ? 0 : km_jbad(err, path, "out of memory");
}

int km_ju32(const json_t *v, uint32_t *out, const char *path, const char *name, char *err)
{
	json_int_t n;

	if (json_is_integer(v)) {
		n = json_integer_value(v);
	} else if (json_is_string(v)) {
		char *end;
		const char *s = json_string_value(v);

		errno = 0;
		n = strtoll(s, &end, 10);
		if (errno || end == s || *end)
			return km_jbad(err, path, "'%s' is not an integer", name);
	} else {
		return km_jbad(err, path, "'%s' must be an integer", name);
	}
	if (n < 0 || n > 0xffffffffLL)
		return km_jbad(err, path, "'%s' = %lld is out of range", name, (long long)n);
	*out = (uint32_t)n;
	return 0;
}

int km_jenum(const json_t *v, const char *const *names, int count, int *out, const char *path,
		  const char *name, char *err)
{
	if (json_is_string(v))
		for (int i = 0; i < count; i++)
			if (names[i] && strcmp(json_string_value(v), names[i]) == 0) {
				*out = i;
				return 0;
			}
	if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < count) {
		*out = (int)json_integer_value(v);
		return 0;
	}
	return km_jbad(err, path, "'%s' is not a known value", name);
}

/* Bytes holding an IP: IP text (convenient in hand-written files) or base64 (proto JSON). */
int km_jip_bytes(const json_t *v, ProtobufCBinaryData *out, const char *path, char *err)
{
	struct km_addr a;
	uint8_t raw[16];
	long n;

	if (!json_is_string(v))
		return km_jbad(err, path, "address must be a string");
	if (km_addr_parse(json_string_value(v), &a) == 0) {
		n = (long)km_addr_to_bytes(&a, raw);
	} else {
		n = km_base64_decode(json_string_value(v), json_string_length(v), raw, sizeof(raw));
		if (n < 0)
			return km_jbad(err, path, "'%.64s' is neither an IP address nor base64 of one",
				   json_string_value(v));
	}
	out->data = malloc(n ? (size_t)n : 1);
	if (!out->data)
		return km_jbad(err, path, "out of memory");
	memcpy(out->data, raw, (size_t)n);
	out->len = (size_t)n;
	return 0;
}

int km_jarray(const json_t *obj, const char *jn, const char *pn, size_t max, json_t **out,
		   const char *path, char *err)
{
	json_t *v = km_jfield(obj, jn, pn);

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_array(v))
		return km_jbad(err, path, "'%s' must be an array", jn);
	if (json_array_size(v) > max)
		return km_jbad(err, path, "'%s' has %zu entries, at most %zu", jn, json_array_size(v), max);
	*out = v;
	return 0;
}

int km_jbool(const json_t *v, int *out, const char *path, const char *name, char *err)
{
	if (!json_is_boolean(v))
		return km_jbad(err, path, "'%s' must be true or false", name);
	*out = json_is_true(v);
	return 0;
}
