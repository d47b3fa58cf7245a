/* kube.h — kmeshctl's way to the Kubernetes API (secret and waypoint): where its credentials
 * come from, and one request. */
#ifndef KM_KMESHCTL_KUBE_H
#define KM_KMESHCTL_KUBE_H

#include <jansson.h>

#include "shared/kube/kube_client.h"
#include "tools/kmeshctl/procs.h"

/* Open a client: --kubeconfig / KUBECONFIG, else ~/.kube/config, else the pod's service
 * account. Returns 0, or -1 with the reason printed. */
int km_ctl_kube_open(const struct km_ctl *ctl, struct km_kube_client *c);
/* One request; a body is JSON (a merge patch for PATCH; method "APPLY" is a server-side apply:
 * a PATCH of type application/apply-patch+yaml). Returns the HTTP status, or -1 with err
 * filled; a 2xx answer's JSON in *out (NULL allowed). */
int km_ctl_kube_call(struct km_kube_client *c, const char *method, const char *path,
		     const char *body, json_t **out, char *err, size_t errlen);

/* After a 404: is it the API itself that is missing (its CRDs not installed: the server's plain
 * "404 page not found"), rather than the object (a Status NotFound)? */
int km_ctl_kube_api_missing(const char *err);

#endif
