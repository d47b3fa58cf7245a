/* pod_cache.c — this node's pods and the namespaces, from the API's watches (see pod_cache.h). */
#include "services/cni-agent/pod_cache.h"

#include <stdio.h>
#include <string.h>

#include "shared/log.h"

/* The annotations the rules and the annotator read; the others are not kept. */
static const char *const kept_annotations[] = { "sidecar.istio.io/status", "kmesh.net/redirection",
						"ambient.istio.io/redirection" };

json_t *km_pod_cache_trim(const json_t *obj)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const json_t *ann = json_object_get(meta, "annotations");
	const json_t *labels = json_object_get(meta, "labels");
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *host = json_object_get(spec, "hostNetwork");
	const json_t *sa = json_object_get(spec, "serviceAccountName");
	const json_t *ips = json_object_get(json_object_get(obj, "status"), "podIPs");
	json_t *out = json_object(), *m = json_object(), *a = json_object();

	if (!out || !m || !a) {
		json_decref(out);
		json_decref(m);
		json_decref(a);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(kept_annotations) / sizeof(kept_annotations[0]); i++) {
		json_t *v = json_object_get(ann, kept_annotations[i]);

		if (v)
			json_object_set(a, kept_annotations[i], v);
	}
	json_object_set(m, "name", json_object_get(meta, "name"));
	json_object_set(m, "namespace", json_object_get(meta, "namespace"));
	json_object_set(m, "uid", json_object_get(meta, "uid"));
	if (json_is_object(labels))
		json_object_set_new(m, "labels", json_deep_copy(labels));
	json_object_set_new(m, "annotations", a);
	json_object_set_new(out, "metadata", m);
	if (json_is_true(host) || json_is_string(sa)) {
		json_t *s = json_object();

		if (json_is_true(host))
			json_object_set_new(s, "hostNetwork", json_true());
		if (json_is_string(sa)) /* the tunnel's identity of the pod */
			json_object_set(s, "serviceAccountName", (json_t *)sa);
		json_object_set_new(out, "spec", s);
	}
	if (json_is_array(ips) && json_array_size(ips) <= 8) /* the tunnel's addresses of it */
		json_object_set_new(out, "status", json_pack("{s:O}", "podIPs", ips));
	return out;
}

/* "namespace/name" of a pod, or 0 when it has none. */
static int pod_key(const json_t *pod, char *key, size_t len)
{
	const json_t *meta = json_object_get(pod, "metadata");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const char *name = json_string_value(json_object_get(meta, "name"));

	return ns && name && snprintf(key, len, "%s/%s", ns, name) < (int)len;
}

static void put(json_t *map, const char *key, const json_t *obj)
{
	json_t *t = km_pod_cache_trim(obj);

	if (t)
		json_object_set_new(map, key, t);
}

void km_pod_cache_put_pod(struct km_pod_cache *c, const json_t *pod)
{
	char key[600];

	if (pod_key(pod, key, sizeof(key)))
		put(c->pod_by_key, key, pod);
}

void km_pod_cache_put_namespace(struct km_pod_cache *c, const json_t *ns)
{
	const char *name = json_string_value(json_object_get(json_object_get(ns, "metadata"), "name"));

	if (name)
		put(c->ns_by_name, name, ns);
}

/* One change of either collection into map (keyed by key_of). */
static void apply(struct km_pod_cache *c, json_t *map, int pods, enum km_kube_change change,
		  json_t *obj)
{
	char key[600];
	size_t i;
	json_t *item;

	switch (change) {
	case KM_KUBE_LISTED: {
		json_t *fresh = json_object();

		if (!fresh)
			return;
		json_array_foreach(obj, i, item) {
			const char *name = json_string_value(
				json_object_get(json_object_get(item, "metadata"), "name"));
			json_t *t = km_pod_cache_trim(item);

			if (t && (pods ? pod_key(item, key, sizeof(key)) : name != NULL))
				json_object_set_new(fresh, pods ? key : name, t);
			else
				json_decref(t);
		}
		json_object_clear(map);
		json_object_update(map, fresh);
		json_decref(fresh);
		if (pods) {
			c->pods_listed = 1;
			c->pods_listed_ms = uv_now(c->loop);
		} else {
			c->ns_listed = 1;
		}
		km_debug("cache: %zu %s listed", json_object_size(map), pods ? "pods" : "namespaces");
		break;
	}
	case KM_KUBE_ADDED:
	case KM_KUBE_MODIFIED:
		if (pods)
			km_pod_cache_put_pod(c, obj);
		else
			km_pod_cache_put_namespace(c, obj);
		break;
	case KM_KUBE_DELETED:
		if (pods ? pod_key(obj, key, sizeof(key))
			 : snprintf(key, sizeof(key), "%s",
				    json_string_value(json_object_get(json_object_get(obj, "metadata"),
								      "name")) ?: "") > 0)
			json_object_del(map, key);
		break;
	}
}

static void on_pods(void *arg, enum km_kube_change change, json_t *obj)
{
	struct km_pod_cache *c = arg;

	apply(c, c->pod_by_key, 1, change, obj);
	if (c->on_change)
		c->on_change(c->arg);
}

static void on_namespaces(void *arg, enum km_kube_change change, json_t *obj)
{
	struct km_pod_cache *c = arg;

	apply(c, c->ns_by_name, 0, change, obj);
	if (c->on_change)
		c->on_change(c->arg);
}

int km_pod_cache_start(struct km_pod_cache *c, uv_loop_t *loop, const char *kubeconfig,
		       const char *node_name, long resync_ms, void (*on_change)(void *arg),
		       void *arg, char *err, size_t errlen)
{
	char path[512];

	memset(c, 0, sizeof(*c));
	c->loop = loop;
	c->on_change = on_change;
	c->arg = arg;
	c->pod_by_key = json_object();
	c->ns_by_name = json_object();
	if (!c->pod_by_key || !c->ns_by_name) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* node names are DNS subdomains: nothing to escape */
	if (snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=spec.nodeName%%3D%s",
		     node_name) >= (int)sizeof(path)) {
		snprintf(err, errlen, "node name too long");
		return -1;
	}
	if (km_kube_watch_start(&c->pods, loop, kubeconfig, path, resync_ms, on_pods, c, err,
				errlen) != 0)
		return -1;
	if (km_kube_watch_start(&c->namespaces, loop, kubeconfig, "/api/v1/namespaces", resync_ms,
				on_namespaces, c, err, errlen) != 0) {
		km_kube_watch_stop(&c->pods);
		return -1;
	}
	return 0;
}

void km_pod_cache_stop(struct km_pod_cache *c)
{
	km_kube_watch_stop(&c->pods);
	km_kube_watch_stop(&c->namespaces);
	json_decref(c->pod_by_key);
	json_decref(c->ns_by_name);
	c->pod_by_key = c->ns_by_name = NULL;
}

const json_t *km_pod_cache_pod(const struct km_pod_cache *c, const char *ns, const char *name)
{
	char key[600];

	snprintf(key, sizeof(key), "%s/%s", ns, name);
	return json_object_get(c->pod_by_key, key);
}

const json_t *km_pod_cache_namespace(const struct km_pod_cache *c, const char *name)
{
	return json_object_get(c->ns_by_name, name);
}
