/* json_pb.h — the proto3 JSON mapping, field by field, for the decoders that map JSON onto the
 * messages istiod sends (resource_json.c: Address; policy_json.c: Authorization): a field under
 * its JSON or its proto name (null = absent), strings bounded, integers as numbers or strings,
 * enums by name or number, IP bytes as IP text or base64, arrays bounded. Every function returns
 * 0, or -1 with err (at least KM_JERR_LEN bytes) saying "PATH: what is wrong". */
#ifndef KM_XDS_JSON_PB_H
#define KM_XDS_JSON_PB_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

#define KM_JERR_LEN 320

#define KM_JALLOC_ARRAY(ptr, n) ((ptr) = calloc((n) ? (n) : 1, sizeof(*(ptr))))

int km_jbad(char *err, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
json_t *km_jfield(const json_t *obj, const char *json_name, const char *proto_name);
/* A string field into a malloc'd copy (absent: *out left as it was). */
int km_jstring(const json_t *obj, const char *jn, const char *pn, char **out, const char *path,
	       char *err);
int km_ju32(const json_t *v, uint32_t *out, const char *path, const char *name, char *err);
int km_jenum(const json_t *v, const char *const *names, int count, int *out, const char *path,
	     const char *name, char *err);
int km_jbool(const json_t *v, int *out, const char *path, const char *name, char *err);
int km_jip_bytes(const json_t *v, ProtobufCBinaryData *out, const char *path, char *err);
/* *out = the array (absent: NULL). */
int km_jarray(const json_t *obj, const char *jn, const char *pn, size_t max, json_t **out,
	      const char *path, char *err);

#endif
