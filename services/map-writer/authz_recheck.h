/* authz_recheck.h — closing the open connections that changed authorization policies deny.
 * After table batches that touched authz rows, and at most every 100 ms while they keep coming, a
 * pass runs on the libuv thread pool: the authz_recheck.bpf.c TCP iterator in every enrolled
 * pod's network namespace (pod_iter.h), which decides every connection the pod accepted again
 * and destroys the denied ones. Results are logged on the loop
 * thread. Needs CAP_SYS_ADMIN (setns); without it each pass logs why it could not run. */
#ifndef KM_MW_AUTHZ_RECHECK_H
#define KM_MW_AUTHZ_RECHECK_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "kmesh_maps.h"
#include "services/map-writer/pod_iter.h"

#define KM_AUTHZ_RECHECK_DELAY_MS 100 /* after the last change of a burst ... */
#define KM_AUTHZ_RECHECK_MAX_DELAY_MS 500 /* ... but no later than this after its first */
#define KM_AUTHZ_RECHECK_LOGGED 32    /* closed connections named per pass; the rest counted */

struct km_authz_recheck {
	uv_loop_t *loop;
	uv_timer_t timer;
	uv_work_t work;
	int link_fd;      /* the iterator's link; -1: the kernel cannot (requests are ignored) */
	struct km_pod_iter_env env;
	const int *hold;  /* nonzero while the xDS agent's sync runs: its state is incomplete */
	int busy;         /* a pass is on the thread pool */
	int again;        /* a change arrived during the pass: run once more */
	int held;         /* a pass was due during the sync: run it when the sync ends */
	int closing;      /* also read by the worker, which then stops early */
	uint64_t burst_start;
	/* the pass in flight: written by the worker, read on the loop thread after it */
	struct km_authz_closed logged[KM_AUTHZ_RECHECK_LOGGED];
	uint64_t logged_cookie[KM_AUTHZ_RECHECK_LOGGED];
	size_t n_logged;
	uint64_t pass_closed, pass_failed; /* sockets closed, and ones bpf_sock_destroy refused */
	struct km_pod_iter_pass pass;
	/* totals, for dumps */
	uint64_t passes;
	uint64_t closed;
};

/* link_fd < 0 disables the re-check (logged once by the data plane). hold (may be NULL) holds
 * passes while nonzero. Returns 0 or -errno. */
int km_authz_recheck_init(struct km_authz_recheck *r, uv_loop_t *loop, int link_fd,
			  int fd_manage, int fd_pod_netns, const int *hold);
/* Authz rows changed: schedule a pass, KM_AUTHZ_RECHECK_DELAY_MS after the last change of a
 * burst of requests (a change can span several batches, and a connection closed on a state
 * half written could not be reopened), and at most KM_AUTHZ_RECHECK_MAX_DELAY_MS after its
 * first. */
void km_authz_recheck_request(struct km_authz_recheck *r);
/* The hold ended: run the pass it held back, if any. */
void km_authz_recheck_release(struct km_authz_recheck *r);
/* Stop scheduling; a pass in flight finishes (uv_run returns after it). */
void km_authz_recheck_close(struct km_authz_recheck *r);

#endif
