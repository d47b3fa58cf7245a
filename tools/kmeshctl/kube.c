/* kube.c — kmeshctl's Kubernetes API client (kube.h): the kubeconfig from --kubeconfig or
 * KUBECONFIG (the first file of a list), else ~/.kube/config, else the pod's service account
 * (in-cluster); and the API's answers turned into kmeshctl's errors. */
#include "tools/kmeshctl/kube.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared/atomic_file.h"
#include "shared/kube/kubeconfig.h"

#define KUBE_TIMEOUT_MS 10000

int km_ctl_kube_open(const struct km_ctl *ctl, struct km_kube_client *c)
{
	char path[4096], err[1024] = "";
	const char *home = getenv("HOME"), *in_pod = getenv("KUBERNETES_SERVICE_HOST");

	if (ctl->kubeconfig && *ctl->kubeconfig) {
		snprintf(path, sizeof(path), "%.*s", (int)strcspn(ctl->kubeconfig, ":"), ctl->kubeconfig);
	} else if (home && *home &&
		   (snprintf(path, sizeof(path), "%s/.kube/config", home), access(path, R_OK) == 0)) {
		/* the default file */
	} else if (in_pod && *in_pod) {
		snprintf(path, sizeof(path), "%s", KM_KUBECONFIG_IN_CLUSTER);
	} else {
		fprintf(stderr, "kmeshctl: no kubeconfig: give --kubeconfig or KUBECONFIG, or write "
				"~/.kube/config\n");
		return -1;
	}
	if (km_kube_open(c, path, ctl->timeout_ms > KUBE_TIMEOUT_MS ? ctl->timeout_ms : KUBE_TIMEOUT_MS,
			 err, sizeof(err)) != 0) {
		fprintf(stderr, "kmeshctl: %s\n", err);
		return -1;
	}
	return 0;
}

int km_ctl_kube_call(struct km_kube_client *c, const char *method, const char *path,
		     const char *body, json_t **out, char *err, size_t errlen)
{
	const char *type = !body ? NULL : !strcmp(method, "PATCH") ? "application/merge-patch+json"
				  : !strcmp(method, "APPLY") ? "application/apply-patch+yaml"
							     : "application/json";

	if (out)
		*out = NULL;
	return km_kube_request(c, strcmp(method, "APPLY") ? method : "PATCH", path, type, body, out,
			       err, errlen);
}

int km_ctl_kube_api_missing(const char *err)
{
	return strstr(err, "404 page not found") != NULL;
}
