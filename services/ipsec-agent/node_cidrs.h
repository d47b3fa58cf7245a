/* node_cidrs.h — this node's pod CIDRs read from its Kubernetes Node object (spec.podCIDRs, else
 * spec.podCIDR), for a DaemonSet that cannot know them from the Downward API. */
#ifndef KM_IPSEC_NODE_CIDRS_H
#define KM_IPSEC_NODE_CIDRS_H

#include <stddef.h>

/* GET /api/v1/nodes/NODE with the kubeconfig (a path or "in-cluster"); writes the CIDRs, comma
 * separated, into out (empty when the node has none). Blocking, bounded by timeout_ms. Returns 0,
 * or -1 with err filled. */
int km_node_pod_cidrs_fetch(const char *kubeconfig, const char *node, long timeout_ms, char *out,
			    size_t outlen, char *err, size_t errlen);

#endif
