/* node_cidrs.c — this node's pod CIDRs from its Node object (node_cidrs.h). */
#include "services/ipsec-agent/node_cidrs.h"

#include <stdio.h>
#include <string.h>

#include "shared/errbuf.h"
#include "shared/kube/kube_client.h"

/* Append one CIDR (validated later with the flags' CIDRs) to out. */
static int append(char *out, size_t outlen, const char *cidr)
{
	size_t used = strlen(out);
	int n = snprintf(out + used, outlen - used, "%s%s", used ? "," : "", cidr);

	return n < 0 || (size_t)n >= outlen - used ? -1 : 0;
}

int km_node_pod_cidrs_fetch(const char *kubeconfig, const char *node, long timeout_ms, char *out,
			    size_t outlen, char *err, size_t errlen)
{
	struct km_kube_client c;
	char path[512], why[512];
	json_t *obj = NULL, *list, *item;
	const char *one;
	size_t i;
	int status, rc = -1;

	out[0] = '\0';
	if (!km_kube_valid_name(node))
		return km_errf(err, errlen, "node name '%.60s' cannot name a Kubernetes object", node);
	if (km_kube_open(&c, kubeconfig, timeout_ms, why, sizeof(why)) != 0)
		return km_errf(err, errlen, "%s", why);
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
	status = km_kube_request(&c, "GET", path, NULL, NULL, &obj, why, sizeof(why));
	km_kube_close(&c);
	if (status != 200) {
		km_errf(err, errlen, "reading node %s: %s", node, why);
		goto out;
	}
	list = json_object_get(json_object_get(obj, "spec"), "podCIDRs");
	one = json_string_value(json_object_get(json_object_get(obj, "spec"), "podCIDR"));
	rc = 0;
	if (json_array_size(list)) {
		json_array_foreach(list, i, item) {
			if (!json_is_string(item) || append(out, outlen, json_string_value(item))) {
				rc = km_errf(err, errlen, "node %s: spec.podCIDRs is not a short list of "
					     "strings", node);
				break;
			}
		}
	} else if (one && append(out, outlen, one)) {
		rc = km_errf(err, errlen, "node %s: spec.podCIDR is too long", node);
	}
out:
	json_decref(obj);
	return rc;
}
