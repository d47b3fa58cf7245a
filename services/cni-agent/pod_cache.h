/* pod_cache.h — what the CNI agent knows before the kubelet asks: this node's pods (a list and
 * watch with fieldSelector spec.nodeName=NODE) and every namespace, kept trimmed to the fields
 * the enrollment rules and the annotation read (enroll_rule.h), and the service account and
 * addresses the tunnel is told (tunnel_feed.h). Fed by two km_kube_watch threads;
 * read in the loop. A pod fetched on a cache miss (one GET) is put in too, and replaced by the
 * watch's version when that arrives. */
#ifndef KM_CNI_POD_CACHE_H
#define KM_CNI_POD_CACHE_H

#include <jansson.h>
#include <stdint.h>
#include <uv.h>

#include "shared/kube/kube_watch.h"

struct km_pod_cache {
	struct km_kube_watch pods, namespaces;
	json_t *pod_by_key;  /* "namespace/name" -> trimmed pod */
	json_t *ns_by_name;  /* name -> trimmed namespace */
	int pods_listed, ns_listed; /* a whole list has arrived (what is absent is gone) */
	uint64_t pods_listed_ms;    /* uv_now of the last pod list */
	uv_loop_t *loop;
	void (*on_change)(void *arg); /* after each change the watches bring */
	void *arg;
};

/* Start both watches. Returns 0, or -1 with err filled. */
int km_pod_cache_start(struct km_pod_cache *c, uv_loop_t *loop, const char *kubeconfig,
		       const char *node_name, long resync_ms, void (*on_change)(void *arg),
		       void *arg, char *err, size_t errlen);
void km_pod_cache_stop(struct km_pod_cache *c);
/* Borrowed; NULL when not known. */
const json_t *km_pod_cache_pod(const struct km_pod_cache *c, const char *ns, const char *name);
const json_t *km_pod_cache_namespace(const struct km_pod_cache *c, const char *name);
/* Put an object fetched by GET (trimmed here; obj is borrowed). */
void km_pod_cache_put_pod(struct km_pod_cache *c, const json_t *pod);
void km_pod_cache_put_namespace(struct km_pod_cache *c, const json_t *ns);
/* The fields kept of a pod or namespace (a new reference), exposed for tests. */
json_t *km_pod_cache_trim(const json_t *obj);

#endif
