/* kube_calls.h — Kubernetes API requests of the CNI agent (a pod or namespace GET on a cache
 * miss, the annotation PATCH), one at a time on a lane (lane.h), with one client per lane opened
 * on first use from the agent's kubeconfig (KM_KUBECONFIG_IN_CLUSTER: its service account). */
#ifndef KM_CNI_KUBE_CALLS_H
#define KM_CNI_KUBE_CALLS_H

#include <jansson.h>

#include "services/cni-agent/lane.h"
#include "shared/kube/kube_client.h"

struct km_kube_calls {
	struct km_lane lane;
	struct km_kube_client client; /* used in the lane's thread only */
	int open;
	const char *kubeconfig;
	long timeout_ms;
	volatile int stop;
};

struct km_kube_call {
	struct km_lane_job job;
	char method[8];
	char path[600];
	char *body;      /* a merge patch, or NULL */
	int status;      /* HTTP status, -1 when no answer */
	json_t *out;     /* a 2xx answer (the callee's to decref) */
	char why[400];
	void (*done)(struct km_kube_call *call); /* in the loop; owns call (km_kube_call_free) */
	void *arg;
	char key[600];   /* the caller's: what the call is about */
	struct km_kube_calls *kc;
};

void km_kube_calls_init(struct km_kube_calls *kc, uv_loop_t *loop, const char *kubeconfig,
			long timeout_ms);
/* Queue a request. body is copied. Returns the call (done follows), or NULL (lane full). */
struct km_kube_call *km_kube_call(struct km_kube_calls *kc, const char *method, const char *path,
				  const char *body, void (*done)(struct km_kube_call *),
				  void *arg);
void km_kube_call_free(struct km_kube_call *call);
void km_kube_calls_stop(struct km_kube_calls *kc);

#endif
