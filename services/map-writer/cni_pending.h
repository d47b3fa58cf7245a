/* cni_pending.h — the reconcile of pods that started outside the mesh: when the CNI plugin could
 * not reach the map writer (or was refused) under failPolicy open, it leaves the Enroll request
 * in <cni state dir>/pending/<container id> (services/cni-plugin/cni_state.h). This module
 * applies them at start and every KM_CNI_PENDING_INTERVAL_MS: each under the file's lock (a DEL
 * removes the file under the same lock, so a pod deleted meanwhile is never enrolled), only if
 * its network namespace still has the cookie the plugin read (else the pod is gone and the file
 * is dropped). Bounded: at most KM_CNI_PENDING_MAX files a pass, each at most 64 KiB. */
#ifndef KM_MW_CNI_PENDING_H
#define KM_MW_CNI_PENDING_H

#include <stdint.h>

#include <uv.h>

#include "services/map-writer/requests.h"

#define KM_CNI_PENDING_INTERVAL_MS 5000u
#define KM_CNI_PENDING_MAX 4096u

struct km_cni_pending {
	uv_timer_t timer;
	char dir[4096]; /* <state dir>/pending; "" when off */
	struct km_mw_requests *rq;
	uint64_t enrolled; /* applied, the pod is in the mesh now */
	uint64_t dropped;  /* its pod is gone, or the request is invalid */
	uint64_t waiting;  /* files left for a later pass, at the last pass */
	int started;
};

/* state_dir: the CNI plugin's state directory ("" or NULL: off). Returns 0 or a uv error. */
int km_cni_pending_start(struct km_cni_pending *p, uv_loop_t *loop, const char *state_dir,
			 struct km_mw_requests *rq);
/* Apply what is pending now (also done by the timer). */
void km_cni_pending_pass(struct km_cni_pending *p);
void km_cni_pending_stop(struct km_cni_pending *p);

#endif
