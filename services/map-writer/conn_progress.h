/* conn_progress.h — reports of connections still open, so byte counters move while long
 * connections live. Every interval, while monitoring is on and someone subscribed to connection
 * reports, a pass runs on the libuv thread pool: the conn_progress.bpf.c TCP iterator in every
 * enrolled pod's network namespace (pod_iter.h) writes each open connection's counters so far;
 * back on the loop they go to the subscribers as KM_CONN_PROGRESS reports (events.h), after the
 * ring buffer's pending opens. At most KM_CONN_PROGRESS_MAX connections per pass (the rest are
 * counted as skipped and reported at their close as before). Nothing runs on the connections'
 * path. */
#ifndef KM_MW_CONN_PROGRESS_H
#define KM_MW_CONN_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "kmesh_maps.h"
#include "services/map-writer/events.h"
#include "services/map-writer/pod_iter.h"

#define KM_CONN_PROGRESS_MAX 65536

struct km_conn_progress {
	uv_loop_t *loop;
	uv_timer_t timer;
	uv_work_t work;
	int link_fd;                /* the iterator's link; -1: not loaded (no passes) */
	struct km_pod_iter_env env;
	struct km_mw_events *events;
	const uint16_t *flags;      /* the node's km_config flags: passes only while monitoring */
	int busy;                   /* a pass is on the thread pool */
	int closing;                /* also read by the worker, which then stops early */
	/* the pass in flight: written by the worker, read on the loop thread after it */
	struct km_conn_close *recs; /* KM_CONN_PROGRESS_MAX */
	size_t n;
	uint64_t pass_skipped;
	struct km_pod_iter_pass pass;
	/* totals, for metrics */
	uint64_t passes, reported, skipped;
	uint32_t warned_errors;
};

/* Every interval_ms (0: never). link_fd < 0 disables. Returns 0 or a negative errno. */
int km_conn_progress_start(struct km_conn_progress *p, uv_loop_t *loop, int link_fd,
			   uint64_t interval_ms, int fd_manage, int fd_pod_netns,
			   struct km_mw_events *events, const uint16_t *flags);
/* Stop; a pass in flight finishes (uv_run returns after it). */
void km_conn_progress_stop(struct km_conn_progress *p);

#endif
