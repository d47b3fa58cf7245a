/* yaml_json.h — a YAML document (kubeconfig files, Kubernetes objects; JSON is YAML too) read
 * into a jansson tree. Bounded: no aliases (no expansion bombs), nesting at most 64 deep; the
 * caller bounds the text size. Plain scalars true/false, null/~ and integers become JSON
 * booleans, null and integers; everything else is a string. */
#ifndef KM_SHARED_KUBE_YAML_JSON_H
#define KM_SHARED_KUBE_YAML_JSON_H

#include <jansson.h>
#include <stddef.h>

/* The first document of text[0..len), or NULL with err filled. */
json_t *km_yaml_load(const char *text, size_t len, char *err, size_t errlen);

#endif
