/* node_watch.h — peers from the Kubernetes API: every KmeshNodeInfo in kmesh-system but this
 * node's own (kube_watch.h keeps the collection in view) becomes a peer of the agent, read and
 * validated by node_info.c.
 *   - An object deleted, or missing from a new list, is a peer gone. Peers given on the admin
 *     socket are not this watch's to remove.
 *   - After each list, XFRM objects of ours that no known peer needs are removed (peers that
 *     left while no agent ran); after the first, this node's object may be written (agent.h:
 *     km_ipsec_agent_listed).
 *   - An object that does not validate is logged (at each change and each list); if it was a
 *     peer, the peer stays as it was (a bad edit does not cut a node off).
 *   - This node's own object deleted, or changed by someone else, is written again. */
#ifndef KM_IPSEC_NODE_WATCH_H
#define KM_IPSEC_NODE_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "services/ipsec-agent/agent.h"
#include "shared/kube/kube_watch.h"

struct km_node_watch {
	struct km_kube_watch watch;
	struct km_ipsec_agent *agent;
	char (*names)[KM_IPSEC_NAME_MAX]; /* the peers this watch gave the agent */
	size_t n_names, cap_names;
	uint64_t refused; /* objects that did not validate */
};

/* Returns 0, or -1 with err filled. */
int km_node_watch_start(struct km_node_watch *nw, uv_loop_t *loop, struct km_ipsec_agent *agent,
			const char *kubeconfig, long resync_ms, char *err, size_t errlen);
void km_node_watch_stop(struct km_node_watch *nw);
/* An event handled as one from the API server's watch (kmeshctl inject): ADDED, MODIFIED or
 * DELETED with the object. */
void km_node_watch_event(struct km_node_watch *nw, enum km_kube_change change, json_t *obj);
/* New reference. */
json_t *km_node_watch_status(struct km_node_watch *nw);

#endif
