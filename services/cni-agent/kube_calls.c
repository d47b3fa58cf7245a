/* kube_calls.c — API requests on a lane (see kube_calls.h). */
#include "services/cni-agent/kube_calls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void work(struct km_lane_job *j)
{
	struct km_kube_call *call = (struct km_kube_call *)j;
	struct km_kube_calls *kc = call->kc;

	for (int attempt = 0; attempt < 2; attempt++) {
		call->status = -1;
		if (!kc->open) { /* reads the kubeconfig (a service account's token) afresh */
			if (km_kube_open(&kc->client, kc->kubeconfig, kc->timeout_ms, call->why,
					 sizeof(call->why)) != 0)
				return;
			kc->client.stop = &kc->stop;
			kc->open = 1;
		}
		call->status = km_kube_request(&kc->client, call->method, call->path,
					       call->body ? "application/merge-patch+json" : NULL,
					       call->body, &call->out, call->why, sizeof(call->why));
		if (call->status != 401)
			return;
		/* the token rotated (projected tokens expire): once more with the new one */
		km_kube_close(&kc->client);
		kc->open = 0;
	}
}

static void done(struct km_lane_job *j)
{
	struct km_kube_call *call = (struct km_kube_call *)j;

	if (j->cancelled) {
		call->status = -1;
		snprintf(call->why, sizeof(call->why), "the CNI agent is stopping");
	}
	call->done(call);
}

void km_kube_calls_init(struct km_kube_calls *kc, uv_loop_t *loop, const char *kubeconfig,
			long timeout_ms)
{
	memset(kc, 0, sizeof(*kc));
	km_lane_init(&kc->lane, loop);
	kc->kubeconfig = kubeconfig;
	kc->timeout_ms = timeout_ms;
}

struct km_kube_call *km_kube_call(struct km_kube_calls *kc, const char *method, const char *path,
				  const char *body, void (*cb)(struct km_kube_call *), void *arg)
{
	struct km_kube_call *call = calloc(1, sizeof(*call));

	if (!call)
		return NULL;
	snprintf(call->method, sizeof(call->method), "%s", method);
	snprintf(call->path, sizeof(call->path), "%s", path);
	call->body = body ? strdup(body) : NULL;
	call->job.work = work;
	call->job.done = done;
	call->done = cb;
	call->arg = arg;
	call->kc = kc;
	if ((body && !call->body) || km_lane_push(&kc->lane, &call->job) != 0) {
		km_kube_call_free(call);
		return NULL;
	}
	return call;
}

void km_kube_call_free(struct km_kube_call *call)
{
	if (call) {
		json_decref(call->out);
		free(call->body);
		free(call);
	}
}

void km_kube_calls_stop(struct km_kube_calls *kc)
{
	kc->stop = 1;
	km_lane_stop(&kc->lane);
	if (kc->open && !kc->lane.running)
		km_kube_close(&kc->client);
}
