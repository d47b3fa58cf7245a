/* enroll_rule.h — whether a pod belongs in the mesh, from its Kubernetes object and its
 * namespace's, in this order (the first rule that applies decides):
 *   1. annotation sidecar.istio.io/status (a sidecar-injected pod)           no
 *   2. spec.hostNetwork true                                                 no
 *   3. label gateway.istio.io/managed = istio.io-mesh-controller (waypoint)  no
 *   4. pod label istio.io/dataplane-mode = Kmesh                            yes
 *   5. pod label istio.io/dataplane-mode = none                              no
 *   6. namespace label istio.io/dataplane-mode = Kmesh                      yes
 *   7. otherwise                                                             no
 * Label values compare without regard to letter case. */
#ifndef KM_CNI_ENROLL_RULE_H
#define KM_CNI_ENROLL_RULE_H

#include <jansson.h>

struct km_enroll_decision {
	int enroll;
	const char *why; /* static text naming the rule that decided */
};

/* pod and ns are the API objects (ns may be NULL when not needed or not fetched). Returns the
 * decision; needs_namespace is set when the pod alone did not decide (rules 6-7). */
struct km_enroll_decision km_enroll_decide(const json_t *pod, const json_t *ns,
					   int *needs_namespace);

#endif
