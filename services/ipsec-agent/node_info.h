/* node_info.h — the KmeshNodeInfo resource (kmesh.net/v1alpha1, namespaced, in kmesh-system,
 * named after the node; kmesh-userspace.md 3.7) as JSON: read from the Kubernetes API into a
 * node spec (validated as node_spec.h does), and this node's own object written out. Field
 * names are Kmesh's: spec.spi, spec.addresses, spec.bootID, spec.podCIDRS. */
#ifndef KM_IPSEC_NODE_INFO_H
#define KM_IPSEC_NODE_INFO_H

#include <stddef.h>

#include <jansson.h>

#include "services/ipsec-agent/plan.h"

#define KM_NODE_INFO_NAMESPACE "kmesh-system"
#define KM_NODE_INFO_API "kmesh.net/v1alpha1"

/* Returns 0, or -1 with err filled (the object's name in it when it has one). */
int km_node_info_parse(const json_t *obj, struct km_ipsec_node *out, char *err, size_t errlen);
/* This node's object (new reference), or NULL when out of memory. */
json_t *km_node_info_build(const struct km_ipsec_node *self);

#endif
