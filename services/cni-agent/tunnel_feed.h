/* tunnel_feed.h — the CNI agent tells the node's tunnel which pods are enrolled here (as
 * istio-cni tells ztunnel): each pod's container id, namespace, name, service account, addresses
 * and netns cookie, so that the tunnel holds a certificate for each identity with a pod on the
 * node (services/tunnel/pods.h).
 *   - The pods: every container this agent enrolled (and, after a restart, every one recorded in
 *     the state dir's containers/), until its DEL or its collection.
 *   - Sent as snapshots (TunnelPods.full) once the cache holds the node's whole pod list: the
 *     service account and the addresses the ADD did not carry come from the cache. A change is
 *     sent within a tick (changes in between go together).
 *   - Every every_ms an empty message asks how many pods the tunnel holds; a count other than
 *     the last snapshot left (a restarted tunnel holds none) sends the snapshot again.
 *   - The tunnel down or slow never holds up the CNI plugin: nothing here is on the ADD's path. */
#ifndef KM_CNI_TUNNEL_FEED_H
#define KM_CNI_TUNNEL_FEED_H

#include <jansson.h>
#include <stdint.h>
#include <uv.h>

#include "services/cni-agent/mw_calls.h"
#include "services/cni-agent/pod_cache.h"

struct km_tunnel_feed {
	struct km_mw_calls calls;
	const struct km_pod_cache *cache;
	json_t *pods;        /* container id -> {cookie, ns, name, addresses} */
	int on, dirty, in_flight;
	int sent_snapshot;   /* the last message was a snapshot: its reply sets held */
	uint32_t held;       /* pods the tunnel said it holds after our last snapshot */
	uint64_t last_ms, every_ms;
	uint64_t snapshots, failures; /* snapshots the tunnel took; messages that failed */
	char last_error[400];
};

/* socket NULL or "": off (every call below does nothing). */
void km_tunnel_feed_init(struct km_tunnel_feed *f, uv_loop_t *loop, const char *socket,
			 int timeout_ms, unsigned every_ms, const struct km_pod_cache *cache);
/* The containers recorded in state_dir/containers/ (after a restart). */
void km_tunnel_feed_seed(struct km_tunnel_feed *f, const char *state_dir);
/* An enrollment (addresses: the Enroll's raw 4- or 16-byte addresses, may be none). */
void km_tunnel_feed_add(struct km_tunnel_feed *f, const char *container_id, uint64_t cookie,
			const char *ns, const char *name, const ProtobufCBinaryData *addresses,
			size_t n_addresses);
void km_tunnel_feed_remove(struct km_tunnel_feed *f, const char *container_id);
/* From the agent's tick: send what is due. */
void km_tunnel_feed_tick(struct km_tunnel_feed *f, uint64_t now_ms);
void km_tunnel_feed_stop(struct km_tunnel_feed *f);

/* The TunnelPods snapshot of pods (as kept above) with the cache's service accounts and
 * addresses; pods the cache lacks are left out. Exposed for the tests; free with
 * km_tunnel_feed_free_msg. */
Kmesh__Ipc__TunnelPods *km_tunnel_feed_snapshot(const json_t *pods, const struct km_pod_cache *c);
void km_tunnel_feed_free_msg(Kmesh__Ipc__TunnelPods *m);

#endif
