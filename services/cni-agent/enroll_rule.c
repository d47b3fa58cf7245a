/* enroll_rule.c — the enrollment rules (see enroll_rule.h). */
#include "services/cni-agent/enroll_rule.h"

#include <strings.h>

#define DATAPLANE_MODE "istio.io/dataplane-mode"

static const char *meta_string(const json_t *obj, const char *map, const char *key)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(obj, "metadata"),
								 map),
						 key));
}

struct km_enroll_decision km_enroll_decide(const json_t *pod, const json_t *ns,
					   int *needs_namespace)
{
	const char *mode = meta_string(pod, "labels", DATAPLANE_MODE);
	const char *managed = meta_string(pod, "labels", "gateway.istio.io/managed");
	const json_t *meta = json_object_get(pod, "metadata");

	*needs_namespace = 0;
	if (json_object_get(json_object_get(meta, "annotations"), "sidecar.istio.io/status"))
		return (struct km_enroll_decision){ 0, "the pod has an Istio sidecar" };
	if (json_is_true(json_object_get(json_object_get(pod, "spec"), "hostNetwork")))
		return (struct km_enroll_decision){ 0, "the pod uses the host network" };
	if (managed && !strcasecmp(managed, "istio.io-mesh-controller"))
		return (struct km_enroll_decision){ 0, "the pod is a waypoint" };
	if (mode && !strcasecmp(mode, "kmesh"))
		return (struct km_enroll_decision){ 1, "pod label " DATAPLANE_MODE "=Kmesh" };
	if (mode && !strcasecmp(mode, "none"))
		return (struct km_enroll_decision){ 0, "pod label " DATAPLANE_MODE "=none" };
	*needs_namespace = 1;
	mode = meta_string(ns, "labels", DATAPLANE_MODE);
	if (mode && !strcasecmp(mode, "kmesh"))
		return (struct km_enroll_decision){ 1, "namespace label " DATAPLANE_MODE "=Kmesh" };
	return (struct km_enroll_decision){ 0, "neither the pod nor its namespace is labelled "
					      DATAPLANE_MODE "=Kmesh" };
}
