/* agent.h — the node's CNI agent: answers the CNI plugin's calls (ADD, DEL, CHECK) over a Unix
 * socket (root only), deciding from its cache of this node's pods and the namespaces
 * (pod_cache.h) instead of asking the API while the kubelet waits, and enrolling through the map
 * writer (mw_calls.h).
 *   - ADD of a pod the cache does not hold yet waits up to cache_wait_ms for its watch event,
 *     then GETs it once (counted: kmesh_cni_agent_cache_misses_total, ..._api_fallbacks_total).
 *   - The pod is annotated kmesh.net/redirection=enabled (with hbone, also
 *     ambient.istio.io/redirection=enabled) off the ADD path, retried with a backoff while the
 *     pod exists.
 *   - With a tunnel, the enrolled pods are told to it (tunnel_feed.h), for their certificates.
 *   - An ADD it cannot finish (the API or the map writer unavailable), or that the plugin could
 *     not deliver (the agent was down: the plugin leaves it in undecided/), is decided again by
 *     the reconcile every reconcile_ms once the cache holds the pod; a DEL withdraws it.
 *   - The cache is the truth: an enrolled container older than gc_age_s whose pod is absent from
 *     a complete list of the node's pods, and which the API confirms is gone (404), is
 *     unenrolled and forgotten (a DEL that never came).
 * Counters go to the state dir's metrics.prom, as the plugin's do. */
#ifndef KM_CNI_AGENT_H
#define KM_CNI_AGENT_H

#include <stdint.h>
#include <uv.h>

#include "ipc/server.h"
#include "services/cni-agent/kube_calls.h"
#include "services/cni-agent/mw_calls.h"
#include "services/cni-agent/pod_cache.h"
#include "services/cni-agent/tunnel_feed.h"

struct km_cni_agent_config {
	const char *socket_path;       /* where the plugin calls */
	const char *state_dir;         /* shared with the plugin (cni_state.h) */
	const char *map_writer_socket;
	const char *kubeconfig;        /* KM_KUBECONFIG_IN_CLUSTER: the pod's service account */
	const char *node_name;
	unsigned cache_wait_ms;        /* default 500 */
	unsigned timeout_ms;           /* per map writer or API request: a quarter of the plugin's */
	unsigned reconcile_ms;         /* default 2000 */
	unsigned gc_age_s;             /* default 60 */
	long resync_ms;                /* a new list of pods and namespaces; default 300000 */
	int annotate;                  /* default 1 */
	const char *tunnel_socket;     /* the tunnel's (tunnel_feed.h); NULL or "": none */
	/* annotate ambient.istio.io/redirection=enabled too: istiod then advertises the pods as
	 * HBONE (Workload.tunnel_protocol), so ztunnels and waypoints send to podIP:15008 */
	int hbone;
};

struct km_cni_req;
struct km_cni_annotation;

struct km_cni_agent {
	uv_loop_t *loop;
	const struct km_cni_agent_config *cfg;
	struct km_ipc_server srv;
	struct km_pod_cache cache;
	struct km_mw_calls mw;
	struct km_kube_calls gets, patches;
	struct km_tunnel_feed tunnel;
	struct km_cni_req *waiting;   /* calls waiting for the cache or a GET */
	struct km_cni_annotation *annotations;
	int patching;                 /* an annotation PATCH is in flight */
	uv_timer_t tick;
	uint64_t last_reconcile_ms, last_gc_ms;
	int started;
};

/* Start serving. Returns 0, or -1 (logged). */
int km_cni_agent_start(struct km_cni_agent *a, uv_loop_t *loop,
		       const struct km_cni_agent_config *cfg);
void km_cni_agent_stop(struct km_cni_agent *a);

#endif
